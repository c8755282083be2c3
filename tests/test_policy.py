"""The reorder policy: network shapes and masking, checkpoints, PPO (learning signal, determinism), training
on the real corpus, and suggestions whose edits keep the kernel hazard-free."""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
pytest.importorskip("gymnasium")
pytest.importorskip("safetensors")

from paths import TRITON_CORPUS  # noqa: E402
from policy_toy import ToyReorder  # noqa: E402

from sass_lsp.policy.checkpoint import bundled_policy  # noqa: E402
from sass_lsp.policy.model import (  # noqa: E402
    CONFIG,
    WEIGHTS,
    PolicyConfig,
    PolicyNet,
    collate,
    compact,
    load_policy,
    save_policy,
)
from sass_lsp.policy.ppo import PPOConfig, make_vector_env, ppo  # noqa: E402
from sass_lsp.policy.suggest import suggest, to_json  # noqa: E402
from sass_lsp.policy.train import evaluate, train  # noqa: E402
from sass_lsp.schedule import observation as ob  # noqa: E402

SMALL = PolicyConfig(d_model=32, n_layers=2, n_heads=4, d_ff=64, d_head_mlp=32)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One torch thread: the figures stay reproducible and other processes on a small machine don't turn
    OpenMP's spinning threads into minutes."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def corpus() -> list[tuple[str, str, str]]:
    """The eight kernels of tools/make_triton_corpus.py (the compute-bound ones are held out of training)."""
    from sass_lsp.cli_policy import COMPUTE_HELDOUT

    paths = [p for p in sorted(TRITON_CORPUS.glob("*.cuasm")) if p.stem not in COMPUTE_HELDOUT]
    return [(p.stem, "sm_90", p.read_text()) for p in paths]


def random_obs(rng: np.random.Generator, n: int, n_cand: int, legal: float = 0.5) -> dict[str, np.ndarray]:
    obs = ToyReorder().observation_space.sample()  # right shapes and dtypes; fill only the first n rows
    obs = {k: np.zeros_like(v) for k, v in obs.items()}
    for c, v in enumerate(ob.TOKEN_VOCAB):
        obs["tok"][:n, c] = rng.integers(1, v, n)
    obs["num"][:n] = rng.random((n, ob.N_NUM), dtype=np.float32)
    upper = np.triu(rng.random((n, n)) < 0.1, 1)
    obs["adj"][:n, :n] = upper * rng.integers(1, 32, (n, n))
    obs["cand"][:n_cand] = rng.integers(0, n, (n_cand, 2))
    obs["cand_mask"][:n_cand] = rng.random(n_cand) < legal
    obs["n"][0] = n
    return obs


# --------------------------------------------------------------------------------------------- model


def test_forward_shapes_masking_and_padding():
    torch.manual_seed(0)
    net = PolicyNet().eval()
    rng = np.random.default_rng(0)
    items = [random_obs(rng, 7, 20), random_obs(rng, 40, 300), random_obs(rng, 1, 0)]
    batch = collate([compact(o) for o in items])
    with torch.no_grad():
        logits, value = net(batch)
    assert logits.shape == (3, ob.C_MAX + 1) and value.shape == (3,)
    probs = torch.softmax(logits, dim=1)
    for k, o in enumerate(items):
        legal = torch.zeros(ob.C_MAX + 1, dtype=torch.bool)
        legal[: ob.C_MAX] = torch.from_numpy(o["cand_mask"].astype(bool))
        legal[ob.STOP] = True
        assert torch.all(probs[k][~legal] == 0), "an illegal candidate got probability"
        assert torch.all(probs[k][legal] > 0)
    assert probs[2, ob.STOP] == 1.0  # no candidates: STOP is the only action
    # Padding is invisible: each observation alone gives what it gives inside the padded batch.
    for k, o in enumerate(items):
        with torch.no_grad():
            alone, v_alone = net(collate([compact(o)]))
        finite = torch.isfinite(alone[0])
        assert torch.equal(finite, torch.isfinite(logits[k]))
        assert torch.allclose(alone[0][finite], logits[k][finite], atol=1e-4)
        assert torch.allclose(v_alone, value[k : k + 1], atol=1e-4)
    # The dependence graph matters: dropping the edges changes the scores.
    no_edges = dict(items[1], adj=np.zeros_like(items[1]["adj"]))
    with torch.no_grad():
        net.edge_fwd.data.fill_(1.0)
        a, _ = net(collate([compact(items[1])]))
        b, _ = net(collate([compact(no_edges)]))
    assert not torch.allclose(a, b)


def test_full_window_and_candidate_limits():
    rng = np.random.default_rng(1)
    o = random_obs(rng, ob.W_MAX, ob.C_MAX, legal=1.0)
    with torch.no_grad():
        logits, _ = PolicyNet(SMALL).eval()(collate([compact(o)]))
    assert torch.isfinite(logits).all()


def test_save_load_round_trip(tmp_path: Path):
    torch.manual_seed(1)
    net = PolicyNet().eval()
    path = save_policy(net, tmp_path / "ckpt", meta={"note": "test"})
    assert (path / WEIGHTS).stat().st_size < 20 * 2**20
    config = json.loads((path / CONFIG).read_text())
    assert config["meta"] == {"note": "test"} and config["observation"]["C_MAX"] == ob.C_MAX
    loaded = load_policy(path)
    rng = np.random.default_rng(2)
    batch = collate([compact(random_obs(rng, 30, 100)), compact(random_obs(rng, 12, 40))])
    with torch.no_grad():
        a, va = net(batch)
        b, vb = loaded(batch)
    assert torch.equal(a, b) and torch.equal(va, vb)
    # A checkpoint for another observation contract is refused, not misread.
    config["observation"]["W_MAX"] = 256
    (path / CONFIG).write_text(json.dumps(config))
    with pytest.raises(ValueError, match="observation contract"):
        load_policy(path)


# ----------------------------------------------------------------------------------------------- PPO


def greedy_return(net: PolicyNet, seeds: range) -> float:
    total = 0.0
    for s in seeds:
        env = ToyReorder()
        obs, _ = env.reset(seed=s)
        done = False
        while not done:
            with torch.no_grad():
                logits, _ = net(collate([compact(obs)]))
            obs, r, term, trunc, _ = env.step(int(logits[0].argmax()))
            total += r
            done = term or trunc
    return total / len(seeds)


@pytest.mark.slow
def test_ppo_learns_the_toy_game():
    torch.manual_seed(0)
    net = PolicyNet(SMALL)
    before = greedy_return(net.eval(), range(100, 116))
    cfg = PPOConfig(total_steps=1536, n_steps=32, n_minibatches=4, update_epochs=4, lr=2e-3, seed=0)
    history = ppo(make_vector_env([ToyReorder] * 4, asynchronous=False), net, cfg)
    after = greedy_return(net, range(100, 116))
    assert after > before + 0.15, (before, after)
    assert history[-1]["episode_return"] > history[0]["episode_return"]
    for key in ("episode_return", "speedup_pred", "approx_kl", "clipfrac", "entropy", "sps"):
        assert np.isfinite(history[-1][key]), key


def test_ppo_is_deterministic_for_a_seed():
    def run() -> list[dict]:
        torch.manual_seed(3)
        cfg = PPOConfig(total_steps=64, n_steps=16, n_minibatches=2, update_epochs=2, seed=5)
        return ppo(make_vector_env([ToyReorder] * 2, asynchronous=False), PolicyNet(SMALL), cfg)

    a, b = run(), run()
    timing = {"sps", "rollout_s", "update_s"}
    strip = lambda h: [{k: v for k, v in m.items() if k not in timing} for m in h]  # noqa: E731
    assert strip(a) == strip(b)


# --------------------------------------------------------------------------- the real game and corpus


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> dict:
    pytest.importorskip("sass_lsp.schedule.game")
    start = time.perf_counter()
    report = train(
        corpus(),
        total_steps=64,
        n_envs=2,
        seed=0,
        out_dir=tmp_path_factory.mktemp("policy") / "ckpt",
        ppo_config=PPOConfig(n_steps=16, n_minibatches=2, update_epochs=2),
        asynchronous=False,
    )
    return {**report, "test_wall_s": time.perf_counter() - start}


@pytest.mark.slow
def test_train_smoke_on_the_corpus(trained: dict):
    assert trained["test_wall_s"] < 60
    names = {name for name, _, _ in corpus()}
    assert len(names) == 8 and not trained["skipped"]
    card = json.loads(Path(trained["model_card"]).read_text())
    assert card["steps"] == 64 and card["updates"] == 2 and card["checkpoint_mb"] < 20
    assert {d["name"] for d in card["data"]} == names == set(card["eval"]["kernels"])
    assert any(np.isfinite(m["episode_return"]) for m in trained["history"])
    for row in card["eval"]["kernels"].values():
        assert row["speedup_pred"] == pytest.approx(row["cost_original"] / row["cost"])
    # The written checkpoint plays the same greedy game as the net that was trained.
    net = load_policy(trained["checkpoint"])
    (add,) = [(*k, "add_kernel") for k in corpus() if k[0] == "triton_add"]  # (name, arch, text, kernel)
    again = evaluate(net, [add])
    assert again["kernels"]["triton_add"] == card["eval"]["kernels"]["triton_add"]


def test_train_refuses_held_out_kernels(tmp_path: Path):
    with pytest.raises(ValueError, match="held-out"):
        train(corpus(), total_steps=8, n_envs=1, seed=0, out_dir=tmp_path, heldout=["triton_add"])


def apply_edits(text: str, edits) -> str:
    lines = text.splitlines()
    for first, last, new in sorted(edits, key=lambda e: e[0], reverse=True):
        lines[first - 1 : last] = list(new)
    return "\n".join(lines) + "\n"


def test_suggestions_are_hazard_free_and_priced_right():
    game_mod = pytest.importorskip("sass_lsp.schedule.game")
    from sass_lsp.analysis.check import check_kernel
    from sass_lsp.analysis.program import kernels_of
    from sass_lsp.cuasm import parse_cuasm
    from sass_lsp.isa.semantics import load_semantics

    sem = load_semantics("sm_90")
    torch.manual_seed(0)
    net = PolicyNet(SMALL).eval()
    found = 0
    for name, arch, text in corpus():
        got = suggest(text, arch, net=net, top=3, max_moves=3, branches=48, time_budget_s=None)
        assert len(got) <= 3
        assert [s.predicted_gain for s in got] == sorted((s.predicted_gain for s in got), reverse=True)
        assert len({s.edits for s in got}) == len(got)
        (k0,) = kernels_of(parse_cuasm(text)[0], sem)
        before = Counter(f.code for f in check_kernel(k0, sem))
        for s in got:
            found += 1
            assert s.predicted_gain > 0 and s.cost_after < s.cost_before and s.edits and s.moves
            assert s.title.startswith("Reorder: ") and "predicted −" in s.title, s.title
            edited = apply_edits(text, s.edits)
            module, diags = parse_cuasm(edited)
            assert not [d for d in diags if d.severity == "error"], diags
            (k1,) = kernels_of(module, sem)
            assert len(k1.nodes) == len(k0.nodes)
            after = Counter(f.code for f in check_kernel(k1, sem))
            assert not after - before, (name, s.title, after - before)
            # The edited text, read back, costs what the suggestion says.
            assert game_mod.ReorderGame.from_text(edited, arch).cost_original == pytest.approx(s.cost_after)
        back = json.loads(to_json(got))
        assert [b["title"] for b in back] == [s.title for s in got]
        assert [tuple((a, b, tuple(n)) for a, b, n in x["edits"]) for x in back] == [s.edits for s in got]
    assert found, "no kernel of the corpus gave a suggestion"


def test_suggest_time_budget_bounds_the_search():
    pytest.importorskip("sass_lsp.schedule.game")
    torch.manual_seed(0)
    net = PolicyNet(SMALL).eval()
    calls = []
    net.register_forward_hook(lambda *_: calls.append(1))
    name, arch, text = next(k for k in corpus() if k[0] == "triton_softmax")
    suggest(text, arch, net=net, max_moves=4, time_budget_s=None)
    assert 1 < len(calls) <= 4  # the first forward pass, then one per further move until all STOP
    calls.clear()
    quick = suggest(text, arch, net=net, max_moves=4, time_budget_s=0.0)
    assert len(calls) == 1  # only the first pass and the first moves it ranks
    assert all(len(s.moves) == 1 for s in quick)


def test_suggest_holds_the_collector_and_leaves_no_cyclic_garbage():
    """No collection runs inside a request (a full one walks the whole heap: a random slow request), and
    what requests leave behind, cached games evicted included, is freed by reference counting alone."""
    import gc

    pytest.importorskip("sass_lsp.schedule.game")
    torch.manual_seed(0)
    net = PolicyNet(SMALL).eval()
    name, arch, text = next(k for k in corpus() if k[0] == "triton_layernorm")
    collections: list[int] = []

    def count(phase: str, _info: dict) -> None:
        if phase == "start":
            collections.append(1)

    gc.collect()
    gc.callbacks.append(count)
    try:
        for i in range(6):  # more texts than the game cache keeps: games are evicted
            suggest(f"{text}// {i}\n", arch, net=net, max_moves=2, time_budget_s=None)
    finally:
        gc.callbacks.remove(count)
    assert not collections
    assert gc.isenabled()
    assert gc.collect() == 0


def test_policy_candidates_reach_the_gpu_where_the_cost_model_sees_no_gain_and_then_end():
    """triton_matmul is HGMMA-bound in the static model, so no rollout predicts a gain: the candidates must
    still come (the GPU judges them), each new, and the stream must end once rollouts bring nothing new —
    before, it looped forever and `optimize` never spent its budget."""
    pytest.importorskip("sass_lsp.schedule.game")
    from sass_lsp.policy.candidates import policy_candidates
    from sass_lsp.schedule.game import ReorderGame

    torch.manual_seed(0)
    net = PolicyNet(SMALL).eval()
    name, arch, text = next(k for k in corpus() if k[0] == "triton_matmul")
    assert ReorderGame.from_text(text, arch).cost_original > 0
    first = []
    for cand in policy_candidates(text, arch, net=net, max_moves=4):
        first.append(cand)
        if len(first) == 4:
            break
    assert len(first) == 4 and len({c.key for c in first}) == 4
    assert all(c.moves and c.text != text for c in first)
    _, _, small = next(k for k in corpus() if k[0] == "triton_add")
    ended = list(policy_candidates(small, arch, net=net, max_moves=1, max_stale=4))
    assert len({c.key for c in ended}) == len(ended)


def test_policy_beam_builds_on_measured_gains_and_stays_hazard_free():
    """``beam`` with the shipped policy as proposer, the static cost model standing in for the GPU: children
    of a schedule measured faster are that schedule plus further moves, and every schedule it measures is
    as hazard-free as the original (the checker finds no new finding) with the same instructions."""
    pytest.importorskip("sass_lsp.schedule.game")
    from sass_lsp.analysis.check import check_kernel
    from sass_lsp.analysis.program import kernels_of
    from sass_lsp.cuasm import parse_cuasm
    from sass_lsp.isa.semantics import load_semantics
    from sass_lsp.policy.candidates import policy_expander
    from sass_lsp.schedule.canonical import OriginalOrders
    from sass_lsp.schedule.game import ReorderGame
    from sass_lsp.schedule.search import Measured, beam, schedule_key

    sem = load_semantics("sm_90")
    net = load_policy(bundled_policy())
    name, arch, text = next(k for k in corpus() if k[0] == "gelu_bias")
    base = ReorderGame.from_text(text, arch).cost_original

    def cost_model(t: str) -> Measured:
        s = base / ReorderGame.from_text(t, arch).cost_original
        return Measured(schedule_key(t), "match", s, s - 1e-4, s + 1e-4, seconds=1.0)

    log = beam(policy_expander(text, arch, net=net, max_moves=3), text, cost_model, budget=12.0, per_parent=3)
    assert len(log.trials) == 12
    (k0,) = kernels_of(parse_cuasm(text)[0], sem)
    before = Counter(f.code for f in check_kernel(k0, sem))
    texts = {t.candidate.key: t.candidate.text for t in log.trials}
    plain = sorted(n.text.replace(".reuse", "") for n in k0.nodes)
    schedules = OriginalOrders(text, arch)
    children = 0
    for t in log.trials:
        (k1,) = kernels_of(parse_cuasm(t.candidate.text)[0], sem)
        assert sorted(n.text.replace(".reuse", "") for n in k1.nodes) == plain  # the repair sets reuse
        assert not Counter(f.code for f in check_kernel(k1, sem)) - before, t.candidate.moves
        parents = [
            p
            for p in log.trials
            if p is not t
            and t.candidate.moves[: len(p.candidate.moves)] == p.candidate.moves
            and len(p.candidate.moves) < len(t.candidate.moves)
        ]
        children += bool(parents)
        for p in parents:
            assert (p.result.low or 0) > 1.0 and p.candidate.key in texts
        # a schedule of the original: its order reachable from ptxas's, repaired against ptxas's order
        assert schedules.canonical(t.candidate) is t.candidate, t.candidate.moves
    assert children, f"{name}: no candidate was built on a schedule measured faster"


@pytest.mark.slow
def test_policy_annealing_walks_where_the_policy_points_and_stays_a_schedule_of_the_original():
    """``neighbour(pick=policy_pick(net))``: each move is drawn from the policy's distribution over the
    current schedule's legal moves (nearly always its favourite at a low temperature), every schedule the
    walk measures, restarts included, is a reachable, hazard-free schedule of the original."""
    pytest.importorskip("sass_lsp.schedule.game")
    import random

    from sass_lsp.analysis.check import check_kernel
    from sass_lsp.analysis.program import kernels_of
    from sass_lsp.cuasm import parse_cuasm
    from sass_lsp.isa.semantics import load_semantics
    from sass_lsp.policy.candidates import policy_pick
    from sass_lsp.policy.model import collate, compact
    from sass_lsp.schedule.canonical import OriginalOrders
    from sass_lsp.schedule.game import ReorderGame
    from sass_lsp.schedule.search import Measured, annealing, neighbour, schedule_key

    sem = load_semantics("sm_90")
    net = load_policy(bundled_policy())
    _name, arch, text = next(k for k in corpus() if k[0] == "gelu_bias")

    game = ReorderGame.from_text(text, arch)
    n = len(game.candidates())
    with torch.inference_mode():
        logits, _ = net(collate([compact(game.observation())]))
    favourite = int(logits[0, :n].argmax())
    cold, rng = policy_pick(net, temperature=1e-3), random.Random(0)
    assert Counter(cold(game, rng) for _ in range(20)) == {favourite: 20}
    warm = Counter(policy_pick(net)(game, rng) for _ in range(200))
    assert len(warm) > 1 and warm.most_common(1)[0][0] == favourite  # sampled, not argmax

    base = game.cost_original

    def cost_model(t: str) -> Measured:
        s = base / ReorderGame.from_text(t, arch).cost_original
        return Measured(schedule_key(t), "match", s, s - 1e-4, s + 1e-4, seconds=1.0)

    walk = neighbour(text, arch, pick=policy_pick(net, temperature=0.2), source="policy")
    proposed: list[str] = []

    def propose(t: str, r: random.Random):  # noqa: ANN202
        proposed.append(schedule_key(t))
        return walk(t, r)

    log = annealing(propose, text, cost_model, 15.0, random.Random(1), max_misses=2)
    assert len(log.trials) == 15 and {t.candidate.source for t in log.trials} == {"policy"}
    assert len(proposed) > 15 and proposed.count(schedule_key(text)) > 1  # it was stuck, and restarted
    (k0,) = kernels_of(parse_cuasm(text)[0], sem)
    before = Counter(f.code for f in check_kernel(k0, sem))
    schedules = OriginalOrders(text, arch)
    for t in log.trials:
        assert schedules.canonical(t.candidate) is t.candidate, t.candidate.moves
        (k1,) = kernels_of(parse_cuasm(t.candidate.text)[0], sem)
        assert not Counter(f.code for f in check_kernel(k1, sem)) - before, t.candidate.moves


def test_policy_loads_for_suggestions_with_blas_on_one_thread():
    """A serving process runs the small policy's products on INTERACTIVE_THREADS BLAS threads (two
    OpenBLAS threads on a loaded 2-vCPU VM made one product 60x slower than one)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from sass_lsp.policy.infer import NumpyPolicy
    from sass_lsp.policy.suggest import INTERACTIVE_THREADS, load_for_suggestions

    with threadpool_limits(INTERACTIVE_THREADS + 1, user_api="blas"):
        net = load_for_suggestions(bundled_policy())
        blas = [p for p in threadpool_info() if p["user_api"] == "blas"]
        assert isinstance(net, NumpyPolicy) and blas
        assert all(p["num_threads"] == INTERACTIVE_THREADS for p in blas)


@settings(max_examples=200, deadline=None)
@given(
    weights=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40),
    k=st.integers(1, 24),
    share=st.sampled_from([0.0, 0.25, 0.5, 1.0]),
    seed=st.integers(0, 2**16),
)
def test_draw_rows_draws_distinct_rows_policy_share_by_weight_and_the_rest_uniformly(weights, k, share, seed):
    from sass_lsp.policy.candidates import draw_rows

    rows = draw_rows(weights, k, random.Random(seed), share)
    n_policy = k - round(k * share)
    positive = sum(w > 0 for w in weights)
    by_weight = min(n_policy, positive)
    assert len(rows) == len(set(rows)) == by_weight + min(k - n_policy, len(weights) - by_weight)
    assert all(weights[r] > 0 for r in rows[:by_weight])  # a zero-weight row is never drawn by weight
    assert all(0 <= r < len(weights) for r in rows)


def test_draw_rows_share_zero_is_the_policys_draw_and_share_one_is_uniform():
    from sass_lsp.policy.candidates import draw_rows

    weights = [1.0] + [0.0] * 9
    assert draw_rows(weights, 4, random.Random(0)) == [0]  # the policy alone never leaves its support
    counts = Counter(r for s in range(2000) for r in draw_rows(weights, 2, random.Random(s), 1.0))
    assert sorted(counts) == list(range(10))  # uniform reaches every row, the weights ignored
    assert max(counts.values()) < 1.5 * min(counts.values())
    mixed = [draw_rows(weights, 4, random.Random(s), 0.5) for s in range(50)]
    assert all(m[0] == 0 and len(m) == 3 and 0 not in m[1:] for m in mixed)  # 2 by weight (1 left), 2 uniform


def test_policy_draw_takes_its_uniform_share_on_a_real_kernel():
    """``policy_draw(uniform_share=s)``, the draw of ``reorder_eval.py``'s ``policy_surrogate_mix``: of k
    moves, k - round(k·s) by the policy's weights, the rest uniformly, so a share of 1 is exactly a
    uniform sample of the legal moves and a share of 0 stays inside the policy's support."""
    from sass_lsp.policy.candidates import move_weights, policy_draw
    from sass_lsp.schedule.game import ReorderGame

    net = load_policy(bundled_policy())
    _name, arch, text = next(k for k in corpus() if k[0] == "gelu_bias")
    game = ReorderGame.from_text(text, arch)
    n = len(game.candidates())
    weights = move_weights(net, game, 1.0)
    assert policy_draw(net, uniform_share=1.0)(game, random.Random(3), 16) == random.Random(3).sample(
        range(n), 16
    )
    favourite = max(range(n), key=weights.__getitem__)
    alone = policy_draw(net)(game, random.Random(0), 16)
    warm = policy_draw(net, uniform_share=0.5)(game, random.Random(0), 16)
    assert len(warm) == len(set(warm)) == 16 and warm[:8] == alone[:8]  # the policy's own first 8 draws
    # at a low temperature the policy's support is its favourite alone: 1 by weight, then the 8 uniform
    cold = policy_draw(net, temperature=1e-3, uniform_share=0.5)(game, random.Random(0), 16)
    assert cold[0] == favourite and len(cold) == len(set(cold)) == 9


def test_policy_search_refuses_a_uniform_share_it_would_not_use():
    """Only ``policy_surrogate`` and ``policy_moves`` draw, so a share given to another search (the server's
    setting, if the default search changed) is an error, not silently ignored; a share is 0..1."""
    from sass_lsp.policy.candidates import policy_search

    net = load_policy(bundled_policy())
    _name, arch, text = next(k for k in corpus() if k[0] == "gelu_bias")
    for name in ("beam", "policy_annealing"):
        with pytest.raises(ValueError, match=f"policy_moves searches, not {name}"):
            policy_search(name, text, arch, net=net, uniform_share=0.5)
        assert callable(policy_search(name, text, arch, net=net))
    with pytest.raises(ValueError, match="uniform share 1.5 is not a share"):
        policy_search("policy_surrogate", text, arch, net=net, uniform_share=1.5)
    assert callable(policy_search("policy_surrogate", text, arch, net=net, uniform_share=1.0))


def test_policy_search_passes_its_surrogate_features_and_refuses_them_where_unused():
    """``policy_surrogate_mix_pairs`` of ``reorder_eval.py``: the features reach the walk's surrogate (an
    unknown set is refused by it), and another search given features is an error, not silently ignored."""
    from sass_lsp.policy.candidates import policy_search

    net = load_policy(bundled_policy())
    _name, arch, text = next(k for k in corpus() if k[0] == "gelu_bias")
    with pytest.raises(ValueError, match="unknown surrogate features 'moves'"):
        policy_search("policy_surrogate", text, arch, net=net, features="moves")
    with pytest.raises(ValueError, match="apply to the policy_surrogate search, not beam"):
        policy_search("beam", text, arch, net=net, features="pairs")
    search = policy_search("policy_surrogate", text, arch, net=net, uniform_share=0.5, features="pairs")
    assert callable(search)
