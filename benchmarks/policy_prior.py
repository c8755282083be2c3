#!/usr/bin/env python3
"""Does the policy point where a kernel's GPU measurements say the gains are? Its first move, on H200 logs.

For each measurement log (``GpuMeasure``'s JSON lines, ``reorder_eval.py --log``): the surrogate of
``sass_lsp.schedule.surrogate`` fitted on every matched schedule in the log (in hindsight: a walk has only
what it measured so far), then, for every legal move from ptxas's order, its predicted log speedup and the
policy's probability of it. Printed: the number of moves, the policy's effective number of moves
(exp of its entropy), the expected predicted speedup of a move drawn from the policy and of one drawn
uniformly, the policy's probability mass on the tenth of the moves predicted best, and the chance that 16
distinct draws (the surrogate walk's) include one of that tenth, from the policy and uniformly. Logs of
random legal moves (runs 23 and 24) are the fairest fit; a walk's log knows its own neighbourhood best.

    python benchmarks/policy_prior.py benchmarks/results/reorder_measurements_h200_run{23,24}.jsonl.gz
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from surrogate_replay import samples

from sass_lsp.gpu.measure import read_log
from sass_lsp.policy.candidates import move_weights
from sass_lsp.policy.suggest import load_for_suggestions
from sass_lsp.schedule.game import ReorderGame
from sass_lsp.schedule.surrogate import Surrogate, displacements, orders_after

ROOT = Path(__file__).resolve().parents[1]
DRAWS = 16
TOP_SHARE = 0.1


def chance_of_top(weights: np.ndarray, top: np.ndarray, rng: np.random.Generator, reps: int = 4000) -> float:
    """P(``DRAWS`` distinct draws with probabilities ``weights`` include a row of ``top``), sampled."""
    k = min(DRAWS, int((weights > 0).sum()))
    hits = sum(
        np.isin(rng.choice(len(weights), size=k, replace=False, p=weights), top).any() for _ in range(reps)
    )
    return hits / reps


def prior_of(log: Path, net, arch: str, rng: np.random.Generator) -> dict:  # noqa: ANN001 (PolicyNet)
    kernel, xs, ys = samples(log, arch)
    model = Surrogate(xs.shape[1])
    for x, y in zip(xs, ys, strict=True):
        model.add(x, float(y))
    original = next(r for r in read_log(log) if r["kind"] == "original")
    game = ReorderGame.from_text(original["text"], arch, kernel=original.get("function"))
    moves = [displacements(orders_after(game, row), xs.shape[1]) for row in range(len(game.candidates()))]
    predicted = model.predict(np.array(moves))
    weights = np.array(move_weights(net, game, 1.0))
    weights /= weights.sum()
    n = len(weights)
    top = np.argsort(-predicted)[: max(1, round(n * TOP_SHARE))]
    uniform = np.full(n, 1.0 / n)
    return {
        "log": log.name,
        "kernel": kernel,
        "fitted": len(ys),
        "moves": n,
        "effective": math.exp(-(weights * np.log(weights + 1e-30)).sum()),
        "policy_gain": math.exp(float(weights @ predicted)),
        "uniform_gain": math.exp(float(predicted.mean())),
        "policy_top_mass": float(weights[top].sum()),
        "uniform_top_mass": len(top) / n,
        "policy_top_draw": chance_of_top(weights, top, rng),
        "uniform_top_draw": chance_of_top(uniform, top, rng),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", type=Path, nargs="+")
    ap.add_argument("--policy", type=Path, default=ROOT / "policy_models/reorder-v2")
    ap.add_argument("--arch", default="sm_90")
    args = ap.parse_args(argv)
    net = load_for_suggestions(args.policy)
    rng = np.random.default_rng(0)
    print(
        "| log | kernel | fitted on | moves | policy's effective moves | E[predicted] policy / uniform "
        f"| mass on the best-predicted tenth, policy / uniform | {DRAWS} draws hit it, policy / uniform |"
    )
    print("|---" * 8 + "|")
    for log in args.logs:
        r = prior_of(log, net, args.arch, rng)
        print(
            f"| {r['log']} | {r['kernel']} | {r['fitted']} | {r['moves']} | {r['effective']:.1f} "
            f"| {r['policy_gain']:.4f} / {r['uniform_gain']:.4f} "
            f"| {r['policy_top_mass']:.3f} / {r['uniform_top_mass']:.3f} "
            f"| {r['policy_top_draw']:.2f} / {r['uniform_top_draw']:.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
