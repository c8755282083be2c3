"""``benchmarks/move_campaign.py``: random chains of reorder, control and rename moves on real train kernels,
each legal (it assembles, the checker is silent), held-out kernels refused, and a campaign measured by the
real ``GpuMeasure`` on a stand-in runner packed into one file that ``perf.dataset`` reads back with kinds."""

from __future__ import annotations

import dataclasses
import json
import random
import sys
import tarfile
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from sass_lsp.analysis import check_module
from sass_lsp.cuasm import assemble_cuasm, parse_cuasm
from sass_lsp.gpu.measure import GpuMeasure, Prepared
from sass_lsp.perf import dataset as ds
from sass_lsp.schedule.search import Measured, schedule_key

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import move_campaign as mc  # noqa: E402

pytest.importorskip("sass_lsp.schedule.game")  # gymnasium
TRAIN = ["triton_matmul", "mm_f16_64x64x32"]  # corpus kernels of the split's train set (no nvcc needed)


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> list[mc.Kernel]:
    return mc.load(TRAIN, tmp_path_factory.mktemp("kernels"))


def findings(text: str) -> list[tuple[str, str]]:
    """Every parse diagnostic and checker finding, of any severity."""
    module, diags = parse_cuasm(text)
    return [("parse", d.message) for d in diags] + [
        (f.code, f.message) for f in check_module(module, "sm_90")
    ]


def test_train_kernels_are_the_default_and_held_out_ones_are_refused(capsys: pytest.CaptureFixture) -> None:
    assert mc.kernel_names(None) == ["triton_matmul", "mm_f16_64x64x32", "sgemm_tiled", "stencil2d", "fma_2k"]
    assert mc.main(["--dry-run", "--kernels", "triton_matmul", "conv2d"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("benchmarks/kernels/split_compute_v1.toml: error: conv2d is held out")
    assert "never for training data" in err and "\nhint: " in err


def test_chains_draw_every_kind_and_each_schedule_is_legal(kernels: list[mc.Kernel]) -> None:
    seen_kinds: dict[str, set[str]] = {}
    for k in kernels:
        assert findings(k.text) == []  # the checker is silent on ptxas's text: silence below means something
        drawer = mc.Drawer(k, mc.KINDS, 3, random.Random(f"0:{k.name}"))
        assert drawer.kinds == mc.KINDS  # both kernels have moves of every kind
        keys = set()
        for s in [next(iter(mc.distinct_schedules(k, mc.chains(drawer, f"0:{k.name}"))))] + [
            s for s in (drawer.draw() for _ in range(5)) if s is not None
        ]:
            assert 1 <= len(s.moves) == len(s.kinds) <= 3 and s.text != k.text
            order = [mc.APPLY_ORDER[kind] for kind in s.kinds]
            assert order == sorted(order)  # renames, cross-block moves, reorders, then control codes
            assemble_cuasm(s.text, source_name=s.key)
            assert findings(s.text) == [], (k.name, s.moves)
            seen_kinds.setdefault(k.name, set()).update(s.kinds)
            keys.add(s.key)
        assert len(keys) > 1
    assert set().union(*seen_kinds.values()) == set(mc.KINDS)


def test_processes_draw_the_same_chains_in_the_same_order(kernels: list[mc.Kernel]) -> None:
    """Chain j comes from its own stream, so drawing in worker processes changes how fast, not what: the
    random baseline and a campaign stay reproducible from their seed on any host."""
    k = next(k for k in kernels if k.name == "triton_matmul")
    drawer = mc.Drawer(k, mc.KINDS, 4, random.Random(0))

    def first(workers: int, n: int = 8) -> list[tuple[str, tuple[str, ...]]]:
        draws = mc.chains(drawer, "0:triton_matmul", workers)
        got = [(s.key, s.moves) for _, s in zip(range(n), mc.distinct_schedules(k, draws), strict=False)]
        draws.close()
        return got

    alone = first(1)
    assert len({key for key, _ in alone}) == 8
    assert first(2) == alone
    assert first(1) == alone  # a drawer that has drawn before draws the same


def test_dry_run_prints_the_draws_and_their_counts(capsys: pytest.CaptureFixture) -> None:
    assert mc.main(["--dry-run", "--kernels", *TRAIN, "--count", "4", "--max-moves", "2"]) == 0
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if " moves [" in ln]
    assert len(lines) == 8 and all(ln.endswith("assembles, checker silent") for ln in lines)
    assert (
        "| triton_matmul |" in out and "not assembled: 0; with checker findings ptxas's text lacks: 0" in out
    )


class StandInRunner:
    """The worker's replies to ``GpuMeasure``: every candidate matches; its time a hash of its cubin."""

    def verify(self, orig: bytes, edit: bytes, spec: object, seeds: list[int]) -> SimpleNamespace:
        return SimpleNamespace(ok=True, result={"status": "match"})

    def time(self, orig: bytes, edit: bytes, spec: object, *, rounds: int, **_: object) -> SimpleNamespace:
        f = 0.97 + (zlib.crc32(edit) % 600) / 10_000
        result = {"status": "ok", "orig_ms": [1.0, 1.001] * 6, "edit_ms": [f, f * 1.001] * 6, "batch": 4}
        return SimpleNamespace(ok=True, result=result)


def stand_in_measure(k: mc.Kernel, log: Path) -> Callable[[str], Measured]:
    """The real ``GpuMeasure`` (its log records) on the stand-in runner, one GPU second per measurement; the
    cubin is the text's bytes (assembly is tested above)."""
    measure = GpuMeasure(StandInRunner(), k.cubin, k.spec, k.name, log_path=log, original_text=k.text)  # type: ignore[arg-type]
    measure.prepare = lambda text: Prepared(text, schedule_key(text), text.encode())  # type: ignore[method-assign]
    return lambda text: dataclasses.replace(measure(text), seconds=1.0)


def stand_in_device(_k: mc.Kernel) -> dict:
    return {"device": {"gpu": "Stand-in GPU"}, "clocks": {"clocks.sm": "1980"}}


@pytest.mark.parametrize("suffix", [".tar.xz", ".jsonl.gz"])
def test_campaign_packs_one_file_that_the_dataset_reads_with_kinds(
    tmp_path: Path, kernels: list[mc.Kernel], suffix: str
) -> None:
    out = tmp_path / f"camp{suffix}"
    settings = mc.Settings(budget=5.0, time_limit=600.0, seed=3, max_moves=3)
    progress = mc.campaign(kernels, settings, out, stand_in_measure, stand_in_device)
    assert Counter(r.schedule.kernel for r in progress.rows) == {"triton_matmul": 5, "mm_f16_64x64x32": 5}
    table = mc.summary(progress.rows)
    assert "| triton_matmul | all | 5 | 5 |" in table and "| mm_f16_64x64x32 | all | 5 | 5 |" in table
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]  # no temporary file, the live log removed
    if suffix == ".tar.xz":
        with tarfile.open(out) as tar:
            assert sorted(tar.getnames()) == ["camp_manifest.json", "camp_measurements.jsonl"]
            manifest = json.load(tar.extractfile("camp_manifest.json"))  # type: ignore[arg-type]
    else:
        manifest = next(ds.open_logs(out))[1][0]
        assert manifest["kind"] == "manifest"
    assert [k["name"] for k in manifest["kernels"]] == TRAIN and manifest["rows"] == 10
    assert (
        manifest["seed"] == 3
        and manifest["kinds"] == list(mc.KINDS)
        and manifest["budget_gpu_s_per_kernel"] == 5
    )
    assert manifest["devices"]["triton_matmul"]["device"]["gpu"] == "Stand-in GPU"
    assert manifest["revision"]["tree_sha256"] == mc.tree_revision()["tree_sha256"]

    got = list(ds.read_logs(out))
    assert len(got) == 10
    by_key = {r.schedule.key: r.schedule for r in progress.rows}
    for m in got:
        s = by_key[m.key]
        assert m.text == s.text and m.kinds == s.kinds and m.moves == s.moves  # the exact schedule
        assert m.method == "random_moves" and m.random and m.gpu == "Stand-in GPU" and m.clock_sm_mhz == 1980
    assert set().union(*(m.kinds for m in got)) == set(mc.KINDS)
    camp = ds.build("camp", got, [out])  # only the pure reorderings: the others are counted as dropped
    pure = sum(set(m.kinds) == {"reorder"} for m in got)
    assert len(camp) == pure < 10 and sum(camp.provenance["dropped"].values()) == 10 - pure


def test_an_interrupted_campaign_still_packs_what_it_measured(
    tmp_path: Path, kernels: list[mc.Kernel]
) -> None:
    calls = []

    def measure_for(k: mc.Kernel, log: Path) -> Callable[[str], Measured]:
        measure = stand_in_measure(k, log)

        def once(text: str) -> Measured:
            if len(calls) == 2:
                raise KeyboardInterrupt
            calls.append(text)
            return measure(text)

        return once

    out = tmp_path / "cut.tar.xz"
    with pytest.raises(KeyboardInterrupt):
        mc.campaign(kernels, mc.Settings(budget=5.0), out, measure_for, stand_in_device)
    assert len(list(ds.read_logs(out))) == 2


def test_reorder_eval_random_all_screens_the_campaigns_chains(kernels: list[mc.Kernel]) -> None:
    """``reorder_eval.py --methods random_all`` (the table's random baseline over the new move set) screens
    distinct legal chains of every kind; the per-kind rows are ``optimize`` settings."""
    import reorder_eval

    k = next(k for k in kernels if k.name == "triton_matmul")
    chains = reorder_eval.random_chains(k.text, k.arch, k.function, k.threads, "3")
    drawn = [next(chains) for _ in range(12)]
    assert len({c.text for c in drawn}) == 12 and all(c.source == "random_all" for c in drawn)
    firsts = {m.split()[0] for c in drawn for m in c.moves}  # "rename", "node" (a reorder), control moves
    assert {"rename", "node"} <= firsts and firsts & {"stall", "yield", "reuse"}, firsts
    assert firsts & {"hoist", "sink"}, firsts  # cross-block moves
    for c in drawn[:3]:
        assert findings(c.text) == []
        assemble_cuasm(c.text, verify=False)
    for method in ("rename", "cross_block", "control"):
        choice = reorder_eval.run_method(method, k.text, k.arch, k.function, None, 0, k.threads)
        assert choice.moves == (method.replace("_", "-"),)


def test_edit_features_see_each_kind_and_the_kernel_left_out_is_scored(capsys: pytest.CaptureFixture) -> None:
    """``perf_moves_eval.py``: the original has no edit features; a control-code edit changes only control
    features, a rename or reorder the instruction text; every campaign kernel is scored once, left out."""
    import perf_moves_eval as pme

    campaign = ROOT / "benchmarks/results/move_campaign_h100_s0.tar.xz"
    rows = [m for m in ds.read_logs(campaign) if m.kernel == "triton_matmul"]
    fx = pme.EditFeatures(rows[0].original, rows[0].function)
    n_ctrl = len(pme.CTRL_NAMES)
    base = fx.features(rows[0].original)
    assert base is not None and not base[:n_ctrl].any() and not base[n_ctrl : n_ctrl + 4].any()
    control = next(m for m in rows if set(m.kinds) == {"control"})
    renamed = next(m for m in rows if set(m.kinds) == {"rename"})
    f_control, f_renamed = fx.features(control.text), fx.features(renamed.text)
    assert f_control is not None and f_renamed is not None
    assert f_control[:n_ctrl].any() and not f_control[n_ctrl : n_ctrl + 2].any()
    assert f_renamed[n_ctrl : n_ctrl + 2].any()
    assert pme.main([str(campaign)]) == 0
    table = [
        line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "---" not in line
    ]
    assert [line.split(" | ")[0][2:] for line in table[1:]] == [
        "triton_matmul",
        "mm_f16_64x64x32",
        "sgemm_tiled",
        "stencil2d",
        "fma_2k",
        "pooled / mean",
    ]
