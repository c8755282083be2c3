#!/usr/bin/env python3
"""Where does a screened candidate's GPU time go? The worker's own account of each request's device steps.

A search's budget counts the wall time of the worker's ``verify`` and ``time`` requests per candidate
(``GpuMeasure``: 2 seeds, 12 rounds in 4 blocks, ~2 ms batches, no clock readings). This screens
``--candidates`` random legal reorderings of a held-out kernel exactly so and splits each request's wall time
by the worker's own account of it (each result's ``phase_ms``: module loads, uploads, launches, downloads,
comparisons, graphs captured and destroyed, warm-ups, the timed replays, allocation); ``rest`` is what the
worker did not book (the pipe, base64 and JSON, Python between steps). The first ``--warm`` candidates
fill the worker's caches (inputs, the original's outputs) and are left out. Needs a GPU: the stand-in
device runs only its own fake cubins.

    python benchmarks/screen_phases.py --kernels sgemm_tiled triton_matmul --candidates 24
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import defaultdict

from reorder_eval import load_kernel

from sass_lsp.cuasm import assemble_cuasm
from sass_lsp.gpu.measure import GpuMeasure
from sass_lsp.gpu.runner import GpuRunner
from sass_lsp.schedule.search import random_candidates


def screen_phases(name: str, runner: GpuRunner, n: int, warm: int, seed: int) -> dict[str, list[float]]:
    """Seconds per candidate: each request's wall time, and each kind of device step the worker booked in
    the request's ``phase_ms`` (a worker that reports none gives only the request times)."""
    text, cubin, spec = load_kernel(name)
    measure = GpuMeasure(runner, cubin, spec, name)  # its seeds, rounds and batch: what a search uses
    candidates = random_candidates(text, "sm_90", random.Random(seed), kernel=spec.kernel)
    per_phase: dict[str, list[float]] = defaultdict(list)
    for i in range(n + warm):
        edit = assemble_cuasm(next(candidates).text, source_name=f"<candidate {i}>")
        t0 = time.perf_counter()
        checked = runner.verify(cubin, edit, spec, list(measure.seeds))
        t1 = time.perf_counter()
        timed = runner.time(
            cubin,
            edit,
            spec,
            rounds=measure.rounds,
            target_batch_ms=measure.target_batch_ms,
            clocks=False,  # as GpuMeasure asks (an older worker ignores it and reads the clocks)
        )
        t2 = time.perf_counter()
        verdict = checked.result.get("status") if checked.ok else checked.kind
        timing = timed.result.get("status") if timed.ok else timed.kind
        if verdict != "match" or timing != "ok":
            print(f"{name}: candidate {i}: verify {verdict}, time {timing}: left out", file=sys.stderr)
            continue
        if i < warm:
            continue
        for request, reply, wall in (("verify", checked, t1 - t0), ("time", timed, t2 - t1)):
            per_phase[f"{request} (request)"].append(wall)
            booked = reply.result.get("phase_ms", {})
            for kind, ms in booked.items():
                per_phase[f"{request}: {kind}"].append(ms / 1e3)
            if booked:  # IPC, base64 and JSON, Python between the device steps
                per_phase[f"{request}: rest"].append(wall - sum(booked.values()) / 1e3)
    return per_phase


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", nargs="+", default=["sgemm_tiled", "triton_matmul"])
    ap.add_argument("--candidates", type=int, default=24)
    ap.add_argument("--warm", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    with GpuRunner() as runner:
        for name in args.kernels:
            per_phase = screen_phases(name, runner, args.candidates, args.warm, args.seed)
            if not per_phase:
                print(f"{name}: no candidate was timed", file=sys.stderr)
                return 1
            n = len(per_phase["verify (request)"])
            request = statistics.median(
                v + t for v, t in zip(per_phase["verify (request)"], per_phase["time (request)"], strict=True)
            )
            print(f"\n{name}: {n} candidates, median {request * 1e3:.1f} ms of requests per candidate")
            print("| phase | median ms per candidate | share of the median request |")
            print("|---|---|---|")
            medians = {phase: statistics.median(seconds) for phase, seconds in per_phase.items()}
            for phase in sorted(medians, key=lambda p: (p.split()[0].rstrip(":"), -medians[p])):
                m = medians[phase]
                print(f"| {phase} | {m * 1e3:.2f} | {m / request:.1%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
