"""Annealing on GPU time with an online surrogate: each step draws several legal moves and measures the one a
model of the measurements so far predicts fastest, so the GPU's time goes to the likelier gains.

The surrogate is ridge regression of log measured speedup on each instruction's displacement from ptxas's
order (node ``i`` at position ``p`` of its block: ``p - i``), refitted as measurements arrive. It knows
nothing of the hardware; it learns, per kernel, which instructions moved which way paid. Replayed on logs
of random legal moves measured on the GPU (``benchmarks/surrogate_replay.py``), a fit on a kernel's first
100 or 200 measured schedules ranks the rest usefully (Spearman about +0.4 to +0.5 on the matrix products)
but barely from 50. Hence ``warmup``: the first 100 measurements are plain annealing. How the walk compares
with the other searches on the GPU: docs/evaluation.md.

``features="pairs"`` fits the same ridge on other features: for each pair of instructions, whether the
schedule runs them in the opposite order to ptxas (:func:`inversions`; :class:`PairSurrogate`). A move that
passes a load and one that passes an ALU instruction by as many slots then differ. Replayed on random-move
logs it ranks schedules better than displacements on all six held-out kernels, yet on the GPU its walk
confirmed less than the displacement model's on both kernels tried, so displacements stay the default
(docs/evaluation.md).

Until the surrogate has learned (``warmup``), a ``prior`` can rank the draws instead: the learned performance
model (:mod:`sass_lsp.perf`), fitted on other kernels' measurements, whose top pick among 32 random schedules
of a kernel it never saw is faster than a uniform pick (``benchmarks/perf_model_eval.py``).

Pure: numpy only. The proposer of the draws and the prior are injected: uniform, or the policy's distribution
(:func:`sass_lsp.policy.candidates.policy_draw`); the performance model's predictions."""

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
Prior = Callable[[list[Orders]], np.ndarray]  # predicted log speedup of each schedule


def displacements(orders: Orders, n_nodes: int) -> np.ndarray:
    """Each node's position minus its ptxas position (0 for the blocks ``orders`` leaves as they were)."""
    x = np.zeros(n_nodes)
    for order in orders.values():
        start = min(order)
        for p, node in enumerate(order):
            x[node] = start + p - node
    return x


def inversions(orders: Orders, n_nodes: int) -> np.ndarray:
    """The pairs of nodes the schedule runs in the opposite order to ptxas, each as ``lo * n_nodes + hi``
    (node ``hi`` now runs before node ``lo``), sorted; empty for ptxas's order."""
    found = []
    for order in orders.values():
        o = np.asarray(order)
        moved = np.flatnonzero(o != np.arange(o.min(), o.min() + len(o)))
        if len(moved):  # only the span between the first and last moved node can hold a pair out of order
            span = o[moved[0] : moved[-1] + 1]
            first, second = np.triu_indices(len(span), 1)
            out_of_order = span[first] > span[second]
            found.append(span[second][out_of_order] * n_nodes + span[first][out_of_order])
    return np.sort(np.concatenate(found)) if found else np.zeros(0, np.int64)


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

    def predict(self, xs: np.ndarray | list[np.ndarray]) -> np.ndarray:
        """Predicted log speedup of each row of ``xs`` (the mean of what was seen, before any variation)."""
        xs = np.asarray(xs)
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


class PairSurrogate:
    """:class:`Surrogate`'s ridge regression over one feature per pair of nodes (1 where the pair runs out of
    ptxas's order: :func:`inversions`), solved in its dual form: a kernel has ``n_nodes**2`` pairs, a walk
    measures a few thousand schedules, and each schedule's product with another is the number of pairs they
    both invert. With the intercept unpenalised, as in the primal ridge on centred features (the same fit),
    the dual's matrix ``K + ridge*I`` only grows by a row and column per schedule, so its inverse is kept up
    to date in O(n**2) a schedule instead of solving O(n**3) anew (a walk refits after every measurement).
    Memory: ``n_nodes**2`` bytes for the lookup, and 8 n**2 for the inverse (26 MB at 1,800 schedules)."""

    def __init__(self, n_nodes: int, ridge: float = 10.0) -> None:
        self.ridge = ridge
        self.n = 0
        self._member = np.zeros(n_nodes * n_nodes, np.bool_)  # one schedule's pairs, while it is compared
        self._pairs = np.zeros(0, np.int64)  # every schedule's pairs, end to end
        self._owner = np.zeros(0, np.int64)  # the schedule each of them belongs to
        self._used = 0
        self._inverse = np.zeros((0, 0))  # of K + ridge*I, K[i, j]: the pairs schedules i and j share
        self._ys = np.zeros(0)
        self._fit: tuple[np.ndarray, float] | None = None

    def _shared(self, pairs: np.ndarray) -> np.ndarray:
        """The number of pairs ``pairs`` shares with each schedule added so far."""
        self._member[pairs] = True
        hits = self._member[self._pairs[: self._used]]
        self._member[pairs] = False
        return np.bincount(self._owner[: self._used], weights=hits, minlength=self.n)

    def add(self, pairs: np.ndarray, y: float) -> None:
        shared = self._shared(pairs)
        n, end = self.n, self._used + len(pairs)
        if end > len(self._pairs):  # storage doubles, so adding stays amortised linear
            grown = max(2 * len(self._pairs), end, 1024)
            self._pairs = np.resize(self._pairs, grown)
            self._owner = np.resize(self._owner, grown)
        self._pairs[self._used : end], self._owner[self._used : end] = pairs, n
        self._used = end
        if n == len(self._inverse):
            inverse, ys = np.zeros((max(2 * n, 64),) * 2), np.zeros(max(2 * n, 64))
            inverse[:n, :n], ys[:n] = self._inverse[:n, :n], self._ys[:n]
            self._inverse, self._ys = inverse, ys
        # the inverse of [[A, k], [k', d]] from A's: u = A^-1 k, Schur complement s = d - k'u
        inv = self._inverse[:n, :n]
        u = inv @ shared
        schur = len(pairs) + self.ridge - shared @ u
        inv += np.outer(u, u) / schur
        self._inverse[n, :n] = self._inverse[:n, n] = -u / schur
        self._inverse[n, n] = 1.0 / schur
        self._ys[n] = y
        self.n += 1
        self._fit = None

    def predict(self, xs: list[np.ndarray]) -> np.ndarray:
        """Predicted log speedup of each schedule's pairs (the mean seen, before any variation)."""
        if self.n == 0:
            return np.zeros(len(xs))
        if self._fit is None:
            inv, ys = self._inverse[: self.n, : self.n], self._ys[: self.n]
            on_ones, on_ys = inv.sum(1), inv @ ys
            intercept = on_ys.sum() / on_ones.sum()  # the dual's weights sum to 0
            self._fit = (on_ys - intercept * on_ones, float(intercept))
        dual, intercept = self._fit
        return np.array([self._shared(x) for x in xs]) @ dual + intercept


FEATURES = {"displacement": (displacements, Surrogate), "pairs": (inversions, PairSurrogate)}


def uniform_draw(game: ReorderGame, rng: random.Random, k: int) -> list[int]:
    n = len(game.candidates())
    return rng.sample(range(n), min(k, n))


class SurrogatePick:
    """``pick`` for :func:`~sass_lsp.schedule.search.neighbour` that learns from the measurements
    (``observe`` each trial): ``draws`` distinct moves from ``draw``, each tried on the game, and the
    one predicted fastest among those not measured yet. Before ``warmup`` measurements the ``prior`` predicts
    (without one: the first draw, as plain annealing would); with probability ``explore`` it takes the first
    draw. ``features``: what the model sees of a schedule (a key of :data:`FEATURES`)."""

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
        features: str = "displacement",
        prior: Prior | None = None,
    ) -> None:
        if features not in FEATURES:
            raise ValueError(f"unknown surrogate features {features!r} (one of {', '.join(FEATURES)})")
        self.orders_of = OriginalOrders(original, arch, kernel)
        self.n_nodes = len(self.orders_of.k.nodes)
        self.features, model = FEATURES[features]
        self.model = model(self.n_nodes)
        self.measured: set[tuple] = set()
        self.draw, self.draws, self.explore, self.warmup = draw, draws, explore, warmup
        self.prior = prior

    def observe(self, trial: Trial) -> None:
        orders = self.orders_of.orders(trial.candidate.text)
        if orders is None:  # not a reordering of the original: never one of this walk's
            return
        self.measured.add(signature(orders))
        if trial.result.accepted:
            self.model.add(self.features(orders, self.n_nodes), math.log(trial.result.speedup or 1.0))

    def __call__(self, game: ReorderGame, rng: random.Random) -> int:
        learned = self.model.n >= self.warmup
        ranking = (learned or self.prior is not None) and rng.random() >= self.explore
        rows = self.draw(game, rng, self.draws if ranking else 1)
        if len(rows) == 1:
            return rows[0]
        tried: list[tuple[int, Orders]] = []
        for row in rows:
            orders = orders_after(game, row)
            if signature(orders) not in self.measured:
                tried.append((row, orders))
        if not tried:
            return rows[0]  # every draw measured: annealing judges it on that measurement, a miss
        if learned or self.prior is None:
            predicted = self.model.predict([self.features(o, self.n_nodes) for _, o in tried])
        else:
            predicted = self.prior([o for _, o in tried])
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
