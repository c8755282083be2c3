"""Feature: issue-gap rules. Distances in cycles between two instructions of a basic block that the hardware
needs although no register latency explains them (measured on the H200, see RULES.md).

- SASS016: a wait on scoreboard n issues too soon after the instruction that sets n: the scoreboard is not
  yet set, so the wait passes and the consumer reads the old register (``scoreboard_set_cycles``).
- SASS017: a uniform register rewritten too soon after a uniform-datapath instruction read it: those read
  their sources after issue (``uniform_war_cycles``; only arches whose table has it).

Both are block-local: the cycle between two instructions is the sum of the stalls in between, a lower bound
of the real distance.
"""

from __future__ import annotations

import bisect
import itertools
import operator

from sass_lsp.analysis.findings import RULES, Finding, Fix, RaiseStall, Related
from sass_lsp.analysis.program import F_NEVER, Program, ShapeFacts
from sass_lsp.isa.semantics import UNIT_BASE, Semantics, unit_name

_UNIFORM_PIPES = ("uniform", "umov")
_UR_MASK = ((1 << 200) - 1) << UNIT_BASE["UR"]  # UR and UP units
_UR_BASE = UNIT_BASE["UR"]
_WAIT_MASK = operator.itemgetter(4)  # of a control tuple (see program._Ctx.ctrl_tuple)


def issue_gap_rules(p: Program, sem: Semantics) -> list[Finding]:
    sb_set = sem.param("scoreboard_set_cycles")
    uwar = sem.param("uniform_war_cycles")
    if not (sb_set or uwar) or not p.blocks:
        return []
    # Each rule pairs an instruction with the latest earlier one of its block that it depends on, and
    # fires only when the two are fewer than ``need`` cycles apart: so only instructions that wait (or
    # write a uniform register) are visited, each looking back over that window.
    starts = {b.start for b in p.blocks}
    out: list[tuple[int, Finding]] = []  # (node, finding)
    if sb_set:
        out += _early_waits(p, starts, sb_set)
    if uwar:
        out += _early_uniform_writes(p, starts, sem)
    if not out:
        return []
    # The order of a pass over the blocks running both rules on each in turn (the sort is stable).
    first = sorted(starts)
    out.sort(key=lambda t: bisect.bisect_right(first, t[0]))
    return [f for _i, f in out]


def _early_waits(p: Program, starts: set[int], need: int) -> list[tuple[int, Finding]]:
    out = []
    cts = p.cts
    for i in itertools.compress(range(len(cts)), map(_WAIT_MASK, cts)):  # the nodes that wait
        mask = cts[i][4]
        setters = []  # (scoreboard, the latest node before i in its block that sets it, cycles between)
        j = i
        gap = 0
        while mask and j not in starts:
            j -= 1
            _f, rsb, wsb, stall, _wait, _syn = cts[j]
            gap += stall
            if gap >= need:
                break
            for sb in (rsb, wsb):
                if sb is not None and mask >> sb & 1:
                    setters.append((sb, j, gap))
                    mask &= ~(1 << sb)
        if len(setters) > 1:
            setters.sort()
        for sb, j, gap in setters:
            msg = (
                f"waits on SB{sb} {gap} cycle(s) after {_opcode(p, j)} at line {p.lines[j]} "
                f"sets it; the scoreboard is set only {need} cycles after issue"
            )
            out.append((i, _finding("SASS016", p, i, msg, j, f"sets SB{sb}", _stall_fix(p, i, need - gap))))
    return out


def _uniform_roles(sf: ShapeFacts, late_pipes: tuple[str, ...]) -> int:
    """Of an instruction of shape ``sf``: 1 if it writes a uniform register, 2 if it reads uniform
    registers on the uniform datapath after issue (its pipe one of ``late_pipes``); 0 for neither or when
    it never executes."""
    if sf.fb & F_NEVER:
        return 0
    writes = sf.def_const & _UR_MASK or any(b >= _UR_BASE for b in sf.def_bases)
    reads = sf.use_const & _UR_MASK or any(b >= _UR_BASE for b in sf.use_bases)
    late = reads and sf.pipe in late_pipes and not sf.variable
    return (1 if writes else 0) | (2 if late else 0)


def late_reader_pipes(sem: Semantics) -> tuple[str, ...]:
    """The uniform pipes whose instructions read their sources after issue: all but the table's
    ``early_readers`` (pipes ptxas lets a write follow a read of theirs by one cycle)."""
    early = (sem.params.get("uniform_war_cycles") or {}).get("early_readers", ())
    return tuple(pipe for pipe in _UNIFORM_PIPES if pipe not in early)


def _early_uniform_writes(p: Program, starts: set[int], sem: Semantics) -> list[tuple[int, Finding]]:
    """The distance needed depends on the writer's pipe (on sm_90 ULDC/UMOV 3 cycles, uniform ALU ops 2)."""
    out: list[tuple[int, Finding]] = []
    facts, cts = p.facts, p.cts
    shapes = p.shapes
    late_pipes = late_reader_pipes(sem)
    roles = {sf: r for sf in p.shape_set if (r := _uniform_roles(sf, late_pipes))}
    if not any(r & 2 for r in roles.values()):
        return out
    need_of = {sf: sem.param_for("uniform_war_cycles", sf.pipe) or 0 for sf, r in roles.items() if r & 1}
    for i in itertools.compress(range(len(shapes)), map(need_of.__contains__, shapes)):
        need = need_of[shapes[i]]
        written = facts[i].def_mask & _UR_MASK
        readers = []  # (unit, the latest node before i in its block that reads it late, cycles between)
        j = i
        gap = 0
        while written and j not in starts:
            j -= 1
            gap += cts[j][3]
            if gap >= need:
                break
            role = roles.get(shapes[j], 0)
            if role & 2:
                hit = facts[j].use_mask & written
                readers += ((u, j, gap) for u in _units(hit))
                written &= ~hit
            if role & 1:
                written &= ~facts[j].def_mask  # a write ends the previous reads of the unit
        if len(readers) > 1:
            readers.sort()
        for u, j, gap in readers:
            msg = (
                f"rewrites {unit_name(u)} {gap} cycle(s) after {_opcode(p, j)} at line "
                f"{p.lines[j]} reads it; uniform instructions read their sources up to {need} "
                "cycles after issue"
            )
            fix = _stall_fix(p, i, need - gap)
            out.append((i, _finding("SASS017", p, i, msg, j, f"reads {unit_name(u)}", fix)))
    return out


def _units(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def _opcode(p: Program, i: int) -> str:
    return p.facts[i].s.opcode


def _stall_fix(p: Program, i: int, cycles: int) -> tuple[Fix, ...]:
    """The instruction before ``i`` (in its block: the gap was counted there) stalls ``cycles`` longer."""
    return (RaiseStall(p.lines[i - 1], cycles),)


def _finding(
    code: str, p: Program, i: int, message: str, other: int, why: str, fixes: tuple[Fix, ...] = ()
) -> Finding:
    line = p.lines[i]
    col = p.ctrl_cols[i]
    return Finding(
        code,
        RULES[code].severity,
        line,
        col,
        line,
        p.end_cols[i],
        message,
        (Related(p.lines[other], why),),
        p.name,
        fixes=fixes,
    )
