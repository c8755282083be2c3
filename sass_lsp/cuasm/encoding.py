"""The instruction-encoder callback the writer and the assembler share."""

from __future__ import annotations

from collections.abc import Callable

from sass_lsp.isa.context import ContextRule
from sass_lsp.isa.encoder import Encoder, UnsupportedArch

EncodeFn = Callable[..., object]  # encode(text, pc=..., labels=...) -> int | object with .word


def default_encoder(arch: str) -> EncodeFn | None:
    """The real instruction encoder for ``arch`` (its ``encode_word``); None where there is none yet."""
    try:
        return Encoder.for_arch(arch).encode_word
    except UnsupportedArch:
        return None


def context_rules(encode: EncodeFn | None) -> tuple[ContextRule, ...]:
    """The kernel-context rules of the encoder behind ``encode`` (a bound :class:`Encoder` method, which
    takes a ``context`` keyword); none for other callbacks, which are then called without one."""
    owner = getattr(encode, "__self__", None)
    return tuple(owner.context_rules) if isinstance(owner, Encoder) else ()
