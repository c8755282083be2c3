"""Feature: launch spec from a corpus JSON (``sass_lsp/corpus/sm_90/NAME.json``) and its cubin.

The JSON lists the Python-level arguments Triton was called with; the cubin's ``EIATTR_KPARAM_INFO`` lists
what
the kernel really takes. Triton 3.6 specialises integer arguments equal to 1 away and appends two pointers
(global and profile scratch) that may be null, so the arguments are matched to the records by count and size.
"""

from __future__ import annotations

import json
from typing import Any

from sass_lsp.gpu.dtypes import DTYPES, DType, lookup_dtype
from sass_lsp.gpu.kparams import kernel_names, read_kparams
from sass_lsp.gpu.spec import (
    BufferParam,
    Fill,
    LaunchSpec,
    NullParam,
    Param,
    ScalarParam,
    SpecError,
    _parse_fill,
    param_size,
    spec_from_dict,
)


def spec_from_json(corpus_json: dict[str, Any] | str, cubin: bytes) -> LaunchSpec:
    """Raises :class:`SpecError` (with a hint saying what to add or change) on a JSON it cannot use;
    ``json.JSONDecodeError`` on text that is not JSON, ``ElfError`` on a cubin that is not one."""
    raw = json.loads(corpus_json) if isinstance(corpus_json, str) else corpus_json
    if not isinstance(raw, dict):
        raise SpecError("", f"the JSON is a {type(raw).__name__}, not an object", _SHAPE_HINT)
    kernel = raw.get("kernel")
    if not isinstance(kernel, str):
        raise SpecError("kernel", "missing in the JSON", 'add "kernel": "<the kernel\'s name in the cubin>"')
    names = kernel_names(cubin)
    if kernel not in names:
        raise SpecError(
            "kernel",
            f"{kernel!r} is not in the cubin (has {', '.join(names) or 'no kernel'})",
            "name one of the cubin's kernels, or pass the kernel's own cubin with --cubin",
        )
    args = raw.get("args", [])
    if not isinstance(args, list):
        raise SpecError("args", f"must be a list of argument objects, got {args!r:.60}", _SHAPE_HINT)
    for key in ("grid", "block"):
        dims = raw.get(key, [1])
        if not isinstance(dims, list) or not all(_is_count(d) for d in dims):
            raise SpecError(key, f"must be a list of positive integers, got {dims!r:.60}", "e.g. [128, 1, 1]")
    if not _is_count(raw.get("shared_bytes", 0), zero=True):
        raise SpecError("shared_bytes", "must be a non-negative integer", 'e.g. "shared_bytes": 0')
    if "median_ms" in raw and not _is_number(raw["median_ms"]):
        raise SpecError("median_ms", "must be a number", "drop it or give the reference time in ms")
    params = [_param(arg, idx) for idx, arg in enumerate(args)]
    kparams = read_kparams(cubin, kernel)
    sizes = [kp.size for kp in kparams]

    specialised = [idx for idx, p in enumerate(params) if isinstance(p, ScalarParam) and _is_int_one(p)]
    candidates = [(params, []), ([p for idx, p in enumerate(params) if idx not in specialised], specialised)]
    for kept, dropped in candidates:
        for n_extra in (0, 2):
            trial = kept + [NullParam(f"triton_scratch{idx}") for idx in range(n_extra)]
            if [param_size(p) for p in trial] == sizes:
                meta: dict[str, Any] = {"from_json": str(raw.get("name", kernel))}
                if dropped:
                    meta["specialised_away"] = dropped  # JSON arg indices Triton compiled in as constants
                if "median_ms" in raw:
                    meta["reference_median_ms"] = float(raw["median_ms"])
                table = {
                    "kernel": kernel,
                    "name": str(raw.get("name", "")),
                    "grid": list(raw.get("grid", [1])),
                    "block": list(raw.get("block", [1])),
                    "shared_bytes": int(raw.get("shared_bytes", 0)),
                    "meta": meta,
                }
                spec = spec_from_dict(table)  # validates dims and sizes the same way a TOML spec is
                return LaunchSpec(**{**spec.__dict__, "params": tuple(trial)})
    raise SpecError(
        "params",
        f"cannot match the JSON's {len(params)} args (sizes {[param_size(p) for p in params]}) "
        f"to {kernel}'s {len(kparams)} KPARAM_INFO records (sizes {sizes})",
    )


_SHAPE_HINT = (
    'a corpus JSON is one object: {"kernel": NAME, "grid": [..], "block": [..], "args": [{"kind": "tensor", '
    '"dtype": .., "shape": [..], "role": "in"}, {"kind": "scalar", "type": "i32", "value": N}, ..]}'
)
_DTYPE_HINT = f"known dtypes: {', '.join(DTYPES)} (and torch/numpy spellings such as float32, int64)"


def _is_count(value: Any, zero: bool = False) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= (0 if zero else 1)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _param(arg: Any, idx: int) -> Param:
    path = f"args[{idx}]"
    name = f"arg{idx}"
    if not isinstance(arg, dict):
        raise SpecError(path, f"must be an object, got {arg!r:.60}", _SHAPE_HINT)
    kind = arg.get("kind")
    if kind == "tensor":
        dtype = lookup_dtype(str(arg.get("dtype")))
        if dtype is None:
            raise SpecError(f"{path}.dtype", f"unknown dtype {arg.get('dtype')!r:.60}", _DTYPE_HINT)
        role = arg.get("role", "in")
        if role not in ("in", "out", "inout"):
            raise SpecError(f"{path}.role", f"unknown role {role!r:.60}", 'use "in", "out" or "inout"')
        shape = arg.get("shape", [])
        if not isinstance(shape, list) or not shape or not all(_is_count(d) for d in shape):
            raise SpecError(
                f"{path}.shape", f"must be positive integers, got {shape!r:.60}", "e.g. [1024, 64]"
            )
        return BufferParam(name, dtype.name, tuple(shape), role, _fill(arg, path, dtype, role))
    if kind == "scalar":
        dtype = lookup_dtype(str(arg.get("type")))
        if dtype is None:
            raise SpecError(f"{path}.type", f"unknown scalar type {arg.get('type')!r:.60}", _DTYPE_HINT)
        value = arg.get("value")
        if not _is_number(value) or (not dtype.is_float and not float(value).is_integer()):
            raise SpecError(
                f"{path}.value", f"must be a number, got {value!r:.60}", "the value passed at launch"
            )
        return ScalarParam(name, dtype.name, float(value) if dtype.is_float else int(value))
    if kind in ("null", "none"):
        return NullParam(name)
    raise SpecError(f"{path}.kind", f"unknown kind {kind!r:.60}", 'use "tensor", "scalar" or "null"')


def _fill(arg: dict[str, Any], path: str, dtype: DType, role: str) -> Fill:
    """The JSON's own ``fill`` (a launch spec's fill table, as JSON); else zeros for an output and normal
    values for a float input. An integer input has no safe default: indices or sizes read out of range
    fault or corrupt memory, so the JSON must say which values are valid."""
    if "fill" in arg:
        fill = _parse_fill(arg["fill"], f"{path}.fill", None)
        if fill.kind == "file":
            raise SpecError(
                f"{path}.fill.kind", "a JSON cannot name an input file", "use int, uniform or normal"
            )
        return fill
    if role == "out":
        return Fill("zeros")
    if not dtype.is_float:
        raise SpecError(
            f"{path}.fill",
            f"integer input {dtype.name}: the JSON does not say which values are valid",
            f'add "fill": {{"kind": "int", "low": 0, "high": N}} to {path} (values low <= v < high, e.g. '
            "N = the size of the dimension it indexes), or write the spec's [[params]] fill by hand",
        )
    return Fill("normal")


def _is_int_one(param: ScalarParam) -> bool:
    dtype = lookup_dtype(param.type)
    return dtype is not None and not dtype.is_float and param.value == 1
