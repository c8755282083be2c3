"""Feature: static schedule cost. Predicted cycles of a kernel's hottest region under a simple issue model.

API:
- ``Region`` (blocks in layout order, ``is_loop``, loop ``depth``) and ``hot_region(k)``: the innermost
  natural loop with more than one real instruction (deepest first, then largest), else the longest
  straight-line chain of basic blocks.
- ``region_cycles(k, sem, region)``: a loop's steady-state cycles per iteration (the body simulated from
  an empty state until two consecutive iterations take equally long, at least two and at most four, so
  loop-carried scoreboard waits count); for straight-line code the cycles from the first
  issue until the last issue and the results still in flight are done.
- ``kernel_cost(k, sem) = region_cycles(k, sem, hot_region(k))``.
- ``sequence_cycles(nodes, sem, is_loop, record)``: the same for a list of nodes (the game's current region).
- ``simulate(nodes, sem, state, record)``: the shared issue model, one pass over instructions in order,
  carrying :class:`IssueState` across blocks and iterations; ``record`` collects (issue cycle, cycles
  waited) per instruction for the observation features.

The model (a single in-order warp, nothing else competing; the same idea as
:func:`sass_lsp.analysis.timeline.kernel_timeline`, which resets per block, ignores ``DEPBAR`` and queue
throughput, and writes reasons for hover):
- an instruction issues ``stall`` cycles after the previous one, later if its wait mask names a scoreboard
  whose producers are not done (result ready ``sem.assumed_latency(queue)`` after the producer started),
  if it is ``DEPBAR.LE SBn, k`` and more than ``k`` producers on SBn are not done, or if it is
  ``WARPGROUP.DEPBAR.LE gsb0, k`` and more than ``k`` committed HGMMA groups are not done;
- each variable-latency queue in :data:`QUEUE_RATES` starts one instruction per ``interval`` cycles; the
  warp stalls once more than ``backlog`` cycles of work are queued ahead of it (asynchronous queues only
  delay their results), so bunching every load together is not free.

Architecture Invariant: pure (no IO, no torch/pygls/CUDA), never mutates its inputs.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

from sass_lsp.analysis.program import Kernel, Node
from sass_lsp.isa.semantics import Semantics

LOOP_ITERATIONS = 4  # DEPBAR.LE SBn, k keeps k loads in flight: a wait may reach two iterations back
READ_RELEASE = 1  # cycles until a read scoreboard clears; the figure the hover timeline uses (a guess)


@dataclass(frozen=True)
class QueueRate:
    interval: int  # cycles between two instructions the queue starts
    backlog: int  # queued cycles the warp tolerates before it stalls at issue (-1: never stalls)
    source: str
    ref: str


# No measured throughput figures exist yet (see /work/shared/notes); these are documented guesses until the
# calibrate command measures them. A semantics param ``queue_interval_<queue>`` overrides ``interval``.
QUEUE_RATES: dict[str, QueueRate] = {
    "lsu": QueueRate(4, 8, "guess", "L1 ~128 B/clk/SM; a 128-bit warp access moves 512 B"),
    "mio": QueueRate(4, 8, "guess", "shared memory ~128 B/clk/SM, as lsu"),
    "xu": QueueRate(8, 16, "guess", "MUFU 16 lanes/clk/SM = 4 per SM sub-partition: 8 clk per warp"),
    "mma": QueueRate(4, -1, "guess", "HMMA.16816: 2048 FMA at ~512 dense FMA/clk per sub-partition"),
    # HGMMA: interval from the tile shape, see _gmma_interval; asynchronous (results only).
    "gmma": QueueRate(0, -1, "guess", "H100 dense fp16 peak 989 TFLOP/s = 2048 FMA/clk/SM at 1.83 GHz"),
}
GMMA_FMA_PER_CYCLE_16BIT = 2048  # see QUEUE_RATES["gmma"].ref; 8-bit inputs double it, tf32 halves it
_SHAPE = re.compile(r"^(\d+)x(\d+)x(\d+)$")


# ------------------------------------------------------------------------------------------ region


@dataclass(frozen=True)
class Region:
    blocks: tuple[int, ...]  # block indices in layout order
    is_loop: bool
    depth: int  # loop nesting depth (1 = outermost loop); 0 for straight-line code

    def nodes(self, k: Kernel) -> list[int]:
        """Node indices of the region in layout order."""
        return [i for b in self.blocks for i in range(k.blocks[b].start, k.blocks[b].end)]


def _real(k: Kernel, blocks: set[int]) -> int:
    return sum(
        1 for b in blocks for i in range(k.blocks[b].start, k.blocks[b].end) if k.nodes[i].eff.opcode != "NOP"
    )


def natural_loops(k: Kernel) -> dict[int, frozenset[int]]:
    """Loop header -> body blocks (back edges to one header merged); only blocks reachable from entry."""
    n = len(k.blocks)
    if not n:
        return {}
    reach = {0}
    todo = [0]
    while todo:
        for s in k.blocks[todo.pop()].succs:
            if s not in reach:
                reach.add(s)
                todo.append(s)
    # Iterative dominator sets: small CFGs (tens of blocks), so the simple algorithm is fast enough.
    dom = {b: set(reach) for b in reach}
    dom[0] = {0}
    changed = True
    while changed:
        changed = False
        for b in sorted(reach - {0}):
            preds = [p for p in k.blocks[b].preds if p in reach]
            new = set.intersection(*(dom[p] for p in preds)) if preds else set()
            new = new | {b}
            if new != dom[b]:
                dom[b] = new
                changed = True
    loops: dict[int, set[int]] = {}
    for b in sorted(reach):
        for h in k.blocks[b].succs:
            if h in dom[b]:  # back edge b -> h
                body = loops.setdefault(h, {h})
                stack = [b]
                while stack:
                    x = stack.pop()
                    if x not in body:
                        body.add(x)
                        stack.extend(p for p in k.blocks[x].preds if p in reach)
    return {h: frozenset(body) for h, body in loops.items()}


def hot_region(k: Kernel) -> Region:
    loops = [body for body in natural_loops(k).values() if _real(k, set(body)) > 1]
    if loops:

        def depth(body: frozenset[int]) -> int:
            return sum(1 for other in loops if body <= other)

        best = max(loops, key=lambda body: (depth(body), _real(k, set(body)), -min(body)))
        return Region(tuple(sorted(best)), True, depth(best))
    # Straight-line: maximal chains b, b+1, ... where each block falls only into the next and that block
    # has no other predecessor; the chain with the most instructions wins.
    best_chain: tuple[int, ...] = ()
    best_n = -1
    b = 0
    while b < len(k.blocks):
        chain = [b]
        while (
            k.blocks[chain[-1]].succs == [chain[-1] + 1]
            and chain[-1] + 1 < len(k.blocks)
            and k.blocks[chain[-1] + 1].preds == [chain[-1]]
        ):
            chain.append(chain[-1] + 1)
        n_real = _real(k, set(chain))
        if n_real > best_n:
            best_chain, best_n = tuple(chain), n_real
        b = chain[-1] + 1
    return Region(best_chain, False, 0)


# ------------------------------------------------------------------------------------------ issue model


@dataclass
class IssueState:
    """Scoreboard and queue state carried across blocks and loop iterations (cycles are absolute)."""

    t: int = 0  # next issue cycle
    pending: list[list[int]] = field(default_factory=lambda: [[] for _ in range(6)])  # per SB, issue order
    groups: list[int] = field(default_factory=list)  # committed HGMMA groups: ready cycle, oldest first
    open_group: int = -1  # ready cycle of the HGMMA group still open (-1: none)
    free: dict[str, int] = field(default_factory=dict)  # queue -> cycle it can start the next instruction

    def drained(self) -> int:
        """The cycle by which every result in flight is done."""
        last = max((r for sb in self.pending for r in sb), default=0)
        return max(last, max(self.groups, default=0), self.open_group)


# Per-instruction facts derived from the text once per Semantics:
# (latency, queue, interval, backlog, depbar mask, depbar keep, gmma (0 no, 1 open, 2 closes), gmma wait)
_Static = tuple[int, str | None, int, int, int, int, int, int]
_STATIC: weakref.WeakKeyDictionary[Semantics, dict[str, _Static]] = weakref.WeakKeyDictionary()


def _gmma_interval(nd: Node) -> int:
    mods = nd.eff.modifiers
    shape = next((_SHAPE.match(m) for m in mods if _SHAPE.match(m)), None)
    if shape is None:
        return 0
    m, n, kk = (int(x) for x in shape.groups())
    rate = GMMA_FMA_PER_CYCLE_16BIT
    if nd.eff.opcode in ("QGMMA", "IGMMA") or any(x in ("E4M3", "E5M2", "S8", "U8") for x in mods):
        rate *= 2
    elif "TF32" in mods:
        rate //= 2
    return max(1, m * n * kk // rate)


def _static(nd: Node, sem: Semantics) -> _Static:
    eff = nd.eff
    queue = eff.queue if (eff.variable or eff.queue == "gmma") and not eff.never else None
    lat = sem.assumed_latency(queue) if queue else 0
    interval, backlog = 0, -1
    rate = QUEUE_RATES.get(queue or "")
    if rate is not None:
        interval, backlog = rate.interval, rate.backlog
        over = sem.param(f"queue_interval_{queue}")
        if over is not None:
            interval = over
        if queue == "gmma":
            interval = _gmma_interval(nd)
    dep_mask = dep_keep = 0
    if "depbar" in eff.flags and eff.sb_set:
        dep_mask = eff.sb_set
        dep_keep = eff.imm[0] if eff.imm and "LE" in eff.modifiers else 0
    gmma = 0
    if "gmma" in eff.flags and not eff.never:
        gmma = 2 if "gsb0" in nd.text else 1
    gwait = (eff.imm[0] if eff.imm else 0) if "gmma_wait" in eff.flags else -1
    return (lat, queue, interval, backlog, dep_mask, dep_keep, gmma, gwait)


def simulate(
    nodes: Sequence[Node],
    sem: Semantics,
    state: IssueState | None = None,
    record: list[tuple[int, int]] | None = None,
) -> IssueState:
    """Issue ``nodes`` in order from ``state`` (updated in place; a fresh one when None) and return it.

    ``record`` (when given) gets one ``(issue cycle, cycles waited beyond the previous stall)`` per node.
    """
    st = state if state is not None else IssueState()
    table = _STATIC.get(sem)
    if table is None:
        table = _STATIC[sem] = {}
    pending, groups, free = st.pending, st.groups, st.free
    t = st.t
    for nd in nodes:
        s = table.get(nd.text)
        if s is None:
            s = table[nd.text] = _static(nd, sem)
        lat, queue, interval, backlog, dep_mask, dep_keep, gmma, gwait = s
        c = nd.ctrl
        base = t
        mask = c.wait_mask
        if mask:
            for sb in range(6):
                if mask >> sb & 1 and pending[sb]:
                    r = max(pending[sb])
                    if r > t:
                        t = r
                    pending[sb].clear()
        if dep_mask:
            for sb in range(6):
                lst = pending[sb]
                if dep_mask >> sb & 1 and len(lst) > dep_keep:
                    n_done = len(lst) - dep_keep
                    r = max(lst[:n_done])
                    if r > t:
                        t = r
                    del lst[:n_done]
        if gwait >= 0:
            n_done = len(groups) - gwait
            if n_done > 0:
                r = max(groups[:n_done])
                if r > t:
                    t = r
                del groups[:n_done]
        start = t
        if interval:
            f = free.get(queue, 0)  # type: ignore[arg-type]
            if backlog >= 0 and f - t > backlog:
                t = f - backlog
            start = f if f > t else t
            free[queue] = start + interval  # type: ignore[index]
        if record is not None:
            record.append((t, t - base))
        if c.write_sb is not None:
            pending[c.write_sb].append(start + lat)
        if c.read_sb is not None:
            pending[c.read_sb].append(start + READ_RELEASE)
        if gmma:
            ready = start + (lat if lat > interval else interval)  # a tile is done when its last FMA is
            if ready > st.open_group:
                st.open_group = ready
            if gmma == 2:
                groups.append(st.open_group)
                st.open_group = -1
        t += c.stall
    st.t = t
    return st


def region_cycles(k: Kernel, sem: Semantics, region: Region) -> float:
    return sequence_cycles([k.nodes[i] for i in region.nodes(k)], sem, region.is_loop)


def sequence_cycles(
    nodes: Sequence[Node], sem: Semantics, is_loop: bool, record: list[tuple[int, int]] | None = None
) -> float:
    """Cycles of ``nodes`` as a loop body (steady state per iteration) or as straight-line code.

    ``record`` gets ``(issue cycle from the start of the (last simulated) iteration, cycles waited)`` per
    node: the timing the observation features show."""
    if not nodes:
        return 0.0
    rec: list[tuple[int, int]] = []
    if not is_loop:
        st = simulate(nodes, sem, IssueState(), rec)
        if record is not None:
            record.extend(rec)
        return float(max(rec[-1][0] + 1, st.drained()))
    # Iterate from an empty state until an iteration takes as long as the one before (from the second on),
    # and never report less than the busiest queue's work per iteration: few simulated iterations do not fill
    # a throughput-bound queue.
    st = IssueState()
    prev = length = -1
    t0 = 0
    for it in range(LOOP_ITERATIONS):
        t0 = st.t
        rec = []
        simulate(nodes, sem, st, rec)
        length = st.t - t0
        if it >= 1 and length == prev:
            break
        prev = length
    if record is not None:
        record.extend((t - t0, w) for t, w in rec)
    table = _STATIC[sem]
    busy: dict[str | None, int] = {}
    for nd in nodes:
        _lat, queue, interval, *_ = table[nd.text]
        if interval:
            busy[queue] = busy.get(queue, 0) + interval
    return float(max(length, max(busy.values(), default=0)))


def kernel_cost(k: Kernel, sem: Semantics) -> float:
    return region_cycles(k, sem, hot_region(k))
