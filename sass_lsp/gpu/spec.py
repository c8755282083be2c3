"""Feature: launch specs. ``K.launch.toml`` says how to launch one kernel and what its parameters hold.

A spec is parsed once into frozen dataclasses; every problem raises :class:`SpecError` naming the field path
(``params[2].dtype: unknown dtype 'f17'``), so the user can fix the file without reading our code. Unknown
keys
are errors too: a misspelt ``tolerance`` silently ignored would make a comparison stricter or looser than
meant.

Example::

    kernel = "add_kernel"
    grid = [16384, 1, 1]
    block = [128, 1, 1]
    shared_bytes = 0

    [[params]]
    name = "x"
    kind = "buffer"
    dtype = "f32"
    shape = [16777216]
    role = "in"
    fill = { kind = "normal", mean = 0.0, std = 1.0 }

    [[params]]
    kind = "scalar"
    type = "i32"
    value = 16777216

    [[params]]
    kind = "null"       # a pointer the kernel must not touch (Triton's scratch pointers)
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sass_lsp.gpu.dtypes import lookup_dtype

ROLES = ("in", "out", "inout", "scratch")
FILL_KINDS = ("normal", "uniform", "int", "zeros", "constant", "file")


class SpecError(ValueError):
    """A launch spec is invalid; ``path`` names the offending field (``params[2].dtype``)."""

    def __init__(self, path: str, message: str, hint: str = "") -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message
        self.hint = hint  # what to write instead, where the message alone does not say


@dataclass(frozen=True)
class Tolerance:
    """Allowed difference between original and edit; an element passes if any given bound holds."""

    atol: float = 0.0
    """Absolute: ``|a - b| <= atol + rtol * |a|``."""
    rtol: float = 0.0
    """Relative to the original's value."""
    ulp: int = 0
    """Units in the last place of the element's own float type."""

    @property
    def exact(self) -> bool:
        return self.atol == 0.0 and self.rtol == 0.0 and self.ulp == 0


@dataclass(frozen=True)
class Fill:
    """How an input buffer is filled for each seed."""

    kind: str
    """One of ``normal``, ``uniform``, ``int`` (integers in [low, high)), ``zeros``, ``constant``, ``file``.
    """
    mean: float = 0.0
    std: float = 1.0
    low: float = -1.0
    high: float = 1.0
    value: float = 0.0
    """For ``constant``."""
    path: str = ""
    """For ``file``: a ``.npy`` or ``.npz`` file, relative to the spec's directory unless absolute."""
    key: str = ""
    """For ``.npz`` files: the array's name (default: the only array)."""


@dataclass(frozen=True)
class BufferParam:
    name: str
    dtype: str
    """Canonical dtype name (see :mod:`sass_lsp.gpu.dtypes`)."""
    shape: tuple[int, ...]
    role: str
    """``in`` (read only: checked for stray writes), ``out``, ``inout``, or ``scratch`` (never compared)."""
    fill: Fill
    tolerance: Tolerance | None = None

    @property
    def n_elems(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        dtype = lookup_dtype(self.dtype)
        assert dtype is not None
        return self.n_elems * dtype.size

    @property
    def compared(self) -> bool:
        return self.role != "scratch"


@dataclass(frozen=True)
class ScalarParam:
    name: str
    type: str
    value: int | float


@dataclass(frozen=True)
class NullParam:
    """A null device pointer (8 bytes of zeros)."""

    name: str


Param = BufferParam | ScalarParam | NullParam


@dataclass(frozen=True)
class LaunchSpec:
    kernel: str
    """Function name in the cubin (the mangled name for C++ kernels)."""
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    params: tuple[Param, ...]
    shared_bytes: int = 0
    """Dynamic shared memory per block in bytes."""
    cluster: tuple[int, int, int] | None = None
    """Thread-block cluster dimensions (sm_90+); ``None`` launches without a cluster attribute."""
    tolerance: Tolerance | None = None
    """Default tolerance for every compared buffer; a buffer's own ``tolerance`` overrides it."""
    nondeterministic: bool = False
    """The kernel's outputs may differ run to run (atomics): requires a tolerance, skips the bitwise check."""
    name: str = ""
    """Label used in reports (defaults to the kernel name)."""
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    """``[meta]`` table, kept as is for the user's own notes (source, command line)."""

    @property
    def label(self) -> str:
        return self.name or self.kernel

    def tolerance_for(self, param: BufferParam) -> Tolerance | None:
        return param.tolerance if param.tolerance is not None else self.tolerance

    @property
    def buffers(self) -> list[tuple[int, BufferParam]]:
        return [(idx, p) for idx, p in enumerate(self.params) if isinstance(p, BufferParam)]


# ---------------------------------------------------------------------------------------------------------
# Parsing


POINTER_SIZE = 8  # bytes of a buffer or null parameter in the kernel's parameter block


def param_size(param: Param) -> int:
    """Bytes the parameter takes in the kernel's parameter block."""
    if isinstance(param, ScalarParam):
        dtype = lookup_dtype(param.type)
        assert dtype is not None
        return dtype.size
    return POINTER_SIZE


def load_spec(path: str | Path) -> LaunchSpec:
    """Read ``K.launch.toml``; relative fill files resolve against the spec's directory."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise SpecError("", f"cannot read {path}: {exc.strerror}") from exc
    return parse_spec(text, base_dir=path.parent)


def parse_spec(text: str, base_dir: str | Path | None = None) -> LaunchSpec:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError("", f"not valid TOML: {exc}") from exc
    return spec_from_dict(raw, base_dir=base_dir)


_TOP_KEYS = {
    "kernel",
    "name",
    "grid",
    "block",
    "cluster",
    "shared_bytes",
    "params",
    "tolerance",
    "nondeterministic",
    "meta",
}
_BUFFER_KEYS = {"kind", "name", "dtype", "shape", "bytes", "role", "fill", "tolerance"}
_SCALAR_KEYS = {"kind", "name", "type", "value"}
_NULL_KEYS = {"kind", "name"}
_FILL_KEYS = {"kind", "mean", "std", "low", "high", "value", "path", "key"}
_TOL_KEYS = {"atol", "rtol", "ulp"}


def spec_from_dict(raw: dict[str, Any], base_dir: str | Path | None = None) -> LaunchSpec:
    """Validate a decoded TOML/JSON table (the protocol sends specs in this form)."""
    if not isinstance(raw, dict):
        raise SpecError("", "a spec is a table")
    _check_keys(raw, _TOP_KEYS, "")
    kernel = _get_str(raw, "kernel", "", required=True)
    params_raw = raw.get("params", [])
    if not isinstance(params_raw, list):
        raise SpecError("params", "must be an array of tables ([[params]])")
    params = tuple(_parse_param(p, f"params[{idx}]", base_dir) for idx, p in enumerate(params_raw))
    cluster = _dims(raw["cluster"], "cluster") if "cluster" in raw else None
    shared = raw.get("shared_bytes", 0)
    if not _is_int(shared) or shared < 0:
        raise SpecError("shared_bytes", f"must be a non-negative integer, got {shared!r}")
    nondet = raw.get("nondeterministic", False)
    if not isinstance(nondet, bool):
        raise SpecError("nondeterministic", "must be true or false")
    tolerance = _parse_tolerance(raw["tolerance"], "tolerance") if "tolerance" in raw else None
    if (
        nondet
        and tolerance is None
        and not any(isinstance(p, BufferParam) and p.tolerance is not None for p in params)
    ):
        raise SpecError("tolerance", "a nondeterministic kernel needs a tolerance (atol/rtol/ulp)")
    meta = raw.get("meta", {})
    if not isinstance(meta, dict):
        raise SpecError("meta", "must be a table")
    block = _dims(_require(raw, "block", ""), "block")
    if math.prod(block) > 1024:
        raise SpecError("block", f"{math.prod(block)} threads per block; the limit is 1024")
    return LaunchSpec(
        kernel=kernel,
        grid=_dims(_require(raw, "grid", ""), "grid"),
        block=block,
        params=params,
        shared_bytes=shared,
        cluster=cluster,
        tolerance=tolerance,
        nondeterministic=nondet,
        name=_get_str(raw, "name", ""),
        extra=dict(meta),
    )


def _parse_param(raw: Any, path: str, base_dir: str | Path | None) -> Param:
    if not isinstance(raw, dict):
        raise SpecError(path, "must be a table")
    kind = raw.get("kind", "buffer")
    name = _get_str(raw, "name", path) or path
    if kind == "null":
        _check_keys(raw, _NULL_KEYS, path)
        return NullParam(name)
    if kind == "scalar":
        _check_keys(raw, _SCALAR_KEYS, path)
        return _parse_scalar(raw, path, name)
    if kind != "buffer":
        raise SpecError(f"{path}.kind", f"unknown kind {kind!r} (buffer, scalar or null)")
    _check_keys(raw, _BUFFER_KEYS, path)
    dtype_name = raw.get("dtype", "u8" if "bytes" in raw else None)
    if dtype_name is None:
        raise SpecError(f"{path}.dtype", "missing (or give bytes = N for a raw byte buffer)")
    dtype = lookup_dtype(str(dtype_name))
    if dtype is None:
        raise SpecError(f"{path}.dtype", f"unknown dtype {dtype_name!r}")
    if ("shape" in raw) == ("bytes" in raw):
        raise SpecError(path, "give exactly one of shape = [...] or bytes = N")
    if "shape" in raw:
        shape_raw = raw["shape"]
        if isinstance(shape_raw, int) and not isinstance(shape_raw, bool):
            shape_raw = [shape_raw]
        if (
            not isinstance(shape_raw, list)
            or not shape_raw
            or not all(_is_int(d) and d > 0 for d in shape_raw)
        ):
            raise SpecError(f"{path}.shape", f"must be a list of positive integers, got {raw['shape']!r}")
        shape = tuple(shape_raw)
    else:
        n_bytes = raw["bytes"]
        if not _is_int(n_bytes) or n_bytes <= 0:
            raise SpecError(f"{path}.bytes", f"must be a positive integer, got {n_bytes!r}")
        if n_bytes % dtype.size:
            raise SpecError(
                f"{path}.bytes", f"{n_bytes} is not a multiple of {dtype.name}'s {dtype.size} bytes"
            )
        shape = (n_bytes // dtype.size,)
    role = raw.get("role", "in")
    if role not in ROLES:
        raise SpecError(f"{path}.role", f"unknown role {role!r} ({', '.join(ROLES)})")
    if "fill" in raw and role == "out":
        raise SpecError(
            f"{path}.fill",
            "outputs are poisoned with 0xFF bytes before each run; use role "
            '= "inout" if the kernel reads them',
        )
    if "fill" in raw:
        fill = _parse_fill(raw["fill"], f"{path}.fill", base_dir)
    elif role == "out":
        fill = Fill("zeros")  # never used: outputs are poisoned before each run
    elif role == "scratch":
        fill = Fill("zeros")  # split-k locks and semaphores expect zeroed workspaces
    elif dtype.is_float:
        fill = Fill("normal")
    else:
        # Integer inputs are often indices: random values would fault, so the user must say what is valid.
        raise SpecError(
            f"{path}.fill",
            f'required for {dtype.name} input buffers (e.g. {{ kind = "int", low = 0, high = 16 }}}})',
        )
    if fill.kind in ("normal", "uniform") and not dtype.is_float:
        raise SpecError(
            f"{path}.fill.kind", f'{fill.kind!r} needs a float dtype; use kind = "int" for {dtype.name}'
        )
    tolerance = _parse_tolerance(raw["tolerance"], f"{path}.tolerance") if "tolerance" in raw else None
    if tolerance is not None and tolerance.ulp and not dtype.is_float:
        raise SpecError(f"{path}.tolerance.ulp", f"ULPs need a float dtype, not {dtype.name}")
    return BufferParam(name, dtype.name, shape, role, fill, tolerance)


def _parse_scalar(raw: dict[str, Any], path: str, name: str) -> ScalarParam:
    type_name = _require(raw, "type", path)
    dtype = lookup_dtype(str(type_name))
    if dtype is None or dtype.name.startswith("fp8"):
        raise SpecError(f"{path}.type", f"unknown scalar type {type_name!r}")
    value = _require(raw, "value", path)
    if dtype.is_float:
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise SpecError(f"{path}.value", f"must be a number for {dtype.name}, got {value!r}")
        value = float(value)
    else:
        if isinstance(value, bool) and dtype.kind == "bool":
            value = int(value)
        if not _is_int(value):
            raise SpecError(f"{path}.value", f"must be an integer for {dtype.name}, got {value!r}")
        bits = dtype.size * 8
        low, high = (
            (0, 2**bits - 1) if dtype.kind in ("uint", "bool") else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        )
        if not low <= value <= high:
            raise SpecError(f"{path}.value", f"{value} does not fit in {dtype.name} [{low}, {high}]")
    return ScalarParam(name, dtype.name, value)


def _parse_fill(raw: Any, path: str, base_dir: str | Path | None) -> Fill:
    if isinstance(raw, str):
        raw = {"kind": raw}
    if not isinstance(raw, dict):
        raise SpecError(path, 'must be a table like { kind = "normal" } or a kind name')
    _check_keys(raw, _FILL_KEYS, path)
    kind = raw.get("kind")
    if kind not in FILL_KINDS:
        raise SpecError(f"{path}.kind", f"unknown fill {kind!r} ({', '.join(FILL_KINDS)})")
    numbers = {}
    for key in ("mean", "std", "low", "high", "value"):
        if key in raw:
            if not isinstance(raw[key], int | float) or isinstance(raw[key], bool):
                raise SpecError(f"{path}.{key}", f"must be a number, got {raw[key]!r}")
            numbers[key] = float(raw[key])
    if kind == "int":
        numbers.setdefault("low", 0.0)
        numbers.setdefault("high", 16.0)
        if not (numbers["low"].is_integer() and numbers["high"].is_integer()):
            raise SpecError(path, "int fill needs integer low and high")
    if kind in ("uniform", "int") and numbers.get("low", -1.0) >= numbers.get("high", 1.0):
        raise SpecError(path, "low must be below high")
    if kind == "normal" and numbers.get("std", 1.0) < 0:
        raise SpecError(f"{path}.std", "must be non-negative")
    file_path = ""
    if kind == "file":
        file_path = _get_str(raw, "path", path, required=True)
        if not file_path.endswith((".npy", ".npz")):
            raise SpecError(f"{path}.path", f"{file_path!r}: only .npy and .npz files are read")
        if base_dir is not None and not Path(file_path).is_absolute():
            file_path = str(Path(base_dir) / file_path)
    return Fill(kind, key=_get_str(raw, "key", path), path=file_path, **numbers)


def _parse_tolerance(raw: Any, path: str) -> Tolerance:
    if not isinstance(raw, dict):
        raise SpecError(path, "must be a table like { atol = 1e-5, rtol = 1e-3 }")
    _check_keys(raw, _TOL_KEYS, path)
    values: dict[str, Any] = {}
    for key in ("atol", "rtol"):
        if key in raw:
            val = raw[key]
            if not isinstance(val, int | float) or isinstance(val, bool) or not val >= 0:
                raise SpecError(f"{path}.{key}", f"must be a non-negative number, got {val!r}")
            values[key] = float(val)
    if "ulp" in raw:
        if not _is_int(raw["ulp"]) or raw["ulp"] < 0:
            raise SpecError(f"{path}.ulp", f"must be a non-negative integer, got {raw['ulp']!r}")
        values["ulp"] = raw["ulp"]
    return Tolerance(**values)


def _dims(raw: Any, path: str) -> tuple[int, int, int]:
    if _is_int(raw):
        raw = [raw]
    if not isinstance(raw, list) or not 1 <= len(raw) <= 3:
        raise SpecError(path, f"must be 1 to 3 positive integers, got {raw!r}")
    for idx, dim in enumerate(raw):
        if not _is_int(dim) or dim <= 0:
            raise SpecError(f"{path}[{idx}]", f"must be a positive integer, got {dim!r}")
    padded = list(raw) + [1] * (3 - len(raw))
    return (padded[0], padded[1], padded[2])


def _check_keys(raw: dict[str, Any], allowed: set[str], path: str) -> None:
    for key in raw:
        if key not in allowed:
            where = f"{path}.{key}" if path else key
            raise SpecError(where, f"unknown key (expected one of {', '.join(sorted(allowed))})")


def _require(raw: dict[str, Any], key: str, path: str) -> Any:
    if key not in raw:
        raise SpecError(f"{path}.{key}" if path else key, "missing")
    return raw[key]


def _get_str(raw: dict[str, Any], key: str, path: str, required: bool = False) -> str:
    where = f"{path}.{key}" if path else key
    if key not in raw:
        if required:
            raise SpecError(where, "missing")
        return ""
    if not isinstance(raw[key], str):
        raise SpecError(where, f"must be a string, got {raw[key]!r}")
    return raw[key]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# ---------------------------------------------------------------------------------------------------------
# Writing: a plain dict (for the worker protocol and JSON) and TOML text (no tomli_w on the device image).


def spec_to_dict(spec: LaunchSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"kernel": spec.kernel}
    if spec.name:
        out["name"] = spec.name
    out["grid"] = list(spec.grid)
    out["block"] = list(spec.block)
    if spec.cluster is not None:
        out["cluster"] = list(spec.cluster)
    out["shared_bytes"] = spec.shared_bytes
    if spec.nondeterministic:
        out["nondeterministic"] = True
    if spec.tolerance is not None:
        out["tolerance"] = _tolerance_dict(spec.tolerance)
    if spec.extra:
        out["meta"] = dict(spec.extra)
    out["params"] = [_param_dict(p) for p in spec.params]
    return out


def _tolerance_dict(tol: Tolerance) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if tol.atol:
        out["atol"] = tol.atol
    if tol.rtol:
        out["rtol"] = tol.rtol
    if tol.ulp:
        out["ulp"] = tol.ulp
    return out


def _fill_dict(fill: Fill) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": fill.kind}
    if fill.kind == "normal":
        out.update(mean=fill.mean, std=fill.std)
    elif fill.kind in ("uniform", "int"):
        low, high = (int(fill.low), int(fill.high)) if fill.kind == "int" else (fill.low, fill.high)
        out.update(low=low, high=high)
    elif fill.kind == "constant":
        out["value"] = fill.value
    elif fill.kind == "file":
        out["path"] = fill.path
        if fill.key:
            out["key"] = fill.key
    return out


def _param_dict(param: Param) -> dict[str, Any]:
    if isinstance(param, NullParam):
        return {"name": param.name, "kind": "null"}
    if isinstance(param, ScalarParam):
        return {"name": param.name, "kind": "scalar", "type": param.type, "value": param.value}
    out: dict[str, Any] = {
        "name": param.name,
        "kind": "buffer",
        "dtype": param.dtype,
        "shape": list(param.shape),
        "role": param.role,
    }
    if param.role not in ("out",):
        out["fill"] = _fill_dict(param.fill)
    if param.tolerance is not None:
        out["tolerance"] = _tolerance_dict(param.tolerance)
    return out


def write_spec(spec: LaunchSpec) -> str:
    """TOML text that :func:`parse_spec` reads back to an equal spec."""
    table = spec_to_dict(spec)
    params = table.pop("params")
    lines = [f"{key} = {_toml_value(value)}" for key, value in table.items() if not isinstance(value, dict)]
    for key, value in table.items():
        if isinstance(value, dict):
            lines += ["", f"[{key}]"] + [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()]
    for param in params:
        lines += ["", "[[params]]"] + [f"{k} = {_toml_value(v)}" for k, v in param.items()]
    return "\n".join(lines) + "\n"


def _toml_key(key: str) -> str:
    bare = key and all(ch.isalnum() or ch in "-_" for ch in key)
    return key if bare else json.dumps(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # JSON's escapes are a subset of TOML basic strings
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")
