"""Feature: PPO for the reorder game, CleanRL-style: one readable loop (rollout, GAE, clipped update).

Envs are gymnasium envs whose observations follow :mod:`sass_lsp.schedule.observation`. They run in a
``gymnasium.vector`` env with SAME_STEP autoreset (the observation after a final step is the next episode's
first one; the final step's info arrives under ``final_info``). Rollouts keep observations *compact*
(:func:`sass_lsp.policy.model.compact`: cropped to the window), since a full one carries a 512x512 ``adj``.
Deterministic for a seed on a given machine and thread count.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv
from torch import nn

from sass_lsp.policy.model import PolicyNet, collate, split_batched


@dataclass(frozen=True)
class PPOConfig:
    total_steps: int = 200_000  # env steps over all envs
    n_steps: int = 64  # rollout length per env and update
    lr: float = 3e-4
    anneal_lr: bool = True  # linear decay to 0 over the run
    gamma: float = 0.99
    gae_lambda: float = 0.95
    n_minibatches: int = 8
    update_epochs: int = 4
    norm_adv: bool = True
    clip_coef: float = 0.2
    clip_vloss: bool = True
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_kl: float | None = None  # stop the epochs of an update early past this approximate KL
    norm_reward: bool = True  # divide rewards by a running std of the discounted return (see RewardScale)
    seed: int = 0
    device: str = "cpu"
    deterministic: bool = (
        True  # torch's deterministic kernels on the CPU (embedding backward otherwise races)
    )
    time_limit_s: float | None = None  # wall time: no update starts that would end past it (as long as the
    # last), a rollout still running then is dropped, and an update's epochs stop; the LR decays by time


def make_vector_env(
    env_fns: Sequence[Callable[[], gym.Env]], asynchronous: bool | None = None
) -> gym.vector.VectorEnv:
    """Sync or async vector env with SAME_STEP autoreset; async (one process per env) by default when the
    machine has more cores than envs need to share with the learner."""
    if asynchronous is None:
        asynchronous = len(env_fns) > 1 and (os.cpu_count() or 1) >= 4
    if asynchronous:
        # fork: workers inherit the imported modules (no torch re-import per process); they never run torch.
        return AsyncVectorEnv(list(env_fns), context="fork", autoreset_mode=AutoresetMode.SAME_STEP)
    return SyncVectorEnv(list(env_fns), autoreset_mode=AutoresetMode.SAME_STEP)


def _final(infos: dict[str, Any], key: str, env: int) -> float | None:
    """A number from the final step's info of ``env`` (SAME_STEP autoreset) or None; a list: its length."""
    fin = infos.get("final_info")
    if not fin or key not in fin or not fin.get(f"_{key}", np.ones(env + 1, bool))[env]:
        return None
    value = fin[key][env]
    if isinstance(value, list | tuple):
        return float(len(value))
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


class RewardScale:
    """Divides rewards by the running std of each env's discounted return, so the critic's targets are O(1)
    whatever the task: reorder rewards are fractions of the original cycles (~0.001 per move), a toy game's
    are ~0.1. A fixed scale would let the value loss dominate the clipped gradient on one task and vanish on
    another."""

    def __init__(self, n_envs: int, gamma: float) -> None:
        self.gamma = gamma
        self.ret = np.zeros(n_envs)
        self.count, self.mean, self.var = 1e-4, 0.0, 1.0

    def __call__(self, reward: np.ndarray, done: np.ndarray) -> np.ndarray:
        self.ret = self.ret * self.gamma + reward
        batch_mean, batch_var, n = self.ret.mean(), self.ret.var(), len(self.ret)
        delta, total = batch_mean - self.mean, self.count + n
        self.var = (self.var * self.count + batch_var * n + delta**2 * self.count * n / total) / total
        self.mean += delta * n / total
        self.count = total
        self.ret[done.astype(bool)] = 0.0
        return reward / np.sqrt(self.var + 1e-8)


def seed_everything(seed: int) -> None:
    np.random.seed(seed)
    torch.manual_seed(seed)


def ppo(
    envs: gym.vector.VectorEnv,
    net: PolicyNet,
    cfg: PPOConfig,
    callback: Callable[[dict[str, float]], None] | None = None,
) -> list[dict[str, float]]:
    """Train ``net`` in place; returns the per-update metrics (also passed to ``callback``)."""
    was_deterministic = torch.are_deterministic_algorithms_enabled()
    # CUDA has no deterministic kernel for some of these ops: determinism is a CPU promise only.
    torch.use_deterministic_algorithms((cfg.deterministic and cfg.device == "cpu") or was_deterministic)
    try:
        return _ppo(envs, net, cfg, callback)
    finally:
        torch.use_deterministic_algorithms(was_deterministic)


def _ppo(
    envs: gym.vector.VectorEnv,
    net: PolicyNet,
    cfg: PPOConfig,
    callback: Callable[[dict[str, float]], None] | None,
) -> list[dict[str, float]]:
    seed_everything(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    device = torch.device(cfg.device)
    net.to(device).train()
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, eps=1e-5)
    n_envs = envs.num_envs
    batch_size = cfg.n_steps * n_envs
    mb_size = max(1, batch_size // cfg.n_minibatches)
    n_updates = max(1, cfg.total_steps // batch_size)

    # Rollout storage: compact observations in a flat list (index = step * n_envs + env), the rest as arrays.
    obs_store: list[dict[str, np.ndarray]] = [{}] * batch_size
    actions = np.zeros((cfg.n_steps, n_envs), np.int64)
    logprobs = np.zeros((cfg.n_steps, n_envs), np.float32)
    rewards = np.zeros((cfg.n_steps, n_envs), np.float32)
    dones = np.zeros((cfg.n_steps, n_envs), np.float32)
    values = np.zeros((cfg.n_steps, n_envs), np.float32)

    raw_obs, _ = envs.reset(seed=cfg.seed)
    next_obs = split_batched(raw_obs)
    next_done = np.zeros(n_envs, np.float32)
    ep_return = np.zeros(n_envs)
    scale = RewardScale(n_envs, cfg.gamma) if cfg.norm_reward else None
    global_step = 0
    start = time.perf_counter()
    history: list[dict[str, float]] = []

    last_update_s = 0.0  # the next update is expected to take as long as the last one
    for update in range(1, n_updates + 1):
        t_begin = time.perf_counter()
        elapsed = t_begin - start
        if cfg.time_limit_s is not None and elapsed + last_update_s > cfg.time_limit_s:
            break
        if cfg.anneal_lr:
            frac = (update - 1) / n_updates
            if cfg.time_limit_s is not None:
                frac = max(frac, elapsed / cfg.time_limit_s)
            opt.param_groups[0]["lr"] = cfg.lr * (1.0 - frac)
        finished_returns: list[float] = []
        finished_speedups: list[float] = []
        finished_moves: list[float] = []

        # --- rollout -------------------------------------------------------------------------------
        t_rollout = time.perf_counter()
        net.eval()
        out_of_time = False
        for step in range(cfg.n_steps):
            if cfg.time_limit_s is not None and time.perf_counter() - start > cfg.time_limit_s:
                out_of_time = True  # a rollout that cannot end in time is dropped, with its update
                break
            global_step += n_envs
            obs_store[step * n_envs : (step + 1) * n_envs] = next_obs
            dones[step] = next_done
            with torch.no_grad():
                dist, value = net.dist(collate(next_obs, device))
                action = dist.sample()
                logprobs[step] = dist.log_prob(action).cpu().numpy()
            values[step] = value.cpu().numpy()
            actions[step] = action.cpu().numpy()
            raw_obs, reward, term, trunc, infos = envs.step(actions[step])
            next_obs = split_batched(raw_obs)
            next_done = np.logical_or(term, trunc).astype(np.float32)
            rewards[step] = scale(reward, next_done) if scale is not None else reward
            ep_return += reward
            for e in np.flatnonzero(next_done):
                finished_returns.append(float(ep_return[e]))
                ep_return[e] = 0.0
                speedup = _final(infos, "speedup_pred", e)
                if speedup is not None:
                    finished_speedups.append(speedup)
                moves = _final(infos, "moves", e)
                if moves is not None:
                    finished_moves.append(moves)

        if out_of_time:
            break

        # --- GAE: the episode ends (STOP or the move limit) are true ends, so no bootstrap across them ----
        with torch.no_grad():
            next_value = net.dist(collate(next_obs, device))[1].cpu().numpy()
        advantages = np.zeros_like(rewards)
        last = np.zeros(n_envs, np.float32)
        for t in reversed(range(cfg.n_steps)):
            nonterminal = 1.0 - (next_done if t == cfg.n_steps - 1 else dones[t + 1])
            next_v = next_value if t == cfg.n_steps - 1 else values[t + 1]
            delta = rewards[t] + cfg.gamma * next_v * nonterminal - values[t]
            last = delta + cfg.gamma * cfg.gae_lambda * nonterminal * last
            advantages[t] = last
        returns = advantages + values

        b_actions = torch.as_tensor(actions.reshape(-1), device=device)
        b_logprobs = torch.as_tensor(logprobs.reshape(-1), device=device)
        b_adv = torch.as_tensor(advantages.reshape(-1), device=device)
        b_returns = torch.as_tensor(returns.reshape(-1), device=device)
        b_values = torch.as_tensor(values.reshape(-1), device=device)

        # --- update --------------------------------------------------------------------------------
        t_update = time.perf_counter()
        net.train()
        clipfracs: list[float] = []
        approx_kl = torch.zeros(())
        pg_loss = v_loss = entropy = torch.zeros(())
        for _epoch in range(cfg.update_epochs):
            order = rng.permutation(batch_size)
            for lo in range(0, batch_size, mb_size):
                mb = order[lo : lo + mb_size]
                dist, new_value = net.dist(collate([obs_store[i] for i in mb], device))
                mb_t = torch.as_tensor(mb, device=device)
                new_logprob = dist.log_prob(b_actions[mb_t])
                logratio = new_logprob - b_logprobs[mb_t]
                ratio = logratio.exp()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs.append(float(((ratio - 1.0).abs() > cfg.clip_coef).float().mean()))
                adv = b_adv[mb_t]
                if cfg.norm_adv and len(mb) > 1:
                    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                clip = cfg.clip_coef
                pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - clip, 1 + clip)).mean()
                old_v, ret = b_values[mb_t], b_returns[mb_t]
                if cfg.clip_vloss:
                    v_clipped = old_v + (new_value - old_v).clamp(-clip, clip)
                    v_loss = 0.5 * torch.max((new_value - ret) ** 2, (v_clipped - ret) ** 2).mean()
                else:
                    v_loss = 0.5 * ((new_value - ret) ** 2).mean()
                entropy = dist.entropy().mean()
                loss = pg_loss - cfg.ent_coef * entropy + cfg.vf_coef * v_loss
                opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(net.parameters(), cfg.max_grad_norm)
                opt.step()
            if cfg.target_kl is not None and approx_kl > cfg.target_kl:
                break
            if cfg.time_limit_s is not None and time.perf_counter() - start > cfg.time_limit_s:
                break  # fewer epochs, as an early stop on the KL does

        var_y = np.var(returns)
        metrics = {
            "update": update,
            "global_step": global_step,
            "lr": opt.param_groups[0]["lr"],
            "episodes": len(finished_returns),
            "episode_return": float(np.mean(finished_returns)) if finished_returns else float("nan"),
            "speedup_pred": float(np.mean(finished_speedups)) if finished_speedups else float("nan"),
            "episode_moves": float(np.mean(finished_moves)) if finished_moves else float("nan"),
            "policy_loss": float(pg_loss.detach()),
            "value_loss": float(v_loss.detach()),
            "entropy": float(entropy.detach()),
            "approx_kl": float(approx_kl),
            "clipfrac": float(np.mean(clipfracs)) if clipfracs else 0.0,
            "explained_variance": float(1 - np.var(returns - values) / var_y) if var_y > 0 else float("nan"),
            "sps": global_step / (time.perf_counter() - start),
            "rollout_s": t_update - t_rollout,  # env steps + sampling forward passes
            "update_s": time.perf_counter() - t_update,
        }
        history.append(metrics)
        if callback is not None:
            callback(metrics)
        last_update_s = time.perf_counter() - t_begin
    net.eval()
    return history


def config_dict(cfg: PPOConfig) -> dict[str, Any]:
    return asdict(cfg)
