"""Session setup: compile the round-trip corpus (tests/kernels) for every arch once, when nvcc exists."""

from __future__ import annotations

import shutil
import sys

import pytest
from paths import GENERATED_CORPUS, ROOT


def pytest_sessionstart(session: pytest.Session) -> None:
    if shutil.which("nvcc") is None:
        return  # tests that need the generated corpus skip, naming nvcc
    sys.path.insert(0, str(ROOT / "tools"))
    import build_corpus

    build_corpus.build(build_corpus.ARCHES, GENERATED_CORPUS)


def generated_cubins(arch: str) -> list:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc (CUDA 13.0) is needed to compile tests/kernels")
    return sorted((GENERATED_CORPUS / arch).glob("*.cubin"))
