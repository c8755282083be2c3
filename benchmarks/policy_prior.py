#!/usr/bin/env python3
"""Does the policy point where a kernel's GPU measurements say the gains are? Its first move, on H200 logs.

For each measurement log (``GpuMeasure``'s JSON lines, ``reorder_eval.py --log``): the surrogate of
``sass_lsp.schedule.surrogate`` fitted on every matched schedule in the log (in hindsight: a walk has only
what it measured so far), then, for every legal move from ptxas's order, its predicted log speedup and the
policy's probability of it. Printed: the number of moves, the policy's effective number of moves
(exp of its entropy), the expected predicted speedup of a move drawn from the policy and of one drawn
uniformly, the policy's probability mass on the tenth of the moves predicted best, and the chance that 16
distinct draws (the surrogate walk's, ``candidates.draw_rows``) include one of that tenth and the mean
predicted speedup of their best-predicted move, for shares of the draws made uniformly instead of from the
policy: 0 (the policy alone), 1/4, 1/2 and 1 (uniform). Logs of
random legal moves (runs 23 and 24) are the fairest fit; a walk's log knows its own neighbourhood best.

    R=benchmarks/results/reorder_eval_h200.tar.xz  # ARCHIVE:MEMBER paths: benchmarks/results_archive.py
    python benchmarks/policy_prior.py $R:reorder_measurements_h200_run{23,24}.jsonl
    python benchmarks/policy_prior.py ... --temperature 4   # the policy's softmax flattened
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

import numpy as np
from results_archive import expand
from surrogate_replay import samples

from sass_lsp.gpu.measure import read_log
from sass_lsp.policy.candidates import draw_rows, move_weights
from sass_lsp.policy.checkpoint import bundled_policy
from sass_lsp.policy.model import load_policy
from sass_lsp.schedule.game import ReorderGame
from sass_lsp.schedule.surrogate import Surrogate, displacements, orders_after

ROOT = Path(__file__).resolve().parents[1]
DRAWS = 16
TOP_SHARE = 0.1
SHARES = (0.0, 0.25, 0.5, 1.0)  # uniform_share of the draws: the policy's alone ... uniform alone


def draws_of(
    weights: list[float],
    predicted: np.ndarray,
    top: np.ndarray,
    share: float,
    rng: random.Random,
    reps: int = 2000,
) -> tuple[float, float]:
    """Over ``reps`` sets of ``DRAWS`` distinct draws of ``draw_rows`` (``uniform_share=share``): the chance
    a set includes a row of ``top``, and the mean predicted speedup of a set's best-predicted row (the move
    the surrogate walk would measure, were the hindsight fit its own)."""
    top_rows = set(top.tolist())
    hits, best = 0, 0.0
    for _ in range(reps):
        rows = draw_rows(weights, DRAWS, rng, share)
        hits += bool(top_rows.intersection(rows))
        best += math.exp(float(predicted[rows].max()))
    return hits / reps, best / reps


def prior_of(log: Path, net, arch: str, rng: random.Random, temperature: float = 1.0) -> dict:  # noqa: ANN001
    kernel, xs, ys = samples(log, arch)
    model = Surrogate(xs.shape[1])
    for x, y in zip(xs, ys, strict=True):
        model.add(x, float(y))
    original = next(r for r in read_log(log) if r["kind"] == "original")
    game = ReorderGame.from_text(original["text"], arch, kernel=original.get("function"))
    moves = [displacements(orders_after(game, row), xs.shape[1]) for row in range(len(game.candidates()))]
    predicted = model.predict(np.array(moves))
    weights = np.array(move_weights(net, game, temperature))
    weights /= weights.sum()
    n = len(weights)
    top = np.argsort(-predicted)[: max(1, round(n * TOP_SHARE))]
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
        "draws": [draws_of(weights.tolist(), predicted, top, share, rng) for share in SHARES],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", type=Path, nargs="+")
    ap.add_argument("--policy", type=Path, default=bundled_policy())
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument(
        "--temperature", type=float, default=1.0, help="the policy's softmax temperature (the walk's: 1)"
    )
    args = ap.parse_args(argv)
    args.logs = expand(args.logs)
    net = load_policy(args.policy)
    rng = random.Random(0)
    shares = " / ".join(f"{share:g}" for share in SHARES)
    print(
        "| log | kernel | fitted on | moves | policy's effective moves | E[predicted] policy / uniform "
        "| mass on the best-predicted tenth, policy / uniform "
        f"| {DRAWS} draws hit it, uniform share {shares} "
        f"| E[best predicted of {DRAWS} draws], uniform share {shares} |"
    )
    print("|---" * 9 + "|")
    for log in args.logs:
        r = prior_of(log, net, args.arch, rng, args.temperature)
        print(
            f"| {r['log']} | {r['kernel']} | {r['fitted']} | {r['moves']} | {r['effective']:.1f} "
            f"| {r['policy_gain']:.4f} / {r['uniform_gain']:.4f} "
            f"| {r['policy_top_mass']:.3f} / {r['uniform_top_mass']:.3f} "
            f"| {' / '.join(f'{hit:.2f}' for hit, _ in r['draws'])} "
            f"| {' / '.join(f'{best:.4f}' for _, best in r['draws'])} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
