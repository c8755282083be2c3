"""CUDA 13 note sections (``.note.nv.tkinfo``, ``.note.nv.cuinfo``): standard ELF note records.

Each record is ``namesz, descsz, type`` (u32 each), the name and the descriptor, both padded to 4.
The writer copies note sections verbatim (nvdisasm's rendering of them does not fix every byte).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass


@dataclass
class Note:
    type: int
    name: bytes  # without padding, including its NUL if present
    desc: bytes  # without padding

    def strings(self) -> list[str]:
        """NUL-separated strings of the descriptor (tkinfo keeps tool name, version, options there)."""
        return [s.decode("utf-8", "replace") for s in self.desc.split(b"\0")]


def _pad4(n: int) -> int:
    return (n + 3) & ~3


def parse_notes(data: bytes) -> tuple[list[Note], bytes]:
    """Records plus undecodable trailing bytes."""
    notes: list[Note] = []
    pos = 0
    while pos + 12 <= len(data):
        namesz, descsz, typ = struct.unpack_from("<III", data, pos)
        name_end = pos + 12 + namesz
        desc_start = pos + 12 + _pad4(namesz)
        desc_end = desc_start + descsz
        if desc_end > len(data):
            break
        notes.append(Note(typ, data[pos + 12 : name_end], data[desc_start:desc_end]))
        pos = desc_start + _pad4(descsz)
    return notes, data[min(pos, len(data)) :]


def write_notes(notes: list[Note], tail: bytes = b"") -> bytes:
    out = bytearray()
    for note in notes:
        out += struct.pack("<III", len(note.name), len(note.desc), note.type)
        out += note.name + bytes(_pad4(len(note.name)) - len(note.name))
        out += note.desc + bytes(_pad4(len(note.desc)) - len(note.desc))
    return bytes(out) + tail
