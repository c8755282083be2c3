"""Feature: cross-block instruction motion. A pure fixed-latency ALU instruction moves over a block boundary:
up from the top part of a block into its predecessor (``hoist``), or down from the bottom part of a block into
its successor (``sink``). The control codes of both blocks are then recomputed by the reorder repair
(:mod:`sass_lsp.schedule.repair`), so every wait and stall the dependence model needs is there.

API
---
``crossblock_moves(text, arch=None) -> list[CrossBlockMove]``
    The legal moves of every kernel of ``text`` (each instruction: at most one hoist and one sink).
``apply(text, move) -> str``
    The text with the instruction's line moved and both blocks' control codes repaired.
``random_moves(text, n, rng, arch=None) -> (text, moves)``
    ``n`` moves in a row, each legal on the text the previous ones left.
``neighbour(original, arch=None) -> propose``
    ``propose(text, rng) -> Candidate | None`` for :func:`sass_lsp.schedule.search.annealing`.

The edge (conservative: a wrong move corrupts a kernel, a missed one only costs speed)
- P -> B with B's only predecessor P, B != P, B not dominating P (no loop back edge) and P and B in the same
  natural loops. Either P's only successor is B (it falls through, or ends in an unconditional branch to B,
  or in a guarded EXIT), or (hoist only) P ends in a conditional branch whose other targets do not read the
  moved instruction's results (backward liveness over the CFG over every register, predicate and uniform
  unit; a guarded write does not kill; a call, return or unresolved branch makes everything live) and do
  not write them within the producer's longest latency (a later write must not land first).
- A label at B's start that the ELF's metadata names (an ``@srel`` word in ``.nv.info``: exit and
  cooperative-group instruction offsets; CuAssembler's offset marker; the reorder game's anchor, ``deps``)
  names B's first instruction, whether or not a branch names it too: that one stays first (it is not
  hoisted, and a sink lands after it, crossing it). A terminator that carries a label itself (a
  one-instruction block) takes no hoist (the instruction would land after its label).
- No call, return or unresolved branch ends P.

The instruction
- Executes (not ``@!PT``), fixed latency (no scoreboard set, not variable), no memory space, no barrier
  (``Semantics.is_barrier``), no flow, not HGMMA-like, not positional (clocks, ``Semantics.positional``),
  not a warp-collective (VOTE, SHFL, MATCH, REDUX, ...: a hoist above a guarded EXIT changes the active
  threads), of a known pipe, not NOP, and not fixed or glued by the block's reorder dependences.
- If one of its registers is one an HGMMA-like instruction of the kernel names, it crosses no HGMMA,
  WARPGROUP, HGMMA wait or DEPBAR (its place relative to the asynchronous accesses stays as it was).
- It crosses no ``@!PT`` placeholder, and has no dependence, in any direction (RAW, WAR, WAW on every unit
  its effects name, guard included), with any instruction it crosses: the ones before it in B and P's
  terminator (hoist), the ones after it in P and a pinned first instruction of B (sink). So every read
  still reads the write it read before, on every path.
- Sinks leave P one instruction at least, hoists leave B one (the block structure stays).
- Loads are not moved: "cannot fault" needs the address proven in bounds or guarded as the load it follows,
  which nothing here proves.

The edit: the instruction's line moves (hoist: just before P's terminator, or after P's last instruction when
P falls through; sink: just before B's first instruction, after B's labels, or after that instruction when it
is pinned); the instruction lines of the span keep their ``/*addr*/`` slots in order. ``.reuse`` stays on an
instruction only where the instructions after it up to the first that touches the reused register are the same
as before; otherwise every ``.reuse`` of it is dropped (with the word trailer's reuse bits). Then P and B are
repaired in program order (P first, so B's entry state sees P's new stalls) with :func:`repair.repair_block`
on the new order, written with :func:`repair.block_edit`.

Timing: the repair judges the moved text, whose stalls are not ptxas's for the pairs the move brought
together, so two things keep ptxas's timing. A sink gives its stall to the instruction of P before it (after
it when it was first), so P keeps its length and what P's successors wait for has as long as before (a sink
whose sum would not fit the 4-bit field is not offered). After the repair, along the path P then B every
dependent pair keeps what the repair keeps inside one block (:func:`_keep_distances`: fixed-latency RAW at
least its latency and min(ptxas's distance, the placement floor), WAW min(ptxas's distance, the producer's
longest latency), a late read and its next writer min(ptxas's distance, ``LATE_READ_CAP``)); where one came
out shorter, the instructions before the later one wait the difference. Pairs with blocks off the path (a
producer in P's predecessor of a hoisted instruction) get what the repair gives any instruction at a block's
start: the checker's latency from the entry state.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sass_lsp.analysis.program import Block, Kernel, build_kernel, kernels_of, metadata_labels
from sass_lsp.cuasm import parse_cuasm
from sass_lsp.cuasm.assembler import module_arch
from sass_lsp.isa.semantics import Semantics, load_semantics, reused_units
from sass_lsp.model import Module
from sass_lsp.schedule.deps import (
    LATE_READ_CAP,
    MAX_STALL,
    UNTRUSTED_RAW_FLOOR,
    KernelContext,
    block_deps,
    kernel_context,
)
from sass_lsp.schedule.liveness import liveness, mask
from sass_lsp.schedule.moves import proposer, random_chain
from sass_lsp.schedule.repair import RepairError, block_edit, repair_block, repaired_texts, strip_reuse

KINDS = ("hoist", "sink")
# Results that depend on which threads of the warp are active (a hoist above a guarded EXIT changes that).
COLLECTIVE = frozenset({"VOTE", "VOTEU", "SHFL", "MATCH", "REDUX", "ELECT", "WARPSYNC", "CREDUX", "FENCE"})
# Fixed-latency pipes of plain arithmetic (not MMA, R2UR, or the control pipe's NOP/BSSY/WARPSYNC...).
PIPES = frozenset({"alu", "fma", "fma_wide", "uniform", "umov"})
GMMA_ORDER = frozenset({"gmma", "gmma_wait", "warpgroup"})  # what orders HGMMA's asynchronous registers
_ADDR = re.compile(r"/\*[0-9a-fA-F]+\*/")


class CrossBlockMoveError(ValueError):
    """The text cannot be read, or a move does not belong to it."""


@dataclass(frozen=True)
class CrossBlockMove:
    """One instruction moved across a block boundary. ``line`` is its 1-based line in the text the move was
    made for; ``node`` / ``to_node`` its kernel node index before and after; ``from_block`` / ``to_block``
    the blocks (same numbering before and after); ``position`` its index in ``to_block`` after the move."""

    kind: str
    kernel: str
    line: int
    node: int
    to_node: int
    from_block: int
    to_block: int
    position: int
    anchor: int  # the node the line goes next to: before it (hoist over a terminator, sink), or after it
    after: bool
    opcode: str
    description: str = ""

    def __str__(self) -> str:
        return self.description


# ---------------------------------------------------------------- enumerate


def parse_module(text: str) -> tuple[Module, str]:
    module, diags = parse_cuasm(text)
    errors = [d for d in diags if d.severity == "error"]
    if errors:
        raise CrossBlockMoveError(f"line {errors[0].line}: {errors[0].message}")
    return module, module_arch(module)


def crossblock_moves(
    text: str, arch: str | None = None, *, kinds: Sequence[str] = KINDS
) -> list[CrossBlockMove]:
    module, found = parse_module(text)
    arch = arch or found
    sem = load_semantics(arch)
    out: list[CrossBlockMove] = []
    for k in kernels_of(module, sem):  # every code section's kernel, with the module's metadata labels
        if k.nodes:
            out += _Enumerator(k, sem, frozenset(kinds)).moves()
    return out


class _Enumerator:
    def __init__(self, k: Kernel, sem: Semantics, kinds: frozenset[str]) -> None:
        self.k, self.sem, self.kinds = k, sem, kinds
        self.ctx = kernel_context(k, sem)
        self.deps = {}
        self.unresolved = {i for i, _ in k.unresolved}
        self.dom = _dominators(k)
        self.loops = _loops(k, self.dom)
        self.live_in = liveness(k).live_in

    def _deps(self, b: int):  # noqa: ANN202
        d = self.deps.get(b)
        if d is None:
            d = self.deps[b] = block_deps(self.k, b, self.sem)
        return d

    def moves(self) -> list[CrossBlockMove]:
        out: list[CrossBlockMove] = []
        k = self.k
        for p in k.blocks:
            if p.end <= p.start or self._opaque(p.idx):
                continue
            for s in p.succs:
                if not self._edge_ok(p.idx, s):
                    continue
                if "hoist" in self.kinds:
                    out += self._hoists(p.idx, s)
                if "sink" in self.kinds and p.succs == [s]:
                    out += self._sinks(p.idx, s)
        return out

    # ------------------------------------------------------------ CFG

    def _opaque(self, p: int) -> bool:
        b = self.k.blocks[p]
        last = self.k.nodes[b.end - 1]
        return "call" in last.eff.flags or "ret" in last.eff.flags or (b.end - 1) in self.unresolved

    def _edge_ok(self, p: int, s: int) -> bool:
        k = self.k
        b = k.blocks[s]
        if s == p or b.preds != [p] or b.end <= b.start or s in self.dom[p]:
            return False
        return self.loops[p] == self.loops[s]

    def _pinned(self, s: int) -> bool:
        """B's first instruction must stay first: the ELF's metadata records it by address (the reorder game's
        anchor, ``deps``: a label the module's metadata names, or CuAssembler's offset marker)."""
        return s in self.ctx.anchored

    def _terminator(self, p: int) -> int | None:
        """P's last node when it is a flow instruction (branch, exit), else None (P falls through)."""
        b = self.k.blocks[p]
        last = b.end - 1
        return last if self.k.nodes[last].eff.flags & {"branch", "exit", "indirect"} else None

    # ------------------------------------------------------------ the instruction

    def _movable(self, block: int, i: int) -> bool:
        nd = self.k.nodes[i]
        eff = nd.eff
        f = self.ctx.nodes[i]
        if eff.never or f.variable or f.events or f.wsb is not None or f.rsb is not None:
            return False
        if f.mem is not None or f.gmma or f.shared or f.bar_sync or f.depbar is not None:
            return False
        if eff.flags or eff.pipe not in PIPES or eff.opcode in ("NOP", "?") or eff.opcode in COLLECTIVE:
            return False
        if self.sem.is_barrier(eff.opcode) or self.sem.positional(nd.text):
            return False
        if not eff.def_units:
            return False
        deps = self._deps(block)
        return i not in deps.fixed and i not in deps.glued

    def _independent(self, i: int, others: Sequence[int]) -> bool:
        ei = self.k.nodes[i].eff
        gmma = not (ei.def_units | ei.use_units).isdisjoint(self.ctx.gmma_units)
        for j in others:
            ej = self.k.nodes[j].eff
            if ej.never:
                return False  # @!PT placeholders keep their neighbours (deps._placeholders)
            if gmma and (ej.flags & GMMA_ORDER or self.ctx.nodes[j].depbar is not None):
                return False  # HGMMA reads and writes its registers asynchronously: stay on its side
            if not ei.use_units.isdisjoint(ej.def_units):
                return False
            if not ei.def_units.isdisjoint(ej.use_units | ej.def_units):
                return False
        return True

    # ------------------------------------------------------------ hoist and sink

    def _hoists(self, p: int, s: int) -> list[CrossBlockMove]:
        k = self.k
        pb, b = k.blocks[p], k.blocks[s]
        term = self._terminator(p)
        if term is not None and term == pb.start and pb.labels:
            return []  # the instruction would land after the terminator's label
        others = [x for x in pb.succs if x != s]
        if (others and term is None) or b.end - b.start < 2:
            return []
        out = []
        for i in range(b.start + self._pinned(s), b.end):
            if not self._movable(s, i):
                continue
            crossed = list(range(b.start, i)) + ([term] if term is not None else [])
            if not self._independent(i, crossed):
                continue
            if others and not self._dead_on(i, others):
                continue
            if term is not None:  # just before the terminator
                to_node = term - (i < term)
                out.append(self._move("hoist", i, s, p, term - pb.start, to_node, term, False))
            else:  # after P's last instruction (P falls through into B)
                out.append(self._move("hoist", i, s, p, pb.end - pb.start, pb.end, pb.end - 1, True))
        return out

    def _sinks(self, p: int, s: int) -> list[CrossBlockMove]:
        k = self.k
        pb = k.blocks[p]
        term = self._terminator(p)
        out = []
        last = pb.end - 1 if term is None else term - 1
        b = k.blocks[s]
        pin = self._pinned(s)  # then the instruction goes after B's first one, not before it
        if (pin and b.end - b.start < 2) or pb.end - pb.start < 2:
            return out
        at = b.start + pin
        for i in range(pb.start, last + 1):
            if not self._movable(p, i):
                continue
            pad = _pad_node(pb, i)
            if k.nodes[pad].ctrl.stall + k.nodes[i].ctrl.stall > MAX_STALL:
                continue
            if not self._independent(i, list(range(i + 1, pb.end)) + list(range(b.start, at))):
                continue
            out.append(self._move("sink", i, p, s, int(pin), at - (i < at), at, False))
        return out

    def _dead_on(self, i: int, others: Sequence[int]) -> bool:
        """The results of node i are read on no path from the other successors, and written there only after
        the producer's longest latency (so the later write lands last)."""
        k = self.k
        eff = k.nodes[i].eff
        written = mask(eff.def_units)
        lat = self.ctx.maxlat.get(eff.pipe, 0)
        lat = max([lat] + [self.ctx.maxlat.get(pp, 0) for pp in self.ctx.nodes[i].dst_pipe.values()])
        for o in others:
            if self.live_in[o] & written:
                return False
            ob = k.blocks[o]
            cycles = 0
            for j in range(ob.start, ob.end):
                if not eff.def_units.isdisjoint(k.nodes[j].eff.def_units | k.nodes[j].eff.use_units):
                    if cycles < lat:
                        return False
                    break
                cycles += k.nodes[j].ctrl.stall
            else:
                if cycles < lat:
                    return False
        return True

    def _move(
        self, kind: str, i: int, frm: int, to: int, pos: int, to_node: int, anchor: int, after: bool
    ) -> CrossBlockMove:
        nd = self.k.nodes[i]
        what = "up into" if kind == "hoist" else "down into"
        desc = f"{kind} {nd.eff.opcode} line {nd.line} (block {frm}) {what} block {to} at {pos}"
        return CrossBlockMove(
            kind, self.k.name, nd.line, i, to_node, frm, to, pos, anchor, after, nd.eff.opcode, desc
        )


def _dominators(k: Kernel) -> list[set[int]]:
    """dom[b]: the blocks that dominate b (iterative; block 0 is the entry; unreachable blocks: all)."""
    n = len(k.blocks)
    everything = set(range(n))
    dom = [set(everything) for _ in range(n)]
    if n:
        dom[0] = {0}
    changed = True
    while changed:
        changed = False
        for b in k.blocks[1:]:
            preds = [dom[p] for p in b.preds]
            new = set.intersection(*preds) if preds else set(everything)
            new = new | {b.idx}
            if new != dom[b.idx]:
                dom[b.idx] = new
                changed = True
    return dom


def _loops(k: Kernel, dom: list[set[int]]) -> list[frozenset[int]]:
    """Per block, the headers of the natural loops that hold it (a back edge u -> h: h dominates u)."""
    out: list[set[int]] = [set() for _ in k.blocks]
    for u in k.blocks:
        for h in u.succs:
            if h not in dom[u.idx]:
                continue
            body = {h, u.idx}
            work = [u.idx]
            while work:
                x = work.pop()
                if x == h:
                    continue
                for p in k.blocks[x].preds:
                    if p not in body:
                        body.add(p)
                        work.append(p)
            for x in body:
                out[x].add(h)
    return [frozenset(s) for s in out]


# ---------------------------------------------------------------- apply


def apply(text: str, move: CrossBlockMove, arch: str | None = None) -> str:
    module, found = parse_module(text)
    arch = arch or found
    sem = load_semantics(arch)
    k = kernel_named(module, move.kernel, sem)
    n = len(k.nodes)
    if not 0 <= move.node < n or k.nodes[move.node].line != move.line:
        raise CrossBlockMoveError(f"line {move.line} is not node {move.node} of kernel {move.kernel}")
    if not (0 <= move.to_node < n and 0 <= move.anchor < n and move.anchor != move.node):
        raise CrossBlockMoveError(f"line {move.line}: the move's target is not in kernel {move.kernel}")
    order = [i for i in range(n) if i != move.node]
    order.insert(move.to_node, move.node)
    lines = _drop_reuse(text.splitlines(keepends=True), k, order, move.node)
    if move.kind == "sink":  # P keeps its length: what P's successors wait for has as long as before
        pad = k.nodes[_pad_node(k.blocks[move.from_block], move.node)]
        lines[pad.line - 1] = _add_stall(lines[pad.line - 1], k.nodes[move.node].ctrl.stall)
    text = "".join(_move_line(lines, k, move))
    for block in sorted({move.from_block, move.to_block}):  # program order: the entry state sees the change
        text = repair_block_text(text, move.kernel, block, sem)
    return _keep_distances(text, k, order, move, sem)


def _pad_node(pb: Block, i: int) -> int:
    """The node of P that takes a sunk instruction's stall: the one before it, or after it if it is first."""
    return i - 1 if i > pb.start else i + 1


_STALL = re.compile(r":S(\d\d)\]")


def _add_stall(line: str, cycles: int) -> str:
    m = _STALL.search(line)
    if m is None:
        raise CrossBlockMoveError(f"no stall field in {line.strip()!r}")
    stall = int(m.group(1)) + cycles
    if stall > MAX_STALL:
        raise CrossBlockMoveError(f"a stall of {stall} cycles does not fit the field")
    return line[: m.start(1)] + f"{stall:02d}" + line[m.end(1) :]


def kernel_named(module: Module, name: str, sem: Semantics) -> Kernel:
    for sec in module.sections:
        if sec.name == f".text.{name}":
            return build_kernel(name, sec.line, list(sec.items), sem, metadata_labels(module))
    raise CrossBlockMoveError(f"no kernel {name} in the text")


def _move_line(lines: list[str], k: Kernel, move: CrossBlockMove) -> list[str]:
    """The instruction's line moved next to the anchor's; the instruction lines in between keep their
    ``/*addr*/`` slots in order (labels and comments stay where they are)."""
    src = k.nodes[move.node].line - 1
    dst = k.nodes[move.anchor].line - (0 if move.after else 1)  # insert before this (0-based) line
    first, last = min(src, dst), max(src, dst - 1)
    slots = [nd.line - 1 for nd in k.nodes if first <= nd.line - 1 <= last]
    addrs = [_addr(lines[x]) for x in slots]
    out = list(lines)
    moved = out.pop(src)
    out.insert(dst if dst < src else dst - 1, moved)
    new_slots = [x for x in range(first, last + 1) if _is_instruction(out[x])]
    if len(new_slots) != len(slots):
        raise CrossBlockMoveError(f"line {move.line}: the span holds lines that look like instructions")
    for x, addr in zip(new_slots, addrs, strict=True):
        if addr is not None:
            out[x] = _ADDR.sub(addr, out[x], count=1)
    return out


def _addr(line: str) -> str | None:
    m = _ADDR.search(line)
    return m.group(0) if m else None


def _is_instruction(line: str) -> bool:
    return line.lstrip().startswith("[")


def _drop_reuse(lines: list[str], k: Kernel, order: list[int], moved: int) -> list[str]:
    """Every ``.reuse`` of an instruction dropped where its window (the instructions after it up to the
    first that touches the reused register) changes with the move, and of the moved instruction."""
    pos_new = {x: p for p, x in enumerate(order)}
    old = range(len(k.nodes))
    out = list(lines)
    for nd in k.nodes:
        units = reused_units(nd.text)
        if not units:
            continue
        x = nd.idx
        if x == moved or any(_window(k, old, x, u) != _window(k, order, pos_new[x], u) for u in units):
            out[nd.line - 1] = strip_reuse(out[nd.line - 1])
    return out


def _window(k: Kernel, seq: Sequence[int], p: int, unit: int) -> list[int]:
    out = []
    for q in range(p + 1, len(seq)):
        y = seq[q]
        out.append(y)
        e = k.nodes[y].eff
        if unit in e.use_units or unit in e.def_units:
            break
    return out


def repair_block_text(text: str, name: str, block: int, sem: Semantics) -> str:
    module, _ = parse_module(text)
    k = kernel_named(module, name, sem)
    b = k.blocks[block]
    order = list(range(b.start, b.end))
    ctrls = repair_block(k, sem, block, order)
    texts = repaired_texts(k, block, order, ctrls)
    lines = text.splitlines(keepends=True)
    first, last, new = block_edit(lines, k, block, order, ctrls, texts)
    return "".join(lines[: first - 1] + new + lines[last:])


# ---------------------------------------------------------------- distances along P -> B


def _keep_distances(text: str, k0: Kernel, order: list[int], move: CrossBlockMove, sem: Semantics) -> str:
    """Along the path P then B, every dependent pair keeps what the reorder repair keeps inside a block:
    a fixed-latency RAW pair at least its latency and min(ptxas's distance, the placement floor), a WAW pair
    min(ptxas's distance, the older producer's longest latency), a late read (memory or variable-latency
    source without R scoreboard) and its next writer min(ptxas's distance, ``LATE_READ_CAP``). Pairs the
    move put in one block, or in two, were judged by the repair against the moved text, not ptxas's: where
    one came out shorter, the instruction before the later one waits the difference longer."""
    module, _ = parse_module(text)
    k1 = kernel_named(module, move.kernel, sem)
    p, b = (move.to_block, move.from_block) if move.kind == "hoist" else (move.from_block, move.to_block)
    path0 = [*range(k0.blocks[p].start, k0.blocks[p].end), *range(k0.blocks[b].start, k0.blocks[b].end)]
    path1 = [*range(k1.blocks[p].start, k1.blocks[p].end), *range(k1.blocks[b].start, k1.blocks[b].end)]
    t0 = dict(
        zip(path0, itertools.accumulate((k0.nodes[x].ctrl.stall for x in path0), initial=0), strict=False)
    )
    stalls = [k1.nodes[x].ctrl.stall for x in path1]
    ctx = kernel_context(k0, sem)
    add = [0] * len(path1)
    for a, c, need in path_pairs(ctx, [order[x] for x in path1], t0, sem):
        t1 = list(itertools.accumulate((s + e for s, e in zip(stalls, add, strict=True)), initial=0))
        if lengthen(add, stalls, a, c, need - (t1[c] - t1[a])):
            raise CrossBlockMoveError(f"line {move.line}: no room to keep a distance of {need} cycles")
    if not any(add):
        return text
    lines = text.splitlines(keepends=True)
    add_stalls(lines, k1, path1, add, sem)
    return "".join(lines)


def lengthen(add: list[int], stalls: Sequence[int], a: int, c: int, short: int) -> int:
    """``short`` more cycles between positions ``a`` and ``c``, given to the instructions before ``c`` (the
    latest first, each up to the stall field's maximum) and recorded in ``add``; returns what did not fit."""
    q = c - 1
    while short > 0 and q >= a:
        give = min(MAX_STALL - stalls[q] - add[q], short)
        add[q] += give
        short -= give
        q -= 1
    return max(short, 0)


def add_stalls(lines: list[str], k: Kernel, nodes: Sequence[int], add: Sequence[int], sem: Semantics) -> None:
    """``add[i]`` more stall cycles written into the line of node ``nodes[i]``; yield set where the stall
    needs it, and then the line's ``.reuse`` dropped (the repair's rule)."""
    limit = sem.param("max_stall_without_yield")
    for x, extra in zip(nodes, add, strict=True):
        if extra:
            nd = k.nodes[x]
            line = _add_stall(lines[nd.line - 1], extra)
            if limit is not None and nd.ctrl.stall + extra > limit and not nd.ctrl.yield_flag:
                line = strip_reuse(_YIELD_FIELD.sub(":Y:S", line, count=1))
            lines[nd.line - 1] = line


_YIELD_FIELD = re.compile(r":-:S(?=\d\d\])")


def path_pairs(
    ctx: KernelContext, ids: list[int], t0: dict[int, int], sem: Semantics
) -> list[tuple[int, int, int]]:
    """(position a, position c, cycles) of the dependent pairs of the straight path ``ids`` (original node
    indices in their new order) and the distance each must keep, as :func:`deps._block_facts` forms them
    with ``t0`` (ptxas's issue cycles along the original path) as ptxas's distances."""
    out = []
    last_fixed: dict[int, tuple[int, str]] = {}
    late_readers: dict[int, list[int]] = {}
    for c, j in enumerate(ids):
        f = ctx.nodes[j]
        if f.never:
            continue
        for u, kind in f.reads:
            hit = last_fixed.get(u)
            if hit is None:
                continue
            a, pipe = hit
            fp = ctx.nodes[ids[a]]
            if fp.guard is not None and f.guard == fp.guard and f.neg != fp.neg:
                continue
            row = sem.latency(pipe, f.pipe, kind)
            if row is None:
                continue
            placed = sem.placement_latency(pipe, f.pipe, kind) or row.cycles
            floor = LATE_READ_CAP if f.gmma else max(placed, UNTRUSTED_RAW_FLOOR)
            out.append((a, c, max(row.cycles, min(floor, t0[j] - t0[ids[a]]))))
        for u in f.defs:
            hit = last_fixed.get(u)
            if hit is not None:
                a, pipe = hit
                out.append((a, c, min(t0[j] - t0[ids[a]], ctx.maxlat.get(pipe, 0))))
            for a in late_readers.pop(u, ()):
                out.append((a, c, min(t0[j] - t0[ids[a]], LATE_READ_CAP)))
        if (f.variable or f.mem is not None) and f.rsb is None and not f.gmma:
            for u in f.late:
                late_readers.setdefault(u, []).append(c)
        for u in f.defs:
            pipe = f.dst_pipe.get(u)
            if pipe is None:
                last_fixed.pop(u, None)
            else:
                last_fixed[u] = (c, pipe)
    return sorted(out, key=lambda x: (x[1], x[0]))


# ---------------------------------------------------------------- chains and the search's neighbour


def random_moves(
    text: str, n: int, rng: random.Random, *, arch: str | None = None, kinds: Sequence[str] = KINDS
) -> tuple[str, list[CrossBlockMove]]:
    return random_chain(
        text, n, rng, lambda t: crossblock_moves(t, arch, kinds=kinds), _applier(arch), _ERRORS
    )


# A move apply cannot make: no room in a stall field to keep a distance, a block the repair refuses.
_ERRORS = (CrossBlockMoveError, RepairError)


def _applier(arch: str | None) -> Callable[[str, CrossBlockMove], str]:
    return lambda text, move: apply(text, move, arch)


def neighbour(
    original: str,
    arch: str | None = None,
    *,
    kinds: Sequence[str] = KINDS,
    source: str = "cross-block",
    cache: int = 8,
) -> Callable[[str, random.Random], object]:
    """``propose(text, rng)`` for :func:`sass_lsp.schedule.search.annealing`: one cross-block move away from
    ``text``. The move lists of the last ``cache`` texts are kept. A text with no move left gives None."""
    return proposer(lambda t: crossblock_moves(t, arch, kinds=kinds), _applier(arch), source, _ERRORS, cache)
