"""Feature: verified speedup. ``sass-lsp bench ORIG EDIT --launch K.launch.toml`` calls :func:`run_bench`.

A result is ``verified`` only when every comparison on every seed matched (bit for bit, or within the spec's
tolerance) **and** the lower bound of the 95% bootstrap CI of median(original)/median(edit) is above 1.0.
Each result carries the GPU, driver, clocks before and after, rounds, batch size, medians and IQRs, so a claim
can be checked and reproduced.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sass_lsp.gpu.runner import GpuRunner, Reply
from sass_lsp.gpu.spec import LaunchSpec
from sass_lsp.gpu.stats import RatioCI, Summary, bootstrap_ratio_ci, summarize

ProgressCallback = Callable[[str, int, int], None]
"""``progress(phase, done, total)``; phases start with ``verify:`` or ``time:``."""

# Verdicts, worst first: what the user must fix before a speedup means anything.
VERDICTS = (
    "no_device",
    "spec_error",
    "load_error",
    "launch_error",
    "fault",
    "timeout",
    "crash",
    "nondeterministic",
    "mismatch",
    "error",
    "slower",
    "not_significant",
    "faster",
)


@dataclass(frozen=True)
class Timing:
    orig: Summary
    edit: Summary
    ci: RatioCI
    rounds: int
    batch: int
    """Launches per timed sample (one CUDA graph replay, or that many flushed launches)."""
    method: str
    cache: str
    n_sets: int
    """Buffer sets rotated between launches (``rotate``) so data is not timed from L2."""
    orig_ms: tuple[float, ...] = ()
    edit_ms: tuple[float, ...] = ()
    round_blocks: tuple[int, ...] = ()
    """Each round's module-load block (the CI resamples within blocks)."""


@dataclass(frozen=True)
class BenchResult:
    label: str
    kernel: str
    verdict: str
    """One of :data:`VERDICTS`."""
    verified: bool
    message: str
    """One line saying what happened, for humans."""
    verification: dict[str, Any] = field(default_factory=dict)
    """The worker's verify result: status, bit_identical, seeds, mismatches, fault, notes."""
    timing: Timing | None = None
    device: dict[str, Any] = field(default_factory=dict)
    clocks_before: dict[str, Any] = field(default_factory=dict)
    clocks_after: dict[str, Any] = field(default_factory=dict)
    worker_starts: int = 0


def run_bench(
    orig_cubin: bytes,
    edit_cubin: bytes,
    spec: LaunchSpec,
    *,
    seeds: int | Sequence[int] = 5,
    rounds: int = 40,
    progress: ProgressCallback | None = None,
    runner: GpuRunner | None = None,
    timeout_s: float = 120.0,
    cache: str = "rotate",
    target_batch_ms: float = 5.0,
    confidence: float = 0.95,
    time_on_mismatch: bool = False,
) -> BenchResult:
    """Verify ``edit_cubin`` against ``orig_cubin`` on fresh inputs per seed, then time both interleaved."""
    seed_list = list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]
    own_runner = runner is None
    active = runner or GpuRunner(timeout_s=timeout_s)
    try:
        return _bench(
            active,
            orig_cubin,
            edit_cubin,
            spec,
            seed_list,
            rounds,
            progress,
            cache,
            target_batch_ms,
            confidence,
            time_on_mismatch,
        )
    finally:
        if own_runner:
            active.close()


def _stage(progress: ProgressCallback | None, prefix: str) -> ProgressCallback | None:
    if progress is None:
        return None
    return lambda phase, done, total: progress(f"{prefix}: {phase}", done, total)


def _bench(
    runner: GpuRunner,
    orig: bytes,
    edit: bytes,
    spec: LaunchSpec,
    seeds: list[int],
    rounds: int,
    progress: ProgressCallback | None,
    cache: str,
    target_batch_ms: float,
    confidence: float,
    time_on_mismatch: bool,
) -> BenchResult:
    base = {"label": spec.label, "kernel": spec.kernel}
    hello = runner.hello()
    if not hello.ok:
        return _failed(base, hello, runner)
    device = hello.result.get("device", {})
    base["device"] = device
    checked = runner.verify(orig, edit, spec, seeds, progress=_stage(progress, "verify"))
    if not checked.ok:
        return _failed(base, checked, runner)
    verification = checked.result
    status = verification.get("status", "error")
    if status != "match" and not (status == "mismatch" and time_on_mismatch):
        return BenchResult(
            **base,
            verdict=status if status in VERDICTS else "error",
            verified=False,
            message=_verify_message(verification),
            verification=verification,
            worker_starts=runner.n_starts,
        )
    timed = runner.time(
        orig,
        edit,
        spec,
        rounds=rounds,
        cache=cache,
        target_batch_ms=target_batch_ms,
        progress=_stage(progress, "time"),
    )
    if not timed.ok or timed.result.get("status") != "ok":
        failed = _failed(base, timed, runner, verification)
        return failed
    raw = timed.result
    ci = bootstrap_ratio_ci(
        raw["orig_ms"], raw["edit_ms"], blocks=raw.get("round_blocks"), confidence=confidence
    )
    timing = Timing(
        summarize(raw["orig_ms"]),
        summarize(raw["edit_ms"]),
        ci,
        raw["rounds"],
        raw["batch"],
        raw["method"],
        raw["cache"],
        raw["n_sets"],
        tuple(raw["orig_ms"]),
        tuple(raw["edit_ms"]),
        tuple(raw.get("round_blocks", ())),
    )
    matched = status == "match"
    if ci.low > 1.0:
        verdict = "faster"
    elif ci.high < 1.0:
        verdict = "slower"
    else:
        verdict = "not_significant"
    verified = matched and verdict == "faster"
    pct = (ci.ratio - 1.0) * 100
    level = f"{confidence:.0%} CI"
    if not matched:
        message = (
            f"NOT verified: outputs differ; speedup {ci.ratio:.4f}x ({level} [{ci.low:.4f}, {ci.high:.4f}])"
        )
    elif verdict == "faster":
        message = f"{pct:+.2f}% faster, {level} [{ci.low:.4f}, {ci.high:.4f}] excludes 1"
    elif verdict == "slower":
        message = f"slower: {pct:+.2f}%, {level} [{ci.low:.4f}, {ci.high:.4f}]"
    else:
        message = (
            f"no significant difference: {ci.ratio:.4f}x, {level} [{ci.low:.4f}, {ci.high:.4f}] contains 1"
        )
    return BenchResult(
        **base,
        verdict=verdict if matched else "mismatch",
        verified=verified,
        message=message,
        verification=verification,
        timing=timing,
        clocks_before=raw.get("clocks_before", {}),
        clocks_after=raw.get("clocks_after", {}),
        worker_starts=runner.n_starts,
    )


def _failed(
    base: dict[str, Any], reply: Reply, runner: GpuRunner, verification: dict[str, Any] | None = None
) -> BenchResult:
    if reply.ok:  # the worker answered, but the device failed (fault or launch error while timing)
        result = reply.result
        verdict = result.get("status", "error")
        return BenchResult(
            **base,
            verdict=verdict if verdict in VERDICTS else "error",
            verified=False,
            message=_verify_message(result),
            verification=verification or result,
            worker_starts=runner.n_starts,
        )
    error = reply.error or {}
    kind = error.get("kind", "error")
    verdict = kind if kind in VERDICTS else "error"
    return BenchResult(
        **base,
        verdict=verdict,
        verified=False,
        message=reply.reason,
        verification=verification or {"status": kind, "error": error},
        worker_starts=runner.n_starts,
    )


def _verify_message(result: dict[str, Any]) -> str:
    status = result.get("status", "error")
    if status == "fault" or status == "launch_error":
        fault = result.get("fault", {})
        hint = f" — {fault['hint']}" if fault.get("hint") else ""
        return (
            f"{fault.get('side', '?')} kernel failed: {fault.get('error')} in {fault.get('call')} "
            f"(seed {fault.get('seed')}){hint}"
        )
    if status == "load_error":
        fault = result.get("fault", {})
        return f"cannot load the {fault.get('side', '?')} cubin: {fault.get('error')}"
    if status in ("mismatch", "nondeterministic"):
        from sass_lsp.gpu.data import Mismatch

        first = result.get("mismatches", [{}])[0]
        try:
            text = Mismatch(**{**first, "first_pos": tuple(first["first_pos"])}).describe()
        except (TypeError, KeyError):
            text = str(first)
        return f"{status}: {text}"
    notes = result.get("notes") or []
    return f"{status}: {'; '.join(notes)}" if notes else status


# ---------------------------------------------------------------------------------------------------------
# Output


def format_bench(result: BenchResult) -> str:
    dev = result.device
    lines = [f"{result.label} ({result.kernel})"]
    if dev:
        clocks = _clock_text(result.clocks_before, result.clocks_after)
        lines.append(
            f"  GPU       {dev.get('gpu', '?')}, driver {dev.get('driver') or dev.get('cuda_driver_api')}, "
            f"sm_{str(dev.get('compute_capability', '?')).replace('.', '')}{clocks}"
        )
    ver = result.verification
    if ver.get("status") in ("match", "mismatch"):
        seeds = ",".join(str(s) for s in ver.get("seeds", []))
        how = "bit-identical" if ver.get("bit_identical") else "within tolerance"
        if ver.get("status") == "match":
            lines.append(f"  outputs   match ({how}) on seeds {seeds}")
        for mismatch in ver.get("mismatches", [])[:5]:
            lines.append(f"  MISMATCH  {_verify_message({'status': 'mismatch', 'mismatches': [mismatch]})}")
    for note in ver.get("notes", []) or []:
        lines.append(f"  note      {note}")
    timing = result.timing
    if timing is not None:
        lines.append(
            f"  timing    {timing.rounds} rounds x {timing.batch} launches, interleaved AB/BA in "
            f"{len(set(timing.round_blocks)) or 1} load blocks, "
            f"{timing.method}, cache={timing.cache} ({timing.n_sets} buffer sets)"
        )
        for name, summ in (("original", timing.orig), ("edit", timing.edit)):
            lines.append(f"  {name:<9} median {_ms(summ.median)}  IQR {_ms(summ.iqr)}  (min {_ms(summ.min)})")
        ci = timing.ci
        lines.append(
            f"  speedup   {ci.ratio:.4f}x  {ci.confidence:.0%} CI [{ci.low:.4f}, {ci.high:.4f}]  "
            f"(width {ci.width:.4f})"
        )
    mark = "VERIFIED" if result.verified else result.verdict.upper().replace("_", " ")
    shown = result.verdict == "mismatch" and ver.get("mismatches") and timing is None
    lines.append(f"  verdict   {mark}" + ("" if shown else f": {result.message}"))
    return "\n".join(lines)


def _ms(value: float) -> str:
    return f"{value * 1000:.2f} us" if value < 1.0 else f"{value:.4f} ms"


def _clock_text(before: dict[str, Any], after: dict[str, Any]) -> str:
    if not before and not after:
        return ""
    return (
        f", SM clock {before.get('clocks.sm', '?')} -> {after.get('clocks.sm', '?')} MHz, "
        f"mem {before.get('clocks.mem', '?')} MHz"
    )


def bench_to_dict(result: BenchResult) -> dict[str, Any]:
    """Plain, strict-JSON-safe data (non-finite floats become null)."""
    out = asdict(result)
    if result.timing is not None:
        out["timing"]["orig"]["iqr"] = result.timing.orig.iqr
        out["timing"]["edit"]["iqr"] = result.timing.edit.iqr
        out["timing"]["ci"]["width"] = result.timing.ci.width
    return _json_safe(out)


def bench_to_json(result: BenchResult, indent: int | None = 2) -> str:
    return json.dumps(bench_to_dict(result), indent=indent, allow_nan=False)


def _json_safe(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value
