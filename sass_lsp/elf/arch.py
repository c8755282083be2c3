"""Architecture detection from the ELF header (both CUDA-12 and CUDA-13 e_flags layouts)."""

from __future__ import annotations

import struct

OSABI_CUDA_V7 = 0x33  # CUDA <= 12: SM in e_flags bits 0-7, virtual SM in bits 16-23
OSABI_CUDA_V8 = 0x41  # CUDA 13: SM in e_flags bits 8-15


def sm_from_flags(osabi: int, flags: int) -> int:
    return (flags >> 8) & 0xFF if osabi == OSABI_CUDA_V8 else flags & 0xFF


def cubin_arch(data: bytes) -> str:
    """``'sm_90'`` etc.; the accelerated-feature suffix (sm_90a) is not part of the result."""
    if len(data) < 52 or data[:4] != b"\x7fELF":
        raise ValueError("not an ELF file")
    (flags,) = struct.unpack_from("<I", data, 48)
    return f"sm_{sm_from_flags(data[7], flags)}"


def describe_flags(osabi: int, flags: int) -> str:
    """Comment text for ``.__elf_flags`` (why: readers want the SM without decoding bits)."""
    sm = sm_from_flags(osabi, flags)
    if osabi == OSABI_CUDA_V8:
        return f"Flags, SM_{sm}(0x{sm:x}), ABI v8 layout"
    virt = (flags >> 16) & 0xFF
    return f"Flags, SM_{sm}(0x{sm:x}), COMPUTE_{virt}(0x{virt:x})"
