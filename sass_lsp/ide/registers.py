"""Feature: register index. Per kernel, every read and write of each register (as an operand, or inside a
wider one: LDG.E.128 R16 writes R16..R19), so that register hover, highlights and references are a
look-up instead of a search of the kernel.

Each line's registers are :func:`line_registers`: ``isa.semantics``'s reading of the instruction for the
document's arch (the checker's), so the editor and the checker agree on what a line reads and writes; a
document whose arch has no table shows registers without roles. Built in steps (the server runs them
time-sliced after the diagnostics); an edit that keeps the document's structure updates it line by line
(:func:`update_registers`, called by ``update_index``). Until a kernel's index is built, features search
the kernel (``navigation``).
"""

from __future__ import annotations

import bisect
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from sass_lsp.ide.lexer import classify_line, line_detail
from sass_lsp.isa.archs import UnsupportedArch
from sass_lsp.isa.semantics import Semantics, load_semantics, unit_name

if TYPE_CHECKING:
    from sass_lsp.ide.index import DocumentIndex, Kernel

STEP_LINES = 256  # lines per build step


class Occurrence(NamedTuple):
    line: int
    start: int
    end: int
    is_def: bool
    via: str = ""  # set when the register is covered by a wider operand (e.g. 'R16' of LDG.E.128)


class LineRegister(NamedTuple):
    """A register named on a line: its span, whether the instruction writes it, and the registers it
    covers (``HGMMA.64x128x16.F32 R24`` covers R24..R87), as ``isa.semantics`` reads the instruction."""

    name: str
    start: int
    end: int
    is_def: bool
    covers: tuple[str, ...]


def semantics_for(arch: str | None) -> Semantics | None:
    """The arch's semantics table; None when the arch is unknown or has no table (then no roles)."""
    if not arch:
        return None
    try:
        return load_semantics(arch)
    except UnsupportedArch:
        return None


@lru_cache(maxsize=131072)
def line_registers(line: str, arch: str | None) -> tuple[LineRegister, ...]:
    """The registers of an instruction line. With the arch's table: read and written as the checker reads
    them (wide and paired operands, ``PR``, carry-out predicates); without one: the lexer's register
    tokens, none of them written and each covering itself only."""
    sem = semantics_for(arch)
    info = classify_line(line)
    if sem is None or info.kind != "instruction" or info.text_start < 0:
        return tuple(LineRegister(r.name, r.start, r.end, False, (r.name,)) for r in line_detail(line).regs)
    at = info.text_start
    out = []
    for ref in sem.register_refs(line[at : info.text_end]):
        covers = tuple(unit_name(u) for u in ref.units) or (ref.name,)
        start = at + ref.start
        out.append(LineRegister(ref.name, start, start + len(ref.name), ref.written, covers))
    return tuple(out)


def search_names(name: str) -> tuple[bool, list[str]]:
    """Whether ``name`` is a general register, and ``[name]`` (kept for callers that pre-filter lines: a
    wide operand may cover ``name`` without naming it, so only lines without any register are skipped)."""
    return name.startswith("R") and name[1:].isdigit(), [name]


def line_hits(
    line_no: int, text: str, name: str, names: list[str], is_gpr: bool, arch: str | None = None
) -> list[Occurrence]:
    """Where the line ``text`` reads or writes ``name``, as an operand or inside a wider one."""
    out = []
    for reg in line_registers(text, arch):
        if reg.name == name:
            out.append(Occurrence(line_no, reg.start, reg.end, reg.is_def))
        elif name in reg.covers:
            out.append(Occurrence(line_no, reg.start, reg.end, reg.is_def, via=reg.name))
    return out


@dataclass(frozen=True)
class RegisterIndex:
    """Register name -> its occurrences sorted by (line, start), and how many lines they are on."""

    occurrences: dict[str, tuple[Occurrence, ...]]
    n_lines: dict[str, int]


def _line_names(text: str, arch: str | None) -> set[str]:
    names: set[str] = set()
    for reg in line_registers(text, arch):
        names.add(reg.name)
        names.update(reg.covers)
    return names


def _hits_by_name(line_no: int, text: str, arch: str | None) -> dict[str, list[Occurrence]]:
    out: dict[str, list[Occurrence]] = {}
    for reg in line_registers(text, arch):
        out.setdefault(reg.name, []).append(Occurrence(line_no, reg.start, reg.end, reg.is_def))
        for name in reg.covers:
            if name != reg.name:
                out.setdefault(name, []).append(Occurrence(line_no, reg.start, reg.end, reg.is_def, reg.name))
    return {name: sorted(hits, key=lambda o: o.start) for name, hits in out.items()}


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
        for name, hits in _hits_by_name(line, text, index.file_arch).items():
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
        after = _hits_by_name(line, text, new.file_arch)
        occurrences = dict(reg_index.occurrences)
        n_lines = dict(reg_index.n_lines)
        for name in _line_names(old.lines[line], old.file_arch) | set(after):
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
