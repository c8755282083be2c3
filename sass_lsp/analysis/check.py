"""Feature: hazard check API. ``check_module(module, arch) -> list[Finding]`` for editors and the CLI.

Architecture Invariant: no IO, never raises on bad input (unparsable lines become SASS015 findings),
never mutates the module.

An instruction whose control field cannot be read (``S16``, ``S0x``, ``W9``) gets one finding at the field
and is checked as if it waited on every scoreboard, set none and stalled 15 cycles with a yield; findings
at that instruction or naming it as related are dropped, and so are the kernel's SASS006 (a wait on a
scoreboard only the unread field may set). The checker thus invents no hazard from a field it could not
read, at the price of missing one that the field, once fixed, will show. A kernel whose check fails for
any other reason gets one SASS015 finding at its section line; the other kernels keep theirs.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools

from sass_lsp.analysis.findings import RULES, ClearReuse, Finding, Fix, Related
from sass_lsp.analysis.hazards import Checker
from sass_lsp.analysis.issue_gaps import issue_gap_rules
from sass_lsp.analysis.program import (
    F_CALL,
    F_DEPBAR,
    F_NEVER,
    Kernel,
    Program,
    decode_ctrl,
    gc_paused,
    program_of_items,
    program_of_kernel,
    reuse_col,
)
from sass_lsp.isa.control import ControlCodeError, parse_control
from sass_lsp.isa.semantics import Semantics, load_semantics, unit_name
from sass_lsp.model import Instruction, Module, SectionBlock

# What an unreadable control field is checked as: waits on every scoreboard, sets none, the longest stall.
UNKNOWN_CONTROL = "B012345:R-:W-:Y:S15"


def check_module(module: Module, arch: str) -> list[Finding]:
    """All findings for every kernel (``.text.<kernel>`` section) of ``module``; sorted by line."""
    sem = load_semantics(arch)
    out: list[Finding] = []
    with gc_paused():
        for sec in module.sections:
            if sec.name.startswith(".text."):
                out.extend(check_section(sec, sem))
    return sorted(out, key=lambda f: (f.line, f.col, f.code))


def check_section(sec: SectionBlock, sem: Semantics) -> list[Finding]:
    """The findings of one kernel; a failure of the checker on it is one SASS015 finding, not a raise."""
    name = sec.name[len(".text.") :]
    items, unread = _with_unknown_controls(sec.items)
    try:
        found = check_program(program_of_items(name, sec.line, items, sem), sem)
    except Exception as err:  # a bug on this kernel's text: the file's other kernels are still checked
        message = f"the checker failed on kernel {name}: {type(err).__name__}: {err}"
        return [Finding("SASS015", "error", sec.line, 1, sec.line, 2, message[:300], (), name)]
    if not unread:
        return found
    lines = {ins.line for ins, _err in unread}
    kept = [
        f
        for f in found
        if f.line not in lines and f.code != "SASS006" and not any(r.line in lines for r in f.related)
    ]
    return kept + [_control_finding(ins, err, name) for ins, err in unread]


@functools.lru_cache(maxsize=4096)
def control_problem(ctrl: str) -> ControlCodeError | None:
    """Why a control text (inside the brackets) cannot be read, or None when it can."""
    try:
        parse_control(ctrl)
    except ControlCodeError as err:
        return err
    return None


def _with_unknown_controls(items: list) -> tuple[list, list[tuple[Instruction, ControlCodeError]]]:
    """``items`` with every unreadable control field replaced by :data:`UNKNOWN_CONTROL`, and those
    instructions with their errors (the list itself when there is none)."""
    problems = {
        c: e for c in {it.ctrl for it in items if isinstance(it, Instruction)} if (e := control_problem(c))
    }
    if not problems:
        return items, []
    unread = [(it, problems[it.ctrl]) for it in items if isinstance(it, Instruction) and it.ctrl in problems]
    fixed = [
        dataclasses.replace(it, ctrl=UNKNOWN_CONTROL)
        if isinstance(it, Instruction) and it.ctrl in problems
        else it
        for it in items
    ]
    return fixed, unread


def _control_finding(ins: Instruction, err: ControlCodeError, kernel: str) -> Finding:
    """SASS012 for a well-formed field with a value out of range, SASS015 for one that cannot be read."""
    code = "SASS012" if decode_ctrl(ins.ctrl) is not None else "SASS015"
    col = ins.ctrl_col + max(0, err.col)
    text = ins.ctrl if len(ins.ctrl) <= 40 else ins.ctrl[:39] + "…"
    why = err.message if len(err.message) <= 120 else err.message[:119] + "…"
    message = f"bad control field '[{text}]': {why}; hazards at this instruction are not checked"
    return Finding(code, "error", ins.line, col, ins.line, col + 1, message, (), kernel, err.hint)


def check_kernel(k: Kernel, sem: Semantics) -> list[Finding]:
    with gc_paused():
        return check_program(program_of_kernel(k, sem), sem)


def check_program(p: Program, sem: Semantics) -> list[Finding]:
    findings = Checker(None, sem, program=p).run()
    findings.extend(_local_rules(p))
    findings.extend(issue_gap_rules(p, sem))
    return findings


def _finding(
    code: str,
    p: Program,
    line: int,
    col: int,
    end_col: int,
    message: str,
    related: tuple = (),
    fixes: tuple[Fix, ...] = (),
) -> Finding:
    return Finding(
        code, RULES[code].severity, line, col, line, end_col, message, related, p.name, fixes=fixes
    )


def _local_rules(p: Program) -> list[Finding]:
    """Rules on instruction neighbourhoods: placeholders, reuse, CFG gaps, unparsable control fields."""

    out: list[Finding] = []
    facts = p.facts
    for ins in p.bad_ctrl:
        out.append(
            _finding(
                "SASS015",
                p,
                ins.line,
                ins.ctrl_col,
                ins.text_col,
                f"cannot decode control field [{ins.ctrl}]",
            )
        )
    for idx, why in p.unresolved:
        out.append(_finding("SASS014", p, p.lines[idx], p.text_cols[idx], p.end_cols[idx], why))
    out.extend(_unset_waits(p))
    followers = p.ctx.followers
    block_start = {b.start for b in p.blocks}
    n = len(facts)
    shapes = p.shapes
    some = {sf for sf in p.shape_set if sf.reuse or sf.opcode in ("?", "LDS")}  # what the rules look at
    for i in itertools.compress(range(n), map(some.__contains__, shapes)) if some else ():
        f = facts[i]
        s = f.s
        if s.opcode == "?":
            out.append(
                _finding("SASS015", p, p.lines[i], p.text_cols[i], p.end_cols[i], "cannot parse instruction")
            )
            continue
        if f.fb & F_NEVER and s.opcode == "LDS" and followers:
            nxt = facts[i + 1].s.opcode if i + 1 < n else None
            prev = facts[i - 1].s.opcode if i else None
            ok = nxt is not None and (nxt in followers)
            msg = None
            if ok and prev is not None and prev == "LDGSTS":
                msg = (
                    f"`@!PT LDS RZ, [RZ]` placeholder directly after LDGSTS (line {p.lines[i - 1]}); "
                    "ptxas places the placeholders before the LDGSTS"
                )
            elif not ok:
                what = nxt if i + 1 < n else "the end of the kernel"
                msg = (
                    f"`@!PT LDS RZ, [RZ]` placeholder followed by {what}; ptxas places it directly "
                    f"before {'/'.join(sorted(followers))}"
                )
            if msg is not None:
                out.append(_finding("SASS009", p, p.lines[i], p.text_cols[i], p.end_cols[i], msg))
        if s.reuse:
            out.extend(_reuse(p, i, block_start))
    if p.ctx.guarded:
        out.extend(_unguarded(p))
    return out


def _unguarded(p: Program) -> list[Finding]:
    """SASS018: an opcode ptxas always issues after `@!PT LDS RZ, [RZ]` placeholders (LDGSTS on sm_90) with
    none before it in its block since the last barrier: moved above its placeholders, or they are gone. On
    an H100, LDGSTS moved above its placeholders and nothing else gave wrong results."""
    facts, guarded = p.facts, p.ctx.guarded
    out: list[Finding] = []
    for b in p.blocks:
        covered = False  # a placeholder run since the block's start or its last BAR
        for i in range(b.start, b.end):
            f = facts[i]
            op = f.s.opcode
            if f.fb & F_NEVER:
                covered = covered or op == "LDS"
            elif op == "BAR":
                covered = False
            elif op in guarded and not covered:
                msg = (
                    f"{op} with no `@!PT LDS RZ, [RZ]` placeholder before it in its block since the last "
                    f"barrier; ptxas always puts them before {op}, and {op} moved above them gives wrong "
                    "results"
                )
                out.append(_finding("SASS018", p, p.lines[i], p.text_cols[i], p.end_cols[i], msg))
    return out


def _unset_waits(p: Program) -> list[Finding]:
    """SASS006: a wait on a scoreboard that no instruction of the kernel sets (ptxas also emits redundant
    waits on scoreboards it uses elsewhere, so only the never-set case is reported)."""
    set_mask = 0
    wait_any = 0
    distinct = set(p.cts)  # few: the tuples are shared by the nodes with the same control code
    for _flags, rsb, wsb, _stall, wait, _syn in distinct:
        for sb in (wsb, rsb):
            if sb is not None:
                set_mask |= 1 << sb
        wait_any |= wait
    for sf in p.shape_set:
        if sf.fb & F_CALL:
            return []  # a callee may set any scoreboard and return with it pending
        if sf.fb & F_DEPBAR:
            wait_any |= sf.sb_set
    out: list[Finding] = []
    if not wait_any & ~set_mask:
        return out
    for i, (c, f) in enumerate(zip(p.ctrls, p.facts, strict=True)):
        mask = c.wait_mask | (f.s.sb_set if f.fb & F_DEPBAR else 0)
        if not mask & ~set_mask:
            continue
        for sb in range(6):
            if mask >> sb & 1 and not set_mask >> sb & 1:
                cc = p.ctrl_cols[i]
                out.append(
                    _finding(
                        "SASS006",
                        p,
                        p.lines[i],
                        cc,
                        cc + 8,
                        f"waits on SB{sb}, which no instruction of {p.name} sets",
                    )
                )
    return out


def _reuse(p: Program, i: int, block_start: set[int]) -> list[Finding]:
    """Flag a .reuse whose register is overwritten here or rewritten before any further read."""
    facts = p.facts
    f = facts[i]
    out = []
    for reg, rcol, nb in f.reuse:
        if f.def_mask >> reg & 1:
            line, tcol = p.lines[i], p.text_cols[i]
            col = tcol + reuse_col(p.texts[i], rcol, nb)
            out.append(
                _finding(
                    "SASS010",
                    p,
                    line,
                    col,
                    col + 2,
                    f".reuse on {unit_name(reg)}, which this instruction overwrites: the cache would "
                    "hold the old value",
                    fixes=(ClearReuse(line, col),),
                )
            )
            continue
        verdict = None
        bit = 1 << reg
        for j in range(i + 1, min(len(facts), i + 64)):
            if j in block_start:
                break  # whether the cache survives a block boundary is not known: say nothing
            nxt = facts[j]
            if nxt.use_mask & bit:
                break  # read again (the slot mapping per opcode is not modelled, so any slot counts)
            if nxt.def_mask & bit:
                verdict = (
                    f"{unit_name(reg)} is rewritten at line {p.lines[j]} before any further read",
                    p.lines[j],
                )
                break
        if verdict:
            line, tcol = p.lines[i], p.text_cols[i]
            col = tcol + reuse_col(p.texts[i], rcol, nb)
            out.append(
                _finding(
                    "SASS010",
                    p,
                    line,
                    col,
                    col + 2,
                    f".reuse on {unit_name(reg)} cannot hit: {verdict[0]}",
                    (Related(verdict[1], "next use of the slot"),),
                    (ClearReuse(line, col),),
                )
            )
    return out
