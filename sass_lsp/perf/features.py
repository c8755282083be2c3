"""Kernel-agnostic features of a schedule change: what moved, by instruction class, relative to ptxas's order.

A schedule is a permutation of the original kernel's instruction list (slot -> node; a reorder keeps every
node in its block). The features do not name instructions, so a model fitted on some kernels applies to
others: per instruction class (the ``mem`` column of the policy's observation: ALU, global/shared load and
store, async copy, tensor core, barrier, other memory) and per region (loop blocks, the rest: a
straight-line kernel's one loop is the one-instruction trap after ``EXIT``, so nearly all of it is "rest" and
looping and straight-line kernels learn from their own kind), the mean
signed and absolute displacement and the share moved; per region, the pairs of instructions now in the
opposite order, by (class now first, class now second); and the change in distance from each instruction
to the nearest earlier one whose result it reads (fixed- and variable-latency producers apart), which is
where a reorder exposes or hides latency.

Numpy only (no torch): :class:`KernelFacts` is built once per original (tens of ms), :meth:`features` per
schedule (about a millisecond)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sass_lsp.analysis.program import Kernel
from sass_lsp.schedule.features import mem_class

N_CLASS = 9  # mem_class 1..9 -> 0..8
REGIONS = ("loop", "rest")
SPAN_MAX = 768  # a block's moved span longer than this counts its inversions on a sample of pairs
NEAR_FIXED = 12  # slots beyond which a fixed-latency producer no longer delays its consumer
NEAR_VAR = 64  # the same for a variable-latency producer (a load): about its latency in issue slots

DISP_NAMES = [f"{r}_{s}_c{c}" for r in REGIONS for c in range(N_CLASS) for s in ("disp", "absdisp", "moved")]
PAIR_NAMES = [f"{r}_inv_c{a}_c{b}" for r in REGIONS for a in range(N_CLASS) for b in range(N_CLASS)]
DIST_NAMES = [
    f"{r}_{p}_{s}" for r in REGIONS for p in ("fixed", "var") for s in ("ddist", "closer", "farther", "tight")
]
GLOBAL_NAMES = ["moved_share", "blocks_moved", "log_nodes", "has_loop"]
NAMES = DISP_NAMES + PAIR_NAMES + DIST_NAMES + GLOBAL_NAMES
N_FEATURES = len(NAMES)


def _loop_blocks(k: Kernel) -> set[int]:
    """Blocks that reach themselves through the CFG."""
    out = set()
    for b in k.blocks:
        seen, stack = set(), list(b.succs)
        while stack:
            x = stack.pop()
            if x == b.idx:
                out.add(b.idx)
                break
            if x not in seen:
                seen.add(x)
                stack.extend(k.blocks[x].succs)
    return out


@dataclass
class KernelFacts:
    """What the features need of one original kernel (ptxas's order)."""

    n: int
    cls: np.ndarray  # int [n]: class 0..8
    region: np.ndarray  # int [n]: 0 loop block, 1 the rest
    block: np.ndarray  # int [n]
    block_start: np.ndarray  # int [n_blocks]
    prod: np.ndarray  # int [P]: nearest earlier in-block producer of ...
    cons: np.ndarray  # int [P]: ... this consumer
    prod_var: np.ndarray  # bool [P]: the producer has variable latency

    @classmethod
    def of(cls, k: Kernel) -> KernelFacts:
        loops = _loop_blocks(k)
        n = len(k.nodes)
        block = np.zeros(n, np.int64)
        region = np.ones(n, np.int64)
        prod, cons, var = [], [], []
        for b in k.blocks:
            block[b.start : b.end] = b.idx
            if b.idx in loops:
                region[b.start : b.end] = 0
            last_def: dict[int, int] = {}
            for i in range(b.start, b.end):
                eff = k.nodes[i].eff
                producers = [last_def[u] for u in eff.use_units if u in last_def]
                if producers:
                    p = max(producers)
                    prod.append(p)
                    cons.append(i)
                    var.append(k.nodes[p].eff.variable)
                for u in eff.def_units:
                    last_def[u] = i
        return cls(
            n=n,
            cls=np.array([mem_class(nd) - 1 for nd in k.nodes], np.int64),
            region=region,
            block=block,
            block_start=np.array([b.start for b in k.blocks], np.int64),
            prod=np.array(prod, np.int64),
            cons=np.array(cons, np.int64),
            prod_var=np.array(var, bool),
        )

    @property
    def region_sizes(self) -> np.ndarray:
        return np.maximum(np.bincount(self.region, minlength=2), 1)

    def features(self, slots: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """The schedule that puts ``nodes[i]`` at slot ``slots[i]`` (every other node where ptxas put it)."""
        pos = np.arange(self.n)
        pos[nodes] = slots
        disp = (pos - np.arange(self.n)).astype(np.float64)
        sizes = self.region_sizes
        out = np.zeros(N_FEATURES)
        # displacements by region and class, per instruction of the region
        idx = self.region * N_CLASS + self.cls
        for j, vals in enumerate((disp, np.abs(disp), (disp != 0).astype(np.float64))):
            s = np.bincount(idx, weights=vals, minlength=2 * N_CLASS).reshape(2, N_CLASS)
            out_block = s / sizes[:, None] / (8.0 if j < 2 else 1.0)
            for r in range(2):
                base = r * N_CLASS * 3
                out[base + j : base + 3 * N_CLASS : 3] = out_block[r]
        o = len(DISP_NAMES)
        out[o : o + len(PAIR_NAMES)] = self._inversions(slots, nodes) / np.repeat(sizes, N_CLASS * N_CLASS)
        o += len(PAIR_NAMES)
        out[o : o + len(DIST_NAMES)] = self._distances(pos)
        o += len(DIST_NAMES)
        moved = np.unique(self.block[nodes[slots != nodes]]) if len(nodes) else np.zeros(0, np.int64)
        has_loop = float((self.region == 0).any())
        out[o:] = [float((disp != 0).mean()), len(moved) / 4.0, np.log(self.n) / 8.0, has_loop]
        return out

    def _inversions(self, slots: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """Pairs now in the opposite order to ptxas, by (region, class now first, class now second)."""
        counts = np.zeros(2 * N_CLASS * N_CLASS)
        if not len(slots):
            return counts
        order = np.arange(self.n)
        order[slots] = nodes
        for b in np.unique(self.block[slots]):
            in_b = slots[self.block[slots] == b]
            lo, hi = in_b.min(), in_b.max() + 1
            span = order[lo:hi]
            weight = 1.0
            if len(span) > SPAN_MAX:  # a random sample of its pairs, scaled back
                rng = np.random.default_rng(len(span))
                keep = np.sort(rng.choice(len(span), SPAN_MAX, replace=False))
                weight = (len(span) * (len(span) - 1)) / (SPAN_MAX * (SPAN_MAX - 1))
                span = span[keep]
            first, second = np.triu_indices(len(span), 1)
            a, c = span[first], span[second]  # a runs before c now
            inv = a > c
            if inv.any():
                a, c = a[inv], c[inv]
                key = self.region[a] * N_CLASS * N_CLASS + self.cls[a] * N_CLASS + self.cls[c]
                counts += weight * np.bincount(key, minlength=len(counts))
        return counts

    def _distances(self, pos: np.ndarray) -> np.ndarray:
        """Per region and producer kind: the mean change in capped producer-to-consumer distance, the share
        of pairs brought closer, moved apart, and newly within a few slots."""
        out = np.zeros(len(DIST_NAMES))
        if not len(self.prod):
            return out
        old = (self.cons - self.prod).astype(np.float64)
        new = (pos[self.cons] - pos[self.prod]).astype(np.float64)
        region = self.region[self.cons]
        i = 0
        for r in range(2):
            for var, cap in ((False, NEAR_FIXED), (True, NEAR_VAR)):
                sel = (region == r) & (self.prod_var == var)
                if sel.any():
                    o, n_ = np.minimum(old[sel], cap), np.minimum(new[sel], cap)
                    tight = cap / 4
                    out[i : i + 4] = [
                        (n_ - o).mean() / cap * 10,
                        (n_ < o).mean(),
                        (n_ > o).mean(),
                        ((n_ < tight) & (o >= tight)).mean(),
                    ]
                i += 4
        return out
