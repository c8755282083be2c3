#!/usr/bin/env python3
"""Would the online surrogate of ``sass_lsp.schedule.surrogate`` have picked faster schedules? Replayed on
the H200's measurement logs, no GPU needed.

For each log (``GpuMeasure``'s JSON lines, ``reorder_eval.py --log``), the matched screened schedules in
the order they were measured, each as its instructions' displacements from ptxas's order (what the walk's
surrogate sees) and its log screened speedup. The surrogate is fitted on the first ``n`` and scored on all
the rest: Spearman rank correlation of predicted and screened, and, over the rest in groups of ten, the
screened speedup of the group's best-predicted schedule against the group's mean and its best (what a walk
drawing ten candidates and measuring one could get, against a uniform pick and a perfect one). Logs of
independent samples (random legal moves: runs 23 and 24) are the fair test; a walk's log (annealing) drifts,
so its later schedules are near its earlier ones.

With ``--fit-on``, the surrogate is fitted instead on every schedule of those logs (the walks of one kernel)
and scored on all of each log given (an independent sample of the same kernel): Spearman, and where the
log's five best screened schedules rank among its predictions. That asks whether a walk's model would have
led it to what independent samples found.

Each table has a row per feature set of ``surrogate.FEATURES`` (``displacement``: each instruction's
displacement, the walks' model so far; ``pairs``: the pairs of instructions out of ptxas's order), and
``--fit-on`` ends with what the pair model's fit and a step's 16 predictions cost on the host at that size.

    R=benchmarks/results/reorder_eval_h200.tar.xz  # ARCHIVE:MEMBER paths: benchmarks/results_archive.py
    python benchmarks/surrogate_replay.py $R:reorder_measurements_h200_run{23,24}.jsonl
    python benchmarks/surrogate_replay.py $R:reorder_measurements_h200_run54.jsonl \
        --fit-on $R:reorder_measurements_h200_run{33,40,47}.jsonl
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
from cost_model_vs_gpu import spearman
from results_archive import expand

from sass_lsp.gpu.measure import read_log
from sass_lsp.schedule.canonical import OriginalOrders
from sass_lsp.schedule.search import apply_edits
from sass_lsp.schedule.surrogate import FEATURES, Orders, PairSurrogate, Surrogate

Model = Surrogate | PairSurrogate

GROUP = 10


def instruction(orders: OriginalOrders, node: int) -> str:
    """The text of ``node`` of the original (its opcode and operands)."""
    return orders.lines[orders.k.nodes[node].line - 1].split("*/")[-1].strip().rstrip(" ;")


def explain(
    path: Path,
    orders: OriginalOrders,
    model: Surrogate,
    xs: np.ndarray,
    ys: np.ndarray,
    fit_xs: np.ndarray,
    fit_ys: np.ndarray,
) -> str:
    """Why ``model`` rates the log's best schedule as it does: the instruction whose move weighs most in its
    prediction (the prediction with that instruction left in place, minus the prediction), and how the
    schedules that move it at least half as far the same way fared, in the log and in those fitted on."""
    i = int(np.argmax(ys))
    prediction = model.predict(xs[i : i + 1])[0]
    moved = np.flatnonzero(xs[i])
    unmoved = np.repeat(xs[i : i + 1], len(moved), axis=0)
    unmoved[np.arange(len(moved)), moved] = 0.0
    terms = prediction - model.predict(unmoved)
    k = int(np.argmax(np.abs(terms)))
    j, d = int(moved[k]), xs[i, moved[k]]
    half = math.ceil(abs(d) / 2) * np.sign(d)  # "at least half as far the same way"
    alike = np.flatnonzero(xs[:, j] * np.sign(d) >= abs(half))
    in_fit = fit_ys[fit_xs[:, j] * np.sign(d) >= abs(half)]
    top = set(np.argsort(-ys)[:12].tolist())
    fitted_best = f", at most {math.exp(in_fit.max()):.4f}" if len(in_fit) else ""
    term = math.expm1(terms[k])
    return (
        f"{path.name}: best {math.exp(ys[i]):.4f}, predicted {math.exp(prediction):.4f}; "
        f"its weightiest move: node {j} (`{instruction(orders, j)}`) by {d:+.0f} slots, {term:+.2%} "
        f"predicted; {len(alike)} of the log's {len(ys)} schedules move it {half:+.0f} or further: median "
        f"{math.exp(np.median(ys[alike])):.4f}, {len(top & set(alike.tolist()))} of its 12 best; "
        f"{len(in_fit)} of the {len(fit_ys)} fitted on do{fitted_best}"
    )


def samples(path: Path, arch: str) -> tuple[str, list[Orders], np.ndarray, OriginalOrders]:
    """(kernel, schedules, log screened speedups, the original's orders they were read against) of a log's
    matched screens, in measured order."""
    records = read_log(path)
    original = next(r for r in records if r["kind"] == "original")
    orders = OriginalOrders(original["text"], arch, original.get("function"))
    schedules, ys = [], []
    for r in records:
        if r["kind"] == "screen" and r.get("verdict") == "match" and r.get("speedup"):
            got = orders.orders(apply_edits(original["text"], r["edits"]))
            if got is not None:
                schedules.append(got)
                ys.append(math.log(r["speedup"]))
    return original["kernel"], schedules, np.array(ys), orders


def fitted(features: str, xs: list[np.ndarray], ys: np.ndarray, n_nodes: int) -> Model:
    """The ``features`` model fitted on ``xs`` (that feature set's rows) and ``ys``."""
    model = FEATURES[features][1](n_nodes)
    for x, y in zip(xs, ys, strict=True):
        model.add(x, float(y))
    return model


def featurize(features: str, schedules: list[Orders], n_nodes: int) -> list[np.ndarray]:
    return [FEATURES[features][0](o, n_nodes) for o in schedules]


def replay(
    features: str, xs: list[np.ndarray], ys: np.ndarray, n_fit: int, n_nodes: int
) -> dict[str, float | None]:
    """The ``features`` model fitted on the first ``n_fit`` rows, scored on the rest."""
    model = fitted(features, xs[:n_fit], ys[:n_fit], n_nodes)
    rest_y = ys[n_fit:]
    predicted = model.predict(xs[n_fit:])
    m = len(rest_y) // GROUP * GROUP
    groups, guesses = rest_y[:m].reshape(-1, GROUP), predicted[:m].reshape(-1, GROUP)
    picked = groups[np.arange(len(groups)), guesses.argmax(1)]
    return {
        "spearman": spearman(predicted.tolist(), rest_y.tolist()),
        "mean": math.exp(groups.mean()),
        "picked": math.exp(picked.mean()),
        "best": math.exp(groups.max(1).mean()),
    }


def cross(fit_on: list[Path], logs: list[Path], arch: str) -> None:
    """Fitted on every schedule of ``fit_on``, scored on each of ``logs`` (all of one kernel)."""
    runs = [samples(p, arch) for p in fit_on]
    fit_schedules = [o for _, schedules, _, _ in runs for o in schedules]
    fit_ys = np.concatenate([ys for _, _, ys, _ in runs])
    n_nodes = len(runs[0][3].k.nodes)
    fit_xs = {f: featurize(f, fit_schedules, n_nodes) for f in FEATURES}
    fit_dense = np.array(fit_xs["displacement"])
    models = {"displacement": fitted("displacement", fit_xs["displacement"], fit_ys, n_nodes)}
    models["pairs"], cost = timed_pairs(fit_xs["pairs"], fit_ys, n_nodes)
    print(
        "| log | kernel | features | schedules | fitted on | Spearman "
        "| its 5 best screened: speedup (rank predicted) |"
    )
    print("|---|---|---|---|---|---|---|")
    notes = []
    for path in logs:
        kernel, schedules, ys, orders = samples(path, arch)
        if any(k != kernel for k, *_ in runs):
            raise SystemExit(f"{path}: {kernel}, but --fit-on holds another kernel's logs")
        xs = {f: featurize(f, schedules, n_nodes) for f in FEATURES}
        dense = np.array(xs["displacement"])
        notes.append(explain(path, orders, models["displacement"], dense, ys, fit_dense, fit_ys))
        best = np.argsort(-ys)[:5]
        for features, model in models.items():
            predicted = model.predict(xs[features])
            rank = np.argsort(np.argsort(-predicted)) + 1
            shown = ", ".join(f"{math.exp(ys[i]):.4f} ({rank[i]})" for i in best)
            rho = spearman(predicted.tolist(), ys.tolist())
            rho_text = "–" if rho is None else f"{rho:+.2f}"
            print(
                f"| {path.name} | {kernel} | {features} | {len(ys)} | {len(fit_ys)} | {rho_text} | {shown} |"
            )
    print("\n".join(["", *notes]))
    print(cost)


def timed_pairs(xs: list[np.ndarray], ys: np.ndarray, n_nodes: int) -> tuple[PairSurrogate, str]:
    """The pair model fitted, and what that cost a walk's host at this many schedules: adding them one at a
    time (each add keeps the dual's inverse current, as in a walk), the refit a step then makes, and its 16
    predictions."""
    t0 = time.perf_counter()
    model = fitted("pairs", xs, ys, n_nodes)
    t1 = time.perf_counter()
    model.predict(xs[:1])
    t2 = time.perf_counter()
    model.predict(xs[:16])
    t3 = time.perf_counter()
    return model, (
        f"pairs at {len(ys)} schedules: adding them {t1 - t0:.2f} s in all, "
        f"a refit {1e3 * (t2 - t1):.1f} ms, 16 predictions {1e3 * (t3 - t2):.1f} ms"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", type=Path, nargs="+")
    ap.add_argument(
        "--fit", type=int, nargs="+", default=[50, 100, 200, 400], help="schedules to fit on first"
    )
    ap.add_argument("--fit-on", type=Path, nargs="+", help="fit on these logs, score all of each log given")
    ap.add_argument("--arch", default="sm_90")
    args = ap.parse_args(argv)
    args.logs = expand(args.logs)
    args.fit_on = expand(args.fit_on) if args.fit_on else args.fit_on
    if args.fit_on:
        cross(args.fit_on, args.logs, args.arch)
        return 0
    print(
        "| log | kernel | features | schedules | fitted on | Spearman (rest) | mean of 10 "
        "| best-predicted of 10 | best of 10 |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for path in args.logs:
        kernel, schedules, ys, orders = samples(path, args.arch)
        n_nodes = len(orders.k.nodes)
        rows = {f: featurize(f, schedules, n_nodes) for f in FEATURES}
        for n_fit in args.fit:
            if n_fit + GROUP > len(ys):
                continue
            for features, xs in rows.items():
                r = replay(features, xs, ys, n_fit, n_nodes)
                rho = "–" if r["spearman"] is None else f"{r['spearman']:+.2f}"
                print(
                    f"| {path.name} | {kernel} | {features} | {len(ys)} | {n_fit} | {rho} | "
                    f"{r['mean']:.4f} | {r['picked']:.4f} | {r['best']:.4f} |"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
