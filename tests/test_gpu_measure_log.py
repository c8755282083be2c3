"""The GPU measurement log rebuilds every schedule it measured: ``schedule_edits`` against the original
text (a property test), and ``optimize``'s log on the fake GPU backend, record by record."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sass_lsp.cuasm import write_cuasm
from sass_lsp.gpu.measure import read_log, schedule_edits
from sass_lsp.gpu.optimize import output_path
from sass_lsp.schedule.search import apply_edits, schedule_key

EXAMPLES = Path(__file__).resolve().parents[1] / "sass_lsp" / "examples"
lines = st.lists(st.sampled_from(["a", "b", "c", "d", ""]), max_size=30)


@given(lines, lines)
def test_schedule_edits_rebuild_the_candidate(a: list[str], b: list[str]) -> None:
    original, candidate = "\n".join(a) + "\n", "\n".join(b) + "\n"
    assert apply_edits(original, schedule_edits(original, candidate)) == candidate


@pytest.mark.slow
@pytest.mark.parametrize("search", ["beam", "policy_annealing", "policy_surrogate"])
def test_optimize_log_rebuilds_each_measured_schedule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, search: str
):
    pytest.importorskip("torch")
    from sass_lsp.cli_policy import OptimizeJob, optimize_one

    monkeypatch.setenv("SASS_LSP_GPU_BACKEND", "fake")  # rejects every real cubin after assembling it
    text = write_cuasm((EXAMPLES / "triton_add.cubin").read_bytes(), source_name="triton_add.cubin")
    (tmp_path / "k.cuasm").write_text(text)
    (tmp_path / "k.launch.toml").write_text((EXAMPLES / "triton_add.launch.toml").read_text())
    job = OptimizeJob(
        tmp_path / "k.cuasm", tmp_path / "k.launch.toml", 0.005, tmp_path / "k.opt", None, 0, search
    )
    summary = optimize_one(job)
    log = output_path(job.out_stem, ".measurements.jsonl")
    records = [json.loads(x) for x in log.read_text().splitlines()]
    originals = [r for r in records if r["kind"] == "original"]
    assert records[0] == originals[0] and len(originals) == 1  # before every measurement, once
    assert originals[0]["text"] == text and originals[0]["key"] == schedule_key(text)
    screened = [r for r in records if r["kind"] == "screen"]
    assert len(screened) == summary["n_candidates"] > 0
    for r in screened:
        assert r["edits"], r  # a candidate is never the original
        assert schedule_key(apply_edits(originals[0]["text"], r["edits"])) == r["key"]


def test_a_log_reads_the_same_plain_and_gzipped(tmp_path: Path) -> None:
    """benchmarks/results keeps the larger logs gzipped; the scripts read both through ``read_log``."""
    rows = [
        {"kind": "original", "kernel": "k", "text": "a\nb\n"},
        {"kind": "screen", "key": "0f", "speedup": 1.01},
    ]
    plain, packed = tmp_path / "m.jsonl", tmp_path / "m.jsonl.gz"
    plain.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n")
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert read_log(plain) == read_log(packed) == rows


def test_optimize_offers_exactly_the_policy_s_searches() -> None:
    pytest.importorskip("torch")
    from sass_lsp.cli import build_parser
    from sass_lsp.cli_policy import OptimizeJob
    from sass_lsp.ide.settings import Settings
    from sass_lsp.policy.candidates import (
        DEFAULT_SEARCH,
        DEFAULT_UNIFORM_SHARE,
        SEARCHES,
        policy_search,
        resolve_uniform_share,
    )

    args = build_parser().parse_args(["optimize", "k.cuasm"])
    assert args.search == DEFAULT_SEARCH == OptimizeJob.search
    # the CLI's and the editor's default share are the measured one, and it never reaches a search that
    # draws no moves (so --search beam alone is not refused)
    assert args.uniform_share is None and OptimizeJob.uniform_share is None
    assert (
        resolve_uniform_share(DEFAULT_SEARCH, None)
        == DEFAULT_UNIFORM_SHARE
        == Settings().optimizeUniformShare
    )
    assert resolve_uniform_share("beam", None) == resolve_uniform_share("policy_annealing", None) == 0.0
    for name in SEARCHES:
        assert build_parser().parse_args(["optimize", "k.cuasm", "--search", name]).search == name
    with pytest.raises(SystemExit):
        build_parser().parse_args(["optimize", "k.cuasm", "--search", "annealing"])
    with pytest.raises(ValueError, match="unknown search"):
        policy_search("annealing", "", "sm_90", net=None)  # type: ignore[arg-type]
