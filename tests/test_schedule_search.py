"""The budgeted searches of ``schedule.search`` on synthetic schedules whose measured speedup is known."""

from __future__ import annotations

import random
from collections.abc import Iterator

from sass_lsp.schedule.search import Candidate, Measured, SearchLog, annealing, beam, schedule_key


def lines(moves: str) -> str:
    """A schedule as instruction lines, one per move letter (each line is part of its key)."""
    return "".join(f"[B------:R-:W-:-:S01] /*{i:04x}*/ MOV{c} ;\n" for i, c in enumerate(moves))


def moves_of(text: str) -> str:
    return "".join(line.split()[2][3:] for line in text.splitlines())


def measure(text: str) -> Measured:
    """'a' moves gain 1% each, 'b' moves lose 1%, 'x' moves break the outputs; CI ±0.2%."""
    m = moves_of(text)
    if "x" in m:
        return Measured(schedule_key(text), "mismatch", None, seconds=1.0)
    s = 1.0 + 0.01 * m.count("a") - 0.01 * m.count("b")
    return Measured(schedule_key(text), "match", s, s - 0.002, s + 0.002, seconds=1.0)


def expand(text: str) -> Iterator[Candidate]:
    base = moves_of(text)
    for c in "bxab":
        yield Candidate(lines(base + c), "test", (c,))


def test_beam_compounds_measured_gains_within_the_budget() -> None:
    log = beam(expand, lines(""), measure, budget=20.0, width=2, per_parent=2)
    assert log.spent == 20.0 and len(log.trials) == 20
    keys = [t.candidate.key for t in log.trials]
    assert len(set(keys)) == len(keys) and schedule_key(lines("")) not in keys
    best = log.best()
    assert best is not None and moves_of(best.candidate.text).count("a") >= 3
    # a child's moves are its parent's plus its own, so a report names every move of the schedule
    assert best.candidate.moves == tuple(moves_of(best.candidate.text))
    assert all(not t.result.accepted for t in log.trials if "x" in moves_of(t.candidate.text))


def test_beam_never_expands_a_schedule_measured_slower_or_wrong() -> None:
    log = beam(expand, lines(""), measure, budget=30.0, width=3, per_parent=4)
    for t in log.trials:
        parent = moves_of(t.candidate.text)[:-1]
        # every parent is the original or a schedule measured surely faster ('a' only: 'b' and 'x' never)
        assert set(parent) <= {"a"}


def test_beam_ends_when_no_parent_gives_anything_new() -> None:
    def finite(text: str) -> Iterator[Candidate]:
        if not moves_of(text):
            yield Candidate(lines("b"), "test", ("b",))

    log = beam(finite, lines(""), measure, budget=100.0)
    assert len(log.trials) == 1 and log.spent == 1.0


def test_best_is_the_trial_surest_faster_not_the_fastest_screened() -> None:
    log = SearchLog(budget=10.0)
    for moves, speedup, low in (
        ("b", 0.999, 0.998),
        ("a", 1.012, 0.990),
        ("aa", 1.008, 1.004),
        ("x", 1.0, 1.0),
    ):
        log.add(
            Candidate(lines(moves), "test"), Measured(lines(moves), "match", speedup, low, speedup + 0.01)
        )
    log.add(Candidate(lines("bb"), "test"), Measured("k", "mismatch", None, seconds=1.0))
    best = log.best()
    # 'a' screened fastest but its CI reaches below 1; 'aa' is surely faster; 'x' (low 1.0) is no faster
    assert best is not None and moves_of(best.candidate.text) == "aa"
    # a measure without a CI (the cost model) ranks by its speedup; only accepted trials count
    bare = SearchLog(budget=3.0)
    for moves, speedup in (("a", 1.01), ("aa", 1.02)):
        bare.add(Candidate(lines(moves), "test"), Measured("k", "match", speedup))
    assert moves_of(bare.best().candidate.text) == "aa"
    assert SearchLog(budget=1.0).best() is None


def test_annealing_measures_each_schedule_once_and_ends_when_nothing_new_is_left() -> None:
    """Neighbours: one letter more or one fewer, at most three: 15 schedules, 14 besides the original."""

    def propose(text: str, rng: random.Random) -> Candidate:
        m = moves_of(text)
        m = m[:-1] if len(m) == 3 or (m and rng.random() < 0.4) else m + rng.choice("ab")
        return Candidate(lines(m), "annealing", (m,))

    log = annealing(propose, lines(""), measure, 100.0, random.Random(4), temperature=0.5, cooling=0.99)
    keys = [t.candidate.key for t in log.trials]
    assert len(keys) == len(set(keys)) and 0 < len(keys) <= 14
    assert log.spent == len(keys) < 100.0  # ended by misses, with budget left: nothing was measured twice
    best = log.best()
    assert best is not None and moves_of(best.candidate.text) == "aaa"


def test_annealing_restarts_a_stuck_walk_instead_of_ending_with_budget_left() -> None:
    """Runs 19 and 21 ended at a local optimum whose neighbours were all measured, half their budget left
    (``max_restarts=0`` is that search). With restarts every walk measures more, never one schedule
    twice, and keeps the best."""

    def propose(text: str, rng: random.Random) -> Candidate:
        m = moves_of(text)
        m = m[:-1] if len(m) == 4 or (m and rng.random() < 0.25) else m + rng.choice("ab")
        return Candidate(lines(m), "annealing", (m,))

    for seed in range(10):
        stopped = annealing(
            propose, lines(""), measure, 25.0, random.Random(seed), max_misses=20, max_restarts=0
        )
        log = annealing(propose, lines(""), measure, 25.0, random.Random(seed), max_misses=20)
        keys = [t.candidate.key for t in log.trials]
        assert len(keys) == len(set(keys)) == log.spent <= 25.0
        assert stopped.spent < log.spent
        best = log.best()
        assert best is not None and moves_of(best.candidate.text) == "aaaa"


def test_a_candidate_keeps_its_text_packed_and_gives_it_back_exactly() -> None:
    import pickle
    from pathlib import Path

    import sass_lsp
    from sass_lsp.cuasm import write_cuasm

    text = write_cuasm((Path(sass_lsp.__file__).parent / "examples/triton_add.cubin").read_bytes())
    cand = Candidate(text, "annealing", ("node 3: 4 -> 2",), 1.01)
    assert cand.text == text and cand.key == schedule_key(text)
    assert len(cand.packed) * 4 < len(text.encode())  # what a search holds per measured candidate
    moved = cand.with_moves(("node 1: 2 -> 0", *cand.moves))
    assert moved.text == text and moved.key == cand.key and moved.packed is cand.packed
    assert moved.moves == ("node 1: 2 -> 0", "node 3: 4 -> 2") and cand.moves == ("node 3: 4 -> 2",)
    again = pickle.loads(pickle.dumps(moved))  # Ray's fan-out ships candidates between processes
    assert again == moved and again.text == text and again.key == cand.key
    assert cand == Candidate(text, "annealing", ("node 3: 4 -> 2",), 1.01) != moved


def test_chained_runs_the_second_search_from_the_first_ones_best_on_one_log():
    """``chained``: the first search for its share of the budget, the second from its best schedule, one
    log whose GPU seconds count from the start (what ``optimize --moves reorder,control`` runs)."""
    from sass_lsp.schedule.search import Candidate, Measured, SearchLog, chained

    seen = []

    def fake(speedups: list[float], tag: str):
        def search(measure, budget, *, on_trial=None):
            log = SearchLog(budget)
            for i, s in enumerate(speedups):
                if log.left <= 0:
                    break
                t = log.add(Candidate(f"{tag}{i}", tag), Measured(f"{tag}{i}", "match", s, seconds=1.0))
                if on_trial:
                    on_trial(t)
            return log

        return search

    def then(start, source):
        seen.append((start, source))
        return fake([1.01, 1.03], "control")

    log = chained(fake([0.99, 1.02, 1.0, 1.0, 1.0], "policy"), then, 0.5)(None, 6.0)
    assert seen == [(("policy1", 1.02), "policy")]  # the first search's best, its speedup and source
    assert [t.candidate.source for t in log.trials] == ["policy"] * 3 + ["control"] * 2
    assert [t.spent for t in log.trials] == [1.0, 2.0, 3.0, 4.0, 5.0] and log.spent == 5.0
    seen.clear()
    chained(fake([0.99], "policy"), then, 0.5)(None, 4.0)
    assert seen == [(None, None)]  # nothing faster: the second search starts from the original


def test_annealing_overlapped_walks_as_the_sequential_one_and_uses_its_proposals_ahead() -> None:
    """``overlap=True``: the next proposal is made (and prepared) while a neighbour is measured, assuming
    the walk stays put; the walk, its log and its rng are those of the sequential loop, over many seeds, and
    neighbours measured after one turned down were proposed and prepared ahead (the measure's two stages
    show which)."""
    import threading

    def propose(text: str, rng: random.Random) -> Candidate:
        m = moves_of(text)
        m = m[:-1] if len(m) == 9 or (m and rng.random() < 0.3) else m + rng.choice("abbbx")
        return Candidate(lines(m), "annealing", (m,))

    class Staged:
        """``measure`` split as GpuMeasure is: prepare (CPU, may run ahead) and finish (the GPU)."""

        def __init__(self) -> None:
            self.measured = self.from_ahead = 0

        def prepare(self, text: str) -> tuple[str, bool]:
            return text, threading.current_thread() is not threading.main_thread()

        def finish(self, prepared: tuple[str, bool]) -> Measured:
            self.measured += 1
            self.from_ahead += prepared[1]
            return measure(prepared[0])

        def __call__(self, text: str) -> Measured:
            return self.finish(self.prepare(text))

    measured = from_ahead = 0
    for seed in range(12):
        walks = []
        for overlap in (False, True):
            rng, staged = random.Random(seed), Staged()
            log = annealing(propose, lines(""), staged, 40.0, rng, max_misses=10, overlap=overlap)
            walks.append(([(t.candidate.key, t.result.speedup) for t in log.trials], rng.random()))
            assert staged.from_ahead == 0 or overlap
        measured, from_ahead = measured + staged.measured, from_ahead + staged.from_ahead
        assert walks[0] == walks[1], seed
    assert 0 < from_ahead < measured  # made ahead after a turned-down neighbour; not after a move or a fault
