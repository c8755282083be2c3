"""Feature: verified timing on the GPU. Launch specs, a worker process with its own CUDA context, bit-exact
verification of an edited cubin against the original, interleaved timing with a bootstrap CI, and ncu
profiles.

Code map:
- ``spec.py``        ``K.launch.toml`` ⇄ :class:`LaunchSpec` (frozen dataclasses, :class:`SpecError` with
paths)
- ``from_json.py``   corpus JSON + cubin → spec (KPARAM_INFO decides Triton's dropped/appended parameters)
- ``kparams.py``     ``EIATTR_KPARAM_INFO`` reader
- ``dtypes.py``, ``data.py``  element types, seeded fills, poison, bitwise/tolerant comparison (numpy only)
- ``stats.py``       medians, IQR, paired bootstrap CI of the speedup
- ``device.py``      the CUDA backend (cuda.bindings.driver); ``fake_device.py`` is a test double
- ``session.py``     verify / time / launch against a device (runs inside the worker)
- ``worker.py``, ``protocol.py``, ``runner.py``  the worker process, its JSON-lines protocol, the parent side
- ``bench.py``       :func:`run_bench`, :func:`format_bench`, JSON output for the CLI
- ``profile.py``, ``launch_once.py``  per-instruction profiles through Nsight Compute
- ``measure.py``, ``optimize.py``  schedule search on the GPU: one candidate -> verified, timed measurement
  (JSON-lines log); screen within a budget, confirm the best, write the report, plot and verified outputs

Architecture Invariant: importing this package loads neither the CUDA driver nor torch; only the worker
process
(and ``launch_once`` under ncu) creates a CUDA context.
"""

from sass_lsp.gpu.bench import BenchResult, Timing, bench_to_dict, bench_to_json, format_bench, run_bench
from sass_lsp.gpu.from_json import spec_from_json
from sass_lsp.gpu.runner import GpuRunner, Reply
from sass_lsp.gpu.spec import (
    BufferParam,
    Fill,
    LaunchSpec,
    NullParam,
    ScalarParam,
    SpecError,
    Tolerance,
    load_spec,
    parse_spec,
    spec_from_dict,
    spec_to_dict,
    write_spec,
)

__all__ = [
    "BenchResult",
    "BufferParam",
    "Fill",
    "GpuRunner",
    "LaunchSpec",
    "NullParam",
    "Reply",
    "ScalarParam",
    "SpecError",
    "Timing",
    "Tolerance",
    "bench_to_dict",
    "bench_to_json",
    "format_bench",
    "load_spec",
    "parse_spec",
    "run_bench",
    "spec_from_dict",
    "spec_from_json",
    "spec_to_dict",
    "write_spec",
]
