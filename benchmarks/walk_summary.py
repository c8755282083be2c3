#!/usr/bin/env python3
"""Where did each search spend its GPU time? The screened speedups of a run's measurements, in measured order.

For each measurement log (``GpuMeasure``'s JSON lines, ``reorder_eval.py --log``) and kernel in it: how many
candidates matched the original's outputs, the mean screened speedup over all of them and over each quarter
of the run, how many screened with the lower bound of their 95% CI above 1 (surely faster on the screen),
and the largest screened speedup (a maximum over noisy ratios: biased upwards). A walk whose later quarters
screen higher spends more of its budget near faster schedules. The method is read from the run's
``reorder_eval_h200_runN.log`` beside the log, when there is one.

    R=benchmarks/results/reorder_eval_h200.tar.xz  # ARCHIVE:MEMBER paths: benchmarks/results_archive.py
    python benchmarks/walk_summary.py $R:reorder_measurements_h200_run{25,26,37}.jsonl
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from reorder_eval import run_rows
from results_archive import expand

from sass_lsp.gpu.measure import read_log

QUARTERS = 4


def methods_of(log: Path) -> dict[str, str]:
    """kernel -> method, from the run's printed rows beside the measurement log (empty if there is none)."""
    run = log.name.removeprefix("reorder_measurements_").split(".")[0]
    table = log.with_name(f"reorder_eval_{run}.log")
    if not table.is_file():
        return {}
    return {row["kernel"]: row["method"] for row in run_rows(table)}


def summarize_log(log: Path) -> list[dict]:
    screened: dict[str, list[dict]] = defaultdict(list)
    for rec in read_log(log):
        if rec.get("kind") == "screen" and rec.get("verdict") == "match" and rec.get("speedup"):
            screened[rec["kernel"]].append(rec)
    methods = methods_of(log)
    rows = []
    for kernel, recs in screened.items():
        speedups = [r["speedup"] for r in recs]
        q = len(speedups) // QUARTERS
        quarters = [statistics.fmean(speedups[i * q : (i + 1) * q]) for i in range(QUARTERS)] if q else []
        rows.append(
            {
                "log": log.name,
                "kernel": kernel,
                "method": methods.get(kernel, "?"),
                "matched": len(recs),
                "mean": statistics.fmean(speedups),
                "quarters": quarters,
                "surely_faster": sum(r["low"] is not None and r["low"] > 1 for r in recs),
                "max": max(speedups),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", type=Path, nargs="+")
    args = ap.parse_args(argv)
    args.logs = expand(args.logs)
    rows = [row for log in args.logs for row in summarize_log(log)]
    if not rows:
        print("error: no matched screened measurement in these logs", file=sys.stderr)
        return 1
    print("| log | kernel | method | matched | mean screened | mean by quarter | CI low > 1 | max screened |")
    print("|---" * 8 + "|")
    for r in rows:
        quarters = " / ".join(f"{m:.4f}" for m in r["quarters"]) or "–"
        print(
            f"| {r['log']} | {r['kernel']} | {r['method']} | {r['matched']} | {r['mean']:.4f} | {quarters} "
            f"| {r['surely_faster']} | {r['max']:.4f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
