"""Feature: outline. Document symbols (sections, kernels, device functions, labels), folding ranges
(sections, kernels, basic blocks) and code lenses per kernel (the inlay hints' type lives here too; the
stall hints themselves are in :mod:`sass_lsp.ide.schedule_view`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sass_lsp.ide.index import DocumentIndex, Kernel


@dataclass(frozen=True)
class Symbol:
    name: str
    kind: str  # section | kernel | function | label
    line: int
    end_line: int
    sel_start: int
    sel_end: int
    detail: str = ""
    children: tuple[Symbol, ...] = field(default_factory=tuple)


def document_symbols(index: DocumentIndex) -> list[Symbol]:
    out: list[Symbol] = []
    for sec in index.sections:
        text = index.lines[sec.line]
        start = max(0, text.find(".section"))
        children: list[Symbol] = []
        kernel = next((k for k in index.kernels if k.section is sec), None)
        if kernel is not None:
            children = _kernel_children(index, kernel)
        name = sec.name or "(null section)"
        kind = (
            "kernel"
            if kernel is not None and kernel.entry
            else ("function" if kernel is not None else "section")
        )
        detail = f"{len(kernel.instr_lines)} instructions" if kernel is not None else sec.type_text
        out.append(
            Symbol(
                name,
                kind,
                sec.line,
                max(sec.line, sec.end_line - 1),
                start,
                start + 8,
                detail,
                tuple(children),
            )
        )
    return out


def _kernel_children(index: DocumentIndex, kernel: Kernel) -> list[Symbol]:
    children: list[Symbol] = []
    labels = sorted(
        (d for defs in index.labels.values() for d in defs if d.section == kernel.section.name),
        key=lambda d: d.line,
    )
    for pos, d in enumerate(labels):
        end = labels[pos + 1].line - 1 if pos + 1 < len(labels) else kernel.section.end_line - 1
        kind = "label"
        if d.name in index.functions:
            kind = "kernel" if d.name in index.entries else "function"
        pc = next(
            (index.pcs[ln] for ln in range(d.line, min(d.line + 32, len(index.lines))) if ln in index.pcs),
            None,
        )
        detail = f"pc 0x{pc:04x}" if pc is not None else ""
        children.append(Symbol(d.name, kind, d.line, max(d.line, end), d.start, d.end, detail))
    return children


@dataclass(frozen=True)
class Fold:
    start: int
    end: int
    kind: str  # region | comment


def folding_ranges(index: DocumentIndex) -> list[Fold]:
    out: list[Fold] = []
    for sec in index.sections:
        end = sec.end_line - 1
        while end > sec.line and not index.lines[end].strip():
            end -= 1
        if end > sec.line:
            out.append(Fold(sec.line, end, "region"))
    for kernel in index.kernels:
        for block in index.blocks(kernel):
            if block.end_line > block.start_line:
                out.append(Fold(block.start_line, block.end_line, "region"))
    # runs of comment lines
    start = None
    for line_no, info in enumerate([*index.infos, None]):
        if info is not None and info.kind == "comment":
            start = line_no if start is None else start
        else:
            if start is not None and line_no - 1 > start:
                out.append(Fold(start, line_no - 1, "comment"))
            start = None
    return out


@dataclass(frozen=True)
class Lens:
    line: int
    title: str
    command: str = ""
    arguments: tuple[str, ...] = ()


_REGS = re.compile(r"SHI_REGISTERS=(\d+)")
_GPR = re.compile(r"(?<![\w])R(\d+)\b")


def register_count(index: DocumentIndex, kernel: Kernel) -> tuple[int | None, int]:
    """(declared by .sectioninfo SHI_REGISTERS, highest R index used + 1)."""
    declared = None
    for line in range(kernel.section.line, min(kernel.section.end_line, kernel.section.line + 40)):
        m = _REGS.search(index.lines[line])
        if m:
            declared = int(m.group(1))
            break
    highest = -1
    for line in kernel.instr_lines:
        text = index.lines[line]
        info = index.infos[line]
        for m in _GPR.finditer(text, info.text_start, info.text_end):
            highest = max(highest, int(m.group(1)))
    return declared, highest + 1


def code_lenses(index: DocumentIndex) -> list[Lens]:
    out: list[Lens] = []
    for kernel in index.kernels:
        declared, used = register_count(index, kernel)
        regs = f"{declared} registers" if declared is not None else f"{used} registers used"
        if declared is not None and used and used != declared:
            regs += f" (R0–R{used - 1} used)"
        n_blocks = len(index.blocks(kernel))
        out.append(
            Lens(
                kernel.section.line,
                f"{kernel.name}: {len(kernel.instr_lines)} instructions · {regs} · {n_blocks} blocks",
            )
        )
    return out


@dataclass(frozen=True)
class InlayHint:
    line: int
    col: int
    label: str
    tooltip: str = ""
