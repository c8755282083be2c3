"""Is the host running at full speed? A probe for benchmarks whose samples are fresh interpreters.

Some hosts run a process at full speed or, for seconds at a time, ~1.5x slower with no project code
involved: on the H200 host's Xeon a fixed pure-Python loop in 32 fresh interpreters took 225-251 ms or
271-387 ms (``check_speed.log`` in ``benchmarks/results/host_speed.tar.xz``). A benchmark brackets each
sample with :func:`host_probe`, run just before and just after it in the same process, and
:func:`full_speed` reports the samples whose probes were both within ``FULL_SPEED`` of the run's fastest
probe, beside the median of all samples (which the benchmarks still print).
"""

from __future__ import annotations

import statistics
import time
from itertools import repeat

FULL_SPEED = 1.15  # a probe this much slower than the run's fastest: the host was slowed down


def host_probe(n: int = 400_000) -> float:
    """Seconds for a fixed loop of small-int arithmetic: it allocates nothing, so it warms no allocator or
    cache that the measured code could profit from; ~16-21 ms on a 2-vCPU VM at full speed."""
    t, x = time.perf_counter(), 0
    for _ in repeat(None, n):
        x = (x * 5 + 1) & 255
    return time.perf_counter() - t


def full_speed(rows: list[dict], key: str = "cold") -> str:
    """Lines for rows of ``{key: seconds, "probes": (before, after)}``: every probe pair, and the median of
    the samples taken at full speed."""
    fastest = min(p for r in rows for p in r["probes"])
    fast = [r[key] for r in rows if max(r["probes"]) <= FULL_SPEED * fastest]
    probes = " ".join("/".join(f"{p * 1e3:.0f}" for p in r["probes"]) for r in rows)
    line = f"  host probes before/after each sample (ms; fastest {fastest * 1e3:.1f}): {probes}\n"
    if not fast:
        return line + "  no sample ran with the host at full speed"
    return line + (
        f"  at full speed (both probes <= {FULL_SPEED:.2f}x the fastest): {len(fast)} of {len(rows)} "
        f"samples, median {statistics.median(fast) * 1e3:.1f} ms (min {min(fast) * 1e3:.1f})"
    )
