"""Feature: evaluation baselines for the reorder game, on the static cost model (no GPU, no torch).

API:
- ``random_legal(game, n_moves, rng) -> BaselineResult``: ``n_moves`` uniformly random legal moves;
- ``greedy_cost(game, max_steps, candidates_per_step=None) -> BaselineResult``: hill climbing: apply the
  single move with the lowest predicted cost while it lowers the cost (at most ``max_steps`` moves;
  ``candidates_per_step`` evaluates an evenly spread subset of the candidates per step instead of all).

Both continue from the game's current state (call ``game.reset()`` first for the ptxas schedule) and leave the
game in the final state; they use ``game.apply`` / ``game.peek``, so the episode's step limit does not apply.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from sass_lsp.schedule.game import Move, ReorderGame


@dataclass(frozen=True)
class BaselineResult:
    cost_before: float
    cost_after: float
    cost_original: float  # the ptxas schedule's cost
    moves: tuple[Move, ...]  # every move of the game's state, in order

    @property
    def speedup_pred(self) -> float:
        return self.cost_original / self.cost_after if self.cost_after else 1.0


def _result(game: ReorderGame, before: float) -> BaselineResult:
    return BaselineResult(before, game.cost, game.cost_original, tuple(game.moves))


def random_legal(game: ReorderGame, n_moves: int, rng: np.random.Generator | random.Random) -> BaselineResult:
    before = game.cost
    for _ in range(n_moves):
        n = len(game.candidates())
        if not n:
            break
        game.apply(int(rng.integers(n)) if isinstance(rng, np.random.Generator) else rng.randrange(n))
    return _result(game, before)


def greedy_cost(game: ReorderGame, max_steps: int, candidates_per_step: int | None = None) -> BaselineResult:
    before = game.cost
    for _ in range(max_steps):
        n = len(game.candidates())
        rows: list[int] | range = range(n)
        if candidates_per_step is not None and n > candidates_per_step:
            rows = sorted(set(np.linspace(0, n - 1, candidates_per_step).round().astype(int).tolist()))
        best_row, best = -1, game.cost
        for row in rows:
            cost = game.peek(row)
            if cost < best:
                best_row, best = row, cost
        if best_row < 0:
            break
        game.apply(best_row)
    return _result(game, before)
