"""Predicted speedups of candidate schedules of one kernel, with a 90% interval: what ``suggest``, the editor
and the searches call to rank candidates by the learned model.

    p = Predictor(original_text, "sm_90")           # parses the original once (tens of ms)
    p.predict([candidate_text, ...])                # -> [Prediction or None], about a millisecond each

A candidate that is no reordering of the original's blocks gets None. Needs torch (the ``[policy]`` extra)
for the model; the features are numpy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sass_lsp.perf import features as pf

if TYPE_CHECKING:
    from sass_lsp.analysis.program import Kernel
    from sass_lsp.perf.model import PerfModel

DEFAULT_MODEL = Path(__file__).parent / "models" / "perf-v1"


@dataclass(frozen=True)
class Prediction:
    speedup: float  # predicted original time / candidate time
    low: float  # central 90% interval
    high: float


@lru_cache(maxsize=2)
def load_model(folder: Path = DEFAULT_MODEL) -> PerfModel:
    """The checkpoint in ``folder`` (the packaged ``perf-v1`` by default), loaded once."""
    from sass_lsp.perf.model import load

    return load(folder)


class Predictor:
    """Predictions for schedules of one original kernel: from candidate texts (:meth:`predict`) or, where
    the caller holds them already (a game's states), from node orders per block (:meth:`predict_orders`)."""

    def __init__(self, original: str, arch: str, kernel: str | None = None, model: PerfModel | None = None):
        from sass_lsp.schedule.canonical import OriginalOrders

        self.orders = OriginalOrders(original, arch, kernel)
        self.k = self.orders.k
        self.facts = pf.KernelFacts.of(self.k)
        self.model = model

    @classmethod
    def of_kernel(cls, k: Kernel, model: PerfModel | None = None) -> Predictor:
        """A predictor of schedules of ``k`` given as orders only (no text parsed: :meth:`predict` is off)."""
        self = cls.__new__(cls)
        self.orders, self.k, self.facts, self.model = None, k, pf.KernelFacts.of(k), model
        return self

    def features(self, text: str) -> np.ndarray | None:
        """``text``'s feature row, or None when it is no reordering of the original's blocks."""
        orders = self.orders.orders(text)
        return None if orders is None else self.order_features(orders)

    def order_features(self, orders: Mapping[int, Sequence[int]]) -> np.ndarray:
        """The feature row of the schedule that puts each listed block's nodes in that order."""
        slots, nodes = [], []
        for b, order in orders.items():
            start = self.k.blocks[b].start
            for p, node in enumerate(order):
                if start + p != node:
                    slots.append(start + p)
                    nodes.append(node)
        return self.facts.features(np.array(slots, np.int64), np.array(nodes, np.int64))

    def predict(self, texts: list[str]) -> list[Prediction | None]:
        return self._predict([self.features(t) for t in texts])

    def predict_orders(self, schedules: Sequence[Mapping[int, Sequence[int]]]) -> list[Prediction]:
        return self._predict([self.order_features(o) for o in schedules])  # type: ignore[return-value]

    def _predict(self, rows: list[np.ndarray | None]) -> list[Prediction | None]:
        real = [i for i, r in enumerate(rows) if r is not None]
        out: list[Prediction | None] = [None] * len(rows)
        if real:
            model = self.model or load_model()
            s, lo, hi = model.interval(np.stack([rows[i] for i in real]))
            for j, i in enumerate(real):
                out[i] = Prediction(float(s[j]), float(lo[j]), float(hi[j]))
        return out
