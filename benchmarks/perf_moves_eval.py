#!/usr/bin/env python3
"""Can a kernel-agnostic model predict the speedup of an edit of any move kind? Leave one kernel out. No GPU.

The performance model (``sass_lsp.perf``, ``perf_model_eval.py``) sees reorders only: its features are node
displacements. ``move_campaign.py``'s campaigns measure random chains of reorder, control-code, rename and
cross-block moves. This fits, on all kernels but one, a ridge regression of the measured log speedup on
features any edit has, and scores the kernel left out, for each kernel in turn:

- per region (loop blocks, the rest) and instruction class (``sass_lsp.perf.features``' classes), the change
  in mean stall, and in the shares of instructions that yield, carry a ``.reuse`` flag, or wait on a
  scoreboard;
- per region, the share of instruction lines whose text (control codes aside) changed: reorders, renames and
  cross-block moves;
- the change in registers named, and the share of instructions that changed block;
- where the edit reads as node orders of the original's blocks (no rename or cross-block move in it), the
  performance model's reorder features (displacements by class, inversions, producer distances).

The ridge's strength is chosen by an inner leave-one-kernel-out over the training kernels only. Printed per
kernel and pooled: Spearman between predicted and measured speedup; among 32 random schedules of the kernel
(1,000 draws), how often the model's top pick is measured faster (95% CI above 1), against a random pick and
the best of the 32 (the ceiling); the share of measurements inside the 90% interval (the training folds'
residual quantiles).

    python benchmarks/perf_moves_eval.py benchmarks/results/move_campaign_h100_s0.tar.xz
"""

from __future__ import annotations

import argparse
import math
import random
import re
import sys
from pathlib import Path

import numpy as np
from cost_model_vs_gpu import spearman as rank_correlation

from sass_lsp.analysis.program import Kernel
from sass_lsp.isa.semantics import load_semantics
from sass_lsp.perf import features as pf
from sass_lsp.perf.dataset import Measurement, read_logs
from sass_lsp.perf.features import N_CLASS, REGIONS, KernelFacts
from sass_lsp.perf.predict import Predictor
from sass_lsp.schedule.canonical import instruction_identity
from sass_lsp.schedule.game import kernel_of_text

CTRL_NAMES = [
    f"{r}_{s}_c{c}" for r in REGIONS for c in range(N_CLASS) for s in ("stall", "yield", "reuse", "wait")
]
NAMES = [
    *CTRL_NAMES,
    *("loop_text_changed", "rest_text_changed", "registers", "block_changed", "reorder_known"),
    *pf.NAMES,
]
LAMBDAS = (0.1, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5)
DRAWS, PICK = 1000, 32
HEADER = "| held-out kernel | rows | λ | Spearman | top-of-32 faster | random pick | best of 32 | 90% cover |"
_REG = re.compile(r"\bR(\d+)\b")


class EditFeatures:
    """Features of edits of one original kernel (its facts computed once)."""

    def __init__(self, original: str, function: str | None, arch: str = "sm_90") -> None:
        self.sem = load_semantics(arch)
        self.function = function
        self.k = kernel_of_text(original, self.sem, function)
        self.facts = KernelFacts.of(self.k)
        self.base = self._per_node(self.k)
        self.lines = [instruction_identity(nd.text) for nd in self.k.nodes]
        self.registers = self._registers(self.k)
        self.orders = Predictor.of_text(original, arch, function)  # the reorder features, where it reads them

    @staticmethod
    def _per_node(k: Kernel) -> np.ndarray:
        """[n, 4]: stall, yield, any reuse, any scoreboard wait."""
        return np.array(
            [
                (nd.ctrl.stall, nd.ctrl.yield_flag, ".reuse" in nd.text, nd.ctrl.wait_mask != 0)
                for nd in k.nodes
            ],
            np.float64,
        )

    @staticmethod
    def _registers(k: Kernel) -> int:
        return len({int(r) for nd in k.nodes for r in _REG.findall(nd.text)})

    def features(self, text: str) -> np.ndarray | None:
        e = kernel_of_text(text, self.sem, self.function)
        f = self.facts
        if len(e.nodes) != f.n:
            return None
        sizes = f.region_sizes
        idx = f.region * N_CLASS + f.cls  # the original's slot classes: an edit keeps each slot's block
        delta = self._per_node(e) - self.base
        ctrl = (
            np.stack(
                [np.bincount(idx, weights=delta[:, j], minlength=2 * N_CLASS) for j in range(4)], axis=-1
            ).reshape(2, N_CLASS, 4)
            / sizes[:, None, None]
        )
        changed = np.array(
            [instruction_identity(nd.text) != self.lines[i] for i, nd in enumerate(e.nodes)], np.float64
        )
        text_changed = np.bincount(f.region, weights=changed, minlength=2) / sizes
        block = np.zeros(f.n, np.int64)
        for b in e.blocks:
            block[b.start : b.end] = b.idx
        moved_block = float(np.mean(block != f.block)) if len(e.blocks) == len(self.k.blocks) else 1.0
        registers = (self._registers(e) - self.registers) / 16.0
        reorder = self.orders.features(text)
        known = reorder is not None
        reorder = reorder if known else np.zeros(pf.N_FEATURES)
        return np.concatenate([ctrl.ravel(), text_changed, [registers, moved_block, float(known)], reorder])


def load_rows(sources: list[Path]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Features, log speedups, log CI lows, kernel index per row, and the kernels' names."""
    fx: dict[str, EditFeatures] = {}
    xs, ys, lows, ks, names = [], [], [], [], []
    for src in sources:
        for m in read_logs(src):
            row = _row(fx, m)
            if row is None:
                continue
            if m.kernel not in names:
                names.append(m.kernel)
            xs.append(row)
            ys.append(math.log(m.speedup))
            lows.append(math.log(m.low))
            ks.append(names.index(m.kernel))
    return np.array(xs), np.array(ys), np.array(lows), np.array(ks), names


def _row(fx: dict[str, EditFeatures], m: Measurement) -> np.ndarray | None:
    if m.kernel not in fx:
        fx[m.kernel] = EditFeatures(m.original, m.function)
    return fx[m.kernel].features(m.text)


def ridge(x: np.ndarray, y: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray, float]:
    """(mean, scale, weights with intercept last) of a ridge fit on standardised features."""
    mu, sd = x.mean(0), x.std(0) + 1e-9
    z = np.hstack([(x - mu) / sd, np.ones((len(x), 1))])
    reg = lam * np.eye(z.shape[1])
    reg[-1, -1] = 0.0
    w = np.linalg.solve(z.T @ z + reg, z.T @ y)
    return mu, sd, w


def predict(fit: tuple[np.ndarray, np.ndarray, np.ndarray], x: np.ndarray) -> np.ndarray:
    mu, sd, w = fit
    return np.hstack([(x - mu) / sd, np.ones((len(x), 1))]) @ w


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    rho = rank_correlation(a.tolist(), b.tolist())
    return float("nan") if rho is None else rho


def choose_lambda(x: np.ndarray, y: np.ndarray, k: np.ndarray) -> float:
    """The strength with the best inner leave-one-kernel-out squared error (training kernels only)."""
    kernels = np.unique(k)
    if len(kernels) < 2:
        return LAMBDAS[-1]

    def error(lam: float) -> float:
        return sum(
            float(np.sum((predict(ridge(x[k != g], y[k != g], lam), x[k == g]) - y[k == g]) ** 2))
            for g in kernels
        )

    return min(LAMBDAS, key=error)


def top_of(pred: np.ndarray, faster: np.ndarray, rng: random.Random) -> tuple[float, float, float]:
    """Over draws of ``PICK`` rows: the shares where the model's top pick, a random pick and the best
    measured one are measured faster."""
    n = len(pred)
    if n < PICK:
        return float("nan"), float("nan"), float("nan")
    model = chance = ceiling = 0
    for _ in range(DRAWS):
        rows = rng.sample(range(n), PICK)
        model += faster[max(rows, key=lambda i: pred[i])]
        chance += faster[rng.choice(rows)]
        ceiling += any(faster[i] for i in rows)
    return model / DRAWS, chance / DRAWS, ceiling / DRAWS


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sources", nargs="+", type=Path, help="campaign files (move_campaign.py's --out)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    x, y, low, k, names = load_rows(args.sources)
    if len(names) < 2:
        print("error: leave-one-kernel-out needs measurements of at least two kernels", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    out_pred = np.zeros_like(y)
    covered = np.zeros(len(y), bool)
    print(f"{len(y)} schedules of {len(names)} kernels, {x.shape[1]} features")
    print(HEADER)
    print("|---|---|---|---|---|---|---|---|")
    tops = []
    for g, name in enumerate(names):
        train, test = k != g, k == g
        lam = choose_lambda(x[train], y[train], k[train])
        fit = ridge(x[train], y[train], lam)
        resid = y[train] - predict(fit, x[train])
        lo_q, hi_q = np.quantile(resid, [0.05, 0.95])
        pred = predict(fit, x[test])
        out_pred[test] = pred
        covered[test] = (y[test] >= pred + lo_q) & (y[test] <= pred + hi_q)
        top = top_of(pred, low[test] > 0, rng)
        tops.append(top)
        print(
            f"| {name} | {int(test.sum())} | {lam:g} | {spearman(pred, y[test]):+.2f} | {top[0]:.0%} | "
            f"{top[1]:.0%} | {top[2]:.0%} | {covered[test].mean():.0%} |"
        )
    mean_top = np.nanmean(np.array(tops), axis=0)
    print(
        f"| pooled / mean | {len(y)} | | {spearman(out_pred, y):+.2f} pooled | {mean_top[0]:.0%} | "
        f"{mean_top[1]:.0%} | {mean_top[2]:.0%} | {covered.mean():.0%} |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
