"""Feature: reorder-game observations. Encode a window of a kernel as the arrays of
:mod:`sass_lsp.schedule.observation` (the contract with the policy), and list the candidate moves.

API:
- ``observation_space()``: the ``gymnasium.spaces.Dict`` every observation belongs to;
- ``hot_window(k, sem, region, timing=None)``: the node indices the game shows (the hot region, or its
  ``W_MAX`` instructions with the most cycles waited when it is longer);
- ``candidate_moves(window, deps, limit=C_MAX, orders=None)``: legal ``(window position, target
  position)`` moves: per movable instruction its earliest and latest legal position and +-1, 2, 4, 8, 16
  inside that range; beyond ``limit``, earliest/latest/+-1 of every instruction first, then the wider steps,
  position-spread (:func:`cap_moves`). Built from ``legal_ranges`` (``deps.legal_targets`` per position),
  ``moved_ranges`` (the same after one move, asking again only where it can change) and ``moves_of``;
- ``encode(k, sem, window, deps, cands, node_of=None, timing=None)``: one observation; ``vocab(sem)`` and
  ``mem_class(node)`` give its token ids.

Index spaces: ``deps`` (:class:`sass_lsp.schedule.deps.BlockDeps` per block) and ``window`` use the node
indices of the kernel the dependences were computed on (the ptxas original); ``window`` lists them in the
current order. ``node_of(i)`` gives the current :class:`Node` of original node ``i`` (its repaired control
code); by default ``k.nodes[i]``, i.e. ``k`` is that original kernel.

Architecture Invariant: pure; numpy only, and gymnasium for ``observation_space`` (no torch).
"""

from __future__ import annotations

import functools
import itertools
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from sass_lsp.analysis.program import Ctrl, Kernel, Node
from sass_lsp.isa.semantics import Semantics
from sass_lsp.schedule import observation as ob
from sass_lsp.schedule.cost import IssueState, Region, simulate
from sass_lsp.schedule.deps import BlockDeps, legal_targets

MOVE_STEPS = (1, 2, 4, 8, 16)  # relative targets besides the earliest and latest legal position
if TYPE_CHECKING:
    from gymnasium import spaces

_T = {name: i for i, name in enumerate(ob.TOKEN_COLUMNS)}
_N = {name: i for i, name in enumerate(ob.NUM_COLUMNS)}


def observation_space() -> spaces.Dict:
    from gymnasium import spaces  # the [policy] extra; the features themselves need numpy only

    w, c = ob.W_MAX, ob.C_MAX
    return spaces.Dict(
        {
            "tok": spaces.Box(0, max(ob.TOKEN_VOCAB) - 1, (w, len(ob.TOKEN_VOCAB)), np.int64),
            "num": spaces.Box(-np.inf, np.inf, (w, ob.N_NUM), np.float32),
            "adj": spaces.Box(0, 31, (w, w), np.uint8),
            "cand": spaces.Box(0, w - 1, (c, 2), np.int64),
            "cand_mask": spaces.Box(0, 1, (c,), np.bool_),
            "n": spaces.Box(0, w, (1,), np.int64),
        }
    )


# ------------------------------------------------------------------------------------------ window


def hot_window(
    k: Kernel, sem: Semantics, region: Region, timing: Sequence[tuple[int, int]] | None = None
) -> list[int]:
    """The region's node indices in layout order; if longer than ``W_MAX``, the contiguous ``W_MAX`` of them
    that wait the most cycles in the static issue model (ties: the earliest). ``timing``: the region's
    ``simulate`` record from an empty state when the caller has it (the game's start cost of straight-line
    code), so as not to simulate it twice."""
    nodes = region.nodes(k)
    if len(nodes) <= ob.W_MAX:
        return nodes
    if timing is None:
        record: list[tuple[int, int]] = []
        simulate([k.nodes[i] for i in nodes], sem, IssueState(), record)
        timing = record
    waited = np.array([w for _, w in timing], dtype=np.int64)
    sums = np.convolve(waited, np.ones(ob.W_MAX, dtype=np.int64), mode="valid")
    first = int(np.argmax(sums))
    return nodes[first : first + ob.W_MAX]


def block_runs(window: Sequence[int], deps: Mapping[int, BlockDeps]) -> list[tuple[int, int, int]]:
    """``(block, first window position, end window position)`` for each run of one block's nodes."""
    if not len(window):
        return []
    spans = sorted((d.start, d.end, b) for b, d in deps.items())
    starts = np.array([s for s, _, _ in spans], dtype=np.int64)
    win = np.asarray(window, dtype=np.int64)
    which = np.searchsorted(starts, win, side="right") - 1
    if (which < 0).any() or (win >= np.array([spans[w][1] for w in which.tolist()])).any():
        raise ValueError("a node of the window belongs to no block of deps")
    cuts = [0, *(np.flatnonzero(np.diff(which)) + 1).tolist(), len(win)]
    return [(spans[int(which[a])][2], a, b) for a, b in zip(cuts, cuts[1:], strict=False)]


# ------------------------------------------------------------------------------------------ moves


def legal_ranges(
    order: Sequence[int], deps: BlockDeps, span: tuple[int, int] | None = None
) -> list[tuple[int, int]]:
    """``(lo, hi)`` legal target positions (inclusive) of each position of one block's ``order``.

    ``span`` (first, last position): only those are asked; the others get ``(pos, pos)``, for a window that
    holds part of a long block (``moves_of`` reads only the window's part)."""
    first, last = span or (0, len(order) - 1)
    if len(order) > 256 and order[0] == deps.start and tuple(order) == tuple(range(deps.start, deps.end)):
        return _ptxas_ranges(deps, first, last)
    out = []
    for pos, node in enumerate(order):
        if node in deps.fixed or not first <= pos <= last:
            out.append((pos, pos))
        else:
            rng = legal_targets(order, pos, deps)
            out.append((rng.start, rng.stop - 1))
    return out


def _ptxas_ranges(deps: BlockDeps, first: int, last: int) -> list[tuple[int, int]]:
    """:func:`legal_ranges` of the block's ptxas order (position = node - start), from the edge arrays at
    once instead of a scan per position (a long block's game starts there): ``legal_targets`` stops below
    at the latest predecessor or glued node, above before the earliest successor or two before a glued
    node."""
    n = deps.end - deps.start
    src, dst, _bits = deps.edge_arrays()
    below = np.full(n, -1, dtype=np.int64)  # latest predecessor's position
    np.maximum.at(below, dst - deps.start, src - deps.start)
    above = np.full(n, n, dtype=np.int64)  # earliest successor's position
    np.minimum.at(above, src - deps.start, dst - deps.start)
    glued = np.array(sorted(g - deps.start for g in deps.glued), dtype=np.int64)
    pos = np.arange(n, dtype=np.int64)
    if len(glued):
        k = np.searchsorted(glued, pos, side="left")  # glued[k - 1] < pos
        below = np.maximum(below, np.where(k > 0, glued[np.maximum(k - 1, 0)], -1))
        k = np.searchsorted(glued, pos + 2, side="left")  # glued[k] >= pos + 2
        above = np.minimum(above, np.where(k < len(glued), glued[np.minimum(k, len(glued) - 1)] - 1, n))
    lo, hi = (below + 1).tolist(), (above - 1).tolist()
    fixed = deps.fixed
    return [
        (lo[q], hi[q]) if first <= q <= last and deps.start + q not in fixed else (q, q) for q in range(n)
    ]


def moved_ranges(
    order: Sequence[int],
    old: Sequence[tuple[int, int]],
    pos: int,
    to: int,
    deps: BlockDeps,
    span: tuple[int, int] | None = None,
) -> list[tuple[int, int]]:
    """:func:`legal_ranges` of ``order`` = ``move(old order, pos, to)``, from the old order's ranges ``old``
    (both over ``span``; ``pos`` and ``to`` inside it).

    Only positions whose legality scan can reach the shifted span ``[min(pos, to), max(pos, to)]`` are asked
    again (a scan looks at the instructions between a position and its limits, plus two more beyond the
    limits as margin: ``legal_targets`` checks one beyond for glued nodes); the others keep their range."""
    a, b = min(pos, to), max(pos, to)
    first, last = span or (0, len(order) - 1)
    out = []
    for q, node in enumerate(order):
        if not first <= q <= last:
            out.append((q, q))
            continue
        if q < a:
            lo, hi = old[q]
            stale = hi + 3 >= a
        elif q > b:
            lo, hi = old[q]
            stale = lo - 3 <= b
        else:
            stale = True
        if not stale:
            out.append((lo, hi))
        elif node in deps.fixed:
            out.append((q, q))
        else:
            rng = legal_targets(order, q, deps)
            out.append((rng.start, rng.stop - 1))
    return out


@functools.lru_cache(maxsize=1 << 16)
def targets(pos: int, lo: int, hi: int) -> tuple[tuple[int, int], ...]:
    """``(tier, to)`` candidate targets of ``pos`` within ``[lo, hi]``, sorted by ``to``.

    Tier 0: earliest, latest and +-1; tier k: +-2**k (see MOVE_STEPS). Lower tiers survive when a cap cuts
    the list."""
    best: dict[int, int] = {}
    if hi > lo:
        for to in (lo, hi):
            best[to] = 0
        for tier, step in enumerate(MOVE_STEPS):
            for to in (pos - step, pos + step):
                if lo <= to <= hi and to not in best:
                    best[to] = tier
    best.pop(pos, None)
    return tuple((best[to], to) for to in sorted(best))


def block_moves(order: Sequence[int], deps: BlockDeps) -> list[tuple[int, int, int]]:
    """``(tier, pos, to)`` for every legal move of one block's ``order`` (positions in ``order``), sorted by
    (pos, to)."""
    return moves_of(legal_ranges(order, deps))


def moves_of(
    ranges: Sequence[tuple[int, int]], start: int = 0, first: int = 0, length: int | None = None
) -> list[tuple[int, int, int]]:
    """Moves of a block's positions ``first .. first + length - 1`` (a window may hold part of a block), in
    window terms: ``(tier, start + pos - first, start + to - first)``, targets clipped to that part, sorted
    by (pos, to). ``ranges``: :func:`legal_ranges` of the whole block order."""
    last = len(ranges) - 1 if length is None else first + length - 1
    return list(
        itertools.chain.from_iterable(
            _shifted(q - first, max(lo, first) - first, min(hi, last) - first, start)
            for q, (lo, hi) in enumerate(ranges[first : last + 1], start=first)
        )
    )


@functools.lru_cache(maxsize=1 << 16)
def _shifted(pos: int, lo: int, hi: int, start: int) -> tuple[tuple[int, int, int], ...]:
    return tuple((tier, start + pos, start + to) for tier, to in targets(pos, lo, hi))


def candidate_moves(
    window: Sequence[int],
    deps: Mapping[int, BlockDeps],
    limit: int = ob.C_MAX,
    orders: Mapping[int, Sequence[int]] | None = None,
) -> list[tuple[int, int]]:
    """Legal ``(pos, to)`` moves in window positions, sorted; at most ``limit`` (see :func:`cap_moves`).

    ``orders``: block -> its whole current order, needed for a block the window holds only part of (a move
    to the edge of the window must not break a rule that involves the instruction just outside)."""
    tiers: list[tuple[int, int, int]] = []
    for b, s, e in block_runs(window, deps):
        d = deps[b]
        run = window[s:e]
        order = run if e - s == d.end - d.start else (orders or {}).get(b)
        if order is None:
            raise ValueError(f"the window holds part of block {b}: pass its whole order in orders")
        first = list(order).index(run[0])
        tiers.extend(moves_of(legal_ranges(order, d), s, first, e - s))
    return cap_moves(tiers, limit)


def cap_moves(tiers: list[tuple[int, int, int]], limit: int) -> list[tuple[int, int]]:
    """``(tier, pos, to)`` rows sorted by (pos, to) -> at most ``limit`` (pos, to) rows, sorted.

    Whole tiers are kept while they fit; from the tier that overflows an evenly spread subset (by position),
    so every part of the window keeps some moves. Deterministic."""
    if len(tiers) <= limit:
        return [(p, t) for _, p, t in tiers]
    kept: list[tuple[int, int]] = []
    for tier in sorted({t for t, _, _ in tiers}):
        rows = [(p, t) for tt, p, t in tiers if tt == tier]
        room = limit - len(kept)
        if len(rows) <= room:
            kept.extend(rows)
            continue
        if room > 0:
            idx = np.linspace(0, len(rows) - 1, room).round().astype(int)
            kept.extend(rows[i] for i in sorted(set(idx.tolist())))
        break
    return sorted(kept)


# ------------------------------------------------------------------------------------------ encoding


@dataclass(frozen=True)
class _Vocab:
    opcode: dict[str, int]
    pipe: dict[str, int]
    queue: dict[str, int]


_VOCAB: weakref.WeakKeyDictionary[Semantics, _Vocab] = weakref.WeakKeyDictionary()
_TOKENS: weakref.WeakKeyDictionary[Semantics, dict[str, tuple]] = weakref.WeakKeyDictionary()


def vocab(sem: Semantics) -> _Vocab:
    """Token ids from the arch table: ``2 + position`` in the sorted names (1 = unknown, 0 = padding).

    Opcodes beyond the vocabulary are hashed into it (a stable hash of the name); pipes and queues beyond it
    are "unknown". Queues that have an assumed latency come first."""
    v = _VOCAB.get(sem)
    if v is None:
        rows = [*sem.opcodes.values(), *sem.variants.values()]
        n_op = ob.TOKEN_VOCAB[0] - 2
        ops = {
            name: 2 + (i if i < n_op else _stable_hash(name) % n_op)
            for i, name in enumerate(sorted(sem.opcodes))
        }
        pipes = sorted({r["pipe"] for r in rows if r.get("pipe")})
        known = sorted(q for q in sem.var_latency if q != "default")
        queues = known + sorted({r["queue"] for r in rows if r.get("queue")} - set(known))
        v = _Vocab(
            ops,
            {p: 2 + i for i, p in enumerate(pipes) if 2 + i < ob.TOKEN_VOCAB[1]},
            {q: 2 + i for i, q in enumerate(queues) if 2 + i < ob.TOKEN_VOCAB[2]},
        )
        _VOCAB[sem] = v
    return v


def _stable_hash(name: str) -> int:
    h = 2166136261  # FNV-1a: Python's hash() of str changes between runs
    for ch in name.encode():
        h = ((h ^ ch) * 16777619) & 0xFFFFFFFF
    return h


def mem_class(nd: Node) -> int:
    """The ``mem`` token column (see observation.TOKEN_COLUMNS)."""
    eff = nd.eff
    f = eff.flags
    op = eff.opcode
    if "gmma" in f or eff.pipe in ("mma", "gmma"):
        return 8
    if f & {"barrier", "bar_sync", "fence"} or eff.pipe == "barrier" or op in ("MEMBAR", "ERRBAR", "CCTL"):
        return 9
    if op in ("LDGSTS", "LDGDEPBAR") or eff.queue == "tma" or op.startswith(("UTMA", "UBLKCP")):
        return 7
    load, store = "load" in f, "store" in f
    if load and store:
        return 6
    if load or store:
        return (4 if load else 5) if "shared" in f else (2 if load else 3)
    return 6 if eff.pipe == "mem" else 1


def _token_table(sem: Semantics) -> dict[str, tuple]:
    table = _TOKENS.get(sem)
    if table is None:
        table = _TOKENS[sem] = {}
    return table


def _tokens(nd: Node, sem: Semantics, table: dict[str, tuple]) -> tuple:
    """Order-independent columns of one instruction text (``table``: the cache for ``sem``)."""
    hit = table.get(nd.text)
    if hit is None:
        v = vocab(sem)
        eff = nd.eff
        if eff.variable:
            lat = sem.assumed_latency(eff.queue)
        else:
            row = sem.latency(eff.pipe, "*", "reg")
            lat = row.cycles if row is not None else 0
        hit = table[nd.text] = (
            v.opcode.get(eff.opcode, 1),
            v.pipe.get(eff.pipe, 1),
            v.queue.get(eff.queue, 1) if eff.queue else 1,
            mem_class(nd),
            float(eff.variable),
            len(eff.def_units) / 8.0,
            len(eff.use_units) / 8.0,
            lat / 100.0,
        )
    return hit


def encode(
    k: Kernel,
    sem: Semantics,
    window: Sequence[int],
    deps: Mapping[int, BlockDeps],
    cands: Sequence[tuple[int, int]],
    node_of: Callable[[int], Node] | None = None,
    timing: Sequence[tuple[int, int]] | None = None,
) -> dict[str, np.ndarray]:
    """One observation of ``window`` (see the module docstring for the index spaces).

    ``timing``: ``(issue cycle, cycles waited)`` per window position (default: the static issue model run
    over the window alone from an empty state; the game passes the hot region's steady state)."""
    w, c = ob.W_MAX, ob.C_MAX
    n = len(window)
    if n > w or len(cands) > c:
        raise ValueError(f"window of {n} (max {w}) or {len(cands)} candidates (max {c})")
    get = node_of if node_of is not None else k.nodes.__getitem__
    nodes = [get(i) for i in window]
    if timing is None:
        record: list[tuple[int, int]] = []
        simulate(nodes, sem, IssueState(), record)
        timing = record
    tok = np.zeros((w, len(ob.TOKEN_VOCAB)), dtype=np.int64)
    num = np.zeros((w, ob.N_NUM), dtype=np.float32)
    adj = np.zeros((w, w), dtype=np.uint8)
    if n:
        fixed: set[int] = set()
        for d in deps.values():
            fixed |= d.fixed
        # per row: opcode, pipe, queue, mem, variable, n_dst/8, n_src/8, latency/100 (cached per text)
        table = _token_table(sem)
        st = _rows([_tokens(nd, sem, table) for nd in nodes], 8, np.float64)
        ctrl = _rows([_ctrl_row(nd.ctrl) for nd in nodes], 5, np.int64)
        times = _rows(timing, 2, np.float64)
        tok[:n, _T["opcode"]] = st[:, 0]
        tok[:n, _T["pipe"]] = st[:, 1]
        tok[:n, _T["queue"]] = st[:, 2]
        tok[:n, _T["write_sb"]] = ctrl[:, 0] + 2  # 1 = none
        tok[:n, _T["read_sb"]] = ctrl[:, 1] + 2
        tok[:n, _T["stall"]] = 1 + np.minimum(ctrl[:, 2], 15)
        tok[:n, _T["mem"]] = st[:, 3]
        tok[:n, _T["movable"]] = [1 if i in fixed else 2 for i in window]
        num[:n, _N["wait_sb0"] : _N["wait_sb5"] + 1] = (ctrl[:, 3:4] >> np.arange(6)) & 1
        num[:n, _N["yield"]] = ctrl[:, 4]
        num[:n, _N["variable_latency"]] = st[:, 4]
        num[:n, _N["n_dst_regs_div8"]] = st[:, 5]
        num[:n, _N["n_src_regs_div8"]] = st[:, 6]
        num[:n, _N["position_frac"]] = np.arange(n) / n
        num[:n, _N["issue_cycle_div1000"]] = (times[:, 0] - times[0, 0]) / 1000.0
        num[:n, _N["waited_cycles_div100"]] = times[:, 1] / 100.0
        num[:n, _N["assumed_latency_div100"]] = st[:, 7]
        src, dst, bits = _edges(window, deps)
        if len(src):
            adj[src, dst] = bits
            num[:n, _N["n_preds_div8"]] = np.bincount(dst, minlength=n)[:n] / 8.0
            num[:n, _N["n_succs_div8"]] = np.bincount(src, minlength=n)[:n] / 8.0
    cand = np.zeros((c, 2), dtype=np.int64)
    mask = np.zeros(c, dtype=np.bool_)
    if cands:
        cand[: len(cands)] = _rows(cands, 2, np.int64)
        mask[: len(cands)] = True
    obs = {"tok": tok, "num": num, "adj": adj, "cand": cand, "cand_mask": mask}
    obs["n"] = np.array([n], dtype=np.int64)
    return obs


def _rows(rows: Sequence[tuple], width: int, dtype: type) -> np.ndarray:
    """A list of equal-length tuples as a 2-D array (much faster than ``np.array`` on tuples)."""
    flat = np.fromiter(itertools.chain.from_iterable(rows), dtype=dtype, count=len(rows) * width)
    return flat.reshape(len(rows), width)


@functools.lru_cache(maxsize=4096)
def _ctrl_row(c: Ctrl) -> tuple[int, int, int, int, int]:
    """(write SB or -1, read SB or -1, stall, wait mask, yield) of a control code."""
    return (
        -1 if c.write_sb is None else c.write_sb,
        -1 if c.read_sb is None else c.read_sb,
        c.stall,
        c.wait_mask,
        int(c.yield_flag),
    )


_EDGE_ARRAYS: dict[tuple[int, ...], tuple[list, np.ndarray, np.ndarray, np.ndarray]] = {}


def _edge_arrays(deps: Mapping[int, BlockDeps]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All edges of ``deps`` as arrays (from node, to node, bits), cached per set of BlockDeps objects."""
    ds = [deps[b] for b in sorted(deps)]
    key = tuple(id(d) for d in ds)
    hit = _EDGE_ARRAYS.get(key)
    if hit is None or any(a is not b for a, b in zip(hit[0], ds, strict=True)):
        if len(_EDGE_ARRAYS) > 256:
            _EDGE_ARRAYS.clear()
        arrays = [d.edge_arrays() for d in ds]
        ii, jj, bits = (
            np.concatenate([a[c] for a in arrays]) if arrays else np.zeros(0, dtype)
            for c, dtype in ((0, np.int64), (1, np.int64), (2, np.uint8))
        )
        hit = _EDGE_ARRAYS[key] = (ds, ii, jj, bits)
    return hit[1], hit[2], hit[3]


def _edges(window: Sequence[int], deps: Mapping[int, BlockDeps]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """In-window dependence edges as (from position, to position, EDGE bits), "to" after "from"."""
    ii, jj, bits = _edge_arrays(deps)
    win = np.asarray(window, dtype=np.int64)
    size = int(max(win.max(), ii.max(initial=0), jj.max(initial=0))) + 1
    pos = np.full(size, -1, dtype=np.int64)
    pos[win] = np.arange(len(win))
    pi, pj = pos[ii], pos[jj]
    keep = (pi >= 0) & (pj >= 0)
    return pi[keep], pj[keep], bits[keep]
