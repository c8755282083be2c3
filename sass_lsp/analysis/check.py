"""Feature: hazard check API. ``check_module(module, arch) -> list[Finding]`` for editors and the CLI.

Architecture Invariant: no IO, never raises on bad input (unparsable lines become SASS015 findings),
never mutates the module.
"""

from __future__ import annotations

from sass_lsp.analysis.findings import RULES, Finding
from sass_lsp.analysis.hazards import Checker
from sass_lsp.analysis.program import Kernel, kernels_of
from sass_lsp.isa.semantics import Semantics, load_semantics, unit_name
from sass_lsp.model import Module


def check_module(module: Module, arch: str) -> list[Finding]:
    """All findings for every kernel (``.text.<kernel>`` section) of ``module``; sorted by line."""
    sem = load_semantics(arch)
    out: list[Finding] = []
    for k in kernels_of(module, sem):
        out.extend(check_kernel(k, sem))
    return sorted(out, key=lambda f: (f.line, f.col, f.code))


def check_kernel(k: Kernel, sem: Semantics) -> list[Finding]:
    findings = Checker(k, sem).run()
    findings.extend(_local_rules(k, sem))
    return findings


def _finding(
    code: str, k: Kernel, line: int, col: int, end_col: int, message: str, related: tuple = ()
) -> Finding:
    return Finding(code, RULES[code].severity, line, col, line, end_col, message, related, k.name)


def _local_rules(k: Kernel, sem: Semantics) -> list[Finding]:
    """Rules on instruction neighbourhoods: placeholders, reuse, CFG gaps, unparsable control fields."""

    out: list[Finding] = []
    nodes = k.nodes
    for ins in k.bad_ctrl:
        out.append(
            _finding(
                "SASS015",
                k,
                ins.line,
                ins.ctrl_col,
                ins.text_col,
                f"cannot decode control field [{ins.ctrl}]",
            )
        )
    for idx, why in k.unresolved:
        nd = nodes[idx]
        out.append(_finding("SASS014", k, nd.line, nd.text_col, nd.end_col, why))
    out.extend(_unset_waits(k))
    followers = set(sem.data.get("params", {}).get("placeholder_followers", {}).get("value", ()))
    block_start = {b.start for b in k.blocks}
    for i, nd in enumerate(nodes):
        eff = nd.eff
        if eff.opcode == "?":
            out.append(_finding("SASS015", k, nd.line, nd.text_col, nd.end_col, "cannot parse instruction"))
            continue
        if eff.never and eff.opcode == "LDS" and followers:
            nxt = nodes[i + 1] if i + 1 < len(nodes) else None
            prev = nodes[i - 1] if i else None
            ok = nxt is not None and (nxt.eff.opcode in followers)
            if ok and prev is not None and prev.eff.opcode == "LDGSTS":
                out.append(
                    _finding(
                        "SASS009",
                        k,
                        nd.line,
                        nd.text_col,
                        nd.end_col,
                        f"`@!PT LDS RZ, [RZ]` placeholder directly after LDGSTS (line {prev.line}); "
                        "ptxas places the placeholders before the LDGSTS",
                    )
                )
            elif not ok:
                what = nxt.eff.opcode if nxt else "the end of the kernel"
                out.append(
                    _finding(
                        "SASS009",
                        k,
                        nd.line,
                        nd.text_col,
                        nd.end_col,
                        f"`@!PT LDS RZ, [RZ]` placeholder followed by {what}; ptxas places it directly "
                        f"before {'/'.join(sorted(followers))}",
                    )
                )
        reused = [o for o in eff.srcs if o.reuse and o.units]
        if reused:
            out.extend(_reuse(k, i, reused, block_start))
    return out


def _unset_waits(k: Kernel) -> list[Finding]:
    """SASS006: a wait on a scoreboard that no instruction of the kernel sets (ptxas also emits redundant
    waits on scoreboards it uses elsewhere, so only the never-set case is reported)."""
    set_mask = 0
    for nd in k.nodes:
        for sb in (nd.ctrl.write_sb, nd.ctrl.read_sb):
            if sb is not None:
                set_mask |= 1 << sb
        if "call" in nd.eff.flags:
            return []  # a callee may set any scoreboard and return with it pending
    out = []
    for nd in k.nodes:
        mask = nd.ctrl.wait_mask | (nd.eff.sb_set if "depbar" in nd.eff.flags else 0)
        for sb in range(6):
            if mask >> sb & 1 and not set_mask >> sb & 1:
                out.append(
                    _finding(
                        "SASS006",
                        k,
                        nd.line,
                        nd.ctrl_col,
                        nd.ctrl_col + 8,
                        f"waits on SB{sb}, which no instruction of {k.name} sets",
                    )
                )
    return out


def _reuse(k: Kernel, i: int, reused: list, block_start: set[int]) -> list[Finding]:
    """Flag a .reuse whose register is overwritten here or rewritten before any further read."""
    from sass_lsp.analysis.findings import Related

    nd = k.nodes[i]
    out = []
    for op in reused:
        reg = op.units[0]
        if reg in nd.eff.def_units:
            out.append(
                _finding(
                    "SASS010",
                    k,
                    nd.line,
                    nd.text_col + op.col,
                    nd.text_col + op.col + 2,
                    f".reuse on {unit_name(reg)}, which this instruction overwrites: the cache would "
                    "hold the old value",
                )
            )
            continue
        verdict = None
        for j in range(i + 1, min(len(k.nodes), i + 64)):
            nxt = k.nodes[j]
            if j in block_start:
                break  # whether the cache survives a block boundary is not known: say nothing
            if reg in nxt.eff.use_units:
                break  # read again (the slot mapping per opcode is not modelled, so any slot counts)
            if reg in nxt.eff.def_units:
                verdict = (
                    f"{unit_name(reg)} is rewritten at line {nxt.line} before any further read",
                    nxt.line,
                )
                break
        if verdict:
            out.append(
                _finding(
                    "SASS010",
                    k,
                    nd.line,
                    nd.text_col + op.col,
                    nd.text_col + op.col + 2,
                    f".reuse on {unit_name(reg)} cannot hit: {verdict[0]}",
                    (Related(verdict[1], "next use of the slot"),),
                )
            )
    return out
