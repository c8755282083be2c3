"""``screen`` and ``beam`` with ``overlap=True`` draw the next candidate while one is measured: they must
measure the same candidates in the same order, with the same log and budget, as the sequential loop, and
the two must actually run at once."""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sass_lsp.schedule.search import Candidate, Measured, SearchLog, beam, schedule_key, screen

EXAMPLES = Path(__file__).resolve().parents[1] / "sass_lsp" / "examples"


def lines(moves: str) -> str:
    return "".join(f"[B------:R-:W-:-:S01] /*{i:04x}*/ MOV{c} ;\n" for i, c in enumerate(moves))


def moves_of(text: str) -> str:
    return "".join(line.split()[2][3:] for line in text.splitlines())


def speedup_of(text: str) -> float:
    """A fixed pseudo-random speedup per schedule (0.97..1.03), so parents change from round to round."""
    return 0.97 + hashlib.sha256(text.encode()).digest()[0] / 255 * 0.06


class StagedMeasure:
    """A measure split like ``GpuMeasure``: ``prepare`` may run ahead in the helper thread, ``finish`` runs
    in the search's thread in order and records what it measured (the log the test compares)."""

    def __init__(self, sleep_s: float = 0.0, prepare_s: float = 0.0) -> None:
        self.sleep_s, self.prepare_s = sleep_s, prepare_s
        self.log: list[tuple[str, str]] = []
        self.prepared: list[str] = []
        self.main = threading.get_ident()

    def prepare(self, text: str) -> tuple[str, str]:
        time.sleep(self.prepare_s)
        self.prepared.append(text)
        return text, schedule_key(text)

    def finish(self, prepared: tuple[str, str]) -> Measured:
        assert threading.get_ident() == self.main  # the GPU side stays in the search's thread
        text, key = prepared
        time.sleep(self.sleep_s)  # the worker request: the GIL is free
        m = moves_of(text)
        self.log.append((key, m))
        if "x" in m:
            return Measured(key, "mismatch", None, seconds=0.5)
        s = speedup_of(text)
        return Measured(key, "match", s, s - 0.004, s + 0.004, seconds=1.0)

    def __call__(self, text: str) -> Measured:
        return self.finish(self.prepare(text))


class Expander:
    """Per text, a fixed stream of children, some repeated (the loop skips those already seen), some
    streams finite; records which thread drew from which stream and checks no two ever draw at once."""

    def __init__(self, draw_s: float = 0.0, limit: int = 12) -> None:
        self.draw_s, self.limit = draw_s, limit
        self.busy = threading.Lock()
        self.made: list[str] = []

    def __call__(self, text: str) -> Iterator[Candidate]:
        self.made.append(moves_of(text))
        rng = random.Random(moves_of(text))
        n = self.limit if len(moves_of(text)) % 3 else self.limit // 3  # some parents run dry early
        for _ in range(n):
            assert self.busy.acquire(blocking=False), "two threads in the proposer at once"
            try:
                time.sleep(self.draw_s)
                c = rng.choice("aabx")
            finally:
                self.busy.release()
            yield Candidate(lines(moves_of(text) + c), "test", (c,), predicted=1.0)


def trace(log: SearchLog) -> list[tuple[Any, ...]]:
    return [(t.candidate, t.result, t.spent) for t in log.trials]


@pytest.mark.parametrize("budget", [0.0, 0.4, 3.0, 7.5, 20.0, 60.0, 200.0])
@pytest.mark.parametrize(("width", "per_parent"), [(1, 1), (2, 3), (3, 4)])
def test_overlapped_beam_measures_what_the_sequential_one_does(budget: float, width: int, per_parent: int):
    runs = {}
    for overlap in (False, True):
        measure, expand, trials = StagedMeasure(), Expander(), []
        log = beam(
            expand,
            lines(""),
            measure,
            budget,
            width=width,
            per_parent=per_parent,
            on_trial=trials.append,
            overlap=overlap,
        )
        assert trials == log.trials
        runs[overlap] = (trace(log), measure.log, log.spent, log.left)
    assert runs[True] == runs[False]
    sequential_trace, _, spent, left = runs[False]
    # the budget semantics: stop once it is spent, the last one may overrun it
    assert left <= 0 or len(sequential_trace) < budget
    assert all(t[2] - t[1].seconds < budget for t in sequential_trace)
    assert spent == 0.0 or left > -1.0


@pytest.mark.parametrize("budget", [0.0, 1.0, 4.5, 9.0, 100.0])
def test_overlapped_screen_measures_what_the_sequential_one_does(budget: float) -> None:
    def candidates() -> Iterator[Candidate]:
        rng = random.Random(7)
        for _ in range(30):  # repeats among them: measured once each
            yield Candidate(lines("".join(rng.choice("abx") for _ in range(3))), "test")

    runs = {}
    for overlap in (False, True):
        measure, seen = StagedMeasure(), {schedule_key(lines("aaa"))}
        log = screen(candidates(), measure, budget, seen=seen, overlap=overlap)
        runs[overlap] = (trace(log), measure.log, log.spent, sorted(seen))
    assert runs[True] == runs[False]


def test_a_candidate_drawn_ahead_but_not_measured_is_not_seen_nor_lost() -> None:
    """At the end of a parent's turn the helper draws from the next stream; that draw must wait, unmarked,
    for the stream's next use. With a plain function as measure nothing is prepared ahead."""
    measure = StagedMeasure()
    log = beam(Expander(), lines(""), measure, 9.0, width=2, per_parent=2)
    measured = [moves_of(t.candidate.text) for t in log.trials]
    assert len(measured) == len(set(measured))  # nothing measured twice, nothing the sequential loop skips
    assert measure.log == [(t.candidate.key, moves_of(t.candidate.text)) for t in log.trials]
    # at most the one draw made after the budget ran out was prepared and dropped
    assert len(measure.prepared) - len(log.trials) in (0, 1)
    plain = beam(Expander(), lines(""), lambda text: StagedMeasure()(text), 9.0, width=2, per_parent=2)
    assert [t.candidate for t in plain.trials] == [t.candidate for t in log.trials]


@pytest.mark.slow
def test_overlap_runs_the_proposer_while_the_measure_waits() -> None:
    """Proposer 60 ms per draw plus 20 ms to prepare, measurement 80 ms: sequential is the sum (about
    160 ms per candidate), overlapped about the larger (80 ms)."""
    n, draw_s, prepare_s, gpu_s = 16, 0.06, 0.02, 0.08

    def expand(text: str) -> Iterator[Candidate]:
        for i in range(1, 1000):  # all distinct, all measured (1 budget second each)
            time.sleep(draw_s)
            yield Candidate(lines(moves_of(text) + "b" * i), "test", ("b",))

    walls = {}
    for overlap in (False, True):
        measure = StagedMeasure(sleep_s=gpu_s, prepare_s=prepare_s)
        t0 = time.perf_counter()
        log = beam(expand, lines(""), measure, float(n), width=0, per_parent=4, overlap=overlap)
        walls[overlap] = time.perf_counter() - t0
        assert len(log.trials) == n
    total = n * (draw_s + prepare_s + gpu_s)
    assert walls[False] >= total * 0.95
    assert walls[True] < 0.8 * total, walls


@pytest.mark.slow
def test_gpu_measure_logs_the_same_records_overlapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``GpuMeasure`` (real assembly, CI and log; the worker requests answered by a stand-in) under the
    overlapped beam writes the sequential beam's log, record for record. The stand-in's requests take a
    fixed 10 ms on GpuMeasure's clock, so both runs spend the budget alike."""
    from sass_lsp.cuasm import parse_cuasm, write_cuasm
    from sass_lsp.cuasm.assembler import module_arch
    from sass_lsp.gpu import measure as measure_mod
    from sass_lsp.gpu.measure import GpuMeasure
    from sass_lsp.gpu.runner import Reply
    from sass_lsp.gpu.spec import load_spec
    from sass_lsp.schedule.search import random_candidates

    class Clock:
        now = 0.0

        def monotonic(self) -> float:
            return self.now

        def time(self) -> float:
            return 0.0

    clock = Clock()
    monkeypatch.setattr(measure_mod, "time", clock)

    class Runner:
        def verify(self, orig: bytes, edit: bytes, spec: object, seeds: list[int]) -> Reply:
            time.sleep(0.01)
            clock.now += 0.01
            bad = hashlib.sha256(edit).digest()[0] < 40  # some candidates "mismatch"
            return Reply(True, {"status": "mismatch" if bad else "match"})

        def time(self, orig: bytes, edit: bytes, spec: object, *, rounds: int, **_: object) -> Reply:
            time.sleep(0.01)
            clock.now += 0.01
            d = hashlib.sha256(edit).digest()
            orig_ms = [1.0 + (d[i] - 128) / 1e5 for i in range(rounds)]
            edit_ms = [o / (0.98 + d[20] / 255 * 0.04) for o in orig_ms]
            blocks = [b for b in range(4) for _ in range(rounds // 4)]
            raw = {"orig_ms": orig_ms, "edit_ms": edit_ms, "round_blocks": blocks, "batch": 4}
            return Reply(True, {"status": "ok", **raw})

    cubin = (EXAMPLES / "triton_add.cubin").read_bytes()
    spec = load_spec(EXAMPLES / "triton_add.launch.toml")
    text = write_cuasm(cubin, source_name="triton_add.cubin")
    arch = module_arch(parse_cuasm(text)[0])

    def expand(t: str) -> Iterator[Candidate]:
        return random_candidates(t, arch, random.Random(schedule_key(t)), kernel=spec.kernel, max_moves=3)

    logs = {}
    for overlap in (False, True):
        path, clock.now = tmp_path / f"{overlap}.jsonl", 0.0
        measure = GpuMeasure(Runner(), cubin, spec, "k", log_path=path, original_text=text)  # type: ignore[arg-type]
        log = beam(expand, text, measure, 0.2, width=2, per_parent=2, overlap=overlap)
        records = [json.loads(x) for x in path.read_text().splitlines()]
        logs[overlap] = (trace(log), records, measure.calls)
        assert measure.calls == len(log.trials) > 4
    assert logs[True] == logs[False]
