"""Mutation suite: inject one hazard into a real ptxas kernel and require a finding at the right line.

Candidates are chosen by a simple in-block scan that is independent of the checker's dataflow; each
mutation is applied to a copy of the kernel's items and only that kernel is re-checked.
"""

from __future__ import annotations

import collections
import random

import pytest
from test_analysis_support import ARCHES, corpus_modules, text_sections, with_ctrl

from sass_lsp.analysis.check import check_kernel
from sass_lsp.analysis.program import build_kernel
from sass_lsp.isa.semantics import load_semantics
from sass_lsp.model import Instruction

PER_CLASS_PER_KERNEL = 4
RESULTS: dict[str, dict[str, str]] = {}


def _kernel(sec, items, sem):  # noqa: ANN001, ANN202
    return build_kernel(sec.name[6:], sec.line, items, sem)


def _mutations(sec, sem, rng):  # noqa: ANN001, ANN202
    """Yield (class, mutated items, line, expected codes)."""
    items = list(sec.items)
    k = _kernel(sec, items, sem)
    by_line = {it.line: i for i, it in enumerate(items) if isinstance(it, Instruction)}
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
        for i in range(b.start, b.end):
            nd = k.nodes[i]
            if "bar_sync" in nd.eff.flags:
                for j in range(i + 1, b.end):
                    if "shared" in k.nodes[j].eff.flags and not k.nodes[j].eff.never:
                        found["bar_to_shared"].append((nd, k.nodes[j]))
                        break
            if nd.eff.never and nd.eff.opcode == "LDS" and i + 1 < b.end and not k.nodes[i + 1].eff.never:
                found["move_placeholder"].append((nd, k.nodes[i + 1]))
    for cls, cands in found.items():
        rng.shuffle(cands)
        for cand in cands[:PER_CLASS_PER_KERNEL]:
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
            elif cls == "bar_to_shared":
                bar, sh = cand
                for n in k.nodes[bar.idx : sh.idx]:
                    j = by_line[n.line]
                    new[j] = with_ctrl(new[j], stall=1)
                if sh.idx - bar.idx >= load_semantics(sem.arch).param("bar_sync_to_shared"):
                    continue
                yield cls, new, sh.line, {"SASS008"}
            elif cls == "move_placeholder":
                ph, nxt = cand
                a, b2 = by_line[ph.line], by_line[nxt.line]
                new[a], new[b2] = new[b2], new[a]
                yield cls, new, ph.line, {"SASS009"}


@pytest.mark.parametrize("arch", ARCHES)
def test_mutations_are_flagged(arch: str) -> None:
    sem = load_semantics(arch)
    rng = random.Random(1234)
    total = collections.Counter()
    caught = collections.Counter()
    missed = []
    for name, module in corpus_modules(arch):
        for sec in text_sections(module):
            for cls, items, line, codes in _mutations(sec, sem, rng):
                k = build_kernel(sec.name[6:], sec.line, items, sem)
                got = {f.code for f in check_kernel(k, sem) if f.line == line}
                total[cls] += 1
                if got & codes:
                    caught[cls] += 1
                else:
                    missed.append(f"{name}:{line} {cls} expected {sorted(codes)} got {sorted(got)}")
    rates = {c: f"{caught[c]}/{total[c]}" for c in sorted(total)}
    print(arch, rates)
    RESULTS[arch] = rates
    assert not missed, f"{arch} {rates}\n" + "\n".join(missed[:40])
