"""Feature: control-code repair. New control codes for a reordered basic block, a reordered Kernel, and the
text edit that writes a new order into a ``.cuasm`` document.

API
---
``repair_block(k, sem, block, order, entry=None) -> list[Ctrl]``
    Control codes for ``order`` (node indices of the original kernel ``k``; a permutation of the block's
    nodes reachable by legal moves, see :mod:`.deps`), aligned with ``order``. ``entry``: the hazards
    ``State`` at block entry (``Checker(k, sem).run()``; ``checker.entry[block]``); computed (once per
    kernel) when None. Raises :class:`RepairError` only for orders the dependence model forbids.
``reordered_kernel(k, sem, orders, repair=True) -> Kernel``
    A new Kernel with the blocks in ``orders`` ({block: order}) permuted and repaired; ``Node.idx``
    renumbered, ``Node.line`` and columns kept from the original node; blocks and CFG identical.
``block_edit(lines, k, block, order, ctrls, texts=None) -> (first_line, last_line, new_lines)``
    Replacement for the 1-based inclusive line range of the block's instructions: slot i gets instruction
    ``order[i]`` with control field ``ctrls[i]``; comments and blank lines in the range stay; each slot keeps
    its ``/*addr*/`` comment; an instruction's trailing comment (``// hidden 0x...``) travels with it.
    ``texts``: ``repaired_texts(k, block, order, ctrls)`` when the caller has them.
``ctrl_text(c) -> str``                   ``B------:R-:W2:Y:S04`` (the text inside the brackets).
``repaired_texts(k, block, order, ctrls) -> list[str]``
    The instruction texts ``block_edit`` and ``reordered_kernel`` write (``.reuse`` dropped where unsafe).

What a repair keeps and recomputes (safe against :mod:`sass_lsp.analysis.hazards` by construction)
- W/R scoreboards and the yield flag travel with their instruction (producers sharing a scoreboard is
  always safe: a wait drains them all). Yield is forced on for stalls above ``max_stall_without_yield``.
- Wait masks: scoreboard events are simulated through the new order from the block's entry state with the
  checker's semantics; an instruction waits on SB k when it reads a result (RAW), overwrites a late-read
  source (WAR) or a pending result (WAW) of a producer on k, also where the checker trusts in-order memory
  queues (ptxas waits there too); for a result without a scoreboard, on the younger same-queue producer
  that completes it. Fixed nodes (branches, barriers, DEPBAR, ...) keep their ptxas waits, and at full
  barriers and the block's last instruction waits are added until no event is pending that was not
  pending there in the ptxas order: DEPBAR counts and successor blocks see the same (or fewer) events.
  Late reads cover uniform registers too (ptxas waits on SYNCS's R scoreboard before rewriting its UR).
- Stalls: issue cycles are placed as early as the constraints allow: fixed-latency RAW (the checker's
  latency rows), BAR.SYNC -> shared (``bar_sync_to_shared``), ptxas's distance (capped) between an older
  fixed-latency write and a newer write of a register and between a late read without R scoreboard and the
  next write, results in flight at entry, and at the exit everything in flight has had at least as long as
  in the ptxas order (or its whole latency), and a wait on a scoreboard issues at least
  ``scoreboard_set_cycles`` after the instruction that sets it. Each instruction also keeps a minimum gap
  after it: its ptxas stall where no latency explains it (issue rate, ptxas choices) or where it never moves
  (barriers, WARPGROUP, HGMMA, DEPBAR, branches), else 1 (0 only where ptxas put S00). So repairing the ptxas
  order reproduces ptxas's stalls.
- ``.reuse``: kept on an instruction only if the instructions after it, up to the first that reads or
  writes the reused register, are the same as in the ptxas order (and it has no Y); otherwise the text drops
  every ``.reuse`` of it. This is stricter than "its previous instruction changed" and covers both readings
  of the reuse cache (value kept for the next reader of the slot; stale after a rewrite).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from sass_lsp.analysis.hazards import Event, State
from sass_lsp.analysis.program import Block, Ctrl, Kernel, Node, encode_ctrl
from sass_lsp.isa.semantics import Semantics, reused_units
from sass_lsp.schedule.deps import (
    MAX_STALL,
    BlockFacts,
    KernelContext,
    NodeFacts,
    block_deps,
    entry_bounds,
    exit_bounds,
    kernel_context,
)

_REUSE = re.compile(r"\.reuse\b")
_ADDR = re.compile(r"\s*/\*[^*]*\*/")


_CTRLS: dict[tuple, Ctrl] = {}  # Ctrl is immutable: share them (cheaper than building 300 per repair)
_NO_EVENTS: frozenset[Event] = frozenset()


class RepairError(ValueError):
    """The order breaks a constraint the dependence model exists to keep (not a legal-move order)."""


# ---------------------------------------------------------------- public API


ctrl_text = encode_ctrl  # the bracket text of a control code (kept under the name the API promised)


def repair_block(
    k: Kernel, sem: Semantics, block: int, order: Sequence[int], entry: State | None = None
) -> list[Ctrl]:
    ctx = kernel_context(k, sem)
    if not order:
        return []
    plan = _plan(ctx, block, ctx.entry[block] if entry is None else entry)
    waits, stalls = _repair_order(plan, order)
    info = plan.facts.info
    limit = MAX_STALL if ctx.max_noyield is None else ctx.max_noyield
    nodes = k.nodes
    out = []
    for x, wait, stall in zip(order, waits, stalls, strict=True):
        f = info[x]
        yield_flag = f.yield_flag or stall > limit
        if wait == f.wait and stall == f.stall and yield_flag == f.yield_flag and not nodes[x].ctrl.errors:
            out.append(nodes[x].ctrl)  # its ptxas control code: callers compare by identity first
            continue
        key = (wait, f.rsb, f.wsb, yield_flag, stall)
        c = _CTRLS.get(key)
        if c is None:
            c = _CTRLS[key] = Ctrl(*key)
        out.append(c)
    return out


def reordered_kernel(
    k: Kernel, sem: Semantics, orders: Mapping[int, Sequence[int]], repair: bool = True
) -> Kernel:
    nodes = list(k.nodes)
    new_idx = list(range(len(nodes)))
    for block, order in orders.items():
        b = k.blocks[block]
        if sorted(order) != list(range(b.start, b.end)):
            raise ValueError(f"order for block {block} is not a permutation of nodes {b.start}..{b.end - 1}")
        if repair:
            ctrls = repair_block(k, sem, block, order)
            texts = repaired_texts(k, block, order, ctrls)
        else:
            ctrls = [k.nodes[x].ctrl for x in order]
            texts = [k.nodes[x].text for x in order]
        for p, (x, ctrl, text) in enumerate(zip(order, ctrls, texts, strict=True)):
            old = k.nodes[x]
            eff = old.eff if text == old.text else sem.effects(text)
            idx = b.start + p
            end_col = old.text_col + len(text.rstrip())
            nodes[idx] = Node(idx, old.line, old.ctrl_col, old.text_col, text, ctrl, eff, end_col)
            new_idx[x] = idx
    blocks = [Block(b.idx, b.start, b.end, list(b.succs), list(b.preds), list(b.labels)) for b in k.blocks]
    unresolved = [(new_idx[i], why) for i, why in k.unresolved]
    return Kernel(k.name, k.section_line, nodes, blocks, dict(k.label_node), unresolved, list(k.bad_ctrl))


def block_edit(
    lines: Sequence[str],
    k: Kernel,
    block: int,
    order: Sequence[int],
    ctrls: Sequence[Ctrl],
    texts: Sequence[str] | None = None,
) -> tuple[int, int, list[str]]:
    b = k.blocks[block]
    slots = k.nodes[b.start : b.end]
    if texts is None:
        texts = repaired_texts(k, block, order, ctrls)
    slot_at = {nd.line: p for p, nd in enumerate(slots)}
    first, last = slots[0].line, slots[-1].line
    out = []
    for line in range(first, last + 1):
        p = slot_at.get(line)
        if p is None:
            out.append(lines[line - 1])
            continue
        ins = k.nodes[order[p]]
        text, ctrl = texts[p], ctrl_text(ctrls[p])
        old = lines[line - 1]
        if ins is slots[p] and text == ins.text and _same_ctrl(old, ins, ctrl):
            out.append(old)  # what _head + _tail give for the slot's own instruction, unchanged
            continue
        out.append(_head(old, slots[p], ctrl) + _tail(lines[ins.line - 1], ins, text))
    return first, last, out


def repaired_texts(k: Kernel, block: int, order: Sequence[int], ctrls: Sequence[Ctrl]) -> list[str]:
    b = k.blocks[block]
    nodes = k.nodes
    n = len(order)
    # Positions before ``first`` and after ``last`` hold ptxas's instructions: the window after a position
    # past ``last`` is ptxas's, and so is one that ends before ``first`` (a move changes a short span of a
    # block of thousands: most windows are not walked at all).
    first = next((p for p, x in enumerate(order) if x != b.start + p), n)
    last = next((p for p in range(n - 1, -1, -1) if order[p] != b.start + p), -1)
    out = []
    for p, x in enumerate(order):
        nd = nodes[x]
        reused = reused_units(nd.text)
        if not reused:
            out.append(nd.text)
            continue
        after = range(p + 1, n)  # positions, not a slice: a window is short, the block is not
        keep = not ctrls[p].yield_flag and (
            p > last
            or all(
                (p < first and any(_touches(nodes[y], u) for y in range(x + 1, b.start + first)))
                or _window(nodes, range(x + 1, b.end), u) == _window(nodes, (order[q] for q in after), u)
                for u in reused
            )
        )
        out.append(nd.text if keep else _REUSE.sub("", nd.text))
    return out


# ---------------------------------------------------------------- plan: per block and entry state


@dataclass(slots=True)
class _Plan:
    # No reference back to the KernelContext that keeps the plan: no cycle for the cyclic collector to find
    # when a context is dropped (suggest runs with the collector paused, see policy.suggest).
    sb_set: int  # KernelContext.sb_set
    facts: BlockFacts
    entry_events: tuple[Event, ...]
    lb: dict[int, int]  # earliest issue cycle from results in flight at entry
    exit_cons: dict[int, int]  # block end >= issue(i) + cycles
    exit_c0: int  # block end >= this
    base: dict[int, int]  # minimum stall of each instruction
    keep_wait: dict[int, int]  # ptxas waits kept on fixed nodes
    drain_at: dict[int, frozenset[Event]]  # node -> events pending there (after its waits) in ptxas order
    trace: _Trace | None = None  # the repair of the ptxas order, step by step (long blocks, on first use)
    traced: bool = False


def _plan(ctx: KernelContext, block: int, entry: State) -> _Plan:
    key = (block, id(entry))
    hit = ctx.plans.get(key)
    if hit is not None and hit[0] is entry:
        return hit[1]
    facts = ctx.block_facts(block)
    deps = block_deps(ctx.k, block, ctx.sem)
    info = facts.info
    lb = entry_bounds(ctx, facts, entry)
    exit_cons, exit_c0 = exit_bounds(ctx, facts, entry)
    keep_wait = {x: info[x].wait for x in deps.fixed if info[x].wait}
    drain_at: dict[int, frozenset[Event]] = {}
    barriers = deps.barriers
    events = list(entry.events)
    for x, f in info.items():  # (in node order; the tests inlined: thousands of instructions, most do none)
        if f.wait:
            events = _complete_waits(events, f.wait)
        if f.depbar is not None:
            events = _depbar(events, f)
        if x in barriers:
            drain_at[x] = frozenset(events)
        if f.events:
            events = _own(events, f)
    plan = _Plan(ctx.sb_set, facts, tuple(entry.events), lb, exit_cons, exit_c0, {}, keep_wait, drain_at)
    plan.base = _base_stalls(plan, deps.fixed)
    ctx.plans[key] = (entry, plan)
    return plan


def _base_stalls(plan: _Plan, fixed: frozenset[int]) -> dict[int, int]:
    """Each instruction's own minimum gap: 1 where a latency explains its ptxas stall, else the ptxas stall
    itself (so S00 and S01 stay). Instructions that never move (barriers, WARPGROUP, HGMMA, DEPBAR,
    branches) always keep their ptxas stall: what their issue needs after them is not modelled (in three of
    the H200's wrong results, a move nearby had cut WARPGROUP.ARRIVE from S02 to S01)."""
    facts = plan.facts
    t = facts.orig_t
    base = {}
    last = facts.end - 1
    for x in range(facts.start, facts.end):
        stall = base[x] = facts.info[x].stall
        if stall <= 1 or x in fixed:
            continue
        if x < last:
            y = x + 1
            bound = max([plan.lb.get(y, 0)] + [t[i] + c for i, c in facts.dist.get(y, ())])
            explained = bound >= t[y]
        else:
            bound = max([plan.exit_c0] + [t[i] + c for i, c in plan.exit_cons.items()])
            explained = bound >= facts.orig_len
        if explained:
            base[x] = 1
    return base


# ---------------------------------------------------------------- incremental repair of long blocks

# Blocks at least this long repair a reordered order from the repair of the ptxas order: a move changes a
# short span of a block of thousands, and the passes below are sequential, so the part before the first
# changed position is the ptxas order's (and the waits rejoin it once the pending scoreboard events do).
INCREMENTAL_MIN = 256


@dataclass(slots=True)
class _Trace:
    """The repair of the block's ptxas order: its waits and stalls, the pending events before each position
    (``events[p]``; ``events[n]`` after the last), and the issue cycles as ``_stalls`` first placed them,
    before its first raise (at position ``first_raise``; ``n + 1``: none)."""

    waits: list[int]
    stalls: list[int]
    events: list[list[Event]]
    t_first: list[int]
    first_raise: int


def _repair_order(plan: _Plan, order: Sequence[int]) -> tuple[list[int], list[int]]:
    """Waits and stalls of ``order``: what :func:`_waits` and :func:`_stalls` give from the block's start,
    for a long block resumed from the ptxas order's repair at the first position that differs from it."""
    start = plan.facts.start
    n = len(order)
    trace = _ptxas_trace(plan) if n >= INCREMENTAL_MIN else None
    if trace is None:
        waits = _waits(plan, order)
        return waits, _stalls(plan, order, waits)
    first = next((p for p, x in enumerate(order) if x != start + p), n)
    if first == n:
        return list(trace.waits), list(trace.stalls)
    last = next(p for p in range(n - 1, -1, -1) if order[p] != start + p)
    waits = _waits(plan, order, first, trace, last)
    if first > trace.first_raise:  # the ptxas pass had raised cycles before ``first`` by then: start over
        return waits, _stalls(plan, order, waits)
    return waits, _stalls(plan, order, waits, first, trace.t_first)


def _ptxas_trace(plan: _Plan) -> _Trace | None:
    if not plan.traced:
        plan.traced = True
        order = range(plan.facts.start, plan.facts.end)
        events: list[list[Event]] = []
        probe = _Probe()
        try:
            waits = _waits(plan, order, record=events)
            stalls = _stalls(plan, order, waits, probe=probe)
        except RepairError:
            return None  # (never for ptxas's own code) the plain passes then report the error
        plan.trace = _Trace(waits, stalls, events, probe.t_first, probe.first_raise)
    return plan.trace


@dataclass(slots=True)
class _Probe:
    """What a ``_stalls`` pass reports for the trace: its first raise and the cycles placed before it."""

    first_raise: int = -1
    t_first: list[int] = field(default_factory=list)


# ---------------------------------------------------------------- scoreboard simulation (hazards.Checker)


def _complete(events: list[Event], done: set[int]) -> list[Event]:
    """Checker._complete on the events at positions ``done``: a finished write also finishes its own reads
    and older scoreboard-less ops of its queue; a released read finishes older scoreboard-less reads."""
    if not done:
        return events
    last_w: dict[str, int] = {}
    last_r: dict[str, int] = {}
    w_idx = set()
    for p in sorted(done):
        e = events[p]
        if e.kind == "W":
            last_w[e.queue] = p
            w_idx.add(e.idx)
        else:
            last_r[e.queue] = p
    out = []
    for p, e in enumerate(events):
        if p in done or (e.kind == "R" and e.idx in w_idx):
            continue
        if e.sb < 0 and (p < last_w.get(e.queue, -1) or (e.kind == "R" and p < last_r.get(e.queue, -1))):
            continue
        out.append(e)
    return out


def _complete_waits(events: list[Event], mask: int) -> list[Event]:
    if not mask or not events:
        return events
    return _complete(events, {p for p, e in enumerate(events) if e.sb >= 0 and mask >> e.sb & 1})


def _depbar(events: list[Event], f: NodeFacts) -> list[Event]:
    if f.depbar is None:
        return events
    sbs, keep = f.depbar
    done: set[int] = set()
    for sb in range(6):
        if sbs >> sb & 1:
            on_sb = [p for p, e in enumerate(events) if e.sb == sb]
            done.update(on_sb[: max(0, len(on_sb) - keep)])
    return _complete(events, done)


def _own(events: list[Event], f: NodeFacts) -> list[Event]:
    """The instruction's own events replace any of its still pending (loop) ones."""
    if not f.events:
        return events
    return [e for e in events if e.idx != f.idx] + list(f.events)


def _completer(events: list[Event], pos: int) -> int:
    """Wait mask completing the scoreboard-less event at ``pos``: a younger W of its queue on a scoreboard."""
    e = events[pos]
    for y in events[pos + 1 :]:
        if y.queue == e.queue and y.kind == "W" and y.sb >= 0:
            return 1 << y.sb
    raise RepairError(f"result of node {e.idx} has no scoreboard and no younger op of its queue to wait on")


def _needed(events: list[Event], f: NodeFacts) -> int:
    """Scoreboards the instruction must wait on before it issues (the checker's SASS001/003/004/007).
    Stricter than the checker: a memory op overwriting a register a pending memory op still reads or writes
    waits too (ptxas does, e.g. ``STL [R1], R18`` R0 then ``[B0] LDG R18``), in-order queue or not."""
    if f.never:
        return 0
    mask = 0
    uses, defs, guard, neg = f.uses, f.defs, f.guard, f.neg
    for pos, e in enumerate(events):
        units = e.units
        if e.guard is not None and guard == e.guard and neg != e.guard_neg:
            continue  # complementary guards: never both execute
        if e.kind == "W":
            if f.gmma and e.queue == "gmma":
                continue
            hit = not units.isdisjoint(uses) or not units.isdisjoint(defs)
        else:
            hit = not units.isdisjoint(defs)
        if hit:
            mask |= 1 << e.sb if e.sb >= 0 else _completer(events, pos)
    return mask


def _drain(events: list[Event], allowed: frozenset[Event]) -> int:
    mask = 0
    for pos, e in enumerate(events):
        if e not in allowed:
            mask |= 1 << e.sb if e.sb >= 0 else _completer(events, pos)
    return mask


def _waits(
    plan: _Plan,
    order: Sequence[int],
    first: int = 0,
    trace: _Trace | None = None,
    last: int = -1,
    record: list[list[Event]] | None = None,
) -> list[int]:
    """Wait masks of ``order``. ``trace`` (with ``first``, the first position that differs from the ptxas
    order, and ``last``, the last): start from the ptxas order's state at ``first`` and, once past ``last``,
    take the rest from the trace as soon as the pending events are the same as there. ``record`` gets the
    pending events before each position and after the last (the lists are never changed in place)."""
    info = plan.facts.info
    events = list(plan.entry_events) if trace is None else trace.events[first]
    pending = _units(events)
    keep_wait, drain_at = plan.keep_wait, plan.drain_at
    out = [] if trace is None else trace.waits[:first]
    if record is not None:
        record.append(events)
    for p in range(first, len(order)):
        x = order[p]
        f = info[x]
        wait = keep_wait.get(x, 0)
        if events and not pending.isdisjoint(f.touch):
            wait |= _needed(events, f)
        allowed = drain_at.get(x)
        if wait or f.depbar or allowed is not None:
            after = _depbar(_complete_waits(events, wait), f)
            for _ in range(7 if allowed is not None else 0):  # each round adds a scoreboard
                extra = _drain(after, allowed or _NO_EVENTS)  # (allowed is set: 0 rounds when None)
                if not extra:
                    break
                wait |= extra
                after = _depbar(_complete_waits(events, wait), f)
            else:
                if allowed is not None:
                    raise RepairError(f"cannot drain the scoreboards at node {x} to the ptxas state")
            if len(after) != len(events):
                events, pending = after, _units(after)
        if f.events:
            if any(e.idx == x for e in events):  # pending from the previous iteration of a loop
                events = [e for e in events if e.idx != x]
                pending = _units(events)
            events = events + list(f.events)
            pending = pending.union(*(e.units for e in f.events))
        out.append(wait)
        if record is not None:
            record.append(events)
        if trace is not None and p > last and events == trace.events[p + 1]:
            out.extend(trace.waits[p + 1 :])  # the same state, the same instructions: the same waits
            break
    return out


def _units(events: list[Event]) -> frozenset[int]:
    return frozenset().union(*(e.units for e in events))


# ---------------------------------------------------------------- stalls


def _setters(plan: _Plan, order: Sequence[int], waits: Sequence[int]) -> list[tuple[int, ...]]:
    """Per position, the positions of the latest instructions before it that set a scoreboard it waits on."""
    info = plan.facts.info
    last: dict[int, int] = {}
    out = []
    for p, x in enumerate(order):
        wait = waits[p]
        out.append(tuple(q for sb, q in last.items() if wait >> sb & 1) if wait else ())
        f = info[x]
        for sb in (f.wsb, f.rsb):
            if sb is not None:
                last[sb] = p
    return out


def _stalls(
    plan: _Plan,
    order: Sequence[int],
    waits: Sequence[int],
    first: int = 0,
    t_first: Sequence[int] = (),
    probe: _Probe | None = None,
) -> list[int]:
    """Earliest issue cycles under the latency constraints and the per-instruction minimum gaps. A gap the
    4-bit field cannot hold raises the issue cycles before it, and the pass resumes from there. A wait on a
    scoreboard issues at least ``sb_set`` cycles after the instruction that sets it: the scoreboard is not
    yet set the cycle after issue (ptxas never waits sooner; on the H200 a wait one cycle after LDC / MUFU
    read the old register).

    ``first`` / ``t_first``: resume at position ``first`` with the cycles before it (the pass's state there
    when nothing was raised yet, as for an order that equals the ptxas order up to ``first``). ``probe``
    gets the position of the first raise and the cycles placed before it."""
    dist, base, lb = plan.facts.dist, plan.base, plan.lb
    sb_set = plan.sb_set
    n = len(order)
    pos = {x: p for p, x in enumerate(order)}
    setters = _setters(plan, order, waits)
    t = [0] * (n + 1)  # t[n]: the block end
    t[:first] = t_first[:first]
    raised: dict[int, int] = {}  # position -> lower bound set by a too-long gap after it
    p, budget = first, 16 * n + 16
    while p <= n:
        if p < n:
            x = order[p]
            c = t[p - 1] + base[order[p - 1]] if p else 0
            c = max(c, lb.get(x, 0), raised.get(p, 0))
            for i, cycles in dist.get(x, ()):
                q = pos[i]
                if q >= p:
                    raise RepairError(f"node {x} placed before node {i} it depends on")
                if t[q] + cycles > c:
                    c = t[q] + cycles
            for q in setters[p]:
                c = max(c, t[q] + sb_set)
        else:
            c = max(t[n - 1] + base[order[n - 1]], plan.exit_c0, raised.get(n, 0))
            for i, cycles in plan.exit_cons.items():
                if t[pos[i]] + cycles > c:
                    c = t[pos[i]] + cycles
        if p == 0 and c > 0:
            raise RepairError(
                f"node {order[0]} cannot issue first: it needs {c} cycles after the block entry"
            )
        if p and c - t[p - 1] > MAX_STALL:
            if probe is not None and probe.first_raise < 0:
                probe.first_raise, probe.t_first = p, t[:p]
            budget -= 1
            if budget < 0:
                raise RepairError("stall constraints did not settle")
            q, need = p - 1, c - MAX_STALL
            while True:
                raised[q] = max(raised.get(q, 0), need)
                if q == 0 or need - t[q - 1] <= MAX_STALL:
                    break
                q, need = q - 1, need - MAX_STALL
            p = q
            continue
        t[p] = c
        p += 1
    if probe is not None and probe.first_raise < 0:
        probe.first_raise, probe.t_first = n + 1, t
    return [t[p + 1] - t[p] for p in range(n)]


# ---------------------------------------------------------------- text


def _window(nodes: Sequence[Node], after: Iterable[int], unit: int) -> list[int]:
    """The instructions after a ``.reuse``, up to the first that reads or writes the reused register."""
    out = []
    for y in after:
        out.append(y)
        if _touches(nodes[y], unit):
            break
    return out


def _touches(nd: Node, unit: int) -> bool:
    eff = nd.eff
    return unit in eff.use_units or unit in eff.def_units


def _split(line: str, nd: Node) -> tuple[int, int]:
    """(index of ']' closing the control field, index where the slot's address comment ends)."""
    close = line.index("]", nd.ctrl_col - 1)
    m = _ADDR.match(line, close + 1)
    return close, m.end() if m else close + 1


def _same_ctrl(line: str, nd: Node, ctrl: str) -> bool:
    """The line's control field reads ``ctrl`` exactly (so rewriting it changes nothing)."""
    start = nd.ctrl_col - 1
    return line.startswith(ctrl, start) and line.startswith("]", start + len(ctrl))


def _head(line: str, slot: Node, ctrl: str) -> str:
    close, end = _split(line, slot)
    return line[: slot.ctrl_col - 1] + ctrl + line[close:end]


def _tail(line: str, ins: Node, text: str) -> str:
    _close, end = _split(line, ins)
    start = ins.text_col - 1
    if text != ins.text:
        if line[start : start + len(ins.text)] == ins.text:
            line = line[:start] + text + line[start + len(ins.text) :]
            line = _WORD_TRAILER.sub(_without_reuse_bits, line)
        else:  # a comment inside the instruction: drop .reuse from the code part only
            line = strip_reuse(line)
    return line[end:]


def strip_reuse(line: str) -> str:
    """``line`` without reuse flags: the ``.reuse`` of its code (not of its comment) and, since the flags the
    text does not show travel in a ``// hidden``/``// raw`` word trailer, that word's reuse bits."""
    code, sep, comment = line.partition("//")
    return _WORD_TRAILER.sub(_without_reuse_bits, _REUSE.sub("", code) + sep + comment)


_WORD_TRAILER = re.compile(r"// (hidden|raw) 0x([0-9a-fA-F]{32})")
REUSE_BITS = 0xF << 122  # the four operand-slot reuse flags of the 128-bit word (isa/control.py)


def _without_reuse_bits(m: re.Match) -> str:
    kind, word = m.group(1), int(m.group(2), 16) & ~REUSE_BITS
    return f"// {kind} 0x{word:032x}"
