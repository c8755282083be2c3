"""Is there a GPU for "Time on GPU" and "Optimize schedule", and if not, why: asked before any work starts,
in a child process (the server never loads the CUDA driver), once per device selection.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from functools import lru_cache

BACKEND_ENV = "SASS_LSP_GPU_BACKEND"  # sass_lsp.gpu.worker's (importing sass_lsp.gpu loads numpy: ~0.6 s)
VISIBLE = "CUDA_VISIBLE_DEVICES"
PROBE_TIMEOUT_S = 60.0


def device_env(device: int, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment that makes CUDA device ``device`` (counted among those the server's own
    ``CUDA_VISIBLE_DEVICES`` leaves visible) the only one, and so device 0, in the GPU worker."""
    visible = environ.get(VISIBLE)
    if visible is None:
        return {VISIBLE: str(device)}
    ids = [v.strip() for v in visible.split(",") if v.strip()]
    return {VISIBLE: ids[device] if device < len(ids) else ""}


def no_gpu_reason(device: int) -> str | None:
    """None when device ``device`` answers; else why not, in ``gpu.availability``'s words."""
    if os.environ.get(BACKEND_ENV) == "fake":  # the worker's test double needs no driver
        return None
    if importlib.util.find_spec("cuda") is None:  # the worker runs this Python: no probe needed to tell
        from sass_lsp.gpu.availability import no_gpu_message

        return no_gpu_message(ModuleNotFoundError("No module named 'cuda'", name="cuda"))
    visible = device_env(device)[VISIBLE]
    if not visible:
        shown = os.environ.get(VISIBLE, "")
        return f"sass-lsp.gpuDevice {device} is not among the devices CUDA_VISIBLE_DEVICES={shown!r} leaves"
    return _probe(visible)


@lru_cache(maxsize=8)
def _probe(visible: str) -> str | None:
    from sass_lsp.gpu.availability import gpu_problem

    return gpu_problem(PROBE_TIMEOUT_S, {VISIBLE: visible})
