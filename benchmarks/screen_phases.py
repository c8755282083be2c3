#!/usr/bin/env python3
"""Where does a screened candidate's GPU time go? The worker's phases, timed from its progress messages.

A search's budget counts the wall time of the worker's ``verify`` and ``time`` requests per candidate
(``GpuMeasure``: 2 seeds, 12 rounds in 4 blocks, ~2 ms batches). This screens ``--candidates`` random legal
reorderings of a held-out kernel exactly so and splits each request's wall time at the worker's progress
messages: the time from one message to the next belongs to the phase the first one names. The time before a
request's first message is module loading and the kernel's parameter check (``start``); the time between a
block's last round and the next block's graph capture is unloading, reloading and warming the modules
(``next block``). The first ``--warm`` candidates fill the worker's caches (inputs, the original's outputs)
and are left out. Needs a GPU (``SASS_LSP_GPU_BACKEND=fake`` runs it on the stand-in device).

    python benchmarks/screen_phases.py --kernels sgemm_tiled triton_matmul --candidates 24
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
from collections import defaultdict

from reorder_eval import load_kernel

from sass_lsp.cuasm import assemble_cuasm
from sass_lsp.gpu.measure import GpuMeasure
from sass_lsp.gpu.runner import GpuRunner
from sass_lsp.schedule.search import random_candidates


def phase_group(phase: str) -> str:
    """A progress phase without its numbers and seeds: "round 3/12 edit" -> "round edit"."""
    phase = re.sub(r"round \d+/\d+", "round", phase)
    return re.sub(r" seed \d+", " seed", phase)


class PhaseClock:
    """A progress callback that books the time since the previous message to that message's phase."""

    def __init__(self, request: str) -> None:
        self.request = request
        self.last, self.phase = time.perf_counter(), "start"
        self.spent: dict[str, float] = defaultdict(float)

    def __call__(self, phase: str, done: int, total: int) -> None:
        now = time.perf_counter()
        label = self.phase
        if label.startswith("round") and phase.startswith("capture"):
            label = "next block"
        self.spent[f"{self.request}: {label}"] += now - self.last
        self.last, self.phase = now, phase_group(phase)

    def close(self) -> dict[str, float]:
        self("end", 0, 0)
        return dict(self.spent)


def screen_phases(name: str, runner: GpuRunner, n: int, warm: int, seed: int) -> dict[str, list[float]]:
    text, cubin, spec = load_kernel(name)
    measure = GpuMeasure(runner, cubin, spec, name)  # its seeds, rounds and batch: what a search uses
    candidates = random_candidates(text, "sm_90", random.Random(seed), kernel=spec.kernel)
    per_phase: dict[str, list[float]] = defaultdict(list)
    for i in range(n + warm):
        edit = assemble_cuasm(next(candidates).text, source_name=f"<candidate {i}>")
        verify_clock, time_clock = PhaseClock("verify"), PhaseClock("time")
        t0 = time.perf_counter()
        checked = runner.verify(cubin, edit, spec, list(measure.seeds), progress=verify_clock)
        t1 = time.perf_counter()
        timed = runner.time(
            cubin,
            edit,
            spec,
            rounds=measure.rounds,
            target_batch_ms=measure.target_batch_ms,
            progress=time_clock,
        )
        t2 = time.perf_counter()
        verdict = checked.result.get("status") if checked.ok else checked.kind
        timing = timed.result.get("status") if timed.ok else timed.kind
        if verdict != "match" or timing != "ok":
            print(f"{name}: candidate {i}: verify {verdict}, time {timing}: left out", file=sys.stderr)
            continue
        if i < warm:
            continue
        phases = {**verify_clock.close(), **time_clock.close()}
        for phase, seconds in phases.items():
            per_phase[phase].append(seconds)
        per_phase["verify (request)"].append(t1 - t0)
        per_phase["time (request)"].append(t2 - t1)
        batch = timed.result["batch"]  # the rounds' samples are per-launch ms of a batch
        per_phase["time: the timed launches themselves"].append(
            (sum(timed.result["orig_ms"]) + sum(timed.result["edit_ms"])) * batch / 1e3
        )
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
            for phase in sorted(per_phase, key=lambda p: (p.split(":")[0], -statistics.median(per_phase[p]))):
                m = statistics.median(per_phase[phase])
                print(f"| {phase} | {m * 1e3:.2f} | {m / request:.1%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
