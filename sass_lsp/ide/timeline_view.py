"""Feature: stall diagnostics on hover: the static issue timeline of the hovered instruction's basic block
(:func:`sass_lsp.analysis.timeline`): predicted issue cycle, cycles waited beyond the previous stall, and why.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sass_lsp.analysis import BlockTimeline, Issue, timeline
from sass_lsp.ide.checker_input import kernel_module
from sass_lsp.ide.index import DocumentIndex
from sass_lsp.isa.archs import UnsupportedArch


@dataclass(frozen=True)
class KernelTimeline:
    """Issues of one kernel keyed by 0-based editor line, with the block each belongs to."""

    issues: dict[int, tuple[Issue, BlockTimeline]]

    def markdown(self, line: int) -> str | None:
        hit = self.issues.get(line)
        if hit is None:
            return None
        issue, block = hit
        head = (
            f"**Issue timeline** (static model): issues at cycle {issue.cycle} of its block "
            f"(lines {block.first_line}–{block.last_line}, {block.cycles} cycles)"
        )
        wait = f"; waits **{issue.waited}** cycles beyond the previous stall" if issue.waited else ""
        reasons = "".join(f"\n- {reason}" for reason in issue.reasons)
        return head + wait + reasons


def kernel_timeline(index: DocumentIndex, line: int, arch: str) -> KernelTimeline | None:
    """The timeline of the kernel containing ``line``; None outside kernels or for arches without tables."""
    kernel = index.kernel_at(line)
    if kernel is None:
        return None
    try:
        blocks: Iterable[BlockTimeline] = timeline(kernel_module(index, kernel), arch, kernel.name)
    except UnsupportedArch:
        return None
    return KernelTimeline({iss.line - 1: (iss, b) for b in blocks for iss in b.issues})
