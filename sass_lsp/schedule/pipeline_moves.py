"""Feature: software pipelining of a single-block loop. A global load (with the arithmetic that forms its
address) is issued one iteration ahead: its copy runs at the end of each iteration for the next one, guarded
by the loop's own branch condition, and once more at the end of the block before the loop (the prologue), so
its latency overlaps the rest of the iteration instead of stalling the instruction that reads it. The
registers the moved instructions write are renamed to registers the kernel never names, so the value the
current iteration reads is not overwritten by the next iteration's load.

API
---
``pipeline_moves(text, arch=None, *, kinds=KINDS, threads_per_block=None, allow_occupancy_loss=False)``
    ``-> list[PipelineMove]``: the legal moves of every kernel of ``text`` (one per global load of a loop).
``apply(text, move) -> str``
    The text with the move made and the two blocks' control codes repaired; raises
    :class:`PipelineMoveError` if the hazard checker would report anything the text did not.
``random_moves(text, n, rng, ...) -> (text, moves)`` / ``neighbour(original, ...) -> propose``
    As the other move kinds (:mod:`.crossblock_moves`): chains, and the search's proposer.

The loop (conservative: a wrong move corrupts a kernel, a missed one only costs speed)
- A block L whose last instruction is a conditional branch back to L's start and whose other successor is the
  fall-through (the exit); L's only other predecessor P has L as its only successor (it falls through into L,
  or ends in an unconditional branch to L) and ends in no call or return. L's first instruction does not move
  where the ELF's metadata names it (``deps``'s anchor).
- The branch's guard is a predicate register (``P0``-``P6``; not a uniform predicate, which cannot guard the
  copies).
- No instruction of L writes global or local memory, or orders memory (fences, ``CCTL``), or is a bulk,
  tensor or surface copy the tables give no memory row (``UNLISTED_WRITERS``): over the loop, the
  memory a global load reads is written by no thread of the block, so a load may move over anything in L,
  ``BAR.SYNC`` included.

The moved set S
- The load: an unguarded ``LDG`` without a memory-ordering qualifier (``STRONG``, ``MMIO``, ...), with a
  write scoreboard. Then, for each register the members read, its last writer in L before the member, if any:
  it joins S if it is unguarded fixed-latency arithmetic (what a cross-block move may move) that writes GPRs
  only; otherwise there is no move. A register a member reads with no writer before it in L is written in L
  after it, if at all, only by instructions outside S (an induction update such as ``IADD3 R149, R149, 0x4``,
  which the copy at the iteration's end then sees, as the next iteration's load would).
- Every GPR a member writes gets a fresh register (none named anywhere in the kernel, aligned as the operands
  that read it together), and every read of that value in L (up to the next write of the register) is renamed.
  The old register must not be read in L before it is written (no value carried round the loop) and must be
  dead at the exit when no instruction of L writes it after the member.
- Register count and occupancy as in :mod:`.rename_moves`: a move that lowers resident warps per SM is refused
  unless ``allow_occupancy_loss``.

The edit
- S's lines leave L. Their copies, renamed, go before L's branch, each guarded by the branch's predicate (a
  guarded-off load does not fault, so the iteration that does not follow issues nothing), and unguarded
  before P's terminator (or after P's last instruction). The load's copies take a scoreboard that no
  instruction of L sets or waits on and no ``DEPBAR`` counts (one the kernel never uses, where there is one).
- ``.reuse`` is dropped from the copies, the renamed readers, and every instruction of L or P whose window
  (the instructions after it up to the first that touches the reused register) changed.
- P, then L, are repaired in their new order (:func:`repair.repair_block`): waits come from the scoreboard
  events pending at L's entry (the prologue's and the previous iteration's loads), stalls from the latencies.
  The repair takes the edited text for ptxas's, so the distances ptxas kept are then restored where the edit
  shortened them: pairs of L's own instructions that S's removal brought closer keep what a reorder keeps,
  and each fixed-latency pair into a copy min(its distance in the original run, ``UNTRUSTED_RAW_FLOOR``).
- The checker then runs over the new kernel; a move after which it reports more than before is not made.
  Moves chain: each further load of a loop is one more move.
"""

from __future__ import annotations

import functools
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sass_lsp.analysis.hazards import Checker
from sass_lsp.analysis.program import Ctrl, Kernel, encode_ctrl, kernels_of
from sass_lsp.isa.semantics import SPACE_BITS, RegisterRef, Semantics, load_semantics, reused_units
from sass_lsp.schedule.crossblock_moves import (
    COLLECTIVE,
    PIPES,
    CrossBlockMoveError,
    add_stalls,
    kernel_named,
    lengthen,
    parse_module,
    path_pairs,
    repair_block_text,
)
from sass_lsp.schedule.deps import UNTRUSTED_RAW_FLOOR, kernel_context
from sass_lsp.schedule.liveness import liveness
from sass_lsp.schedule.moves import proposer, random_chain
from sass_lsp.schedule.rename_moves import NUM_GPR, declared_regcounts, gpr_refs, occupancy, register_count
from sass_lsp.schedule.repair import RepairError, strip_reuse

KINDS = ("load",)
SCOREBOARDS = 6
MAX_SLICE = 16  # instructions moved with one load (its address arithmetic)
ORDERING = frozenset({"STRONG", "MMIO", "VOLATILE", "SYS", "GPU", "SM", "PRIVATE"})  # LDG qualifiers kept
FENCES = frozenset({"MEMBAR", "FENCE", "ERRBAR", "CCTL", "CCTLL", "CCTLT"})
# Opcodes that may write global memory but have no memory row in the semantics tables (bulk and tensor
# copies, surface stores and reductions): a loop holding one takes no move.
UNLISTED_WRITERS = ("UTMA", "UBLK", "SUST", "SURED", "SUATOM")
_WRITES_OUTSIDE_SHARED = ~SPACE_BITS["shared"]
_GUARD = re.compile(r"^\s*@!?P[0-6]\s+")  # a uniform predicate cannot guard the copies
_CTRL_FIELD = re.compile(r"\[(B[^\]]*)\]")
_REGISTER = re.compile(r"R\d+")


class PipelineMoveError(ValueError):
    """The text cannot be read, or a move does not belong to it or cannot be made."""


@dataclass(frozen=True)
class PipelineMove:
    """One load issued an iteration ahead. Lines are 1-based, of the text the move was made for."""

    kind: str
    kernel: str
    loop_block: int
    load_line: int
    lines: tuple[int, ...]  # the moved instructions, program order (the load last)
    renames: tuple[tuple[int, int], ...]  # (old register, new register) per register written
    scoreboard: int
    regs_before: int
    regs_after: int
    warps_before: int
    warps_after: int
    description: str = ""

    def __str__(self) -> str:
        return self.description


# ---------------------------------------------------------------- enumerate


def pipeline_moves(
    text: str,
    arch: str | None = None,
    *,
    kinds: Sequence[str] = KINDS,
    threads_per_block: int | None = None,
    allow_occupancy_loss: bool = False,
) -> list[PipelineMove]:
    return [plan.move for plan in _plans(text, arch, kinds, threads_per_block, allow_occupancy_loss)]


def _plans(
    text: str, arch: str | None, kinds: Sequence[str], threads: int | None, allow_loss: bool
) -> list[_Plan]:
    if "load" not in kinds:
        return []
    module, found = parse_module(text)
    sem = load_semantics(arch or found)
    declared = declared_regcounts(text)
    out: list[_Plan] = []
    for k in kernels_of(module, sem):
        if k.nodes:
            out += _Enumerator(k, sem, arch or found, declared.get(k.name, 0), threads, allow_loss).plans()
    return out


@dataclass(frozen=True)
class _Plan:
    move: PipelineMove
    members: tuple[int, ...]  # node indices of S, program order
    new_text: dict[int, str]  # node -> its renamed instruction text (members and readers)
    pre: int  # P's block index
    guard: str  # the branch's guard as written ("@!P0")


class _Enumerator:
    def __init__(
        self, k: Kernel, sem: Semantics, arch: str, declared: int, threads: int | None, allow_loss: bool
    ) -> None:
        self.k, self.sem, self.arch, self.declared = k, sem, arch, declared
        self.threads, self.allow_loss = threads, allow_loss
        self.ctx = kernel_context(k, sem)
        self.refs = [sem.register_refs(nd.text) for nd in k.nodes]
        self.named = {u for nd, refs in zip(k.nodes, self.refs, strict=True) for u in _gpr_units(nd, refs)}
        self.live_in = liveness(k).live_in
        self.regs_before = register_count([nd.text for nd in k.nodes], arch, declared)

    def plans(self) -> list[_Plan]:
        out = []
        for b in self.k.blocks:
            loop = self._loop(b.idx)
            if loop is None:
                continue
            for i in range(b.start, b.end - 1):
                plan = self._plan(b.idx, *loop, i)
                if plan is not None:
                    out.append(plan)
        return out

    # ------------------------------------------------------------ the loop

    def _loop(self, b: int) -> tuple[int, str] | None:
        """(P, the branch's guard as written), where block ``b`` is a loop L of the shape above."""
        k = self.k
        blk = k.blocks[b]
        if b not in blk.succs or len(blk.succs) != 2 or blk.end - blk.start < 2:
            return None
        others = [p for p in blk.preds if p != b]
        if len(others) != 1:
            return None
        pb = k.blocks[others[0]]
        term = k.nodes[blk.end - 1].eff
        if (
            term.opcode != "BRA"
            or term.guard is None
            or term.never
            or not set(term.targets) & set(blk.labels)
        ):
            return None
        if pb.succs != [b] or pb.end <= pb.start:
            return None
        last = k.nodes[pb.end - 1].eff
        if last.flags & {"call", "ret", "indirect", "exit"} or (pb.end - 1) in {i for i, _ in k.unresolved}:
            return None
        if last.flags & {"branch"} and (last.guard is not None or last.guard_neg or last.opcode != "BRA"):
            return None
        for i in range(blk.start, blk.end):
            f = self.ctx.nodes[i]
            eff = k.nodes[i].eff
            if f.mem is not None and f.mem[1] & _WRITES_OUTSIDE_SHARED or eff.opcode in FENCES:
                return None
            if eff.opcode.startswith(UNLISTED_WRITERS):
                return None
            if eff.flags & {"call", "ret"}:
                return None
        guard = _GUARD.match(k.nodes[blk.end - 1].text)
        return None if guard is None else (pb.idx, guard.group().strip())

    # ------------------------------------------------------------ the moved set

    def _is_load(self, i: int) -> bool:
        nd, f = self.k.nodes[i], self.ctx.nodes[i]
        eff = nd.eff
        return (
            eff.opcode == "LDG"
            and eff.guard is None
            and not eff.guard_neg
            and not eff.never
            and f.wsb is not None
            and f.mem is not None
            and f.mem[0] & SPACE_BITS["global"] != 0
            and f.mem[1] == 0
            and not ORDERING & set(eff.modifiers)
            and all(u < 256 for u in eff.def_units)
        )

    def _is_arith(self, i: int) -> bool:
        nd, f = self.k.nodes[i], self.ctx.nodes[i]
        eff = nd.eff
        if eff.never or eff.guard is not None or eff.guard_neg or f.variable or f.events or f.mem is not None:
            return False
        if f.gmma or f.bar_sync or f.depbar is not None or f.wsb is not None or f.rsb is not None:
            return False
        if eff.flags or eff.pipe not in PIPES or eff.opcode in COLLECTIVE or eff.opcode in ("NOP", "?"):
            return False
        if self.sem.is_barrier(eff.opcode) or self.sem.positional(nd.text):
            return False
        return (
            bool(eff.def_units) and all(u < 256 for u in eff.def_units) and not f.touch & self.ctx.gmma_units
        )

    def _slice(self, b: int, load: int) -> list[int] | None:
        """S for the load at node ``load`` of block ``b``, or None."""
        k = self.k
        start = k.blocks[b].start
        members = {load}
        work = [load]
        while work:
            s = work.pop()
            for u in k.nodes[s].eff.use_units:
                w = next((j for j in range(s - 1, start - 1, -1) if u in k.nodes[j].eff.def_units), None)
                if w is None or w in members:
                    continue
                if not self._is_arith(w) or len(members) >= MAX_SLICE:
                    return None
                members.add(w)
                work.append(w)
        return sorted(members)

    def _plan(self, b: int, pre: int, guard: str, load: int) -> _Plan | None:
        if not self._is_load(load):
            return None
        k = self.k
        blk = k.blocks[b]
        members = self._slice(b, load)
        if members is None or (blk.start in members and b in self.ctx.anchored):
            return None
        member_set = set(members)
        for s in members:  # a source with no writer before it: written after it only outside S
            for u in k.nodes[s].eff.use_units:
                writers = [j for j in range(blk.start, blk.end) if u in k.nodes[j].eff.def_units]
                if not any(j < s for j in writers) and any(j in member_set for j in writers if j > s):
                    return None
        renamed = self._renamed(b, members)
        if renamed is None:
            return None
        new_text, renames = renamed
        sb = self._scoreboard(b, pre)
        if sb is None:
            return None
        regs_after = register_count(
            [new_text.get(nd.idx, nd.text) for nd in k.nodes], self.arch, self.declared
        )
        warps_before = occupancy(self.regs_before, self.threads)
        warps_after = occupancy(regs_after, self.threads)
        if regs_after > NUM_GPR + 1 or (warps_after < warps_before and not self.allow_loss):
            return None
        nd = k.nodes[load]
        desc = (
            f"issue {nd.eff.opcode} line {nd.line} (and {len(members) - 1} address instructions) "
            f"one iteration ahead in the loop at line {k.nodes[blk.start].line}"
        )
        move = PipelineMove(
            "load",
            k.name,
            b,
            nd.line,
            tuple(k.nodes[s].line for s in members),
            renames,
            sb,
            self.regs_before,
            regs_after,
            warps_before,
            warps_after,
            desc,
        )
        return _Plan(move, tuple(members), new_text, pre, guard)

    # ------------------------------------------------------------ renaming

    def _renamed(self, b: int, members: list[int]) -> tuple[dict[int, str], tuple] | None:
        """The renamed texts of S and its readers, and (old, new) per register, or None."""
        k = self.k
        blk = k.blocks[b]
        member_set = set(members)
        current: dict[int, int] = {}  # unit -> its last writer so far in L
        keyed: dict[int, list[tuple[RegisterRef, tuple]]] = {}  # node -> (ref, keys of its units)
        for j in range(blk.start, blk.end):
            eff = k.nodes[j].eff
            named = _named_units(self.refs[j])
            if any(u < 256 and u not in named and current.get(u, -1) in member_set for u in eff.use_units):
                return None  # read without being named: a rename could not reach it
            carried = {current.get(u, -1) for u in eff.use_units if u < 256} & member_set
            if j not in member_set and carried - {members[-1]}:
                return None  # outside S only the load's value is read (no fixed latency round the loop)
            for ref in gpr_refs(self.refs[j]):
                if ref.written:
                    keys = tuple((j if j in member_set else -1, u) for u in ref.units)
                else:
                    keys = tuple((current.get(u, -1), u) for u in ref.units)
                hits = [key[0] in member_set for key in keys]
                if any(hits) and not all(hits):
                    return None  # an operand holding a renamed value beside another
                if all(hits):
                    keyed.setdefault(j, []).append((ref, keys))
            for u in eff.def_units:
                if u < 256 and eff.guard is not None and current.get(u, -1) in member_set:
                    return None  # a guarded write in a renamed value's range
                current[u] = j
        defined = {(s, u) for s in members for u in k.nodes[s].eff.def_units}
        exit_block = next(x for x in blk.succs if x != b)
        for s, u in defined:
            first = next(j for j in range(blk.start, blk.end) if u in k.nodes[j].eff.def_units)
            if any(u in k.nodes[j].eff.use_units for j in range(blk.start, first + 1)):
                return None  # a value carried round the loop
            later = any(u in k.nodes[j].eff.def_units for j in range(s + 1, blk.end) if j not in member_set)
            if not later and self.live_in[exit_block] >> u & 1:
                return None  # read after the loop
        groups = _groups(defined, [keys for refs in keyed.values() for _ref, keys in refs])
        if groups is None:
            return None
        new_of = self._allocate(groups)
        if new_of is None:
            return None
        texts: dict[int, str] = {}
        for j, refs in keyed.items():
            text = k.nodes[j].text
            for ref, keys in sorted(refs, key=lambda rk: -rk[0].start):
                m = _REGISTER.match(text, ref.start)
                if m is None:
                    return None
                text = text[: m.start()] + f"R{new_of[keys[0]]}" + text[m.end() :]
            texts[j] = strip_reuse(text)
        renames = tuple(sorted({(u, new_of[(s, u)]) for s, u in defined}))
        return texts, renames

    def _allocate(self, groups: list[list[tuple[int, int]]]) -> dict[tuple[int, int], int] | None:
        """A fresh aligned run of registers per group (its keys in register order)."""
        taken = set(self.named)
        out: dict[tuple[int, int], int] = {}
        for keys in groups:
            width = len(keys)
            align = 1 << (width - 1).bit_length()
            base = next(
                (r for r in range(0, NUM_GPR - width + 1, align) if not taken & set(range(r, r + width))),
                None,
            )
            if base is None:
                return None
            taken |= set(range(base, base + width))
            for off, key in enumerate(keys):
                out[key] = base + off
        return out

    def _scoreboard(self, b: int, pre: int) -> int | None:
        """A scoreboard no instruction of L sets or waits on and no DEPBAR counts; one the kernel never
        uses where there is one."""

        def used(nodes: Sequence[int]) -> int:
            m = 0
            for i in nodes:
                f = self.ctx.nodes[i]
                m |= f.wait
                for sb in (f.wsb, f.rsb):
                    if sb is not None:
                        m |= 1 << sb
                if f.depbar is not None:
                    m |= f.depbar[0]
            return m

        blk = self.k.blocks[b]
        in_loop = used(range(blk.start, blk.end))
        counted = 0
        for f in self.ctx.nodes:
            if f.depbar is not None:
                counted |= f.depbar[0]
        anywhere = used(range(len(self.k.nodes)))
        free = [sb for sb in range(SCOREBOARDS) if not (in_loop | counted) >> sb & 1]
        never = [sb for sb in free if not anywhere >> sb & 1]
        return (never or free or [None])[0]


def _named_units(refs: Sequence[RegisterRef]) -> set[int]:
    return {u for r in gpr_refs(refs) for u in r.units}


def _gpr_units(nd, refs: Sequence[RegisterRef]) -> set[int]:  # noqa: ANN001
    eff = nd.eff
    return _named_units(refs) | {u for u in eff.use_units | eff.def_units if u < 256}


def _groups(defined: set[tuple[int, int]], operand_keys: list[tuple]) -> list[list[tuple[int, int]]] | None:
    """The renamed values that operands read together, each group a run of consecutive registers (in
    register order), or None where they are not."""
    parent = {key: key for key in defined}

    def find(x: tuple[int, int]) -> tuple[int, int]:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for keys in operand_keys:
        for key in keys[1:]:
            parent[find(key)] = find(keys[0])
    groups: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for key in defined:
        groups.setdefault(find(key), []).append(key)
    out = []
    for keys in groups.values():
        keys.sort(key=lambda key: key[1])
        regs = [u for _s, u in keys]
        if regs != list(range(regs[0], regs[0] + len(regs))) or len(keys) > 4:
            return None
        out.append(keys)
    for keys in operand_keys:  # each operand's base keeps its alignment within its group
        if len(keys) > 1:
            group = next(g for g in out if keys[0] in g)
            if group.index(keys[0]) % len(keys):
                return None
    return sorted(out)


# ---------------------------------------------------------------- apply


def apply(text: str, move: PipelineMove, arch: str | None = None) -> str:
    module, found = parse_module(text)
    arch = arch or found
    sem = load_semantics(arch)
    try:
        k = kernel_named(module, move.kernel, sem)
    except CrossBlockMoveError as exc:
        raise PipelineMoveError(str(exc)) from None
    declared = declared_regcounts(text).get(k.name, 0)
    plans = [
        p
        for p in _Enumerator(k, sem, arch, declared, None, True).plans()
        if p.move.load_line == move.load_line and p.move.lines == move.lines
    ]
    if not plans:
        raise PipelineMoveError(f"line {move.load_line}: no such pipeline move in kernel {move.kernel}")
    plan = plans[0]
    lines = text.splitlines(keepends=True)
    out = _edited_lines(lines, k, plan)
    new = "".join(out)
    for block in (plan.pre, move.loop_block):  # program order: L's entry state sees P's new stalls
        new = repair_block_text(new, move.kernel, block, sem)
    new = _keep_distances(new, k, plan, sem)
    _same_findings(k, new, sem)
    return new


def _keep_distances(text: str, k0: Kernel, plan: _Plan, sem: Semantics) -> str:
    """What the reorder repair keeps for a pair a move brings closer, kept in P and L after the repair,
    which took the edited text for ptxas's:
    - pairs of L's own instructions that S's removal brought closer keep what a reorder keeps
      (:func:`crossblock_moves.path_pairs`: a fixed-latency RAW pair min(ptxas's distance, the floor), ...):
      with fp8_blockscale_gemm's two b-scale loads gone, ``ULEA UR6`` came 2 cycles before the ``UIADD3``
      reading it (ptxas: 19), and the QGMMA read a wrong stage on an H100;
    - every fixed-latency RAW pair that ends at a copy keeps min(its distance in the original run,
      ``UNTRUSTED_RAW_FLOOR``) (the table's latency is a minimum over opcodes: an ``IMAD.MOV`` 4 cycles
      before the ``LDG`` reading its pair gave the first iteration a stale address).
    Where one is shorter, the instructions before the later one wait the difference."""
    module, _ = parse_module(text)
    k1 = kernel_named(module, plan.move.kernel, sem)
    ctx0 = kernel_context(k0, sem)
    members = plan.members
    blk0 = k0.blocks[plan.move.loop_block]
    t0 = _issue_times(k0, range(k0.blocks[plan.pre].start, blk0.end))
    lap = sum(k0.nodes[j].ctrl.stall for j in range(blk0.start, blk0.end))  # one iteration's cycles
    lines = text.splitlines(keepends=True)
    loop_new, pre_new = _sequences(k0, plan)
    for block, seq in ((plan.pre, pre_new), (plan.move.loop_block, loop_new)):
        b1 = k1.blocks[block]
        nodes = list(range(b1.start, b1.end))
        stalls = [k1.nodes[x].ctrl.stall for x in nodes]
        add = [0] * len(nodes)

        def keep(a: int, c: int, need: int) -> None:
            if lengthen(add, stalls, a, c, need - sum(stalls[a:c]) - sum(add[a:c])):  # noqa: B023
                raise PipelineMoveError(f"line {plan.move.load_line}: no room for a {need}-cycle distance")

        kept = [p for p, old in enumerate(seq) if old >= 0]
        for a, c, need in path_pairs(ctx0, [seq[p] for p in kept], t0, sem):
            keep(kept[a], kept[c], need)
        for c, old in enumerate(seq):
            if old >= 0:
                continue
            m = members[-1 - old]
            for a in range(c - 1, -1, -1):
                reads = k1.nodes[nodes[c]].eff.use_units & k1.nodes[nodes[a]].eff.def_units
                if not reads or _variable(k1.nodes[nodes[a]]):
                    continue
                w = seq[a]
                if w < 0:  # another copy: their distance in L
                    before = t0[m] - t0[members[-1 - w]]
                elif block == plan.move.loop_block:  # round the back edge
                    before = lap - (t0[w] - t0[blk0.start]) + (t0[m] - t0[blk0.start])
                else:  # P, then L's first iteration
                    before = t0[m] - t0[w]
                keep(a, c, min(before, UNTRUSTED_RAW_FLOOR))
        add_stalls(lines, k1, nodes, add, sem)
    return "".join(lines)


def _variable(nd) -> bool:  # noqa: ANN001
    """Whether ``nd``'s results come back on a scoreboard (then the repair's waits order the pair)."""
    return nd.ctrl.write_sb is not None or nd.eff.variable


def _issue_times(k: Kernel, nodes: range) -> dict[int, int]:
    """Issue cycle of each node of a straight run of blocks, from the first."""
    out, t = {}, 0
    for j in nodes:
        out[j] = t
        t += k.nodes[j].ctrl.stall
    return out


def _sequences(k: Kernel, plan: _Plan) -> tuple[list[int], list[int]]:
    """The new orders of L and P as old node indices, copy n of S as ``-1 - n``: L without S and with the
    copies before its branch; P with the copies before its terminator or after its last instruction."""
    blk, pb = k.blocks[plan.move.loop_block], k.blocks[plan.pre]
    copies = [-1 - n for n in range(len(plan.members))]
    loop_new = [j for j in range(blk.start, blk.end) if j not in plan.members]
    loop_new[-1:-1] = copies
    pre_new = list(range(pb.start, pb.end))
    at = len(pre_new) - (1 if k.nodes[pb.end - 1].eff.flags & {"branch"} else 0)
    pre_new[at:at] = copies
    return loop_new, pre_new


def _edited_lines(lines: list[str], k: Kernel, plan: _Plan) -> list[str]:
    move = plan.move
    blk, pb = k.blocks[move.loop_block], k.blocks[plan.pre]
    members = set(plan.members)
    load = plan.members[-1]
    copies = [
        _copy(
            lines[k.nodes[s].line - 1], k.nodes[s], plan.new_text[s], move.scoreboard if s == load else None
        )
        for s in plan.members
    ]
    rotated = [_guarded(line, plan.guard) for line in copies]
    loop_old, pre_old = list(range(blk.start, blk.end)), list(range(pb.start, pb.end))
    loop_new, pre_new = _sequences(k, plan)
    copy_units = [k.nodes[s].eff.use_units | k.nodes[s].eff.def_units for s in plan.members]  # old names
    out = list(lines)
    for old, new in ((loop_old, loop_new), (pre_old, pre_new)):
        for x in old:
            nd = k.nodes[x]
            if x in members:
                continue
            line = out[nd.line - 1]
            if x in plan.new_text:
                out[nd.line - 1] = _with_text(line, nd, plan.new_text[x])
                continue
            units = reused_units(nd.text)
            if units and any(
                _window(k, old, x, u, copy_units) != _window(k, new, x, u, copy_units) for u in units
            ):
                out[nd.line - 1] = strip_reuse(line)
    # insertions last, from the bottom up so that earlier line numbers stay valid
    branch_line = k.nodes[blk.end - 1].line
    pre_last = k.nodes[pb.end - 1]
    pre_at = pre_last.line - 1 if pre_last.eff.flags & {"branch"} else pre_last.line
    removed = sorted((k.nodes[s].line for s in members), reverse=True)
    edits = [(branch_line - 1, rotated)] + [(line - 1, None) for line in removed] + [(pre_at, copies)]
    for at_line, what in sorted(edits, key=lambda e: (-e[0], e[1] is not None)):  # delete, then insert
        if what is None:
            del out[at_line]
        else:
            out[at_line:at_line] = what
    return out


def _window(k: Kernel, seq: list[int], x: int, unit: int, copy_units: list[frozenset[int]]) -> list[int]:
    out = []
    for y in seq[seq.index(x) + 1 :]:
        out.append(y)
        units = copy_units[-1 - y] if y < 0 else k.nodes[y].eff.use_units | k.nodes[y].eff.def_units
        if unit in units:
            break
    return out


def _copy(line: str, nd, text: str, scoreboard: int | None) -> str:  # noqa: ANN001
    """An instruction line for a copy of ``nd`` with ``text``; the load's with its new write scoreboard."""
    out = _with_text(line, nd, text)
    if scoreboard is not None:
        c = nd.ctrl
        ctrl = encode_ctrl(Ctrl(c.wait_mask, c.read_sb, int(scoreboard), c.yield_flag, c.stall))
        out = _CTRL_FIELD.sub(f"[{ctrl}]", out, count=1)
    return strip_reuse(out)


def _with_text(line: str, nd, text: str) -> str:  # noqa: ANN001
    start = nd.text_col - 1
    end = start + len(nd.text)
    if line[start:end] != nd.text:
        raise PipelineMoveError(f"line {nd.line} does not hold {nd.text!r}")
    return line[:start] + text + line[end:]


def _guarded(line: str, guard: str) -> str:
    m = re.search(r"\*/(\s+)", line)
    if m is None:
        raise PipelineMoveError(f"no address comment in {line.strip()!r}")
    pad = m.group(1)
    cut = max(1, len(pad) - len(guard) - 1)
    return line[: m.start(1)] + pad[:cut] + guard + " " + line[m.end(1) :]


def _same_findings(k: Kernel, after: str, sem: Semantics) -> None:
    """Raises unless the checker reports nothing more on ``after``'s kernel than on ``k``."""
    module, _ = parse_module(after)
    new = Counter(f.code for f in Checker(kernel_named(module, k.name, sem), sem).run())
    more = new - Counter(f.code for f in Checker(k, sem).run())
    if more:
        raise PipelineMoveError(f"the checker would report {dict(more)} after the move")


# ---------------------------------------------------------------- chains and the search's neighbour


def random_moves(
    text: str,
    n: int,
    rng: random.Random,
    *,
    arch: str | None = None,
    kinds: Sequence[str] = KINDS,
    threads_per_block: int | None = None,
) -> tuple[str, list[PipelineMove]]:
    moves = functools.partial(pipeline_moves, arch=arch, kinds=kinds, threads_per_block=threads_per_block)
    return random_chain(text, n, rng, moves, functools.partial(apply, arch=arch), _ERRORS)


_ERRORS = (PipelineMoveError, RepairError)  # a move apply cannot make (no room for a distance, ...)


def neighbour(
    original: str,
    arch: str | None = None,
    *,
    threads_per_block: int | None = None,
    source: str = "pipeline",
    cache: int = 8,
) -> Callable[[str, random.Random], object]:
    """``propose(text, rng)`` for :func:`sass_lsp.schedule.search.annealing`: one pipeline move away from
    ``text``; None where there is none."""
    moves = functools.partial(pipeline_moves, arch=arch, threads_per_block=threads_per_block)
    return proposer(moves, functools.partial(apply, arch=arch), source, _ERRORS, cache)
