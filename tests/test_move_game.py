"""The move game on real sm_90 corpus kernels: every kind of move as one action space, its phases, its
observation, and the policy that plays it (its network, its numpy serving, the search that draws from it)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from paths import TRITON_CORPUS

from sass_lsp.analysis import check_module
from sass_lsp.cuasm import assemble_cuasm, parse_cuasm
from sass_lsp.schedule import control_moves, crossblock_moves, pipeline_moves, rename_moves
from sass_lsp.schedule import observation as ob
from sass_lsp.schedule.move_game import MOVE_ERRORS, OPTIMIZE_KIND, MoveGame, phase_of
from sass_lsp.schedule.search import Measured

# mm_f16_64x64x32: reorders and control codes in its loop; fp8_blockscale_gemm: pipeline moves too;
# flash_attn_fwd: cross-block moves in its window
KERNELS = ("mm_f16_64x64x32", "fp8_blockscale_gemm", "flash_attn_fwd")


def original(name: str) -> str:
    return (TRITON_CORPUS / f"{name}.cuasm").read_text()


def findings(text: str) -> list[str]:
    module, diags = parse_cuasm(text)
    return sorted(
        [d.message for d in diags if d.severity == "error"]
        + [f.code for f in check_module(module, "sm_90") if f.severity in ("error", "warning")]
    )


def kind_of(game: MoveGame, row: int) -> str:
    return ob.CAND_KINDS[game.candidates()[row].kind]


def pick(game: MoveGame, rng: random.Random, phase: int | None = None) -> int:
    """A kind uniformly among the row kinds offered (of ``phase`` where it has some), then one of its rows."""
    rows = game.candidates()
    kinds = {r.kind for r in rows}
    kinds = {k for k in kinds if phase_of(OPTIMIZE_KIND[ob.CAND_KINDS[k]]) == phase} or kinds
    kind = rng.choice(sorted(kinds))
    return rng.choice([i for i, r in enumerate(rows) if r.kind == kind])


def test_row_kinds_are_the_move_modules_kinds() -> None:
    kinds = (
        "reorder",
        *control_moves.KINDS,
        *rename_moves.KINDS,
        *crossblock_moves.KINDS,
        *pipeline_moves.KINDS,
    )
    assert kinds == ob.CAND_KINDS


@pytest.mark.parametrize("name", KERNELS)
def test_random_episodes_stay_clean_keep_the_phase_order_and_reward_the_cost(name: str) -> None:
    text = original(name)
    before = findings(text)
    game = MoveGame(text, "sm_90", max_steps=6)
    rng = random.Random(7)
    seen: set[str] = set()
    for episode in range(3):  # each episode's first move from another phase where it has one
        obs, info = game.reset(seed=episode)
        assert info["moves"] == [] and game.text == text
        done = False
        while not done:
            rows = game.candidates()
            if not rows:
                break
            row = pick(game, rng, episode if not game.moves else None)
            kind = kind_of(game, row)
            cost = game.cost
            predicted = game.peek(row)
            obs, reward, term, trunc, info = game.step(row)
            done = term or trunc
            if term:  # a move its own check refused: nothing changed
                assert game.cost == cost
                continue
            seen.add(kind)
            assert game.cost == predicted
            assert reward == pytest.approx((cost - game.cost) / game.cost_original)
            phases = [phase_of(k) for k in info["kinds"]]
            assert phases == sorted(phases)  # structural, then reorders, then control codes
            assert findings(game.text) == before
        assemble_cuasm(game.text, source_name=name)  # nvdisasm reads every word back
    assert "reorder" in seen and seen & set(control_moves.KINDS)


def test_rows_point_at_the_window_and_close_earlier_phases() -> None:
    game = MoveGame(original("fp8_blockscale_gemm"), "sm_90")
    obs, _ = game.reset(seed=0)
    rows = game.candidates()
    kinds = {ob.CAND_KINDS[r.kind] for r in rows}
    assert {"reorder", "load", "stall"} <= kinds  # every phase's moves on offer at the start
    n = int(obs["n"][0])
    assert all(0 <= i < n and 0 <= j < n for i, j in obs["cand"][: len(rows)])
    assert list(obs["cand_kind"][: len(rows)]) == [r.kind for r in rows]
    assert not obs["cand_mask"][len(rows) :].any()
    stall = next(i for i, r in enumerate(rows) if ob.CAND_KINDS[r.kind] == "stall")
    assert obs["cand_param"][stall] != 0  # a stall move says by how much

    def first(kind: str) -> int:
        return next(i for i, r in enumerate(game.candidates()) if ob.CAND_KINDS[r.kind] == kind)

    start = game.snapshot()
    game.step(first("reorder"))
    reordered = game.text
    assert {"reorder", "load", "stall"} <= {ob.CAND_KINDS[r.kind] for r in game.candidates()}
    # a structural move after reorders is made on the text they reorder: they are dropped
    game.step(first("load"))
    piped = game.text
    assert game.kinds_made == ("pipeline",) and piped != reordered
    game.restore(start)
    assert game.after(first("load")).text == piped  # the same move made from the start
    game.step(first("reorder"))
    game.step(first("yield_on"))  # a control move closes the earlier phases
    assert {ob.CAND_KINDS[r.kind] for r in game.candidates()} <= set(control_moves.KINDS)
    assert game.kinds_made == ("reorder", "control")


def test_kinds_restrict_what_is_offered() -> None:
    game = MoveGame(original("fp8_blockscale_gemm"), "sm_90", kinds=("pipeline", "control"))
    kinds = {ob.CAND_KINDS[r.kind] for r in game.candidates()}
    assert "load" in kinds and "reorder" not in kinds and kinds - {"load"} <= set(control_moves.KINDS)
    with pytest.raises(ValueError, match="kinds must be"):
        MoveGame(original("fp8_blockscale_gemm"), "sm_90", kinds=("unroll",))


def test_a_refused_move_ends_the_episode_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    game = MoveGame(original("mm_f16_64x64x32"), "sm_90")
    game.reset(seed=0)
    row = next(i for i, r in enumerate(game.candidates()) if ob.CAND_KINDS[r.kind] != "reorder")

    def refuse(*_args: object) -> str:
        raise control_moves.ControlMoveError("no")

    monkeypatch.setattr(control_moves, "apply", refuse)
    assert issubclass(control_moves.ControlMoveError, MOVE_ERRORS)
    cost = game.cost
    _obs, reward, term, _trunc, _info = game.step(row)
    assert term and reward == 0.0 and game.cost == cost and game.moves == []


# ---------------------------------------------------------------------------------------------- the policy

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def move_net():  # noqa: ANN201
    from sass_lsp.policy.model import PolicyConfig, PolicyNet

    torch.manual_seed(0)
    return PolicyNet(PolicyConfig(cand_kinds=len(ob.CAND_KINDS))).eval()


def test_move_policy_scores_every_row_and_numpy_serves_it(move_net, tmp_path) -> None:  # noqa: ANN001
    from sass_lsp.policy.infer import NumpyPolicy
    from sass_lsp.policy.infer import collate as collate_np
    from sass_lsp.policy.model import collate, compact, load_policy, save_policy

    game = MoveGame(original("fp8_blockscale_gemm"), "sm_90")
    obs, _ = game.reset(seed=0)
    n = len(game.candidates())
    with torch.no_grad():  # make the kind embedding matter, so numpy must read it too
        move_net.c_kind.weight.normal_(0, 1.0)
        move_net.c_param.weight.normal_(0, 1.0)
    item = compact(obs)
    with torch.inference_mode():
        logits, _ = move_net(collate([item]))
    assert torch.isfinite(logits[0, :n]).all() and torch.isinf(logits[0, n : ob.C_MAX]).all()
    path = save_policy(move_net, tmp_path / "moves")
    got, _ = NumpyPolicy.load(path)(collate_np([item]))
    np.testing.assert_allclose(got[0, :n], logits[0, :n].numpy(), atol=5e-5)
    with torch.inference_mode():
        back, _ = load_policy(path)(collate([item]))
    assert torch.equal(back, logits)
    # a checkpoint of other move kinds is refused, not misread
    config = json.loads((path / "config.json").read_text())
    config["moves"] = config["moves"][:-1]
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="other move kinds"):
        load_policy(path)
    with pytest.raises(ValueError, match="other move kinds"):
        NumpyPolicy.load(path)


def test_the_reorder_policy_is_unchanged() -> None:
    from sass_lsp.policy.checkpoint import bundled_policy
    from sass_lsp.policy.model import load_policy

    net = load_policy(bundled_policy())
    assert net.cfg.cand_kinds == 0 and not hasattr(net, "c_kind")


def test_policy_moves_walk_proposes_clean_schedules_of_every_phase(move_net) -> None:  # noqa: ANN001
    from sass_lsp.app.optimize import MOVE_KINDS
    from sass_lsp.policy.candidates import move_policy_walk

    text = original("fp8_blockscale_gemm")
    before = findings(text)
    walk = move_policy_walk(text, "sm_90", net=move_net, kinds=MOVE_KINDS, seed=3)
    sources: list[str] = []

    def measure(candidate: str) -> Measured:
        assert findings(candidate) == before
        return Measured("", "match", 1.0 + 0.001 * candidate.count("S01"), seconds=1.0)

    log = walk(measure, 24.0, on_trial=lambda t: sources.append(t.candidate.source))
    assert len(log.trials) == len(sources) >= 20
    kinds = [s.split("+") for s in sources]
    made = {k for ks in kinds for k in ks}
    assert {"reorder", "control"} <= made <= set(MOVE_KINDS) and made & {"pipeline", "rename", "cross-block"}
    # the other kinds' walk first, then control codes from the schedule it measured surest faster
    controls = ["control" in ks for ks in kinds]
    assert controls == sorted(controls) and 0 < sum(controls) < len(controls)
    with pytest.raises(ValueError, match="a policy of the move game"):
        from sass_lsp.policy.model import PolicyNet

        move_policy_walk(text, "sm_90", net=PolicyNet(), kinds=MOVE_KINDS)


def test_policy_moves_walk_with_every_draw_uniform_never_asks_the_policy(move_net, monkeypatch) -> None:  # noqa: ANN001
    """``--uniform-share 1`` (reorder_eval's ``policy_moves_uniform``): the same walk, no move from the
    net."""
    from sass_lsp.app.optimize import MOVE_KINDS
    from sass_lsp.policy import candidates

    def refuse(*_: object, **__: object) -> list[float]:
        raise AssertionError("a uniform draw asked the policy")

    monkeypatch.setattr(candidates, "move_weights", refuse)
    text = original("mm_f16_64x64x32")
    walk = candidates.move_policy_walk(
        text, "sm_90", net=move_net, kinds=MOVE_KINDS, seed=5, uniform_share=1.0
    )
    log = walk(lambda c: Measured("", "match", 1.0, seconds=1.0), 10.0)
    assert len(log.trials) >= 8


def test_each_search_refuses_the_other_kind_of_policy(move_net, tmp_path) -> None:  # noqa: ANN001
    from sass_lsp import app
    from sass_lsp.gpu.spec import LaunchSpec
    from sass_lsp.policy.model import save_policy

    path = save_policy(move_net, tmp_path / "moves")
    with pytest.raises(app.PolicyUnavailable, match="a policy of the move game"):
        app.load_policy(path)  # what suggest and the editor load
    text = original("mm_f16_64x64x32")
    spec = LaunchSpec(kernel="k", grid=(1, 1, 1), block=(128, 1, 1), params=())
    orig = app.Original(text, "sm_90", b"", spec)
    with pytest.raises(ValueError, match="draws the policy_moves search, not policy_surrogate"):
        app.policy_search(orig, app.SearchChoice(), move_net)
