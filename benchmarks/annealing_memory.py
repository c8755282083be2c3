#!/usr/bin/env python3
"""What a long annealing walk holds in memory and how fast it proposes, without a GPU (issue #6).

Runs :func:`sass_lsp.schedule.search.annealing` over :func:`~sass_lsp.schedule.search.neighbour` on a
held-out kernel with a stand-in measure: each schedule's speedup is a fixed function of its key (a
hash, mean 1, ±2%), so the walk accepts and rejects as it would on noise-sized effects, and each
measurement costs ``--seconds`` of budget (0.26 s is sgemm_tiled's GPU time per candidate on the H200).
It prints, every ``--every`` candidates: Python's traced heap since the walk began (``tracemalloc``:
the game, the states ``neighbour`` keeps, the search log's candidate texts), the process's peak RSS, and
the CPU milliseconds per candidate (tracing included, so slower than a real walk).

    python benchmarks/annealing_memory.py --kernels sgemm_tiled triton_matmul --candidates 2000
"""

from __future__ import annotations

import argparse
import hashlib
import random
import resource
import time
import tracemalloc

from reorder_eval import load_kernel  # a held-out kernel as the evaluation loads it

from sass_lsp.schedule.search import Measured, annealing, neighbour, schedule_key


def stand_in(seconds: float):  # noqa: ANN201
    def measure(text: str) -> Measured:
        key = schedule_key(text)
        u = int(hashlib.blake2b(key.encode(), digest_size=4).hexdigest(), 16) / 2**32
        s = 0.98 + 0.04 * u
        return Measured(key, "match", s, s - 0.002, s + 0.002, seconds)

    return measure


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", nargs="+", default=["sgemm_tiled", "triton_matmul"])
    ap.add_argument("--candidates", type=int, default=2000, help="measured candidates per walk (2000)")
    ap.add_argument("--seconds", type=float, default=0.26, help="budget per measurement (0.26)")
    ap.add_argument("--every", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    for name in args.kernels:
        text, _cubin, spec = load_kernel(name)
        n_instr = sum(line.strip().startswith("[") for line in text.splitlines())
        print(f"{name}: {n_instr} instructions, text {len(text) / 1e3:.0f} kB")
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        propose = neighbour(text, "sm_90", spec.kernel)
        times = [time.process_time()]  # CPU time at the walk's start and after each measured candidate

        def on_trial(_trial, times=times, base=base) -> None:  # noqa: ANN001
            times.append(time.process_time())
            n = len(times) - 1
            if n % args.every == 0:
                heap = (tracemalloc.get_traced_memory()[0] - base) / 2**20
                rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10
                ms = 1e3 * (times[-1] - times[-1 - args.every]) / args.every
                print(f"  {n:5d} measured: heap +{heap:7.1f} MiB, peak RSS {rss:7.1f} MiB, {ms:6.1f} ms/cand")

        log = annealing(
            propose,
            text,
            stand_in(args.seconds),
            args.candidates * args.seconds,
            random.Random(args.seed),
            on_trial=on_trial,
        )
        heap = (tracemalloc.get_traced_memory()[0] - base) / 2**20
        tracemalloc.stop()
        print(
            f"  end: {len(log.trials)} measured, {args.candidates * args.seconds - log.left:.0f} s of "
            f"budget, heap +{heap:.1f} MiB ({1024 * heap / max(len(log.trials), 1):.0f} kB per candidate)"
        )
        del log, propose
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
