"""Predicted speedups of candidate schedules of one kernel, with a 90% interval: what ``suggest``, the editor
and the searches call to rank candidates by the learned model.

    p = Predictor.of_text(original_text, "sm_90")   # parses the original once (tens of ms)
    p.predict([candidate_text, ...])                # -> [Prediction or None], about a millisecond each

A candidate that is no reordering of the original's blocks gets None. Numpy only: the checkpoint's
ensemble is evaluated by :class:`ServedModel` (the same arithmetic as :class:`sass_lsp.perf.model.PerfModel`,
which trains it with torch), so an editor ranks without importing torch."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sass_lsp.perf import features as pf

if TYPE_CHECKING:
    from sass_lsp.analysis.program import Kernel

DEFAULT_MODEL = Path(__file__).parent / "models" / "perf-v1"


@dataclass(frozen=True)
class Prediction:
    speedup: float  # predicted original time / candidate time
    low: float  # central 90% interval
    high: float


class ServedModel:
    """A :mod:`sass_lsp.perf.model` checkpoint evaluated with numpy: ``interval(x)`` as
    :meth:`PerfModel.interval` gives it (90% level)."""

    def __init__(self, weights: dict[str, np.ndarray], members: int) -> None:
        w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
        self.x_mean, self.x_scale = w["x_mean"], w["x_scale"]
        self.y_scale, self.sd_floor = float(w["y_scale"]), float(w["sd_floor"])
        self.layers = [
            [(w[f"members.{m}.net.{i}.weight"].T, w[f"members.{m}.net.{i}.bias"]) for i in (0, 2, 4)]
            for m in range(members)
        ]

    @classmethod
    def load(cls, folder: Path) -> ServedModel:
        """A checkpoint written by :func:`sass_lsp.perf.model.save`; refuses one trained on other features."""
        from safetensors.numpy import load_file

        cfg = json.loads((folder / "config.json").read_text())
        if cfg["feature_names"] != pf.NAMES:
            raise ValueError(f"{folder}: trained on other features than sass_lsp.perf.features computes")
        return cls(load_file(str(folder / "model.safetensors")), int(cfg["members"]))

    def predict(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(mean, sd) of the log speedup of each row of features ``x`` [B, n_features]."""
        xs = (np.asarray(x, np.float64) - self.x_mean) / self.x_scale
        mus, variances = [], []
        for layers in self.layers:
            h = xs
            for i, (wt, b) in enumerate(layers):
                h = h @ wt + b
                if i < 2:
                    h = gelu(h)
            mus.append(h[:, 0])
            variances.append(np.exp(2 * np.clip(h[:, 1], -12.0, 2.0)))
        mu = np.stack(mus)
        var = np.mean(variances, axis=0) + mu.var(axis=0)
        sd = np.sqrt(var * self.y_scale**2 + self.sd_floor**2)
        return mu.mean(axis=0) * self.y_scale, sd

    def interval(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(predicted speedup, low, high): the central 90% interval of the speedup."""
        mu, sd = self.predict(x)
        return np.exp(mu), np.exp(mu - Z90 * sd), np.exp(mu + Z90 * sd)


_SQRT1_2 = np.float32(1 / np.sqrt(2))
Z90 = 1.6448536269514722  # a central 90% interval of a Gaussian is mean +- Z90 * sd


def gelu(x: np.ndarray) -> np.ndarray:
    """torch's exact GELU, x * Φ(x), with erf to float32 precision, in ``x``'s dtype (both served networks
    use it)."""
    return x * np.float32(0.5) * (np.float32(1) + erf(x * _SQRT1_2))


def erf(x: np.ndarray) -> np.ndarray:
    """erf (numpy has none), in ``x``'s dtype: Abramowitz & Stegun 7.1.26 in float64, |error| < 1.5e-7."""
    z = np.abs(x.astype(np.float64))
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return (np.sign(x) * (1.0 - poly * np.exp(-z * z))).astype(x.dtype)


@lru_cache(maxsize=2)
def load_model(folder: Path = DEFAULT_MODEL) -> ServedModel:
    """The checkpoint in ``folder`` (the packaged ``perf-v1`` by default), loaded once, for serving."""
    return ServedModel.load(folder)


class Predictor:
    """Predictions for schedules of one original kernel: from candidate texts (:meth:`predict`) or, where
    the caller holds them already (a game's states), from node orders per block (:meth:`predict_orders`)."""

    def __init__(self, k: Kernel, model: Any = None, orders: Any = None):
        """A predictor of schedules of ``k`` given as orders; ``orders`` (an
        :class:`~sass_lsp.schedule.canonical.OriginalOrders`) also reads them from texts (:meth:`predict`)."""
        self.orders, self.k, self.facts, self.model = orders, k, pf.KernelFacts.of(k), model

    @classmethod
    def of_text(cls, original: str, arch: str, kernel: str | None = None, model: Any = None) -> Predictor:
        """A predictor of schedules of ``original``'s kernel (parses it once, tens of ms)."""
        from sass_lsp.schedule.canonical import OriginalOrders

        orders = OriginalOrders(original, arch, kernel)
        return cls(orders.k, model, orders)

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
