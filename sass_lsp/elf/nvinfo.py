"""`.nv.info` attribute records: ``fmt(1) attr(1) payload``; parse and serialise identically."""

from __future__ import annotations

import struct
from dataclasses import dataclass

NVAL, BVAL, HVAL, SVAL = 1, 2, 3, 4

# Names of attributes met in CUDA 12/13 cubins (notes §4.5); unknown codes print as UNKNOWN_0x..
EIATTR_NAMES: dict[int, str] = {
    0x04: "EIATTR_CTAIDZ_USED",
    0x05: "EIATTR_MAX_THREADS",
    0x0A: "EIATTR_PARAM_CBANK",
    0x10: "EIATTR_REQNTID",
    0x11: "EIATTR_FRAME_SIZE",
    0x12: "EIATTR_MIN_STACK_SIZE",
    0x17: "EIATTR_KPARAM_INFO",
    0x19: "EIATTR_CBANK_PARAM_SIZE",
    0x1B: "EIATTR_MAXREG_COUNT",
    0x1C: "EIATTR_EXIT_INSTR_OFFSETS",
    0x1D: "EIATTR_S2RCTAID_INSTR_OFFSETS",
    0x1E: "EIATTR_CRS_STACK_SIZE",
    0x23: "EIATTR_MAX_STACK_SIZE",
    0x25: "EIATTR_LD_CACHEMOD_INSTR_OFFSETS",
    0x27: "EIATTR_ATOM_SYS_INSTR_OFFSETS",
    0x28: "EIATTR_COOP_GROUP_INSTR_OFFSETS",
    0x29: "EIATTR_COOP_GROUP_MASK_REGIDS",
    0x2B: "EIATTR_WMMA_USED",
    0x2F: "EIATTR_REGCOUNT",
    0x31: "EIATTR_INT_WARP_WIDE_INSTR_OFFSETS",
    0x34: "EIATTR_INDIRECT_BRANCH_TARGETS",
    0x36: "EIATTR_SW_WAR",
    0x37: "EIATTR_CUDA_API_VERSION",
    0x38: "EIATTR_NUM_MBARRIERS",
    0x39: "EIATTR_MBARRIER_INSTR_OFFSETS",
    0x45: "EIATTR_KPARAM_INFO_V2",
    0x4C: "EIATTR_NUM_BARRIERS",
    0x50: "EIATTR_SPARSE_MMA_MASK",
}
EIATTR_CODES = {name: code for code, name in EIATTR_NAMES.items()}
EIATTR_REGCOUNT = 0x2F
EIATTR_NUM_BARRIERS = 0x4C


def eiattr_name(attr: int) -> str:
    return EIATTR_NAMES.get(attr, f"EIATTR_UNKNOWN_0x{attr:02x}")


@dataclass
class NvInfoAttr:
    fmt: int
    attr: int
    payload: bytes  # for SVAL: the data after the 2-byte size
    pad: bytes = b""  # zero bytes that re-align the next record to 4 (after a BVAL record)

    @property
    def name(self) -> str:
        return eiattr_name(self.attr)

    def words(self) -> list[int]:
        n_words = len(self.payload) // 4
        return list(struct.unpack_from(f"<{n_words}I", self.payload))

    def to_bytes(self) -> bytes:
        head = bytes((self.fmt, self.attr))
        if self.fmt == SVAL:
            return head + struct.pack("<H", len(self.payload)) + self.payload + self.pad
        return head + self.payload + self.pad


def parse_nvinfo(data: bytes) -> tuple[list[NvInfoAttr], bytes]:
    """Records plus any trailing bytes that do not form a record (kept for exact writes)."""
    attrs: list[NvInfoAttr] = []
    pos = 0
    while pos + 2 <= len(data):
        fmt, attr = data[pos], data[pos + 1]
        if fmt == NVAL:
            size = 0
        elif fmt == BVAL:
            size = 1
        elif fmt == HVAL:
            size = 2
        elif fmt == SVAL:
            if pos + 4 > len(data):
                break
            (size,) = struct.unpack_from("<H", data, pos + 2)
            if pos + 4 + size > len(data):
                break
            attrs.append(NvInfoAttr(fmt, attr, data[pos + 4 : pos + 4 + size]))
            pos += 4 + size
            continue
        else:
            break
        if pos + 2 + size > len(data):
            break
        attrs.append(NvInfoAttr(fmt, attr, data[pos + 2 : pos + 2 + size]))
        pos += 2 + size
        start = pos
        while pos % 4 and pos < len(data) and data[pos] == 0:
            pos += 1
        attrs[-1].pad = data[start:pos]
    return attrs, data[pos:]


def write_nvinfo(attrs: list[NvInfoAttr], tail: bytes = b"") -> bytes:
    return b"".join(a.to_bytes() for a in attrs) + tail
