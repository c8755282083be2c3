"""Schedules derived from edited schedules are checked and repaired against the original (ptxas's order)."""

from __future__ import annotations

import gzip
import json
import random

import pytest
from paths import ROOT, TRITON_CORPUS

from sass_lsp.analysis.check import check_kernel
from sass_lsp.analysis.program import kernels_of
from sass_lsp.cuasm import parse_cuasm, write_cuasm
from sass_lsp.isa.semantics import load_semantics
from sass_lsp.schedule.canonical import OriginalOrders
from sass_lsp.schedule.cost import kernel_cost
from sass_lsp.schedule.search import Candidate, Measured, annealing, apply_edits, neighbour, random_candidates

RUN18 = ROOT / "benchmarks/results/reorder_measurements_h200_run18.jsonl.gz"
SEM = load_semantics("sm_90")


def _errors(text: str) -> list[str]:
    return [
        f"{f.line}: {f.code} {f.message}"
        for k in kernels_of(parse_cuasm(text)[0], SEM)
        for f in check_kernel(k, SEM)
        if f.severity == "error"
    ]


@pytest.mark.parametrize("name", ["triton_matmul", "rmsnorm_f32_4096", "triton_softmax"])
def test_schedules_made_from_the_original_come_back_unchanged(name: str) -> None:
    text = (TRITON_CORPUS / f"{name}.cuasm").read_text()
    schedules = OriginalOrders(text, "sm_90")
    for _, cand in zip(range(15), random_candidates(text, "sm_90", random.Random(5)), strict=False):
        assert schedules.canonical(cand) is cand


def test_what_faulted_on_the_h200_is_not_a_schedule_of_the_original() -> None:
    """Run 18 (annealing from edited texts, before this model): the 5 faulting candidates and the one it
    confirmed are orders that no legal moves from ptxas's order reach."""
    with gzip.open(RUN18, "rt") as fh:
        rows = [json.loads(line) for line in fh]
    original = next(r["text"] for r in rows if r["kind"] == "original")
    screened = [r for r in rows if r["kind"] == "screen"]
    confirmed = next(r["key"] for r in rows if r["kind"] == "confirm")
    schedules = OriginalOrders(original, "sm_90")
    faults = [r for r in screened if r["verdict"] == "fault"]
    assert len(faults) == 5
    for r in [*faults, next(r for r in screened if r["key"] == confirmed)]:
        text = apply_edits(original, [tuple(e) for e in r["edits"]])
        assert schedules.orders(text)  # a reordering of the original's instructions...
        assert schedules.canonical(Candidate(text, "annealing")) is None  # ...that its model forbids


def test_annealing_chains_stay_schedules_of_the_original_and_hazard_free() -> None:
    text = (TRITON_CORPUS / "rmsnorm_f32_4096.cuasm").read_text()
    (k0,) = kernels_of(parse_cuasm(text)[0], SEM)
    base = kernel_cost(k0, SEM)

    def cost_model(candidate: str) -> Measured:
        (k,) = kernels_of(parse_cuasm(candidate)[0], SEM)
        s = base / kernel_cost(k, SEM)
        return Measured("", "match", s, s, s, seconds=1.0)

    log = annealing(neighbour(text, "sm_90"), text, cost_model, 30.0, random.Random(2), temperature=0.05)
    schedules = OriginalOrders(text, "sm_90")
    assert len(log.trials) == 30
    chained = 0
    for t in log.trials:
        assert schedules.canonical(t.candidate) is t.candidate  # reachable, and repaired against ptxas
        assert _errors(t.candidate.text) == []
        chained += len(schedules.orders(t.candidate.text) or {}) > 0
    assert chained == 30


def test_an_edited_schedule_s_own_moves_are_checked_against_the_original() -> None:
    """A game built from an edited text treats it as ptxas's order; what it proposes is re-derived."""
    text = write_cuasm((TRITON_CORPUS / "triton_matmul.cubin").read_bytes())
    schedules = OriginalOrders(text, "sm_90")
    rng = random.Random(7)
    current, kept = text, 0
    for _ in range(6):
        nxt = next(random_candidates(current, "sm_90", rng, max_moves=3))
        got = schedules.canonical(nxt)
        if got is None:
            continue
        kept += 1
        assert _errors(got.text) == []
        assert schedules.canonical(got) is got  # repaired against ptxas: a fixed point
        current = got.text
    assert kept
