"""Every no-GPU message says what to do: without cuda-python, install the ``[gpu]`` extra; with cuda-python
but no GPU or driver, that plainly. One function words both (:mod:`sass_lsp.gpu.availability`); these tests
follow it through the real worker, ``bench``, ``calibrate`` and the editor's timing view.

Where cuda-python is missing (as on the CI machine) the first case is the real one; the second runs the real
worker against a stand-in ``cuda.bindings.driver`` whose ``cuInit`` answers ``CUDA_ERROR_NO_DEVICE``, as the
real one does on a machine without a GPU.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

from sass_lsp.cli import EXIT_MISSING
from sass_lsp.gpu.availability import GPU_HINT, gpu_problem, no_gpu_message
from sass_lsp.gpu.runner import GpuRunner
from sass_lsp.ide import gpu_timing

EXTRA = "pip install 'sass-lsp[gpu]'"
EXAMPLES = ROOT / "sass_lsp" / "examples"
no_cuda_python = pytest.mark.skipif(
    importlib.util.find_spec("cuda") is not None, reason="cuda-python is installed here"
)

FAKE_DRIVER = """
import enum

class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_NO_DEVICE = 100

def cuInit(flags):
    return (CUresult.CUDA_ERROR_NO_DEVICE,)

def cuGetErrorName(status):
    return (CUresult.CUDA_SUCCESS, b"CUDA_ERROR_NO_DEVICE")

def cuGetErrorString(status):
    return (CUresult.CUDA_SUCCESS, b"no CUDA-capable device is detected")
"""


@pytest.fixture
def cuda_without_device(tmp_path: Path) -> str:
    """A PYTHONPATH (this checkout first) whose ``cuda.bindings.driver`` finds no device."""
    pkg = tmp_path / "cuda" / "bindings"
    pkg.mkdir(parents=True)
    (tmp_path / "cuda" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "driver.py").write_text(FAKE_DRIVER)
    return os.pathsep.join([str(ROOT), str(tmp_path)])


@no_cuda_python
def test_without_cuda_python_every_message_names_the_gpu_extra() -> None:
    said = no_gpu_message(ImportError("No module named 'cuda'", name="cuda"))
    assert EXTRA in said and "NVIDIA driver" in said
    with GpuRunner(timeout_s=60, env={"SASS_LSP_GPU_BACKEND": "cuda"}) as runner:
        hello = runner.hello()
    assert hello.kind == "no_device" and hello.reason == said
    assert gpu_problem() == said  # demo's probe

    bench = _cli(
        "bench",
        str(EXAMPLES / "triton_add.cubin"),
        str(EXAMPLES / "triton_add.cubin"),
        "--launch",
        str(EXAMPLES / "triton_add.launch.toml"),
    )
    assert bench.returncode == 1 and said in bench.stdout
    assert "No module named" not in bench.stdout + bench.stderr and "{" not in bench.stdout

    as_json = _cli(
        "bench",
        str(EXAMPLES / "triton_add.cubin"),
        str(EXAMPLES / "triton_add.cubin"),
        "--launch",
        str(EXAMPLES / "triton_add.launch.toml"),
        "--json",
    )
    view = gpu_timing.view_result(json.loads(as_json.stdout))
    assert view.verdict == "no_device" and view.text == said  # what the editor shows


@no_cuda_python
def test_calibrate_without_cuda_python_names_the_gpu_extra(tmp_path: Path) -> None:
    out = _cli("calibrate", "--out", str(tmp_path))
    assert EXTRA in out.stdout + out.stderr and "No module named" not in out.stdout + out.stderr
    assert not list(tmp_path.iterdir())  # nothing measured, nothing written


def test_cuda_python_without_a_device_says_so(cuda_without_device: str, monkeypatch) -> None:
    with GpuRunner(
        timeout_s=60, env={"SASS_LSP_GPU_BACKEND": "cuda", "PYTHONPATH": cuda_without_device}
    ) as r:
        hello = r.hello()
    assert hello.kind == "no_device"
    assert "cuda-python is installed" in hello.reason and "CUDA_ERROR_NO_DEVICE" in hello.reason
    assert (
        "NVIDIA GPU" in hello.reason and GPU_HINT not in hello.reason
    )  # the extra is there: no install hint
    monkeypatch.setenv("PYTHONPATH", cuda_without_device)
    assert gpu_problem() == hello.reason


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    code = "import sys; from sass_lsp.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=300
    )


@no_cuda_python
def test_optimize_without_cuda_python_names_the_gpu_extra(tmp_path: Path) -> None:
    kernel = tmp_path / "triton_add.cuasm"
    assert _cli("disasm", str(EXAMPLES / "triton_add.cubin"), "-o", str(kernel)).returncode == 0
    launch = EXAMPLES / "triton_add.launch.toml"
    out = _cli("optimize", str(kernel), "--launch", str(launch), "--budget", "5")
    assert out.returncode == EXIT_MISSING and EXTRA in out.stderr, out.stdout + out.stderr
    assert "Traceback" not in out.stderr and "{" not in out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["triton_add.cuasm"]  # nothing written
