"""The schedule features in editor terms, in process, on real corpus kernels: the block repair action, the
hottest-loop lens, the stall hints, and the pure parts of the reorder suggestions (edits, arguments,
paths)."""

from __future__ import annotations

from pathlib import Path

import pytest
from paths import TRITON_CORPUS

from sass_lsp.analysis import check_module
from sass_lsp.cuasm.parser import parse_cuasm
from sass_lsp.ide import reorder, schedule_view
from sass_lsp.ide.index import build_index
from sass_lsp.ide.timeline_view import kernel_timeline

ADD = TRITON_CORPUS / "triton_add.cuasm"


def errors(text: str) -> list:
    return [f for f in check_module(parse_cuasm(text)[0], "sm_90") if f.severity == "error"]


def test_recompute_restores_the_waits_an_edit_removed() -> None:
    lines = ADD.read_text().split("\n")
    fadd = next(i for i, ln in enumerate(lines) if "FADD R12, R12, R16" in ln)
    lines[fadd] = lines[fadd].replace("[B--2---:", "[B------:")
    broken = "\n".join(lines)
    assert errors(broken)
    index = build_index(broken)
    action = schedule_view.recompute_block_action(index, fadd, "sm_90")
    assert action is not None and action.title.startswith(schedule_view.RECOMPUTE_TITLE)
    assert action.kind == "quickfix" and "SASS001" in action.diagnostic_codes
    (edit,) = action.edits
    assert edit.line <= fadd <= edit.end_line and edit.start == 0 and edit.end == len(lines[edit.end_line])
    fixed = lines[: edit.line] + edit.new_text.split("\n") + lines[edit.end_line + 1 :]
    assert not errors("\n".join(fixed))
    # only control fields change: every instruction keeps its text and place
    assert [ln[ln.find("/*") :] for ln in fixed] == [ln[ln.find("/*") :] for ln in lines]


def test_recompute_is_not_offered_where_it_changes_nothing_or_outside_kernels() -> None:
    index = build_index(ADD.read_text())
    kernel = index.kernels[0]
    # ptxas's own codes are what the repair writes for its order
    assert all(schedule_view.recompute_block_action(index, ln, "sm_90") is None for ln in kernel.instr_lines)
    assert schedule_view.recompute_block_action(index, 0, "sm_90") is None
    assert schedule_view.recompute_block_action(index, kernel.instr_lines[0], None) is None


def test_a_label_line_stands_for_the_block_it_starts() -> None:
    lines = ADD.read_text().split("\n")
    label = next(i for i, ln in enumerate(lines) if ln.strip() == ".L_x_1:")
    after = label + 1
    lines[after] = lines[after].replace(":-:S06]", ":-:S15]")  # a stall of 15 without the yield it needs
    index = build_index("\n".join(lines))
    on_label = schedule_view.recompute_block_action(index, label, "sm_90")
    on_instr = schedule_view.recompute_block_action(index, after, "sm_90")
    assert on_label is not None and on_label == on_instr


def test_hot_loop_lens_is_cached_per_index() -> None:
    index = build_index((TRITON_CORPUS / "triton_matmul.cuasm").read_text())
    kernel = index.kernels[0]
    lens = schedule_view.hot_loop_lens(index, kernel, "sm_90")
    assert lens is not None and lens.line == kernel.section.line
    assert lens.title.startswith("hottest loop: ") and "predicted cycles/iteration (lines " in lens.title
    assert schedule_view.hot_loop_lens(index, kernel, "sm_90") is lens
    assert schedule_view.hot_loop_lens(index, kernel, "sm_42") is None  # no tables: no lens, no guess


def test_stall_hints_without_and_with_the_timeline() -> None:
    text = ADD.read_text()
    index = build_index(text)
    fadd = next(i for i, ln in enumerate(index.lines) if "FADD R12, R12, R16" in ln)
    plain = schedule_view.stall_hints(index, fadd, fadd, {})
    assert [h.label for h in plain] == [" 1cy"]  # [B--2---:R-:W-:-:S01]
    timeline = kernel_timeline(index, fadd, "sm_90")
    (hint,) = schedule_view.stall_hints(index, fadd, fadd, {"add_kernel": timeline})
    issue, _ = timeline.issues[fadd]  # type: ignore[union-attr]
    assert issue.waited > 0 and hint.label == f" 1cy +{issue.waited} wait"
    assert f"after waiting {issue.waited} cycles" in hint.tooltip and "SB2" in hint.tooltip


def test_line_edits_apply_bottom_up_and_refuse_overlaps() -> None:
    lines = ["a", "b", "c", "d", "e"]
    assert reorder.apply_line_edits(lines, ((1, 2, ("B", "A")), (4, 4, ("x", "y")))) == [
        "B",
        "A",
        "c",
        "x",
        "y",
        "e",
    ]
    with pytest.raises(ValueError):
        reorder.apply_line_edits(lines, ((1, 3, ("x",)), (3, 4, ("y",))))
    with pytest.raises(ValueError):
        reorder.apply_line_edits(lines, ((5, 6, ("x",)),))


def test_time_arguments_round_trip() -> None:
    s = reorder.SuggestionView(
        "k",
        "Reorder: hoist LDG above FFMA — predicted −2.0% cycles",
        ("m",),
        0.02,
        100.0,
        98.0,
        ((3, 4, ("x", "y")),),
    )
    version, title, edits = reorder.parse_time_arguments(reorder.time_arguments(7, s))
    assert (version, title, edits) == (7, s.title, s.edits)
    with pytest.raises(ValueError):
        reorder.parse_time_arguments({"title": "no version"})


def test_policy_path(tmp_path: Path) -> None:
    assert reorder.policy_path(None) is None and reorder.policy_path("") is None  # the server's default
    assert reorder.policy_path("p/v2", str(tmp_path)) == tmp_path / "p" / "v2"
    assert reorder.policy_path(str(tmp_path / "abs")) == tmp_path / "abs"
