"""Hazard injection: take a real ptxas kernel and break its schedule in one known way.

Used by the mutation test suite (every injected hazard must be flagged at the right line) and by
``benchmarks/hazard_hardware.py`` (run the mutants on a GPU against the original). Candidates come from a
simple in-block scan that is independent of the checker's dataflow.
"""

from __future__ import annotations

import collections
import dataclasses
import random
import re
from collections.abc import Iterator

from sass_lsp.analysis.issue_gaps import late_reader_pipes
from sass_lsp.analysis.program import Kernel, build_kernel, decode_ctrl, encode_ctrl
from sass_lsp.isa.semantics import UNIT_BASE, Semantics
from sass_lsp.model import Instruction, SectionBlock

PER_CLASS_PER_KERNEL = 4
_CTRL = re.compile(r"\[[^\]]*\]")


def with_ctrl(ins: Instruction, **fields: object) -> Instruction:
    """Copy of ``ins`` with control fields changed (wait=, rsb=, wsb=, stall=)."""
    c = decode_ctrl(ins.ctrl)
    changed = {"wait": "wait_mask", "rsb": "read_sb", "wsb": "write_sb", "stall": "stall"}
    text = encode_ctrl(dataclasses.replace(c, **{changed[k]: v for k, v in fields.items()}))
    return dataclasses.replace(ins, ctrl=text)


def _kernel(sec: SectionBlock, items: list, sem: Semantics) -> Kernel:
    return build_kernel(sec.name[6:], sec.line, items, sem)


def mutations(
    sec: SectionBlock, sem: Semantics, rng: random.Random, per_class: int = PER_CLASS_PER_KERNEL
) -> Iterator[tuple[str, list, int, set[str]]]:
    """Yield (class, mutated items, line that must be flagged, expected codes) for one text section."""
    items = list(sec.items)
    k = _kernel(sec, items, sem)
    by_line = {it.line: i for i, it in enumerate(items) if isinstance(it, Instruction)}
    late_pipes = late_reader_pipes(sem)  # a UMOV read is over at issue: no SASS017 to provoke after it
    found = collections.defaultdict(list)
    for b in k.blocks:
        pend_w: dict[int, list] = collections.defaultdict(list)  # sb -> [(node, units)]
        pend_r: dict[int, list] = collections.defaultdict(list)
        for i in range(b.start, b.end):
            nd = k.nodes[i]
            uses = nd.eff.use_units
            defs = nd.eff.def_units
            for sb in range(6):
                if not nd.ctrl.wait_mask >> sb & 1:
                    continue
                # Instructions after this wait that rely on it: hoisting one above it is a hazard.
                hoist = _hoistable_after(k, b.end, nd, sb)
                for p, units in pend_w[sb]:
                    if p.eff.never:
                        continue
                    c = hoist(lambda x, u=units: bool(x.eff.use_units & u))
                    if c is not None:
                        found["move_consumer_up"].append((nd, c))
                for _p, units in pend_r[sb]:
                    x = hoist(lambda x, u=units: bool(x.eff.def_units & u) and not x.eff.use_units & u)
                    if x is not None:
                        found["move_write_up"].append((nd, x))
                if nd.eff.opcode not in ("DEPBAR",):
                    raw = [p for p, u in pend_w[sb] if u & uses and not p.eff.never]
                    if raw:
                        found["drop_wait_raw"].append((nd, sb, raw[-1]))
                        found["reuse_pending_sb"].append((nd, sb, raw[-1]))
                    war = [p for p, u in pend_r[sb] if u & defs]
                    if war and not (nd.eff.variable and nd.eff.queue in ("lsu", "mio")):
                        found["drop_wait_war"].append((nd, sb, war[-1]))
                    waw = [p for p, u in pend_w[sb] if u & defs and not u & uses]
                    if waw and not raw and not (nd.eff.variable and nd.eff.queue in ("lsu", "mio")):
                        found["drop_wait_waw"].append((nd, sb, waw[-1]))
                done = {id(p) for p, _u in pend_w[sb]}  # a finished load has also read its sources
                for lst in pend_r.values():
                    lst[:] = [(p, u) for p, u in lst if id(p) not in done]
                pend_w[sb].clear()
                pend_r[sb].clear()
            if nd.ctrl.write_sb is not None:
                pend_w[nd.ctrl.write_sb].append((nd, nd.eff.def_units))
            if nd.ctrl.read_sb is not None:
                pend_r[nd.ctrl.read_sb].append((nd, frozenset(u for u in nd.eff.use_units if u < 256)))
        # fixed-latency pairs: producer P, first reader C in the same block
        for i in range(b.start, b.end):
            p = k.nodes[i]
            if p.eff.variable or not p.eff.def_units or p.eff.never or "gmma" in p.eff.flags:
                continue
            dist = 0
            for j in range(i + 1, b.end):
                dist += k.nodes[j - 1].ctrl.stall
                c = k.nodes[j]
                hit = p.eff.def_units & c.eff.use_units
                if hit:
                    found["shrink_stall"].append((p, c, dist))
                    break
                if p.eff.def_units & c.eff.def_units or dist > 16:
                    break
        # issue gaps: a scoreboard's setter directly followed by a wait on it, a uniform-datapath read
        # directly followed by a write of that register (cut to one cycle: SASS016 / SASS017)
        for i in range(b.start, b.end - 1):
            p, nxt = k.nodes[i], k.nodes[i + 1]
            if p.ctrl.stall < 2 or p.eff.never:
                continue
            if any(
                sb is not None and nxt.ctrl.wait_mask >> sb & 1 for sb in (p.ctrl.write_sb, p.ctrl.read_sb)
            ):
                found["early_wait"].append((p, nxt))
            uniform_reads = {u for u in p.eff.use_units if u >= UNIT_BASE["UR"]}
            if p.eff.pipe in late_pipes and not p.eff.variable and uniform_reads & nxt.eff.def_units:
                found["early_uniform_write"].append((p, nxt))
        for i in range(b.start, b.end):
            nd = k.nodes[i]
            if "bar_sync" in nd.eff.flags:
                for j in range(i + 1, b.end):
                    if "shared" in k.nodes[j].eff.flags and not k.nodes[j].eff.never:
                        found["bar_to_shared"].append((nd, k.nodes[j]))
                        break
            if nd.eff.never and nd.eff.opcode == "LDS" and i + 1 < b.end and not k.nodes[i + 1].eff.never:
                found["move_placeholder"].append((nd, k.nodes[i + 1]))
                run = i
                while run > b.start and k.nodes[run - 1].eff.never and k.nodes[run - 1].eff.opcode == "LDS":
                    run -= 1
                if k.nodes[i + 1].eff.opcode == "LDGSTS":
                    found["ldgsts_above_placeholders"].append((k.nodes[run], k.nodes[i + 1]))
                    group = _independent_ldgsts(k, run, i + 1, b.end)
                    if len(group) > 1:
                        found["ldgsts_group_above_placeholders"].append((k.nodes[run], group))
    for cls, cands in found.items():
        rng.shuffle(cands)
        for cand in cands[:per_class]:
            new = list(items)
            if cls.startswith("drop_wait"):
                nd, sb, _p = cand
                j = by_line[nd.line]
                new[j] = with_ctrl(new[j], wait=nd.ctrl.wait_mask & ~(1 << sb))
                codes = {
                    "drop_wait_raw": {"SASS001", "SASS007"},
                    "drop_wait_war": {"SASS003"},
                    "drop_wait_waw": {"SASS004"},
                }[cls]
                yield cls, new, nd.line, codes
            elif cls == "reuse_pending_sb":
                nd, sb, p = cand
                # move the producer to a scoreboard nobody waits on between it and the consumer
                waited = 0
                for n in k.nodes[p.idx + 1 : nd.idx + 1]:
                    waited |= n.ctrl.wait_mask | (n.eff.sb_set if "depbar" in n.eff.flags else 0)
                other = next((s for s in range(6) if s != sb and not waited >> s & 1), None)
                if other is None:
                    continue
                j = by_line[p.line]
                new[j] = with_ctrl(new[j], wsb=other)
                yield cls, new, nd.line, {"SASS001"}
            elif cls == "shrink_stall":
                p, c, dist = cand
                kind_rows = [
                    sem.latency(p.eff.pipe, c.eff.pipe, kd)
                    for kd in ("reg", "reg_hi", "pred", "guard", "ur", "addr")
                ]
                need = min((r.cycles for r in kind_rows if r), default=None)
                if need is None or need <= 1:
                    continue
                target = need - 1
                lines = [n for n in k.nodes[p.idx : c.idx]]
                budget = target - len(lines)  # keep every stall >= 1, put the rest on the producer
                if budget < 0:
                    continue  # too many instructions in between to get below the latency
                for idx, n in enumerate(lines):
                    j = by_line[n.line]
                    new[j] = with_ctrl(new[j], stall=1 + (budget if idx == 0 else 0))
                yield cls, new, c.line, {"SASS002"}
            elif cls in ("early_wait", "early_uniform_write"):
                param = "scoreboard_set_cycles" if cls == "early_wait" else "uniform_war_cycles"
                if not (sem.param(param) or 0) > 1:
                    continue  # the arch's table has no such gap: nothing to flag
                p, nxt = cand
                j = by_line[p.line]
                new[j] = with_ctrl(new[j], stall=1)
                yield cls, new, nxt.line, {"SASS016" if cls == "early_wait" else "SASS017"}
            elif cls == "bar_to_shared":
                bar, sh = cand
                for n in k.nodes[bar.idx : sh.idx]:
                    j = by_line[n.line]
                    new[j] = with_ctrl(new[j], stall=1)
                if sh.idx - bar.idx >= sem.param("bar_sync_to_shared"):
                    continue
                yield cls, new, sh.line, {"SASS008"}
            elif cls in ("move_consumer_up", "move_write_up"):
                wait_node, moved = cand
                a, z = by_line[wait_node.line], by_line[moved.line]
                new[a : z + 1] = [new[z], *new[a:z]]  # the moved instruction now issues before the wait
                codes = {"SASS001", "SASS007"} if cls == "move_consumer_up" else {"SASS003"}
                yield cls, new, moved.line, codes
            elif cls == "move_placeholder":
                ph, nxt = cand
                a, b2 = by_line[ph.line], by_line[nxt.line]
                new[a], new[b2] = new[b2], new[a]
                yield cls, new, ph.line, {"SASS009"}
            elif cls == "ldgsts_group_above_placeholders":
                first, group = cand  # every LDGSTS of the run's group that reads nothing written after it
                a, moved = by_line[first.line], {by_line[g.line] for g in group}
                z = max(moved)
                new[a : z + 1] = [new[j] for j in sorted(moved)] + [
                    new[j] for j in range(a, z + 1) if j not in moved
                ]
                if sem.data.get("params", {}).get("placeholder_guarded"):
                    yield cls, new, group[0].line, {"SASS018"}
            elif cls == "ldgsts_above_placeholders":
                first, ldgsts = cand  # the run's first placeholder, the LDGSTS right after the run
                a, z = by_line[first.line], by_line[ldgsts.line]
                new[a : z + 1] = [new[z], *new[a:z]]  # the LDGSTS now issues before its placeholders
                if sem.data.get("params", {}).get("placeholder_guarded"):
                    yield cls, new, ldgsts.line, {"SASS018"}


def _independent_ldgsts(k: Kernel, run: int, start: int, end: int) -> list:
    """The LDGSTS from ``start`` up to the group's LDGDEPBAR or a BAR whose sources no instruction from the
    placeholder run at ``run`` on writes: they can move above the run without reading other values."""
    group, written = [], set()
    for i in range(run, end):
        nd = k.nodes[i]
        if nd.eff.opcode in ("LDGDEPBAR", "BAR"):
            break
        if nd.eff.opcode == "LDGSTS" and i >= start and not set(nd.eff.use_units) & written:
            group.append(nd)
        written |= set(nd.eff.def_units)
    return group


def _hoistable_after(k: Kernel, end: int, wait_node, sb: int):  # noqa: ANN001, ANN202
    """A finder for the first later instruction in the block (before anything waits on ``sb`` again) that
    matches and could move directly above ``wait_node`` without changing which values any instruction reads:
    fixed-latency arithmetic with no wait of its own, independent of everything it would move above."""

    def find(matches) -> object | None:  # noqa: ANN001
        between = [wait_node]
        for j in range(wait_node.idx + 1, end):
            x = k.nodes[j]
            if x.ctrl.wait_mask >> sb & 1:
                return None
            eff = x.eff
            fixed_alu = not (eff.variable or eff.flags or eff.never or eff.guard is not None)
            if fixed_alu and not x.ctrl.wait_mask and matches(x) and all(_independent(x, n) for n in between):
                return x
            between.append(x)
        return None

    return find


def _independent(x, n) -> bool:  # noqa: ANN001
    """Swapping x and n keeps every value either reads (no register in common except shared sources)."""
    a, b = x.eff, n.eff
    return not (a.use_units & b.def_units or a.def_units & (b.use_units | b.def_units))


def render(lines: list[str], original: list, mutated: list) -> list[str]:
    """Source lines (0-based list) with ``mutated`` instructions written where ``original`` ones stood."""
    out = list(lines)
    for old, new in zip(original, mutated, strict=True):
        if old is new or not isinstance(new, Instruction):
            continue
        source = lines[new.line - 1]
        out[old.line - 1] = _CTRL.sub(lambda _m, c=new.ctrl: f"[{c}]", source, count=1)
    return out
