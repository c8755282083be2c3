"""The worker protocol, its error paths, the watchdog and the TCP token check, on the fake device.

``SASS_LSP_GPU_BACKEND=fake`` makes the worker use :mod:`sass_lsp.gpu.fake_device`, a test double; the
verification and timing code it runs is the real session code. Real-GPU tests are in test_gpu_device.py.
"""

from __future__ import annotations

import json
import secrets
import socket
import subprocess
import sys
import time

import pytest

from sass_lsp.gpu.bench import bench_to_dict, bench_to_json, format_bench, run_bench
from sass_lsp.gpu.fake_device import FakeDevice, FakeKernel
from sass_lsp.gpu.protocol import b64, decode, encode
from sass_lsp.gpu.runner import GpuRunner, worker_env
from sass_lsp.gpu.session import Session
from sass_lsp.gpu.spec import parse_spec, spec_to_dict
from sass_lsp.gpu.stats import bootstrap_ratio_ci
from sass_lsp.gpu.worker import parse_listen

FAKE = {"SASS_LSP_GPU_BACKEND": "fake"}

SPEC = parse_spec("""
kernel = "k"
grid = [1]
block = [32]

[[params]]
name = "x"
dtype = "f32"
shape = [8, 8]

[[params]]
kind = "scalar"
type = "i32"
value = 64

[[params]]
name = "y"
dtype = "f32"
shape = [64]
role = "out"
""")


@pytest.fixture(scope="module")
def runner():
    with GpuRunner(timeout_s=10, env=FAKE) as active:
        yield active


def verify(runner, edit: bytes, spec=SPEC, orig: bytes = b"FAKE:ok"):
    reply = runner.verify(orig, edit, spec, [0, 1, 2])
    assert reply.ok, reply.error
    return reply.result


def test_hello_reports_the_backend(runner):
    reply = runner.hello()
    assert reply.ok and reply.result["backend"] == "fake"
    assert reply.result["device"]["gpu"] == "FakeGPU (test double)"


def test_identical_kernels_match_on_every_seed(runner):
    result = verify(runner, b"FAKE:ok")
    assert result["status"] == "match" and result["bit_identical"] and result["seeds"] == [0, 1, 2]


def test_wrong_output_names_buffer_index_values_and_seed(runner):
    result = verify(runner, b"FAKE:wrong")
    assert result["status"] == "mismatch"
    (mismatch,) = result["mismatches"]
    assert (mismatch["name"], mismatch["param_idx"], mismatch["kind"], mismatch["seed"]) == (
        "y",
        2,
        "output",
        0,
    )
    assert mismatch["first_idx"] == 32 and mismatch["expected"] != mismatch["got"]


def test_stray_write_into_input_is_caught(runner):
    result = verify(runner, b"FAKE:stray")
    assert result["status"] == "mismatch"
    assert [(m["name"], m["kind"]) for m in result["mismatches"]] == [("x", "stray_write")]


def test_unwritten_output_shows_the_poison(runner):
    result = verify(runner, b"FAKE:partial")
    assert result["mismatches"][0]["got"] == "nan" and result["mismatches"][0]["n_diff"] == 32


def test_nondeterministic_original_requires_a_tolerance(runner):
    result = verify(runner, b"FAKE:nondet", orig=b"FAKE:nondet")
    assert result["status"] == "nondeterministic" and result["nondeterministic"]
    assert "tolerance" in result["notes"][-1]


def test_fault_is_a_result_and_the_worker_restarts(runner):
    starts = runner.n_starts
    reply = runner.verify(b"FAKE:ok", b"FAKE:fault", SPEC, [0])
    assert reply.ok and reply.context_lost
    fault = reply.result["fault"]
    assert reply.result["status"] == "fault"
    assert (fault["error"], fault["side"], fault["seed"], fault["fatal"]) == (
        "CUDA_ERROR_ILLEGAL_ADDRESS",
        "edit",
        0,
        True,
    )
    assert runner.hello().ok
    assert runner.n_starts == starts + 1


def test_fault_in_the_original_is_blamed_on_the_original(runner):
    reply = runner.verify(b"FAKE:fault", b"FAKE:ok", SPEC, [0])
    assert reply.result["fault"]["side"] == "original"


def test_load_failure_is_not_fatal(runner):
    reply = runner.verify(b"FAKE:ok", b"FAKE:loadfail", SPEC, [0])
    assert reply.ok and not reply.context_lost
    assert reply.result["status"] == "load_error" and reply.result["fault"]["side"] == "edit"


def test_worker_crash_is_reported_and_recovered(runner):
    reply = runner.verify(b"FAKE:ok", b"FAKE:crash", SPEC, [0])
    assert not reply.ok and reply.kind == "crash" and reply.context_lost
    assert "exited with code 139" in reply.error["message"] and "edit seed 0" in reply.error["message"]
    assert runner.hello().ok


@pytest.mark.slow
def test_watchdog_kills_a_hanging_worker():
    with GpuRunner(timeout_s=2, env=FAKE) as active:
        assert active.hello().ok
        started = time.monotonic()
        reply = active.verify(b"FAKE:ok", b"FAKE:hang", SPEC, [0])
        elapsed = time.monotonic() - started
        assert not reply.ok and reply.kind == "timeout" and reply.context_lost
        assert reply.error["phase"] == "edit seed 0"
        assert elapsed < 10
        assert active.hello().ok and active.n_starts == 2


def test_bad_requests_get_errors_not_crashes(runner):
    assert runner.request("frobnicate").kind == "bad_request"
    assert runner.request("verify", orig_b64="!!", edit_b64="", spec=spec_to_dict(SPEC)).kind == "bad_request"
    bad = spec_to_dict(SPEC)
    bad["params"][0]["dtype"] = "f17"
    reply = runner.request("verify", orig_b64=b64(b"FAKE:ok"), edit_b64=b64(b"FAKE:ok"), spec=bad)
    assert reply.kind == "spec_error" and reply.error["path"] == "params[0].dtype"
    assert runner.hello().ok  # still the same worker


def test_progress_messages_reach_the_callback(runner):
    seen = []
    reply = runner.time(
        b"FAKE:ok", b"FAKE:ok", SPEC, rounds=4, progress=lambda p, d, t: seen.append((p, d, t))
    )
    assert reply.ok and len(reply.result["orig_ms"]) == 4
    assert any(p.startswith("round 4/4") for p, _, _ in seen)


def test_timing_result_records_method_and_clocks(runner):
    result = runner.time(b"FAKE:ok", b"FAKE:ok:0.5", SPEC, rounds=6).result
    assert result["method"] == "graph" and result["cache"] == "rotate" and result["n_sets"] >= 1
    assert result["batch"] % result["n_sets"] == 0
    assert result["clocks_before"] and result["clocks_after"]
    # a search's screening asks for none (each reading runs nvidia-smi); the timing is the same request's
    quiet = runner.time(b"FAKE:ok", b"FAKE:ok:0.5", SPEC, rounds=6, clocks=False).result
    assert quiet["clocks_before"] == quiet["clocks_after"] == {} and len(quiet["edit_ms"]) == 6
    flushed = runner.time(b"FAKE:ok", b"FAKE:ok", SPEC, rounds=2, cache="flush").result
    assert flushed["method"] == "flush+events" and flushed["n_sets"] == 1


def test_no_device_is_an_error_reply(tmp_path):
    # The real CUDA path on a machine without a GPU (or without cuda-python): a clean error, no crash.
    with GpuRunner(timeout_s=60, env={"SASS_LSP_GPU_BACKEND": "cuda", "CUDA_VISIBLE_DEVICES": ""}) as active:
        reply = active.hello()
    if reply.ok:
        pytest.skip("a GPU is visible here")
    assert reply.kind == "no_device" and not reply.context_lost


# -- bench ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "verdict", "verified"),
    [
        (b"FAKE:ok:0.9", "faster", True),
        (b"FAKE:ok", "not_significant", False),
        (b"FAKE:ok:1.1", "slower", False),
        (b"FAKE:wrong:0.5", "mismatch", False),
        (b"FAKE:fault", "fault", False),
        (b"FAKE:hang", "timeout", False),
    ],
)
def test_run_bench_verdicts(edit, verdict, verified):
    with GpuRunner(timeout_s=3, env=FAKE) as active:
        phases = []
        result = run_bench(
            b"FAKE:ok",
            edit,
            SPEC,
            seeds=2,
            rounds=12,
            runner=active,
            progress=lambda p, d, t: phases.append(p),
        )
    assert (result.verdict, result.verified) == (verdict, verified)
    assert result.device["gpu"] == "FakeGPU (test double)"
    text = format_bench(result)
    assert ("VERIFIED" in text) == verified
    assert json.loads(bench_to_json(result))["verdict"] == verdict
    if verdict in ("faster", "slower", "not_significant"):
        assert result.timing is not None and result.timing.rounds == 12
        assert result.clocks_before and phases[0].startswith("verify:") and phases[-1].startswith("time:")
        data = bench_to_dict(result)
        assert data["timing"]["orig"]["iqr"] >= 0 and data["timing"]["ci"]["width"] > 0
    else:
        assert result.timing is None


def test_bench_mismatch_can_still_be_timed_when_asked():
    with GpuRunner(timeout_s=5, env=FAKE) as active:
        result = run_bench(
            b"FAKE:ok", b"FAKE:wrong:0.5", SPEC, seeds=1, rounds=6, runner=active, time_on_mismatch=True
        )
    assert result.verdict == "mismatch" and not result.verified and result.timing is not None
    assert "NOT verified" in result.message


# -- TCP -----------------------------------------------------------------------------------------------------


def test_listen_accepts_only_loopback():
    assert parse_listen("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_listen("[::1]:5000") == ("::1", 5000)
    for bad in ("0.0.0.0:5000", "192.168.1.4:80", "example.com:1", "127.0.0.1"):
        with pytest.raises(ValueError):
            parse_listen(bad)


@pytest.fixture(scope="module")
def tcp_server(tmp_path_factory):
    token = secrets.token_hex(16)
    token_file = tmp_path_factory.mktemp("tok") / "token"
    token_file.write_text(token + "\n")
    token_file.chmod(0o600)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sass_lsp.gpu.worker",
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            str(token_file),
            "--timeout",
            "3",
        ],
        stdout=subprocess.PIPE,
        env=worker_env(FAKE),
    )
    line = proc.stdout.readline()
    address = json.loads(line)["listening"]
    yield address, token
    proc.kill()
    proc.wait()


def test_tcp_refuses_a_wrong_or_missing_token(tcp_server):
    address, token = tcp_server
    host, _, port = address.rpartition(":")
    for first in ({"id": 1, "op": "auth", "token": "x" * 32}, {"id": 1, "op": "hello"}):
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            stream = sock.makefile("rwb", buffering=0)
            stream.write(encode(first))
            reply = decode(stream.readline())
            assert not reply["ok"] and reply["error"]["kind"] == "auth"
            assert stream.readline() == b""  # and the connection is closed
    with GpuRunner(address=address, token="wrong-token-0123456789", timeout_s=10) as remote:
        reply = remote.hello()
        assert not reply.ok and reply.kind == "auth"


def test_tcp_with_the_token_serves_requests_and_survives_faults(tcp_server):
    address, token = tcp_server
    with GpuRunner(address=address, token=token, timeout_s=20) as remote:
        assert remote.hello().ok
        assert remote.verify(b"FAKE:ok", b"FAKE:ok", SPEC, [0]).result["status"] == "match"
        fault = remote.verify(b"FAKE:ok", b"FAKE:fault", SPEC, [0])
        assert fault.result["status"] == "fault"
        hang = remote.verify(b"FAKE:ok", b"FAKE:hang", SPEC, [0])
        assert hang.kind == "timeout"
        assert remote.verify(b"FAKE:ok", b"FAKE:ok", SPEC, [0]).result["status"] == "match"


def test_token_file_must_hold_a_real_token(tmp_path):
    short = tmp_path / "t"
    short.write_text("abc")
    short.chmod(0o600)
    proc = subprocess.run(
        [sys.executable, "-m", "sass_lsp.gpu.worker", "--listen", "127.0.0.1:0", "--token-file", str(short)],
        capture_output=True,
        text=True,
        env=worker_env(FAKE),
        timeout=60,
    )
    assert proc.returncode == 2 and "at least 16 characters" in proc.stderr


def test_token_file_readable_by_others_is_refused_with_a_hint(tmp_path):
    shared = tmp_path / "t"
    shared.write_text(secrets.token_hex(16))
    shared.chmod(0o644)
    proc = subprocess.run(
        [sys.executable, "-m", "sass_lsp.gpu.worker", "--listen", "127.0.0.1:0", "--token-file", str(shared)],
        capture_output=True,
        text=True,
        env=worker_env(FAKE),
        timeout=60,
    )
    assert proc.returncode == 2 and "other users" in proc.stderr and "chmod 600" in proc.stderr
    assert "Traceback" not in proc.stderr


class _PlacementBiasedDevice(FakeDevice):
    """A fake GPU where the module loaded first runs 0.4% slower, as code placement can make a real one."""

    def __init__(self) -> None:
        super().__init__()
        self._live: list[FakeKernel] = []
        self.load_order: list[str] = []

    def load(self, cubin: bytes, kernel: str, shared_bytes: int) -> FakeKernel:
        loaded = super().load(cubin, kernel, shared_bytes)
        if not self._live:
            loaded.factor *= 1.004
        self._live.append(loaded)
        self.load_order.append(cubin.decode())
        return loaded

    def unload(self, kernel: FakeKernel) -> None:
        self._live.remove(kernel)


@pytest.mark.parametrize("edit_factor", [1.0, 1 / 1.02])
def test_timing_blocks_cancel_a_load_order_bias(edit_factor):
    orig, edit = b"FAKE:ok", f"FAKE:ok:{edit_factor}".encode()
    device = _PlacementBiasedDevice()
    result = Session(device).time(orig, edit, SPEC, rounds=40, blocks=4)
    blocks = result["round_blocks"]
    assert [blocks.count(b) for b in range(4)] == [10, 10, 10, 10]
    assert device.load_order == [orig.decode(), edit.decode(), edit.decode(), orig.decode()] * 2
    ci = bootstrap_ratio_ci(result["orig_ms"], result["edit_ms"], blocks=blocks)
    if edit_factor == 1.0:
        assert ci.contains_one, ci
        # One block, the old design: the original always loads first and an identical copy "wins".
        single = Session(_PlacementBiasedDevice()).time(orig, edit, SPEC, rounds=40, blocks=1)
        assert bootstrap_ratio_ci(single["orig_ms"], single["edit_ms"]).low > 1.0
    else:
        assert ci.low > 1.01 and ci.high < 1.03, ci


def test_a_session_generates_each_seed_s_inputs_once_and_they_stay_pristine():
    """A search verifies every candidate on the same seeds: the inputs are made once per (buffer, seed);
    a stray write on the device never reaches the remembered host copy."""
    session = Session(FakeDevice())
    first = session.verify(b"FAKE:ok", b"FAKE:ok", SPEC, [0, 1])
    assert first["status"] == "match" and session.inputs.hits == 0
    for _ in range(2):
        stray = session.verify(b"FAKE:ok", b"FAKE:stray", SPEC, [0, 1])
        assert [(m["name"], m["kind"]) for m in stray["mismatches"]] == [("x", "stray_write")]
    again = session.verify(b"FAKE:ok", b"FAKE:ok", SPEC, [0, 1])
    # x once per seed and call: the stray edits stop at seed 0 (hits 1, 2), the last call reuses both (3, 4)
    assert verdict(again) == verdict(first) and session.inputs.hits == 4
    assert {"load", "upload", "launch", "download", "compare"} <= set(again["phase_ms"])
    timed = session.time(b"FAKE:ok", b"FAKE:ok", SPEC, rounds=4, seed=0)
    assert timed["status"] == "ok" and session.inputs.hits == 5


class CountingDevice(FakeDevice):
    """Counts the launches of each verification's original (the first of the two modules it loads)."""

    def __init__(self) -> None:
        super().__init__()
        self.originals: list = []  # kept alive, so identity tells them apart
        self.original_runs = 0

    def load(self, cubin, name, shared_bytes=0):  # noqa: ANN001, ANN201
        kernel = super().load(cubin, name, shared_bytes)
        if not self.n_loads % 2:
            self.originals.append(kernel)
        self.n_loads += 1
        return kernel

    n_loads = 0

    def launch(self, kernel, geometry, args) -> None:  # noqa: ANN001
        self.original_runs += any(kernel is k for k in self.originals)
        super().launch(kernel, geometry, args)


def verdict(result: dict) -> dict:
    """A verification's result without ``phase_ms`` (where its time went, which differs per call)."""
    return {k: v for k, v in result.items() if k != "phase_ms"}


@pytest.mark.parametrize(
    ("orig", "original_runs"),
    # seed 0 twice (the repeatability check), then seeds 1 and 2 once each, whatever the edits; an
    # original that fails its own check (nondeterministic, writes an input) stops every verification there
    [(b"FAKE:ok", 4), (b"FAKE:partial", 4), (b"FAKE:nondet", 2), (b"FAKE:stray", 1)],
)
def test_the_original_runs_once_per_seed_and_every_verdict_is_as_without_that(orig, original_runs):
    """The original's outputs on a seed are kept for the next candidates; what each candidate's
    verification says is what a fresh worker says."""
    kept = Session(CountingDevice())
    for edit in (b"FAKE:ok", b"FAKE:wrong", b"FAKE:stray", b"FAKE:partial", b"FAKE:ok:1.5", b"FAKE:ok"):
        fresh = Session(FakeDevice()).verify(orig, edit, SPEC, [0, 1, 2])
        assert verdict(kept.verify(orig, edit, SPEC, [0, 1, 2])) == verdict(fresh), edit
    assert kept.device.original_runs == original_runs
    other = kept.verify(b"FAKE:ok:2", b"FAKE:ok:2", SPEC, [0])  # another original: its own runs
    assert other["status"] == "match" and kept.device.original_runs == original_runs + 2


def test_nvidia_smi_queries_the_gpu_it_is_given(tmp_path, monkeypatch):
    """The clocks are read from the worker's own GPU (by PCI bus id), not always from nvidia-smi's GPU 0:
    with CUDA_VISIBLE_DEVICES picking one GPU of several, CUDA's ordinal 0 is another GPU's index 0."""
    import os

    from sass_lsp.gpu.device import nvidia_smi

    smi = tmp_path / "nvidia-smi"
    smi.write_text('#!/bin/sh\n[ "$4" = "00000000:19:00.0" ] && echo "1755, 61" || echo "1980, 40"\n')
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    fields = ["clocks.sm", "temperature.gpu"]
    assert nvidia_smi(fields, "00000000:19:00.0") == {"clocks.sm": "1755", "temperature.gpu": "61"}
    assert nvidia_smi(fields) == {"clocks.sm": "1980", "temperature.gpu": "40"}
