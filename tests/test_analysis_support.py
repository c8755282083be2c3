"""Shared helpers for the analysis tests: corpus kernels as Modules (cached) and mutation generators."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

from paths import TRITON_CORPUS

from sass_lsp.cuasm.parser import parse_cuasm
from sass_lsp.model import Module

ROOT = Path(__file__).resolve().parents[1]
SHARED = TRITON_CORPUS
ARCHES = ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100a", "sm_120"]


@functools.cache
def _builder():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("build_semantics", ROOT / "tools/isa/build_semantics.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def corpus_modules(arch: str) -> list[tuple[str, Module]]:
    """Generated corpus cubins (``.cache/corpus/<arch>``; sm_90 also sm_90a and the shared Triton set)."""
    dirs = [arch] + (["sm_90a"] if arch == "sm_90" else [])
    cubins = [p for d in dirs for p in sorted((ROOT / ".cache/corpus" / d).glob("*.cubin"))]
    out = [(f"{p.parent.name}/{p.name}", m) for p, m in _builder().load_modules(cubins)]
    if arch == "sm_90" and SHARED.is_dir():
        out += [(f"shared/{p.name}", parse_cuasm(p.read_text())[0]) for p in sorted(SHARED.glob("*.cuasm"))]
    return out


def text_sections(module: Module):  # noqa: ANN201
    return [s for s in module.sections if s.name.startswith(".text.")]
