"""The server's incremental paths give the answers of a fresh computation: the checker run in the worker
process (one section) equals the in-process run, the register index equals a full search (also after edits
that update it line by line), and the stretch timeline equals the whole kernel's."""

from __future__ import annotations

import re

from paths import TRITON_CORPUS

from sass_lsp.analysis import timeline
from sass_lsp.ide import diagnostics, navigation
from sass_lsp.ide.checker_input import kernel_module
from sass_lsp.ide.index import build_index, update_index
from sass_lsp.ide.lexer import line_detail
from sass_lsp.ide.registers import build_steps, kernel_registers
from sass_lsp.ide.text import Document
from sass_lsp.ide.timeline_view import kernel_timeline

MATMUL = (TRITON_CORPUS / "triton_matmul.cuasm").read_text()


def test_worker_findings_name_document_lines() -> None:
    # every stall S01 and no waits: hazards whose messages name the producer's line
    lines = [
        re.sub(r"\[B[0-5-]{6}:R(.):W(.):(.):S\d\d\]", r"[B------:R\1:W\2:\3:S01]", line)
        for line in MATMUL.split("\n")
    ]
    index = build_index(lines)
    (kernel,) = index.kernels
    sec = kernel.section
    worker = diagnostics.check_section_lines(list(lines[sec.line : sec.end_line]), sec.line, "sm_90")
    in_process = diagnostics.kernel_findings(index, kernel, "sm_90")
    assert any(" at line " in f.message for f in in_process)
    assert worker == in_process


def _searches(index, kernel, names):  # noqa: ANN001, ANN202
    return {name: navigation.search_register(index, kernel, name) for name in names}


def test_register_index_equals_full_search_before_and_after_edits() -> None:
    doc = Document.from_text("file:///m.cuasm", 1, MATMUL)
    index = build_index(doc.lines)
    (kernel,) = index.kernels
    names = {r.name for ln in kernel.instr_lines for r in line_detail(doc.lines[ln]).regs}
    full = _searches(index, kernel, names)
    for _ in build_steps(index, kernel):
        pass
    assert kernel_registers(index, kernel) is not None
    assert _searches(index, kernel, names) == full
    # rename a register operand on a few lines; the index is carried over and updated
    for line in kernel.instr_lines[10:200:37]:
        reg = line_detail(doc.lines[line]).regs[-1]
        doc, edit = doc.apply_edit((line, reg.start), (line, reg.end), "R200", doc.version + 1)
        index = update_index(index, edit.start, edit.n_old, edit.new_lines)
        assert kernel_registers(index, index.kernels[0]) is not None
    fresh = build_index(doc.lines)
    names |= {"R200"}
    assert _searches(index, index.kernels[0], names) == _searches(fresh, fresh.kernels[0], names)


def test_stretch_timeline_equals_whole_kernel_timeline() -> None:
    index = build_index(MATMUL)
    (kernel,) = index.kernels
    whole = timeline(kernel_module(index, kernel), "sm_90", kernel.name)
    expected = {issue.line - 1: (issue, block) for block in whole for issue in block.issues}
    stretches = kernel_timeline(index, kernel.instr_lines[0], "sm_90")
    assert stretches is not None and len(expected) > 100
    assert dict(stretches.items()) == expected


def test_stretch_cache_is_bounded_by_issues_held() -> None:
    from sass_lsp.ide.timeline_view import _StretchCache

    cache = _StretchCache(max_issues=10)
    cache.put(("a",), dict.fromkeys(range(6)))  # type: ignore[arg-type]
    cache.put(("b",), dict.fromkeys(range(4)))  # type: ignore[arg-type]
    assert cache.n_issues == 10 and cache.get(("a",)) is not None
    cache.put(("c",), dict.fromkeys(range(3)))  # type: ignore[arg-type]
    assert cache.get(("a",)) is None and cache.get(("b",)) is not None and cache.n_issues == 7
    cache.put(("b",), dict.fromkeys(range(1)))  # type: ignore[arg-type]
    assert cache.n_issues == 4
