"""Why GPU timing cannot run here, in words a user can act on: the one place that says it (the worker's
``no_device`` replies, ``bench``, ``profile``'s launch, ``calibrate``, ``optimize``, ``finetune``, ``demo``
and the editor's timing all show these sentences).

Two cases: cuda-python (the ``[gpu]`` extra) is missing, or it is there but no NVIDIA GPU or driver answers.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping

GPU_HINT = "install the GPU extra: pip install 'sass-lsp[gpu]' (needs an NVIDIA driver)"


def no_gpu_message(exc: BaseException) -> str:
    """What opening the CUDA device raised (in the worker, or :func:`gpu_problem`'s probe), for the user."""
    if isinstance(exc, ImportError) and (exc.name or "cuda").partition(".")[0] == "cuda":
        return f"no GPU timing: cuda-python is not installed; {GPU_HINT}"
    return (
        f"no GPU timing: cuda-python is installed, but no NVIDIA GPU or driver is usable here ({exc}); "
        "GPU timing needs an NVIDIA GPU with its driver"
    )


_PROBE = """
from sass_lsp.gpu.availability import no_gpu_message
try:
    from cuda.bindings import driver as d
    from sass_lsp.gpu.device import _check
    _check(d.cuInit(0), "cuInit")
    if not _check(d.cuDeviceGetCount(), "cuDeviceGetCount"):
        raise RuntimeError("cuDeviceGetCount: 0 devices")
except Exception as exc:
    print(no_gpu_message(exc))
"""


def gpu_problem(timeout_s: float = 120.0, extra_env: Mapping[str, str] | None = None) -> str | None:
    """None when a CUDA device answers, else why not (:func:`no_gpu_message`); asked in a child process so
    this one never loads the driver. ``extra_env`` (e.g. ``CUDA_VISIBLE_DEVICES``) is the worker's."""
    from sass_lsp.gpu.runner import worker_env

    try:
        proc = subprocess.run(
            [sys.executable, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=worker_env(dict(extra_env or {})),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"no GPU timing: the CUDA probe did not finish ({exc})"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return f"no GPU timing: the CUDA probe failed ({last})"
    return proc.stdout.strip() or None
