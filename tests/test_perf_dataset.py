"""The measured-schedule dataset: logs read in place; campaign files rebuild schedules of the original."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from sass_lsp.perf import dataset as ds
from sass_lsp.perf import features as pf
from sass_lsp.schedule.canonical import OriginalOrders
from sass_lsp.schedule.search import Candidate

ROOT = Path(__file__).resolve().parents[1]
RUN18 = ROOT / "benchmarks/results/reorder_measurements_h200_run18.jsonl.gz"


@pytest.fixture(scope="module")
def run18() -> list[ds.Measurement]:
    return list(ds.read_logs(RUN18))


def test_log_rows_are_reorderings_of_their_original(run18: list[ds.Measurement]) -> None:
    assert len(run18) == 1122  # every matched, timed screen of the log (repeats included)
    assert {m.method for m in run18} == {"annealing"} and not any(m.random for m in run18)
    oo = OriginalOrders(run18[0].original, "sm_90", run18[0].function)
    for m in random.Random(0).sample(run18, 12):
        assert m.low <= m.speedup <= m.high
        assert oo.orders(m.text) is not None  # the same instructions, each in its own block


def test_campaign_rebuilds_schedules_of_the_original(tmp_path: Path, run18: list[ds.Measurement]) -> None:
    camp = ds.build("run18", run18, [RUN18])
    ds.save(camp, tmp_path / "run18.npz")
    back = ds.load(tmp_path / "run18.npz")
    assert len(back) == len(run18) and back.provenance["rows"] == len(run18)
    assert np.array_equal(back.speedup, camp.speedup) and back.kernels == ["sgemm_tiled"]
    oo = OriginalOrders(back.originals[0], "sm_90", back.functions[0])
    reach = np.flatnonzero(back.reachable)
    assert 0 < len(reach) < len(back)  # the chained walk of this run left ptxas's reachable orders
    by_key = {m.key: m for m in run18}
    for i in random.Random(1).sample(list(reach), 6):
        text = back.text(i)
        got = oo.canonical(Candidate(text, "test"))
        assert got is not None and got.text == text  # a schedule of the original, as the repair writes it
        # the same order as the measured text
        measured = oo.orders(by_key[str(back.key[i])].text)
        assert oo.orders(text) == measured
    unreachable = int(np.flatnonzero(~back.reachable)[0])
    with pytest.raises(ValueError, match="not reachable"):
        back.text(unreachable)


def test_package_campaigns_flag_random_draws() -> None:
    camps = {c.name: c for c in ds.load_all()}
    assert {"reorder_eval_h200", "policy_finetune_h200", "reorder_run18_h200"} <= set(camps)
    ev = camps["reorder_eval_h200"]
    assert ev.random.sum() > 5000 and (~ev.random).sum() > 30000
    assert set(np.array(ev.methods)[ev.method[ev.random]]) == {"random"}
    assert ev.provenance["sources"][0]["path"].endswith("reorder_eval_h200.tar.xz")
    # a sample of rows decode to permutations of their kernel's instruction list that keep every block
    oo = {
        k: OriginalOrders(t, "sm_90", f or None)
        for k, (t, f) in enumerate(zip(ev.originals, ev.functions, strict=True))
    }
    for i in random.Random(2).sample(range(len(ev)), 20):
        k = int(ev.kernel[i])
        perm = ev.order(i)
        assert sorted(perm.tolist()) == list(range(ev.n_nodes(k)))
        blocks = np.zeros(len(perm), int)
        for b in oo[k].k.blocks:
            blocks[b.start : b.end] = b.idx
        assert np.array_equal(blocks[perm], blocks)


def test_features_are_zero_for_ptxas_order_and_finite_otherwise(run18: list[ds.Measurement]) -> None:
    oo = OriginalOrders(run18[0].original, "sm_90", run18[0].function)
    facts = pf.KernelFacts.of(oo.k)
    empty = np.zeros(0, np.int64)
    x0 = facts.features(empty, empty)
    assert x0.shape == (pf.N_FEATURES,) and not x0[:-2].any()  # only size and has-loop are set
    camp = ds.build("run18", run18[:50], [RUN18])
    for i in range(len(camp)):
        a, b = camp.moved_ptr[i], camp.moved_ptr[i + 1]
        x = facts.features(camp.moved_slot[a:b], camp.moved_node[a:b])
        assert np.isfinite(x).all()
        assert (a == b) or x[: len(pf.DISP_NAMES)].any()


def test_unseen_campaign_holds_kernels_no_checkpoint_trains_on() -> None:
    """The optimizer's held-out kernels are evaluation data only: their campaign lives beside the archives it
    was built from, never in the package's training folder, and holds exactly repaired reorderings."""
    unseen = ds.load(ROOT / "benchmarks/results/perf_unseen_h100.npz")
    trained = {k for c in ds.load_all() for k in c.kernels}
    assert set(unseen.kernels) == {"flash_attn_fwd", "conv2d", "bf16_gemm", "fp8_blockscale_gemm"}
    assert not set(unseen.kernels) & trained
    assert set(unseen.provenance["dropped"]) >= {
        "conv2d: other control codes",
        "bf16_gemm: other control codes",
    }
    for k, name in enumerate(unseen.kernels):
        oo = OriginalOrders(unseen.originals[k], "sm_90", unseen.functions[k] or None)
        for i in random.Random(k).sample(list(np.flatnonzero(unseen.kernel == k)), 2):
            text = unseen.text(i)
            got = oo.canonical(Candidate(text, "test"))
            assert got is not None and got.text == text, name


def test_as_repaired_drops_a_schedule_whose_control_codes_were_edited(run18: list[ds.Measurement]) -> None:
    from dataclasses import replace

    from sass_lsp.schedule import control_moves

    m = next(
        m for m in run18 if OriginalOrders(m.original, "sm_90", m.function).canonical(Candidate(m.text, "t"))
    )
    oo = OriginalOrders(m.original, "sm_90", m.function)
    reordered = replace(m, text=oo.canonical(Candidate(m.text, "t")).text, key="reordered")
    move = next(c for c in control_moves.control_moves(reordered.text, "sm_90") if c.kind == "yield_on")
    edited = replace(m, text=control_moves.apply(reordered.text, move), key="edited")
    camp = ds.build("t", [reordered, edited], [RUN18], as_repaired=True)
    assert list(camp.key) == ["reordered"]
    assert camp.provenance["dropped"] == {"sgemm_tiled: other control codes": 1}
    assert len(ds.build("t", [reordered, edited], [RUN18])) == 2  # without it, an order is all it keeps
