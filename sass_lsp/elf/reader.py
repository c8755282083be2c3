"""Read cubin bytes into :class:`Cubin`, plus symbol/relocation/string-table decoders."""

from __future__ import annotations

import struct

from sass_lsp.elf.model import (
    ELF_HEADER_SIZE,
    SHT_NOBITS,
    SHT_NULL,
    SHT_RELA,
    SYM_SIZE,
    Cubin,
    ElfHeader,
    Relocation,
    Section,
    Segment,
    Symbol,
)

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_PHDR = struct.Struct("<IIQQQQQQ")
_SYM = struct.Struct("<IBBHQQ")
_REL = struct.Struct("<QQ")
_RELA = struct.Struct("<QQq")


class ElfError(ValueError):
    """The bytes are not a little-endian ELF64 file this reader understands."""


def c_string(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    if end < 0:
        end = len(table)
    return table[offset:end].decode("utf-8", "replace")


def read_cubin(data: bytes) -> Cubin:
    """Raises :class:`ElfError` (saying what is wrong) on anything but a complete little-endian ELF64 file."""
    if not data:
        raise ElfError("empty file")
    if data[:4] != b"\x7fELF":
        raise ElfError("not an ELF file (no \\x7fELF magic)")
    if len(data) < ELF_HEADER_SIZE:
        raise ElfError(f"truncated: {len(data)} bytes, an ELF64 header alone is {ELF_HEADER_SIZE}")
    if data[4] != 2 or data[5] != 1:
        raise ElfError("only little-endian ELF64 cubins are supported")
    fields = _EHDR.unpack_from(data, 0)
    header = ElfHeader(*fields)
    _check_table(data, "section header", header.shoff, header.shnum, header.shentsize, _SHDR.size)
    _check_table(data, "program header", header.phoff, header.phnum, header.phentsize, _PHDR.size)
    sections: list[Section] = []
    for idx in range(header.shnum):
        off = header.shoff + idx * header.shentsize
        name_off, typ, flags, addr, offset, size, link, info, align, entsize = _SHDR.unpack_from(data, off)
        if typ not in (SHT_NOBITS, SHT_NULL) and offset + size > len(data):
            raise ElfError(
                f"truncated: section {idx} ends at byte {offset + size}, the file has {len(data)} bytes"
            )
        body = b"" if typ in (SHT_NOBITS, SHT_NULL) else data[offset : offset + size]
        sections.append(
            Section("", name_off, typ, flags, addr, offset, size, link, info, align, entsize, body)
        )
    if 0 < header.shstrndx < len(sections):
        names = sections[header.shstrndx].data
        for sec in sections:
            sec.name = c_string(names, sec.name_off)
    segments = [
        Segment(*_PHDR.unpack_from(data, header.phoff + idx * header.phentsize))
        for idx in range(header.phnum)
    ]
    cubin = Cubin(header, sections, segments, file_size=len(data))
    cubin.filler = _uncovered_nonzero(cubin, data)
    return cubin


def _check_table(data: bytes, what: str, offset: int, count: int, entsize: int, size: int) -> None:
    if not count:
        return
    if entsize < size:
        raise ElfError(f"bad {what} entry size {entsize} (expected {size})")
    end = offset + count * entsize
    if end > len(data):
        raise ElfError(f"truncated: the {what} table ends at byte {end}, the file has {len(data)} bytes")


def _uncovered_nonzero(cubin: Cubin, data: bytes) -> list[tuple[int, bytes]]:
    covered = bytearray(len(data))
    h = cubin.header

    def mark(start: int, length: int) -> None:
        covered[start : start + length] = b"\1" * max(0, min(length, len(data) - start))

    mark(0, h.ehsize)
    mark(h.shoff, h.shnum * h.shentsize)
    mark(h.phoff, h.phnum * h.phentsize)
    for sec in cubin.sections:
        if sec.occupies_file:
            mark(sec.offset, sec.size)
    runs: list[tuple[int, bytes]] = []
    idx = 0
    while idx < len(data):
        if not covered[idx] and data[idx]:
            start = idx
            while idx < len(data) and not covered[idx] and data[idx]:
                idx += 1
            runs.append((start, data[start:idx]))
        else:
            idx += 1
    return runs


def parse_symbols(symtab: bytes, strtab: bytes) -> list[Symbol]:
    out = []
    for off in range(0, len(symtab) - SYM_SIZE + 1, SYM_SIZE):
        name_off, info, other, shndx, value, size = _SYM.unpack_from(symtab, off)
        out.append(Symbol(c_string(strtab, name_off), name_off, info, other, shndx, value, size))
    return out


def pack_symbol(sym: Symbol) -> bytes:
    return _SYM.pack(sym.name_off, sym.info, sym.other, sym.shndx, sym.value, sym.size)


def parse_relocations(sec: Section) -> list[Relocation]:
    rela = sec.type == SHT_RELA
    fmt = _RELA if rela else _REL
    out = []
    for off in range(0, len(sec.data) - fmt.size + 1, fmt.size):
        if rela:
            r_offset, r_info, addend = fmt.unpack_from(sec.data, off)
        else:
            r_offset, r_info = fmt.unpack_from(sec.data, off)
            addend = None
        out.append(Relocation(r_offset, r_info >> 32, r_info & 0xFFFFFFFF, addend))
    return out


def pack_relocations(relocs: list[Relocation], rela: bool) -> bytes:
    out = bytearray()
    for rel in relocs:
        info = (rel.sym << 32) | rel.type
        if rela:
            out += _RELA.pack(rel.offset, info, rel.addend or 0)
        else:
            out += _REL.pack(rel.offset, info)
    return bytes(out)


def string_table_entries(table: bytes) -> list[tuple[int, bytes]]:
    """(offset, bytes incl. NUL) for each string; a trailing unterminated run is kept as is."""
    out = []
    pos = 0
    while pos < len(table):
        end = table.find(b"\0", pos)
        end = len(table) if end < 0 else end + 1
        out.append((pos, table[pos:end]))
        pos = end
    return out
