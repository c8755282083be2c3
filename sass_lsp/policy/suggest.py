"""Feature: reorder suggestions for the editor and the CLI, from a trained policy (CPU inference only).

``suggest(text, arch, net=...)`` plays the reorder game on the kernel's hot window: the policy's greedy
rollout and the greedy continuations of its other top first moves, run in lock step so that each step is one
batched forward pass. Every rollout is scored by the game's cost model; its best prefix is a candidate. The
distinct candidates become :class:`Suggestion` s, best first, with text edits from ``game.edits`` (every
state of the game is hazard-free: the game repairs control codes after each move). With a performance model
(``perf``, :mod:`sass_lsp.perf`) every state the rollouts reached is a candidate, ranked by its predicted
speedup, and those predicted faster are suggested, each with its 90% interval; without one, each rollout's
cheapest state under the static cost model is, if it saves predicted cycles.

No training dependencies (PPO, vector envs); ``time_budget_s`` bounds the search for interactive use.
``warm_up(net)`` (once, where the policy is loaded) takes the per-process costs off the first request: the
game's imports (gymnasium, the hazard analysis) and the first forward pass.

The network is the checkpoint's numpy forward pass (:class:`sass_lsp.policy.infer.NumpyPolicy`, what
:func:`load_for_suggestions` loads: no torch in a process that only suggests) or, where the caller trains or
samples with it, the torch :class:`sass_lsp.policy.model.PolicyNet`: both give the same logits.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sass_lsp.analysis.program import gc_paused
from sass_lsp.perf.predict import Prediction, Predictor
from sass_lsp.policy import infer
from sass_lsp.policy.infer import NumpyPolicy, compact
from sass_lsp.schedule import observation as ob

Edit = tuple[int, int, tuple[str, ...]]  # (first line, last line, new lines), 1-based inclusive

# Under a time budget the search plans to end by this share of it: the rest is for what follows the last
# step (the suggestions' text edits, a few ms per block of thousands of lines) and for a step that takes
# longer than the one before it (the step times the plan extrapolates move by tens of percent on a busy
# machine), so that the call as a whole ends within its budget.
SEARCH_SHARE = 0.9

# BLAS threads of a process that serves suggestions (see load_for_suggestions). The policy's forward passes
# are small products (a few hundred tokens by 128): more threads only add start-up and barriers, and where
# the cores are shared they wait on each other: on a loaded 2-vCPU VM a [63, 128] x [128, 384] product took
# 24 ms on OpenBLAS's two threads and 0.4 ms on one.
INTERACTIVE_THREADS = 1

# First moves a suggestion search explores by default. Fixed, not derived from ``top``: the suggestions are
# the best of these rollouts, so ``top=1`` is the first of ``top=3`` (a search over more first moves can find
# a better first suggestion, so its width must not follow the number asked for).
DEFAULT_BRANCHES = 4


@dataclass(frozen=True)
class Suggestion:
    kernel: str
    moves: tuple[str, ...]  # human descriptions, e.g. "hoist LDGSTS (line 212) above HGMMA (line 205)"
    title: str  # "Reorder: hoist 4 LDGSTS above HGMMA — +1.2% faster (90%: −0.8% to +3.3%), predicted, …"
    predicted_gain: float  # share of time saved: as ``prediction`` predicts if any, else the cost model
    cost_before: float  # the static cost model's cycles of the hot region
    cost_after: float
    edits: tuple[Edit, ...]
    prediction: Prediction | None = None  # the performance model's speedup and 90% interval


# A candidate is suggested when the performance model predicts at least this speedup (+0.05%: what rounds
# to a gain at the titles' precision).
MIN_PREDICTED_SPEEDUP = 1.0005


@dataclass
class _Branch:
    """One rollout: its game, latest observation, the snapshot of the cheapest state it reached and every
    state it reached (in order)."""

    game: Any  # a ReorderGame
    obs: dict
    best: Any = None
    best_cost: float = float("inf")
    alive: bool = True
    states: list = dataclasses.field(default_factory=list)

    def record(self) -> None:
        snap = self.game.snapshot()
        self.states.append(snap)
        if float(self.game.cost) < self.best_cost:
            self.best, self.best_cost = snap, float(self.game.cost)


def load_for_suggestions(path: str | Path) -> NumpyPolicy:
    """The policy at ``path``, ready to serve: this process's BLAS threads capped (:func:`limit_threads`),
    the numpy forward pass loaded and :func:`warm_up`. The CLI and the server load it so."""
    limit_threads()
    net = NumpyPolicy.load(path)
    if net.move_game:
        raise ValueError("a policy of the move game (optimize --search policy_moves), not a reorder policy")
    warm_up(net)
    return net


def limit_threads() -> None:
    """Cap this process's BLAS threads at :data:`INTERACTIVE_THREADS`."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(INTERACTIVE_THREADS, user_api="blas")


def logits_of(net: Any, items: list[dict[str, np.ndarray]]) -> np.ndarray:
    """The action logits [B, C_MAX + 1] of compact observations, from either network."""
    if isinstance(net, NumpyPolicy):
        return net(infer.collate(items))[0]
    import torch

    from sass_lsp.policy.model import collate

    net.eval()
    with torch.inference_mode():
        return net(collate(items))[0].numpy()


def warm_up(net: Any) -> None:
    """Import the game and run one forward pass on a tiny observation, so that a process's first request
    pays only for its text (the imports and the first pass cost hundreds of ms, once per process)."""
    import sass_lsp.schedule.game  # noqa: F401  (the import is the point)

    tiny = {
        "tok": np.ones((2, len(ob.TOKEN_VOCAB)), dtype=np.int16),
        "num": np.zeros((2, ob.N_NUM), dtype=np.float32),
        "adj": np.zeros((2, 2), dtype=np.uint8),
        "cand": np.array([[0, 1]], dtype=np.int16),
        "cand_mask": np.ones(1, dtype=bool),
    }
    logits_of(net, [tiny])


# No cyclic collection during a request, and what it leaves alive is not counted towards the next full
# collection. A process that serves many requests keeps hundreds of thousands of tracked objects (torch,
# the per-text caches, the cached games); a full collection walks them all (~150 ms on a 2-vCPU VM), and
# CPython starts one once enough objects have survived young collections: in the middle of some later
# request, at random (the outlier first requests of the latency benchmark). The game and the search leave
# no cyclic garbage, so their survivors go straight to the oldest generation, whatever their number.
@gc_paused(promote_over=0)
def suggest(
    text: str,
    arch: str,
    *,
    net: Any,
    top: int = 3,
    kernel: str | None = None,
    max_moves: int = 8,
    branches: int | None = None,
    time_budget_s: float | None = 0.2,
    perf: Any = None,
) -> list[Suggestion]:
    """Up to ``top`` distinct reorderings of ``kernel`` (default: the largest) predicted to be faster, best
    first: by the performance model ``perf`` (a :class:`sass_lsp.perf.model.PerfModel`) over every state the
    rollouts reached, or (``perf`` None) by the static cost model over each rollout's cheapest state.

    ``branches``: first moves explored (default :data:`DEFAULT_BRANCHES`, whatever ``top``: the list for
    ``top=k`` is the first k of the list for a larger ``top``, at most ``branches`` long).
    ``time_budget_s``: the whole call, from its start (the game's build included): no further first move is
    tried and rollouts stop extending when the next one would end after the search's share of it
    (:data:`SEARCH_SHARE`), each keeping its best prefix so far; the first forward pass and the policy's
    first move always run. None plays every rollout to its end (deterministic).
    Building the game for a text (parse, dependences) is cached for the last few texts.
    """
    start = time.perf_counter()
    deadline = None if time_budget_s is None else start + SEARCH_SHARE * time_budget_s
    game = _pristine_game(text, arch, kernel, max_moves).clone()
    obs, _ = game.reset()
    cost0 = float(game.cost_original)
    t_forward = time.perf_counter()
    logits = logits_of(net, [compact(obs)])
    t_forward = time.perf_counter() - t_forward
    cand_logits = logits[0, : ob.C_MAX]
    n_legal = int(np.isfinite(cand_logits).sum())
    n_first = min(n_legal, DEFAULT_BRANCHES if branches is None else branches)
    if n_first == 0:
        return []
    first_moves = np.argsort(-cand_logits, kind="stable")[:n_first].tolist()

    live: list[_Branch] = []
    t_moves = 0.0  # seconds per first move (each repairs the block: tens of ms on thousands of lines)
    for row in first_moves:
        now = time.perf_counter()
        if live and deadline is not None and now + t_moves > deadline:
            break  # the policy's first choice always runs; the others while the budget lasts
        g = game.clone()
        o, _r, term, trunc, _info = g.step(row)
        live.append(_Branch(g, o, alive=not (term or trunc)))
        live[-1].record()
        t_moves = time.perf_counter() - now
    # Greedy continuations in lock step: one batched forward per step for all live branches. Under a time
    # budget, when a whole step no longer fits, only the best-ranked live branch (the policy's greedy
    # rollout first) goes on, while one branch's share of the last step still fits.
    per_branch = t_forward + t_moves  # seconds per branch in the last step (before any: the first pass's)
    while True:
        todo = [br for br in live if br.alive]
        now = time.perf_counter()
        if todo and deadline is not None:
            left = deadline - now
            if per_branch * len(todo) > left:
                todo = todo[:1] if per_branch < left else []
        if not todo:
            break
        logits = logits_of(net, [compact(br.obs) for br in todo])
        for br, action in zip(todo, logits.argmax(axis=1).tolist(), strict=True):
            br.obs, _r, term, trunc, _info = br.game.step(action)
            br.alive = not (term or trunc)
            br.record()
        per_branch = (time.perf_counter() - now) / len(todo)

    lines = text.splitlines()
    if perf is None:
        picks = [(br.best, None) for br in sorted(live, key=lambda b: b.best_cost) if br.best_cost < cost0]
    else:
        predictor = _predictor(text, arch, kernel, max_moves, perf)
        picks = _ranked(predictor, [snap for br in live for snap in br.states])
    out: list[Suggestion] = []
    seen: set[Any] = set()
    for snap, prediction in picks:
        game.restore(snap)
        key = tuple((b, tuple(order)) for b, order in sorted(game.orders().items()))
        if key in seen:
            continue
        seen.add(key)
        out.append(_suggestion(game, lines, cost0, prediction))
        if len(out) >= top:
            break
    return out


def _ranked(predictor: Predictor, states: Sequence[Any]) -> list[tuple[Any, Prediction]]:
    """The distinct ``states`` predicted at least :data:`MIN_PREDICTED_SPEEDUP`, fastest first (ties: the
    state reached first)."""
    distinct: dict[tuple, Any] = {}
    for snap in states:
        orders = {b: st.order for b, st in snap.blocks.items()}
        distinct.setdefault(tuple(sorted(orders.items())), (snap, orders))
    if not distinct:
        return []
    snaps, orders = zip(*distinct.values(), strict=True)
    predictions = predictor.predict_orders(orders)
    ranked = sorted(range(len(snaps)), key=lambda i: -predictions[i].speedup)
    return [(snaps[i], predictions[i]) for i in ranked if predictions[i].speedup >= MIN_PREDICTED_SPEEDUP]


def _suggestion(game: Any, lines: list[str], cost0: float, prediction: Prediction | None) -> Suggestion:
    """The game's current state as a suggestion to the text ``lines``."""
    edits = tuple((a, b, tuple(new)) for a, b, new in game.edits(lines))
    cost = float(game.cost)
    descriptions, kinds = describe_moves(game, game.moves)
    if prediction is None:
        gain = (cost0 - cost) / cost0
        title = _title(kinds, f"predicted −{_percent(gain)}% cycles")
    else:
        gain = 1 - 1 / prediction.speedup
        title = _title(kinds, predicted_speedup_text(prediction))
    return Suggestion(game.k0.name, tuple(descriptions), title, gain, cost0, cost, edits, prediction)


def predicted_speedup_text(p: Prediction) -> str:
    """E.g. "+1.2% faster (90%: −0.8% to +3.3%), predicted, not measured": the time saved, as the model
    predicts it."""

    def pct(speedup: float) -> str:
        x = (1 - 1 / speedup) * 100
        return f"{'+' if x >= 0 else '−'}{abs(x):.1f}%"

    return f"{pct(p.speedup)} faster (90%: {pct(p.low)} to {pct(p.high)}), predicted, not measured"


@functools.lru_cache(maxsize=4)
def _predictor(text: str, arch: str, kernel: str | None, max_moves: int, perf: Any) -> Predictor:
    """The performance model's predictor for the game of a text (its kernel facts: a few ms), kept with it."""
    return Predictor(_pristine_game(text, arch, kernel, max_moves).k0, perf)


@functools.lru_cache(maxsize=4)
def _pristine_game(text: str, arch: str, kernel: str | None, max_moves: int) -> Any:
    """The game for a text, kept for the next request on the same text (an editor asks again as the cursor
    moves); building it (parse, dependences, cost) costs more than the search. Callers play on a clone."""
    from sass_lsp.schedule.game import ReorderGame  # the game module imports gymnasium; keep it off import

    # (tens of thousands of long-lived objects: suggest, the caller, holds the collector)
    return ReorderGame.from_text(text, arch, kernel=kernel, max_steps=max_moves)


def describe_moves(game: Any, moves: Sequence[tuple[int, int, int]]) -> tuple[list[str], list[tuple]]:
    """Human descriptions of ``(node index, from, to)`` block-order moves, in the ptxas line numbers, and
    their (verb, opcode, anchor opcode) kinds for the title."""
    k0 = game.k0
    block_of = {i: b.idx for b in k0.blocks for i in range(b.start, b.end)}
    orders: dict[int, list[int]] = {}
    texts, kinds = [], []
    for idx, p, t in moves:
        blk = k0.blocks[block_of[idx]]
        order = orders.setdefault(blk.idx, list(range(blk.start, blk.end)))
        anchor = order[t]
        order.insert(t, order.pop(p))
        up = t < p
        verb, prep = ("hoist", "above") if up else ("sink", "below")
        nd, an = k0.nodes[idx], k0.nodes[anchor]
        texts.append(f"{verb} {nd.eff.opcode} (line {nd.line}) {prep} {an.eff.opcode} (line {an.line})")
        kinds.append((verb, prep, nd.eff.opcode, an.eff.opcode))
    return texts, kinds


def _title(kinds: list[tuple], figure: str) -> str:
    (verb, prep, op, anchor), count = Counter(kinds).most_common(1)[0]
    what = f"{verb} {count} {op} {prep} {anchor}" if count > 1 else f"{verb} {op} {prep} {anchor}"
    rest = len(kinds) - count
    if rest:
        what += f" (+{rest} more move{'s' if rest > 1 else ''})"
    return f"Reorder: {what} — {figure}"


def _percent(share: float) -> str:
    pct = share * 100
    return f"{pct:.0f}" if pct >= 10 else f"{pct:.1f}"


def to_json(suggestions: Sequence[Suggestion]) -> str:
    """``--format json``: a list of objects with the Suggestion fields (edits as [first, last, [lines]])."""

    def one(s: Suggestion) -> dict[str, Any]:
        d = asdict(s)
        d["moves"] = list(s.moves)
        d["edits"] = [[a, b, list(new)] for a, b, new in s.edits]
        d["measured"] = False
        return d

    return json.dumps([one(s) for s in suggestions], indent=2)
