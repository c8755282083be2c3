"""Robustness: any text (and any byte sequence, decoded as an editor would) goes through the index and
every IDE feature without raising; incremental index updates equal a full rebuild."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_ide_support import KERNEL

from sass_lsp.cuasm.parser import parse_cuasm
from sass_lsp.ide import actions, editing, hover, navigation, outline, schedule_view
from sass_lsp.ide.diagnostics import parse_diagnostics
from sass_lsp.ide.index import build_index, update_index
from sass_lsp.ide.settings import Settings
from sass_lsp.ide.text import Document

KERNEL_LINES = KERNEL.split("\n")
ALPHABET = st.sampled_from(
    list('[]:BRWYS-0123456789 ;,.`()@!PRZUT/*\t\n\r\x0c"_xLEGDAX') + ["\u2028", "é", "\U0001f600"]
)

# text made of kernel lines, mutated lines and random junk
line_strategy = st.one_of(
    st.sampled_from(KERNEL_LINES),
    st.text(ALPHABET, max_size=60),
    st.sampled_from(KERNEL_LINES).flatmap(
        lambda line: st.tuples(
            st.integers(0, len(line)), st.integers(0, len(line)), st.text(ALPHABET, max_size=8)
        ).map(lambda t, line=line: line[: min(t[0], t[1])] + t[2] + line[max(t[0], t[1]) :])
    ),
)
documents = st.lists(line_strategy, max_size=40).map("\n".join)
raw_documents = st.binary(max_size=300).map(lambda b: b.decode("utf-8", errors="replace"))

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def exercise(text: str) -> None:
    index = build_index(text)
    parse_diagnostics(index)
    outline.document_symbols(index)
    outline.folding_ranges(index)
    outline.code_lenses(index)
    schedule_view.stall_hints(index, 0, len(index.lines), {})
    editing.semantic_tokens(index)
    editing.format_edits(index)
    for line in range(0, len(index.lines), max(1, len(index.lines) // 7)):
        for col in (0, 3, 7, 12, 25, 40, 60, len(index.lines[line]), len(index.lines[line]) + 5):
            hover.hover(index, line, col)
            navigation.definition(index, line, col)
            navigation.references(index, line, col)
            navigation.highlights(index, line, col)
            editing.completions(index, line, col, None)
        actions.code_actions(index, line, line, "sm_90", Settings())
    for kernel in index.kernels:
        index.blocks(kernel)


@FUZZ
@given(documents)
def test_features_never_raise_on_mutated_documents(text: str) -> None:
    exercise(text)


@FUZZ
@given(raw_documents)
def test_features_never_raise_on_bytes(text: str) -> None:
    exercise(text)


@FUZZ
@given(raw_documents)
def test_parser_never_raises(text: str) -> None:
    parse_cuasm(text)


@FUZZ
@given(
    documents,
    st.lists(
        st.tuples(
            st.integers(0, 50),
            st.integers(0, 80),
            st.integers(0, 3),
            st.integers(0, 80),
            st.text(ALPHABET, max_size=30),
        ),
        max_size=6,
    ),
)
def test_incremental_index_equals_rebuild(text: str, edits: list) -> None:
    doc = Document.from_text("u", 1, text)
    index = build_index(doc.lines)
    for line, col, span, end_col, new in edits:
        doc, edit = doc.apply_edit((line, col), (line + span, end_col), new, doc.version + 1)
        index = update_index(index, edit.start, edit.n_old, edit.new_lines)
        fresh = build_index(doc.lines)
        assert index.lines == fresh.lines and index.infos == fresh.infos
        assert index.pcs == fresh.pcs and index.labels == fresh.labels
        assert index.kernels == fresh.kernels and index.sections == fresh.sections
        assert parse_diagnostics(index) == parse_diagnostics(fresh)


def test_document_edit_semantics() -> None:
    doc = Document.from_text("u", 1, "ab\r\ncd\ref\ngh")
    assert doc.lines == ("ab", "cd", "ef", "gh")
    doc = doc.apply((0, 1), (2, 1), "X\nY", 2)
    assert doc.lines == ("aX", "Yf", "gh")
    doc = doc.apply((99, 0), (99, 0), "!", 3)  # past the end: clamped to the last line
    assert doc.lines[-1] == "gh!"
