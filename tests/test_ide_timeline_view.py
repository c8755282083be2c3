"""Stall diagnostics on hover: the static timeline says when an instruction issues and why it waits."""

from __future__ import annotations

import pytest
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


def with_new_label() -> list[str]:
    """triton_add with a label typed just above ``.L_x_0:``: the stretch between the two labels holds no
    instruction (the unedited file has such stretches too: before ``.text.add_kernel:``, after
    ``.L_x_3:``)."""
    at = line_of(".L_x_0:")
    return [*LINES[:at], "  .L_new:", *LINES[at:]]


@pytest.mark.parametrize("lines", [LINES, with_new_label()], ids=["as_disassembled", "new_label"])
def test_stretches_without_instructions_have_no_issues_and_log_nothing(lines: list[str], caplog) -> None:
    """Such stretches raised ``zip() argument 2 is longer than argument 1`` in the CFG builder, logged as a
    traceback by the server at every open and edit."""
    index = build_index(lines)
    fadd = lines.index(LINES[line_of("FADD R12, R12, R16")])
    kernel = index.kernel_at(fadd)
    assert kernel is not None
    with caplog.at_level("WARNING", logger="sass_lsp.ide.timeline_view"):
        timeline = kernel_timeline(index, kernel.section.line, "sm_90")
        assert timeline is not None
        for _ in timeline.fill_steps():
            pass
    assert not caplog.records, [r.getMessage() for r in caplog.records]
    assert timeline.markdown(fadd) is not None  # the stretches with instructions keep their timeline
