"""Every command does what its help says: serve's options, profile and optimize without their tools,
optimize's min-gain, wall-clock budget and interrupted runs, train's time limit, suggest's ranking, and the
help itself."""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from paths import TRITON_CORPUS

from sass_lsp.cli import DEMO_CUBIN, EXAMPLES, EXIT_MISSING, CliError, HelpFormatter, build_parser
from sass_lsp.cuasm import write_cuasm
from sass_lsp.gpu import optimize as optimize_mod
from sass_lsp.gpu.bench import BenchResult, Timing
from sass_lsp.gpu.optimize import DEFAULT_MIN_GAIN, optimize, output_path, report_dict, write_outputs
from sass_lsp.gpu.stats import RatioCI, Summary
from sass_lsp.schedule.search import Candidate, Measured, screen

# Run numbers, dates, GPU names and measured figures belong in docs/evaluation.md, not in help texts.
NARRATIVE = re.compile(
    r"\bH[12]00\b|\bruns? \d+|\b20\d\d-\d\d-\d\d\b|model card\)", re.IGNORECASE
)  # "(…: model card)" cites evidence


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 300):
    return subprocess.run(
        [sys.executable, "-m", "sass_lsp", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


# ------------------------------------------------------------------------------------------------- help


def test_every_command_has_a_description_and_every_option_help_and_its_default() -> None:
    commands = _subcommands()
    assert {"serve", "check", "profile", "optimize", "train", "suggest", "worker"} <= set(commands)
    for name, parser in commands.items():
        assert parser.description and len(parser.description) > 20, name
        assert not NARRATIVE.search(parser.description), (name, parser.description)
        formatter = HelpFormatter(parser.prog)
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            where = f"{name} {'/'.join(action.option_strings) or action.dest}"
            assert action.help and action.help.strip(), f"{where}: no help"
            shown = formatter._get_help_string(action) or ""
            assert not NARRATIVE.search(shown), f"{where}: {shown}"
            flag = action.nargs == 0  # store_true: off unless given
            if action.option_strings and not (flag or action.required):
                assert "default" in shown, f"{where}: the help does not say its default: {shown}"
        parser.format_help()  # every %(default)s and %% in the texts formats


def test_help_shows_defaults_and_the_worker_usage_names_its_command(capsys: pytest.CaptureFixture) -> None:
    optimize_help = _subcommands()["optimize"].format_help()
    assert "(default: 1.005)" in optimize_help and "(default: 300.0)" in optimize_help
    assert "exit status" in optimize_help and "no GPU" in optimize_help
    from sass_lsp.gpu.worker import main as worker_main

    with pytest.raises(SystemExit):
        worker_main(["--listen", "127.0.0.1:1"])  # no --token-file: a usage error
    assert capsys.readouterr().err.startswith("usage: sass-lsp worker ")


# ------------------------------------------------------------------------------------------------ serve


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lsp_message(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_lsp_message(stream) -> dict:  # noqa: ANN001 (a socket file)
    length = 0
    while (line := stream.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(stream.read(length))


def test_serve_tcp_answers_initialize_and_logs_to_the_file(tmp_path: Path) -> None:
    port, log = _free_port(), tmp_path / "server.log"
    cmd = [sys.executable, "-m", "sass_lsp", "serve", "--tcp", f"127.0.0.1:{port}", "--insecure-no-auth"]
    proc = subprocess.Popen([*cmd, "--log-file", str(log), "--log-level", "debug"], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=30)
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                assert time.monotonic() < deadline, "the server never listened"
                time.sleep(0.2)
        with conn, conn.makefile("rwb", buffering=0) as stream:
            init = {"processId": None, "rootUri": None, "capabilities": {}}
            stream.write(_lsp_message({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
            reply = _read_lsp_message(stream)
            assert reply["id"] == 1 and "textDocumentSync" in reply["result"]["capabilities"], reply
            stream.write(_lsp_message({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
            assert _read_lsp_message(stream)["id"] == 2
            stream.write(_lsp_message({"jsonrpc": "2.0", "method": "exit"}))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    text = log.read_text()
    assert f"listening on 127.0.0.1:{port}" in text and " DEBUG " in text, text[:2000]


def test_serve_refuses_a_non_loopback_address() -> None:
    proc = run_cli("serve", "--tcp", "0.0.0.0:2087", timeout=60)
    assert proc.returncode == 2 and "only loopback addresses" in proc.stderr, proc.stderr


# ---------------------------------------------------------------------------------------------- profile


def test_profile_without_ncu_fails_naming_the_tool_and_writes_nothing(tmp_path: Path) -> None:
    kernel = tmp_path / "k.cubin"
    kernel.write_bytes(DEMO_CUBIN.read_bytes())
    shutil.copy(EXAMPLES / "triton_add.launch.toml", tmp_path / "k.launch.toml")
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}  # the venv's bin: no ncu there
    proc = run_cli("profile", str(kernel), "--launch", str(tmp_path / "k.launch.toml"), env=env, timeout=120)
    assert proc.returncode == EXIT_MISSING == 3, proc.stderr
    assert "ncu (Nsight Compute) not found" in proc.stderr and "hint: install Nsight Compute" in proc.stderr
    assert "Traceback" not in proc.stderr and "wrote" not in proc.stderr + proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.cubin", "k.launch.toml"]


# --------------------------------------------------------------------------------------------- optimize


def _bench(low: float, *, verified: bool = True) -> BenchResult:
    """A confirmation whose speedup interval is [low, low + 0.004]."""
    summary = Summary(n=40, median=1.0, q1=1.0, q3=1.0, mean=1.0, min=1.0, max=1.0)
    ci = RatioCI(ratio=low + 0.002, low=low, high=low + 0.004, confidence=0.95, n_resamples=2000)
    timing = Timing(summary, summary, ci, rounds=40, batch=1, method="graph", cache="warm", n_sets=1)
    verdict = "faster" if verified else "same"
    return BenchResult("k", "k", verdict, verified, f"{(ci.ratio - 1) * 100:+.2f}% faster", timing=timing)


class FakeMeasure:
    """Screens each candidate at a fixed speedup after ``delay`` seconds; confirms at a given interval."""

    def __init__(self, speedup: float, confirm_low: float, *, delay: float = 0.0, gpu_s: float = 0.01):
        self.speedup, self.confirm_low, self.delay, self.gpu_s = speedup, confirm_low, delay, gpu_s
        self.calls = 0
        self.confirmed: list[str] = []

    def __call__(self, text: str) -> Measured:
        self.calls += 1
        time.sleep(self.delay)
        return Measured(
            f"k{self.calls}", "match", self.speedup, self.speedup - 0.001, self.speedup + 0.001, 0.01
        )

    def confirm(self, text: str) -> BenchResult:
        time.sleep(self.delay)
        self.confirmed.append(text)
        return _bench(self.confirm_low)


@functools.cache
def _triton_add_text() -> str:
    return write_cuasm(DEMO_CUBIN.read_bytes(), source_name="triton_add.cubin")


def _candidates(n: int) -> list[Candidate]:
    """``n`` distinct schedules that assemble: the original with one more stall cycle on its i-th S01."""
    lines = _triton_add_text().splitlines(keepends=True)
    rows = [i for i, line in enumerate(lines) if ":S01]" in line][:n]
    assert len(rows) == n
    out = []
    for row in rows:
        edited = [*lines[:row], lines[row].replace(":S01]", ":S02]"), *lines[row + 1 :]]
        out.append(Candidate("".join(edited), "test"))
    return out


def _synthetic(n: int):  # noqa: ANN202 (Iterator[Candidate])
    """Distinct schedules for a measure that never assembles them."""
    for i in range(n):
        yield Candidate(f"[B------:R-:W-:-:S01] IADD3 R{i}, R1, R2, RZ ;\n", "test")


@pytest.mark.parametrize(("low", "written"), [(1.003, False), (1.006, True)])
def test_optimize_writes_a_schedule_only_above_the_min_gain(tmp_path: Path, low: float, written: bool):
    measure = FakeMeasure(1.02, low)
    search = functools.partial(screen, _candidates(3))
    result = optimize(search, measure, 0.05, min_gain=DEFAULT_MIN_GAIN)  # type: ignore[arg-type]
    assert measure.confirmed and result.confirmed_low == low
    assert result.verified is written and DEFAULT_MIN_GAIN == 1.005
    stem = tmp_path / "k.optimized"
    report = report_dict(result, kernel="k", budget_s=0.05)
    paths = write_outputs(result, stem, report)
    assert output_path(stem, ".cuasm").exists() is written and output_path(stem, ".cubin").exists() is written
    assert report["verified"] is written and report["min_gain"] == 1.005 and len(paths) == 2 + 2 * written
    message = optimize_mod.summary_message(result)
    assert message.startswith("verified") if written else "less than --min-gain 1.005" in message
    # --min-gain 1.0 keeps the smaller gain too; a screened speedup below the threshold is never confirmed
    assert optimize(search, FakeMeasure(1.02, low), 0.05, min_gain=1.0).verified  # type: ignore[arg-type]
    below = FakeMeasure(1.004, 1.006)
    assert optimize(search, below, 0.05).confirmation is None and not below.confirmed  # type: ignore[arg-type]


def test_optimize_budget_bounds_wall_time_with_a_slow_measure() -> None:
    """Each measurement takes 0.25 s of wall time but reports 0.01 GPU s: the 300 GPU s budget would allow
    30,000; the 2 s wall-clock deadline ends screening with room for the confirmation."""
    measure = FakeMeasure(1.02, 1.01, delay=0.25)
    search = functools.partial(screen, _synthetic(10_000))
    t0 = time.monotonic()
    result = optimize(search, measure, 300.0, deadline=t0 + 2.0)  # type: ignore[arg-type]
    took = time.monotonic() - t0
    assert result.stopped == "wall_clock" and result.confirmation is not None
    assert took <= 2.0 + 0.25, took  # the margin: one measurement's estimate error
    assert 2 <= len(result.log.trials) <= 8 and result.log.spent < 1.0


def test_optimize_rewrites_the_report_as_it_goes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(optimize_mod, "UPDATE_EVERY_S", 0.0)
    seen: list[tuple[int, str]] = []
    search = functools.partial(screen, list(_synthetic(4)))
    optimize(
        search, FakeMeasure(0.99, 1.0), 1.0, on_update=lambda r: seen.append((len(r.log.trials), r.stopped))
    )  # type: ignore[arg-type]
    assert seen == [(1, "running"), (2, "running"), (3, "running"), (4, "running"), (4, "exhausted")]


@pytest.fixture
def fake_gpu_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("SASS_LSP_GPU_BACKEND", "fake")  # answers hello; rejects every real cubin
    (tmp_path / "k.cuasm").write_text(_triton_add_text())
    (tmp_path / "k.launch.toml").write_text((EXAMPLES / "triton_add.launch.toml").read_text())
    return tmp_path / "k.cuasm", tmp_path / "k.launch.toml"


def test_an_interrupted_optimize_keeps_its_report_and_log(
    fake_gpu_kernel: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    from sass_lsp.cli_policy import OptimizeJob, optimize_one
    from sass_lsp.gpu.measure import GpuMeasure

    finish = GpuMeasure.finish

    def interrupted_after_three(self, prepared):  # noqa: ANN001, ANN202
        if self.calls == 3:
            raise KeyboardInterrupt
        return finish(self, prepared)

    monkeypatch.setattr(GpuMeasure, "finish", interrupted_after_three)
    cuasm, launch = fake_gpu_kernel
    stem = cuasm.with_name("k.optimized")
    summary = optimize_one(OptimizeJob(cuasm, launch, 60.0, stem, None, 0))
    assert summary["interrupted"] and summary["n_candidates"] == 3
    report = json.loads(output_path(stem, ".report.json").read_text())
    assert report["stopped"] == "interrupted" and len(report["trials"]) == 3
    records = [json.loads(line) for line in output_path(stem, ".measurements.jsonl").read_text().splitlines()]
    assert [r["kind"] for r in records] == ["original", "screen", "screen", "screen"]
    assert [r["key"] for r in records[1:]] == [t["key"] for t in report["trials"]]
    assert not output_path(stem, ".cuasm").exists()


def _gpu_answers() -> bool:
    from sass_lsp.gpu import GpuRunner

    with GpuRunner(timeout_s=60) as runner:
        return runner.hello().ok


def test_optimize_without_a_gpu_stops_before_loading_the_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SASS_LSP_GPU_BACKEND", raising=False)
    if _gpu_answers():
        pytest.skip("a GPU answers here")
    (tmp_path / "k.cuasm").write_text(_triton_add_text())
    shutil.copy(EXAMPLES / "triton_add.launch.toml", tmp_path / "k.launch.toml")
    from sass_lsp import cli_policy

    def no_policy(path):  # noqa: ANN001, ANN202
        raise AssertionError("the policy was loaded")

    monkeypatch.setattr(cli_policy, "load_net", no_policy)
    job = cli_policy.OptimizeJob(
        tmp_path / "k.cuasm", tmp_path / "k.launch.toml", 300.0, tmp_path / "k.opt", None, 0
    )
    with pytest.raises(CliError) as caught:
        cli_policy.optimize_one(job)
    assert caught.value.code == EXIT_MISSING
    t0 = time.monotonic()
    env = {k: v for k, v in os.environ.items() if k != "SASS_LSP_GPU_BACKEND"}
    proc = run_cli("optimize", str(tmp_path / "k.cuasm"), env=env, timeout=120)
    took = time.monotonic() - t0
    assert proc.returncode == EXIT_MISSING, proc.stderr
    assert "no GPU timing" in proc.stderr and "nothing searched" in proc.stderr
    assert "pip install 'sass-lsp[gpu]'" in proc.stderr
    assert "driver" in proc.stderr and "Traceback" not in proc.stderr
    assert took < 60, took  # at once: start-up and one worker hello, not a search (minutes)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.cuasm", "k.launch.toml"]


def test_optimize_refuses_a_min_gain_below_one(fake_gpu_kernel: tuple[Path, Path]) -> None:
    proc = run_cli("optimize", str(fake_gpu_kernel[0]), "--min-gain", "0.99", timeout=120)
    assert proc.returncode == 2 and "--min-gain 0.99" in proc.stderr and "hint:" in proc.stderr


# ---------------------------------------------------------------------------------------------- suggest


def test_suggest_top_1_is_the_first_of_top_3() -> None:
    """On gelu_bias the first suggestion of --top 1 was once worse than that of --top 3: the search explored
    top + 1 first moves. Its width is fixed now, so the ranking is the same whatever --top."""
    pytest.importorskip("torch")
    from sass_lsp.cli_policy import _text_and_arch, load_net
    from sass_lsp.policy.suggest import suggest

    text, arch = _text_and_arch(TRITON_CORPUS / "gelu_bias.cuasm")
    net = load_net(None)
    one = suggest(text, arch, net=net, top=1, time_budget_s=None)
    three = suggest(text, arch, net=net, top=3, time_budget_s=None)
    assert len(three) > 1 and one == three[:1]


# ------------------------------------------------------------------------------------------------ train


@pytest.mark.slow
def test_train_time_limit_bounds_the_whole_run(tmp_path: Path) -> None:
    """``train --time-limit`` counts from the command's start (torch's import included): warm start, PPO,
    saving and evaluation end by then. The margin, 8 s, is the interpreter's start-up and the imports before
    the command starts its clock, plus one environment step or one kernel's evaluation past the deadline."""
    pytest.importorskip("torch")
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is needed to build the CUDA C training kernels")
    from sass_lsp.cli_policy import compile_training_kernels
    from sass_lsp.policy.model import WEIGHTS

    generated = tmp_path / "corpus" / "sm_90"
    generated.mkdir(parents=True)  # empty: the Triton and train_kernels.cu sets only
    compile_training_kernels(tmp_path / "policy")  # cached where train looks: not timed
    limit, margin = 40.0, 8.0
    args = ["train", "--time-limit", str(limit), "--steps", "1000000", "--envs", "2"]
    t0 = time.monotonic()
    proc = run_cli(*args, "--generated", str(generated), "--out", str(tmp_path / "out"), timeout=600)
    took = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert took <= limit + margin, took
    card = json.loads((tmp_path / "out" / "model_card.json").read_text())
    assert card["steps"] < 1_000_000 and (tmp_path / "out" / WEIGHTS).stat().st_size > 0
    evaluated = set(card["eval"]["kernels"]) | set(card["eval"]["not_evaluated"])
    assert evaluated == {d["name"] for d in card["data"]}
