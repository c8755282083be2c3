"""Is there a GPU for "Time on GPU" and "Optimize schedule", and if not, why: asked before any work starts,
in a child process (the server never loads the CUDA driver), once per device selection.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Mapping
from functools import lru_cache

BACKEND_ENV = "SASS_LSP_GPU_BACKEND"  # sass_lsp.gpu.worker's (importing sass_lsp.gpu loads numpy: ~0.6 s)
VISIBLE = "CUDA_VISIBLE_DEVICES"
INSTALL_HINT = "install the GPU extra (pip install 'sass-lsp[gpu]') and an NVIDIA driver"
PROBE_TIMEOUT_S = 60.0

_PROBE = """
from cuda.bindings import driver as d
err, = d.cuInit(0)
if err != d.CUresult.CUDA_SUCCESS:
    raise SystemExit(f"the CUDA driver does not start ({getattr(err, 'name', err)})")
err, n = d.cuDeviceGetCount()
if err != d.CUresult.CUDA_SUCCESS or n == 0:
    raise SystemExit("no CUDA device is visible")
"""


def device_env(device: int, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment that makes CUDA device ``device`` (counted among those the server's own
    ``CUDA_VISIBLE_DEVICES`` leaves visible) the only one, and so device 0, in the GPU worker."""
    visible = environ.get(VISIBLE)
    if visible is None:
        return {VISIBLE: str(device)}
    ids = [v.strip() for v in visible.split(",") if v.strip()]
    return {VISIBLE: ids[device] if device < len(ids) else ""}


def no_gpu_reason(device: int) -> str | None:
    """None when device ``device`` answers; else one sentence that says why not and what to install."""
    if os.environ.get(BACKEND_ENV) == "fake":  # the worker's test double needs no driver
        return None
    if importlib.util.find_spec("cuda") is None:
        return f"cuda-python is not installed in the server's Python ({sys.executable}): {INSTALL_HINT}"
    visible = device_env(device)[VISIBLE]
    if not visible:
        shown = os.environ.get(VISIBLE, "")
        return f"sass-lsp.gpuDevice {device} is not among the devices CUDA_VISIBLE_DEVICES={shown!r} leaves"
    why = _probe(sys.executable, visible)
    return None if why is None else f"{why} (device {device}): {INSTALL_HINT}, or check sass-lsp.gpuDevice"


@lru_cache(maxsize=8)
def _probe(python: str, visible: str) -> str | None:
    try:
        proc = subprocess.run(
            [python, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            env={**os.environ, VISIBLE: visible},
        )
    except subprocess.TimeoutExpired:
        return f"the CUDA driver did not answer within {PROBE_TIMEOUT_S:.0f} s"
    except OSError as exc:
        return f"cannot start {python}: {exc}"
    if proc.returncode == 0:
        return None
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else f"the GPU probe exited with status {proc.returncode}"
