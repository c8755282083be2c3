"""Where the test material lives: the corpus bundled in the package and the generated corpus."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRITON_CORPUS = ROOT / "sass_lsp" / "corpus" / "sm_90"  # real Triton kernels (tools/make_triton_corpus.py)
GENERATED_CORPUS = ROOT / ".cache" / "corpus"
