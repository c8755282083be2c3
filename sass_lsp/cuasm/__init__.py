"""Feature: CuAssembler ``.cuasm`` text: parse it, write it from a cubin, assemble it back.

Architecture Invariant: the parser does no IO and never raises; only :mod:`disasm` runs nvdisasm
(once per cubin, for the writer and for the assembler's verification pass).
"""

from sass_lsp.cuasm.assembler import AssembleError, assemble_cuasm, assemble_module, verify_instructions
from sass_lsp.cuasm.parser import parse_cuasm
from sass_lsp.cuasm.writer import default_encoder, hidden_bits, write_cuasm, write_cuasm_stats

__all__ = [
    "AssembleError",
    "assemble_cuasm",
    "assemble_module",
    "default_encoder",
    "hidden_bits",
    "parse_cuasm",
    "verify_instructions",
    "write_cuasm",
    "write_cuasm_stats",
]
