"""Software-pipelining moves on the real sm_90 corpus: fp8_blockscale_gemm's main loop loads its three scales
with LDG at the top of each iteration; each move issues one of them an iteration ahead. Every move leaves the
checker silent, assembles (nvdisasm reads every word back), renames into registers the kernel never named,
guards the loop's copies with the branch's predicate, keeps ptxas's distances (up to the floor) into the
copies, and takes one load per loop. Kernels whose loops hold no plain global load offer none."""

from __future__ import annotations

import functools
import itertools
import json
import random
import re

import pytest
from paths import ROOT, TRITON_CORPUS

from sass_lsp.analysis import check_module
from sass_lsp.analysis.program import Kernel, kernels_of
from sass_lsp.cuasm import assemble_cuasm, parse_cuasm
from sass_lsp.isa.semantics import load_semantics
from sass_lsp.schedule import pipeline_moves as pm
from sass_lsp.schedule.deps import UNTRUSTED_RAW_FLOOR

SEM = load_semantics("sm_90")
FP8 = "fp8_blockscale_gemm"


@functools.cache
def original(name: str) -> str:
    return (TRITON_CORPUS / f"{name}.cuasm").read_text()


def findings(text: str) -> list[str]:
    module, diags = parse_cuasm(text)
    return [d.message for d in diags if d.severity == "error"] + [
        f.code for f in check_module(module, "sm_90") if f.severity in ("error", "warning")
    ]


def kernel(text: str) -> Kernel:
    module, _ = parse_cuasm(text)
    return kernels_of(module, SEM)[0]


def loop_and_preheader(k: Kernel) -> tuple:
    loop = next(b for b in k.blocks if b.idx in b.succs and b.end - b.start > 10)
    return loop, k.blocks[next(p for p in loop.preds if p != loop.idx)]


def registers(text: str) -> set[int]:
    return {int(n) for n in re.findall(r"\bR(\d+)\b", text)}


def test_fp8_offers_one_move_per_scale_load() -> None:
    moves = pm.pipeline_moves(original(FP8))
    assert [m.kind for m in moves] == ["load"] * 3
    before = registers(original(FP8))
    for m in moves:
        assert len(m.lines) == 3 and m.lines[-1] == m.load_line  # two address copies and the load
        assert {new for _old, new in m.renames}.isdisjoint(before)
        assert m.regs_after > m.regs_before and m.warps_after == m.warps_before


@pytest.mark.parametrize("name", ["triton_matmul", "bf16_gemm", "flash_attn_fwd", "triton_softmax"])
def test_loops_without_a_plain_global_load_offer_none(name: str) -> None:
    assert pm.pipeline_moves(original(name)) == []


def test_each_move_is_clean_assembles_and_places_its_copies() -> None:
    text = original(FP8)
    k0 = kernel(text)
    loop0, _ = loop_and_preheader(k0)
    for m in pm.pipeline_moves(text):
        new = pm.apply(text, m)
        assert findings(new) == findings(text) == []
        assemble_cuasm(new, source_name=FP8)  # raises unless nvdisasm reads every word back
        k = kernel(new)
        loop, pre = loop_and_preheader(k)
        assert loop.end - loop.start == loop0.end - loop0.start  # three lines left, three copies came in
        branch = k.nodes[loop.end - 1]
        guard = branch.text.split()[0]
        rotated = [k.nodes[i] for i in range(loop.end - 4, loop.end - 1)]
        prologue = [k.nodes[i] for i in range(pre.end - 3, pre.end)]
        assert all(nd.text.startswith(guard + " ") for nd in rotated), [nd.text for nd in rotated]
        assert [nd.text.removeprefix(guard + " ") for nd in rotated] == [nd.text for nd in prologue]
        load = rotated[-1]
        assert load.eff.opcode == "LDG" and load.ctrl.write_sb == m.scoreboard == prologue[-1].ctrl.write_sb
        dst = dict(m.renames)[next(o for o, _n in m.renames if o not in (2, 3))]
        readers = [nd for nd in k.nodes[loop.start : loop.end - 4] if re.search(rf"\bR{dst}\b", nd.text)]
        assert readers and readers[0].ctrl.wait_mask >> m.scoreboard & 1  # the first reader waits for it


def test_copies_keep_ptxas_distances_up_to_the_floor() -> None:
    """The IMAD.MOV that copies the address's high half and the LDG that reads the pair keep ptxas's 5
    cycles; the induction update just before the copies is 6 cycles before the copy that reads it (ptxas:
    more, round the back edge)."""
    text = original(FP8)
    for m in pm.pipeline_moves(text):
        k = kernel(pm.apply(text, m))
        loop, _ = loop_and_preheader(k)
        seq = list(range(loop.start, loop.end))
        t = dict(
            zip(seq, itertools.accumulate((k.nodes[i].ctrl.stall for i in seq), initial=0), strict=False)
        )
        for c in range(loop.end - 4, loop.end - 1):
            for a in range(loop.start, c):
                nd = k.nodes[a]
                if nd.ctrl.write_sb is not None or not nd.eff.def_units & k.nodes[c].eff.use_units:
                    continue
                if any(k.nodes[x].eff.def_units & nd.eff.def_units for x in range(a + 1, c)):
                    continue  # not the last writer
                assert t[c] - t[a] >= (5 if a >= loop.end - 4 else UNTRUSTED_RAW_FLOOR), (nd.text, c)


def test_chains_pipeline_every_scale_load_and_stay_clean() -> None:
    text = original(FP8)
    new, done = pm.random_moves(text, 5, random.Random(3))
    assert len(done) == 3 and pm.pipeline_moves(new) == []  # each load once, then none left
    assert findings(new) == []
    assemble_cuasm(new, source_name=FP8)
    _loop, pre = loop_and_preheader(kernel(new))
    assert (
        len({nd.ctrl.write_sb for nd in kernel(new).nodes[pre.end - 9 : pre.end] if nd.eff.opcode == "LDG"})
        == 3
    )


def test_the_loop_keeps_ptxas_distances_the_removal_shortened() -> None:
    """With both b-scale loads gone from the top of the loop, ``ULEA UR6`` and the ``UIADD3`` that reads UR6
    after the barrier would be 2 cycles apart (ptxas: 19); on an H100 the QGMMA then read a wrong stage.
    The move keeps min(ptxas's distance, the floor)."""
    text = original(FP8)
    for order in ((6, 5), (5, 6), (4, 5, 6)):
        t = text
        for reg in order:
            move = next(m for m in pm.pipeline_moves(t) if any(old == reg for old, _new in m.renames))
            t = pm.apply(t, move)
        k = kernel(t)
        loop, _ = loop_and_preheader(k)
        nodes = k.nodes[loop.start : loop.end]
        ulea = next(i for i, nd in enumerate(nodes) if nd.text.startswith("ULEA UR6, UR14"))
        uiadd = next(i for i, nd in enumerate(nodes) if i > ulea and nd.text.startswith("UIADD3 UR7, UR6"))
        assert sum(nd.ctrl.stall for nd in nodes[ulea:uiadd]) >= UNTRUSTED_RAW_FLOOR, order


def test_refused_where_the_loop_writes_memory_or_the_load_orders_it() -> None:
    text = original(FP8)
    first = pm.pipeline_moves(text)[0]
    lines = text.splitlines(keepends=True)
    load = lines[first.load_line - 1]
    strong = text.replace(load, load.replace("LDG.E ", "LDG.E.STRONG.GPU "))
    assert len(pm.pipeline_moves(strong)) == 2
    store = re.sub(r"LDG\.E (R\d+), (desc\[UR16\]\[R\d+\.64\])", r"STG.E \2, \1", load)
    stored = "".join(lines[: first.load_line] + [store] + lines[first.load_line :])
    assert pm.pipeline_moves(stored) == []


def test_a_foreign_move_is_an_error() -> None:
    import dataclasses

    m = pm.pipeline_moves(original(FP8))[0]
    with pytest.raises(pm.PipelineMoveError, match="no such pipeline move"):
        pm.apply(original(FP8), dataclasses.replace(m, load_line=m.load_line + 1))


def test_hardware_benchmark_dry_run(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import pipeline_hardware as bench

    out = tmp_path / "mutants.jsonl"
    args = [
        "--kernels",
        FP8,
        "triton_softmax",
        "--count",
        "3",
        "--moves",
        "1-2",
        "--seed",
        "5",
        "--jobs",
        "1",
    ]
    assert bench.main([*args, "--dry-run", "--json", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3 and {r["kernel"] for r in rows} == {FP8}
    assert all(1 <= len(r["moves"]) <= 2 and r["verdict"] == "dry_run" for r in rows)
    printed = capsys.readouterr().out
    assert f"{FP8:20s} legal moves: 3" in printed and "triton_softmax       legal moves: 0" in printed


def test_optimize_pipeline_walk() -> None:
    """``optimize --moves pipeline,reorder``: one walk of pipeline moves and reorders of the texts made."""
    pytest.importorskip("sass_lsp.schedule.game")  # gymnasium
    import zlib

    from sass_lsp import app
    from sass_lsp.gpu.corpus import load_kernel
    from sass_lsp.gpu.optimize import move_kinds
    from sass_lsp.schedule.search import Measured, schedule_key

    cubin, spec = load_kernel(FP8)
    orig = app.Original(original(FP8), "sm_90", cubin, spec, None)

    def measure(text: str) -> Measured:
        assert findings(text) == []
        s = 0.98 + (zlib.crc32(text.encode()) % 400) / 10_000
        return Measured(schedule_key(text), "match", s, s - 0.001, s + 0.001, seconds=1.0)

    log = app.policy_search(orig, app.SearchChoice(moves=("pipeline", "reorder")), net=None)(measure, 10.0)
    kinds = {k for t in log.trials for k in move_kinds(t.candidate.source)}
    assert "pipeline" in kinds, kinds
