"""Feature: reorder dependences. Which instructions of a basic block may trade places, and which never move.

API
---
``BlockDeps`` (frozen)
    ``block``: block index in the Kernel; ``start``/``end``: its node index range.
    ``edges``: ``(i, j) -> EDGE_* bits`` (:mod:`sass_lsp.schedule.observation`); i before j in the kernel the
    deps were built from; j must stay after i. Not transitively closed (a chain is enough: see below).
    ``fixed``: nodes that are never moved themselves. Other instructions may still cross a fixed node where no
    edge forbids it (its index then shifts by one, as in a text edit).
    ``glued``: nodes nothing may be inserted directly before (placeholder runs and what pins them).
    ``barriers``: fixed nodes nothing crosses (the block's last instruction, DEPBAR, CALL, ...).
    ``preds(j)`` / ``succs(i)``: the direct edge neighbours.
``block_deps(k, block, sem) -> BlockDeps``
    Cached per Kernel object (treat kernels as immutable).
``legal_targets(order, pos, deps) -> range``
    Positions p (including pos) that ``order[pos]`` may move to, with ``move`` semantics;
    ``range(pos, pos + 1)`` for a fixed node. Moving and then moving back restores the order.
``move(order, pos, to) -> list[int]``
    ``order[pos]`` ends at index ``to``; the ones between shift by one, as in a text edit.

Why a chain is enough: every legal move keeps every edge's direction, so for a path i -> m -> j the node m
always sits between i and j, and moving j above i must cross m, whose direct edge forbids it.

The model (conservative: a wrong move corrupts a kernel, a missed one only costs speed)
- Registers: RAW/WAR/WAW over ``Effects.use_units``/``def_units`` (GPR spans, predicates, uniform
  registers and predicates, guards); complementary guards still count.
- Memory: loads may pass loads; a store or atomic orders against every access of a space that may alias.
  The spaces each opcode reads and writes are the semantics table's ``memory`` rows (generic LD/ST/ATOM/RED
  alias all; LDGSTS reads global and writes shared, HGMMA reads shared). Fences (its ``ordering`` rows of
  kind ``fence``: BAR, MEMBAR, CCTL, SYNCS, TMA/bulk copies, HGMMA, ...) order against every memory access
  and each other, and never move.
- Full barriers (nothing crosses them, they never move): the block's last instruction (branch, exit or the
  fall-through instruction: successors then see the same scoreboards drained), the table's ``ordering``
  rows of kind ``barrier`` (DEPBAR, WARPGROUP.*, CALL, convergence and warp-state instructions, LEPC, ...),
  instructions with a positional read (``Semantics.positional``: clocks, performance counters, a label
  operand whose encoding may depend on its address), anything the semantics table does not know, and the
  first instruction of a block that a label no branch names points at (nvdisasm's label for an address the
  ELF's metadata records: EXIT and cooperative-group SHFL offsets keep naming their instruction).
- Scoreboards: a variable-latency result without a W scoreboard is completed only by a younger op of its
  queue (hazards "in-order sharing"), so it keeps its order against its queue, and its readers stay after
  the younger ops that complete it. Producers on a scoreboard that some ``DEPBAR.LE SBn, k>0`` counts keep
  their order. A late reader without R scoreboard whose sources' next writer came after a wait that
  completes it (ptxas's guarantee that the sources were read) keeps that writer after that wait.
- HGMMA registers (every GPR any HGMMA of the kernel touches) never cross an HGMMA.
- ``@!PT LDS RZ, [RZ]`` placeholders (SASS009), the instruction before a run of them and the one after never
  move, and nothing is inserted among them. Likewise the instructions a fall-through predecessor's ``.reuse``
  reaches into this block.
- Distances: a fixed-latency RAW longer than one stall field (15 cycles), or such a distance to a
  successor block, keeps enough instructions in between (anchor edges) for the repair to meet it; readers of
  results still in flight at block entry stay behind enough instructions for the same reason.

Shared with :mod:`.repair` (not for other callers): ``kernel_context`` (per-kernel cache: the checker's entry
states and thresholds, ``NodeFacts`` per node, ``BlockFacts`` per block with the distance constraints the
repair must meet: checker latency rows, BAR.SYNC -> shared, and, because the checker does not model them
(each found on the H200, see the constants below): a fixed-latency RAW pair keeps min(ptxas's distance,
``UNTRUSTED_RAW_FLOOR``) and an HGMMA operand ptxas's distance; ptxas's distance capped at the producer's
latency between two writes of a register after a fixed-latency one, capped at ``LATE_READ_CAP`` between a
late read without R scoreboard and the next write, and capped at ``UNTRUSTED_RAW_FLOOR`` between a read of a
uniform register and its next write), ``entry_bounds``, ``exit_bounds``.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import re
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sass_lsp.analysis.hazards import Checker, Event, State
from sass_lsp.analysis.program import Ctrl, Kernel, Node
from sass_lsp.isa.semantics import UNIT_BASE, Semantics, unit_kind
from sass_lsp.schedule.observation import EDGE_MEMORY, EDGE_ORDER, EDGE_RAW, EDGE_WAR, EDGE_WAW

MAX_STALL = 15  # 4-bit stall field
_NONE: frozenset[int] = frozenset()
_NO_NODES: list[int] = []  # (never changed)
# A fixed-latency RAW pair that a move brings closer than ptxas placed it keeps at least this many cycles,
# and at least ptxas's minimum for the consumer's pipe (``Semantics.placement_latency``), in a block and at
# its entry (never more than ptxas's own distance, so the ptxas order repairs to itself). The latency
# table's rows are minimums of ptxas's distances per pipe class; on the H200 pairs placed at those minimums
# but with other opcodes gave wrong results (alu <-> fma at 4, USEL -> ULEA and ULEA -> UIADD3 at 3, UMOV ->
# HGMMA's descriptor at 3). HGMMA's operands keep ptxas's distance (up to LATE_READ_CAP): UIADD3.64 UR14 ->
# HGMMA gdesc[UR12] at 6 cycles (ptxas: 15) gave wrong results; in the corpus ptxas puts uniform ALU results
# 9-15 cycles before the HGMMA that reads them. The hardware records of these and the findings below (the
# reorder_hardware_h200_run*.log members): benchmarks/results/reorder_hardware_h200.tar.xz.
UNTRUSTED_RAW_FLOOR = 6
# UNIFORM_WAR: a write of a uniform register after a read of it keeps ptxas's distance (capped at the floor
# above). Uniform-datapath instructions read their sources after issue: ptxas never rewrites a UR sooner
# than 3 cycles after a uniform instruction read it with ULDC/UMOV (2 with another uniform op), and on the
# H200 a ULDC.64 UR8 one cycle after ULEA.HI.X read UR9, and a UMOV UR5 one cycle after UIADD3 read UR5,
# gave a fault and wrong results.

# A source of a variable-latency or memory op without R scoreboard is read when the op leaves its queue,
# which can be long after issue: its next writer keeps min(ptxas's distance, this many cycles). 15 was not
# enough on the H200: a LOP3 rewriting R27 15 cycles after `LDS R15, [R27+UR4+0x2900]` (ptxas: 50), behind a
# burst of LDS/STG, gave wrong results twice.
LATE_READ_CAP = 64


# ---------------------------------------------------------------- public API


@dataclass(frozen=True)
class BlockDeps:
    block: int
    start: int
    end: int
    edges: Mapping[tuple[int, int], int]  # an EdgeMap when built by block_deps
    fixed: frozenset[int]
    glued: frozenset[int] = frozenset()
    barriers: frozenset[int] = frozenset()  # fixed nodes nothing crosses (incl. the block's last instruction)
    # The neighbour index, built on the first query (a game asks only about its window's nodes): small
    # blocks get dicts of frozensets; large ones (tens of thousands of edges) edge arrays sorted by each
    # end, sliced per node on demand.
    _index: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def preds(self, j: int) -> frozenset[int]:
        return self._neighbours("preds", 1, j)

    def succs(self, i: int) -> frozenset[int]:
        return self._neighbours("succs", 0, i)

    def edge_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``edges`` as arrays: from nodes, to nodes (int64) and EDGE bits (uint8), in ``edges`` order."""
        if isinstance(self.edges, EdgeMap):
            return self.edges.arrays
        hit = self._index.get("arrays")
        if hit is None:
            n = len(self.edges)
            pairs = np.fromiter(itertools.chain.from_iterable(self.edges), np.int64, 2 * n).reshape(n, 2)
            bits = np.fromiter(self.edges.values(), np.uint8, n)
            hit = self._index["arrays"] = (pairs[:, 0].copy(), pairs[:, 1].copy(), bits)
        return hit

    def _neighbours(self, name: str, key_col: int, node: int) -> frozenset[int]:
        if not self.edges:
            return _NONE
        index = self._index.get(name)
        if index is None:
            index = self._index[name] = self._neighbour_index(key_col)
        if isinstance(index, dict):
            return index.get(node, _NONE)
        keys, vals, memo = index
        hit = memo.get(node)
        if hit is None:
            a, b = np.searchsorted(keys, (node, node + 1))
            hit = memo[node] = frozenset(vals[a:b].tolist())
        return hit

    def _neighbour_index(self, key_col: int) -> Any:
        """``key -> frozenset`` of the other ends (small), or (sorted keys, other ends, memo) (large)."""
        if len(self.edges) < 2048:
            out: dict[int, set[int]] = {}
            for pair in self.edges:
                out.setdefault(pair[key_col], set()).add(pair[1 - key_col])
            return {k: frozenset(v) for k, v in out.items()}
        ends = self.edge_arrays()[:2]
        keys, vals = ends[key_col], ends[1 - key_col]
        order = np.argsort(keys, kind="stable")
        return keys[order], vals[order], {}


def block_deps(k: Kernel, block: int, sem: Semantics) -> BlockDeps:
    ctx = kernel_context(k, sem)
    hit = ctx.deps.get(block)
    if hit is None:
        hit = ctx.deps[block] = _build_deps(ctx, block)
    return hit


def legal_targets(order: Sequence[int], pos: int, deps: BlockDeps) -> range:
    x = order[pos]
    if x in deps.fixed:
        return range(pos, pos + 1)
    preds, succs, glued = deps.preds(x), deps.succs(x), deps.glued
    lo = pos
    while lo > 0:  # landing at lo - 1 puts x directly before order[lo - 1]
        y = order[lo - 1]
        if y in preds or y in glued:
            break
        lo -= 1
    hi, n = pos, len(order)
    while hi + 1 < n:  # landing at hi + 1 puts x directly before order[hi + 2]
        if order[hi + 1] in succs or (hi + 2 < n and order[hi + 2] in glued):
            break
        hi += 1
    return range(lo, hi + 1)


def move(order: Sequence[int], pos: int, to: int) -> list[int]:
    out = list(order)
    out.insert(to, out.pop(pos))
    return out


# ---------------------------------------------------------------- shared facts (also used by repair)


@dataclass(slots=True)
class NodeFacts:
    """What the dependence model and the repair need of one instruction, precomputed once."""

    idx: int
    opcode: str
    pipe: str
    queue: str  # the checker's queue name ('#idx' when none: never completed by another op)
    uses: frozenset[int]  # empty for @!PT (the checker ignores them)
    defs: frozenset[int]
    touch: frozenset[int]  # uses | defs
    late: frozenset[int]  # GPR and uniform sources: what an R scoreboard protects (UR too: SYNCS reads late)
    reads: tuple[tuple[int, str], ...]  # (unit, latency operand kind) as the checker looks rows up
    dst_pipe: dict[int, str]  # fixed-latency result units -> producer pipe row name ('_hi' halves)
    guard: int | None
    neg: bool
    variable: bool
    never: bool
    gmma: bool
    shared: bool
    bar_sync: bool
    mem: tuple[int, int] | None  # (read spaces, written spaces)
    wsb: int | None
    rsb: int | None
    events: tuple[Event, ...]  # pending events the instruction adds (hazards.Checker semantics)
    depbar: tuple[int, int] | None  # (scoreboard mask, keep) of DEPBAR
    stall: int
    yield_flag: bool
    wait: int

    @property
    def event(self) -> bool:
        return bool(self.events)


@dataclass(slots=True)
class BlockFacts:
    block: int
    start: int
    end: int
    info: dict[int, NodeFacts]
    dist: dict[int, tuple[tuple[int, int], ...]]  # j -> ((i, cycles), ...): issue(j) >= issue(i) + cycles
    orig_t: dict[int, int]  # ptxas issue cycle relative to the block start
    orig_len: int  # sum of the block's stalls


class KernelContext:
    """Per-kernel data shared by deps and repair: the checker's entry states and its thresholds."""

    def __init__(self, k: Kernel, sem: Semantics) -> None:
        self._kernel = weakref.ref(k)  # the module cache must not keep kernels alive
        self.sem = sem
        checker = Checker(k, sem)
        checker.run()
        self.entry: list[State] = checker.entry if k.nodes else []
        self.maxlat: Mapping[str, int] = checker.maxlat
        self.bar_gap: int = checker.bar_gap
        self.max_noyield = sem.param("max_stall_without_yield")
        self.sb_set = sem.param("scoreboard_set_cycles") or 0
        self.latencies = _latency_lookup(sem)
        self.nodes = [_node_facts(nd, sem) for nd in k.nodes]
        self.gmma_units = frozenset(u for f in self.nodes if f.gmma for u in f.touch if u < 256)
        self.keep_sbs = 0  # scoreboards some DEPBAR.LE counts with k > 0
        self.anchored = _metadata_anchored(k)
        for f in self.nodes:
            if f.depbar and f.depbar[1]:
                self.keep_sbs |= f.depbar[0]
        self.facts: dict[int, BlockFacts] = {}
        self.deps: dict[int, BlockDeps] = {}
        self.plans: dict = {}  # repair's per-(block, entry) plans

    @property
    def k(self) -> Kernel:
        k = self._kernel()
        if k is None:
            raise ReferenceError("kernel of this schedule context was freed")
        return k

    def block_facts(self, block: int) -> BlockFacts:
        hit = self.facts.get(block)
        if hit is None:
            hit = self.facts[block] = _block_facts(self, block)
        return hit


_CONTEXTS: dict[int, tuple[weakref.ref, KernelContext]] = {}


def kernel_context(k: Kernel, sem: Semantics) -> KernelContext:
    key = id(k)
    hit = _CONTEXTS.get(key)
    if hit is not None and hit[0]() is k and hit[1].sem is sem:
        return hit[1]
    ctx = KernelContext(k, sem)
    _CONTEXTS[key] = (weakref.ref(k, functools.partial(_forget, key)), ctx)
    return ctx


def _forget(key: int, _ref: object) -> None:
    _CONTEXTS.pop(key, None)


def complementary(producer: NodeFacts | Event, consumer: NodeFacts) -> bool:
    """Same guard, opposite sense: never both execute (as the checker treats it)."""
    neg = producer.neg if isinstance(producer, NodeFacts) else producer.guard_neg
    return producer.guard is not None and consumer.guard == producer.guard and consumer.neg != neg


def entry_bounds(ctx: KernelContext, facts: BlockFacts, entry: State) -> dict[int, int]:
    """Earliest issue cycle (block start = 0) of readers of fixed-latency results still in flight at entry
    (and of shared accesses after a recent BAR.SYNC)."""
    out: dict[int, int] = {}
    written: set[int] = set()
    bar_seen = False
    fixed = entry.fixed or {}
    for j in range(facts.start, facts.end):
        f = facts.info[j]
        if f.never:
            continue
        lb = 0
        for u, kind in f.reads if fixed else ():
            hit = fixed.get(u) if u not in written else None
            if hit is None:
                continue
            pidx, cyc, pipe = hit
            if complementary(ctx.nodes[pidx], f) or -cyc >= ctx.maxlat.get(pipe, 0):
                continue
            lat = ctx.latencies(pipe, f.pipe, kind)
            if lat is not None:  # brought closer than ptxas placed it: as in _block_facts
                cycles, placed = lat
                lb = max(lb, cyc + cycles, min(cyc + _closer_floor(placed, f.gmma), facts.orig_t[j]))
        if f.shared and not bar_seen and entry.bar is not None and ctx.bar_gap:
            lb = max(lb, entry.bar[1] + ctx.bar_gap)
        if lb > 0:
            out[j] = lb
        written |= f.defs
        bar_seen = bar_seen or f.bar_sync
    return out


def exit_bounds(ctx: KernelContext, facts: BlockFacts, entry: State) -> tuple[dict[int, int], int]:
    """What successors rely on: ``({i: cycles}, c0)`` = the block end must be at least ``cycles`` after node i
    and at least ``c0`` after the block start, so every fixed-latency result (and BAR.SYNC) in flight at the
    exit has had at least as long as in the ptxas order, or its whole latency."""
    last_writer: dict[int, int] = {}
    bars = []
    for j in range(facts.start, facts.end):
        f = facts.info[j]
        for u in f.defs:
            last_writer[u] = j
        if f.bar_sync:
            bars.append(j)
    n = facts.orig_len
    cons: dict[int, int] = {}
    for u, p in last_writer.items():
        pipe = facts.info[p].dst_pipe.get(u)
        if pipe is not None:
            c = min(n - facts.orig_t[p], ctx.maxlat.get(pipe, 0))
            if c > cons.get(p, 0):
                cons[p] = c
    c0 = 0
    for u, (_p, cyc, pipe) in (entry.fixed or {}).items():
        if u not in last_writer:
            c0 = max(c0, min(n, ctx.maxlat.get(pipe, 0) + cyc))
    if bars:
        b = bars[-1]
        cons[b] = max(cons.get(b, 0), min(n - facts.orig_t[b], ctx.bar_gap))
    elif entry.bar is not None:
        c0 = max(c0, min(n, ctx.bar_gap + entry.bar[1]))
    return cons, c0


# ---------------------------------------------------------------- internals


# (text, index) -> (Effects, control code, facts), kept across kernels (facts are never changed)
_NODE_FACTS: dict[tuple[str, int], tuple[Any, Ctrl, NodeFacts]] = {}


def _node_facts(nd: Node, sem: Semantics) -> NodeFacts:
    """Cached per (text, index, control code) and Effects object (another arch's table gives another one):
    after an edit only the instructions it changed (or moved) cost anything. The control code is compared
    on a hit rather than hashed into the key (hashing it costs a new kernel a microsecond per node)."""
    key = (nd.text, nd.idx)
    hit = _NODE_FACTS.get(key)
    if hit is not None and hit[0] is nd.eff and hit[1] == nd.ctrl:
        return hit[2]
    if len(_NODE_FACTS) >= 1 << 16:
        _NODE_FACTS.clear()
    facts = _compute_node_facts(nd, sem)
    _NODE_FACTS[key] = (nd.eff, nd.ctrl, facts)
    return facts


def _compute_node_facts(nd: Node, sem: Semantics) -> NodeFacts:
    eff, c = nd.eff, nd.ctrl
    never = eff.never
    gmma = "gmma" in eff.flags
    uses = frozenset() if never else eff.use_units
    defs = frozenset() if never else eff.def_units
    late = uses - _NOT_LATE
    reads: list[tuple[int, str]] = []
    for op in () if never else eff.srcs:
        key = (op.units, op.role, op.hi)
        hit = _OPERAND_READS.get(key)
        if hit is None:
            hit = _OPERAND_READS[key] = _operand_reads(*key)
        reads += hit
    queue = eff.queue or f"#{nd.idx}"
    events: list[Event] = []
    is_event = not never and not gmma and (eff.variable or c.write_sb is not None or c.read_sb is not None)
    dst_pipe: dict[int, str] = {}
    if is_event:
        if eff.variable or c.write_sb is not None:
            wsb = -1 if c.write_sb is None else c.write_sb
            if wsb >= 0 or defs:
                events.append(Event(nd.idx, wsb, "W", queue, defs, eff.guard, eff.guard_neg))
        if c.read_sb is not None:
            events.append(Event(nd.idx, c.read_sb, "R", queue, late, eff.guard, eff.guard_neg))
    elif not never and not gmma:
        for op in eff.dsts:
            for n, u in enumerate(op.units):
                dst_pipe[u] = eff.pipe + "_hi" if op.hi and n >= op.hi else eff.pipe
    mem = sem.memory_spaces(eff.opcode)
    depbar = None
    if "depbar" in eff.flags and eff.sb_set:
        keep = eff.imm[0] if eff.imm and "LE" in eff.modifiers else 0
        depbar = (eff.sb_set, keep)
    return NodeFacts(
        nd.idx,
        eff.opcode,
        eff.pipe,
        queue,
        uses,
        defs,
        uses | defs,
        late,
        tuple(reads),
        dst_pipe,
        eff.guard,
        eff.guard_neg,
        eff.variable,
        never,
        gmma,
        "shared" in eff.flags and not never,
        "bar_sync" in eff.flags and not never,
        None if never else mem,
        c.write_sb,
        c.read_sb,
        tuple(events),
        depbar,
        c.stall,
        c.yield_flag,
        c.wait_mask,
    )


_UNIFORM = frozenset(range(UNIT_BASE["UR"], 512))  # uniform registers and predicates
# Units that are not late-read sources: predicates and uniform predicates (units end below 512, UP7).
_NOT_LATE = frozenset(range(256, 300)) | frozenset(range(400, 512))
# (units, role, hi) of a source operand -> its (unit, latency operand kind) reads: operands repeat across
# texts far more than texts do.
_OPERAND_READS: dict[tuple[tuple[int, ...], str, int], tuple[tuple[int, str], ...]] = {}


def _operand_reads(units: tuple[int, ...], role: str, hi: int) -> tuple[tuple[int, str], ...]:
    """The (unit, kind) rows the checker looks a source operand's latency up by."""
    out = []
    okind = role
    for n, u in enumerate(units):
        if hi and n >= hi:
            okind = "hi"
        if okind == "guard":
            kind = "guard"
        elif okind == "addr" and u < 256:
            kind = "addr"
        elif okind == "hi":
            kind = "reg_hi"
        else:
            kind = unit_kind(u)
        out.append((u, kind))
    return tuple(out)


def _block_facts(ctx: KernelContext, block: int) -> BlockFacts:
    b = ctx.k.blocks[block]
    idxs = range(b.start, b.end)
    nodes = ctx.nodes[b.start : b.end]
    info = dict(zip(idxs, nodes, strict=True))
    starts = list(itertools.accumulate((f.stall for f in nodes), initial=0))
    t = starts.pop()
    orig_t = dict(zip(idxs, starts, strict=True))
    last_fixed: dict[int, tuple[int, str, NodeFacts]] = {}  # unit -> its last write, when fixed-latency
    late_readers: dict[int, list[int]] = {}  # unit -> variable-latency readers without R scoreboard
    uniform_readers: dict[int, list[int]] = {}  # uniform register -> its readers since its last write
    last_bar = None
    dist: dict[int, tuple[tuple[int, int], ...]] = {}
    latencies = ctx.latencies
    bar_gap, maxlat = ctx.bar_gap, ctx.maxlat
    for j, f, tj in zip(idxs, nodes, starts, strict=True):
        if f.never:
            continue
        cons: dict[int, int] = {}  # i -> cycles: the largest each constraint below asks (inlined: hot)
        for u, kind in f.reads:
            hit = last_fixed.get(u)
            if hit is None:
                continue
            p, pipe, fp = hit
            if fp.guard is not None and f.guard == fp.guard and f.neg != fp.neg:
                continue  # complementary guards: never both execute
            lat = latencies(pipe, f.pipe, kind)
            if lat is not None:
                # A pair a move brings closer than ptxas placed it gets UNTRUSTED_RAW_FLOOR or the
                # hardware-measured latency; a pair at least as far apart as in ptxas's order keeps
                # ptxas's judgement.
                cycles, placed = lat
                c = max(cycles, min(_closer_floor(placed, f.gmma), tj - orig_t[p]))
                if c > cons.get(p, 0):
                    cons[p] = c
        if f.shared and last_bar is not None and bar_gap and bar_gap > cons.get(last_bar, 0):
            cons[last_bar] = bar_gap
        for u in f.defs:
            hit = last_fixed.get(u)
            if hit is not None:  # the older fixed-latency write must land first: keep ptxas's distance
                p, pipe, _fp = hit
                c = min(tj - orig_t[p], maxlat.get(pipe, 0))
                if c > cons.get(p, 0):
                    cons[p] = c
            for r in late_readers.pop(u, ()):  # the late read must happen first: keep ptxas's distance
                c = min(tj - orig_t[r], LATE_READ_CAP)
                if c > cons.get(r, 0):
                    cons[r] = c
            for r in uniform_readers.pop(u, ()):  # uniform sources are read after issue (see UNIFORM_WAR)
                c = min(tj - orig_t[r], UNTRUSTED_RAW_FLOOR)
                if c > cons.get(r, 0):
                    cons[r] = c
        for u in f.uses & _UNIFORM:
            uniform_readers.setdefault(u, []).append(j)
        if (f.variable or f.mem is not None) and f.rsb is None and not f.gmma:
            for u in f.late:
                late_readers.setdefault(u, []).append(j)
        dst_pipe = f.dst_pipe
        for u in f.defs:
            dpipe = dst_pipe.get(u)
            if dpipe is None:
                last_fixed.pop(u, None)
            else:
                last_fixed[u] = (j, dpipe, f)
        if f.bar_sync:
            last_bar = j
        if cons:
            dist[j] = tuple(cons.items())
    return BlockFacts(block, b.start, b.end, info, dist, orig_t, t)


def _closer_floor(placed: int, gmma: bool) -> int:
    """The cycles a fixed-latency pair keeps when a move brings it closer than ptxas placed it (capped by
    the caller at ptxas's distance): HGMMA's operands up to LATE_READ_CAP, others the placement latency or
    UNTRUSTED_RAW_FLOOR."""
    return LATE_READ_CAP if gmma else max(placed, UNTRUSTED_RAW_FLOOR)


def _latency_lookup(sem: Semantics) -> Callable[[str, str, str], tuple[int, int] | None]:
    """``(producer pipe, consumer pipe, operand kind) -> (latency, placement latency)`` or None, memoised
    (a block of thousands asks the same few pipe pairs thousands of times)."""
    memo: dict[tuple[str, str, str], tuple[int, int] | None] = {}

    def lookup(producer: str, consumer: str, kind: str) -> tuple[int, int] | None:
        key = (producer, consumer, kind)
        if key not in memo:
            row = sem.latency(producer, consumer, kind)
            placed = sem.placement_latency(producer, consumer, kind) if row is not None else None
            memo[key] = None if row is None else (row.cycles, placed or row.cycles)
        return memo[key]

    return lookup


class EdgeMap(Mapping[tuple[int, int], int]):
    """``BlockDeps.edges``: ``(i, j) -> EDGE bits`` held as arrays (what the game reads); the dict of pairs is
    built only when something looks pairs up (tens of thousands in a block of 2,000 instructions)."""

    def __init__(self, src: np.ndarray, dst: np.ndarray, bits: np.ndarray) -> None:
        self.arrays = (src, dst, bits)
        self._dict: dict[tuple[int, int], int] | None = None

    def _pairs(self) -> dict[tuple[int, int], int]:
        if self._dict is None:
            src, dst, bits = (a.tolist() for a in self.arrays)
            self._dict = dict(zip(zip(src, dst, strict=True), bits, strict=True))
        return self._dict

    def __getitem__(self, key: tuple[int, int]) -> int:
        return self._pairs()[key]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return iter(self._pairs())

    def __len__(self) -> int:
        return len(self.arrays[2])

    def __repr__(self) -> str:
        return f"EdgeMap({self._pairs()!r})"


_BIT_SHIFT = 5  # EDGE_RAW .. EDGE_ORDER
_BIT_MASK = (1 << _BIT_SHIFT) - 1


class _Edges:
    """Edges as they are found, merged once at the end (appending an int is much cheaper than updating a dict
    of pairs per edge): per EDGE bit a list of keys ``i * stride + j``, ``i < j``. The hot loops append to
    ``of(bit)`` directly when they know ``i < j``."""

    def __init__(self, end: int) -> None:
        self.stride = end  # every node index is below it
        self.keys: dict[int, list[int]] = {}
        self.chunks: list[tuple[np.ndarray, int]] = []  # long runs of keys, as arrays

    def of(self, bit: int) -> list[int]:
        return self.keys.setdefault(bit, [])

    def add(self, i: int, j: int, bit: int) -> None:
        if i != j:
            self.of(bit).append(i * self.stride + j if i < j else j * self.stride + i)

    def add_before(self, sources: Iterable[int], j: int, bit: int) -> None:
        """``add(i, j, bit)`` for each source ``i < j``, without a call per edge (blocks of thousands)."""
        s = self.stride
        if isinstance(sources, range) and sources.step == 1:
            self.of(bit).extend(range(sources.start * s + j, sources.stop * s + j, s))
        elif isinstance(sources, list) and len(sources) > 64:
            self.chunks.append((np.array(sources, dtype=np.int64) * s + j, bit))
        else:
            self.of(bit).extend(i * s + j for i in sources)

    def add_after(self, i: int, targets: list[int], bit: int) -> None:
        """``add(i, j, bit)`` for each target ``j > i``, without a call per edge (long lists as one array)."""
        base = i * self.stride
        if len(targets) > 64:
            self.chunks.append((np.array(targets, dtype=np.int64) + base, bit))
        else:
            self.of(bit).extend([base + j for j in targets])

    def merged(self) -> EdgeMap:
        """The distinct pairs, sorted, with their bits OR-ed."""
        chunks = [(np.array(keys, dtype=np.int64), bit) for bit, keys in self.keys.items() if keys]
        chunks += self.chunks
        if not chunks:
            empty = np.zeros(0, dtype=np.int64)
            return EdgeMap(empty, empty.copy(), np.zeros(0, dtype=np.uint8))
        # One in-place sort of (key, bit) packed in an int64 (EDGE bits are below 32): a pair's entries end up
        # adjacent (an argsort and two gathers cost twice as much on tens of thousands of edges).
        packed = np.concatenate([(k << _BIT_SHIFT) | b for k, b in chunks])
        packed.sort()
        keys = packed >> _BIT_SHIFT
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        bits = np.bitwise_or.reduceat((packed & _BIT_MASK).astype(np.uint8), starts)
        pairs = keys[starts]
        return EdgeMap(pairs // self.stride, pairs % self.stride, bits)


def _is_barrier(f: NodeFacts, nd: Node, sem: Semantics) -> bool:
    return sem.is_barrier(f.opcode) or f.pipe == "unknown" or sem.positional(nd.text)


_LABEL = re.compile(r"\.L\w*")
OFFSET_MARK = ".CUASM_OFFSET_LABEL."  # CuAssembler's label naming an instruction for an nvinfo offset


def _metadata_anchored(k: Kernel) -> frozenset[int]:
    """Blocks whose first instruction the ELF's metadata records by address (EXIT and cooperative-group SHFL
    offsets, ...): its label is one the module's metadata names (``k.metadata_labels``, also where a branch
    names it), CuAssembler's ``OFFSET_MARK`` label, or, for a kernel built without its module, a local label
    (``.L…``, not the kernel's symbol) no branch names. That instruction keeps its address, so nothing moves
    before it."""
    targets = {t for nd in k.nodes for t in _LABEL.findall(nd.text)}

    def names_an_offset(label: str) -> bool:
        if label.startswith(OFFSET_MARK) or label in k.metadata_labels:
            return True
        return _LABEL.fullmatch(label) is not None and label not in targets

    return frozenset(b.idx for b in k.blocks if any(map(names_an_offset, b.labels)))


def _build_deps(ctx: KernelContext, block: int) -> BlockDeps:
    k = ctx.k
    b = k.blocks[block]
    facts = ctx.block_facts(block)
    info = facts.info
    idxs = range(b.start, b.end)
    edges = _Edges(b.end)
    fixed: set[int] = set()
    glued: set[int] = set()
    barriers: set[int] = set()
    if not idxs:
        return BlockDeps(block, b.start, b.end, {}, frozenset())
    _register_edges(facts, edges)
    _memory_edges(facts, edges, fixed, ctx.sem)
    last = b.end - 1
    fixed.add(last)
    barriers.add(last)
    edges.add_before(range(b.start, last), last, EDGE_ORDER)
    order = edges.of(EDGE_ORDER)
    for j in idxs:
        f = info[j]
        if f.never or f.gmma or f.opcode == "NOP" or f.depbar:
            fixed.add(j)
        if _is_barrier(f, k.nodes[j], ctx.sem) or (j == b.start and block in ctx.anchored):
            fixed.add(j)
            barriers.add(j)
            edges.add_before(range(b.start, j), j, EDGE_ORDER)
            order.extend(range(j * edges.stride + j + 1, j * edges.stride + b.end))  # (j, i) for i > j
    _scoreboard_edges(ctx, facts, edges)
    _gmma_edges(ctx, facts, edges)
    _placeholders(k, b, facts, fixed, glued)
    _reuse_window(k, b, facts, fixed, glued)
    _anchor_edges(ctx, block, facts, edges)
    return BlockDeps(
        block, b.start, b.end, edges.merged(), frozenset(fixed), frozenset(glued), frozenset(barriers)
    )


def _register_edges(facts: BlockFacts, edges: _Edges) -> None:
    """RAW/WAR/WAW as chains: a read depends on the last write; a write on the last write and the reads
    since."""
    last_def: dict[int, int] = {}
    readers: dict[int, list[int]] = {}
    s = edges.stride
    raw, waw, war = edges.of(EDGE_RAW).append, edges.of(EDGE_WAW).append, edges.of(EDGE_WAR)
    for j, f in facts.info.items():  # (in node order)
        for u in f.uses:
            p = last_def.get(u)
            if p is not None:
                raw(p * s + j)
        for u in f.defs:
            p = last_def.get(u)
            if p is not None:
                waw(p * s + j)
            since = readers.pop(u, None)
            if since:
                war.extend([r * s + j for r in since])
            last_def[u] = j
        for u in f.uses - f.defs if f.defs else f.uses:
            readers.setdefault(u, []).append(j)


def _memory_edges(facts: BlockFacts, edges: _Edges, fixed: set[int], sem: Semantics) -> None:
    # Earlier accesses grouped by (read spaces, written spaces, fence): one test per group, not per access.
    groups: dict[tuple[int, int, bool], list[int]] = {}
    for j in range(facts.start, facts.end):
        f = facts.info[j]
        fence = sem.is_fence(f.opcode)
        if fence:
            fixed.add(j)
        if f.mem is not None or fence:
            r, w = f.mem or (0, 0)
            for (ri, wi, fi), nodes in groups.items():
                if fence or fi or wi & (r | w) or ri & w:
                    edges.add_before(nodes, j, EDGE_MEMORY)
            groups.setdefault((r, w, fence), []).append(j)


def _scoreboard_edges(ctx: KernelContext, facts: BlockFacts, edges: _Edges) -> None:
    info = facts.info
    idxs = range(facts.start, facts.end)
    producers = [j for j in idxs if info[j].event]
    # Results without a W scoreboard (in-block or pending at entry) complete only with a younger op of their
    # queue: they keep their order against that queue, and their readers stay after the younger ops.
    entry = ctx.entry[facts.block] if ctx.entry else None
    before = facts.start - 1  # where an event pending at entry sits in this block's order
    sbless = [(before, e.queue, e.units) for e in (entry.events if entry else ()) if e.sb < 0]
    sbless += [(e.idx, e.queue, e.units) for j in producers for e in info[j].events if e.sb < 0]
    st = edges.stride
    order = edges.of(EDGE_ORDER)  # every pair below is (older, younger)
    for a, queue, units in sbless:
        same = [j for j in producers if info[j].queue == queue and j > a]
        if a > before:
            order.extend(a * st + j for j in same)
        for c in range(max(a + 1, facts.start), facts.end):
            if info[c].touch & units:
                order.extend(j * st + c for j in same[: bisect.bisect_left(same, c)])
    # A memory op without an R scoreboard reads its sources when it leaves its queue, in order with that
    # queue: a later op's R scoreboard also covers it, and ptxas lets the next writer of its sources wait on
    # that one. It stays before every later R-scoreboard op of its queue (on the H200 an LDG sunk below two
    # `R0` LDGs read R41 after the FFMA that waited on SB0 rewrote it: a fault).
    read_sb_ops: dict[str, list[int]] = {}  # queue -> its producers with an R scoreboard, in order
    for j in producers:
        if info[j].rsb is not None:
            read_sb_ops.setdefault(info[j].queue, []).append(j)
    for i in idxs:
        f = info[i]
        if f.mem is not None and f.rsb is None and f.late and not f.gmma:  # (a never-run op has no mem)
            later = read_sb_ops.get(f.queue, _NO_NODES)
            edges.add_after(i, later[bisect.bisect_right(later, i) :], EDGE_ORDER)
    _completion_edges(facts, order, st)
    # DEPBAR.LE SBn, k > 0 (here or in a successor) counts the youngest k: keep their order.
    for sb in range(6):
        if ctx.keep_sbs >> sb & 1:
            chain = [j for j in producers if sb in (info[j].wsb, info[j].rsb)]
            order.extend(i * st + j for i, j in zip(chain, chain[1:], strict=False))


def _completion_edges(facts: BlockFacts, order: list[int], st: int) -> None:
    """A late reader without R scoreboard whose next writer (of one of its sources) came, in ptxas's order,
    after a wait that completes the reader: the writer stays after that wait. A wait completes it when it is
    on its W scoreboard, or on a scoreboard a younger op of its queue set (in-order queue). Without the edge a
    move can put the writer first, and only the distance rule (``LATE_READ_CAP``) is left, which does not
    bound a queue's delay: on the H200 `IADD3 R17` moved above the `STS [R34], R16` that waited on
    `LDG R16, [R16.64]`'s SB4, 37 cycles after the LDG (ptxas: 32, behind the wait), and the kernel faulted
    (sgemm_tiled; ``reorder_eval_h200_run18.log`` in ``benchmarks/results/reorder_eval_h200.tar.xz``)."""
    info = facts.info
    for i in range(facts.start, facts.end):
        f = info[i]
        if not (f.variable or f.mem is not None) or f.rsb is not None or not f.late or f.gmma:
            continue
        completes = 0 if f.wsb is None else 1 << f.wsb
        waited = None
        for c in range(i + 1, facts.end):
            g = info[c]
            if waited is None and g.wait & completes:
                waited = c
            if g.defs & f.late:  # the next writer: after the completing wait, it stays after it
                if waited is not None and waited < c:
                    order.append(waited * st + c)
                break
            if waited is None and g.queue == f.queue:
                for sb in (g.wsb, g.rsb):
                    if sb is not None:
                        completes |= 1 << sb


def _gmma_edges(ctx: KernelContext, facts: BlockFacts, edges: _Edges) -> None:
    """HGMMA reads and writes its registers asynchronously: nothing touching them crosses an HGMMA."""
    info = facts.info
    idxs = range(facts.start, facts.end)
    gmmas = [j for j in idxs if info[j].gmma]
    if not gmmas:
        return
    for j in idxs:
        if not info[j].gmma and info[j].touch & ctx.gmma_units:
            for g in gmmas:
                edges.add(g, j, EDGE_ORDER)


def _placeholders(k: Kernel, b, facts: BlockFacts, fixed: set[int], glued: set[int]) -> None:  # noqa: ANN001
    """Runs of ``@!PT LDS RZ, [RZ]``: the run, the instruction before and the one after stay as they are."""
    info = facts.info
    for j in range(b.start, b.end):
        f = info[j]
        if not (f.never and f.opcode == "LDS"):
            continue
        fixed.add(j)
        glued.add(j)
        if j > b.start:
            fixed.add(j - 1)
        if j + 1 < b.end:
            fixed.add(j + 1)
            glued.add(j + 1)


def _reuse_window(k: Kernel, b, facts: BlockFacts, fixed: set[int], glued: set[int]) -> None:  # noqa: ANN001
    """A fall-through predecessor's last ``.reuse`` reaches into this block: keep that prefix as it is."""
    if b.start == 0 or b.start >= b.end:
        return
    prev = k.nodes[b.start - 1]
    for op in prev.eff.srcs:
        if not op.reuse:
            continue
        units = set(op.units)
        for j in range(b.start, b.end):
            fixed.add(j)
            glued.add(j)
            if facts.info[j].touch & units:
                break


def _anchor_edges(ctx: KernelContext, block: int, facts: BlockFacts, edges: _Edges) -> None:
    """Distances one stall field cannot hold keep ptxas's instructions in between as spacers."""
    start, end = facts.start, facts.end

    def spacers(cycles: int) -> int:
        return math.ceil(cycles / MAX_STALL) - 1

    st = edges.stride
    order = edges.of(EDGE_ORDER)  # keys i * st + j of pairs i < j, as ranges
    for j, cons in facts.dist.items():
        for i, c in cons:
            if c <= MAX_STALL:
                continue  # one stall field holds it: no spacer
            first = max(i, j - 1 - spacers(c)) + 1  # spacers a, first <= a < j, between i and j
            order.extend(range(i * st + first, i * st + j))
            order.extend(range(first * st + j, j * st + j, st))
    if not ctx.entry:
        return
    entry = ctx.entry[block]
    for j, lb in entry_bounds(ctx, facts, entry).items():
        stop = min(j, start + spacers(lb) + 1)  # spacers start <= a < stop, before j
        order.extend(range(start * st + j, stop * st + j, st))
    ends, _c0 = exit_bounds(ctx, facts, entry)
    for i, c in ends.items():  # the pinned last instruction is one spacer already
        first = max(i, end - 1 - spacers(c)) + 1  # spacers first <= a < end - 1, after i
        order.extend(range(i * st + first, i * st + end - 1))
