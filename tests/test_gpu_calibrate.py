"""Calibration without a GPU: the microbenchmark variants assemble as intended; the merge rules."""

from __future__ import annotations

import re
import shutil

import pytest

from sass_lsp.cuasm import assemble_cuasm, write_cuasm
from sass_lsp.cuasm.disasm import disassemble
from sass_lsp.gpu.calibrate import (
    CHAIN_STEPS,
    PROBES,
    SKELETON_BARRIER,
    SKELETON_CHAIN,
    barrier_variant,
    chain_variant,
    compile_skeleton,
    merge_measured,
    min_safe_stall,
)

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc compiles the skeletons")


@pytest.mark.slow
@needs_nvcc
def test_chain_variant_assembles_with_the_measured_stall_on_the_measured_edge() -> None:
    skeleton = write_cuasm(compile_skeleton(SKELETON_CHAIN, "sm_90"))
    probe = next(p for p in PROBES if p.name == "IMAD->IADD3")
    cubin = assemble_cuasm(chain_variant(skeleton, probe, 3))  # verified by nvdisasm as it assembles
    texts = [ins.text for sec in disassemble(cubin).sections.values() for ins in sec.instrs]
    assert texts.count("IMAD R8, R8, R9, R10 ;") == CHAIN_STEPS
    lines = write_cuasm(cubin).splitlines()
    imads = [ln for ln in lines if "IMAD R8, R8, R9, R10" in ln]
    assert len(imads) == CHAIN_STEPS and all(":-:S03]" in ln for ln in imads)
    adds = [ln for ln in lines if "IADD3 R8, R8, R11, RZ" in ln]
    assert len(adds) == CHAIN_STEPS and all(":Y:S15]" in ln for ln in adds)


@pytest.mark.slow
@needs_nvcc
def test_barrier_variant_sets_the_distance_and_a_legal_yield() -> None:
    skeleton = write_cuasm(compile_skeleton(SKELETON_BARRIER, "sm_90"))
    for stall, ctrl in ((2, ":-:S02]"), (13, ":Y:S13]")):  # '-' with S12..S15 does not encode
        text = write_cuasm(assemble_cuasm(barrier_variant(skeleton, stall)))
        bar = next(ln for ln in text.splitlines() if "BAR.SYNC" in ln)
        assert ctrl in bar, bar


def test_min_safe_stall_needs_every_larger_stall_to_match() -> None:
    assert min_safe_stall({14: "match", 13: "match", 12: "mismatch"}) == 13
    assert min_safe_stall({14: "match", 5: "match", 4: "fault"}) == 5
    assert min_safe_stall({14: "mismatch"}) is None


def test_merge_keeps_ptxas_closer_pairs_out_of_the_checker() -> None:
    semantics = {
        "latency": [
            {"producer": "alu", "consumer": "fma", "operand": "reg", "cycles": 4, "source": "exp"},
            {"producer": "uniform", "consumer": "alu", "operand": "ur", "cycles": 6, "source": "exp"},
        ],
        "params": {"bar_sync_to_shared": {"value": 6, "source": "exp"}},
    }
    probe = {"producer": "alu", "consumer": "fma", "operand": "reg", "name": "IADD3->IMAD"}
    probe["min_safe_stall"] = 5
    raw = {
        "date": "2026-11-29",
        "device": {"device": {"gpu": "NVIDIA H200", "driver": "580"}},
        "probes": [
            probe,
            {
                **probe,
                "producer": "uniform",
                "consumer": "alu",
                "operand": "ur",
                "name": "U",
                "min_safe_stall": 6,
            },
        ],
        "bar_sync_to_shared": {"min_safe_stall": 1},
    }
    merged = merge_measured(semantics, raw, "raw.json")
    measured = [r for r in merged["latency"] if r["source"] == "measured"]
    assert [(r["producer"], r["cycles"]) for r in measured] == [("uniform", 6)]
    assert re.search("NVIDIA H200", measured[0]["ref"])
    assert merged["measured_not_applied"][0]["ptxas_min"] == 4
    assert merged["params"]["bar_sync_to_shared"]["value"] == 6
    assert merged["params"]["bar_sync_to_shared_measured"]["value"] == 1
