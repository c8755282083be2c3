"""Feature: register index. Per kernel, every read and write of each register (as an operand, or inside a
wider one: LDG.E.128 R16 writes R16..R19), so that register hover, highlights and references are a
look-up instead of a search of the kernel.

Built from the cached per-line detail, in steps (the server runs them time-sliced after the diagnostics);
an edit that keeps the document's structure updates it line by line (:func:`update_registers`, called by
``update_index``). Until a kernel's index is built, features search the kernel (``navigation``).
"""

from __future__ import annotations

import bisect
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from sass_lsp.ide.lexer import RegRef, line_detail

if TYPE_CHECKING:
    from sass_lsp.ide.index import DocumentIndex, Kernel

STEP_LINES = 256  # lines per build step


class Occurrence(NamedTuple):
    line: int
    start: int
    end: int
    is_def: bool
    via: str = ""  # set when the register is covered by a wider operand (e.g. 'R16' of LDG.E.128)


def search_names(name: str) -> tuple[bool, list[str]]:
    """Whether ``name`` is a general register, and the names whose text a line must contain to name it
    (itself, and for R<n> the registers up to three below, whose wide operands may cover it)."""
    is_gpr = name.startswith("R") and name[1:].isdigit()
    names = [name]
    if is_gpr:
        base = int(name[1:])
        names += [f"R{base - k}" for k in range(1, 4) if base - k >= 0]
    return is_gpr, names


def line_hits(line_no: int, text: str, name: str, names: list[str], is_gpr: bool) -> list[Occurrence]:
    """Where the line ``text`` reads or writes ``name`` (``names``, ``is_gpr``: from :func:`search_names`)."""
    if not any(n in text for n in names):
        return []
    out = []
    for reg in line_detail(text).regs:
        if reg.name == name:
            out.append(Occurrence(line_no, reg.start, reg.end, reg.is_def))
        elif is_gpr and reg.width > 1 and name in RegRef.covers(reg):
            out.append(Occurrence(line_no, reg.start, reg.end, reg.is_def, via=reg.name))
    return out


@dataclass(frozen=True)
class RegisterIndex:
    """Register name -> its occurrences sorted by (line, start), and how many lines they are on."""

    occurrences: dict[str, tuple[Occurrence, ...]]
    n_lines: dict[str, int]


def _line_names(text: str) -> set[str]:
    names: set[str] = set()
    for reg in line_detail(text).regs:
        names.update(reg.covers())
    return names


def _hits_by_name(line_no: int, text: str, names: Iterable[str]) -> dict[str, list[Occurrence]]:
    out = {}
    for name in names:
        is_gpr, wanted = search_names(name)
        hits = line_hits(line_no, text, name, wanted, is_gpr)
        if hits:
            out[name] = sorted(hits, key=lambda o: o.start)
    return out


def kernel_registers(index: DocumentIndex, kernel: Kernel) -> RegisterIndex | None:
    """The kernel's register index, or None while it is not built."""
    return index.__dict__.get("_registers", {}).get(kernel.section.line)


def build_steps(index: DocumentIndex, kernel: Kernel) -> Generator[None, None, None]:
    """Build the kernel's register index, yielding every :data:`STEP_LINES` lines; stored on ``index``
    when complete (a build left unfinished stores nothing)."""
    if kernel_registers(index, kernel) is not None:
        return
    occurrences: dict[str, list[Occurrence]] = {}
    n_lines: dict[str, int] = {}
    all_lines = index.lines
    for pos, line in enumerate(kernel.instr_lines):
        text = all_lines[line]
        for name, hits in _hits_by_name(line, text, _line_names(text)).items():
            occurrences.setdefault(name, []).extend(hits)
            n_lines[name] = n_lines.get(name, 0) + 1
        if pos % STEP_LINES == STEP_LINES - 1:
            yield
    built = RegisterIndex({name: tuple(occ) for name, occ in occurrences.items()}, n_lines)
    index.__dict__.setdefault("_registers", {})[kernel.section.line] = built


def update_registers(
    old: DocumentIndex, new: DocumentIndex, changed: Iterable[int]
) -> dict[int, RegisterIndex]:
    """The old index's register indexes with the ``changed`` lines re-read (same structure: same kernels
    and instruction lines); entries that change are copied, the others shared."""
    indexes = dict(old.__dict__["_registers"])
    for line in changed:
        if line not in new.pcs:
            continue
        kernel = new.kernel_at(line)
        reg_index = indexes.get(kernel.section.line) if kernel is not None else None
        if reg_index is None or old.lines[line] == new.lines[line]:
            continue
        text = new.lines[line]
        after = _hits_by_name(line, text, _line_names(text))
        occurrences = dict(reg_index.occurrences)
        n_lines = dict(reg_index.n_lines)
        for name in _line_names(old.lines[line]) | set(after):
            occ = occurrences.get(name, ())
            lo = bisect.bisect_left(occ, (line,))
            hi = bisect.bisect_left(occ, (line + 1,))
            hits = after.get(name, [])
            n = n_lines.get(name, 0) - (hi > lo) + bool(hits)
            if n:
                occurrences[name] = (*occ[:lo], *hits, *occ[hi:])
                n_lines[name] = n
            else:
                occurrences.pop(name, None)
                n_lines.pop(name, None)
        indexes[kernel.section.line] = RegisterIndex(occurrences, n_lines)  # type: ignore[union-attr]
    return indexes
