#!/usr/bin/env python3
"""How much wall time does proposing ahead save in ``optimize``'s annealing walks? No GPU needed.

A 300 GPU-second row's wall time is the GPU's (the worker's verify and time requests: the budget) plus the
host's: proposing each neighbour and assembling it. The walks over control codes and over renames and
cross-block moves propose the next neighbour while one is measured (``annealing(overlap=True)``). This runs
each walk with both settings on a kernel, with the real proposers and the real assembly (``prepare``) and a
stand-in GPU request that sleeps ``--gpu-ms`` (about 300 s over ~2,000 candidates on flash_attn_fwd) and
gives each schedule a deterministic speedup around 1, and prints the wall time per measured candidate.
The random baseline over every move kind (``reorder_eval.py --methods random_all``) screens chains that
worker processes draw; it runs with one drawing process and with ``--draw-workers``.

    python benchmarks/walk_overlap.py --kernel flash_attn_fwd --budget 12 --gpu-ms 150
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import zlib
from functools import partial

from move_campaign import default_draw_workers
from reorder_eval import load_kernel, random_chains

from sass_lsp import app
from sass_lsp.app.optimize import control_search, structural_search
from sass_lsp.cuasm import assemble_cuasm
from sass_lsp.schedule.search import Measured, schedule_key, screen


class StandInGpu:
    """``measure`` split as ``GpuMeasure`` is: ``prepare`` assembles the candidate as it does, ``finish``
    stands in for the GPU requests (a sleep, counted as the measurement's GPU seconds)."""

    def __init__(self, gpu_s: float) -> None:
        self.gpu_s = gpu_s

    def prepare(self, text: str) -> str:
        assemble_cuasm(text, source_name="<candidate>")  # verified as GpuMeasure.prepare assembles
        return text

    def finish(self, text: str) -> Measured:
        time.sleep(self.gpu_s)
        s = (
            0.995 + (zlib.crc32(text.encode()) % 100) / 10_000
        )  # a speedup 0.995-1.005, most neighbours "noise"
        return Measured(schedule_key(text), "match", s, s - 0.001, s + 0.001, seconds=self.gpu_s)

    def __call__(self, text: str) -> Measured:
        return self.finish(self.prepare(text))


WALKS = ("control", "rename+cross-block+reorder", "random_all")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="flash_attn_fwd")
    ap.add_argument("--budget", type=float, default=12.0, help="stand-in GPU seconds per walk")
    ap.add_argument("--gpu-ms", type=float, default=150.0, help="one candidate's GPU requests, in ms")
    ap.add_argument("--draw-workers", type=int, default=max(2, default_draw_workers()))
    ap.add_argument("--walks", nargs="+", choices=WALKS, default=list(WALKS))
    args = ap.parse_args(argv)
    text, cubin, spec = load_kernel(args.kernel)
    original = app.original_kernel(text, args.kernel, spec, cubin=cubin)
    threads = math.prod(spec.block)
    walks = []  # (walk, setting, measure -> log), only those asked for
    for overlap in (False, True):
        if "control" in args.walks:
            control = control_search(original, 0, overlap=overlap)(None, None)
            walks.append(("control", f"overlap {overlap}", partial(control, budget=args.budget)))
        if "rename+cross-block+reorder" in args.walks:
            structural = structural_search(original, 0, ("rename", "cross-block"), overlap=overlap)
            walks.append(
                ("rename+cross-block+reorder", f"overlap {overlap}", partial(structural, budget=args.budget))
            )
    if "random_all" in args.walks:
        for workers in (1, args.draw_workers):
            chains = random_chains(text, original.arch, args.kernel, threads, "0", workers)
            walks.append(
                ("random_all", f"{workers} drawing processes", partial(screen, chains, budget=args.budget))
            )
    print(f"{args.kernel}: {args.budget:g} stand-in GPU s per walk, {args.gpu_ms:g} ms per candidate")
    print("| walk | setting | candidates | wall s | wall ms per candidate | host ms beyond the GPU's |")
    print("|---|---|---|---|---|---|")
    for name, setting, run in walks:
        measure = StandInGpu(args.gpu_ms / 1e3)
        t0 = time.perf_counter()
        log = run(measure)
        wall = time.perf_counter() - t0
        n = max(1, len(log.trials))
        host = 1e3 * wall / n - args.gpu_ms
        print(f"| {name} | {setting} | {len(log.trials)} | {wall:.1f} | {1e3 * wall / n:.0f} | {host:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
