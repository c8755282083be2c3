"""``optimize --moves``: which kinds of move the search makes, on a real corpus kernel with a stand-in for the
GPU's measurement (the GPU path itself: benchmarks/control_hardware.py and the GPU tests)."""

from __future__ import annotations

import re
import zlib

import pytest

from sass_lsp import app
from sass_lsp.gpu.corpus import load_kernel
from sass_lsp.gpu.optimize import move_kinds
from sass_lsp.schedule.search import Measured, schedule_key
from tests.paths import TRITON_CORPUS

pytest.importorskip("sass_lsp.schedule.game")  # gymnasium
CTRL = re.compile(r"\[B[-0-5]{6}:R[-0-5]:W[-0-5]:[Y-]:S\d\d\]")


def original(name: str = "triton_add") -> app.Original:
    cubin, spec = load_kernel(name)
    text = (TRITON_CORPUS / f"{name}.cuasm").read_text()
    return app.Original(text, "sm_90", cubin, spec, None)


def stand_in(text: str) -> Measured:
    """A deterministic 'speedup' per schedule (a hash), one GPU second each."""
    s = 0.98 + (zlib.crc32(text.encode()) % 400) / 10_000
    return Measured(schedule_key(text), "match", s, s - 0.001, s + 0.001, seconds=1.0)


def strip_control(text: str) -> list[str]:
    return [CTRL.sub("", ln).replace(".reuse", "") for ln in text.splitlines()]


def test_control_moves_only_change_control_fields():
    orig = original()
    search = app.policy_search(orig, app.SearchChoice(moves=("control",)), net=None)
    log = search(stand_in, 12.0)
    assert len(log.trials) == 12 and {t.candidate.source for t in log.trials} == {"control"}
    for t in log.trials:
        assert t.candidate.text != orig.text
        assert strip_control(t.candidate.text) == strip_control(orig.text)  # order and operands kept


def test_both_kinds_reorder_first_then_walk_control_codes_from_the_best():
    orig = original()
    net = app.load_policy(torch_net=True)
    log = app.policy_search(orig, app.SearchChoice(prior=False), net=net)(stand_in, 16.0)
    sources = [t.candidate.source for t in log.trials]
    half = sources.index(next(s for s in sources if "control" in s))
    assert half >= 1 and all("control" not in s for s in sources[:half])
    assert {tuple(move_kinds(s)) for s in sources[half:]} <= {("control",), ("reorder", "control")}
    assert log.spent <= 16.0


def test_a_schedules_move_kinds_follow_the_searches_that_made_it():
    assert move_kinds("policy") == ["reorder"] and move_kinds("control") == ["control"]
    assert move_kinds("policy+control") == ["reorder", "control"]  # the control walk from the policy's best
    assert move_kinds("rename+reorder+control") == ["rename", "reorder", "control"]
    assert move_kinds("cross-block+control") == ["cross-block", "control"]
    assert move_kinds("rename") == ["rename"]


def test_unknown_move_kinds_are_refused():
    with pytest.raises(ValueError, match="moves must be some of reorder, control, rename"):
        app.policy_search(original(), app.SearchChoice(moves=("swap",)), net=None)


def test_the_performance_model_as_the_games_reward():
    """``train --reward model``: each state's cost is its predicted time, so a move's reward is the share of
    time the performance model predicts it saves."""
    from sass_lsp.perf.predict import Predictor, load_model
    from sass_lsp.policy.train import perf_game_from_text

    text = (TRITON_CORPUS / "mm_f16_64x64x32.cuasm").read_text()
    game = perf_game_from_text(text, "sm_90", max_steps=4)
    game.reset()
    predictor = Predictor(game.k0, load_model())
    assert game.cost_original == pytest.approx(1 / predictor.predict_orders([{}])[0].speedup)
    before = game.cost
    _obs, reward, *_ = game.step(0)
    orders = {b: tuple(o) for b, o in game.orders().items() if list(o) != sorted(o)}
    after = 1 / predictor.predict_orders([orders])[0].speedup
    assert game.cost == pytest.approx(after)
    assert reward == pytest.approx((before - after) / game.cost_original)
