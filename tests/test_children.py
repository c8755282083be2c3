"""A killed command leaves no temp files and no nvdisasm behind (SIGTERM: cleanup runs; SIGKILL: the kernel
kills the child with its parent)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from paths import TRITON_CORPUS

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")


def _slow_nvdisasm(tmp_path: Path) -> tuple[Path, Path]:
    """A stand-in nvdisasm that records its pid and sleeps."""
    pid_file = tmp_path / "nvdisasm.pid"
    fake = tmp_path / "nvdisasm"
    fake.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 60\n")
    fake.chmod(0o755)
    return fake, pid_file


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); its state is Z
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(")")[-1].split()[0] != "Z"


def _wait_for(path: Path, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killed_disasm_leaves_no_child_and_no_partial_output(tmp_path: Path, sig: signal.Signals) -> None:
    fake, pid_file = _slow_nvdisasm(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    env = dict(os.environ, SASS_LSP_NVDISASM=str(fake), TMPDIR=str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    cmd = [sys.executable, "-m", "sass_lsp.cli", "disasm", str(TRITON_CORPUS / "triton_add.cubin")]
    proc = subprocess.Popen([*cmd, "-o", str(out / "k.cuasm")], env=env, stderr=subprocess.PIPE)
    child = _wait_for(pid_file)
    proc.send_signal(sig)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "nvdisasm outlived the command"
    assert list(out.iterdir()) == []
    if sig == signal.SIGTERM:
        assert proc.returncode == 128 + signal.SIGTERM
        assert list((tmp_path / "tmp").iterdir()) == []  # the temp directory was removed
        assert b"Traceback" not in proc.stderr.read()


_PARENT = """
import sys, threading, time
from sass_lsp.gpu.runner import GpuRunner
runner = GpuRunner(timeout_s=600, env={"SASS_LSP_GPU_BACKEND": "fake"})
assert runner.hello().ok
print(runner._transport.proc.pid, flush=True)
from sass_lsp.gpu.spec import parse_spec
spec = parse_spec('kernel = "k"\\ngrid = [1]\\nblock = [32]\\n'
                  '[[params]]\\nname = "y"\\ndtype = "f32"\\nshape = [8]\\n')
threading.Thread(target=runner.verify, args=(b"FAKE:ok", b"FAKE:hang", spec, [0]), daemon=True).start()
time.sleep(600)
"""


def test_a_busy_gpu_worker_dies_with_its_killed_parent(tmp_path: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, text=True)
    worker = int(parent.stdout.readline())
    time.sleep(1.0)  # the worker is inside the hanging kernel now
    parent.kill()
    parent.wait(timeout=30)
    deadline = time.monotonic() + 10
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(worker), "the GPU worker outlived its killed parent"
