"""The instruction-encoder callback the writer and the assembler share."""

from __future__ import annotations

from collections.abc import Callable

from sass_lsp.isa.encoder import Encoder, UnsupportedArch

EncodeFn = Callable[..., object]  # encode(text, pc=..., labels=...) -> int | object with .word


def default_encoder(arch: str) -> EncodeFn | None:
    """The real instruction encoder for ``arch`` (its ``encode_word``); None where there is none yet."""
    try:
        return Encoder.for_arch(arch).encode_word
    except UnsupportedArch:
        return None
