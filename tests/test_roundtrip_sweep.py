"""Unmodified round trip over the generated corpus: ≥30 kernels per arch, every cubin bit for bit.

The kernels (tests/kernels/*.cu: memory, tensor cores, FP64, atomics, shuffles, barriers, calls, indirect
branches, local-memory spills) are compiled by nvcc 13.0 for each arch at session start (conftest.py).
"""

from __future__ import annotations

import pytest
from conftest import generated_cubins

from sass_lsp.cuasm import assemble_cuasm, write_cuasm_stats
from sass_lsp.elf import read_cubin

ARCHES = ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_120"]
SWEEP: dict[str, dict[str, int]] = {}


def n_kernels(cubin: bytes) -> int:
    return sum(
        1
        for sec in read_cubin(cubin).sections
        if sec.name.startswith(".text.") and not sec.name.startswith(".text.$")
    )


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHES)
def test_generated_corpus_round_trips_bit_for_bit(arch: str) -> None:
    cubins = generated_cubins(arch)
    totals = {"cubins": 0, "kernels": 0, "n_instrs": 0, "n_hidden": 0, "n_raw": 0}
    differing = []
    for path in cubins:
        original = path.read_bytes()
        text, stats = write_cuasm_stats(original, source_name=path.name)
        rebuilt = assemble_cuasm(text, source_name=path.name)
        if rebuilt != original:
            differing.append(path.name)
        totals["cubins"] += 1
        totals["kernels"] += n_kernels(original)
        for key in ("n_instrs", "n_hidden", "n_raw"):
            totals[key] += stats[key]
    SWEEP[arch] = totals
    print(arch, totals)
    assert totals["kernels"] >= 30, totals
    assert not differing, f"{arch}: not byte-identical: {differing}"
