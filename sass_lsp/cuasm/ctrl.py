"""Thin adapters over :mod:`sass_lsp.isa.control` for control text without brackets."""

from __future__ import annotations

from sass_lsp.isa.control import (
    CONTROL_MASK,
    CONTROL_SHIFT,
    control_bits,
    control_from_word,
    format_control,
)

CTRL_MASK = CONTROL_MASK


def decode_ctrl(word: int) -> str:
    return format_control(control_from_word(word))[1:-1]


def encode_ctrl(text: str) -> int:
    """Control text (validated by the parser) as bits already shifted to bit 105."""
    return control_bits(text) << CONTROL_SHIFT
