"""The learned performance model: a schedule's log speedup over ptxas's order, with an uncertainty.

An ensemble of small MLPs over :mod:`sass_lsp.perf.features` (kernel-agnostic features of the schedule
change), each with a Gaussian head (mean and log standard deviation of the log speedup, trained by negative
log-likelihood). The ensemble's prediction is the mean of its members' means; its variance is the mean of
their variances (the measurements' spread the model cannot explain: timing noise and what the features miss)
plus the variance of their means (disagreement: how far a schedule lies from what it was trained on), plus
a floor fitted by leaving kernels out (``sd_floor``: what moving to a kernel never seen adds).

Small and fast on a CPU: a few thousand weights per member; a batch of 32 schedules predicts in well under a
millisecond once featurized. Checkpoints are a directory with ``model.safetensors`` and ``config.json``
(feature names, ensemble size, training metadata): loading unpickles nothing.

Needs torch (the ``[policy]`` extra); import this module lazily."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save
from torch import nn

from sass_lsp.files import write_atomic
from sass_lsp.perf import features as pf

WEIGHTS = "model.safetensors"
CONFIG = "config.json"
Z90 = 1.6448536269514722  # a central 90% interval of a Gaussian is mean +- Z90 * sd


@dataclass
class PerfConfig:
    n_features: int = pf.N_FEATURES
    hidden: int = 64
    members: int = 3
    feature_names: list[str] = field(default_factory=lambda: list(pf.NAMES))
    meta: dict[str, Any] = field(default_factory=dict)


class Member(nn.Module):
    def __init__(self, n_in: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_in, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, 2)
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.net(x)
        return out[:, 0], out[:, 1].clamp(-12.0, 2.0)  # mean, log sd (in units of the target scale)


class PerfModel(nn.Module):
    """Standardizes features, runs the members, returns (mean, sd) of the log speedup."""

    def __init__(self, cfg: PerfConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.register_buffer("x_mean", torch.zeros(cfg.n_features))
        self.register_buffer("x_scale", torch.ones(cfg.n_features))
        self.register_buffer("y_scale", torch.ones(()))  # targets are trained as y / y_scale
        self.register_buffer("sd_floor", torch.zeros(()))  # log-speedup sd added for an unseen kernel
        self.members = nn.ModuleList(Member(cfg.n_features, cfg.hidden) for _ in range(cfg.members))

    def standardize(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.x_mean) / self.x_scale

    def member_outputs(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per member (scaled): means [M, B] and log sds [M, B] of standardized ``x``."""
        outs = [m(x) for m in self.members]
        return torch.stack([o[0] for o in outs]), torch.stack([o[1] for o in outs])

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, log_sd = self.member_outputs(self.standardize(x))
        var = (2 * log_sd).exp().mean(0) + mu.var(0, unbiased=False)
        sd2 = var * self.y_scale**2 + self.sd_floor**2
        return mu.mean(0) * self.y_scale, sd2.sqrt()

    @torch.no_grad()
    def predict(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(mean, sd) of the log speedup of each row of features ``x`` [B, n_features]."""
        self.eval()
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # a batch this small gains nothing from threads, and loses much when shared
        try:
            mu, sd = self(torch.as_tensor(np.asarray(x, np.float32)))
        finally:
            torch.set_num_threads(threads)
        return mu.numpy().astype(np.float64), sd.numpy().astype(np.float64)

    def interval(self, x: np.ndarray, level: float = 0.9) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(predicted speedup, low, high): the central ``level`` interval of the speedup."""
        z = Z90 if level == 0.9 else math.sqrt(2) * _erfinv(level)
        mu, sd = self.predict(x)
        return np.exp(mu), np.exp(mu - z * sd), np.exp(mu + z * sd)


def _erfinv(p: float) -> float:
    return float(torch.erfinv(torch.tensor(p, dtype=torch.float64)))


def save(model: PerfModel, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    write_atomic(folder / WEIGHTS, st_save(state))
    write_atomic(folder / CONFIG, json.dumps(asdict(model.cfg), indent=2) + "\n")


def load(folder: Path) -> PerfModel:
    """A checkpoint written by :func:`save`; refuses one trained on other features."""
    cfg = PerfConfig(**json.loads((folder / CONFIG).read_text()))
    if cfg.feature_names != pf.NAMES:
        raise ValueError(f"{folder}: trained on other features than sass_lsp.perf.features computes")
    model = PerfModel(cfg)
    model.load_state_dict(st_load((folder / WEIGHTS).read_bytes()))
    model.eval()
    return model


RANK_PAIRS = 256  # rows of each batch whose same-kernel pairs the ranking term compares


def _pair_loss(mu: torch.Tensor, y: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """Logistic loss on the order of every pair of rows of one kernel (a kernel's scale of speedups is
    unknown on a new kernel; the order within it is what a ranking needs)."""
    same = (g[:, None] == g[None, :]) & (y[:, None] > y[None, :])
    if not same.any():
        return mu.sum() * 0
    return torch.nn.functional.softplus(-(mu[:, None] - mu[None, :])[same]).mean()


def fit(
    x: np.ndarray,
    y: np.ndarray,
    weight: np.ndarray | None = None,
    *,
    cfg: PerfConfig | None = None,
    epochs: int = 12,
    batch: int = 1024,
    lr: float = 5e-3,
    seed: int = 0,
    groups: np.ndarray | None = None,
    rank_weight: float = 0.0,
) -> PerfModel:
    """Fit a model on features ``x`` [N, F] and log speedups ``y`` [N], rows weighted by ``weight``
    (mean 1). Each member sees its own bootstrap resample and initialization. Deterministic given ``seed``."""
    torch.manual_seed(seed)
    cfg = cfg or PerfConfig()
    model = PerfModel(cfg)
    xt = torch.as_tensor(x, dtype=torch.float32)
    yt = torch.as_tensor(y, dtype=torch.float32)
    w = torch.ones(len(y)) if weight is None else torch.as_tensor(weight / weight.mean(), dtype=torch.float32)
    scale = xt.std(0)
    model.x_mean.copy_(xt.mean(0))
    model.x_scale.copy_(torch.where(scale > 1e-8, scale, torch.ones_like(scale)))
    model.y_scale.copy_(yt.std().clamp_min(1e-6))
    xs, ys = model.standardize(xt), yt / model.y_scale
    gen = torch.Generator().manual_seed(seed)
    gt = None if groups is None else torch.as_tensor(np.unique(groups, return_inverse=True)[1])
    for member in model.members:
        boot = torch.randint(len(ys), (len(ys),), generator=gen)
        opt = torch.optim.AdamW(member.parameters(), lr=lr, weight_decay=1e-3)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs)
        member.train()
        for _ in range(epochs):
            perm = boot[torch.randperm(len(boot), generator=gen)]
            for i in range(0, len(perm), batch):
                idx = perm[i : i + batch]
                mu, log_sd = member(xs[idx])
                nll = log_sd + 0.5 * ((ys[idx] - mu) / log_sd.exp()) ** 2
                loss = (nll * w[idx]).mean()
                if rank_weight and gt is not None:
                    loss = loss + rank_weight * _pair_loss(
                        mu[:RANK_PAIRS], ys[idx[:RANK_PAIRS]], gt[idx[:RANK_PAIRS]]
                    )
                opt.zero_grad()
                loss.backward()
                opt.step()
            sched.step()
    model.eval()
    return model
