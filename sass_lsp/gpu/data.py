"""Host-side buffer contents: seeded fills, the output poison, and the bit-exact or tolerant comparison.

Everything here is plain numpy on flat arrays of each dtype's *storage* type, so it runs (and is tested)
without
a GPU. Bitwise comparison always looks at unsigned integer views: ``NaN != NaN`` on floats would report a
poisoned-but-equal element as a difference, and ``-0.0 == 0.0`` would hide a real one.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sass_lsp.gpu.dtypes import DType, from_float32, lookup_dtype, to_float32, ulp_distance
from sass_lsp.gpu.spec import BufferParam, SpecError, Tolerance

POISON_BYTE = 0xFF
"""Outputs are filled with 0xFF before every run: a NaN in every float format, -1 in signed integers."""


def dtype_of(param: BufferParam) -> DType:
    dtype = lookup_dtype(param.dtype)
    assert dtype is not None  # the spec parser accepted it
    return dtype


def make_input(param: BufferParam, seed: int, param_idx: int) -> np.ndarray:
    """The flat storage array a buffer holds before a run with ``seed`` (same seed, same bytes)."""
    dtype = dtype_of(param)
    fill = param.fill
    n_elems = param.n_elems
    # One generator per (seed, parameter): adding a parameter does not change the others' data.
    rng = np.random.default_rng([seed, param_idx])
    if fill.kind == "zeros":
        return np.zeros(n_elems, dtype=dtype.storage)
    if fill.kind == "constant":
        return _encode(dtype, np.full(n_elems, fill.value))
    if fill.kind == "normal":
        values = rng.standard_normal(n_elems, dtype=np.float32)
        if fill.std != 1.0 or fill.mean != 0.0:
            values = values * np.float32(fill.std) + np.float32(fill.mean)
        return _encode(dtype, values)
    if fill.kind == "uniform":
        values = rng.uniform(fill.low, fill.high, n_elems).astype(np.float32)
        return _encode(dtype, values)
    if fill.kind == "int":
        ints = rng.integers(int(fill.low), int(fill.high), n_elems, dtype=np.int64)
        return ints.astype(dtype.storage) if dtype.native else _encode(dtype, ints.astype(np.float32))
    if fill.kind == "file":
        return _load_file(param, dtype)
    raise SpecError(f"{param.name}.fill.kind", f"unknown fill {fill.kind!r}")


class BoundedCache:
    """Arrays (or records of arrays) by key, least recently used dropped once their bytes pass
    ``max_bytes``. The default, 1 GiB, holds a search's seeds for buffers of a few hundred MiB (rmsnorm's
    three input seeds take 384 MiB) and bounds what an editor's long-lived GPU worker keeps."""

    def __init__(self, max_bytes: int = 1 << 30) -> None:
        self.max_bytes = max_bytes
        self.nbytes = 0
        self.hits = 0
        self._items: OrderedDict[Any, tuple[Any, int]] = OrderedDict()

    def get(self, key: Any) -> Any:
        hit = self._items.get(key)
        if hit is None:
            return None
        self._items.move_to_end(key)
        self.hits += 1
        return hit[0]

    def put(self, key: Any, value: Any, nbytes: int) -> None:
        if nbytes > self.max_bytes or key in self._items:
            return
        self._items[key] = (value, nbytes)
        self.nbytes += nbytes
        while self.nbytes > self.max_bytes:
            _, (_, old) = self._items.popitem(last=False)
            self.nbytes -= old


class InputCache(BoundedCache):
    """:func:`make_input`, remembered: the same (parameter, seed, index) gives the same bytes, and a search
    verifies and times every candidate on the same seeds. Generating a large buffer's data costs more than
    the kernel runs: ~1 s on a 2-vCPU VM for rmsnorm_f32_4096's 128 MiB input, three times per candidate
    (two verification seeds and the timing seed), when its timed launches took 44 ms.

    Arrays are returned read-only (uploads only read them). A ``file`` fill is read afresh each time (the
    file may change between runs)."""

    def input(self, param: BufferParam, seed: int, param_idx: int) -> np.ndarray:
        if param.fill.kind == "file":
            return make_input(param, seed, param_idx)
        key = (param, seed, param_idx)
        data = self.get(key)
        if data is None:
            data = make_input(param, seed, param_idx)
            data.flags.writeable = False
            self.put(key, data, data.nbytes)
        return data


def _encode(dtype: DType, values: np.ndarray) -> np.ndarray:
    if dtype.is_float:
        return from_float32(dtype, values)
    return np.rint(values).astype(dtype.storage)


def _load_file(param: BufferParam, dtype: DType) -> np.ndarray:
    path = Path(param.fill.path)
    where = f"{param.name}.fill.path"
    try:
        loaded = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise SpecError(where, f"cannot read {path}: {exc}") from exc
    if isinstance(loaded, np.lib.npyio.NpzFile):
        with loaded:
            names = list(loaded.keys())
            key = param.fill.key or (names[0] if len(names) == 1 else "")
            if key not in names:
                raise SpecError(f"{param.name}.fill.key", f"choose one of {names}")
            array = loaded[key]
    else:
        array = loaded
    if array.size != param.n_elems:
        raise SpecError(where, f"{path} holds {array.size} elements, the buffer {param.n_elems}")
    flat = np.ascontiguousarray(array).reshape(-1)
    if flat.dtype == np.dtype(dtype.storage):
        return flat
    if dtype.is_float:
        return from_float32(dtype, flat.astype(np.float64 if dtype.name == "f64" else np.float32))
    return flat.astype(dtype.storage)


def poisoned(param: BufferParam) -> np.ndarray:
    return np.full(param.nbytes, POISON_BYTE, dtype=np.uint8).view(dtype_of(param).storage)


@dataclass(frozen=True)
class Mismatch:
    """Where the edit's buffer first differs from what it should hold."""

    param_idx: int
    name: str
    kind: str
    """``output`` (differs from the original), ``stray_write`` (an input changed), ``nondeterministic``."""
    n_diff: int
    n_elems: int
    first_idx: int
    """Flat element index of the first difference."""
    first_pos: tuple[int, ...]
    """The same index in the buffer's shape."""
    expected: str
    got: str
    expected_bits: str
    got_bits: str
    seed: int = -1
    max_abs_diff: float | None = None

    def describe(self) -> str:
        what = {
            "output": "differs from the original",
            "stray_write": "input was overwritten",
            "nondeterministic": "differs between two runs of the original",
        }.get(self.kind, self.kind)
        pos = ",".join(str(p) for p in self.first_pos)
        return (
            f"params[{self.param_idx}] {self.name}: {what} at {self.n_diff}/{self.n_elems} elements; "
            "first at "
            f"[{pos}] (flat {self.first_idx}): expected {self.expected} ({self.expected_bits}), got "
            f"{self.got} ({self.got_bits}), seed {self.seed}"
        )


@dataclass(frozen=True)
class Comparison:
    mismatch: Mismatch | None
    bit_identical: bool
    max_abs_diff: float = 0.0


def compare_buffer(
    param: BufferParam,
    param_idx: int,
    expected: np.ndarray,
    got: np.ndarray,
    tolerance: Tolerance | None,
    *,
    kind: str = "output",
    seed: int = -1,
) -> Comparison:
    """Bit for bit first; where bits differ, an element passes only within ``tolerance`` (if any)."""
    if _same_bytes(expected, got):  # the common verdict, at twice the speed of the element-wise search below
        return Comparison(None, True)
    dtype = dtype_of(param)
    uint = f"<u{dtype.size}" if dtype.size > 1 else "u1"
    exp_bits = expected.view(uint)
    got_bits = got.view(uint)
    diff_idx = np.flatnonzero(exp_bits != got_bits)
    if diff_idx.size == 0:
        return Comparison(None, True)
    with np.errstate(invalid="ignore", over="ignore"):  # NaN and Inf are values a kernel may write
        exp_vals = _values(dtype, expected[diff_idx])
        got_vals = _values(dtype, got[diff_idx])
        abs_diff = np.abs(exp_vals - got_vals)
    finite = abs_diff[np.isfinite(abs_diff)]
    max_abs = float(finite.max()) if finite.size else math.inf
    if tolerance is not None and not tolerance.exact:
        ok = np.isnan(exp_vals) & np.isnan(got_vals)  # NaN vs NaN with other payload bits
        with np.errstate(invalid="ignore", over="ignore"):
            ok |= abs_diff <= tolerance.atol + tolerance.rtol * np.abs(exp_vals)
        if tolerance.ulp and dtype.is_float:
            ulps = ulp_distance(dtype, expected[diff_idx], got[diff_idx])
            ok |= (ulps <= tolerance.ulp) & ~np.isnan(exp_vals) & ~np.isnan(got_vals)
        bad = diff_idx[~ok]
        if bad.size == 0:
            return Comparison(None, False, max_abs)
        diff_idx = bad
    first = int(diff_idx[0])
    width = dtype.size * 2
    mismatch = Mismatch(
        param_idx=param_idx,
        name=param.name,
        kind=kind,
        n_diff=int(diff_idx.size),
        n_elems=param.n_elems,
        first_idx=first,
        first_pos=tuple(int(i) for i in np.unravel_index(first, param.shape)),
        expected=_show(dtype, expected[first : first + 1]),
        got=_show(dtype, got[first : first + 1]),
        expected_bits=f"0x{int(exp_bits[first]):0{width}x}",
        got_bits=f"0x{int(got_bits[first]):0{width}x}",
        seed=seed,
        max_abs_diff=max_abs,
    )
    return Comparison(mismatch, False, max_abs)


def _same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two buffers hold the same bytes, compared eight at a time where the size allows."""
    a8 = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    b8 = np.ascontiguousarray(b).reshape(-1).view(np.uint8)
    if a8.size != b8.size:
        return False
    if a8.size % 8 == 0:
        a8, b8 = a8.view("<u8"), b8.view("<u8")
    return bool(np.array_equal(a8, b8))


def _values(dtype: DType, raw: np.ndarray) -> np.ndarray:
    if dtype.is_float:
        return to_float32(dtype, raw).astype(np.float64)
    return raw.astype(np.float64)


def _show(dtype: DType, raw: np.ndarray) -> str:
    if dtype.is_float:
        return repr(float(to_float32(dtype, raw)[0]))
    return str(int(raw[0]))


def count_poison(param: BufferParam, raw: np.ndarray) -> int:
    """Elements still holding the poison pattern after a run (the kernel never wrote them)."""
    dtype = dtype_of(param)
    uint = f"<u{dtype.size}" if dtype.size > 1 else "u1"
    all_ones = (1 << (8 * dtype.size)) - 1
    return int(np.count_nonzero(raw.view(uint) == all_ones))
