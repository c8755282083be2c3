"""Feature: the schedule in the editor. "Recompute control codes for this basic block" (repair the block's
stalls, scoreboards and waits for its current order), the hottest-loop code lens from the static cost model,
and per-line predicted stall cycles as inlay hints (from the issue timeline).

The engines (:mod:`sass_lsp.schedule.repair`, :mod:`sass_lsp.schedule.cost`) are imported lazily: a missing
or failing engine costs the user that one feature, never the rest of the answer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from sass_lsp.ide.actions import CodeAction
from sass_lsp.ide.checker_input import kernel_module
from sass_lsp.ide.diagnostics import kernel_findings
from sass_lsp.ide.editing import TextEdit
from sass_lsp.ide.index import DocumentIndex, Kernel
from sass_lsp.ide.outline import InlayHint, Lens
from sass_lsp.ide.timeline_view import KernelTimeline

log = logging.getLogger(__name__)

RECOMPUTE_TITLE = "Recompute control codes for this basic block"


@dataclass(frozen=True)
class Analysed:
    """A kernel of the index as the analysis sees it (:class:`sass_lsp.analysis.program.Kernel`)."""

    kernel: Any  # sass_lsp.analysis.program.Kernel
    sem: Any  # sass_lsp.isa.semantics.Semantics


def analysed(index: DocumentIndex, kernel: Kernel, arch: str) -> Analysed | None:
    """The analysis kernel of ``kernel`` (cached on the index, which is per document version)."""
    cache = index.__dict__.setdefault("_analysed", {})
    key = (kernel.name, arch)
    if key not in cache:
        from sass_lsp.analysis.program import kernels_of
        from sass_lsp.isa.archs import UnsupportedArch
        from sass_lsp.isa.semantics import load_semantics

        try:
            sem = load_semantics(arch)
            found = kernels_of(kernel_module(index, kernel), sem)
            cache[key] = Analysed(found[0], sem) if found else None
        except UnsupportedArch:
            cache[key] = None
    return cache[key]


def block_at(k: Any, line: int) -> int | None:
    """Index of the analysis block holding the instruction at 0-based editor ``line``."""
    line1 = line + 1
    for b in k.blocks:
        if k.nodes[b.start].line <= line1 <= k.nodes[b.end - 1].line:
            return b.idx
    return None


def replace_lines(
    lines: tuple[str, ...] | list[str], first: int, last: int, new: list[str], eol: str
) -> TextEdit:
    """One edit replacing 1-based lines ``first..last`` (inclusive) by ``new``."""
    return TextEdit(first - 1, 0, last - 1, len(lines[last - 1]), eol.join(new))


def recompute_block_action(
    index: DocumentIndex, line: int, arch: str | None, eol: str = "\n"
) -> CodeAction | None:
    """Repair the control codes of the block at ``line`` in its current order; None if nothing changes."""
    kernel = index.kernel_at(line)
    if kernel is None or not arch:
        return None
    got = analysed(index, kernel, arch)
    if got is None:
        return None
    k, sem = got.kernel, got.sem
    if index.infos[line].kind == "label":  # a label line stands for the block it starts
        line = next((ln for ln in kernel.instr_lines if ln > line), line)
    block = block_at(k, line)
    if block is None:
        return None
    from sass_lsp.schedule.repair import block_edit, repair_block

    b = k.blocks[block]
    order = list(range(b.start, b.end))
    ctrls = repair_block(k, sem, block, order)
    first, last, new = block_edit(index.lines, k, block, order, ctrls)
    if list(index.lines[first - 1 : last]) == list(new):
        return None  # already what the repair would write
    edit = replace_lines(index.lines, first, last, list(new), eol)
    # offered as the fix of the hazards inside the block, else as a rewrite
    findings = kernel_findings(index, kernel, arch)  # cached: the diagnostics (and code_actions) ran it
    codes = tuple(dict.fromkeys(f.code for f in findings if first - 1 <= f.line <= last - 1))
    kind = "quickfix" if codes else "refactor.rewrite"
    return CodeAction(f"{RECOMPUTE_TITLE} (lines {first}–{last})", kind, (edit,), codes)


# ------------------------------------------------------------------------------------------- cost lens


def hot_loop_lens(index: DocumentIndex, kernel: Kernel, arch: str | None) -> Lens | None:
    """ "hottest loop: N predicted cycles/iteration (lines a–b)" above the kernel ("hottest block" for
    straight-line code), from :mod:`sass_lsp.schedule.cost`."""
    if not arch:
        return None
    cache = index.__dict__.setdefault("_hot_lens", {})
    if (kernel.name, arch) not in cache:
        cache[kernel.name, arch] = _hot_loop_lens(index, kernel, arch)
    return cache[kernel.name, arch]


def _hot_loop_lens(index: DocumentIndex, kernel: Kernel, arch: str) -> Lens | None:
    got = analysed(index, kernel, arch)
    if got is None or not got.kernel.nodes:
        return None
    from sass_lsp.schedule.cost import hot_region, region_cycles

    k = got.kernel
    region = hot_region(k)
    if not region.blocks:
        return None
    cycles = region_cycles(k, got.sem, region)
    first = min(k.nodes[k.blocks[b].start].line for b in region.blocks)
    last = max(k.nodes[k.blocks[b].end - 1].line for b in region.blocks)
    what = "hottest loop" if region.is_loop else "hottest block"
    unit = "predicted cycles/iteration" if region.is_loop else "predicted cycles"
    return Lens(kernel.section.line, f"{what}: {cycles:,.0f} {unit} (lines {first}–{last})")


# ------------------------------------------------------------------------------------------- stall hints


def stall_hints(
    index: DocumentIndex, start: int, end: int, timelines: dict[str, KernelTimeline | None]
) -> list[InlayHint]:
    """Per instruction line: its stall field (cycles before the next instruction may issue) and, where the
    timeline predicts it, the cycles it waits on a scoreboard before it issues (``timelines``: per kernel)."""
    out: list[InlayHint] = []
    for line in range(max(0, start), min(end + 1, len(index.lines))):
        info = index.infos[line]
        if info.kind != "instruction" or info.ctrl is None or line not in index.pcs:
            continue
        label = f" {info.ctrl.stall}cy"
        tooltip = f"stall {info.ctrl.stall} cycles before the next instruction"
        kernel = index.kernel_at(line)
        tl = timelines.get(kernel.name) if kernel is not None else None
        hit = tl.issues.get(line) if tl is not None else None
        if hit is not None:
            issue, _block = hit
            if issue.waited:
                label += f" +{issue.waited} wait"
            tooltip += f"; predicted issue cycle {issue.cycle} of its block"
            if issue.waited:
                tooltip += f", after waiting {issue.waited} cycles ({'; '.join(issue.reasons)})"
        out.append(InlayHint(line, len(index.lines[line].rstrip()), label, tooltip))
    return out
