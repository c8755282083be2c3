"""Stall diagnostics on hover: the static timeline says when an instruction issues and why it waits."""

from __future__ import annotations

from paths import TRITON_CORPUS

from sass_lsp.ide.index import build_index
from sass_lsp.ide.timeline_view import kernel_timeline

TEXT = (TRITON_CORPUS / "triton_add.cuasm").read_text()
LINES = TEXT.split("\n")


def line_of(fragment: str) -> int:
    return next(i for i, line in enumerate(LINES) if fragment in line)


def test_consumer_of_a_load_waits_on_its_scoreboard_and_names_the_load() -> None:
    fadd = line_of("FADD R12, R12, R16")
    ldg = line_of("@!P0 LDG.E.128 R12, desc[UR4][R22.64]")
    md = kernel_timeline(build_index(TEXT), fadd, "sm_90").markdown(fadd)
    assert md is not None and md.startswith("**Issue timeline**")
    assert f"SB2 set by line {ldg + 1}" in md and "waits **" in md


def test_no_timeline_outside_kernels_or_for_unknown_arches() -> None:
    index = build_index(TEXT)
    assert kernel_timeline(index, 0, "sm_90") is None
    assert kernel_timeline(index, line_of("FADD R12, R12, R16"), "sm_42") is None
