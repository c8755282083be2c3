"""Feature: issue timeline. Predicted issue cycle per instruction of a basic block, and why it waited.

Cheap and explainable (for hover): a single in-order warp with nothing else competing. Each instruction
issues ``stall`` cycles after the previous one, later if its wait mask names a scoreboard whose producer
(in this block) is assumed still busy: variable latencies are *assumed* per queue from the arch table.
Producers from earlier blocks are assumed complete.
"""

from __future__ import annotations

from dataclasses import dataclass

from sass_lsp.analysis.program import (
    C_SETS,
    C_YIELD,
    Kernel,
    Program,
    gc_paused,
    program_of_items,
    program_of_kernel,
)
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
    for sec in module.sections:
        if sec.name.startswith(".text.") and sec.name[len(".text.") :] == kernel:
            with gc_paused():
                return program_timeline(program_of_items(kernel, sec.line, sec.items, sem), sem)
    return []


def kernel_timeline(k: Kernel, sem: Semantics) -> list[BlockTimeline]:
    with gc_paused():
        return program_timeline(program_of_kernel(k, sem), sem)


def program_timeline(p: Program, sem: Semantics) -> list[BlockTimeline]:
    assumed: dict[str | None, int] = {}

    def latency(queue: str | None) -> int:
        hit = assumed.get(queue)
        if hit is None:
            hit = assumed[queue] = sem.assumed_latency(queue)
        return hit

    out = []
    lines, cts, facts = p.lines, p.cts, p.facts
    for b in p.blocks:
        issues: list[Issue] = []
        ready: dict[int, tuple[int, int, str]] = {}  # sb -> (ready cycle, producer line, queue)
        t = 0
        reasons: tuple[str, ...] = ()
        for i in range(b.start, b.end):
            flags, rsb, wsb, stall, wait, _syn = cts[i]
            line = lines[i]
            base = t
            if wait and ready:
                more = list(reasons)
                waited_until = base
                for sb in range(6):
                    if wait >> sb & 1 and sb in ready:
                        rc, pl, q = ready.pop(sb)
                        if rc > waited_until:
                            waited_until = rc
                        more.append(
                            f"SB{sb} set by line {pl} ({q}, assumed {latency(q)} cycles)"
                            + (f": waits {rc - base}" if rc > base else ": already done")
                        )
                reasons = tuple(more)
                t = waited_until
            issues.append(Issue(line, t, t - base, reasons))
            if flags & C_SETS:
                s = facts[i].s
                for sb in (wsb, rsb):
                    if sb is not None:
                        lat = latency(s.queue) if sb == wsb else 1
                        old = ready.get(sb, (0, 0, ""))[0]
                        ready[sb] = (max(old, t + lat), line, s.queue or s.opcode)
            t += stall
            after = f"S{stall:02d} after line {line}"
            reasons = (after, f"yield hint after line {line}") if flags & C_YIELD else (after,)
        out.append(BlockTimeline(lines[b.start], lines[b.end - 1], tuple(issues), t))
    return out
