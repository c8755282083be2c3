"""Warm start for PPO: imitate a one-step-lookahead teacher on the static cost model.

From the ptxas order the reorder game's good moves are rare (1-2% predicted headroom, a handful of moves among
hundreds), so PPO from a random network mostly learns to STOP. The teacher looks one move ahead: at each state
it asks the game for the cost of (a position-spread subset of) every legal move, and its target is a sharp
softmax over the predicted gains, STOP counting as gain 0. The network is trained on these states with
cross-entropy (the policy head only), then PPO fine-tunes it on the game's own reward.

``teacher_states`` plays the teacher's greedy trajectory (best move each step) from the ptxas order and from
scrambled orders, so the states it labels are the ones a good policy visits.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from sass_lsp.policy.model import PolicyNet, collate, compact
from sass_lsp.schedule import observation as ob

Sample = tuple[
    dict[str, np.ndarray], np.ndarray, np.ndarray
]  # compact obs, action rows, target probabilities
KernelText = tuple[str, str, str, str]  # (name, arch, .cuasm text, kernel)

TEMPERATURE = 0.002  # gains are fractions of the kernel's cycles: 0.002 = 0.2% separates moves sharply


def teacher_targets(gains: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Target distribution over ``rows`` + STOP from predicted gains (STOP's gain is 0)."""
    all_rows = np.append(rows, ob.STOP)
    g = np.append(gains, 0.0) / TEMPERATURE
    p = np.exp(g - g.max())
    return all_rows.astype(np.int64), (p / p.sum()).astype(np.float32)


@dataclass(frozen=True)
class Teacher:
    """How the teacher plays: from which starts, how far, how many moves it costs per state, on what game
    (``factory(text, arch, kernel=..., max_steps=...)``; None: the reorder game)."""

    scrambles: Sequence[int] = (0, 4, 12)
    steps: int = 8
    per_state: int = 384
    factory: Callable[..., Any] | None = None


MOVE_TEACHER = Teacher(scrambles=(0, 4), steps=6, per_state=48)  # a move of another kind costs a game build


def teacher_states(kernel: KernelText, *, teacher: Teacher = Teacher(), seed: int = 0) -> list[Sample]:
    """Labelled states of one kernel: the teacher's greedy trajectory from each starting order."""
    from sass_lsp.schedule.game import ReorderGame

    _name, arch, text, kname = kernel
    steps, per_state = teacher.steps, teacher.per_state
    factory = teacher.factory or ReorderGame.from_text
    game = factory(text, arch, kernel=kname, max_steps=steps)
    rng = np.random.default_rng(seed)
    out: list[Sample] = []
    for scramble in teacher.scrambles:
        obs, _ = game.reset(seed=int(rng.integers(2**31)), options={"scramble": scramble})
        for _ in range(steps):
            n = len(game.candidates())
            if n == 0:
                break
            rows = np.arange(n) if n <= per_state else np.unique(np.linspace(0, n - 1, per_state).round())
            rows = rows.astype(np.int64)
            base = game.cost
            gains = np.array([(base - game.peek(int(r))) / game.cost_original for r in rows])
            act_rows, probs = teacher_targets(gains, rows)
            out.append((compact(obs), act_rows, probs))
            if gains.max() <= 0:
                break
            obs, _r, term, trunc, _info = game.step(int(rows[int(gains.argmax())]))
            if term or trunc:
                break
    return out


def _states_job(args: tuple[KernelText, int, Teacher]) -> list[Sample]:
    kernel, seed, teacher = args
    try:
        return teacher_states(kernel, teacher=teacher, seed=seed)
    except Exception:  # noqa: BLE001 - a kernel the teacher cannot play is skipped, as in training
        return []


def collect(
    kernels: Sequence[KernelText],
    *,
    workers: int,
    seed: int = 0,
    deadline: float | None = None,
    teacher: Teacher = Teacher(),
) -> list[Sample]:
    """The teacher's states of every kernel; given a ``deadline`` (``time.monotonic``), those of the kernels
    finished by then (the pool's unfinished jobs are dropped)."""
    jobs = [(k, seed + i, teacher) for i, k in enumerate(kernels)]
    out: list[Sample] = []
    if deadline is not None and time.monotonic() >= deadline:
        return out
    if workers <= 1:
        for job in jobs:
            if deadline is not None and time.monotonic() > deadline:
                break
            out += _states_job(job)
        return out
    with multiprocessing.get_context("fork").Pool(workers) as pool:  # leaving it terminates the workers
        results = pool.imap_unordered(_states_job, jobs)
        for _ in jobs:
            try:
                wait = None if deadline is None else max(0.0, deadline - time.monotonic())
                out += results.next(timeout=wait)
            except multiprocessing.TimeoutError:
                break
    return out


def fit(
    net: PolicyNet,
    samples: list[Sample],
    *,
    epochs: int = 6,
    batch: int = 32,
    lr: float = 1e-3,
    device: str = "cpu",
    seed: int = 0,
    log: Callable[[dict[str, float]], None] | None = None,
    deadline: float | None = None,
) -> list[dict[str, float]]:
    """Cross-entropy of the policy head against the teacher's targets; returns per-epoch loss and accuracy.
    Given a ``deadline`` (``time.monotonic``), no epoch starts that would end after it (one as long as the
    last)."""
    net.to(device).train()
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    rng = np.random.default_rng(seed)
    history = []
    last_s = 0.0
    for epoch in range(epochs):
        if deadline is not None and time.monotonic() + last_s > deadline:
            break
        t0 = time.perf_counter()
        order = rng.permutation(len(samples))
        total, hits, count = 0.0, 0, 0
        for start in range(0, len(order), batch):
            chunk = [samples[i] for i in order[start : start + batch]]
            data = collate([c[0] for c in chunk], device=device)
            logits, _ = net(data)
            logp = torch.log_softmax(logits, dim=1)
            target = torch.zeros_like(logp)
            for k, (_obs, rows, probs) in enumerate(chunk):
                target[k, torch.as_tensor(rows, device=device)] = torch.as_tensor(probs, device=device)
            loss = -(target * torch.nan_to_num(logp, neginf=0.0)).sum(1).mean()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            total += float(loss.detach()) * len(chunk)
            hits += int((logits.argmax(1) == target.argmax(1)).sum())
            count += len(chunk)
        last_s = time.perf_counter() - t0
        row = {"epoch": epoch + 1, "loss": total / max(count, 1), "top1": hits / max(count, 1), "s": last_s}
        history.append(row)
        if log is not None:
            log(row)
    net.to("cpu").eval()
    return history


def summary(samples: list[Sample]) -> dict[str, Any]:
    stop_best = sum(int(rows[int(np.argmax(p))] == ob.STOP) for _o, rows, p in samples)
    return {"states": len(samples), "teacher_stops": stop_best}
