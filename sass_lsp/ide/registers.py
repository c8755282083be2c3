"""Feature: register index. Per kernel, the instruction lines that name each register (as an operand, or
inside a wider one: LDG.E.128 R16 names R16..R19), so that register hover, highlights and references read
only those lines instead of searching the kernel.

Built from the cached per-line detail, in steps (the server runs them time-sliced after the diagnostics);
an edit that keeps the document's structure updates it line by line (:func:`update_registers`, called by
``update_index``). Until a kernel's index is built, features search the kernel as before.
"""

from __future__ import annotations

import bisect
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sass_lsp.ide.lexer import line_detail

if TYPE_CHECKING:
    from sass_lsp.ide.index import DocumentIndex, Kernel

STEP_LINES = 256  # lines per build step


@dataclass(frozen=True)
class RegisterIndex:
    """Register name -> sorted instruction lines of the kernel that name it."""

    lines_of: dict[str, tuple[int, ...]]


def line_names(text: str) -> frozenset[str]:
    """The registers one line names, wider operands expanded (R16 of a 128-bit load: R16..R19)."""
    names: set[str] = set()
    for reg in line_detail(text).regs:
        names.update(reg.covers())
    return frozenset(names)


def kernel_registers(index: DocumentIndex, kernel: Kernel) -> RegisterIndex | None:
    """The kernel's register index, or None while it is not built."""
    return index.__dict__.get("_registers", {}).get(kernel.section.line)


def build_steps(index: DocumentIndex, kernel: Kernel) -> Generator[None, None, None]:
    """Build the kernel's register index, yielding every :data:`STEP_LINES` lines; stored on ``index``
    when complete (a build left unfinished stores nothing)."""
    if kernel_registers(index, kernel) is not None:
        return
    lines_of: dict[str, list[int]] = {}
    all_lines = index.lines
    for pos, line in enumerate(kernel.instr_lines):
        for name in line_names(all_lines[line]):
            lines_of.setdefault(name, []).append(line)
        if pos % STEP_LINES == STEP_LINES - 1:
            yield
    built = RegisterIndex({name: tuple(lines) for name, lines in lines_of.items()})
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
        if reg_index is None:
            continue
        before, after = line_names(old.lines[line]), line_names(new.lines[line])
        if before == after:
            continue
        lines_of = dict(reg_index.lines_of)
        for name in before - after:
            lines = list(lines_of[name])
            lines.pop(bisect.bisect_left(lines, line))
            if lines:
                lines_of[name] = tuple(lines)
            else:
                del lines_of[name]
        for name in after - before:
            lines = list(lines_of.get(name, ()))
            bisect.insort(lines, line)
            lines_of[name] = tuple(lines)
        indexes[kernel.section.line] = RegisterIndex(lines_of)  # type: ignore[union-attr]
    return indexes
