"""The performance model's second training set (benchmarks/kernels/perf_train_v2.toml, issue #34): the
frozen list, each CUDA C kernel built with nvcc against its launch spec and round-tripped byte for byte,
random reorderings of each drawn, assembled and checked as a measurement campaign draws them, and (on a GPU)
those reorderings run bit for bit like ptxas's original."""

from __future__ import annotations

import datetime
import random
import sys
import tomllib
from collections import Counter

import pytest
from paths import ROOT

from sass_lsp.analysis.check import check_section
from sass_lsp.cuasm import assemble_cuasm, parse_cuasm, write_cuasm
from sass_lsp.gpu.corpus import has_gpu
from sass_lsp.gpu.kparams import read_kparams
from sass_lsp.gpu.spec import param_size
from sass_lsp.isa.semantics import Semantics, load_semantics

sys.path.insert(0, str(ROOT / "benchmarks"))
from kernel_split import SET_NAMES, load_split  # noqa: E402

SET_FILE = ROOT / "benchmarks" / "kernels" / "perf_train_v2.toml"


def perf_kernels() -> list[str]:
    return tomllib.loads(SET_FILE.read_text())["kernels"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> list:
    from reorder_eval import load_kernels

    return load_kernels(perf_kernels(), tmp_path_factory.mktemp("perf_kernels"))


def test_set_is_frozen_and_apart_from_the_optimizer_split() -> None:
    raw = tomllib.loads(SET_FILE.read_text())
    assert raw["frozen"] == datetime.date(2026, 12, 6) and raw["issue"] == 34
    names = perf_kernels()
    assert len(names) == len(set(names)) == 9
    split = load_split()
    assert not set(names) & {n for key in SET_NAMES for n in split.sets[key]}
    for name in names:
        for suffix in (".cu", ".launch.toml"):
            assert (SET_FILE.parent / f"{name}{suffix}").is_file(), name


def test_kernels_build_match_their_specs_and_round_trip(built: list) -> None:
    assert [name for name, *_ in built] == perf_kernels()
    for name, origin, cubin, spec in built:
        assert origin == "CUDA C" and spec.kernel == name
        assert [param_size(p) for p in spec.params] == [p.size for p in read_kparams(cubin, name)], name
        assert assemble_cuasm(write_cuasm(cubin, source_name=name), source_name=name) == cubin, name


def test_campaign_draws_clean_reorderings_of_every_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    """``move_campaign.py --dry-run``: each drawn schedule assembles and the checker finds nothing ptxas's
    text lacks (exit 0); the set is not held out, so the campaign takes it."""
    import move_campaign

    names = perf_kernels()
    assert move_campaign.kernel_names(names) == names
    args = ["--dry-run", "--count", "2", "--kinds", "reorder", "--max-moves", "12", "--kernels", *names]
    rc = move_campaign.main(args)
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "not assembled: 0; with checker findings ptxas's text lacks: 0" in out
    assert all(f"| {name} | reorder | 2 |" in out for name in names), out


def _per_consumer_semantics() -> Semantics:
    """The checker's facts with ptxas's minimum for each consumer pipe where the table has one: its
    ptxas-derived rows per consumer ranked as trusted (the checker itself reads the smallest over
    consumers for them, so as not to flag ptxas's own code)."""
    data = load_semantics("sm_90").data
    rows = [
        {**r, "source": "3rd"} if r["consumer"] != "*" and r["source"] == "exp" else r
        for r in data["latency"]
    ]
    return Semantics("sm_90", {**data, "latency": rows})


def _errors(text: str, sem: Semantics) -> Counter:
    sections = [s for s in parse_cuasm(text)[0].sections if s.name.startswith(".text.")]
    return Counter(
        (f.code, f.message.split(" at line")[0])
        for s in sections
        for f in check_section(s, sem)
        if f.severity == "error"
    )


def test_no_first_move_places_a_pair_closer_than_ptxas_ever_does(built: list) -> None:
    """Every first move of each kernel's reorder game keeps each fixed-latency producer and consumer at least
    as far apart as ptxas ever puts that pair of pipes (or as ptxas's own distance, where smaller): checked
    with per-consumer latencies, no move adds an error. On dp4a_gemm an IMAD moved to 7 cycles after the
    HFMA2.MMA that writes its operand (ptxas: at least 10) faulted on the H200."""
    from sass_lsp.schedule.game import ReorderGame
    from sass_lsp.schedule.search import game_candidate

    strict = _per_consumer_semantics()
    for name, _origin, cubin, spec in built:
        text = write_cuasm(cubin, source_name=name)
        before = _errors(text, strict)
        game = ReorderGame.from_text(text, "sm_90", kernel=spec.kernel)
        start = game.snapshot()
        for row in range(len(game.candidates())):
            game.restore(start)
            game.apply(row)
            added = _errors(game_candidate(game, text, "test").text, strict) - before
            assert not added, (name, game.moves[-1], added)


def test_random_chains_of_every_kind_keep_ptxas_distances(built: list) -> None:
    """The same check over chains of up to 12 moves as a campaign draws them, reorders alone (on the old
    rule, 3 of dp4a_gemm's first 8 add the HFMA2.MMA error) and every kind (renames, cross-block motion,
    reorders, then stall counts, which read the same bounds): none adds a per-consumer error."""
    import move_campaign

    strict = _per_consumer_semantics()
    for entry in built:
        kernel = move_campaign.kernel_of(*entry)
        name = kernel.name
        before = _errors(kernel.text, strict)
        for kinds in (("reorder",), move_campaign.KINDS):
            drawer = move_campaign.Drawer(kernel, kinds, 12, random.Random(name))
            draws = move_campaign.distinct_schedules(kernel, move_campaign.chains(drawer, f"test:{name}"))
            for _, schedule in zip(range(8), draws, strict=False):
                added = _errors(schedule.text, strict) - before
                assert not added, (name, schedule.moves, added)


@pytest.mark.gpu
@pytest.mark.skipif(not has_gpu(), reason="no CUDA GPU")
def test_reorderings_run_bit_for_bit_like_the_original(built: list) -> None:
    from sass_lsp.gpu import GpuRunner
    from sass_lsp.schedule.search import random_candidates, take

    with GpuRunner(timeout_s=120) as runner:
        for name, _origin, cubin, spec in built:
            text = write_cuasm(cubin, source_name=name)
            for cand in take(random_candidates(text, "sm_90", random.Random(5), kernel=spec.kernel), 2):
                edit = assemble_cuasm(cand.text, source_name=f"{name} ({cand.source})")
                reply = runner.verify(cubin, edit, spec, [21, 22])
                assert reply.ok, reply.error
                assert reply.result["status"] == "match", (name, reply.result)
