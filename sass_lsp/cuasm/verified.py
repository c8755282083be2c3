"""Instruction words nvdisasm has already read back as their source text, so assembling them again skips it.

Verification (:func:`sass_lsp.cuasm.assembler.verify_instructions`) runs nvdisasm over the whole cubin, and
nvdisasm's start alone takes 0.36-0.41 s whatever the input's size (one 48-instruction section or a
raw 20-word file, measured on the VM). A schedule search assembles hundreds of candidates that are the
original's instructions in another order with other control codes, so nearly every word it assembles was
already verified.

The key of a word is what nvdisasm's text can depend on: the arch, the 128-bit word read from the written
cubin without its scheduling bits (stall, barriers, wait mask: nvdisasm does not print them; the ``.reuse``
bits it does print stay in, and so does the yield bit, since with it set nvdisasm prints no ``.reuse``),
and the source text. An instruction whose text names a label (a
relative target) or a relocation (``32@lo(sym)``) keeps its section and address in the key, since the same
word reads otherwise elsewhere. Only instructions of a cubin that verified without a single error are
recorded, and a cubin is skipped only when every instruction's key is recorded."""

from __future__ import annotations

import re
import struct
from collections.abc import Hashable

from sass_lsp.cuasm.disasm import normalise_text
from sass_lsp.elf.reader import ElfError, read_cubin
from sass_lsp.isa.control import CONTROL_MASK, CONTROL_SHIFT
from sass_lsp.model.cuasm import Module

_YIELD_BIT = 1 << (CONTROL_SHIFT + 4)  # the raw yield bit: it changes how nvdisasm prints .reuse
_WORD_BITS = (~CONTROL_MASK | _YIELD_BIT) & ((1 << 128) - 1)
# a label (`(.L_x_6)) or a relocated operand (32@lo(sym)); a guard's @P0 is neither
_PLACED = re.compile(r"`|\w@")


class VerifiedWords:
    """A bounded set of verified keys; when full it starts again empty (a miss costs one nvdisasm run)."""

    def __init__(self, capacity: int = 1 << 18) -> None:
        self.capacity = capacity
        self._keys: set[Hashable] = set()

    def keys(self, module: Module, data: bytes, arch: str) -> list[Hashable] | None:
        """Every instruction's key, read from ``data``; None when a text section is missing from it or its
        size is not 16 bytes per source instruction (then nvdisasm must look)."""
        try:
            sections = {sec.name: sec.data for sec in read_cubin(data).sections}
        except (ElfError, struct.error):  # not a cubin this reader reads: nvdisasm says what is wrong
            return None
        out: list[Hashable] = []
        for block in module.sections:
            instrs = block.instructions
            if not instrs:
                continue
            body = sections.get(block.name)
            if body is None or len(body) != 16 * len(instrs):
                return None
            for pc, ins in enumerate(instrs):
                word = int.from_bytes(body[16 * pc : 16 * pc + 16], "little") & _WORD_BITS
                text = normalise_text(ins.text)
                where = (block.name, pc) if _PLACED.search(text) else None
                out.append((arch, word, text, where))
        return out

    def known(self, keys: list[Hashable]) -> bool:
        return all(k in self._keys for k in keys)

    def add(self, keys: list[Hashable]) -> None:
        if len(self._keys) + len(keys) > self.capacity:
            self._keys.clear()
        self._keys.update(keys)


VERIFIED = VerifiedWords()  # one per process: nvdisasm's reading of a word never changes
