"""The reorder game on real kernels: observation contract, hazard-free states, cost-model sanity, text edits.

Inputs: the shared Triton corpus (sm_90 ``.cuasm``) and the generated corpus (``.cache/corpus/sm_90`` and
``sm_90a`` cubins, disassembled once and cached), one game per distinct kernel.
"""

from __future__ import annotations

import collections
import functools
import random
import re
import subprocess

import numpy as np
import pytest
from paths import TRITON_CORPUS
from test_analysis_support import corpus_modules

from sass_lsp.analysis.check import check_kernel
from sass_lsp.analysis.program import Kernel, kernels_of
from sass_lsp.cuasm import parse_cuasm
from sass_lsp.isa.semantics import load_semantics
from sass_lsp.schedule import observation as ob
from sass_lsp.schedule.baselines import greedy_cost, random_legal
from sass_lsp.schedule.cost import hot_region, kernel_cost, region_cycles
from sass_lsp.schedule.deps import legal_targets, move
from sass_lsp.schedule.features import candidate_moves, legal_ranges, moved_ranges
from sass_lsp.schedule.game import ReorderGame
from sass_lsp.schedule.search import apply_edits

ARCH = "sm_90"
SEM = load_semantics(ARCH)


@functools.cache
def shared_texts() -> dict[str, str]:
    return {p.stem: p.read_text() for p in sorted(TRITON_CORPUS.glob("*.cuasm"))}


@functools.cache
def corpus_kernels() -> list[tuple[str, Kernel]]:
    """Every distinct kernel (same instructions and control codes = same kernel) of both corpora."""
    out, seen = [], set()
    for name, module in corpus_modules(ARCH):
        for k in kernels_of(module, SEM):
            key = tuple((nd.text, nd.ctrl) for nd in k.nodes)
            if k.nodes and key not in seen:
                seen.add(key)
                out.append((f"{name}:{k.name}", k))
    return out


@functools.cache
def game_of(name: str) -> ReorderGame:
    """One game per shared-corpus kernel (each test resets it)."""
    return ReorderGame.from_text(shared_texts()[name], ARCH)


def hazard_counts(k: Kernel) -> collections.Counter:
    return collections.Counter(f.code for f in check_kernel(k, SEM) if f.severity in ("error", "warning"))


# ------------------------------------------------------------------------------------------ observations


def test_observations_conform_to_the_contract() -> None:
    bad = []
    for name, k in corpus_kernels():
        game = ReorderGame(k, SEM, max_steps=2)
        for scramble in (0, 6):
            obs, info = game.reset(seed=1, options={"scramble": scramble})
            obs2, *_ = game.step(0 if game.candidates() else ob.STOP)
            for o in (obs, obs2):
                if not game.observation_space.contains(o):
                    bad.append(f"{name}: not in observation_space")
                    continue
                n = int(o["n"][0])
                real = o["cand_mask"]
                problems = [
                    n != len(game.window0) and "n is not the window length",
                    any((o["tok"][:n, c] >= size).any() for c, size in enumerate(ob.TOKEN_VOCAB)) and "vocab",
                    (o["tok"][:n] == 0).any() and "0 (padding) inside the window",
                    ((o["tok"][n:] != 0).any() or (o["num"][n:] != 0).any()) and "padding rows not zero",
                    np.tril(o["adj"]).any() and "adj has an edge that does not point forward",
                    (o["cand"][real] >= n).any() and "candidate outside the window",
                    (o["cand"][real, 0] == o["cand"][real, 1]).any() and "candidate that does not move",
                    real.any() and not real[: real.sum()].all() and "real candidates are not a prefix",
                ]
                bad += [f"{name} scramble={scramble}: {p}" for p in problems if p]
    assert not bad, "\n".join(bad[:20])


def test_candidates_are_legal_moves_and_match_the_standalone_encoder() -> None:
    for name in shared_texts():
        game = game_of(name)
        game.reset(seed=3, options={"scramble": 12})
        orders = {b: game.order(b) for b in game.region.blocks}
        assert game.candidates() == candidate_moves(game.snapshot().window, game.deps, orders=orders), name
        runs = {s: (b, off) for b, s, _e, off in game._runs}
        for wp, wt in game.candidates():
            s = max(x for x in runs if x <= wp)
            b, off = runs[s]
            assert off + wt - s in legal_targets(orders[b], off + wp - s, game.deps[b]), (name, wp, wt)


def test_incremental_legal_ranges_equal_a_full_recompute() -> None:
    rng = np.random.default_rng(0)
    for name in shared_texts():
        game = game_of(name)
        for b, d in game.deps.items():
            order = list(range(d.start, d.end))
            ranges = legal_ranges(order, d)
            for _ in range(20):
                movable = [p for p, (lo, hi) in enumerate(ranges) if hi > lo]
                if not movable:
                    break
                p = int(rng.choice(movable))
                lo, hi = ranges[p]
                t = int(rng.integers(lo, hi + 1))
                order = move(order, p, t)
                ranges = moved_ranges(order, ranges, p, t, d)
                assert ranges == legal_ranges(order, d), (name, b)


# ------------------------------------------------------------------------------------------ hazards


def test_random_episodes_never_add_a_hazard() -> None:
    """Every state of seeded random episodes (masked actions, with and without scrambling) checks as clean
    as the ptxas original (no new error or warning finding)."""
    bad = []
    n_states = 0
    for name, k in corpus_kernels():
        base = hazard_counts(k)
        game = ReorderGame(k, SEM, max_steps=5)
        for seed, scramble in ((0, 0), (1, 10), (2, 40)):
            game.reset(seed=seed, options={"scramble": scramble})
            rng = np.random.default_rng(seed)
            while True:
                new = hazard_counts(game.kernel()) - base
                n_states += 1
                if new:
                    bad.append(f"{name} seed={seed} scramble={scramble} moves={game.moves}: {dict(new)}")
                    break
                rows = np.flatnonzero(game.action_mask()[: ob.STOP])
                if not len(rows):
                    break
                _obs, _r, terminated, truncated, _info = game.step(int(rng.choice(rows)))
                if terminated or truncated:
                    new = hazard_counts(game.kernel()) - base
                    if new:
                        bad.append(f"{name} seed={seed} scramble={scramble} moves={game.moves}: {dict(new)}")
                    break
    assert n_states > 5 * len(corpus_kernels())
    assert not bad, f"{len(bad)} episodes reached a new hazard:\n" + "\n".join(bad[:20])


# ------------------------------------------------------------------------------------------ game mechanics


def test_rewards_telescope_and_info_is_consistent() -> None:
    game = game_of("triton_softmax")
    obs, info = game.reset(seed=5, options={"scramble": 8})
    start = info["cost"]
    assert info["cost_original"] == game.cost_original
    total = 0.0
    rng = np.random.default_rng(5)
    for _ in range(6):
        rows = np.flatnonzero(game.action_mask()[: ob.STOP])
        obs, reward, terminated, truncated, info = game.step(int(rng.choice(rows)))
        total += reward
    assert total == pytest.approx((start - info["cost"]) / game.cost_original)
    assert info["speedup_pred"] == pytest.approx(game.cost_original / info["cost"])
    assert len(info["moves"]) == 6
    assert info["cost"] == kernel_cost(game.kernel(), SEM)  # the game's fast path = the kernel cost


def test_invalid_actions_end_the_episode_without_raising() -> None:
    game = game_of("triton_add")
    for action in (ob.STOP, ob.C_MAX - 1, -3, 10**9, "x", None):
        game.reset()
        _obs, reward, terminated, truncated, info = game.step(action)
        assert (reward, terminated, truncated, info["moves"]) == (0.0, True, False, [])
    game.reset()
    game.step(ob.STOP)
    assert game.step(0)[2]  # still over


def test_truncation_snapshot_restore_and_clone() -> None:
    game = ReorderGame.from_text(shared_texts()["triton_layernorm"], ARCH, max_steps=3)
    game.reset()
    snap = game.snapshot()
    flags = [game.step(0)[3] for _ in range(3)]
    assert flags == [False, False, True]
    after = (game.cost, game.orders(), game.moves)
    twin = game.clone()
    game.restore(snap)
    assert (game.cost, game.moves) == (game.cost_original, [])
    assert (twin.cost, twin.orders(), twin.moves) == after
    cost = game.peek(0)
    assert game.cost == game.cost_original and cost == game.apply(0)


def test_pluggable_reward_fn() -> None:
    calls = []

    def reward_fn(k: Kernel) -> float:
        calls.append(k)
        return 100.0 + len(calls)

    game = ReorderGame.from_text(shared_texts()["triton_add"], ARCH, reward_fn=reward_fn)
    _obs, info = game.reset()
    assert info["cost_original"] == 101.0
    _obs, reward, *_ = game.step(0)
    assert reward == pytest.approx((101.0 - 102.0) / 101.0)
    assert calls[-1] is game.kernel()


# ------------------------------------------------------------------------------------------ cost model


def test_region_detection_finds_the_matmul_main_loop() -> None:
    for name in ("triton_matmul", "mm_f16_64x64x32"):
        game = game_of(name)
        k = game.k0
        region = hot_region(k)
        nodes = region.nodes(k)
        assert region.is_loop and region.depth == 1, name
        assert 63 <= len(nodes) <= 84, (name, len(nodes))
        assert any(k.nodes[i].eff.opcode == "HGMMA" for i in nodes), name
    gelu = game_of("gelu_bias").region
    assert not gelu.is_loop and len(gelu.nodes(game_of("gelu_bias").k0)) > 300  # straight-line code


def test_scrambling_raises_the_predicted_cost_on_average() -> None:
    ratios = []
    for name in shared_texts():
        game = game_of(name)
        for seed in range(3):
            _obs, info = game.reset(seed=seed, options={"scramble": 40})
            ratios.append(info["cost"] / info["cost_original"])
    assert np.mean(ratios) > 1.05, ratios
    assert min(ratios) >= 0.9, ratios


def test_greedy_never_raises_the_cost_and_random_moves_stay_consistent() -> None:
    improved = 0
    for name in shared_texts():
        game = game_of(name)
        game.reset()
        res = greedy_cost(game, max_steps=3, candidates_per_step=96)
        assert res.cost_after <= res.cost_before == game.cost_original, name
        assert res.cost_after == region_cycles(game.kernel(), SEM, game.region), name
        improved += res.cost_after < res.cost_before
        n_moves = len(game.moves)
        res = random_legal(game, 5, np.random.default_rng(0))
        assert len(res.moves) == n_moves + 5, name
        assert res.cost_after == kernel_cost(game.kernel(), SEM), name
    assert improved >= 3


# ------------------------------------------------------------------------------------------ text edits


def test_edits_reproduce_the_game_kernel() -> None:
    for name, text in shared_texts().items():
        game = game_of(name)
        game.reset(seed=7, options={"scramble": 15})
        rng = np.random.default_rng(7)
        for _ in range(3):
            rows = np.flatnonzero(game.action_mask()[: ob.STOP])
            if len(rows):
                game.step(int(rng.choice(rows)))
        edits = game.edits(text.splitlines())
        assert edits, name
        module, diags = parse_cuasm(apply_edits(text, edits))
        assert not [d for d in diags if d.severity == "error"], name
        (k,) = [k for k in kernels_of(module, SEM) if k.name == game.k0.name]
        want = game.kernel()
        assert [" ".join(nd.text.split()) for nd in k.nodes] == [
            " ".join(nd.text.split()) for nd in want.nodes
        ]
        assert [nd.ctrl for nd in k.nodes] == [nd.ctrl for nd in want.nodes], name


def _labelled_instructions(text: str) -> dict[str, str]:
    """Each label the ELF's metadata names (``.word .L_x_N@srel``, CuAssembler's ``.CUASM_OFFSET_LABEL.``
    markers, keyed by line) -> the instruction it points at."""
    refs = set(re.findall(r"(\.L_x_\d+)@srel", text))
    lines, out = text.splitlines(), {}
    for i, line in enumerate(lines):
        m = re.match(r"\s*(\.L_x_\d+|\.CUASM_OFFSET_LABEL\.\S*):", line)
        if m and (m.group(1) in refs or m.group(1).startswith(".CUASM")):
            nxt = next(ln for ln in lines[i + 1 :] if re.search(r"/\*[0-9a-f]{4}\*/", ln))
            out[f"{m.group(1)}@{i}"] = re.sub(r".*\*/\s*", "", nxt).strip()
    return out


@pytest.mark.parametrize("name", ["flash_attn_fwd", "triton_layernorm", "triton_softmax"])
def test_reorders_keep_every_metadata_label_on_its_instruction(name: str) -> None:
    """EXIT and cooperative-group SHFL offsets in .nv.info name instructions by label: a reorder must not
    slide another instruction under such a label (random moves used to, on both kernels)."""
    text = shared_texts()[name]
    before = _labelled_instructions(text)
    assert any(v.startswith("SHFL") for v in before.values())
    game = game_of(name)
    start = game.snapshot()
    for seed in range(8):
        game.restore(start)
        random_legal(game, 60, random.Random(seed))
        after = _labelled_instructions(apply_edits(text, game.edits(text.splitlines())))
        assert after == before, seed
    game.restore(start)


def test_an_instruction_the_metadata_records_stays_first_in_its_block(tmp_path) -> None:  # noqa: ANN001
    """The ELF's metadata records some instructions by address (cooperative-group SHFL and EXIT offsets,
    indirect branch targets) through a label that a branch may name too (a BSSY's reconvergence label): no
    reorder puts another instruction before such an instruction. In nvcc's softmax_rows
    (``tools/isa/heldout/heldout.cu``) a SHFL.BFLY the metadata records sits at a BSSY's label; a kernel built
    without its module's metadata labels lets an S2UR move before it."""
    from conftest import generated_cubins
    from paths import ROOT

    from sass_lsp.analysis.program import kernel_of_program, metadata_labels, programs_of
    from sass_lsp.cuasm import write_cuasm
    from sass_lsp.schedule.deps import block_deps, legal_targets

    cubins = generated_cubins(ARCH)  # skips without nvcc
    heldout = tmp_path / "heldout.cubin"
    src = ROOT / "tools/isa/heldout/heldout.cu"
    subprocess.run(["nvcc", "-cubin", f"-arch={ARCH}", "-O3", "-o", str(heldout), str(src)], check=True)

    def movable_first(k: Kernel, labels: frozenset[str]) -> dict[str, str]:
        """Blocks at a label both metadata and a branch name -> their first instruction, where another one
        of the block may be moved before it."""
        named = {t for nd in k.nodes for t in re.findall(r"\.L\w*", nd.text)}
        out = {}
        for b in k.blocks:
            if b.end - b.start > 1 and any(lab in labels and lab in named for lab in b.labels):
                d, order = block_deps(k, b.idx, SEM), list(range(b.start, b.end))
                out[b.labels[0]] = (
                    k.nodes[b.start].text
                    if any(0 in legal_targets(order, j, d) for j in range(1, len(order)))
                    else ""
                )
        return out

    watched = 0
    for cubin in [*cubins, heldout]:
        module = parse_cuasm(write_cuasm(cubin.read_bytes(), source_name=cubin.name))[0]
        labels = metadata_labels(module)
        for p in programs_of(module, SEM):
            now = movable_first(kernel_of_program(p, SEM, labels), labels)
            watched += len(now)
            assert not any(now.values()), (cubin.name, p.name, now)
            if cubin == heldout and p.name == "softmax_rows":  # what the labels change
                before = movable_first(kernel_of_program(p, SEM), labels)
                assert any(text.startswith("SHFL.BFLY") for text in before.values()), before
    assert watched >= 10
