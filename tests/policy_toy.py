"""A tiny reorder game with the real observation contract (sass_lsp/schedule/observation.py), for tests.

A window of loads and an accumulation chain that consumes them, laid out the naive way (each load right
before its consumer). Issue is in order: an instruction issues one cycle after the previous one, or when
its inputs are ready (a load takes LOAD_LAT cycles). Hoisting loads hides their latency; the chain keeps its
order. Reward per move = predicted cycle reduction / original cycles, like the real game's.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from sass_lsp.schedule import features
from sass_lsp.schedule import observation as ob

LOAD_LAT = 24
ALU_LAT = 4


observation_space = features.observation_space  # the real contract, so the toy cannot drift from it


class ToyReorder(gym.Env):
    """``n_loads`` loads, each followed by the ALU op that folds it into an accumulator."""

    def __init__(self, n_loads: tuple[int, int] = (4, 8), max_steps: int = 8, reach: int = 12) -> None:
        self.observation_space = observation_space()
        self.action_space = spaces.Discrete(ob.C_MAX + 1)
        self.n_loads, self.max_steps, self.reach = n_loads, max_steps, reach

    # kinds: 0 = load, 1 = alu
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        m = int(self.np_random.integers(self.n_loads[0], self.n_loads[1] + 1))
        kinds, preds = [], []
        for k in range(m):
            kinds.append(0)
            preds.append(set())
            kinds.append(1)
            preds.append({2 * k} | ({2 * k - 1} if k else set()))  # its load and the previous ALU op
        self.kinds = np.array(kinds)
        self.preds = preds
        self.order = list(range(len(kinds)))
        self.steps = 0
        self.moves: list[tuple[int, int, int]] = []
        self.cost0 = self.cost = self._cost(self.order)
        return self._obs(), self._info()

    def _cost(self, order: list[int]) -> int:
        ready: dict[int, int] = {}
        t = -1
        for ins in order:
            t = max([t + 1] + [ready[p] for p in self.preds[ins]])
            ready[ins] = t + (LOAD_LAT if self.kinds[ins] == 0 else ALU_LAT)
        return t + 1

    def _legal(self, i: int, j: int) -> bool:
        ins = self.order[i]
        if j < i:
            return not any(self.order[p] in self.preds[ins] for p in range(j, i))
        return not any(ins in self.preds[self.order[p]] for p in range(i + 1, j + 1))

    def _moves(self) -> list[tuple[int, int]]:
        n = len(self.order)
        return [
            (i, j)
            for i in range(n)
            for j in range(max(0, i - self.reach), min(n, i + self.reach + 1))
            if j != i and self._legal(i, j)
        ][: ob.C_MAX]

    def _obs(self) -> dict[str, np.ndarray]:
        n = len(self.order)
        pos = {ins: p for p, ins in enumerate(self.order)}
        tok = np.zeros((ob.W_MAX, len(ob.TOKEN_VOCAB)), np.int64)
        num = np.zeros((ob.W_MAX, ob.N_NUM), np.float32)
        adj = np.zeros((ob.W_MAX, ob.W_MAX), np.uint8)
        ready: dict[int, int] = {}
        t = -1
        for p, ins in enumerate(self.order):
            load = self.kinds[ins] == 0
            # opcode, pipe, queue, write_sb, read_sb, stall, mem, movable
            tok[p] = (2, 2, 2, 2, 1, 2, 2, 2) if load else (3, 3, 1, 1, 1, 2, 1, 2)
            start = max([t + 1] + [ready[q] for q in self.preds[ins]])
            waited, t = start - (t + 1), start
            lat = LOAD_LAT if load else ALU_LAT
            ready[ins] = t + lat
            num[p, 7] = float(load)
            num[p, 10] = p / n
            num[p, 11] = t / 1000
            num[p, 12] = waited / 100
            num[p, 13] = lat / 100
            num[p, 14] = len(self.preds[ins]) / 8
            for q in self.preds[ins]:
                adj[pos[q], p] |= ob.EDGE_RAW
        for ins, ps in enumerate(self.preds):
            num[pos[ins], 15] = sum(ins in qs for qs in self.preds) / 8
            del ps
        cand = np.zeros((ob.C_MAX, 2), np.int64)
        mask = np.zeros(ob.C_MAX, bool)
        moves = self._moves()
        if moves:
            cand[: len(moves)] = moves
            mask[: len(moves)] = True
        return {"tok": tok, "num": num, "adj": adj, "cand": cand, "cand_mask": mask, "n": np.array([n])}

    def _info(self) -> dict:
        return {
            "cost": self.cost,
            "cost_original": self.cost0,
            "moves": list(self.moves),
            "speedup_pred": self.cost0 / self.cost,
        }

    def step(self, action: int):
        if int(action) == ob.STOP:
            return self._obs(), 0.0, True, False, self._info()
        i, j = self._moves()[int(action)]
        ins = self.order.pop(i)
        self.order.insert(j, ins)
        self.moves.append((ins, i, j))
        cost = self._cost(self.order)
        reward = (self.cost - cost) / self.cost0
        self.cost = cost
        self.steps += 1
        return self._obs(), reward, False, self.steps >= self.max_steps, self._info()
