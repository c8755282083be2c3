"""Budgeted search over schedules: screen candidates with an injected measurement until the budget is spent.

The measurement is a function ``measure(candidate_text) -> Measured`` (GPU time from
:mod:`sass_lsp.gpu.measure` in ``optimize`` and the evaluation, or the static cost model in tests), so this
module stays pure: it never imports the GPU code or torch. Strategies:

- :func:`screen` — measure candidates from any iterator (the policy's rollouts, random legal moves, greedy
  prefixes) in order, skipping duplicates, until the budget is spent;
- :func:`annealing` — simulated annealing driven by the measurements themselves (the GPU-time baseline);
- :func:`beam` — a beam over measured schedules: the proposer (the policy in ``optimize``) expands the
  original and the schedules measured surest faster, so gains found one move at a time can compound.

Candidates are whole ``.cuasm`` texts: the original with the game's edits applied (:func:`apply_edits`).

``screen`` and ``beam`` overlap the proposer with the measurement (``overlap=True``): while candidate k is
measured (the GPU request blocks on the worker's pipe, releasing the GIL), one helper thread makes the
candidate the sequential loop would take next and runs the measure's CPU-side ``prepare`` on it (a measure
with ``prepare``/``finish``, like ``GpuMeasure``: the assembly). The measured candidates, their order, the
log and the budget (the last one may overrun it) are those of the sequential loop for the same
measurements: the helper only runs a pull the loop makes next if budget is left; a pull that ends up not
taken stays with its stream, and one made after the budget is spent is dropped."""

from __future__ import annotations

import copy
import hashlib
import math
import random
import re
import zlib
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

_ADDRESS = re.compile(r"/\*[0-9a-fA-F]+\*/")


@dataclass(frozen=True, repr=False)
class Candidate:
    """A schedule to measure: its whole ``.cuasm`` text, kept zlib-compressed because a search holds every
    candidate it measured (a 300 s walk ~1,200, 94-241 kB of text each: ``benchmarks/annealing_memory.py``).
    """

    packed: bytes  # zlib of the text; read it as ``text``
    source: str  # which strategy proposed it ("policy", "random", "greedy", "annealing")
    moves: tuple[str, ...] = ()
    predicted: float | None = None  # predicted speedup (cost model), when the proposer has one
    key: str = field(init=False, compare=False)  # schedule_key(text), set once: the searches ask often

    def __init__(
        self, text: str, source: str, moves: tuple[str, ...] = (), predicted: float | None = None
    ) -> None:
        object.__setattr__(self, "packed", zlib.compress(text.encode(), 1))  # ~1 ms for 241 kB, 6.5x smaller
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "moves", moves)
        object.__setattr__(self, "predicted", predicted)
        object.__setattr__(self, "key", schedule_key(text))

    @property
    def text(self) -> str:
        return zlib.decompress(self.packed).decode()

    def with_moves(self, moves: tuple[str, ...]) -> Candidate:
        other = copy.copy(self)  # the packed text and key shared, not compressed again
        object.__setattr__(other, "moves", moves)
        return other

    def __repr__(self) -> str:
        return f"Candidate({self.key}, {self.source!r}, {len(self.moves)} moves, predicted={self.predicted})"


@dataclass(frozen=True)
class Measured:
    key: str
    verdict: str  # "match" (outputs identical, timed), "mismatch", "fault", "asm_error", ...
    speedup: float | None  # median(original) / median(candidate); None when not timed
    low: float | None = None  # CI of the speedup
    high: float | None = None
    seconds: float = 0.0  # budget it used (GPU seconds for GPU measurements)

    @property
    def accepted(self) -> bool:
        """Outputs matched the original: only these may ever be suggested."""
        return self.verdict == "match" and self.speedup is not None


Measure = Callable[[str], Measured]


@dataclass
class Trial:
    candidate: Candidate
    result: Measured
    spent: float  # budget spent when this trial finished


@dataclass
class SearchLog:
    budget: float
    trials: list[Trial] = field(default_factory=list)
    spent: float = 0.0

    @property
    def left(self) -> float:
        return self.budget - self.spent

    def add(self, candidate: Candidate, result: Measured) -> Trial:
        self.spent += result.seconds
        trial = Trial(candidate, result, self.spent)
        self.trials.append(trial)
        return trial

    def best(self) -> Trial | None:
        """The accepted trial surest faster: measured faster, then the highest lower CI bound (the speedup
        when a measure gives no CI). Not the highest speedup: over a hundred screened candidates the
        maximum is mostly noise (the winner's curse); on triton_matmul the highest screened speedup once
        confirmed at 1.0051, the highest lower bound at 1.0145."""
        ok = [t for t in self.trials if t.result.accepted]
        return max(ok, key=_surety, default=None)


def _surety(trial: Trial) -> tuple[bool, float]:
    speedup = trial.result.speedup or 0.0
    low = trial.result.low
    return speedup > 1.0, speedup if low is None else low


LineEdit = tuple[int, int, list[str]]  # (first line, last line, new lines): 1-based, inclusive


def schedule_key(text: str) -> str:
    """Identity of a schedule: a hash of its instruction lines (control field and text), not of comments."""
    h = hashlib.sha256()
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            h.update(" ".join(_ADDRESS.sub(" ", stripped).split()).encode() + b"\n")
    return h.hexdigest()[:16]


def apply_edits(text: str, edits: Sequence[LineEdit]) -> str:
    """``text`` with each (first_line, last_line, new_lines) edit applied (1-based, inclusive, disjoint)."""
    lines = text.splitlines()
    for first, last, new in sorted(edits, key=lambda e: e[0], reverse=True):
        lines[first - 1 : last] = new
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def screen(
    candidates: Iterable[Candidate],
    measure: Measure,
    budget: float,
    *,
    on_trial: Callable[[Trial], None] | None = None,
    seen: set[str] | None = None,
    overlap: bool = True,
) -> SearchLog:
    """Measure distinct candidates in order until the budget is spent (the last one may overrun it).

    ``overlap``: the next distinct candidate is drawn (and prepared) while one is measured; ``candidates``
    may then have been advanced past the last one measured when the budget runs out."""
    prepare, finish = _stages(measure)
    log = SearchLog(budget)
    seen = set() if seen is None else seen
    stream = _Stream(lambda: iter(candidates))
    with _Ahead(overlap) as ahead:
        while log.left > 0:
            got = ahead.take(stream, seen, prepare)
            if got is None:
                break
            cand, prepared = got
            seen.add(cand.key)
            ahead.start(stream, seen, prepare)
            trial = log.add(cand, finish(prepared))
            if on_trial is not None:
                on_trial(trial)
    return log


def annealing(
    propose: Callable[[str, random.Random], Candidate | None],
    original: str,
    measure: Measure,
    budget: float,
    rng: random.Random,
    *,
    temperature: float = 0.01,
    cooling: float = 0.9,
    max_misses: int = 50,
    max_restarts: int = 8,
    on_trial: Callable[[Trial], None] | None = None,
    start: tuple[str, float] | None = None,
    overlap: bool = False,
) -> SearchLog:
    """Simulated annealing on measured speedup: ``propose(text, rng)`` returns a neighbour of ``text``.
    The walk starts from ``start`` (a schedule of the original and its measured speedup), else the original.

    A neighbour is accepted if it is faster than the current schedule, or with probability
    exp(Δspeedup / T); T shrinks by ``cooling`` after each neighbour judged. Rejected outputs are never
    accepted. A neighbour measured before is judged on that measurement and costs no budget (an early
    version measured one schedule four times). After ``max_misses`` proposals in a row that measure nothing
    new the search is stuck (T has cooled to a greedy walk whose neighbours are all measured, which once
    left half the budget unspent). It then restarts with T reset, alternately from the schedule measured
    surest faster and from the original, and ends after ``max_restarts`` restarts in a row that measure
    nothing new (the neighbourhoods it can reach are measured).

    ``overlap``: while a neighbour is measured, the helper thread proposes (and prepares) the next one as if
    the walk stays where it is after a draw of ``rng`` (the usual outcome: a slower neighbour turned down);
    when it does, that proposal is the sequential walk's, else it is dropped. Only for a ``propose`` whose
    answer depends on nothing but its text and ``rng`` (not on ``on_trial``'s measurements): the walk and
    its log are then those of ``overlap=False``.
    """
    prepare, finish = _stages(measure)
    log = SearchLog(budget)
    current, current_speed = start or (original, 1.0)
    t = temperature
    measured: dict[str, Measured] = {schedule_key(original): Measured("", "match", 1.0)}
    measured.setdefault(schedule_key(current), Measured("", "match", current_speed))
    misses = 0
    idle_restarts = 0  # restarts in a row that have measured nothing new yet
    ahead: _TurnedDown | None = None  # the next proposal, made while the last neighbour was measured
    pool = ThreadPoolExecutor(1, thread_name_prefix="anneal-ahead") if overlap else None
    try:
        while log.left > 0:
            if misses >= max_misses:
                if idle_restarts == max_restarts:
                    break
                best = log.best()
                if idle_restarts % 2 == 0 and best is not None and (best.result.speedup or 0.0) > 1.0:
                    current, current_speed = best.candidate.text, best.result.speedup or 0.0
                else:
                    current, current_speed = original, 1.0
                t, misses = temperature, 0
                idle_restarts += 1
            if ahead is not None and ahead.holds(current, rng):
                cand, prepared = ahead.result(rng)
            else:
                cand = propose(current, rng)
                prepared = None
            ahead = None
            if cand is None:
                misses += 1
                continue
            text = cand.text  # unpacked once: measured, and the walk's next state if accepted
            res = measured.get(cand.key)
            if res is None:
                misses = idle_restarts = 0
                ready = prepare(text) if prepared is None else prepared
                if pool is not None:
                    ahead = _TurnedDown.start(pool, propose, prepare, current, rng, measured)
                trial = log.add(cand, finish(ready))
                if on_trial is not None:
                    on_trial(trial)
                res = measured[cand.key] = trial.result
            else:
                misses += 1
            if res.accepted:
                delta = (res.speedup or 0.0) - current_speed
                if delta > 0 or rng.random() < math.exp(delta / max(t, 1e-9)):
                    current, current_speed = text, res.speedup or 0.0
            t *= cooling
    finally:  # the helper is done before the walk returns or raises (OutOfTime): one proposer user at a time
        if pool is not None:
            pool.shutdown(wait=True)
    return log


@dataclass
class _TurnedDown:
    """The proposal annealing's next step makes if the neighbour being measured is turned down after one draw
    of the walk's ``rng``: made from ``text`` with a copy of ``rng`` advanced by that draw, in a helper
    thread, and its measurement prepared unless its schedule was measured before."""

    text: str
    state: object  # the walk's rng state the proposal assumed (after the draw)
    future: Future

    @classmethod
    def start(
        cls,
        pool: ThreadPoolExecutor,
        propose: Callable[[str, random.Random], Candidate | None],
        prepare: Callable[[str], Any],
        text: str,
        rng: random.Random,
        measured: Container[str],  # the walk's keys measured so far (read only, as the walk goes on)
    ) -> _TurnedDown:
        ahead = copy.deepcopy(rng)
        ahead.random()
        state = ahead.getstate()

        def run() -> tuple[Candidate | None, Any, object]:
            cand = propose(text, ahead)
            ready = prepare(cand.text) if cand is not None and cand.key not in measured else None
            return cand, ready, ahead.getstate()

        return cls(text, state, pool.submit(run))

    def holds(self, text: str, rng: random.Random) -> bool:
        """Whether the walk stands where this proposal assumed: the same text, the rng after that draw."""
        if text != self.text or rng.getstate() != self.state:
            self.future.result()  # the helper is done before the walk proposes again (one thread at a time)
            return False
        return True

    def result(self, rng: random.Random) -> tuple[Candidate | None, Any]:
        """The proposal and its prepared measurement (None: prepare it now); ``rng`` continues after it."""
        cand, ready, state = self.future.result()
        rng.setstate(state)
        return cand, ready


Search = Callable[..., SearchLog]  # (measure, budget, *, on_trial=None) -> SearchLog


def chained(
    first: Search, then: Callable[[tuple[str, float] | None, str | None], Search], share: float
) -> Search:
    """``first`` for ``share`` of the budget, then ``then(start, source)`` for the rest, where ``start`` is
    the schedule ``first`` measured surest faster (text, speedup) and ``source`` its candidate's source (both
    None if none was faster): one log, its trials in order and their GPU seconds counted from the start of
    ``first``."""

    def search(
        measure: Measure, budget: float, *, on_trial: Callable[[Trial], None] | None = None
    ) -> SearchLog:
        log = SearchLog(budget)

        def record(trial: Trial) -> None:
            kept = log.add(trial.candidate, trial.result)
            if on_trial is not None:
                on_trial(kept)

        head = first(measure, budget * share, on_trial=record)
        best = head.best()
        faster = best is not None and best.result.accepted and (best.result.speedup or 0.0) > 1.0
        start = (best.candidate.text, best.result.speedup or 1.0) if faster else None
        then(start, best.candidate.source if faster else None)(measure, budget - log.spent, on_trial=record)
        return log

    return search


def beam(
    expand: Callable[[str], Iterator[Candidate]],
    original: str,
    measure: Measure,
    budget: float,
    *,
    width: int = 3,
    per_parent: int = 4,
    on_trial: Callable[[Trial], None] | None = None,
    overlap: bool = True,
) -> SearchLog:
    """Beam search on measured speedup: each round takes ``per_parent`` new candidates from
    ``expand(parent)`` for each parent — the original and the ``width`` schedules measured surest faster so
    far (highest lower CI bound above 1) — so measured gains can compound (a schedule one good move away
    from another good one). Every measurement is against the original, so rounds compare. A parent's
    stream lives across rounds (a parent kept for several rounds gives new candidates each time); the search
    ends when the budget is spent or no parent's stream gives anything new. ``overlap``: the next
    candidate is drawn from its stream (and prepared) while one is measured; the results are the same."""
    prepare, finish = _stages(measure)
    log = SearchLog(budget)
    root = schedule_key(original)
    seen = {root}
    streams: dict[str, _Stream] = {}
    measured_of: dict[str, Candidate] = {root: Candidate(original, "original")}  # parents' texts, packed

    def stream_of(parent: str) -> _Stream:
        if parent not in streams:
            streams[parent] = _Stream(partial(expand, measured_of[parent].text))
        return streams[parent]

    with _Ahead(overlap) as ahead:
        while log.left > 0:
            faster = sorted(
                (t for t in log.trials if t.result.accepted and (t.result.low or 0.0) > 1.0),
                key=lambda t: -(t.result.low or 0.0),
            )
            parents = [root] + [t.candidate.key for t in faster[:width]]
            new = 0
            for i, parent in enumerate(parents):
                taken = 0
                while taken < per_parent and log.left > 0:
                    got = ahead.take(stream_of(parent), seen, prepare)
                    if got is None:
                        break
                    cand, prepared = got
                    seen.add(cand.key)
                    cand = cand.with_moves(measured_of[parent].moves + cand.moves)
                    measured_of[cand.key] = cand
                    taken += 1
                    # The loop's next pull if budget is left: this parent's stream again, the next parent's,
                    # or, the round over, the original's (every round starts with it).
                    following = parent if taken < per_parent else (parents[i + 1 : i + 2] or [root])[0]
                    ahead.start(stream_of(following), seen, prepare)
                    trial = log.add(cand, finish(prepared))
                    if on_trial is not None:
                        on_trial(trial)
                new += taken
            if not new:
                break
    return log


# ---------------------------------------------------------------- overlap of proposer and measurement


def _stages(measure: Measure) -> tuple[Callable[[str], Any], Callable[[Any], Measured]]:
    """``measure`` as (prepare, finish): its own split when it has one (CPU work that may run ahead in the
    helper thread, then the rest), else nothing ahead and all of it in ``finish``."""
    prepare, finish = getattr(measure, "prepare", None), getattr(measure, "finish", None)
    if callable(prepare) and callable(finish):
        return prepare, finish
    return (lambda text: text), measure


Drawn = tuple[Candidate, Any]  # a candidate and its prepared measurement


class _Stream:
    """A candidate iterator made on first use, which one thread at a time draws from; a draw made ahead is
    kept here for the stream's next use, so running ahead never loses or reorders a candidate."""

    def __init__(self, make: Callable[[], Iterator[Candidate]]) -> None:
        self._make = make
        self._it: Iterator[Candidate] | None = None
        self.ahead: Future[Drawn | None] | None = None

    def draw(self, seen: set[str], prepare: Callable[[str], Any]) -> Drawn | None:
        """The next candidate whose key is not in ``seen``, prepared; None when the iterator is spent."""
        if self._it is None:
            self._it = self._make()
        for cand in self._it:
            if cand.key not in seen:
                return cand, prepare(cand.text)
        return None


class _Ahead:
    """At most one draw running ahead, in one helper thread (so a proposer's generators, games and torch
    calls are only ever used by one thread at a time); ``enabled=False`` draws everything in the caller's
    thread, when it is needed."""

    def __init__(self, enabled: bool) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="search-ahead") if enabled else None
        self._running: Future[Drawn | None] | None = None

    def __enter__(self) -> _Ahead:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)  # a draw still running finishes; its result is dropped

    def start(self, stream: _Stream, seen: set[str], prepare: Callable[[str], Any]) -> None:
        """Draw ``stream``'s next candidate in the helper thread. The caller must not change ``seen`` until
        its next ``take``: the helper reads it (a key seen now is still seen then, so skipping it is safe)."""
        if self._pool is None or stream.ahead is not None:
            return
        stream.ahead = self._running = self._pool.submit(stream.draw, seen, prepare)

    def take(self, stream: _Stream, seen: set[str], prepare: Callable[[str], Any]) -> Drawn | None:
        """``stream``'s next candidate not in ``seen``: the one drawn ahead, if any, else drawn now."""
        if self._running is not None:  # no draw of any stream runs while this thread draws
            self._running.exception()
            self._running = None
        if stream.ahead is not None:
            ahead, stream.ahead = stream.ahead, None
            got = ahead.result()  # a proposer's error surfaces here, where the sequential loop would see it
            if got is None or got[0].key not in seen:
                return got
        return stream.draw(seen, prepare)


def take(iterator: Iterator[Candidate], n: int) -> list[Candidate]:
    return [c for _, c in zip(range(n), iterator, strict=False)]


# ---------------------------------------------------------------- candidate proposers (cost model, no GPU)


def game_candidate(game, text: str, source: str) -> Candidate:  # noqa: ANN001  (a ReorderGame)
    """The game's current state as a candidate: ``text`` (the game's source) with its edits applied."""
    edits = game.edits(text.splitlines())
    moves = tuple(f"node {idx}: {a} -> {b}" for idx, a, b in game.moves)
    return Candidate(apply_edits(text, edits), source, moves, game.cost_original / game.cost)


def random_candidates(
    text: str, arch: str, rng: random.Random, *, kernel: str | None = None, max_moves: int = 8
):
    """Endless random legal reorderings (1..max_moves moves from the original): the random baseline."""
    from sass_lsp.schedule.baselines import random_legal
    from sass_lsp.schedule.game import ReorderGame

    game = ReorderGame.from_text(text, arch, kernel=kernel)
    start = game.snapshot()
    while True:
        game.restore(start)
        random_legal(game, rng.randint(1, max_moves), rng)
        yield game_candidate(game, text, "random")


def greedy_candidates(text: str, arch: str, *, kernel: str | None = None, max_steps: int = 32):
    """Hill climbing on the cost model (best single move until none helps): its final schedule first, then
    its shorter prefixes, best predicted first. The greedy list-scheduling baseline."""
    from sass_lsp.schedule.baselines import greedy_cost
    from sass_lsp.schedule.game import ReorderGame

    game = ReorderGame.from_text(text, arch, kernel=kernel)
    states = []
    for _ in range(max_steps):
        before = game.cost
        greedy_cost(game, 1, candidates_per_step=256)
        if game.cost >= before:
            break
        states.append(game_candidate(game, text, "greedy"))
    yield from sorted(states, key=lambda c: -(c.predicted or 0.0))


def neighbour(
    original: str,
    arch: str,
    kernel: str | None = None,
    pick: Callable[[Any, random.Random], int] | None = None,
    source: str = "annealing",
):
    """``propose(text, rng)`` for :func:`annealing`: one legal move away from ``text``, a schedule
    ``propose`` returned before (or the original). One game of ``original`` plays every chain, so every
    move is legal against ptxas's order and repaired against it (a game built from an edited text would
    take that text for ptxas's: :mod:`.canonical`). ``pick(game, rng)`` chooses the move, a row of
    ``game.candidates()``: uniformly by default, the policy's distribution in
    :func:`sass_lsp.policy.candidates.policy_pick`."""
    from sass_lsp.schedule.game import ReorderGame

    game = ReorderGame.from_text(original, arch, kernel=kernel)
    states = {schedule_key(original): game.snapshot()}  # every schedule proposed: annealing restarts

    def propose(text: str, rng: random.Random) -> Candidate | None:
        key = schedule_key(text)
        if key not in states:
            raise KeyError(f"schedule {key} is neither the original nor one proposed before")
        game.restore(states[key])
        n = len(game.candidates())
        if not n:
            return None
        game.apply(rng.randrange(n) if pick is None else pick(game, rng))
        cand = game_candidate(game, original, source)
        states.setdefault(cand.key, game.snapshot())
        return cand

    return propose
