"""Feature: train the reorder policy with PPO on a set of kernels, evaluate it, write checkpoint + model card.

``train(kernel_texts, ...)`` runs ``n_envs`` copies of :class:`KernelPool`, a gymnasium env that at each reset
picks a kernel of the training set (at random, seeded per env) and a scramble level (data augmentation: the
game starts from a randomly perturbed schedule), and plays the reorder game on it. ``evaluate(net, ...)``
reports, per kernel, the predicted speedup of the policy's greedy rollout from the ptxas original.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from sass_lsp.files import write_atomic
from sass_lsp.policy.model import WEIGHTS, PolicyConfig, PolicyNet, collate, compact, n_params, save_policy
from sass_lsp.policy.ppo import PPOConfig, make_vector_env, ppo
from sass_lsp.schedule import observation as ob

# (name, arch, .cuasm text) or (name, arch, .cuasm text, kernel): the kernel picks one of a file's kernels
# (default: the game's choice, the largest).
KernelText = tuple[str, str, str] | tuple[str, str, str, str | None]
GameFactory = Callable[..., gym.Env]  # (text, arch, *, kernel=None, max_steps=16) -> game; reset takes
# options={"scramble": n}

# (scramble level, probability): most episodes start from the ptxas schedule, some from a perturbed one.
DEFAULT_SCRAMBLE: tuple[tuple[int, float], ...] = ((0, 0.6), (4, 0.25), (16, 0.15))
MODEL_CARD = "model_card.json"
# Under a deadline, PPO leaves this many times the games' build time for the evaluation (a build and a
# 16-move greedy rollout per kernel), and SAVE_RESERVE_S for closing the environments and saving.
EVAL_RESERVE = 2.0
SAVE_RESERVE_S = 2.0
REWARD = (
    "per move: (predicted cycles before the move - after) / predicted cycles of the ptxas original, from the "
    "static cost model (sass_lsp.schedule.cost) over the hot region; an episode's return is the fraction of "
    "predicted cycles saved. Predicted, not measured GPU time."
)
MOVE_REWARD = (
    "per move of any kind (reorder, control code, rename, cross-block, pipeline): (predicted cycles before "
    "the move - after) / predicted cycles of the ptxas original, from the static cost model over the hot "
    "region of the edited text. Predicted, not measured GPU time."
)
PERF_REWARD = (
    "per move: (predicted time before the move - after) / predicted time of the ptxas original, from the "
    "learned performance model (sass_lsp.perf, perf-v1); an episode's return is the share of time the model "
    "predicts saved. Predicted, not measured GPU time."
)


def _unpack(item: KernelText) -> tuple[str, str, str, str | None]:
    name, arch, text, *rest = item
    return name, arch, text, (rest[0] if rest else None)


def _json_safe(value: Any) -> Any:
    """NaN / inf (e.g. no episode finished in an update) become null: the card stays strict JSON."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, float | np.floating):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def game_from_text(text: str, arch: str, *, kernel: str | None = None, **kw: Any) -> gym.Env:
    """The real reorder game (imported late: it is written alongside this package)."""
    from sass_lsp.schedule.game import ReorderGame

    return ReorderGame.from_text(text, arch, kernel=kernel, **kw)


def move_game_from_text(text: str, arch: str, *, kernel: str | None = None, **kw: Any) -> gym.Env:
    """The move game (every move kind, :mod:`sass_lsp.schedule.move_game`), rewarded by the static cost
    model as the reorder game is."""
    from sass_lsp.schedule.move_game import MoveGame

    return MoveGame(text, arch, kernel, **kw)


def perf_game_from_text(
    text: str, arch: str, *, kernel: str | None = None, perf: Any = None, **kw: Any
) -> gym.Env:
    """The reorder game rewarded by the learned performance model (``perf``, None: the packaged one): a
    state's cost is its predicted time relative to ptxas's order, so a step's reward is the share of time
    the model predicts it saves. ``train(..., factory=partial(perf_game_from_text, perf=model))``."""
    from sass_lsp.isa.semantics import load_semantics
    from sass_lsp.perf.predict import Predictor, load_model
    from sass_lsp.schedule.game import ReorderGame, kernel_of_text

    sem = load_semantics(arch)
    k = kernel_of_text(text, sem, kernel)
    predictor = Predictor(k, perf if perf is not None else load_model())

    def predicted_time(orders: dict[int, tuple[int, ...]]) -> float:
        return 1.0 / predictor.predict_orders([orders])[0].speedup

    return ReorderGame(k, sem, order_cost=predicted_time, **kw)


class KernelPool(gym.Env):
    """Plays the reorder game on a kernel (and scramble level) drawn afresh at every reset.

    One game per kernel, built lazily and cached: building one parses and analyses the kernel.
    """

    def __init__(
        self,
        kernels: Sequence[KernelText],
        *,
        max_steps: int = 16,
        scramble_schedule: Sequence[tuple[int, float]] = DEFAULT_SCRAMBLE,
        factory: GameFactory = game_from_text,
    ) -> None:
        self.kernels = list(kernels)
        self.levels = [int(s) for s, _ in scramble_schedule]
        weights = np.array([w for _, w in scramble_schedule], dtype=np.float64)
        self.weights = weights / weights.sum()
        self.max_steps = max_steps
        self.factory = factory
        self._games: dict[int, gym.Env] = {}
        self.game = self._game(0)
        self.observation_space = self.game.observation_space
        self.action_space = self.game.action_space

    def _game(self, idx: int) -> gym.Env:
        if idx not in self._games:
            _name, arch, text, kernel = _unpack(self.kernels[idx])
            self._games[idx] = self.factory(text, arch, kernel=kernel, max_steps=self.max_steps)
        return self._games[idx]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        idx = int(self.np_random.integers(len(self.kernels)))
        scramble = self.levels[int(self.np_random.choice(len(self.levels), p=self.weights))]
        self.game = self._game(idx)
        obs, info = self.game.reset(seed=int(self.np_random.integers(2**31)), options={"scramble": scramble})
        return obs, {**info, "kernel_index": idx, "scramble": scramble}

    def step(self, action: int):
        return self.game.step(action)


def usable_kernels(
    kernel_texts: Sequence[KernelText], factory: GameFactory = game_from_text
) -> tuple[list[KernelText], dict[str, str]]:
    """Kernels the game can be played on, and why the others were left out."""
    ok, skipped = [], {}
    for item in kernel_texts:
        name, arch, text, kernel = _unpack(item)
        try:
            game = factory(text, arch, kernel=kernel)
            obs, _ = game.reset(seed=0)
            if not np.asarray(obs["cand_mask"]).any():
                skipped[name] = "no legal move in the window"
                continue
        except Exception as exc:  # noqa: BLE001 - a kernel the game rejects is reported, not fatal
            skipped[name] = f"{type(exc).__name__}: {exc}"
            continue
        ok.append(item)
    return ok, skipped


def greedy_rollout(net: PolicyNet, game: gym.Env, *, seed: int = 0) -> dict[str, Any]:
    """Play one episode taking the most probable action each step; the final info plus the return."""
    obs, info = game.reset(seed=seed)
    ret, actions = 0.0, []
    done = False
    while not done:
        with torch.inference_mode():
            logits, _ = net(collate([compact(obs)]))
        action = int(logits[0].argmax())
        actions.append(action)
        obs, reward, term, trunc, info = game.step(action)
        ret += float(reward)
        done = bool(term or trunc)
    return {**info, "return": ret, "actions": actions}


def evaluate(
    net: PolicyNet,
    kernel_texts: Sequence[KernelText],
    *,
    max_steps: int = 16,
    factory: GameFactory = game_from_text,
    deadline: float | None = None,
) -> dict[str, Any]:
    """Per kernel: predicted cycles of the ptxas original and after the greedy rollout, and the speedup.
    Given a ``deadline`` (``time.monotonic``), the kernels whose rollout would end after it (as long as the
    slowest so far) are listed under ``not_evaluated`` instead."""
    net.eval()
    per: dict[str, dict[str, Any]] = {}
    not_evaluated: list[str] = []
    slowest = 0.0
    for item in kernel_texts:
        name, arch, text, kernel = _unpack(item)
        t0 = time.monotonic()
        if deadline is not None and t0 + slowest > deadline:
            not_evaluated.append(name)
            continue
        r = greedy_rollout(net, factory(text, arch, kernel=kernel, max_steps=max_steps))
        slowest = max(slowest, time.monotonic() - t0)
        per[name] = {
            "cost_original": float(r.get("cost_original", float("nan"))),
            "cost": float(r.get("cost", float("nan"))),
            "speedup_pred": float(r.get("speedup_pred", float("nan"))),
            "moves": len(r["moves"]),
            "return": r["return"],
        }
    speedups = [v["speedup_pred"] for v in per.values()]
    geo = float(np.exp(np.mean(np.log(speedups)))) if speedups else float("nan")
    return {"kernels": per, "geomean_speedup_pred": geo, "not_evaluated": not_evaluated}


def train(
    kernel_texts: list[KernelText],
    *,
    total_steps: int,
    n_envs: int,
    seed: int,
    out_dir: str | Path,
    device: str = "cpu",
    scramble_schedule: Sequence[tuple[int, float]] = DEFAULT_SCRAMBLE,
    progress: Callable[[dict[str, float]], None] | None = None,
    max_steps: int = 16,
    net_config: PolicyConfig | None = None,
    ppo_config: PPOConfig | None = None,
    asynchronous: bool | None = None,
    factory: GameFactory = game_from_text,
    heldout: Sequence[str] = (),
    init_net: PolicyNet | None = None,
    warm_start: dict[str, Any] | None = None,
    deadline: float | None = None,
    reward: str = REWARD,
) -> dict[str, Any]:
    """Train on ``kernel_texts``; writes the checkpoint (``out_dir``) and ``out_dir/model_card.json``.

    ``ppo_config`` supplies the PPO hyper-parameters; its ``total_steps``, ``seed`` and ``device`` are
    replaced by the arguments. ``heldout``: names of the kernels kept for evaluation, recorded in the model
    card; a training kernel of that name (or ``name:kernel``) is an error. Returns the model card plus the
    per-update history. ``reward`` describes, for the card, what ``factory``'s games reward.

    ``deadline`` (``time.monotonic``): PPO stops early so that saving and the evaluation end by then (the
    evaluation's time estimated from building the games); kernels it has no time for are listed in the card.
    """
    leaked = [n for n, *_ in kernel_texts if n in heldout or n.split(":")[0] in heldout]
    if leaked:
        raise ValueError(f"held-out kernels in the training set: {leaked}")
    t0 = time.perf_counter()
    out = Path(out_dir)
    t_build = time.monotonic()
    kernels, skipped = usable_kernels(kernel_texts, factory)
    t_build = time.monotonic() - t_build  # a game per kernel: most of what the evaluation will take
    if not kernels:
        raise ValueError(f"no kernel the reorder game can play on: {skipped}")
    cfg = replace(ppo_config or PPOConfig(), total_steps=total_steps, seed=seed, device=device)
    torch.manual_seed(seed)
    net = init_net if init_net is not None else PolicyNet(net_config)
    pool = partial(
        KernelPool, kernels, max_steps=max_steps, scramble_schedule=scramble_schedule, factory=factory
    )
    envs = make_vector_env([pool] * n_envs, asynchronous=asynchronous)
    if deadline is not None:
        ppo_s = max(0.0, deadline - time.monotonic() - EVAL_RESERVE * t_build - SAVE_RESERVE_S)
        cfg = replace(cfg, time_limit_s=min(cfg.time_limit_s or ppo_s, ppo_s))
    try:
        history = ppo(envs, net, cfg, callback=progress)
    finally:
        envs.close()
    train_s = time.perf_counter() - t0
    final = history[-1] if history else {}
    card: dict[str, Any] = {
        "model": "sass-lsp reorder policy (PPO)",
        "data": [
            {
                "name": name,
                "arch": arch,
                "kernel": kernel,
                "sha256": hashlib.sha256(text.encode()).hexdigest(),
            }
            for name, arch, text, kernel in map(_unpack, kernels)
        ],
        "heldout": list(heldout),
        "skipped": skipped,
        "reward": reward,
        "warm_start": warm_start,
        "game": {"max_steps": max_steps, "scramble_schedule": [list(s) for s in scramble_schedule]},
        "ppo": asdict(cfg),
        "net": asdict(net.cfg),
        "n_params": n_params(net),
        "n_envs": n_envs,
        "steps": int(final.get("global_step", 0)),
        "updates": len(history),
        "wall_s": round(train_s, 2),
        "sps": round(float(final.get("sps", 0.0)), 2),
        "final_metrics": final,
        "torch": torch.__version__,
        "observation": {"W_MAX": ob.W_MAX, "C_MAX": ob.C_MAX},
    }
    card = _json_safe(card)
    # weights first: the evaluation below is slow on many kernels, and a run stopped there keeps them
    save_policy(net, out, meta={k: card[k] for k in ("data", "reward", "steps", "wall_s", "final_metrics")})
    card["checkpoint_mb"] = round((out / WEIGHTS).stat().st_size / 2**20, 3)
    card["eval"] = _json_safe(
        evaluate(net.to("cpu"), kernels, max_steps=max_steps, factory=factory, deadline=deadline)
    )
    write_atomic(out / MODEL_CARD, json.dumps(card, indent=2, allow_nan=False) + "\n")
    return {**card, "checkpoint": str(out), "model_card": str(out / MODEL_CARD), "history": history}
