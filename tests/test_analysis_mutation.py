"""Mutation suite: inject one hazard into a real ptxas kernel and require a finding at the right line.

Candidates are chosen by a simple in-block scan that is independent of the checker's dataflow; each
mutation is applied to a copy of the kernel's items and only that kernel is re-checked.
"""

from __future__ import annotations

import collections
import random

import pytest
from test_analysis_support import ARCHES, corpus_modules, text_sections

from sass_lsp.analysis.check import check_kernel
from sass_lsp.analysis.mutate import mutations
from sass_lsp.analysis.program import build_kernel
from sass_lsp.isa.semantics import load_semantics

PER_CLASS_PER_KERNEL = 4
RESULTS: dict[str, dict[str, str]] = {}


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHES)
def test_mutations_are_flagged(arch: str) -> None:
    sem = load_semantics(arch)
    rng = random.Random(1234)
    total = collections.Counter()
    caught = collections.Counter()
    missed = []
    for name, module in corpus_modules(arch):
        for sec in text_sections(module):
            for cls, items, line, codes in mutations(sec, sem, rng):
                k = build_kernel(sec.name[6:], sec.line, items, sem)
                got = {f.code for f in check_kernel(k, sem) if f.line == line}
                total[cls] += 1
                if got & codes:
                    caught[cls] += 1
                else:
                    missed.append(f"{name}:{line} {cls} expected {sorted(codes)} got {sorted(got)}")
    rates = {c: f"{caught[c]}/{total[c]}" for c in sorted(total)}
    print(arch, rates)
    RESULTS[arch] = rates
    assert not missed, f"{arch} {rates}\n" + "\n".join(missed[:40])
