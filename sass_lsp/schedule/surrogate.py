"""Annealing on GPU time with an online surrogate: each step draws several legal moves and measures the one a
model of the measurements so far predicts fastest, so the GPU's time goes to the likelier gains.

The surrogate is ridge regression of log measured speedup on each instruction's displacement from ptxas's
order (node ``i`` at position ``p`` of its block: ``p - i``), refitted as measurements arrive. It knows
nothing of the hardware; it learns, per kernel, which instructions moved which way paid. Replayed on the
H200's random-move runs 23 and 24 (``benchmarks/surrogate_replay.py``, ``surrogate_replay.log``), a fit on
a kernel's first 100 or 200 measured schedules ranks the rest at Spearman +0.44/+0.49 (sgemm_tiled) and
+0.37/+0.41 (triton_matmul; +0.10 from 50), and the best-predicted of ten of them screened +1.2% above the
ten's mean on sgemm_tiled, +0.4% on triton_matmul. Hence ``warmup``: the first 100 measurements are plain
annealing. On the H200 at 300 GPU s (runs 37-40, drawing from the policy) it confirmed 1.0201 on sgemm_tiled
and 1.0058 on stencil2d, ahead of or level with uniform annealing, but 1.0200 on triton_matmul against
annealing's 1.0394 (the model card's Evaluation).

Pure: numpy only. The proposer of the draws is injected: uniform, or the policy's distribution
(:func:`sass_lsp.policy.candidates.policy_draw`)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from sass_lsp.schedule.canonical import OriginalOrders
from sass_lsp.schedule.search import Measure, SearchLog, Trial, annealing, neighbour

if TYPE_CHECKING:
    from sass_lsp.schedule.game import ReorderGame  # imports gymnasium: kept off import

Orders = dict[int, tuple[int, ...]]  # block -> node order, for the blocks whose order differs from ptxas
Draw = Callable[["ReorderGame", random.Random, int], list[int]]  # up to k distinct rows of game.candidates()


def displacements(orders: Orders, n_nodes: int) -> np.ndarray:
    """Each node's position minus its ptxas position (0 for the blocks ``orders`` leaves as they were)."""
    x = np.zeros(n_nodes)
    for order in orders.values():
        start = min(order)
        for p, node in enumerate(order):
            x[node] = start + p - node
    return x


def orders_after(game: ReorderGame, row: int) -> Orders:
    """The changed blocks' orders that move ``row`` of ``game.candidates()`` gives (the keys
    ``OriginalOrders.orders`` gives for its text); the game's state is left as it was."""
    parent = game.snapshot()
    game.apply(row)
    orders = {b: st.order for b, st in game.snapshot().blocks.items()}
    game.restore(parent)
    return orders


def signature(orders: Orders) -> tuple:
    """A hashable identity of a schedule's order (its control codes follow from it)."""
    return tuple(sorted(orders.items()))


class Surrogate:
    """Ridge regression, refitted lazily, over the features that have varied (most nodes never move, and the
    solve then stays small)."""

    def __init__(self, n_features: int, ridge: float = 10.0) -> None:
        self.ridge = ridge
        self.n = 0
        self.sx = np.zeros(n_features)
        self.sxx = np.zeros((n_features, n_features))
        self.sy = 0.0
        self.sxy = np.zeros(n_features)
        self._fit: tuple[np.ndarray, np.ndarray, np.ndarray, float] | None = None

    def add(self, x: np.ndarray, y: float) -> None:
        self.n += 1
        self.sx += x
        self.sxx += np.outer(x, x)
        self.sy += y
        self.sxy += x * y
        self._fit = None

    def predict(self, xs: np.ndarray) -> np.ndarray:
        """Predicted log speedup of each row of ``xs`` (the mean of what was seen, before any variation)."""
        if self.n == 0:
            return np.zeros(len(xs))
        if self._fit is None:
            mx, my = self.sx / self.n, self.sy / self.n
            active = np.flatnonzero(np.diag(self.sxx) - self.n * mx * mx > 1e-12)
            ma = mx[active]
            cov = self.sxx[np.ix_(active, active)] - self.n * np.outer(ma, ma)  # only the varied features
            rhs = self.sxy[active] - self.n * ma * my
            w = np.linalg.solve(cov + self.ridge * np.eye(len(active)), rhs) if len(active) else np.zeros(0)
            self._fit = (active, w, mx, my)
        active, w, mx, my = self._fit
        return (xs[:, active] - mx[active]) @ w + my


def uniform_draw(game: ReorderGame, rng: random.Random, k: int) -> list[int]:
    n = len(game.candidates())
    return rng.sample(range(n), min(k, n))


class SurrogatePick:
    """``pick`` for :func:`~sass_lsp.schedule.search.neighbour` that learns from the measurements
    (``observe`` each trial): ``draws`` distinct moves from ``draw``, each tried on the game, and the
    one predicted fastest among those not measured yet. Before ``warmup`` measurements, and with
    probability ``explore`` after, it takes the first draw, as plain annealing would."""

    def __init__(
        self,
        original: str,
        arch: str,
        kernel: str | None = None,
        *,
        draw: Draw = uniform_draw,
        draws: int = 16,
        explore: float = 0.25,
        warmup: int = 100,
    ) -> None:
        self.orders_of = OriginalOrders(original, arch, kernel)
        self.n_nodes = len(self.orders_of.k.nodes)
        self.model = Surrogate(self.n_nodes)
        self.measured: set[tuple] = set()
        self.draw, self.draws, self.explore, self.warmup = draw, draws, explore, warmup

    def observe(self, trial: Trial) -> None:
        orders = self.orders_of.orders(trial.candidate.text)
        if orders is None:  # not a reordering of the original: never one of this walk's
            return
        self.measured.add(signature(orders))
        if trial.result.accepted:
            self.model.add(displacements(orders, self.n_nodes), math.log(trial.result.speedup or 1.0))

    def __call__(self, game: ReorderGame, rng: random.Random) -> int:
        learning = self.model.n >= self.warmup and rng.random() >= self.explore
        rows = self.draw(game, rng, self.draws if learning else 1)
        if len(rows) == 1:
            return rows[0]
        tried: list[tuple[int, np.ndarray]] = []
        for row in rows:
            orders = orders_after(game, row)
            if signature(orders) not in self.measured:
                tried.append((row, displacements(orders, self.n_nodes)))
        if not tried:
            return rows[0]  # every draw measured: annealing judges it on that measurement, a miss
        predicted = self.model.predict(np.stack([x for _, x in tried]))
        return tried[int(np.argmax(predicted))][0]


def surrogate_annealing(
    original: str,
    arch: str,
    kernel: str | None = None,
    *,
    draw: Draw = uniform_draw,
    seed: int = 0,
    source: str = "surrogate",
    **pick_options: Any,
) -> Callable[..., SearchLog]:
    """Annealing on measured speedup whose moves :class:`SurrogatePick` chooses: ``(measure, budget,
    on_trial=...) -> SearchLog``, like the other searches."""
    pick = SurrogatePick(original, arch, kernel, draw=draw, **pick_options)
    walk = neighbour(original, arch, kernel, pick=pick, source=source)

    def search(
        measure: Measure, budget: float, *, on_trial: Callable[[Trial], None] | None = None
    ) -> SearchLog:
        def observed(trial: Trial) -> None:
            pick.observe(trial)
            if on_trial is not None:
                on_trial(trial)

        return annealing(walk, original, measure, budget, rng=random.Random(seed), on_trial=observed)

    return search
