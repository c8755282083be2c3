"""Plain-data model of a cubin (ELF64, little endian) that writes back byte-identically.

Architecture Invariant: nothing here does IO; offsets recorded on read are kept, so writing an
unmodified model reproduces the input bytes exactly (uncovered non-zero bytes are kept in ``filler``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

SHT_NULL = 0
SHT_PROGBITS = 1
SHT_SYMTAB = 2
SHT_STRTAB = 3
SHT_RELA = 4
SHT_NOTE = 7
SHT_NOBITS = 8
SHT_REL = 9
SHT_CUDA_INFO = 0x70000000
SHT_CUDA_CALLGRAPH = 0x70000001

SECTION_TYPE_NAMES: dict[int, str] = {
    SHT_NULL: "SHT_NULL",
    SHT_PROGBITS: "SHT_PROGBITS",
    SHT_SYMTAB: "SHT_SYMTAB",
    SHT_STRTAB: "SHT_STRTAB",
    SHT_RELA: "SHT_RELA",
    5: "SHT_HASH",
    6: "SHT_DYNAMIC",
    SHT_NOTE: "SHT_NOTE",
    SHT_NOBITS: "SHT_NOBITS",
    SHT_REL: "SHT_REL",
    11: "SHT_DYNSYM",
    18: "SHT_SYMTAB_SHNDX",
}
SECTION_TYPE_VALUES = {v: k for k, v in SECTION_TYPE_NAMES.items()}

PT_NAMES: dict[int, str] = {
    0: "PT_NULL",
    1: "PT_LOAD",
    2: "PT_DYNAMIC",
    3: "PT_INTERP",
    4: "PT_NOTE",
    6: "PT_PHDR",
}
PT_VALUES = {v: k for k, v in PT_NAMES.items()}

ELF_HEADER_SIZE = 64
SHDR_SIZE = 64
PHDR_SIZE = 56
SYM_SIZE = 24


@dataclass
class ElfHeader:
    ident: bytes  # e_ident, 16 bytes (OSABI at [7], ABI version at [8])
    type: int
    machine: int
    version: int
    entry: int
    phoff: int
    shoff: int
    flags: int
    ehsize: int = ELF_HEADER_SIZE
    phentsize: int = PHDR_SIZE
    phnum: int = 0
    shentsize: int = SHDR_SIZE
    shnum: int = 0
    shstrndx: int = 0

    @property
    def osabi(self) -> int:
        return self.ident[7]

    @property
    def abiversion(self) -> int:
        return self.ident[8]


@dataclass
class Section:
    name: str
    name_off: int
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    addralign: int
    entsize: int
    data: bytes = b""  # empty for SHT_NOBITS

    @property
    def occupies_file(self) -> bool:
        return self.type not in (SHT_NOBITS, SHT_NULL)


@dataclass
class Segment:
    type: int
    flags: int
    offset: int
    vaddr: int
    paddr: int
    filesz: int
    memsz: int
    align: int


@dataclass
class Symbol:
    name: str
    name_off: int
    info: int
    other: int
    shndx: int
    value: int
    size: int

    @property
    def bind(self) -> int:
        return self.info >> 4

    @property
    def type(self) -> int:
        return self.info & 0xF


@dataclass
class Relocation:
    offset: int
    sym: int
    type: int
    addend: int | None = None  # None for SHT_REL entries


@dataclass
class Cubin:
    header: ElfHeader
    sections: list[Section]
    segments: list[Segment]
    file_size: int = 0
    # Non-zero bytes not covered by header, tables or section data: kept so writes are exact.
    filler: list[tuple[int, bytes]] = field(default_factory=list)

    def section(self, name: str) -> Section | None:
        for sec in self.sections:
            if sec.name == name:
                return sec
        return None

    def section_index(self, name: str) -> int:
        for idx, sec in enumerate(self.sections):
            if sec.name == name:
                return idx
        return -1
