"""The bundled real-kernel corpus and whether this machine can run it (tests, benchmarks, train, finetune).

Triton 3.6 kernels for sm_90: ``NAME.cubin``, its launch ``NAME.json`` and CuAssembler's ``NAME.cuasm``. It
ships inside the package (``sass_lsp/corpus/sm_90``; ``tools/make_triton_corpus.py`` regenerates it on a
machine with a GPU and Triton); ``$SASS_LSP_CORPUS`` points at another directory of the same layout.
"""

from __future__ import annotations

import os
from functools import cache
from importlib import resources
from pathlib import Path

from sass_lsp.gpu.availability import gpu_problem
from sass_lsp.gpu.from_json import spec_from_json
from sass_lsp.gpu.spec import LaunchSpec

CORPUS_ENV = "SASS_LSP_CORPUS"


def bundled_corpus() -> Path:
    """The sm_90 corpus shipped with the package."""
    return Path(str(resources.files("sass_lsp") / "corpus" / "sm_90"))


def corpus_dir() -> Path:
    """``$SASS_LSP_CORPUS`` when set, else the bundled corpus."""
    override = os.environ.get(CORPUS_ENV, "")
    return Path(override) if override else bundled_corpus()


def corpus_names() -> list[str]:
    root = corpus_dir()
    return sorted(p.stem for p in root.glob("*.json") if p.with_suffix(".cubin").exists())


def load_kernel(name: str) -> tuple[bytes, LaunchSpec]:
    root = corpus_dir()
    cubin = (root / f"{name}.cubin").read_bytes()
    return cubin, spec_from_json((root / f"{name}.json").read_text(), cubin)


@cache
def has_gpu() -> bool:
    """True when a CUDA device answers (asked by `gpu_problem` in a child process)."""
    return gpu_problem() is None
