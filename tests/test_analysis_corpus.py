"""Unmodified ptxas output must check clean: no errors and no warnings, on every corpus kernel and arch."""

from __future__ import annotations

import pytest
from test_analysis_support import ARCHES, corpus_modules

from sass_lsp.analysis import check_module

ALLOWED: set[str] = set()  # documented style-only codes that may appear on ptxas output (none today)


@pytest.mark.parametrize("arch", ARCHES)
def test_corpus_is_clean(arch: str) -> None:
    bad = []
    n_kernels = 0
    for name, module in corpus_modules(arch):
        n_kernels += sum(s.name.startswith(".text.") for s in module.sections)
        for f in check_module(module, arch):
            if f.code not in ALLOWED:
                bad.append(f"{name}:{f.line}: {f.severity}: {f.code} {f.message}")
    assert n_kernels > 0
    assert not bad, f"{len(bad)} findings on ptxas output for {arch}:\n" + "\n".join(bad[:30])
