"""The reorder policy's forward pass in numpy, for serving: the editor and ``suggest`` rank with it without
importing torch (about 190 MB of a server's memory, and a second or more of import that holds the
interpreter). Same weights (the checkpoint's ``model.safetensors``), same arithmetic as
:class:`sass_lsp.policy.model.PolicyNet` in float32; ``tests/test_policy_infer.py`` checks the logits and
the suggestions against torch's. Training and the GPU searches' sampling use the torch network.

Architecture Invariant: no torch here.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

from sass_lsp.perf.predict import gelu
from sass_lsp.schedule import observation as ob

WEIGHTS = "model.safetensors"
CONFIG = "config.json"
N_EDGE_BITS = 5
LN_EPS = 1e-5  # torch.nn.LayerNorm's default


def compact(obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One observation cropped to its window length ``n`` and its last real candidate row (what
    :func:`collate` pads; a full observation holds a 512x512 ``adj``)."""
    n = int(np.asarray(obs["n"]).reshape(-1)[0])
    mask = np.asarray(obs["cand_mask"], dtype=bool)
    real = np.flatnonzero(mask)
    nc = int(real[-1]) + 1 if real.size else 0
    out = {
        "tok": np.asarray(obs["tok"][:n], dtype=np.int16),
        "num": np.asarray(obs["num"][:n], dtype=np.float32),
        "adj": np.ascontiguousarray(obs["adj"][:n, :n], dtype=np.uint8),
        "cand": np.asarray(obs["cand"][:nc], dtype=np.int16),
        "cand_mask": mask[:nc].copy(),
    }
    if "cand_kind" in obs:  # the move game's
        out["cand_kind"] = np.asarray(obs["cand_kind"][:nc], dtype=np.int16)
        out["cand_param"] = np.asarray(obs["cand_param"][:nc], dtype=np.float32)
    return out


def collate(items: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Pad compact observations to the batch's longest window / candidate list; ``n`` holds the lengths."""
    b = len(items)
    lens = [len(it["tok"]) for it in items]
    length = max(1, max(lens))
    n_cand = max(0, max(len(it["cand"]) for it in items))
    out = {
        "tok": np.zeros((b, length, len(ob.TOKEN_VOCAB)), dtype=np.int64),
        "num": np.zeros((b, length, ob.N_NUM), dtype=np.float32),
        "adj": np.zeros((b, length, length), dtype=np.uint8),
        "cand": np.zeros((b, n_cand, 2), dtype=np.int64),
        "cand_mask": np.zeros((b, n_cand), dtype=bool),
        "n": np.array(lens, dtype=np.int64),
    }
    moves = "cand_kind" in items[0]
    if moves:
        out["cand_kind"] = np.zeros((b, n_cand), dtype=np.int64)
        out["cand_param"] = np.zeros((b, n_cand), dtype=np.float32)
    for k, it in enumerate(items):
        n, c = lens[k], len(it["cand"])
        out["tok"][k, :n] = it["tok"]
        out["num"][k, :n] = it["num"]
        out["adj"][k, :n, :n] = it["adj"]
        out["cand"][k, :c] = it["cand"]
        out["cand_mask"][k, :c] = it["cand_mask"]
        if moves:
            out["cand_kind"][k, :c] = it["cand_kind"]
            out["cand_param"][k, :c] = it["cand_param"]
    return out


def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + np.float32(LN_EPS)) * w + b


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


class NumpyPolicy:
    """The policy network of a checkpoint directory, evaluated with numpy: ``net(collate([...]))`` gives
    (logits [B, C_MAX + 1] with illegal moves at -inf and STOP at index C_MAX, values [B])."""

    def __init__(self, weights: dict[str, np.ndarray], arch: dict) -> None:
        self.w = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in weights.items()}
        # Linear weights transposed once ([in, out], contiguous): x @ W.T on a view is far slower
        self.wt = {
            k: np.ascontiguousarray(v.T) for k, v in self.w.items() if k.endswith("weight") and v.ndim == 2
        }
        self.heads = int(arch["n_heads"])
        self.n_layers = int(arch["n_layers"])
        self.max_dist = int(arch["max_dist"])
        vocab = [int(v) for v in arch["token_vocab"]]
        self.tok_offset = np.array([0, *np.cumsum(vocab)[:-1].tolist()], dtype=np.int64)
        self.tok_limit = np.array([v - 1 for v in vocab], dtype=np.int64)
        bits = np.array([[(v >> k) & 1 for k in range(N_EDGE_BITS)] for v in range(32)], dtype=np.float32)
        # PolicyNet._bias's table: row = (adj[i,j] bits | adj[j,i] bits << 5) * n_rel + clamped distance
        codes = np.arange(1024)
        edge = bits[codes & 31] @ self.w["edge_fwd"] + bits[codes >> 5] @ self.w["edge_bwd"]  # [1024, H]
        n_rel = 2 * self.max_dist + 1
        self.bias_table = (edge[:, None, :] + self.w["dist_bias"][None, :, :]).reshape(1024 * n_rel, -1)
        self.c_dist_rows = self.linear("c_dist", self.w["move_dist.weight"])  # [n_rel, hid]
        self.move_game = "c_kind.weight" in self.w  # a policy of the move game: its rows carry their kinds

    @classmethod
    def load(cls, path: str | Path) -> NumpyPolicy:
        """A checkpoint written by :func:`sass_lsp.policy.model.save_policy`; ``ValueError`` when it was
        trained against another observation contract."""
        from sass_lsp.policy.contract import check_moves, observation_contract

        path = Path(path)
        config = json.loads((path / CONFIG).read_text())
        if config.get("observation") != observation_contract():
            raise ValueError(f"{path}: checkpoint trained for another observation contract (observation.py)")
        check_moves(config, path)
        return cls(load_file(str(path / WEIGHTS)), config["arch"])

    def linear(self, name: str, x: np.ndarray) -> np.ndarray:
        w = self.wt[f"{name}.weight"]
        y = (x.reshape(-1, x.shape[-1]) @ w).reshape(*x.shape[:-1], w.shape[1])  # one 2-D product
        bias = self.w.get(f"{name}.bias")
        return y if bias is None else y + bias

    def _bias(self, adj: np.ndarray, valid: np.ndarray) -> np.ndarray:
        b, length, _ = adj.shape
        md = self.max_dist
        a = adj.astype(np.int64) & 31
        pos = np.arange(length)
        rel = np.clip(pos[None, :] - pos[:, None], -md, md) + md
        row = (a | (a.transpose(0, 2, 1) << 5)) * (2 * md + 1) + rel
        bias = self.bias_table[row].transpose(0, 3, 1, 2)  # [B, H, L, L]
        if valid.all():
            return bias
        keys = valid | (pos == 0)[None, :]
        return np.where(keys[:, None, None, :], bias, np.float32(-np.inf))

    def _layer(self, i: int, x: np.ndarray, bias: np.ndarray) -> np.ndarray:
        p = f"layers.{i}"
        b, length, d = x.shape
        h, dh = self.heads, d // self.heads
        qkv = self.linear(f"{p}.qkv", layer_norm(x, self.w[f"{p}.ln1.weight"], self.w[f"{p}.ln1.bias"]))
        q, k, v = qkv.reshape(b, length, 3, h, dh).transpose(2, 0, 3, 1, 4)
        att = softmax(q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(dh)) + bias)
        a = (att @ v).transpose(0, 2, 1, 3).reshape(b, length, d)
        x = x + self.linear(f"{p}.proj", a)
        ff = gelu(self.linear(f"{p}.ff.0", layer_norm(x, self.w[f"{p}.ln2.weight"], self.w[f"{p}.ln2.bias"])))
        return x + self.linear(f"{p}.ff.2", ff)

    def encode(self, batch: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        tok = np.minimum(np.maximum(batch["tok"].astype(np.int64), 0), self.tok_limit) + self.tok_offset
        x = self.w["tok_emb.weight"][tok].sum(axis=2)
        x = x + self.linear("num_proj", batch["num"].astype(np.float32))
        x = layer_norm(x, self.w["in_norm.weight"], self.w["in_norm.bias"])
        length = x.shape[1]
        valid = np.arange(length)[None, :] < batch["n"][:, None]
        bias = self._bias(batch["adj"], valid)
        for i in range(self.n_layers):
            x = self._layer(i, x, bias)
        return layer_norm(x, self.w["out_norm.weight"], self.w["out_norm.bias"]), valid

    def __call__(self, batch: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        h, valid = self.encode(batch)
        b, length, _ = h.shape
        pooled = (h * valid[..., None]).sum(1) / np.maximum(valid.sum(1, keepdims=True), 1)
        value = self.linear("value_head.2", gelu(self.linear("value_head.0", pooled)))[:, 0]
        stop = self.linear("stop_head.2", gelu(self.linear("stop_head.0", pooled)))[:, 0]
        cand = np.clip(batch["cand"].astype(np.int64), 0, length - 1)
        rows = np.arange(b)[:, None]
        src, dst = cand[..., 0], cand[..., 1]
        h_i, h_j = h[rows, src], h[rows, dst]
        dist = np.clip(batch["cand"][..., 1] - batch["cand"][..., 0], -self.max_dist, self.max_dist)
        z = (
            self.linear("c_src", h)[rows, src]
            + self.linear("c_dst", h)[rows, dst]
            + self.linear("c_prod", h_i * h_j)
            + self.c_dist_rows[dist + self.max_dist]
        )
        if self.move_game:
            z = z + self.w["c_kind.weight"][batch["cand_kind"]]
            z = z + batch["cand_param"][..., None].astype(np.float32) * self.w["c_param.weight"][:, 0]
        scores = self.linear("c_out.3", gelu(self.linear("c_out.1", gelu(z))))[..., 0]  # [B, C]
        logits = np.full((b, ob.C_MAX + 1), -np.inf, dtype=np.float32)
        n_cand = min(scores.shape[1], ob.C_MAX)
        logits[:, :n_cand] = np.where(batch["cand_mask"][:, :n_cand], scores[:, :n_cand], -np.inf)
        logits[:, ob.STOP] = stop
        return logits, value
