"""Where the real-kernel corpus lives, and whether this machine can run it (for tests and benchmarks).

The corpus (``NAME.cubin`` + ``NAME.json``) is looked up in ``$SASS_LSP_CORPUS``, then ``shared/corpus/sm_90``
inside the checkout, then ``../shared/corpus/sm_90`` beside it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from functools import cache
from pathlib import Path

from sass_lsp.gpu.from_json import spec_from_json
from sass_lsp.gpu.spec import LaunchSpec

CORPUS_ENV = "SASS_LSP_CORPUS"
_ROOT = Path(__file__).resolve().parents[2]


def corpus_dir() -> Path | None:
    candidates = [
        os.environ.get(CORPUS_ENV, ""),
        _ROOT / "shared/corpus/sm_90",
        _ROOT.parent / "shared/corpus/sm_90",
    ]
    for cand in candidates:
        if cand and Path(cand).is_dir() and any(Path(cand).glob("*.json")):
            return Path(cand)
    return None


def corpus_names() -> list[str]:
    root = corpus_dir()
    if root is None:
        return []
    return sorted(p.stem for p in root.glob("*.json") if p.with_suffix(".cubin").exists())


def load_kernel(name: str) -> tuple[bytes, LaunchSpec]:
    root = corpus_dir()
    assert root is not None, "no corpus found"
    cubin = (root / f"{name}.cubin").read_bytes()
    return cubin, spec_from_json((root / f"{name}.json").read_text(), cubin)


@cache
def has_gpu() -> bool:
    """True when a CUDA device answers; checked in a child process so this one never loads the driver."""
    probe = (
        "from cuda.bindings import driver as d\n"
        "assert d.cuInit(0)[0] == 0\n"
        "err, n = d.cuDeviceGetCount()\n"
        "assert err == 0 and n > 0\n"
    )
    try:
        proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0
