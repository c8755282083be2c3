"""Fine-tuning the reorder policy on measured GPU time (issue #6's second reward).

REINFORCE with a running per-kernel baseline, one loop in one file. An episode plays the game (the reorder
game, or the move game for a policy of it: ``PolicyConfig.cand_kinds``) from a training kernel's original
schedule with moves sampled from the policy (up to ``max_moves``, or STOP). Its
return is the log of the measured speedup of the final schedule over the original, from ``measure`` (on
the GPU: :class:`sass_lsp.gpu.measure.GpuMeasure`, which verifies outputs bit for bit on two seeds before
it times both interleaved); a schedule that is rejected returns ``reject_return``. An episode that leaves
the original (no move, or moves that undo each other) returns 0 without a measurement. Every
``episodes_per_update`` episodes, one gradient step on ``-(return - baseline) * sum log pi(a|s)``, the
advantages divided by their spread in the batch, minus an entropy bonus. It stops when ``measure`` has
reported ``budget_s`` seconds (GPU seconds), after ``max_episodes``, or after ``max_idle`` episodes in a
row that left the original (a policy that only stops).

Returns are tiny and noisy on the GPU (screened speedups of random legal moves lie within about ±0.5%,
with confidence intervals of ±0.1%), so a few hundred episodes can only nudge a policy; the fine-tuned
checkpoint is evaluated like the original one, on held-out kernels.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from sass_lsp.policy.model import PolicyNet, collate, compact
from sass_lsp.schedule.search import Measure, game_candidate


@dataclass(frozen=True)
class FinetuneConfig:
    budget_s: float = 240.0  # measured seconds (GPU seconds) to spend
    max_episodes: int | None = None
    max_idle: int = 64
    episodes_per_update: int = 8
    lr: float = 3e-5
    max_moves: int = 8
    ent_coef: float = 0.01
    baseline_decay: float = 0.8  # running mean of each kernel's returns
    # the return of a schedule the measurement rejects (never expected: states are hazard-free)
    reject_return: float = -0.01
    seed: int = 0
    device: str = "cpu"


@dataclass
class FinetuneKernel:
    name: str
    text: str  # the original .cuasm
    arch: str
    kernel: str | None  # the function to reorder (None: the largest)
    measure: Measure


@dataclass
class Episode:
    kernel: str
    observations: list[dict[str, np.ndarray]]
    actions: list[int]
    ret: float
    speedup: float | None
    verdict: str
    moves: int


def rollout(net: PolicyNet, game: Any, gen: torch.Generator) -> tuple[list[dict], list[int]]:  # noqa: ANN401
    """One episode from the game's original state, moves sampled from the policy (no gradients)."""
    obs, _ = game.reset()
    observations, actions = [], []
    done = False
    while not done:
        item = compact(obs)
        with torch.inference_mode():
            logits, _ = net(collate([item], next(net.parameters()).device))
        action = int(torch.multinomial(torch.softmax(logits[0].float().cpu(), dim=0), 1, generator=gen))
        observations.append(item)
        actions.append(action)
        obs, _r, term, trunc, _info = game.step(action)
        done = term or trunc
    return observations, actions


def update(
    net: PolicyNet, opt: torch.optim.Optimizer, batch: list[tuple[Episode, float]], cfg: FinetuneConfig
) -> tuple[float, float]:
    """One REINFORCE step over ``(episode, advantage)`` pairs; returns (loss, entropy)."""
    advs = torch.tensor([a for _e, a in batch], dtype=torch.float32)
    if len(batch) > 1 and float(advs.std()) > 0:
        advs = advs / (advs.std() + 1e-8)
    items = [o for e, _a in batch for o in e.observations]
    actions = torch.tensor([a for e, _a in batch for a in e.actions], device=cfg.device)
    step_adv = torch.repeat_interleave(advs, torch.tensor([len(e.actions) for e, _a in batch])).to(cfg.device)
    net.train()
    logits, _ = net(collate(items, cfg.device))
    dist = torch.distributions.Categorical(logits=logits, validate_args=False)
    logp = dist.log_prob(actions)
    entropy = dist.entropy().mean()
    # Mean over episodes: each episode's log-probabilities summed, weighted by its advantage.
    loss = -(step_adv * logp).sum() / len(batch) - cfg.ent_coef * entropy
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(net.parameters(), 0.5)
    opt.step()
    net.eval()
    return loss.item(), entropy.item()


def finetune(
    net: PolicyNet,
    kernels: list[FinetuneKernel],
    cfg: FinetuneConfig,
    log: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Fine-tune ``net`` in place on ``kernels``' measured speedups; a summary with the history."""
    if not kernels:
        raise ValueError("no kernel to fine-tune on")
    torch.manual_seed(cfg.seed)
    net.to(cfg.device)
    games = {k.name: _game(net, k, cfg.max_moves) for k in kernels}
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    gen = torch.Generator().manual_seed(cfg.seed)
    baseline = dict.fromkeys(games, 0.0)
    spent = 0.0
    episodes: list[Episode] = []
    history: list[dict[str, Any]] = []
    batch: list[tuple[Episode, float]] = []
    idle = 0  # episodes in a row that left the original schedule

    def out_of_budget() -> bool:
        return (
            spent >= cfg.budget_s
            or idle >= cfg.max_idle
            or (cfg.max_episodes is not None and len(episodes) >= cfg.max_episodes)
        )

    while not out_of_budget():
        k = kernels[len(episodes) % len(kernels)]
        game = games[k.name]
        observations, actions = rollout(net, game, gen)
        speedup, verdict, ret = None, "unchanged", 0.0
        candidate = _final_text(game, k.text)
        idle = 0 if candidate != k.text else idle + 1
        if candidate != k.text:  # moves that undo each other leave the original: nothing to measure
            m = k.measure(candidate)
            spent += m.seconds
            speedup, verdict = m.speedup, m.verdict
            ret = math.log(m.speedup) if m.accepted else cfg.reject_return
        ep = Episode(k.name, observations, actions, ret, speedup, verdict, len(game.moves))
        episodes.append(ep)
        batch.append((ep, ret - baseline[k.name]))
        baseline[k.name] = cfg.baseline_decay * baseline[k.name] + (1 - cfg.baseline_decay) * ret
        if len(batch) == cfg.episodes_per_update or out_of_budget():
            loss, entropy = update(net, opt, batch, cfg)
            row = {
                "update": len(history) + 1,
                "episodes": len(episodes),
                "gpu_seconds": round(spent, 2),
                "mean_return": sum(e.ret for e, _a in batch) / len(batch),
                "mean_moves": sum(e.moves for e, _a in batch) / len(batch),
                "loss": loss,
                "entropy": entropy,
            }
            history.append(row)
            if log:
                log(row)
            batch = []
    timed = [e for e in episodes if e.speedup is not None]
    return {
        "config": asdict(cfg),
        "kernels": [k.name for k in kernels],
        "episodes": len(episodes),
        "measured": sum(e.verdict != "unchanged" for e in episodes),
        "timed": len(timed),
        "rejected": sum(e.verdict not in ("match", "unchanged") for e in episodes),
        "gpu_seconds": round(spent, 2),
        "best_speedup": max((e.speedup for e in timed), default=None),
        "history": history,
    }


def _game(net: PolicyNet, k: FinetuneKernel, max_moves: int) -> Any:  # noqa: ANN401
    """The game ``net`` plays: the move game for a policy of it, else the reorder game."""
    if net.cfg.cand_kinds:
        from sass_lsp.schedule.move_game import MoveGame

        return MoveGame(k.text, k.arch, k.kernel, max_steps=max_moves)
    from sass_lsp.schedule.game import ReorderGame

    return ReorderGame.from_text(k.text, k.arch, kernel=k.kernel, max_steps=max_moves)


def _final_text(game: Any, original: str) -> str:  # noqa: ANN401
    """The text an episode ended with."""
    from sass_lsp.schedule.move_game import MoveGame

    if isinstance(game, MoveGame):
        return game.text
    return game_candidate(game, original, "finetune").text if game.moves else original
