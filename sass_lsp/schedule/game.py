"""Feature: the reorder game. A gymnasium environment in which each action moves one instruction of a kernel's
hot region inside its basic block; the changed block's control codes are repaired at once
(:func:`sass_lsp.schedule.repair.repair_block`), so every state is hazard-free; the reward is the predicted
cycle reduction.

API (``ReorderGame``):
- ``ReorderGame(kernel, sem, max_steps=16, scramble=0, reward_fn=None)``; ``ReorderGame.from_text(text, arch,
  kernel=None, **kw)`` (default kernel: the one with the most instructions);
- ``reset(seed=None, options=None)``: the ptxas order, or (``scramble=n`` / ``options={"scramble": n}``) the
  ptxas order after ``n`` random legal moves (data augmentation: the policy learns to repair bad schedules);
- ``step(action)``: ``action`` < ``C_MAX`` picks a candidate row, ``STOP`` ends the episode; an invalid or
  padded row ends it too, with reward 0 (never raises). Reward = (cost before − cost after) / cost of the
  ptxas original (so an episode's return is its relative cycle saving); truncated after ``max_steps`` moves.
  ``info``: ``cost``, ``cost_original``, ``moves`` (``(node index, from, to)``: the ptxas node index and
  positions in its block's order), ``speedup_pred`` = cost_original / cost;
- ``action_mask()`` (``C_MAX + 1`` booleans, STOP always allowed); ``candidates()``, ``apply(row)`` and
  ``peek(row)`` (the cost a candidate row would give) for search code that runs outside episodes;
- ``kernel()``: the current repaired :class:`Kernel`; ``orders()``: block -> node order; ``edits(lines)``:
  ``(first_line, last_line, new_lines)`` text edits (1-based, inclusive) for the blocks that differ from
  ptxas; ``snapshot()`` / ``restore(snap)`` (cheap) and ``clone()`` for beam search.

``reward_fn(kernel) -> float`` replaces the cost (default: the static model of :mod:`sass_lsp.schedule.cost`
over the hot region, evaluated on the region's instructions without building a whole Kernel); a GPU-time cost
can be plugged in. ``order_cost(orders) -> float`` does the same from the node order of each block that
differs from ptxas's (no repaired kernel built): the learned performance model's predicted time.
Blocks never moved keep ptxas's control codes; a block moved back to the ptxas order gets
them back too.

Architecture Invariant: pure; no torch, pygls or CUDA.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sass_lsp.analysis.program import Ctrl, Kernel, Node, kernels_of
from sass_lsp.cuasm import parse_cuasm
from sass_lsp.isa.semantics import Semantics, load_semantics
from sass_lsp.schedule import observation as ob
from sass_lsp.schedule.cost import hot_region, sequence_cycles
from sass_lsp.schedule.deps import BlockDeps, block_deps, move
from sass_lsp.schedule.features import (
    block_runs,
    cap_moves,
    encode,
    hot_window,
    legal_ranges,
    moved_ranges,
    moves_of,
    observation_space,
)
from sass_lsp.schedule.repair import block_edit, reordered_kernel, repair_block, repaired_texts

try:  # the [policy] extra: the game is a gymnasium Env (PPO's vector envs need one)
    import gymnasium as gym

    _Env: type = gym.Env
except ImportError:  # the base install: checker, server and the searches use the game without gymnasium
    gym = None

    class _Env:  # type: ignore[no-redef]
        """What the game uses of ``gymnasium.Env``: ``np_random``, seeded by ``reset(seed=...)`` as gymnasium
        seeds it (``np.random.default_rng(seed)`` is gymnasium's ``seeding.np_random(seed)`` generator)."""

        _np_random: np.random.Generator | None = None

        @property
        def np_random(self) -> np.random.Generator:
            if self._np_random is None:
                self._np_random = np.random.default_rng()
            return self._np_random

        def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
            if seed is not None:
                self._np_random = np.random.default_rng(seed)


Move = tuple[int, int, int]  # (node index, from position, to position) in the block's order


@dataclass(frozen=True)
class BlockState:
    """A block whose order differs from ptxas: the order, its repaired control codes and texts, and its nodes
    (ptxas ``idx``/``line``, current ``ctrl``/``text``) in that order."""

    order: tuple[int, ...]
    ctrls: tuple[Ctrl, ...]
    texts: tuple[str, ...]
    nodes: tuple[Node, ...]


@dataclass(frozen=True)
class Snapshot:
    blocks: dict[int, BlockState]
    window: tuple[int, ...]
    cost: float
    timing: tuple[tuple[int, int], ...]  # (issue cycle, cycles waited) per region node, current order
    steps: int
    moves: tuple[Move, ...]
    done: bool


class ReorderGame(_Env):
    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        kernel: Kernel,
        sem: Semantics,
        max_steps: int = 16,
        scramble: int = 0,
        reward_fn: Callable[[Kernel], float] | None = None,
        order_cost: Callable[[dict[int, tuple[int, ...]]], float] | None = None,
    ) -> None:
        self.k0 = kernel
        self.order_cost = order_cost
        self.sem = sem
        self.max_steps = max_steps
        self.scramble = scramble
        self.reward_fn = reward_fn
        if gym is not None:
            self.observation_space = observation_space()
            self.action_space = gym.spaces.Discrete(ob.C_MAX + 1)
        self.region = hot_region(kernel)
        self.deps: dict[int, BlockDeps] = {b: block_deps(kernel, b, sem) for b in self.region.blocks}
        # The ptxas order's cost first: for straight-line code its timing is the simulation hot_window needs.
        start = self._evaluate({}, (), 0, (), False)
        self.window0 = tuple(
            hot_window(kernel, sem, self.region, None if self.region.is_loop else start.timing)
        )
        # Each run of one block in the window: (block, first window position, end, offset in block order).
        self._runs = [
            (b, s, e, self.window0[s] - kernel.blocks[b].start)
            for b, s, e in block_runs(self.window0, self.deps)
        ]
        self._moves_cache: dict[tuple[int, tuple[int, ...]], tuple[list, list[tuple[int, int, int]]]] = {}
        self._start = dataclasses.replace(start, window=self.window0)
        self.cost_original = self._start.cost
        self._set(self._start)

    @classmethod
    def from_text(cls, text: str, arch: str, kernel: str | None = None, **kw: Any) -> ReorderGame:
        sem = load_semantics(arch)
        return cls(kernel_of_text(text, sem, kernel), sem, **kw)

    # ------------------------------------------------------------------------------------ state

    def _set(self, snap: Snapshot) -> None:
        old = getattr(self, "_snap", None)
        self._snap = snap
        if old is None or old.blocks is not snap.blocks:  # blocks dicts are never changed once in a Snapshot
            self._cands: list[tuple[int, int]] | None = None
            self._kernel: Kernel | None = None

    def snapshot(self) -> Snapshot:
        return self._snap

    def restore(self, snap: Snapshot) -> None:
        self._set(snap)

    def clone(self) -> ReorderGame:
        """An independent game in the same state (shares the immutable kernel, deps and caches)."""
        other = copy.copy(self)
        other._set(self._snap)
        return other

    @property
    def cost(self) -> float:
        return self._snap.cost

    @property
    def moves(self) -> list[Move]:
        return list(self._snap.moves)

    def order(self, block: int) -> tuple[int, ...]:
        got = self._snap.blocks.get(block)
        if got is not None:
            return got.order
        b = self.k0.blocks[block]
        return tuple(range(b.start, b.end))

    def orders(self) -> dict[int, list[int]]:
        """Block -> current node order, for every block of the hot region."""
        return {b: list(self.order(b)) for b in self.region.blocks}

    def kernel(self) -> Kernel:
        """The current kernel: reordered blocks with repaired control codes (built once per state)."""
        if self._kernel is None:
            orders = {b: st.order for b, st in self._snap.blocks.items()}
            self._kernel = reordered_kernel(self.k0, self.sem, orders, repair=True) if orders else self.k0
        return self._kernel

    def edits(self, lines: Sequence[str]) -> list[tuple[int, int, list[str]]]:
        """(first line, last line, new lines) per block that differs from ptxas; ``lines``: the text."""
        out = []
        for b in sorted(self._snap.blocks):
            st = self._snap.blocks[b]
            first, last, new = block_edit(lines, self.k0, b, st.order, st.ctrls, st.texts)
            out.append((first, last, list(new)))
        return out

    # ------------------------------------------------------------------------------------ moves

    def _run_moves(
        self, run: tuple[int, int, int, int], order: tuple[int, ...], parent: tuple | None = None
    ) -> list[tuple[int, int, int]]:
        """The moves (tier, window pos, window target) of one window run, sorted, for its block's whole
        ``order``: cached per order. ``parent``: ``(old order, pos, to)`` when ``order`` is one move away
        from ``old order`` (the legal ranges then update cheaply)."""
        b, s, e, off = run
        key = (b, order)
        hit = self._moves_cache.get(key)
        if hit is None:
            if len(self._moves_cache) > 4096:
                self._moves_cache.clear()
            old = self._moves_cache.get((b, parent[0])) if parent is not None else None
            span = (off, off + e - s - 1)  # the run's part of the block: the only moves it offers
            if old is not None:
                ranges = moved_ranges(order, old[0], parent[1], parent[2], self.deps[b], span)  # type: ignore[index]
            else:
                ranges = legal_ranges(order, self.deps[b], span)
            hit = self._moves_cache[key] = (ranges, moves_of(ranges, s, off, e - s))
        return hit[1]

    def _tiers(self, orders: dict[int, tuple[int, ...]]) -> list[tuple[int, int, int]]:
        """Every legal move (tier, pos, to) of the window, sorted by (pos, to)."""
        out: list[tuple[int, int, int]] = []
        for run in self._runs:
            out.extend(self._run_moves(run, orders.get(run[0]) or self.order(run[0])))
        return out

    def candidates(self) -> list[tuple[int, int]]:
        """Legal moves as (window position, target window position): the observation's ``cand`` rows."""
        if self._cands is None:
            self._cands = cap_moves(
                self._tiers({b: st.order for b, st in self._snap.blocks.items()}), ob.C_MAX
            )
        return self._cands

    def action_mask(self) -> np.ndarray:
        mask = np.zeros(ob.C_MAX + 1, dtype=np.bool_)
        mask[: len(self.candidates())] = True
        mask[ob.STOP] = True
        return mask

    def _moved(
        self, orders: dict[int, tuple[int, ...]], window: tuple[int, ...], wp: int, wt: int
    ) -> tuple[int, Move, tuple[int, ...]]:
        """Apply window move ``wp -> wt`` to ``orders`` (in place); return (block, the move, new window)."""
        run = next(run for run in self._runs if run[1] <= wp < run[2])
        b, s, _e, off = run
        order = orders.get(b) or self.order(b)
        p, t = off + wp - s, off + wt - s
        orders[b] = tuple(move(order, p, t))
        self._run_moves(run, orders[b], (order, p, t))  # the cheap update of its legal moves
        win = list(window)
        win.insert(wt, win.pop(wp))
        return b, (order[p], p, t), tuple(win)

    def apply(self, row: int) -> float:
        """Apply candidate ``row`` outside episode bookkeeping (no step count, no reward); the new cost."""
        snap = self._snap
        wp, wt = self.candidates()[row]
        orders = {b: st.order for b, st in snap.blocks.items()}
        b, mv, window = self._moved(orders, snap.window, wp, wt)
        blocks = dict(snap.blocks)
        self._put(blocks, b, orders[b])
        self._set(self._evaluate(blocks, window, snap.steps, (*snap.moves, mv), snap.done))
        return self._snap.cost

    def peek(self, row: int) -> float:
        """The cost candidate ``row`` would give; the state does not change."""
        snap = self._snap
        cost = self.apply(row)
        self._set(snap)
        return cost

    def _put(self, blocks: dict[int, BlockState], block: int, order: tuple[int, ...]) -> None:
        """Record ``order`` for ``block`` with repaired control codes (or drop it: back to ptxas)."""
        b = self.k0.blocks[block]
        if order == tuple(range(b.start, b.end)):
            blocks.pop(block, None)
            return
        ctrls = tuple(repair_block(self.k0, self.sem, block, order))
        texts = tuple(repaired_texts(self.k0, block, order, ctrls))
        nodes = tuple(
            _repaired(self.k0.nodes[x], c, t, self.sem) for x, c, t in zip(order, ctrls, texts, strict=True)
        )
        blocks[block] = BlockState(order, ctrls, texts, nodes)

    # ------------------------------------------------------------------------------------ cost

    def region_nodes(self, blocks: dict[int, BlockState] | None = None) -> list[Node]:
        """The hot region's instructions in the current order with their current control codes and texts
        (``idx`` and ``line`` are the ptxas ones)."""
        blocks = self._snap.blocks if blocks is None else blocks
        out: list[Node] = []
        for b in self.region.blocks:
            st = blocks.get(b)
            if st is not None:
                out.extend(st.nodes)
            else:
                blk = self.k0.blocks[b]
                out.extend(self.k0.nodes[blk.start : blk.end])
        return out

    def _evaluate(
        self, blocks: dict[int, BlockState], window: tuple[int, ...], steps: int, moves: tuple, done: bool
    ) -> Snapshot:
        timing: list[tuple[int, int]] = []
        cost = sequence_cycles(self.region_nodes(blocks), self.sem, self.region.is_loop, timing)
        if self.order_cost is not None:
            cost = float(self.order_cost({b: st.order for b, st in blocks.items()}))
        snap = Snapshot(blocks, window, cost, tuple(timing), steps, moves, done)
        if self.reward_fn is not None:
            self._set(snap)
            snap = Snapshot(
                blocks, window, float(self.reward_fn(self.kernel())), snap.timing, steps, moves, done
            )
        return snap

    # ------------------------------------------------------------------------------------ gym API

    def observation(self) -> dict[str, np.ndarray]:
        """The current state as the policy sees it (what ``step`` and ``reset`` return)."""
        return self._obs()

    def _obs(self) -> dict[str, np.ndarray]:
        snap = self._snap
        nodes = self.region_nodes()
        by_idx = {nd.idx: (nd, rec) for nd, rec in zip(nodes, snap.timing, strict=True)}
        return encode(
            self.k0,
            self.sem,
            snap.window,
            self.deps,
            self.candidates(),
            node_of=lambda i: by_idx[i][0],
            timing=[by_idx[i][1] for i in snap.window],
        )

    def _info(self) -> dict[str, Any]:
        cost = self._snap.cost
        return {
            "cost": cost,
            "cost_original": self.cost_original,
            "moves": list(self._snap.moves),
            "speedup_pred": self.cost_original / cost if cost else 1.0,
        }

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        self._set(self._start)
        n = int((options or {}).get("scramble", self.scramble))
        if n > 0:
            self._scramble(n)
        return self._obs(), self._info()

    def _scramble(self, n: int) -> None:
        """``n`` random legal moves each changed block is repaired once, at the end."""
        snap = self._snap
        orders = {b: st.order for b, st in snap.blocks.items()}
        window = snap.window
        changed: set[int] = set()
        for _ in range(n):
            tiers = self._tiers(orders)
            if not tiers:
                break
            _tier, wp, wt = tiers[int(self.np_random.integers(len(tiers)))]
            b, _mv, window = self._moved(orders, window, wp, wt)
            changed.add(b)
        blocks = dict(snap.blocks)
        for b in changed:
            self._put(blocks, b, orders[b])
        self._set(self._evaluate(blocks, window, 0, (), False))

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        try:
            row = int(action)
        except (TypeError, ValueError):
            row = -1
        snap = self._snap
        if snap.done or row == ob.STOP or not 0 <= row < len(self.candidates()):
            self._set(
                Snapshot(snap.blocks, snap.window, snap.cost, snap.timing, snap.steps, snap.moves, True)
            )
            return self._obs(), 0.0, True, False, self._info()
        before = snap.cost
        after = self.apply(row)
        s = self._snap
        self._set(Snapshot(s.blocks, s.window, s.cost, s.timing, s.steps + 1, s.moves, s.done))
        reward = (before - after) / self.cost_original if self.cost_original else 0.0
        return self._obs(), float(reward), False, s.steps + 1 >= self.max_steps, self._info()


def kernel_of_text(text: str, sem: Semantics, kernel: str | None = None) -> Kernel:
    """The kernel named ``kernel`` in a ``.cuasm`` text, or (None) its largest: the one a game plays."""
    kernels = kernels_of(parse_cuasm(text)[0], sem)
    if kernel is not None:
        kernels = [k for k in kernels if k.name == kernel]
    if not kernels:
        raise ValueError(f"no kernel {kernel!r} in the text" if kernel else "no kernel in the text")
    return max(kernels, key=lambda k: len(k.nodes))


def _repaired(nd: Node, ctrl: Ctrl, text: str, sem: Semantics) -> Node:
    """``nd`` with its repaired control code and text; ``idx`` and ``line`` stay the ptxas ones."""
    if text == nd.text:
        if ctrl is nd.ctrl or ctrl == nd.ctrl:  # (repair_block returns a node's own Ctrl where unchanged)
            return nd
        return Node(nd.idx, nd.line, nd.ctrl_col, nd.text_col, text, ctrl, nd.eff, nd.end_col)
    return Node(
        nd.idx, nd.line, nd.ctrl_col, nd.text_col, text, ctrl, sem.effects(text), nd.text_col + len(text)
    )
