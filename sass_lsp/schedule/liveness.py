"""Backward liveness over a kernel's CFG, every register unit at once (GPRs, predicates, uniform registers
and predicates: :mod:`sass_lsp.isa.semantics` numbers them), as bit masks: bit ``u`` is unit ``u``.

A guarded write does not kill (the old value survives where the guard is false). A block that calls,
returns (to a caller that may read anything) or ends in a branch the CFG does not resolve has every unit
live at its end. The moves that need to know what a path still reads (renames, cross-block hoists) ask
here."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sass_lsp.analysis.program import Kernel

ALL_UNITS = (1 << 1024) - 1  # wider than any unit number
GPR_UNITS = (1 << 256) - 1  # R0..R255


def mask(units: Iterable[int]) -> int:
    out = 0
    for u in units:
        out |= 1 << u
    return out


@dataclass(frozen=True)
class Liveness:
    live_in: list[int]  # per block, the units live at its start
    live_out: list[int]  # and at its end


def liveness(k: Kernel) -> Liveness:
    nb = len(k.blocks)
    gen, kill = [0] * nb, [0] * nb
    opaque = [False] * nb
    unresolved = {i for i, _ in k.unresolved}
    for b in k.blocks:
        g = kl = 0
        for i in range(b.start, b.end):
            eff = k.nodes[i].eff
            if eff.never:
                continue
            g |= mask(eff.use_units) & ~kl
            if eff.guard is None and not eff.guard_neg:
                kl |= mask(eff.def_units)
            if "call" in eff.flags or "ret" in eff.flags or i in unresolved:
                opaque[b.idx] = True
        gen[b.idx], kill[b.idx] = g, kl
    live_in, live_out = [0] * nb, [0] * nb
    changed = True
    while changed:
        changed = False
        for b in reversed(k.blocks):
            out = ALL_UNITS if opaque[b.idx] else 0
            for s in b.succs:
                out |= live_in[s]
            inn = gen[b.idx] | (out & ~kill[b.idx])
            if out != live_out[b.idx] or inn != live_in[b.idx]:
                live_out[b.idx], live_in[b.idx] = out, inn
                changed = True
    return Liveness(live_in, live_out)
