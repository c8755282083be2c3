"""Feature: issue timeline. Predicted issue cycle per instruction of a basic block, and why it waited.

Cheap and explainable (for hover): a single in-order warp with nothing else competing. Each instruction
issues ``stall`` cycles after the previous one, later if its wait mask names a scoreboard whose producer
(in this block) is assumed still busy: variable latencies are *assumed* per queue from the arch table.
Producers from earlier blocks are assumed complete.
"""

from __future__ import annotations

from dataclasses import dataclass

from sass_lsp.analysis.program import Kernel, kernels_of
from sass_lsp.isa.semantics import Semantics, load_semantics
from sass_lsp.model import Module


@dataclass(frozen=True)
class Issue:
    line: int
    cycle: int  # predicted issue cycle relative to the block start
    waited: int  # cycles beyond the previous instruction's stall
    reasons: tuple[str, ...]  # why it issues when it does, most important first


@dataclass(frozen=True)
class BlockTimeline:
    first_line: int
    last_line: int
    issues: tuple[Issue, ...]
    cycles: int  # block length: last issue + its stall


def timeline(module: Module, arch: str, kernel: str) -> list[BlockTimeline]:
    """Per-block timelines of ``kernel`` (name without ``.text.``); empty if there is no such kernel."""
    sem = load_semantics(arch)
    for k in kernels_of(module, sem):
        if k.name == kernel:
            return kernel_timeline(k, sem)
    return []


def kernel_timeline(k: Kernel, sem: Semantics) -> list[BlockTimeline]:
    out = []
    for b in k.blocks:
        issues: list[Issue] = []
        ready: dict[int, tuple[int, int, str]] = {}  # sb -> (ready cycle, producer line, queue)
        t = 0
        prev = None
        for i in range(b.start, b.end):
            nd = k.nodes[i]
            reasons: list[str] = []
            base = t
            if prev is not None:
                reasons.append(f"S{prev.ctrl.stall:02d} after line {prev.line}")
                if prev.ctrl.yield_flag:
                    reasons.append(f"yield hint after line {prev.line}")
            waited_until = base
            for sb in range(6):
                if nd.ctrl.wait_mask >> sb & 1 and sb in ready:
                    rc, pl, q = ready.pop(sb)
                    if rc > waited_until:
                        waited_until = rc
                    reasons.append(
                        f"SB{sb} set by line {pl} ({q}, assumed {sem.assumed_latency(q)} cycles)"
                        + (f": waits {rc - base}" if rc > base else ": already done")
                    )
            t = waited_until
            issues.append(Issue(nd.line, t, t - base, tuple(reasons)))
            for sb in (nd.ctrl.write_sb, nd.ctrl.read_sb):
                if sb is not None:
                    lat = sem.assumed_latency(nd.eff.queue) if sb == nd.ctrl.write_sb else 1
                    old = ready.get(sb, (0, 0, ""))[0]
                    ready[sb] = (max(old, t + lat), nd.line, nd.eff.queue or nd.eff.opcode)
            t += nd.ctrl.stall
            prev = nd
        first = k.nodes[b.start].line
        last = k.nodes[b.end - 1].line
        out.append(BlockTimeline(first, last, tuple(issues), t))
    return out
