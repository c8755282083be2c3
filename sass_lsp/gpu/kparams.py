"""A kernel's real parameter list, read from ``EIATTR_KPARAM_INFO`` in ``.nv.info.<kernel>``.

The driver lays arguments out in the constant bank by these records, so a launch whose argument sizes differ
from them reads garbage (or faults). Triton 3.6 also drops integer arguments equal to 1 and appends two
pointer
parameters; only these records tell the truth.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from sass_lsp.elf import parse_nvinfo, read_cubin

EIATTR_KPARAM_INFO = 0x17


@dataclass(frozen=True)
class KParam:
    ordinal: int
    offset: int
    """Byte offset inside the parameter area of constant bank 0."""
    size: int


def kernel_names(cubin: bytes) -> list[str]:
    """Kernels that carry a ``.nv.info.<name>`` section, in section order."""
    return [
        sec.name[len(".nv.info.") :] for sec in read_cubin(cubin).sections if sec.name.startswith(".nv.info.")
    ]


def read_kparams(cubin: bytes, kernel: str) -> list[KParam]:
    """Parameters of ``kernel`` sorted by ordinal; ``KeyError`` if the cubin has no such kernel."""
    section = read_cubin(cubin).section(f".nv.info.{kernel}")
    if section is None:
        raise KeyError(kernel)
    attrs, _ = parse_nvinfo(section.data)
    params = []
    for attr in attrs:
        if attr.attr != EIATTR_KPARAM_INFO or len(attr.payload) < 12:
            continue
        # payload: u32 index, u16 ordinal, u16 offset, u32 flags (size in bytes = flags >> 18).
        _index, ordinal, offset, flags = struct.unpack_from("<IHHI", attr.payload)
        params.append(KParam(ordinal, offset, flags >> 18))
    return sorted(params, key=lambda p: p.ordinal)
