#!/usr/bin/env python3
"""Were the measured schedules schedules of the original? Every screened candidate of GPU measurement logs,
rebuilt and checked against its original's dependence model (``schedule.canonical``, issue #6).

Reads ``GpuMeasure``'s JSON-lines logs (``reorder_eval.py --log``, ``sass-lsp optimize``; ``.jsonl`` or
``.jsonl.gz``): each holds every kernel's original text once and every screened candidate as line edits of
it. Per log and kernel it prints how many distinct schedules were screened, how many are orders that no
legal moves from ptxas's order reach ("unreachable"), how many carry exactly the control codes the repair
gives their order against ptxas's ("as repaired"), the verdicts of the unreachable ones, and for each
confirmed schedule whether it is reachable and as repaired. The answer depends on the dependence model of
the checkout that runs it.

    python benchmarks/audit_schedules.py LOG.jsonl[.gz] [LOG ...]
    R=benchmarks/results/reorder_eval_h200.tar.xz  # ARCHIVE:MEMBER paths: benchmarks/results_archive.py
    python benchmarks/audit_schedules.py "$R:reorder_measurements_h200_run*.jsonl"
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from results_archive import expand

from sass_lsp.cuasm import parse_cuasm
from sass_lsp.cuasm.assembler import module_arch
from sass_lsp.gpu.measure import read_log
from sass_lsp.schedule.canonical import OriginalOrders
from sass_lsp.schedule.search import Candidate, apply_edits


def audit(path: Path) -> list[str]:
    rows = read_log(path)
    models: dict[str, OriginalOrders] = {}
    originals: dict[str, str] = {}
    status: dict[tuple[str, str], str] = {}  # (kernel, key) -> "unreachable" / "as repaired" / "other ctrl"
    verdicts: dict[str, Counter] = {}
    for r in rows:
        if r.get("kind") == "original":
            originals[r["kernel"]] = r["text"]
            models[r["kernel"]] = OriginalOrders(
                r["text"], module_arch(parse_cuasm(r["text"])[0]), r.get("function")
            )
            continue
        if r.get("kind") != "screen" or "edits" not in r or r["kernel"] not in originals:
            continue
        kernel, key = r["kernel"], r["key"]
        if (kernel, key) in status:
            continue
        text = apply_edits(originals[kernel], [tuple(e) for e in r["edits"]])
        got = models[kernel].canonical(Candidate(text, "log"))
        status[(kernel, key)] = (
            "unreachable" if got is None else "as repaired" if got.text == text else "other ctrl"
        )
        if got is None:
            verdicts.setdefault(kernel, Counter())[r["verdict"]] += 1
    out = []
    for kernel in originals:
        mine = [s for (k, _), s in status.items() if k == kernel]
        if not mine:
            continue
        c = Counter(mine)
        bad = dict(verdicts.get(kernel, {}))
        out.append(
            f"{path.name} {kernel}: {len(mine)} screened, {c['unreachable']} unreachable"
            f"{f' (verdicts {bad})' if bad else ''}, {c['as repaired']} as repaired"
        )
    for r in rows:
        if r.get("kind") == "confirm":
            kernel = r.get("label") or r.get("kernel")
            seen = status.get((kernel, r["key"]), "not screened in this log")
            out.append(f"  confirmed {r['key']} ({kernel}): {seen}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", type=Path, nargs="+")
    args = ap.parse_args(argv)
    args.logs = expand(args.logs)
    for path in args.logs:
        print("\n".join(audit(path)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
