"""Element types a launch spec may name: storage width, numpy storage dtype, and how to read values.

numpy has no bf16 or fp8, so those are stored as unsigned integers of their width and decoded to float32
only when a value has to be shown or compared within a tolerance. Bitwise comparison never decodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np


@dataclass(frozen=True)
class DType:
    name: str
    """Canonical spelling used in specs and reports (``f32``, ``bf16``, ``i32`` …)."""
    size: int
    """Bytes per element."""
    kind: str
    """``float``, ``int``, ``uint`` or ``bool``."""
    storage: str
    """numpy dtype string the bytes are held in on the host."""

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def native(self) -> bool:
        """True where numpy can do arithmetic on the storage dtype directly (not bf16/fp8)."""
        return self.name not in ("bf16", "fp8e4m3", "fp8e5m2")


DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("f16", 2, "float", "<f2"),
        DType("bf16", 2, "float", "<u2"),
        DType("f32", 4, "float", "<f4"),
        DType("f64", 8, "float", "<f8"),
        DType("fp8e4m3", 1, "float", "u1"),
        DType("fp8e5m2", 1, "float", "u1"),
        DType("i8", 1, "int", "i1"),
        DType("i16", 2, "int", "<i2"),
        DType("i32", 4, "int", "<i4"),
        DType("i64", 8, "int", "<i8"),
        DType("u8", 1, "uint", "u1"),
        DType("u16", 2, "uint", "<u2"),
        DType("u32", 4, "uint", "<u4"),
        DType("u64", 8, "uint", "<u8"),
        DType("bool", 1, "bool", "u1"),
    )
}

# Spellings seen in Triton metadata, torch and our corpus JSON; all map onto the canonical names above.
ALIASES: dict[str, str] = {
    "float16": "f16",
    "fp16": "f16",
    "half": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "fp32": "f32",
    "float": "f32",
    "float64": "f64",
    "fp64": "f64",
    "double": "f64",
    "float8_e4m3fn": "fp8e4m3",
    "fp8e4nv": "fp8e4m3",
    "e4m3": "fp8e4m3",
    "float8_e5m2": "fp8e5m2",
    "fp8e5": "fp8e5m2",
    "e5m2": "fp8e5m2",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "i1": "bool",
}


def lookup_dtype(name: str) -> DType | None:
    key = name.strip().lower()
    return DTYPES.get(ALIASES.get(key, key))


@cache
def _fp8_table(name: str) -> np.ndarray:
    """float32 value of each of the 256 codes (e4m3fn: no inf, 0x7f/0xff NaN; e5m2: IEEE-like)."""
    codes = np.arange(256, dtype=np.uint32)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    if name == "fp8e5m2":
        # e5m2 is the top byte of an IEEE half.
        return (codes.astype(np.uint16) << 8).view(np.float16).astype(np.float32)
    exp = (codes >> 3) & 0xF
    man = codes & 0x7
    normal = sign * (1.0 + man / 8.0) * np.exp2(exp.astype(np.float64) - 7)
    subnormal = sign * (man / 8.0) * np.exp2(-6.0)
    values = np.where(exp == 0, subnormal, normal)
    values[(codes & 0x7F) == 0x7F] = np.nan
    return values.astype(np.float32)


def to_float32(dtype: DType, raw: np.ndarray) -> np.ndarray:
    """Decode stored elements to float32 (float64 for f64) for display and tolerance checks."""
    if dtype.name == "bf16":
        return (raw.astype(np.uint32) << 16).view(np.float32)
    if dtype.name in ("fp8e4m3", "fp8e5m2"):
        return _fp8_table(dtype.name)[raw]
    if dtype.name == "f64":
        return raw.astype(np.float64)
    return raw.astype(np.float32)


def from_float32(dtype: DType, values: np.ndarray) -> np.ndarray:
    """Encode float values into the storage dtype (round to nearest even; fp8 by nearest code)."""
    values = np.asarray(values)
    if dtype.name == "bf16":
        bits = values.astype(np.float32).view(np.uint32)
        rounding = ((bits >> 16) & 1) + 0x7FFF
        return ((bits + rounding) >> 16).astype(np.uint16)
    if dtype.name in ("fp8e4m3", "fp8e5m2"):
        table = _fp8_table(dtype.name)
        finite = np.flatnonzero(np.isfinite(table))
        order = finite[np.argsort(table[finite], kind="stable")]
        sorted_values = table[order]
        pos = np.clip(np.searchsorted(sorted_values, values), 1, len(order) - 1)
        left_closer = np.abs(values - sorted_values[pos - 1]) <= np.abs(values - sorted_values[pos])
        return order[np.where(left_closer, pos - 1, pos)].astype(np.uint8)
    return values.astype(dtype.storage)


def ulp_distance(dtype: DType, a_raw: np.ndarray, b_raw: np.ndarray) -> np.ndarray:
    """ULPs between two float bit patterns of the same dtype (int64; saturates instead of wrapping)."""
    width = dtype.size * 8
    mask = np.int64((1 << (width - 1)) - 1)

    def ordered(raw: np.ndarray) -> np.ndarray:
        # Sign-magnitude floats to a monotonic integer line, so that +0 and -0 meet at 0.
        signed = raw.view(f"<i{dtype.size}" if dtype.size > 1 else "i1").astype(np.int64)
        magnitude = signed & mask
        return np.where(signed < 0, -magnitude, magnitude)

    with np.errstate(over="ignore"):
        diff = np.abs(ordered(a_raw) - ordered(b_raw))
    return np.where(diff < 0, np.iinfo(np.int64).max, diff)
