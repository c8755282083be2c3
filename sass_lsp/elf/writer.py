"""Write a :class:`Cubin` back to bytes at the offsets it records (no re-layout here)."""

from __future__ import annotations

import struct

from sass_lsp.elf.model import Cubin

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_PHDR = struct.Struct("<IIQQQQQQ")


def write_cubin(cubin: Cubin) -> bytes:
    h = cubin.header
    end = max(
        cubin.file_size,
        h.ehsize,
        h.shoff + len(cubin.sections) * h.shentsize,
        h.phoff + len(cubin.segments) * h.phentsize,
        *(s.offset + len(s.data) for s in cubin.sections if s.occupies_file),
    )
    out = bytearray(end)
    out[0 : _EHDR.size] = _EHDR.pack(
        h.ident,
        h.type,
        h.machine,
        h.version,
        h.entry,
        h.phoff,
        h.shoff,
        h.flags,
        h.ehsize,
        h.phentsize,
        len(cubin.segments),
        h.shentsize,
        len(cubin.sections),
        h.shstrndx,
    )
    for offset, chunk in cubin.filler:
        out[offset : offset + len(chunk)] = chunk
    for sec in cubin.sections:
        if sec.occupies_file:
            out[sec.offset : sec.offset + len(sec.data)] = sec.data
    for idx, sec in enumerate(cubin.sections):
        _SHDR.pack_into(
            out,
            h.shoff + idx * h.shentsize,
            sec.name_off,
            sec.type,
            sec.flags,
            sec.addr,
            sec.offset,
            sec.size,
            sec.link,
            sec.info,
            sec.addralign,
            sec.entsize,
        )
    for idx, seg in enumerate(cubin.segments):
        _PHDR.pack_into(
            out,
            h.phoff + idx * h.phentsize,
            seg.type,
            seg.flags,
            seg.offset,
            seg.vaddr,
            seg.paddr,
            seg.filesz,
            seg.memsz,
            seg.align,
        )
    return bytes(out)
