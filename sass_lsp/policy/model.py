"""Feature: the reorder policy network. Kernel-agnostic: it reads one observation of
:mod:`sass_lsp.schedule.observation` (a window of instructions, its dependence graph and the candidate moves)
and gives a masked categorical over ``C_MAX + 1`` actions plus a state value.

Shape of the net:

- token embedding = sum of one embedding per categorical column + ``Linear(num)``;
- a pre-LayerNorm transformer encoder over the window; each head gets an additive attention bias learned
  per EDGE_* bit of ``adj`` in both directions (so it sees the dependence graph) and per clamped relative
  distance; padding is masked;
- an action head scoring each candidate row ``(i, j)`` from ``[h_i, h_j, h_i * h_j, emb(clamp(j - i))]``;
- STOP logit and value from a masked mean-pool.

Observations travel *compact* (:func:`compact`: cropped to the window length and the candidate count) and are
padded per batch by :func:`collate`, so a batch of short windows never pays for ``W_MAX``.

Checkpoints are a directory with ``model.safetensors`` (weights) and ``config.json`` (hyper-parameters, the
observation contract they were trained on, training metadata): loading unpickles nothing.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save
from torch import nn

from sass_lsp.files import write_atomic
from sass_lsp.policy.contract import check_moves, move_contract, observation_contract
from sass_lsp.policy.infer import collate as collate_numpy
from sass_lsp.policy.infer import compact
from sass_lsp.schedule import observation as ob

WEIGHTS = "model.safetensors"
CONFIG = "config.json"
N_EDGE_BITS = 5  # EDGE_RAW .. EDGE_ORDER


@dataclass(frozen=True)
class PolicyConfig:
    d_model: int = 128
    n_layers: int = 3
    n_heads: int = 4
    d_ff: int = 256
    d_head_mlp: int = 128  # hidden width of the candidate / STOP / value MLPs
    max_dist: int = 64  # signed move distances and attention distances are clamped to [-max_dist, max_dist]
    token_vocab: tuple[int, ...] = field(default_factory=lambda: tuple(ob.TOKEN_VOCAB))
    n_num: int = ob.N_NUM
    cand_kinds: int = 0  # > 0: a policy of the move game, its rows' kinds (observation.CAND_KINDS) embedded


# ---------------------------------------------------------------------------------------------------------
# Observations: compact storage and batching


def split_batched(obs: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    """A vector env's batched observation (leading env axis) as one compact observation per env."""
    count = len(obs["n"])
    return [compact({k: v[e] for k, v in obs.items()}) for e in range(count)]


def collate(
    items: list[dict[str, np.ndarray]], device: str | torch.device = "cpu"
) -> dict[str, torch.Tensor]:
    """Pad compact observations to the batch's longest window / candidate list; ``n`` holds the lengths."""
    return {k: torch.from_numpy(v).to(device) for k, v in collate_numpy(items).items()}


class EncoderLayer(nn.Module):
    """Pre-LN self-attention + feed-forward; the attention takes an additive [B, H, L, L] bias."""

    def __init__(self, d: int, heads: int, d_ff: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, d_ff), nn.GELU(), nn.Linear(d_ff, d))

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, length, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, length, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        x = x + self.proj(a.transpose(1, 2).reshape(b, length, d))
        return x + self.ff(self.ln2(x))


class PolicyNet(nn.Module):
    def __init__(self, cfg: PolicyConfig | None = None) -> None:
        super().__init__()
        cfg = cfg or PolicyConfig()
        if cfg.d_model % cfg.n_heads:
            raise ValueError("d_model must be a multiple of n_heads")
        self.cfg = cfg
        d, h, hid = cfg.d_model, cfg.n_heads, cfg.d_head_mlp
        # One table for all categorical columns; column c's ids are shifted by the vocab sizes before it.
        vocab = list(cfg.token_vocab)
        self.register_buffer(
            "tok_offset", torch.tensor([0, *np.cumsum(vocab)[:-1].tolist()]), persistent=False
        )
        self.register_buffer("tok_limit", torch.tensor([v - 1 for v in vocab]), persistent=False)
        self.tok_emb = nn.Embedding(sum(vocab), d)
        self.num_proj = nn.Linear(cfg.n_num, d)
        self.in_norm = nn.LayerNorm(d)
        # Attention bias: one value per head for each EDGE bit, "j must stay after i" (i attends to a
        # successor) and the reverse (i attends to a predecessor), plus a clamped-distance table.
        self.edge_fwd = nn.Parameter(torch.zeros(N_EDGE_BITS, h))
        self.edge_bwd = nn.Parameter(torch.zeros(N_EDGE_BITS, h))
        self.dist_bias = nn.Parameter(torch.zeros(2 * cfg.max_dist + 1, h))
        bits = torch.tensor(
            [[(v >> k) & 1 for k in range(N_EDGE_BITS)] for v in range(32)], dtype=torch.float32
        )
        self.register_buffer("edge_bits", bits, persistent=False)
        self.layers = nn.ModuleList(EncoderLayer(d, h, cfg.d_ff) for _ in range(cfg.n_layers))
        self.out_norm = nn.LayerNorm(d)
        # Candidate head: MLP([h_i, h_j, h_i*h_j, e_dist]) with its first layer split by input block, so the
        # h_i / h_j / distance parts are computed once per token (or distance) and gathered, not per row.
        self.move_dist = nn.Embedding(2 * cfg.max_dist + 1, d)
        self.c_src = nn.Linear(d, hid)
        self.c_dst = nn.Linear(d, hid, bias=False)
        self.c_prod = nn.Linear(d, hid, bias=False)
        self.c_dist = nn.Linear(d, hid, bias=False)
        if cfg.cand_kinds:  # the move game's rows: what kind of move, and a stall move's change
            self.c_kind = nn.Embedding(cfg.cand_kinds, hid)
            self.c_param = nn.Linear(1, hid, bias=False)
        self.c_out = nn.Sequential(nn.GELU(), nn.Linear(hid, hid), nn.GELU(), nn.Linear(hid, 1))
        self.stop_head = nn.Sequential(nn.Linear(d, hid), nn.GELU(), nn.Linear(hid, 1))
        self.value_head = nn.Sequential(nn.Linear(d, hid), nn.GELU(), nn.Linear(hid, 1))
        self.apply(_init)
        nn.init.orthogonal_(self.value_head[-1].weight, 1.0)
        # Small output layers: the untrained policy starts near uniform over the legal moves and STOP.
        nn.init.orthogonal_(self.c_out[-1].weight, 0.01)
        nn.init.orthogonal_(self.stop_head[-1].weight, 0.01)

    def _bias(self, adj: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """[B, H, L, L] additive attention bias from the edge bits, distances and key padding."""
        b, length, _ = adj.shape
        md = self.cfg.max_dist
        n_rel = 2 * md + 1
        # Everything in one embedding gather (the fast CPU path): row = code * n_rel + rel, where code packs
        # the bits of adj[i, j] and adj[j, i]; the table is still a sum of per-bit and per-distance terms.
        codes = torch.arange(1024, device=adj.device)
        bits = self.edge_bits
        edge = bits[codes & 31] @ self.edge_fwd + bits[codes >> 5] @ self.edge_bwd  # [1024, H]
        table = (edge[:, None, :] + self.dist_bias[None, :, :]).reshape(1024 * n_rel, -1)
        a = adj.int() & 31
        pos = torch.arange(length, device=adj.device, dtype=torch.int32)
        rel = (pos[None, :] - pos[:, None]).clamp(-md, md) + md
        row = (a | (a.transpose(1, 2) << 5)) * n_rel + rel
        bias = F.embedding(row.long(), table).permute(0, 3, 1, 2)  # [B, H, L, L]
        if bool(valid.all()):
            return bias  # no padding in this batch (always so for one observation): skip the mask
        # Position 0 always counts as a key so that an all-padding row (n = 0) stays finite.
        keys = valid | (pos == 0)[None, :]
        return bias.masked_fill(~keys[:, None, None, :], float("-inf"))

    def encode(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Token states [B, L, D] and the validity mask [B, L]."""
        tok = torch.minimum(batch["tok"].long().clamp(min=0), self.tok_limit) + self.tok_offset
        x = self.tok_emb(tok).sum(dim=2) + self.num_proj(batch["num"].float())
        x = self.in_norm(x)
        length = x.shape[1]
        valid = torch.arange(length, device=x.device)[None, :] < batch["n"][:, None]
        bias = self._bias(batch["adj"], valid)
        for layer in self.layers:
            x = layer(x, bias)
        return self.out_norm(x), valid

    def forward(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked action logits [B, C_MAX + 1] (illegal = -inf, STOP = index C_MAX) and values [B]."""
        h, valid = self.encode(batch)
        b, length, _ = h.shape
        pooled = (h * valid[..., None]).sum(1) / valid.sum(1, keepdim=True).clamp(min=1)
        value = self.value_head(pooled).squeeze(-1)
        stop = self.stop_head(pooled).squeeze(-1)

        # Rows of the flattened [B * L, .] token tensors (index_select is much faster than gather on CPU).
        cand = (
            batch["cand"].long().clamp(0, length - 1)
            + (torch.arange(b, device=h.device) * length)[:, None, None]
        )
        src, dst = cand[..., 0].reshape(-1), cand[..., 1].reshape(-1)
        n_rows = cand.shape[1]

        def gather(t: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
            return t.reshape(b * length, -1).index_select(0, idx).view(b, n_rows, t.shape[-1])

        h_i, h_j = gather(h, src), gather(h, dst)
        dist = (batch["cand"][..., 1].long() - batch["cand"][..., 0].long()).clamp(
            -self.cfg.max_dist, self.cfg.max_dist
        ) + self.cfg.max_dist
        z = (
            gather(self.c_src(h), src)
            + gather(self.c_dst(h), dst)
            + self.c_prod(h_i * h_j)
            + self.c_dist(self.move_dist.weight)[dist]
        )
        if self.cfg.cand_kinds:
            z = (
                z
                + self.c_kind(batch["cand_kind"].long())
                + self.c_param(batch["cand_param"].float()[..., None])
            )
        scores = self.c_out(z).squeeze(-1)  # [B, C]
        logits = torch.full((b, ob.C_MAX + 1), float("-inf"), dtype=h.dtype, device=h.device)
        n_cand = min(scores.shape[1], ob.C_MAX)
        logits[:, :n_cand] = scores[:, :n_cand].masked_fill(~batch["cand_mask"][:, :n_cand], float("-inf"))
        logits[:, ob.STOP] = stop
        return logits, value

    def dist(self, batch: dict[str, torch.Tensor]) -> tuple[torch.distributions.Categorical, torch.Tensor]:
        logits, value = self(batch)
        return torch.distributions.Categorical(logits=logits, validate_args=False), value


def _init(m: nn.Module) -> None:
    if isinstance(m, nn.Linear):
        nn.init.orthogonal_(m.weight, np.sqrt(2))
        if m.bias is not None:
            nn.init.zeros_(m.bias)
    elif isinstance(m, nn.Embedding):
        nn.init.normal_(m.weight, std=0.02)


def n_params(net: nn.Module) -> int:
    return sum(p.numel() for p in net.parameters())


# ---------------------------------------------------------------------------------------------------------
# Checkpoints: safetensors + JSON, no pickle


def save_policy(net: PolicyNet, path: str | Path, meta: dict[str, Any] | None = None) -> Path:
    """Write ``path/model.safetensors`` and ``path/config.json`` (atomically); returns the directory."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    weights = {k: v.detach().to("cpu").contiguous() for k, v in net.state_dict().items()}
    write_atomic(path / WEIGHTS, st_save(weights))
    config = {
        "format": "sass-lsp-reorder-policy/1",
        "arch": asdict(net.cfg),
        "observation": observation_contract(),
        "moves": move_contract(net.cfg.cand_kinds),
        "n_params": n_params(net),
        "meta": meta or {},
    }
    write_atomic(path / CONFIG, json.dumps(config, indent=2, sort_keys=True) + "\n")
    return path


def load_config(path: str | Path) -> dict[str, Any]:
    return json.loads((Path(path) / CONFIG).read_text())


def load_policy(path: str | Path) -> PolicyNet:
    """Load a checkpoint written by :func:`save_policy`, in eval mode on CPU.

    Raises ``ValueError`` when the checkpoint was trained against a different observation contract.
    """
    path = Path(path)
    config = load_config(path)
    if config.get("observation") != observation_contract():
        raise ValueError(f"{path}: checkpoint was trained for another observation contract (observation.py)")
    check_moves(config, path)
    arch = dict(config["arch"])
    arch["token_vocab"] = tuple(arch["token_vocab"])
    net = PolicyNet(PolicyConfig(**arch))
    net.load_state_dict(st_load((path / WEIGHTS).read_bytes()))
    return net.eval()
