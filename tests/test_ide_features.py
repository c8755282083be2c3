"""Core IDE features on small fixtures: one ``check`` per feature, snapshots for user-visible text."""

from __future__ import annotations

import re

import pytest
from paths import TRITON_CORPUS
from test_ide_support import KERNEL, check_snapshot, mark, with_cursor

from sass_lsp.ide import actions, editing, hover, navigation, outline, schedule_view
from sass_lsp.ide.diagnostics import parse_diagnostics
from sass_lsp.ide.index import build_index, update_index
from sass_lsp.ide.settings import Settings, settings_doc, settings_from_raw
from sass_lsp.ide.text import Document
from sass_lsp.ide.timeline_view import kernel_timeline


def check_hover(fixture: str, snapshot: str) -> None:
    index, line, col = with_cursor(fixture)
    result = hover.hover(index, line, col)
    assert result is not None
    check_snapshot(snapshot, result.markdown + "\n")


@pytest.mark.parametrize(
    ("needle", "shift", "snapshot"),
    [
        ("LDG.E.128", 0, "hover_instruction.md"),
        ("R16, desc", 1, "hover_register.md"),
        ("R17, R16", 1, "hover_register_covered.md"),
        ("[B---3--", 5, "hover_scoreboard_wait.md"),
        (":W3:", 2, "hover_scoreboard_write.md"),
        (".L_x_0);", 2, "hover_label.md"),
    ],
)
def test_hover(needle: str, shift: int, snapshot: str) -> None:
    check_hover(mark(needle, shift), snapshot)


def test_hover_outside_anything_is_none() -> None:
    index, line, col = with_cursor(mark("\t.align\t128", 0))
    assert hover.hover(index, line, col) is None


def test_definition_of_branch_target() -> None:
    index, line, col = with_cursor(mark(".L_x_0);", 1))
    spans = navigation.definition(index, line, col)
    assert [(s.line, index.lines[s.line][s.start : s.end]) for s in spans] == [(line - 1, ".L_x_0")]


def test_register_references_include_wide_definition() -> None:
    index, line, col = with_cursor(mark("R17, R16", 1))
    spans = navigation.references(index, line, col)
    texts = [index.lines[s.line][s.start : s.end] for s in spans]
    assert texts == ["R16", "R17"]  # LDG.E.128 R16 writes R17; FADD reads it


def test_highlights_mark_writes_and_reads() -> None:
    index, line, col = with_cursor(mark("R12, R17", 1))
    occ = navigation.highlights(index, line, col)
    assert [(o.line - line, o.is_def) for o in occ] == [(0, True), (1, False)]


def test_label_references_in_directives() -> None:
    index = build_index(KERNEL)
    spans = navigation.label_references(index, ".L_x_3", include_declaration=True)
    assert len(spans) == 2  # the label and the .size expression


def test_symbols_and_folding() -> None:
    index = build_index(KERNEL)
    symbols = outline.document_symbols(index)
    assert [(s.name, s.kind) for s in symbols] == [(".text.k", "kernel")]
    assert [(c.name, c.kind) for c in symbols[0].children] == [
        ("k", "kernel"),
        (".text.k", "label"),
        (".L_x_1", "label"),
        (".L_x_0", "label"),
        (".L_x_3", "label"),
    ]
    folds = outline.folding_ranges(index)
    assert (0, len(index.lines) - 2) in [(f.start, f.end) for f in folds]
    blocks = index.blocks(index.kernels[0])
    assert [(b.label, b.n_instrs) for b in blocks] == [
        (".text.k", 10),
        (".L_x_1", 1),
        (None, 1),
        (".L_x_0", 1),
        (None, 1),
    ]


def test_code_lens_and_inlay_hints() -> None:
    index = build_index(KERNEL)
    lens = outline.code_lenses(index)
    check_snapshot("code_lens.txt", "\n".join(f"{x.line}: {x.title}" for x in lens) + "\n")
    hints = schedule_view.stall_hints(index, 0, 100, {})
    assert hints[0].label == " 1cy" and len(hints) == 14


def test_semantic_tokens_snapshot() -> None:
    index = build_index(KERNEL)
    line = next(i for i, t in enumerate(index.lines) if "LDG" in t)
    tokens = editing.semantic_tokens(index, line, line)
    text = index.lines[line]
    check_snapshot(
        "tokens_ldg.txt", "\n".join(f"{text[t.start : t.start + t.length]!r} {t.kind}" for t in tokens) + "\n"
    )


def test_a_float_written_as_f32_bits_is_one_number_token() -> None:
    index = build_index(KERNEL.replace("FADD R12, R17, R16", "FSEL R12, R17, 0f7fc00000, !P1", 1))
    line = next(i for i, t in enumerate(index.lines) if "0f7fc00000" in t)
    text = index.lines[line]
    tokens = {text[t.start : t.start + t.length]: t.kind for t in editing.semantic_tokens(index, line, line)}
    assert tokens["0f7fc00000"] == "number"


def test_completion_contexts() -> None:
    index, line, col = with_cursor(mark("FADD", 2))
    opcodes = [i.label for i in editing.completions(index, line, col, None)]
    assert "FADD" in opcodes and "LDG" in opcodes
    index, line, col = with_cursor(mark("R12, R17", 0))
    regs = [i.label for i in editing.completions(index, line, col, None)]
    assert regs[:2] == ["RZ", "PT"] and "R20" in regs
    index, line, col = with_cursor(mark(".L_x_0);", 0))
    assert ".L_x_1" in [i.label for i in editing.completions(index, line, col, None)]
    index, line, col = with_cursor(mark("B------:R-:W0", 2))
    assert all(i.kind == "snippet" for i in editing.completions(index, line, col, None))


def test_formatting_realigns_without_changing_instructions() -> None:
    messy = (
        KERNEL.replace(
            "      [B---3--:R-:W-:-:S01]         /*0080*/                   FADD R12, R17, R16 ;",
            "[B---3--:R-:W-:-:S01] FADD R12, R17, R16 ;   // sum",
        )
        .replace("              @!P0 STG.E", " @!P0 STG.E")
        .replace("  .L_x_1:", ".L_x_1:")
    )
    index = build_index(messy)
    edits = editing.format_edits(index)
    lines = list(index.lines)
    for e in edits:
        lines[e.line] = e.new_text
    expected = KERNEL.replace("FADD R12, R17, R16 ;", "FADD R12, R17, R16 ;   // sum")
    assert "\n".join(lines) == expected
    assert editing.format_edits(build_index(expected)) == []


def test_parse_diagnostics_ranges() -> None:
    text = KERNEL.replace("[B------:R-:W-:Y:S04]         /*0050*/", "[B------:R-:W-:Y:S22]         /*0050*/")
    text = text.replace("  .L_x_1:", "  .L_x_1:\n  garbage here")
    index = build_index(text)
    diags = parse_diagnostics(index)
    check_snapshot(
        "parse_diagnostics.txt",
        "\n".join(f"{d.line}:{d.col}-{d.end_col} {d.code} {d.message}" for d in diags) + "\n",
    )


def test_control_quick_fixes() -> None:
    text = KERNEL.replace(
        "[B------:R-:W-:Y:S04]         /*0050*/", "[R---:B------:R-:W-:Y:S22]         /*0050*/"
    )
    index = build_index(text)
    line = next(i for i, t in enumerate(index.lines) if "/*0050*/" in t)
    found = actions.code_actions(index, line, line, None, Settings())
    assert [a.title for a in found] == ["Drop the obsolete reuse field"]
    text = KERNEL.replace("[B------:R-:W-:Y:S04]         /*0050*/", "[B------:R-:W-:Y:S22]         /*0050*/")
    found = actions.code_actions(build_index(text), line, line, None, Settings())
    assert [(a.title, a.edits[0].new_text) for a in found] == [
        ("Clamp the stall to S15", "B------:R-:W-:Y:S15")
    ]


def test_hazard_quick_fixes_from_checker() -> None:
    broken = KERNEL.replace(
        "[B---3--:R-:W-:-:S01]         /*0080*/", "[B------:R-:W-:-:S01]         /*0080*/"
    )
    index = build_index(broken)
    line = next(i for i, t in enumerate(index.lines) if "/*0080*/" in t)
    found = actions.code_actions(index, line, line, "sm_90", Settings())
    titles = [a.title for a in found]
    assert "Wait on SB3 before this instruction" in titles
    fix = found[titles.index("Wait on SB3 before this instruction")]
    assert fix.edits[0].new_text == "[B---3--:R-:W-:-:S01]"


def test_settings_structured_once() -> None:
    settings, warnings = settings_from_raw(
        {"arch": "sm_90", "diagnosticsDebounceMs": "x", "hazardSeverities": {"SASS010": "off"}, "nope": 1}
    )
    assert settings.arch == "sm_90" and settings.diagnosticsDebounceMs == 150
    assert settings.hazardSeverities == {"SASS010": "off"}
    assert len(warnings) == 2
    assert settings_from_raw([1, 2])[1]
    assert set(settings_doc()) == {f for f in Settings.__dataclass_fields__}


def test_incremental_update_matches_full_rebuild() -> None:
    doc = Document.from_text("u", 1, KERNEL)
    index = build_index(doc.lines)
    line = next(i for i, t in enumerate(doc.lines) if "FADD" in t)
    for start, end, new in [
        ((line, 28), (line, 30), "05"),  # stall digit: structure reused
        ((line, 0), (line, 0), "  .L_x_9:\n"),  # a new label: rebuilt
        ((0, 0), (1, 0), ""),  # a section line removed
    ]:
        doc, edit = doc.apply_edit(start, end, new, doc.version + 1)
        index = update_index(index, edit.start, edit.n_old, edit.new_lines)
        fresh = build_index(doc.lines)
        assert index.lines == fresh.lines
        assert index.infos == fresh.infos
        assert index.pcs == fresh.pcs and index.labels == fresh.labels and index.kernels == fresh.kernels


def test_ide_layer_imports_no_lsp() -> None:
    """Architecture Invariant: sass_lsp.ide knows nothing of pygls or lsprotocol, nor of torch (the policy is
    run by the server, an edge: sass_lsp/server/suggestions.py)."""
    import ast
    from pathlib import Path

    import sass_lsp.ide

    for path in Path(sass_lsp.ide.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                assert not name.startswith(("pygls", "lsprotocol", "torch", "sass_lsp.policy")), (
                    f"{path.name} imports {name}"
                )


PROVENANCE = re.compile(r"§|\[(?:src|guess|measured|ptxas|notes)\b[^\]]*\]|\bnotes\b", re.IGNORECASE)


def test_hovers_show_no_internal_provenance_tags() -> None:
    """Hover text is for users: every instruction of a real kernel, with its issue timeline, carries no
    developer reference such as ``[src notes §3.2]``."""
    lines = (TRITON_CORPUS / "triton_layernorm.cuasm").read_text().split("\n")
    index = build_index(lines)
    checked = 0
    for kernel in index.kernels:
        stalls = kernel_timeline(index, kernel.section.line, "sm_90")
        for line in kernel.instr_lines:
            info = index.infos[line]
            result = hover.hover(index, line, info.ctrl_start, timeline=stalls.markdown if stalls else None)
            assert result is not None
            assert not PROVENANCE.search(result.markdown), (line + 1, result.markdown)
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("tail", ["junk", "junk // a comment", "RZ ;"])
def test_text_after_the_semicolon_is_an_error_at_its_position(tail: str) -> None:
    line = "      [B------:R-:W-:-:S01]         /*0010*/                   IADD3 R1, R2, R3, RZ ; " + tail
    diags = parse_diagnostics(build_index(['\t.section\t.text.k,"ax",@progbits', line]))
    assert len(diags) == 1 and diags[0].code == "syntax" and diags[0].severity == "error"
    start = line.index("; ") + 2
    junk = tail.split(" //")[0]
    assert (diags[0].line, diags[0].col, diags[0].end_col) == (1, start, start + len(junk))
    assert f"text after ';': '{junk}'" in diags[0].message and "hint:" in diags[0].message
