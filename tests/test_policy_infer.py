"""The policy's numpy forward pass (what the editor and ``suggest`` run, without torch) against the torch
network it is trained as: the same logits to float32 rounding, the same suggestions."""

from __future__ import annotations

import numpy as np
import pytest
from paths import TRITON_CORPUS

torch = pytest.importorskip("torch")
pytest.importorskip("sass_lsp.schedule.game")  # gymnasium

from sass_lsp.policy.checkpoint import bundled_policy  # noqa: E402
from sass_lsp.policy.infer import NumpyPolicy, compact  # noqa: E402
from sass_lsp.policy.model import PolicyConfig, PolicyNet, load_policy, save_policy  # noqa: E402
from sass_lsp.policy.suggest import logits_of, suggest  # noqa: E402
from sass_lsp.schedule.game import ReorderGame  # noqa: E402

KERNELS = ["mm_f16_64x64x32", "triton_matmul", "gelu_bias", "flash_attn_fwd", "triton_add"]


def observations(name: str) -> list[dict]:
    """The start state and two successors (a batch of unequal windows after padding is the same shape)."""
    game = ReorderGame.from_text((TRITON_CORPUS / f"{name}.cuasm").read_text(), "sm_90", max_steps=4)
    obs, _ = game.reset()
    out = [compact(obs)]
    for row in (0, 1):
        nxt = game.clone()
        out.append(compact(nxt.step(row)[0]))
    return out


@pytest.mark.parametrize("trained", [True, False], ids=["reorder-v2", "untrained"])
def test_logits_match_torch(trained: bool, tmp_path) -> None:
    if trained:
        path = bundled_policy()
    else:
        torch.manual_seed(3)
        path = save_policy(PolicyNet(PolicyConfig()), tmp_path / "untrained")
    torch_net, numpy_net = load_policy(path), NumpyPolicy.load(path)
    for name in KERNELS:
        items = observations(name)
        for batch in (items[:1], items):  # one observation; a padded batch
            want, got = logits_of(torch_net, batch), logits_of(numpy_net, batch)
            assert np.array_equal(np.isfinite(want), np.isfinite(got)), name
            finite = np.isfinite(want)
            assert np.abs(want[finite] - got[finite]).max() < 1e-4, name
            assert (want.argmax(1) == got.argmax(1)).all(), name


def test_suggestions_match_torch() -> None:
    from sass_lsp.perf.predict import load_model

    torch_net, numpy_net = load_policy(bundled_policy()), NumpyPolicy.load(bundled_policy())
    perf = load_model()
    for name, rank in (("mm_f16_64x64x32", perf), ("triton_matmul", perf), ("gelu_bias", None)):
        text = (TRITON_CORPUS / f"{name}.cuasm").read_text()
        want = suggest(text, "sm_90", net=torch_net, time_budget_s=None, perf=rank)
        got = suggest(text, "sm_90", net=numpy_net, time_budget_s=None, perf=rank)
        assert [s.edits for s in got] == [s.edits for s in want] and want, name


def test_a_checkpoint_for_another_observation_contract_is_refused(tmp_path) -> None:
    import json
    import shutil

    path = tmp_path / "other"
    shutil.copytree(bundled_policy(), path)
    config = json.loads((path / "config.json").read_text())
    config["observation"]["W_MAX"] += 1
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="another observation contract"):
        NumpyPolicy.load(path)
