"""``sass-lsp optimize`` over several kernels: one Ray task per kernel (here on the fake GPU backend, which
rejects every real cubin, so the plumbing is what is tested: jobs, worker processes, outputs, errors)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sass_lsp.cli_policy import OptimizeJob, optimize_one
from sass_lsp.cuasm import write_cuasm
from sass_lsp.gpu.fanout import fan_out
from sass_lsp.gpu.optimize import output_path

EXAMPLES = Path(__file__).resolve().parents[1] / "sass_lsp" / "examples"


@pytest.fixture
def two_kernels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[OptimizeJob]:
    monkeypatch.setenv("SASS_LSP_GPU_BACKEND", "fake")  # Ray's local workers inherit the environment
    text = write_cuasm((EXAMPLES / "triton_add.cubin").read_bytes(), source_name="triton_add.cubin")
    launch = (EXAMPLES / "triton_add.launch.toml").read_text()
    jobs = []
    for name in ("a", "b"):
        (tmp_path / f"{name}.cuasm").write_text(text)
        (tmp_path / f"{name}.launch.toml").write_text(launch)
        jobs.append(
            OptimizeJob(
                tmp_path / f"{name}.cuasm",
                tmp_path / f"{name}.launch.toml",
                0.005,  # GPU seconds: the fake backend rejects each candidate in ~3 ms
                tmp_path / f"{name}.optimized",
                None,
                0,
            )
        )
    return jobs


@pytest.mark.slow
def test_fan_out_runs_each_kernel_in_its_own_ray_task(two_kernels: list[OptimizeJob]) -> None:
    finished: list[int] = []
    results = fan_out(optimize_one, two_kernels, on_done=lambda i, r: finished.append(i))
    assert sorted(finished) == [0, 1]
    for job, summary in zip(two_kernels, results, strict=True):
        assert "error" not in summary, summary
        assert summary["cuasm"] == str(job.cuasm) and summary["gpu"] == "FakeGPU (test double)"
        assert summary["pid"] != os.getpid()  # ran in a Ray worker, not here
        report = json.loads(output_path(job.out_stem, ".report.json").read_text())
        assert report["n_candidates"] == summary["n_candidates"] > 0
        # the fake GPU loads no real cubin: every candidate is rejected, none is written out
        assert report["verified"] is False and report["n_rejected"] == report["n_candidates"]
        assert not output_path(job.out_stem, ".cubin").exists()


@pytest.mark.slow
def test_a_failing_job_is_its_own_row(two_kernels: list[OptimizeJob]) -> None:
    two_kernels[1].launch.write_text("kernel = 3\n")
    results = fan_out(optimize_one, two_kernels)
    assert "error" not in results[0]
    assert "CliError" in results[1]["error"] and "b.launch.toml" in results[1]["error"]


@pytest.mark.slow
def test_cli_checks_launch_specs_per_kernel(two_kernels: list[OptimizeJob]) -> None:
    a, b = (str(j.cuasm) for j in two_kernels)
    cmd = [sys.executable, "-m", "sass_lsp", "optimize", a, b, "--launch", str(two_kernels[0].launch)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=os.environ)
    assert done.returncode != 0 and "2 kernels but 1 --launch specs" in done.stderr, done.stderr
    done = subprocess.run([*cmd[:6], "--out", "x"], capture_output=True, text=True, env=os.environ)
    assert done.returncode != 0 and "--out names one output stem" in done.stderr, done.stderr


@pytest.mark.slow
def test_outputs_never_overwrite_the_input(two_kernels: list[OptimizeJob]) -> None:
    """The default stem K.optimized gives K.optimized.cuasm (``with_suffix`` gave K.cuasm: the user's
    file), and an ``--out`` whose .cuasm is the input is refused before anything runs."""
    a = two_kernels[0].cuasm
    stem = a.with_name(a.stem + ".optimized")
    assert output_path(stem, ".cuasm") == a.with_name(a.stem + ".optimized.cuasm")
    assert output_path(Path("d/k.v2"), ".report.json") == Path("d/k.v2.report.json")
    before = a.read_text()
    cmd = [sys.executable, "-m", "sass_lsp", "optimize", str(a), "--launch", str(two_kernels[0].launch)]
    done = subprocess.run([*cmd, "--out", str(a.with_suffix(""))], capture_output=True, text=True)
    assert done.returncode != 0 and "would write the best schedule over" in done.stderr, done.stderr
    assert a.read_text() == before


def test_uniform_share_reaches_the_walk_and_the_report(two_kernels: list[OptimizeJob]) -> None:
    """``--uniform-share`` changes what the surrogate walk draws (the same seed, other first moves) and the
    report names the search and the share that made it (none given: the default, 0.5)."""
    first_moves = {}
    for share, used in ((0.0, 0.0), (1.0, 1.0), (None, 0.5)):
        job = dataclasses.replace(
            two_kernels[0], uniform_share=share, out_stem=two_kernels[0].out_stem.with_suffix(f".s{used:g}")
        )
        summary = optimize_one(job)
        assert "error" not in summary, summary
        report = json.loads(output_path(job.out_stem, ".report.json").read_text())
        assert report["search"] == {"name": "policy_surrogate", "uniform_share": used}
        first_moves[used] = report["trials"][0]["moves"]
    assert first_moves[0.0] != first_moves[1.0], first_moves


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--uniform-share", "1.5"], "--uniform-share: uniform share 1.5 is not a share"),
        (["--uniform-share", "0.5", "--search", "beam"], "policy_moves searches, not beam"),
    ],
)
@pytest.mark.slow
def test_cli_refuses_a_uniform_share_it_cannot_use(
    two_kernels: list[OptimizeJob], extra: list[str], message: str
) -> None:
    a = str(two_kernels[0].cuasm)
    cmd = [sys.executable, "-m", "sass_lsp", "optimize", a, "--launch", str(two_kernels[0].launch), *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, env=os.environ)
    assert done.returncode != 0 and message in done.stderr and "hint:" in done.stderr, done.stderr
    assert not output_path(two_kernels[0].out_stem, ".report.json").exists()
