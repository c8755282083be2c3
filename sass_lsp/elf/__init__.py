"""Feature: cubin container model. Read cubin bytes, inspect them, write them back byte-identically.

Architecture Invariant: no IO, no nvdisasm; bytes in, values out.
"""

from sass_lsp.elf.arch import cubin_arch, sm_from_flags
from sass_lsp.elf.model import Cubin, ElfHeader, Relocation, Section, Segment, Symbol
from sass_lsp.elf.notes import Note, parse_notes, write_notes
from sass_lsp.elf.nvinfo import NvInfoAttr, eiattr_name, parse_nvinfo, write_nvinfo
from sass_lsp.elf.reader import (
    ElfError,
    pack_relocations,
    pack_symbol,
    parse_relocations,
    parse_symbols,
    read_cubin,
)
from sass_lsp.elf.writer import write_cubin

__all__ = [
    "Note",
    "parse_notes",
    "write_notes",
    "Cubin",
    "ElfError",
    "ElfHeader",
    "NvInfoAttr",
    "Relocation",
    "Section",
    "Segment",
    "Symbol",
    "cubin_arch",
    "eiattr_name",
    "pack_relocations",
    "pack_symbol",
    "parse_nvinfo",
    "parse_relocations",
    "parse_symbols",
    "read_cubin",
    "sm_from_flags",
    "write_cubin",
    "write_nvinfo",
]
