"""Policy-guided candidates for ``optimize`` and the GPU evaluation: the policy's suggestions first (its
greedy rollout and top first moves, best predicted first), then endless rollouts sampled from the policy
at a temperature, each contributing its best-predicted prefix (or, where no prefix is predicted faster,
the whole rollout). It ends after ``max_stale`` rollouts in a row that add no new candidate, so a screening
loop never spins on a kernel the policy cannot change. Every candidate is a hazard-free game state.

The searches ``optimize`` runs on the GPU (:func:`policy_search`) build on these: the beam expands measured
schedules with :func:`policy_expander`; the policy's annealing walk draws each move with :func:`policy_pick`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from sass_lsp.perf.predict import Predictor
from sass_lsp.policy.model import PolicyNet, collate, compact
from sass_lsp.policy.suggest import suggest
from sass_lsp.schedule.canonical import OriginalOrders
from sass_lsp.schedule.search import (
    Candidate,
    SearchLog,
    annealing,
    apply_edits,
    beam,
    chained,
    game_candidate,
    neighbour,
)
from sass_lsp.schedule.surrogate import surrogate_annealing

if TYPE_CHECKING:
    from sass_lsp.schedule.game import ReorderGame  # imports gymnasium: kept off import


def policy_candidates(
    text: str,
    arch: str,
    *,
    net: PolicyNet,
    kernel: str | None = None,
    first: int = 12,
    max_moves: int = 16,
    temperature: float = 1.0,
    seed: int = 0,
    max_stale: int = 32,
) -> Iterator[Candidate]:
    from sass_lsp.schedule.game import ReorderGame

    found = suggest(
        text, arch, net=net, top=first, kernel=kernel, max_moves=max_moves, branches=first, time_budget_s=2.0
    )
    for s in found:
        edits = [(a, b, list(new)) for a, b, new in s.edits]
        yield Candidate(apply_edits(text, edits), "policy", s.moves, s.cost_before / s.cost_after)
    game = ReorderGame.from_text(text, arch, kernel=kernel, max_steps=max_moves)
    gen = torch.Generator().manual_seed(seed)
    net.eval()
    seen: set[str] = set()
    stale = 0
    while stale < max_stale:
        obs, _ = game.reset()
        best, best_cost = None, game.cost_original
        done = False
        while not done:
            with torch.inference_mode():
                logits, _ = net(collate([compact(obs)]))
            probs = torch.softmax(logits[0] / temperature, dim=0)
            action = int(torch.multinomial(probs, 1, generator=gen))
            obs, _r, term, trunc, _info = game.step(action)
            done = term or trunc
            if game.cost < best_cost:
                best, best_cost = game.snapshot(), game.cost
        if best is not None:
            game.restore(best)
        elif not game.moves:
            stale += 1
            continue
        # no prefix predicted faster: the whole rollout goes to the GPU, since the static model can be
        # blind where the hardware is not (it sees triton_matmul as HGMMA-bound, so no move changes its cost)
        cand = game_candidate(game, text, "policy")
        if cand.key in seen:
            stale += 1
            continue
        seen.add(cand.key)
        stale = 0
        yield cand


def policy_expander(
    original: str,
    arch: str,
    *,
    net: PolicyNet,
    kernel: str | None = None,
    seed: int = 0,
    first: int = 4,
    max_moves: int = 8,
) -> Callable[[str], Iterator[Candidate]]:
    """``expand`` for :func:`~sass_lsp.schedule.search.beam`: the policy's candidates from any schedule of
    ``original``'s kernel (its suggestions, then sampled rollouts), with fewer suggestions and shorter
    rollouts than ``policy_candidates``' defaults, since the beam spreads its budget over several parents.
    Candidates from an edited schedule are schedules of ``original`` (:mod:`sass_lsp.schedule.canonical`):
    those no legal moves from ptxas's order reach are dropped, the rest repaired against ptxas's order."""
    schedules = OriginalOrders(original, arch, kernel)

    def expand(text: str) -> Iterator[Candidate]:
        found = policy_candidates(
            text, arch, net=net, kernel=kernel, first=first, max_moves=max_moves, seed=seed
        )
        if text == original:
            return found
        return (c for c in map(schedules.canonical, found) if c is not None)

    return expand


def policy_pick(net: PolicyNet, temperature: float = 1.0) -> Callable[[ReorderGame, random.Random], int]:
    """``pick`` for :func:`~sass_lsp.schedule.search.neighbour`: a legal move drawn from the policy's
    distribution over the current schedule's moves (its stop action left out), so annealing on GPU time
    walks where the policy points instead of uniformly."""
    net.eval()

    def pick(game: ReorderGame, rng: random.Random) -> int:
        weights = move_weights(net, game, temperature)
        return rng.choices(range(len(weights)), weights=weights)[0]

    return pick


def policy_draw(
    net: PolicyNet, temperature: float = 1.0, uniform_share: float = 0.0
) -> Callable[[ReorderGame, random.Random, int], list[int]]:
    """``draw`` for :class:`~sass_lsp.schedule.surrogate.SurrogatePick`: up to ``k`` distinct legal moves
    sampled from the policy's distribution (one forward pass), the likeliest usually first, and with
    ``uniform_share`` > 0 that share of them uniformly (:func:`draw_rows`)."""
    net.eval()

    def draw(game: ReorderGame, rng: random.Random, k: int) -> list[int]:
        return draw_rows(move_weights(net, game, temperature), k, rng, uniform_share)

    return draw


def draw_rows(weights: list[float], k: int, rng: random.Random, uniform_share: float = 0.0) -> list[int]:
    """Up to ``k`` distinct rows: ``k - round(k * uniform_share)`` drawn one by one by ``weights`` without
    replacement, then the rest uniformly from the rows left. ``policy_surrogate`` draws with a share of
    :data:`DEFAULT_UNIFORM_SHARE` unless told otherwise; ``benchmarks/policy_prior.py`` asks what other shares
    would draw, the policy having put 0.015 of its mass on sgemm_tiled on the tenth of first moves a
    surrogate of the H200's random-move run rates best, and ``benchmarks/reorder_eval.py`` times a share of
    0 (``policy_surrogate``) and 1/2 (``policy_surrogate_mix``) on the GPU."""
    rows: list[int] = []
    n_policy = k - round(k * uniform_share)
    # by weight from the rows of positive weight only: with subnormal weights, choices' rounding over all
    # rows can land on a zero-weight one (found by the property test); otherwise it is the same draw
    support = [row for row, weight in enumerate(weights) if weight > 0]
    while len(rows) < n_policy and support:
        i = rng.choices(range(len(support)), weights=[weights[row] for row in support])[0]
        rows.append(support.pop(i))
    if n_policy < k:
        taken = set(rows)
        rest = [row for row in range(len(weights)) if row not in taken]
        rows += rng.sample(rest, min(k - n_policy, len(rest)))
    return rows


def move_weights(net: PolicyNet, game: ReorderGame, temperature: float) -> list[float]:
    """The policy's probability of each of the game's legal moves (its stop action left out)."""
    n = len(game.candidates())
    with torch.inference_mode():
        logits, _ = net(collate([compact(game.observation())]))
    return torch.softmax(logits[0, :n] / temperature, dim=0).tolist()


# ``optimize --search``; the evaluation's policy-guided methods
SEARCHES = ("beam", "policy_annealing", "policy_surrogate", "policy_moves")
# of the three, the one with the highest geometric mean over the six held-out kernels on the GPU
# (docs/evaluation.md)
DEFAULT_SEARCH = "policy_surrogate"
# its share of uniform draws when none is given: half uniform (the evaluation's ``policy_surrogate_mix``)
# scored a higher geometric mean over the held-out kernels than the policy's draws alone, through
# triton_matmul; it was behind on rmsnorm_f32_4096 (docs/evaluation.md)
DEFAULT_UNIFORM_SHARE = 0.5
DRAWING = ("policy_surrogate", "policy_moves")  # the searches that draw a share of their moves uniformly


def resolve_uniform_share(name: str, share: float | None) -> float:
    """The uniform share the search ``name`` draws with: ``share``, or with ``None`` the search's default
    (:data:`DEFAULT_UNIFORM_SHARE` for ``policy_surrogate``, 0 for the searches that draw no moves).
    ValueError for a share the search cannot use: only ``policy_surrogate`` draws, and a share is 0..1."""
    if share is None:
        return DEFAULT_UNIFORM_SHARE if name in DRAWING else 0.0
    if not 0.0 <= share <= 1.0:
        raise ValueError(
            f"uniform share {share:g} is not a share (0: the policy's draws only, 1: all uniform)"
        )
    if share and name not in DRAWING:
        raise ValueError(f"a uniform share applies to the {' and '.join(DRAWING)} searches, not {name}")
    return share


def perf_prior(original: str, arch: str, kernel: str | None, perf: Any) -> Callable[[list], np.ndarray]:
    """The performance model's predicted log speedups of schedules (node orders) of ``original``."""
    predictor = Predictor.of_text(original, arch, kernel, perf)

    def prior(schedules: list) -> np.ndarray:
        return np.log([p.speedup for p in predictor.predict_orders(schedules)])

    return prior


def policy_search(
    name: str,
    original: str,
    arch: str,
    *,
    net: PolicyNet,
    kernel: str | None = None,
    seed: int = 0,
    uniform_share: float | None = None,
    features: str = "displacement",
    perf: Any = None,
) -> Callable[..., SearchLog]:
    """A policy-guided search over GPU measurements, ``(measure, budget, on_trial=...) -> SearchLog``:
    ``beam`` (the policy expanding the schedules measured surest faster), ``policy_annealing``
    (annealing's walk with each move drawn from the policy) or ``policy_surrogate`` (that walk measuring,
    of 16 moves the policy draws, the one a surrogate fitted to the measurements so far predicts fastest:
    :mod:`sass_lsp.schedule.surrogate`; ``uniform_share`` of the 16 drawn uniformly instead, ``None``: the
    search's default; :func:`resolve_uniform_share` refuses one that is not used; ``features``: what its
    surrogate sees of a schedule, :data:`sass_lsp.schedule.surrogate.FEATURES`; ``perf``: a performance
    model that ranks the walk's draws until its surrogate has learned, None: the first draw then)."""
    uniform_share = resolve_uniform_share(name, uniform_share)
    if features != "displacement" and name != "policy_surrogate":
        raise ValueError(f"surrogate features apply to the policy_surrogate search, not {name}")
    if name == "beam":
        return partial(beam, policy_expander(original, arch, net=net, kernel=kernel, seed=seed), original)
    if name == "policy_annealing":
        walk = neighbour(original, arch, kernel, pick=policy_pick(net), source="policy")
        return partial(annealing, walk, original, rng=random.Random(seed))
    if name == "policy_surrogate":
        draw = policy_draw(net, uniform_share=uniform_share)
        prior = None if perf is None else perf_prior(original, arch, kernel, perf)
        return surrogate_annealing(
            original, arch, kernel, draw=draw, seed=seed, source="policy", features=features, prior=prior
        )
    if name == "policy_moves":
        share = uniform_share
        return move_policy_walk(original, arch, net=net, kernel=kernel, seed=seed, uniform_share=share)
    raise ValueError(f"unknown search {name!r} (one of {', '.join(SEARCHES)})")


STATES_KEPT = 64  # move-game states of the walk's last proposals (a text is large; only recent ones recur)


def move_policy_walk(
    original: str,
    arch: str,
    *,
    net: PolicyNet,
    kernel: str | None = None,
    kinds: tuple[str, ...] | None = None,
    threads: int | None = None,
    seed: int = 0,
    uniform_share: float = DEFAULT_UNIFORM_SHARE,
    control_share: float = 0.5,
) -> Callable[..., SearchLog]:
    """Annealing on GPU time over the move game's kinds (``kinds``, None: all), each step one move at the
    walk's current schedule: drawn from ``net``, a policy of the move game, or (``uniform_share`` of the
    steps) uniformly, a kind first and then one of its moves. With control codes and other kinds, a walk of
    the others takes the first ``1 - control_share`` of the budget and a walk of control moves the rest,
    from the schedule the first measured surest faster: a control move closes the game's earlier phases, so
    one walk would stay among control codes from its first such step. A candidate's source names the kinds
    it holds in the order made ("pipeline+reorder+control")."""
    from sass_lsp.schedule.move_game import MOVE_KINDS

    if not net.cfg.cand_kinds:
        raise ValueError("policy_moves needs a policy of the move game (sass-lsp train --game moves)")
    kinds = tuple(kinds or MOVE_KINDS)
    net.eval()
    share = uniform_share
    walk = partial(_move_walk, arch=arch, net=net, kernel=kernel, threads=threads, uniform_share=share)
    rng = random.Random(seed)
    others = tuple(k for k in kinds if k != "control")
    if not others or "control" not in kinds:
        return walk(original, original, kinds, rng)

    def then(start: tuple[str, float] | None, source: str | None) -> Callable[..., SearchLog]:
        return walk(original, start[0] if start else original, ("control",), rng, start, source)

    return chained(walk(original, original, others, rng), then, 1 - control_share)


def _move_walk(
    original: str,
    base: str,
    kinds: tuple[str, ...],
    rng: random.Random,
    start: tuple[str, float] | None = None,
    start_source: str | None = None,
    *,
    arch: str,
    net: PolicyNet,
    kernel: str | None,
    threads: int | None,
    uniform_share: float,
) -> Callable[..., SearchLog]:
    """One annealing walk of the move game played from ``base`` (the original, or the schedule ``start``
    names) over ``kinds``."""
    from sass_lsp.schedule.move_game import MOVE_ERRORS, MoveGame
    from sass_lsp.schedule.moves import pick_move
    from sass_lsp.schedule.search import schedule_key

    game = MoveGame(base, arch, kernel, kinds=kinds, threads_per_block=threads)
    first = game.snapshot()
    states: dict[str, Any] = {}
    held = tuple(start_source.split("+")) if start_source else ()

    def draw(rows: list, rng: random.Random) -> int:
        if rng.random() < uniform_share:  # a kind uniformly, then one of its moves
            picked = pick_move(rows, rng)
            return next(i for i, r in enumerate(rows) if r is picked)
        weights = move_weights(net, game, 1.0)
        return rng.choices(range(len(weights)), weights=weights)[0]

    def propose(text: str, rng: random.Random) -> Candidate | None:
        state = first if text == base else states.get(schedule_key(text))
        if state is None:
            return None
        for _ in range(16):  # a move its own check refuses on this text is drawn again
            game.restore(state)
            rows = game.candidates()
            if not rows:
                return None
            try:
                after = game.after(draw(rows, rng))
            except MOVE_ERRORS:
                continue
            key = schedule_key(after.text)
            states.pop(key, None)
            states[key] = after
            while len(states) > STATES_KEPT:
                states.pop(next(iter(states)))
            source = "+".join(dict.fromkeys((*held, *after.kinds)))
            return Candidate(after.text, source, after.moves)
        return None

    # the next move is drawn while one is measured (the game serves one proposer only)
    return partial(annealing, propose, original, rng=rng, start=start, overlap=True)
