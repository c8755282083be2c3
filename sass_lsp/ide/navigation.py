"""Feature: navigation. What is under the cursor (label, register, scoreboard), go to definition of a
branch target or label, references of a label or register in its kernel, highlights of a register.
"""

from __future__ import annotations

import bisect
import re
import time
from dataclasses import dataclass

from sass_lsp.ide.index import DocumentIndex, Kernel
from sass_lsp.ide.lexer import line_detail
from sass_lsp.ide.registers import Occurrence, kernel_registers, line_hits, search_names

__all__ = ["Occurrence", "RegisterSearch", "Span", "Target", "definition", "highlights", "references"]

HIGHLIGHT_BUDGET_S = 0.008


@dataclass(frozen=True)
class Span:
    line: int
    start: int
    end: int


@dataclass(frozen=True)
class Target:
    kind: str  # label | register | scoreboard
    name: str
    span: Span


_WORD = re.compile(r"[A-Za-z0-9_.$@#]+")
_LABELISH = re.compile(r"[A-Za-z0-9_.$@#]+")


def target_at(index: DocumentIndex, line: int, col: int) -> Target | None:
    detail = index.detail(line)
    info = index.info(line)
    if detail is None or info is None:
        return None
    if detail.label_def and detail.label_def[1] <= col <= detail.label_def[2]:
        name, a, b = detail.label_def
        return Target("label", name, Span(line, a, b))
    for name, a, b in detail.targets:
        if a <= col <= b:
            return Target("label", name, Span(line, a, b))
    for reg in detail.regs:
        if reg.start <= col <= reg.end:
            return Target("register", reg.name, Span(line, reg.start, reg.end))
    if info.kind == "instruction" and info.ctrl_start <= col < info.ctrl_end:
        sb = scoreboard_at(index.lines[line], info.ctrl_start, col)
        if sb is not None:
            return Target("scoreboard", f"SB{sb}", Span(line, col, col + 1))
    if info.kind == "directive":
        for m in _LABELISH.finditer(index.lines[line], info.args_col):
            if m.start() <= col <= m.end() and m.group() in index.labels:
                return Target("label", m.group(), Span(line, m.start(), m.end()))
    return None


def scoreboard_at(line: str, ctrl_start: int, col: int) -> int | None:
    """Scoreboard index under the cursor in ``[B0-2---:R1:W3:Y:S04]`` (wait digit, R# or W#)."""
    ch = line[col] if col < len(line) else ""
    if not ch.isdigit():
        return None
    prev = line[col - 1] if col > 0 else ""
    if prev in ("R", "W"):
        return int(ch)
    inner = line[ctrl_start + 1 : col]
    if ":" not in inner and inner.lstrip().startswith("B"):
        return int(ch)
    return None


def definition(index: DocumentIndex, line: int, col: int) -> list[Span]:
    target = target_at(index, line, col)
    if target is None:
        return []
    if target.kind == "label":
        return [Span(d.line, d.start, d.end) for d in index.labels.get(target.name, [])]
    if target.kind == "register":
        kernel = index.kernel_at(line)
        if kernel is None:
            return []
        defs = [o for o in register_occurrences(index, kernel, target.name) if o.is_def and o.line < line]
        return [Span(defs[-1].line, defs[-1].start, defs[-1].end)] if defs else []
    return []


def label_references(index: DocumentIndex, name: str, include_declaration: bool) -> list[Span]:
    out: list[Span] = []
    if include_declaration:
        out += [Span(d.line, d.start, d.end) for d in index.labels.get(name, [])]
    pattern = re.compile(r"(?<![\w.$@#])" + re.escape(name) + r"(?![\w.$@#])")
    for line_no, text in enumerate(index.lines):
        if name not in text:
            continue
        info = index.infos[line_no]
        if info.kind == "label":
            continue
        if info.kind == "instruction":
            out += [Span(line_no, a, b) for n, a, b in line_detail(text).targets if n == name]
        elif info.kind == "directive":
            out += [Span(line_no, m.start(), m.end()) for m in pattern.finditer(text, info.args_col)]
    return out


def references(index: DocumentIndex, line: int, col: int, include_declaration: bool = True) -> list[Span]:
    target = target_at(index, line, col)
    if target is None:
        return []
    if target.kind == "label":
        return label_references(index, target.name, include_declaration)
    kernel = index.kernel_at(line)
    if kernel is None:
        return []
    if target.kind == "register":
        return [Span(o.line, o.start, o.end) for o in register_occurrences(index, kernel, target.name)]
    return []


def highlights(index: DocumentIndex, line: int, col: int) -> list[Occurrence]:
    target = target_at(index, line, col)
    if target is None:
        return []
    kernel = index.kernel_at(line)
    if target.kind == "register" and kernel is not None:
        return search_register(index, kernel, target.name, line, HIGHLIGHT_BUDGET_S).occurrences
    if target.kind == "label":
        return [Occurrence(s.line, s.start, s.end, False) for s in label_references(index, target.name, True)]
    return []


@dataclass(frozen=True)
class RegisterSearch:
    occurrences: list[Occurrence]
    n_lines: int  # instruction lines that read or write the register
    n_examined: int
    complete: bool = True  # False: only lines ``searched[0]..searched[1]`` were searched (time budget)
    searched: tuple[int, int] = (0, 0)


def search_register(
    index: DocumentIndex, kernel: Kernel, name: str, around: int | None = None, budget_s: float | None = None
) -> RegisterSearch:
    """Reads and writes of ``name`` in the kernel, including wider operands that cover it (LDG.E.128 R16
    writes R17). Once the kernel's register index is built this is a look-up; before that, with a budget,
    windows of lines around ``around`` are searched, widening until the kernel is covered or the budget
    is spent."""
    is_gpr, names = search_names(name)
    lines = kernel.instr_lines
    if not lines:
        return RegisterSearch([], 0, 0)
    reg_index = kernel_registers(index, kernel)
    if reg_index is not None:  # a look-up, never a partial answer
        n_hits = reg_index.n_lines.get(name, 0)
        occurrences = list(reg_index.occurrences.get(name, ()))
        return RegisterSearch(occurrences, n_hits, n_hits, True, (lines[0], lines[-1]))
    deadline = None if budget_s is None else time.perf_counter() + budget_s
    centre = bisect.bisect_left(lines, around) if around is not None else 0
    lo = hi = centre
    width = 32 if deadline is not None else len(lines)
    out: list[Occurrence] = []
    n_hits = 0
    while lo > 0 or hi < len(lines):
        new_lo, new_hi = max(0, lo - width), min(len(lines), hi + width)
        for part in ((new_lo, lo), (hi, new_hi)) if hi > lo else ((new_lo, new_hi),):
            n_hits += _scan(index, lines[part[0] : part[1]], name, names, is_gpr, out)
        lo, hi = new_lo, new_hi
        width += width // 2
        if deadline is not None and time.perf_counter() > deadline:
            break
    out.sort(key=lambda o: (o.line, o.start))
    complete = lo == 0 and hi == len(lines)
    return RegisterSearch(out, n_hits, n_hits, complete, (lines[lo], lines[hi - 1]))


def _scan(
    index: DocumentIndex,
    line_nos: tuple[int, ...],
    name: str,
    names: list[str],
    is_gpr: bool,
    out: list[Occurrence],
) -> int:
    all_lines = index.lines
    n_hits = 0
    for line_no in line_nos:
        hits = line_hits(line_no, all_lines[line_no], name, names, is_gpr, index.file_arch)
        out += hits
        n_hits += bool(hits)
    return n_hits


def register_occurrences(index: DocumentIndex, kernel: Kernel, name: str) -> list[Occurrence]:
    """Every read and write of ``name`` in the kernel (no time budget)."""
    return search_register(index, kernel, name).occurrences
