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

from sass_lsp.analysis.findings import RULES, Finding, Related
from sass_lsp.analysis.program import F_NEVER, Program
from sass_lsp.isa.semantics import UNIT_BASE, Semantics, unit_name

_UNIFORM_PIPES = ("uniform", "umov")
_UR_MASK = ((1 << 200) - 1) << UNIT_BASE["UR"]  # UR and UP units


def issue_gap_rules(p: Program, sem: Semantics) -> list[Finding]:
    sb_set = sem.param("scoreboard_set_cycles")
    uwar = sem.param("uniform_war_cycles")
    out: list[Finding] = []
    for b in p.blocks:
        if sb_set:
            out += _early_waits(p, b.start, b.end, sb_set)
        if uwar:
            out += _early_uniform_writes(p, b.start, b.end, sem)
    return out


def _early_waits(p: Program, start: int, end: int, need: int) -> list[Finding]:
    out = []
    setter: dict[int, tuple[int, int]] = {}  # scoreboard -> (node, issue cycle)
    t = 0
    for i in range(start, end):
        c = p.ctrls[i]
        mask = c.wait_mask
        while mask:
            sb = (mask & -mask).bit_length() - 1
            mask &= mask - 1
            hit = setter.get(sb)
            if hit is not None and t - hit[1] < need:
                j = hit[0]
                msg = (
                    f"waits on SB{sb} {t - hit[1]} cycle(s) after {_opcode(p, j)} at line {p.lines[j]} "
                    f"sets it; the scoreboard is set only {need} cycles after issue"
                )
                out.append(_finding("SASS016", p, i, msg, j, f"sets SB{sb}"))
        for sb in (c.read_sb, c.write_sb):
            if sb is not None:
                setter[sb] = (i, t)
        t += c.stall
    return out


def _early_uniform_writes(p: Program, start: int, end: int, sem: Semantics) -> list[Finding]:
    """The distance needed depends on the writer's pipe (ULDC/UMOV need 3 cycles on sm_90, uniform ALU 2)."""
    need_by_pipe: dict[str, int] = {}
    out = []
    readers: dict[int, tuple[int, int]] = {}  # uniform unit -> (last uniform-datapath reader, issue cycle)
    t = 0
    for i in range(start, end):
        f = p.facts[i]
        if not f.fb & F_NEVER:
            need = need_by_pipe.get(f.s.pipe)
            if need is None:
                need = need_by_pipe[f.s.pipe] = sem.param_for("uniform_war_cycles", f.s.pipe) or 0
            written = f.def_mask & _UR_MASK
            while written:
                u = (written & -written).bit_length() - 1
                written &= written - 1
                hit = readers.pop(u, None)
                if hit is not None and hit[0] != i and t - hit[1] < need:
                    j = hit[0]
                    msg = (
                        f"rewrites {unit_name(u)} {t - hit[1]} cycle(s) after {_opcode(p, j)} at line "
                        f"{p.lines[j]} reads it; uniform instructions read their sources up to {need} "
                        "cycles after issue"
                    )
                    out.append(_finding("SASS017", p, i, msg, j, f"reads {unit_name(u)}"))
            if f.s.pipe in _UNIFORM_PIPES and not f.s.variable:
                read = f.use_mask & _UR_MASK
                while read:
                    u = (read & -read).bit_length() - 1
                    read &= read - 1
                    readers[u] = (i, t)
        t += p.ctrls[i].stall
    return out


def _opcode(p: Program, i: int) -> str:
    return p.facts[i].s.opcode


def _finding(code: str, p: Program, i: int, message: str, other: int, why: str) -> Finding:
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
    )
