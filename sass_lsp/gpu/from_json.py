"""Feature: launch spec from a corpus JSON (``sass_lsp/corpus/sm_90/NAME.json``) and its cubin.

The JSON lists the Python-level arguments Triton was called with; the cubin's ``EIATTR_KPARAM_INFO`` lists
what
the kernel really takes. Triton 3.6 specialises integer arguments equal to 1 away and appends two pointers
(global and profile scratch) that may be null, so the arguments are matched to the records by count and size.
"""

from __future__ import annotations

import json
from typing import Any

from sass_lsp.gpu.dtypes import lookup_dtype
from sass_lsp.gpu.kparams import kernel_names, read_kparams
from sass_lsp.gpu.spec import (
    BufferParam,
    Fill,
    LaunchSpec,
    NullParam,
    Param,
    ScalarParam,
    SpecError,
    param_size,
    spec_from_dict,
)


def spec_from_json(corpus_json: dict[str, Any] | str, cubin: bytes) -> LaunchSpec:
    raw = json.loads(corpus_json) if isinstance(corpus_json, str) else corpus_json
    kernel = raw.get("kernel")
    if not isinstance(kernel, str):
        raise SpecError("kernel", "missing in the JSON")
    if kernel not in kernel_names(cubin):
        raise SpecError("kernel", f"{kernel!r} is not in the cubin (has {', '.join(kernel_names(cubin))})")
    args = raw.get("args", [])
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


def _param(arg: dict[str, Any], idx: int) -> Param:
    path = f"args[{idx}]"
    name = f"arg{idx}"
    kind = arg.get("kind")
    if kind == "tensor":
        dtype = lookup_dtype(str(arg.get("dtype")))
        if dtype is None:
            raise SpecError(f"{path}.dtype", f"unknown dtype {arg.get('dtype')!r}")
        role = arg.get("role", "in")
        if role not in ("in", "out", "inout"):
            raise SpecError(f"{path}.role", f"unknown role {role!r}")
        if role != "out" and not dtype.is_float:
            raise SpecError(
                f"{path}.fill", f"integer input {dtype.name}: the JSON does not say which values are valid"
            )
        shape = tuple(int(d) for d in arg.get("shape", []))
        if not shape or min(shape) <= 0:
            raise SpecError(f"{path}.shape", f"must be positive integers, got {arg.get('shape')!r}")
        return BufferParam(name, dtype.name, shape, role, Fill("zeros" if role == "out" else "normal"))
    if kind == "scalar":
        dtype = lookup_dtype(str(arg.get("type")))
        if dtype is None:
            raise SpecError(f"{path}.type", f"unknown scalar type {arg.get('type')!r}")
        value = arg.get("value")
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise SpecError(f"{path}.value", f"must be a number, got {value!r}")
        return ScalarParam(name, dtype.name, float(value) if dtype.is_float else int(value))
    if kind in ("null", "none"):
        return NullParam(name)
    raise SpecError(f"{path}.kind", f"unknown kind {kind!r}")


def _is_int_one(param: ScalarParam) -> bool:
    dtype = lookup_dtype(param.type)
    return dtype is not None and not dtype.is_float and param.value == 1
