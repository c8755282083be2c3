#!/usr/bin/env python3
"""Does the static cost model predict the GPU? Its predicted speedups against the measured ones (issue #6).

Reads GPU measurement logs (``GpuMeasure``'s JSON lines: ``reorder_eval.py --log``, ``sass-lsp optimize``);
each log holds every kernel's original text once and every screened candidate as line edits of it. Each
candidate whose outputs matched is rebuilt and costed with the reward the policy is trained on (the
game's ``cost_original``: steady-state cycles of the hot region); predicted speedup = original cycles /
candidate cycles, measured speedup = original time / candidate time (the screen's median ratio, with its
bootstrap 95% CI).

Printed per kernel and pooled: the number of candidates, Spearman's rank correlation of predicted and
measured speedup, how many measurements are significant (CI excludes 1), and for those whether the model
got the direction right (predicted > 1 for a faster candidate, < 1 for a slower one; a prediction of
exactly 1 counts as wrong for both).

``--fit`` then asks whether a cost model fitted to these measurements would do better: ridge regression of
the measured log-speedup on the static prediction and simple schedule features (how far the variable-latency
loads moved up, the change in mean load-to-first-use distance, in total stall cycles, the share of moved
instructions), fitted on every kernel but one and tested on that one (leave one kernel out), reported as
the pooled Spearman of the held-out predictions, and what picking the best-predicted of each ten
consecutive held-out schedules would have measured against their mean (``pick_lift``).

    python benchmarks/cost_model_vs_gpu.py LOG.jsonl[.gz] [LOG ...] [--arch sm_90] [--json OUT.json] [--fit]

A log may be ``ARCHIVE.tar.xz:PATTERN``: members of a ``benchmarks/results`` archive (``results_archive``).
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
from results_archive import expand

from sass_lsp.gpu.measure import read_log
from sass_lsp.schedule.game import ReorderGame
from sass_lsp.schedule.search import apply_edits

PICK_GROUP = 10  # schedules per pick in ``pick_lift``, as in surrogate_replay.py


def ranks(xs: list[float]) -> list[float]:
    """Ranks 1..n, ties given their mean rank."""
    order = sorted(range(len(xs)), key=xs.__getitem__)
    out = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def pearson(xs: list[float], ys: list[float]) -> float | None:
    n = len(xs)
    if n < 3:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / (sxx * syy) ** 0.5 if sxx and syy else None


def spearman(xs: list[float], ys: list[float]) -> float | None:
    return pearson(ranks(xs), ranks(ys))


FEATURES = ("predicted", "load_hoist", "load_use", "stall", "moved")


def schedule_facts(game: ReorderGame) -> dict:
    """What the features compare: predicted cycles, each hot-region instruction's position (keyed by its text
    and occurrence, which a reorder keeps), the variable-latency loads, mean load-to-first-use distance and
    total stall cycles."""
    nodes = game.region_nodes()
    seen: dict[str, int] = defaultdict(int)
    ids = []
    for nd in nodes:
        seen[nd.text] += 1
        ids.append((nd.text, seen[nd.text]))
    loads = [i for i, nd in enumerate(nodes) if nd.eff.variable and nd.eff.dsts]
    uses = []
    for i in loads:
        d = nodes[i].eff.def_units
        uses.append(
            next((j - i for j in range(i + 1, len(nodes)) if nodes[j].eff.use_units & d), len(nodes) - i)
        )
    return {
        "cycles": game.cost_original,
        "pos": {k: i for i, k in enumerate(ids)},
        "loads": [ids[i] for i in loads],
        "load_use": sum(uses) / max(1, len(uses)),
        "stall": sum(nd.ctrl.stall for nd in nodes),
    }


def features(orig: dict, cand: dict) -> dict[str, float]:
    n = max(1, len(orig["pos"]))
    pos0, pos1 = orig["pos"], cand["pos"]
    hoist = [pos0[k] - pos1[k] for k in orig["loads"] if k in pos1]
    return {
        "predicted": math.log(orig["cycles"] / cand["cycles"]),
        "load_hoist": sum(hoist) / max(1, len(hoist)) / n,
        "load_use": cand["load_use"] - orig["load_use"],
        "stall": (cand["stall"] - orig["stall"]) / n,
        "moved": sum(pos0.get(k) != p for k, p in pos1.items()) / n,
    }


def pairs_from_logs(paths: list[Path], arch: str) -> dict[str, list[dict]]:
    """Per kernel: one row per matched, timed candidate (predicted, measured, CI, features)."""
    originals: dict[str, dict] = {}
    out: dict[str, list[dict]] = defaultdict(list)
    facts_of: dict[str, dict] = {}  # schedule key -> schedule_facts

    def facts(orig: dict, key: str, edits: list | None = None) -> dict:
        """``orig``'s text with ``edits`` applied, as schedule facts (built only for a new schedule)."""
        if key not in facts_of:
            text = orig["text"] if edits is None else apply_edits(orig["text"], edits)
            facts_of[key] = schedule_facts(ReorderGame.from_text(text, arch, kernel=orig["function"]))
        return facts_of[key]

    seen: set[tuple[str, str]] = set()
    for path in paths:
        for r in read_log(path):
            if r.get("kind") == "original":
                originals[r["kernel"]] = r
                continue
            if r.get("kind") != "screen" or r.get("verdict") != "match" or r.get("speedup") is None:
                continue
            orig = originals.get(r["kernel"])
            if orig is None or "edits" not in r or (r["kernel"], r["key"]) in seen:
                continue  # an older log without its original text, or a repeat of a schedule
            seen.add((r["kernel"], r["key"]))
            base, cand = facts(orig, orig["key"]), facts(orig, r["key"], r["edits"])
            out[r["kernel"]].append(
                {
                    "key": r["key"],
                    "predicted": base["cycles"] / cand["cycles"],
                    "measured": r["speedup"],
                    "low": r["low"],
                    "high": r["high"],
                    "features": features(base, cand),
                }
            )
    return out


def summary(rows: list[dict]) -> dict:
    pred = [r["predicted"] for r in rows]
    meas = [r["measured"] for r in rows]
    sig = [r for r in rows if r["low"] > 1 or r["high"] < 1]
    right = sum((r["predicted"] > 1) == (r["low"] > 1) and r["predicted"] != 1 for r in sig)
    return {
        "n": len(rows),
        "spearman": spearman(pred, meas),
        "significant": len(sig),
        "faster": sum(r["low"] > 1 for r in sig),
        "direction_right": right,
        "predicted_range": [min(pred, default=None), max(pred, default=None)],
        "measured_range": [min(meas, default=None), max(meas, default=None)],
    }


def pick_lift(predicted: list[float], measured: list[float], group: int = PICK_GROUP) -> float | None:
    """Over consecutive groups of ``group`` schedules (in measured order: a walk's neighbours, a random run's
    independent draws), the mean log measured speedup of each group's best-predicted schedule minus the
    group's mean, in percent: what measuring the model's pick of ``group`` gains over measuring any one."""
    m = len(measured) // group * group
    if m == 0 or np.ptp(predicted) == 0:
        return None  # nothing to pick by (triton_matmul under the static model: every prediction 1.0)
    ys = np.log(np.array(measured[:m])).reshape(-1, group)
    picks = np.array(predicted[:m]).reshape(-1, group).argmax(1)
    return float((ys[np.arange(len(ys)), picks] - ys.mean(1)).mean() * 100)


def leave_one_kernel_out(per_kernel: dict[str, list[dict]], keys: tuple[str, ...], lam: float = 10.0) -> dict:
    """Ridge regression of measured log-speedup on ``keys``, fitted without each kernel in turn and tested on
    it: per-kernel and pooled Spearman of the held-out predictions, and per kernel :func:`pick_lift`."""
    held: dict[str, float | None] = {}
    lift: dict[str, float | None] = {}
    preds, meas = [], []
    for name, rows in sorted(per_kernel.items()):
        train = [r for k, rs in per_kernel.items() if k != name for r in rs]
        x = np.array([[r["features"][f] for f in keys] for r in train])
        y = np.array([math.log(r["measured"]) for r in train])
        std = x.std(0)
        scale = np.where(std > 0, std, 1.0)  # a constant feature (triton_matmul's prediction) stays 0
        w = np.linalg.solve((x / scale).T @ (x / scale) + lam * np.eye(len(keys)), (x / scale).T @ y)
        p = list(np.array([[r["features"][f] for f in keys] for r in rows]) / scale @ w)
        m = [r["measured"] for r in rows]
        held[name] = spearman(p, m)
        lift[name] = pick_lift(p, m)
        preds += p
        meas += m
    return {"keys": list(keys), "per_kernel": held, "pooled": spearman(preds, meas), "pick_lift": lift}


def fmt(x: float | None, spec: str = "+.2f") -> str:
    return "n/a" if x is None else format(x, spec)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", type=Path, nargs="+")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--json", type=Path, help="write the per-candidate pairs and the summaries here")
    ap.add_argument("--fit", action="store_true", help="also fit a cost model, leaving one kernel out")
    args = ap.parse_args(argv)
    args.logs = expand(args.logs)
    per_kernel = pairs_from_logs(args.logs, args.arch)
    if not per_kernel:
        print("no measurement with its original text in these logs (older logs lack it)")
        return 1
    print(
        f"{'kernel':18s} {'cands':>5s} {'spearman':>8s} {'signif.':>7s} {'faster':>6s} "
        f"{'dir. right':>10s} {'predicted':>15s} {'measured':>15s}"
    )
    table = {name: summary(rows) for name, rows in sorted(per_kernel.items())}
    table["(pooled)"] = summary([r for rows in per_kernel.values() for r in rows])
    for name, s in table.items():
        p, m = s["predicted_range"], s["measured_range"]
        print(
            f"{name:18s} {s['n']:5d} {fmt(s['spearman']):>8s} {s['significant']:7d} {s['faster']:6d} "
            f"{s['direction_right']:10d} {fmt(p[0], '.4f')}-{fmt(p[1], '.4f')} "
            f"{fmt(m[0], '.4f')}-{fmt(m[1], '.4f')}"
        )
    fits = []
    if args.fit:
        names = sorted(per_kernel)
        print("\nFitted on all kernels but one, tested on that one (Spearman of the held-out predictions):")
        print(f"  {'features':50s} {'pooled':>7s} " + " ".join(f"{k[:14]:>14s}" for k in names))
        for n in range(1, len(FEATURES) + 1):
            fits.append(leave_one_kernel_out(per_kernel, FEATURES[:n]))
        fits.append(leave_one_kernel_out(per_kernel, FEATURES[1:]))
        for fit in fits:
            held = " ".join(f"{fmt(fit['per_kernel'][k]):>14s}" for k in names)
            print(f"  {' + '.join(fit['keys']):50s} {fmt(fit['pooled']):>7s} {held}")
        print(
            f"\nThe held-out model's pick of each {PICK_GROUP} consecutive schedules against their mean "
            "(mean log speedup, percent; the static model alone is the first row):"
        )
        print(f"  {'features':50s} " + " ".join(f"{k[:14]:>14s}" for k in names))
        for fit in fits:
            lifts = " ".join(f"{fmt(fit['pick_lift'][k], '+.3f'):>14s}" for k in names)
            print(f"  {' + '.join(fit['keys']):50s} {lifts}")
    if args.json:
        args.json.write_text(json.dumps({"summary": table, "pairs": per_kernel, "fits": fits}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
