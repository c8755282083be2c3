"""The surrogate-guided walk of ``schedule.surrogate`` on a real kernel (the bundled triton_add), measured by
a hidden function of the schedule: it must learn that function, measure what it predicts fastest, and stay
a walk over reachable, hazard-free schedules of the original."""

from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from sass_lsp.cuasm import parse_cuasm, write_cuasm
from sass_lsp.schedule.search import Measured, Trial, annealing, schedule_key

pytest.importorskip("sass_lsp.schedule.game")  # gymnasium
from sass_lsp.analysis.check import check_kernel  # noqa: E402
from sass_lsp.analysis.program import kernels_of  # noqa: E402
from sass_lsp.isa.semantics import load_semantics  # noqa: E402
from sass_lsp.schedule.canonical import OriginalOrders  # noqa: E402
from sass_lsp.schedule.search import neighbour, random_candidates  # noqa: E402
from sass_lsp.schedule.surrogate import (  # noqa: E402
    FEATURES,
    PairSurrogate,
    Surrogate,
    SurrogatePick,
    displacements,
    inversions,
    orders_after,
    signature,
    surrogate_annealing,
    uniform_draw,
)

EXAMPLES = Path(__file__).resolve().parents[1] / "sass_lsp" / "examples"
TEXT = write_cuasm((EXAMPLES / "triton_add.cubin").read_bytes(), source_name="triton_add.cubin")


def hidden_measure(seed: int = 1):
    """Log speedup linear in a few nodes' displacements, plus noise the size of the GPU's screening noise."""
    orders = OriginalOrders(TEXT, "sm_90")
    n = len(orders.k.nodes)
    rng = np.random.default_rng(seed)
    w = np.zeros(n)
    w[rng.choice(n, 8, replace=False)] = rng.normal(0.0, 0.004, 8)

    def measure(text: str) -> Measured:
        y = float(displacements(orders.orders(text), n) @ w) + rng.normal(0.0, 0.001)
        s, ci = math.exp(y), 0.002
        return Measured(schedule_key(text), "match", s, s - ci, s + ci, seconds=1.0)

    return measure


def hidden_pair_measure(seed: int = 1):
    """Log speedup linear in whether a few pairs of instructions run out of ptxas's order (one instruction
    hidden behind another's latency, say), plus the same noise: a function of no node's displacement alone.
    The pairs are drawn from those the original's legal moves can invert."""
    from sass_lsp.schedule.game import ReorderGame

    orders = OriginalOrders(TEXT, "sm_90")
    n = len(orders.k.nodes)
    game = ReorderGame.from_text(TEXT, "sm_90")
    reachable = np.unique(
        np.concatenate([inversions(orders_after(game, row), n) for row in range(len(game.candidates()))])
    )
    rng = np.random.default_rng(seed)
    w = dict(zip(rng.choice(reachable, 12, replace=False).tolist(), rng.normal(0.0, 0.01, 12), strict=True))

    def measure(text: str) -> Measured:
        pairs = inversions(orders.orders(text), n).tolist()
        y = sum(w.get(p, 0.0) for p in pairs) + rng.normal(0.0, 0.001)
        s, ci = math.exp(y), 0.002
        return Measured(schedule_key(text), "match", s, s - ci, s + ci, seconds=1.0)

    return measure


def test_the_ridge_fit_ranks_unseen_points_of_a_linear_function():
    rng = np.random.default_rng(0)
    w = np.zeros(50)
    w[:5] = [0.3, -0.2, 0.1, 0.05, -0.4]
    model = Surrogate(50, ridge=1.0)
    assert np.all(model.predict(np.ones((3, 50))) == 0.0)  # nothing seen: no preference
    for _ in range(60):
        x = rng.integers(-2, 3, 50) * (rng.random(50) < 0.2)
        model.add(x, float(x @ w) + rng.normal(0, 0.01))
    test = rng.integers(-2, 3, (200, 50)) * (rng.random((200, 50)) < 0.2)
    assert np.corrcoef(model.predict(test), test @ w)[0, 1] > 0.9


def test_displacements_are_zero_for_ptxas_order_and_signed_for_a_move():
    orders = OriginalOrders(TEXT, "sm_90")
    n = len(orders.k.nodes)
    assert not displacements({}, n).any()
    b = next(b for b in orders.k.blocks if b.end - b.start >= 3)
    order = (b.start + 1, b.start, *range(b.start + 2, b.end))  # the first two swapped
    x = displacements({b.idx: order}, n)
    assert x[b.start] == 1 and x[b.start + 1] == -1 and np.count_nonzero(x) == 2


def test_inversions_name_the_pairs_a_move_passes():
    orders = OriginalOrders(TEXT, "sm_90")
    n = len(orders.k.nodes)
    assert len(inversions({}, n)) == 0
    b = next(b for b in orders.k.blocks if b.end - b.start >= 5)
    s = b.start
    assert inversions({b.idx: (s, s + 1, s + 2, s + 3, s + 4, *range(s + 5, b.end))}, n).tolist() == []
    hoisted = (s + 3, s, s + 1, s + 2, *range(s + 4, b.end))  # node s+3 up by three slots
    assert inversions({b.idx: hoisted}, n).tolist() == [(s + j) * n + s + 3 for j in range(3)]
    # a displacement is a sum of pair features, so the pair model can fit whatever the displacement one can
    got = np.zeros(n)
    for pair in inversions({b.idx: hoisted}, n):
        lo, hi = divmod(int(pair), n)
        got[lo] += 1
        got[hi] -= 1
    assert np.array_equal(got, displacements({b.idx: hoisted}, n))


def test_the_pair_surrogate_is_the_ridge_fit_on_the_pairs_as_dense_features():
    """The dual, its inverse grown a schedule at a time, gives the primal ridge's predictions on the 0/1
    pair columns, to rounding, after 400 schedules."""
    rng = np.random.default_rng(1)
    n_nodes = 12
    rows = [np.unique(rng.choice(n_nodes * n_nodes, rng.integers(0, 9))) for _ in range(410)]
    ys = rng.normal(0, 0.01, len(rows))
    dual, primal = PairSurrogate(n_nodes, ridge=0.5), Surrogate(n_nodes * n_nodes, ridge=0.5)
    assert np.all(dual.predict(rows[:3]) == 0.0)  # nothing seen: no preference

    def dense(pairs: np.ndarray) -> np.ndarray:
        x = np.zeros(n_nodes * n_nodes)
        x[pairs] = 1.0
        return x

    for pairs, y in zip(rows[:400], ys[:400], strict=True):
        dual.add(pairs, float(y))
        primal.add(dense(pairs), float(y))
    test = rows[400:]
    assert np.allclose(dual.predict(test), primal.predict(np.stack([dense(p) for p in test])), atol=1e-12)
    assert dual.n == 400


def test_an_unknown_feature_set_is_refused():
    with pytest.raises(ValueError, match="unknown surrogate features 'moves'"):
        SurrogatePick(TEXT, "sm_90", features="moves")


@pytest.mark.slow
def test_the_surrogate_walk_learns_the_hidden_measure_and_beats_plain_annealing():
    """Same seeds, same 120 measurements: annealing's uniform moves against the surrogate's picks."""
    plain, guided = [], []
    for seed in range(3):
        walk = neighbour(TEXT, "sm_90")
        log = annealing(walk, TEXT, hidden_measure(seed), 120.0, rng=random.Random(seed))
        plain.append(max(t.result.speedup for t in log.trials))
        log = surrogate_annealing(TEXT, "sm_90", seed=seed, warmup=16)(hidden_measure(seed), 120.0)
        guided.append(max(t.result.speedup for t in log.trials))
        assert len(log.trials) == 120 and len({t.candidate.key for t in log.trials}) == 120
    assert all(g > p for p, g in zip(plain, guided, strict=True)), (plain, guided)  # +2.6..7.6% here


@pytest.mark.slow
def test_on_a_measure_of_pairs_the_pair_surrogate_ranks_unseen_schedules_better():
    """The point of the pair features: a measure that depends on which instruction passes which (as latency
    hiding does) is one the displacement model fits only in part. 600 random legal schedules, each model
    fitted on the first 450 and ranking the other 150 (Spearman, as ``surrogate_replay.py`` scores them;
    the schedules that invert none of the measure's pairs differ only by noise, which caps it)."""
    orders = OriginalOrders(TEXT, "sm_90")
    n = len(orders.k.nodes)
    schedules: dict[tuple, tuple[dict, str]] = {}  # signature -> (orders, text)
    texts = random_candidates(TEXT, "sm_90", random.Random(0))
    while len(schedules) < 600:
        text = next(texts).text
        got = orders.orders(text)
        if got:
            schedules.setdefault(signature(got), (got, text))
    rows = {f: [featurize(o, n) for o, _ in schedules.values()] for f, (featurize, _) in FEATURES.items()}
    gains = []
    for seed in range(3):
        measure = hidden_pair_measure(seed)
        ys = np.array([math.log(measure(text).speedup) for _, text in schedules.values()])
        rho = {}
        for features, (_, model_of) in FEATURES.items():
            model = model_of(n)
            xs = rows[features]
            for x, y in zip(xs[:450], ys[:450], strict=True):
                model.add(x, float(y))
            ranks = [np.argsort(np.argsort(v)) for v in (model.predict(xs[450:]), ys[450:])]
            rho[features] = np.corrcoef(*ranks)[0, 1]
        gains.append(rho["pairs"] - rho["displacement"])
        assert rho["pairs"] > 0.5 and gains[-1] > 0, rho
    assert np.mean(gains) > 0.1, gains  # +0.36, +0.13, +0.11 here


@pytest.mark.parametrize("features", ["displacement", "pairs"])
def test_every_schedule_the_surrogate_walk_measures_is_a_hazard_free_schedule_of_the_original(features: str):
    sem = load_semantics("sm_90")
    seen: list = []
    search = surrogate_annealing(TEXT, "sm_90", seed=4, warmup=8, features=features)
    log = search(hidden_measure(4), 60.0, on_trial=seen.append)
    assert seen == log.trials  # the caller's on_trial still sees every trial
    (k0,) = kernels_of(parse_cuasm(TEXT)[0], sem)
    before = Counter(f.code for f in check_kernel(k0, sem))
    schedules = OriginalOrders(TEXT, "sm_90")
    for t in log.trials:
        assert schedules.canonical(t.candidate) is t.candidate, t.candidate.moves
        (k1,) = kernels_of(parse_cuasm(t.candidate.text)[0], sem)
        assert not Counter(f.code for f in check_kernel(k1, sem)) - before, t.candidate.moves


def test_the_pick_skips_measured_schedules_and_learns_only_from_matched_outputs():
    from sass_lsp.schedule.game import ReorderGame

    game = ReorderGame.from_text(TEXT, "sm_90")
    rows = range(len(game.candidates()))
    pick = SurrogatePick(TEXT, "sm_90", warmup=0, explore=0.0, draws=len(rows))  # every move drawn
    sigs = {row: signature(orders_after(game, row)) for row in rows}
    pick.measured |= set(sigs.values()) - {sigs[0]}  # two moves may reach one order (an adjacent swap)
    assert sigs[pick(game, random.Random(0))] == sigs[0]  # the one schedule not measured yet
    for row in rows:
        pick.measured.add(sigs[row])
    assert pick(game, random.Random(0)) in rows  # all measured: a move still, which annealing counts a miss
    before = pick.model.n
    walk = neighbour(TEXT, "sm_90")
    cand = walk(TEXT, random.Random(0))
    pick.observe(Trial(cand, Measured(cand.key, "mismatch", None, seconds=1.0), 1.0))
    assert pick.model.n == before  # a wrong result teaches nothing
    pick.observe(Trial(cand, Measured(cand.key, "match", 1.01, seconds=1.0), 2.0))
    assert pick.model.n == before + 1
    # what it learns from a measured text is the schedule the game's state names (one move: one of sigs)
    assert signature(pick.orders_of.orders(cand.text)) in set(sigs.values())


def test_before_the_surrogate_has_learned_the_prior_ranks_the_draws():
    """With a prior, the warm-up's picks are the prior's best unmeasured draw (here a prior that prefers
    one chosen schedule); without one, the first draw, as plain annealing."""
    from sass_lsp.schedule.game import ReorderGame

    game = ReorderGame.from_text(TEXT, "sm_90")
    rows = range(len(game.candidates()))
    sigs = {row: signature(orders_after(game, row)) for row in rows}
    favourite = sigs[len(rows) // 2]
    seen: list[int] = []

    def prior(schedules: list) -> np.ndarray:
        seen.append(len(schedules))
        return np.array([1.0 if signature(o) == favourite else 0.0 for o in schedules])

    pick = SurrogatePick(TEXT, "sm_90", warmup=100, explore=0.0, draws=len(rows), prior=prior)
    assert sigs[pick(game, random.Random(0))] == favourite
    assert seen == [len(rows)]  # every draw ranked (none measured yet), once
    plain = SurrogatePick(TEXT, "sm_90", warmup=100, explore=0.0, draws=len(rows))
    assert [plain(game, random.Random(s)) for s in range(3)] == [
        uniform_draw(game, random.Random(s), 1)[0] for s in range(3)
    ]
