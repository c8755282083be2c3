"""Locate and run nvdisasm (from the PyPI wheel ``nvidia-cuda-nvdisasm``).

Lookup order: ``$SASS_LSP_NVDISASM``, then the binary shipped in the installed wheel, then ``nvdisasm`` on
``PATH``. The wheel comes first because it is the package's own dependency (CUDA 13 or later): nvdisasm
versions write different text (CUDA 12's writes the ELF metadata's instruction offsets as numbers, 13's as
labels the schedule moves keep in place), and a file should not depend on the toolkit a machine has.
Nothing is ever downloaded.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from sass_lsp.children import with_parent


class NvdisasmError(RuntimeError):
    """nvdisasm is missing or rejected its input."""


@functools.cache
def nvdisasm_path() -> Path:
    env = os.environ.get("SASS_LSP_NVDISASM")
    if env:
        path = Path(env)
        if not path.is_file():
            raise NvdisasmError(f"SASS_LSP_NVDISASM={env} is not a file")
        return path
    try:
        import nvidia  # namespace package provided by the nvidia-cuda-nvdisasm wheel
    except ImportError:
        nvidia = None
    for root in getattr(nvidia, "__path__", []) if nvidia else []:
        for candidate in sorted(Path(root).glob("cu*/bin/nvdisasm")) + sorted(
            Path(root).glob("cuda_nvdisasm/bin/nvdisasm")
        ):
            if candidate.is_file():
                return candidate
    on_path = shutil.which("nvdisasm")
    if on_path:
        return Path(on_path)
    raise NvdisasmError(
        "nvdisasm not found: install the 'nvidia-cuda-nvdisasm' wheel, put nvdisasm on PATH, "
        "or set SASS_LSP_NVDISASM"
    )


def run_nvdisasm(args: list[str], data: bytes | None = None, suffix: str = ".cubin") -> str:
    """Run nvdisasm with ``args``; when ``data`` is given it is written to a temp file appended last."""
    cmd = [str(nvdisasm_path()), *args]
    with tempfile.TemporaryDirectory(prefix="sass-lsp-") as tmp:
        if data is not None:
            path = Path(tmp) / f"input{suffix}"
            path.write_bytes(data)
            cmd.append(str(path))
        proc = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=with_parent)
    if proc.returncode != 0:
        raise NvdisasmError(f"nvdisasm failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout
