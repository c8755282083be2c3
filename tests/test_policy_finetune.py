"""GPU fine-tuning (REINFORCE on measured speedups): an update moves the policy with the measured
advantage, episodes time only moved schedules within the budget, and ``sass-lsp finetune`` runs end to end
on the fake GPU backend and writes a loadable checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow  # REINFORCE episodes on the fake GPU: tens of seconds

from paths import TRITON_CORPUS  # noqa: E402

from sass_lsp.cli import main  # noqa: E402
from sass_lsp.cuasm import write_cuasm  # noqa: E402
from sass_lsp.policy.checkpoint import bundled_policy  # noqa: E402
from sass_lsp.policy.finetune import Episode, FinetuneConfig, FinetuneKernel, finetune, rollout, update  # noqa: E402
from sass_lsp.policy.model import PolicyNet, collate, load_policy  # noqa: E402
from sass_lsp.schedule.game import ReorderGame  # noqa: E402
from sass_lsp.schedule.search import Measured, schedule_key  # noqa: E402

POLICY = bundled_policy()


def _mean_logp(net: PolicyNet, episodes: list[Episode]) -> float:
    items = [o for e in episodes for o in e.observations]
    actions = torch.tensor([a for e in episodes for a in e.actions])
    with torch.inference_mode():
        logits, _ = net(collate(items))
    return float(torch.distributions.Categorical(logits=logits).log_prob(actions).mean())


@pytest.mark.parametrize("advantage", [-1.0, 1.0])
def test_update_moves_taken_actions_with_the_advantage(advantage: float) -> None:
    """One REINFORCE step: the sampled moves become likelier after a positive advantage, rarer after a
    negative one (the gradient has the measurement's sign)."""
    text = write_cuasm((TRITON_CORPUS / "triton_add.cubin").read_bytes(), source_name="k")
    net = load_policy(POLICY)
    game = ReorderGame.from_text(text, "sm_90", max_steps=4)
    gen = torch.Generator().manual_seed(0)
    episodes = [Episode("k", *rollout(net, game, gen), 0.0, None, "match", 4) for _ in range(3)]
    before = _mean_logp(net, episodes)
    opt = torch.optim.Adam(net.parameters(), lr=1e-5)
    update(net, opt, [(e, advantage) for e in episodes], FinetuneConfig(ent_coef=0.0))
    after = _mean_logp(net, episodes)
    assert (after > before) if advantage > 0 else (after < before), (before, after)


def test_episodes_measure_moved_schedules_only() -> None:
    text = write_cuasm((TRITON_CORPUS / "triton_add.cubin").read_bytes(), source_name="k")
    calls: list[str] = []

    def measure(candidate: str) -> Measured:
        calls.append(candidate)
        assert candidate != text  # the original (no move, or moves that undo each other) is never timed
        return Measured(schedule_key(candidate), "match", 1.01, seconds=1.0)

    net = load_policy(POLICY)
    cfg = FinetuneConfig(budget_s=1e9, max_episodes=12, episodes_per_update=4, max_moves=4)
    summary = finetune(net, [FinetuneKernel("softmax", text, "sm_90", None, measure)], cfg)
    assert summary["episodes"] == 12 and len(summary["history"]) == 3
    assert summary["measured"] == summary["timed"] == len(calls) > 0
    assert summary["gpu_seconds"] == len(calls)
    assert summary["best_speedup"] == 1.01


def test_budget_is_measured_seconds() -> None:
    text = write_cuasm((TRITON_CORPUS / "triton_add.cubin").read_bytes(), source_name="k")
    net = load_policy(POLICY)
    seen = []

    def measure(candidate: str) -> Measured:
        seen.append(candidate)
        return Measured(schedule_key(candidate), "mismatch", None, seconds=2.5)

    cfg = FinetuneConfig(budget_s=10.0, episodes_per_update=3, max_moves=4)
    summary = finetune(net, [FinetuneKernel("softmax", text, "sm_90", None, measure)], cfg)
    assert len(seen) == 4 and summary["gpu_seconds"] == 10.0  # stops once 10 s are reported
    assert summary["rejected"] == summary["measured"] == 4 and summary["timed"] == 0
    assert summary["best_speedup"] is None


def test_finetune_cli_on_the_fake_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # noqa: ANN001
    monkeypatch.setenv("SASS_LSP_GPU_BACKEND", "fake")  # rejects every real cubin after assembling it
    out = tmp_path / "ft"
    rc = main(["finetune", "--out", str(out), "--max-episodes", "4", "--episodes-per-update", "2",
               "--kernels", "triton_add", "--corpus", str(TRITON_CORPUS)])  # fmt: skip
    assert rc == 0, capsys.readouterr()
    card = json.loads((out / "model_card.json").read_text())
    assert card["gpu_finetune"]["episodes"] == 4 and len(card["gpu_finetune"]["history"]) == 2
    assert card["heldout"]  # the base model card's evaluation split is kept
    load_policy(out)  # a checkpoint the other commands load
    records = [json.loads(x) for x in (out / "finetune_measurements.jsonl").read_text().splitlines()]
    assert records[0]["kind"] == "original"
    assert sum(r["kind"] == "screen" for r in records) == card["gpu_finetune"]["measured"]


def test_finetune_refuses_held_out_kernels(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    rc = main(["finetune", "--out", str(tmp_path / "x"), "--kernels", "gelu_bias"])
    assert rc != 0
    assert "held out" in capsys.readouterr().err


def test_a_move_game_policy_finetunes_on_its_episodes_texts() -> None:
    """A policy of the move game plays the move game: what is measured is its episode's final text, moves of
    any kind (control codes too, which a reordering of the original cannot hold)."""
    from sass_lsp.analysis import check_module
    from sass_lsp.cuasm import parse_cuasm
    from sass_lsp.policy.model import PolicyConfig
    from sass_lsp.schedule.observation import CAND_KINDS

    text = (TRITON_CORPUS / "mm_f16_64x64x32.cuasm").read_text()
    before = [f.code for f in check_module(parse_cuasm(text)[0], "sm_90")]
    calls: list[str] = []

    def measure(candidate: str) -> Measured:
        calls.append(candidate)
        assert [f.code for f in check_module(parse_cuasm(candidate)[0], "sm_90")] == before
        return Measured(schedule_key(candidate), "match", 1.0 + 0.001 * len(calls), seconds=1.0)

    torch.manual_seed(0)
    net = PolicyNet(PolicyConfig(cand_kinds=len(CAND_KINDS)))
    cfg = FinetuneConfig(budget_s=1e9, max_episodes=6, episodes_per_update=3, max_moves=3)
    summary = finetune(net, [FinetuneKernel("mm", text, "sm_90", None, measure)], cfg)
    assert summary["episodes"] == 6 and len(summary["history"]) == 2 and summary["timed"] == len(calls) > 0
    assert text not in calls  # an episode that left the original unchanged is not measured
