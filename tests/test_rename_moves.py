"""Register-renaming moves on the real sm_90 corpus: every rename the enumeration offers leaves the checker
silent, keeps every read reading the value of the same instruction (a dataflow oracle that a bad rename
fails), assembles with only the renamed instructions' words changed, and removes the WAR/WAW edges it
claims from the reorder dependences."""

from __future__ import annotations

import collections
import functools
import json
import random

import pytest
from paths import ROOT, TRITON_CORPUS

from sass_lsp.analysis import check_module
from sass_lsp.analysis.program import Kernel, build_kernel
from sass_lsp.cuasm import assemble_cuasm, parse_cuasm
from sass_lsp.elf import read_cubin
from sass_lsp.isa.semantics import load_semantics
from sass_lsp.model import Instruction
from sass_lsp.schedule import rename_moves as rn
from sass_lsp.schedule.deps import block_deps
from sass_lsp.schedule.liveness import GPR_UNITS, liveness
from sass_lsp.schedule.observation import EDGE_WAR, EDGE_WAW
from sass_lsp.schedule.search import Measured, annealing

KERNELS = sorted(p.stem for p in TRITON_CORPUS.glob("*.cuasm"))
FAST = ("triton_add", "triton_softmax", "triton_matmul")
SEM = load_semantics("sm_90")


@functools.cache
def original(name: str) -> str:
    return (TRITON_CORPUS / f"{name}.cuasm").read_text()


@functools.cache
def moves_of(name: str) -> tuple[rn.RenameMove, ...]:
    return tuple(rn.rename_moves(original(name)))


def findings(text: str) -> list[tuple[str, int]]:
    module, diags = parse_cuasm(text)
    out = [("parse", d.line) for d in diags if d.severity == "error"]
    return out + [
        (f.code, f.line) for f in check_module(module, "sm_90") if f.severity in ("error", "warning")
    ]


def kernels(text: str) -> list[Kernel]:
    module, _ = parse_cuasm(text)
    return [
        build_kernel(s.name, s.line, list(s.items), SEM)
        for s in module.sections
        if s.name.startswith(".text.") and s.instructions
    ]


def dataflow(text: str, live_out: list[list[int]] | None = None) -> list:
    """Per block: for every register a read names, the instruction whose write it reads (or the block's
    entry and the register); and for every register live at the block's end, the instruction whose write
    reaches there. Renaming a register consistently keeps this; a partial or live-out rename does not."""
    out = []
    for n, k in enumerate(kernels(text)):
        lives = live_out[n] if live_out else [_units(m & GPR_UNITS) for m in liveness(k).live_out]
        for b in k.blocks:
            last: dict[int, int] = {}
            reads = []
            for j in range(b.start, b.end):
                nd = k.nodes[j]
                for r in SEM.register_refs(nd.text):
                    if not r.written and r.units and r.units[0] < 256:
                        reads.append((j, tuple(last.get(u, ("in", u)) for u in r.units)))
                if not nd.eff.never:
                    for u in nd.eff.def_units:
                        last[u] = j
            out.append((b.idx, tuple(reads), tuple(last.get(u, ("in", u)) for u in lives[b.idx])))
    return out


def _units(mask: int) -> list[int]:
    return [u for u in range(256) if mask >> u & 1]


@functools.cache
def live_of(name: str) -> list[list[list[int]]]:
    return [[_units(m & GPR_UNITS) for m in liveness(k).live_out] for k in kernels(original(name))]


def sample(moves, per_kind: int, rng: random.Random) -> list[rn.RenameMove]:
    by_kind = collections.defaultdict(list)
    for m in moves:
        by_kind[m.kind].append(m)
    return [
        m for kind in sorted(by_kind) for m in rng.sample(by_kind[kind], min(per_kind, len(by_kind[kind])))
    ]


# ---------------------------------------------------------------- legality


def test_every_corpus_kernel_with_spare_occupancy_has_renames() -> None:
    counts = {name: collections.Counter(m.kind for m in moves_of(name)) for name in KERNELS}
    assert sum(c["false_dep"] for c in counts.values()) >= 500
    assert sum(c["bank"] for c in counts.values()) >= 5
    for name in ("triton_add", "triton_matmul", "flash_attn_fwd", "bf16_gemm"):
        assert counts[name]["false_dep"] > 0, name
    for m in moves_of("triton_matmul"):
        assert m.edges > 0 if m.kind == "false_dep" else m.conflicts > 0
        assert m.warps_after >= m.warps_before and m.regs_after >= m.regs_before


@pytest.mark.parametrize("name", FAST)
def test_sampled_renames_are_clean_and_keep_the_dataflow(name: str) -> None:
    """A deterministic sample of each kind: no checker finding, the same dataflow (the slow test below runs
    every move of every kernel)."""
    text = original(name)
    assert findings(text) == []
    flow = dataflow(text, live_of(name))
    for move in sample(moves_of(name), 6, random.Random(name)):
        new = rn.apply(text, move)
        assert findings(new) == [], move.description
        assert dataflow(new, live_of(name)) == flow, move.description


@pytest.mark.slow
@pytest.mark.parametrize("name", KERNELS)
def test_every_rename_is_clean_and_keeps_the_dataflow(name: str) -> None:
    text = original(name)
    flow = dataflow(text, live_of(name))
    for move in moves_of(name):
        new = rn.apply(text, move)
        assert findings(new) == [], move.description
        assert dataflow(new, live_of(name)) == flow, move.description


def test_a_bad_rename_is_caught_by_the_dataflow_oracle() -> None:
    """The oracle can fail: leaving the last read out of a rename, or renaming a value a later block reads,
    changes which write a read sees (and the enumeration offers neither)."""
    name = "triton_matmul"
    text = original(name)
    flow = dataflow(text, live_of(name))
    multi = next(m for m in moves_of(name) if len(m.edits) >= 3)
    partial = rn.RenameMove(**{**_fields(multi), "edits": multi.edits[:-1]})
    assert dataflow(rn.apply(text, partial), live_of(name)) != flow
    # A live-out value: a write whose register a later block reads, renamed with all its reads in the block.
    k = kernels(text)[0]
    live = [m & GPR_UNITS for m in liveness(k).live_out]
    offered = {(m.def_line, m.old) for m in moves_of(name)}
    caught = 0
    for b in k.blocks:
        for j in range(b.start, b.end):
            edits = _whole_block_rename(k, b, j, live[b.idx])
            if edits is None:
                continue
            assert (edits[0][0], edits[0][2]) not in offered
            bad = rn.RenameMove(**{**_fields(multi), "edits": tuple(edits)})
            assert dataflow(rn.apply(text, bad), live_of(name)) != flow
            caught += 1
    assert caught >= 5


def _whole_block_rename(k: Kernel, b, j: int, live: int) -> list | None:  # noqa: ANN001
    """Edits renaming the 32-bit register written at node j, and its reads to the block's end, to R254, when
    that register is live at the block's end and nothing after j in the block writes it."""
    nd = k.nodes[j]
    w = [r for r in SEM.register_refs(nd.text) if r.written and len(r.units) == 1 and r.units[0] < 255]
    if len(w) != 1 or nd.eff.guard is not None or not live >> w[0].units[0] & 1:
        return None
    u = w[0].units[0]
    edits = [(nd.line, nd.text_col - 1 + w[0].start, w[0].name, "R254")]
    for i in range(j + 1, b.end):
        other = k.nodes[i]
        if u in other.eff.def_units:
            return None
        for r in SEM.register_refs(other.text):
            if u in r.units:
                if r.units != (u,):
                    return None
                edits.append((other.line, other.text_col - 1 + r.start, r.name, "R254"))
    return edits


def _fields(m: rn.RenameMove) -> dict:
    return {f: getattr(m, f) for f in m.__dataclass_fields__}


def test_renames_are_refused_where_occupancy_would_drop() -> None:
    """gelu_bias declares 32 registers and names every register below them: any rename raises the count to
    33, which costs a quarter of the resident warps, so none is offered unless asked."""
    assert rn.occupancy(32) == 64 and rn.occupancy(33) == 48 and rn.occupancy(255) == 8
    assert rn.occupancy(26, 128) == 64 and rn.occupancy(168, 384) == 12 and rn.occupancy(64, 1024) == 32
    assert moves_of("gelu_bias") == ()
    lossy = rn.rename_moves(original("gelu_bias"), allow_occupancy_loss=True)
    assert lossy and all(m.warps_after < m.warps_before == 64 and m.regs_after > 32 for m in lossy)
    # With a block size the whole-block rule applies: 1024 threads fit only at 64 registers or fewer.
    assert rn.occupancy(65, 1024) == 0


# ---------------------------------------------------------------- the edit


def test_apply_changes_only_the_renamed_tokens() -> None:
    text = original("triton_matmul")
    lines = text.splitlines(keepends=True)
    for move in sample(moves_of("triton_matmul"), 6, random.Random(2)):
        new = rn.apply(text, move).splitlines(keepends=True)
        changed = {i + 1 for i, (a, b) in enumerate(zip(lines, new, strict=True)) if a != b}
        assert changed == {e[0] for e in move.edits}
        for line, col, old, rep in move.edits:
            before, after = lines[line - 1], new[line - 1]
            assert before[col : col + len(old)] == old and old.split(".")[0] == _reg(old)
            assert after[col : col + len(rep)] == rep and rep.startswith(move.new[:1])
            if ".reuse" in old:
                assert ".reuse" not in rep
        assert len(new) == len(lines)
    with pytest.raises(rn.RenameMoveError, match="does not hold"):
        m = moves_of("triton_add")[0]
        rn.apply(rn.apply(original("triton_add"), m), m)


def _reg(token: str) -> str:
    return token.split(".")[0]


def _words(cubin: bytes) -> dict[str, list[int]]:
    out = {}
    for sec in read_cubin(cubin).sections:
        if sec.name.startswith(".text."):
            data = sec.data
            out[sec.name] = [int.from_bytes(data[i : i + 16], "little") for i in range(0, len(data), 16)]
    return out


def _index(text: str) -> dict[int, tuple[str, int]]:
    module, _ = parse_cuasm(text)
    out = {}
    for sec in module.sections:
        if sec.name.startswith(".text."):
            ins = [it for it in sec.items if isinstance(it, Instruction)]
            out |= {it.line: (sec.name, n) for n, it in enumerate(ins)}
    return out


@pytest.mark.parametrize("name", ("triton_add", "triton_matmul"))
def test_assembled_words_differ_only_in_the_renamed_instructions(name: str) -> None:
    text = original(name)
    before = _words(assemble_cuasm(text, verify=False))
    at = _index(text)
    for move in sample(moves_of(name), 3, random.Random(f"asm:{name}")):
        after = _words(assemble_cuasm(rn.apply(text, move), verify=False))
        touched = {at[line] for line, *_ in move.edits}
        for sec, words in before.items():
            for n, (a, b) in enumerate(zip(words, after[sec], strict=True)):
                assert (a != b) == ((sec, n) in touched), (move.description, sec, n)


def test_the_register_count_covers_the_new_group_and_the_two_reserved_above_it() -> None:
    """On an H100, renames of a 64-bit pair into the two registers above the highest used faulted (the count
    covered only the pair's named base): every offered rename's assembled count leaves both free."""
    from sass_lsp.elf.nvinfo import parse_nvinfo

    for name in ("triton_add", "rmsnorm_f32_4096"):
        text = original(name)
        for move in moves_of(name):
            top = int(move.new[1:]) + move.width - 1
            assert move.regs_after >= top + 3, move.description
        wide = [m for m in moves_of(name) if m.width > 1]
        assert wide, name  # the case that faulted
        for move in sample(wide, 3, random.Random(f"count:{name}")):
            cubin = read_cubin(assemble_cuasm(rn.apply(text, move), verify=False))
            info = cubin.section(".nv.info")
            assert info is not None
            counts = [a.words()[1] for a in parse_nvinfo(info.data)[0] if a.name == "EIATTR_REGCOUNT"]
            assert counts == [move.regs_after], move.description


def test_false_dep_moves_remove_the_edges_they_claim() -> None:
    for name in FAST:
        text = original(name)
        for move in sample([m for m in moves_of(name) if m.kind == "false_dep"], 8, random.Random(name)):
            assert _false_pairs(text, move.def_line) - _false_pairs(rn.apply(text, move), move.def_line) == (
                move.edges
            ), move.description


def _false_pairs(text: str, line: int) -> int:
    """WAR/WAW pairs of the reorder dependences of the block holding ``line``."""
    for k in kernels(text):
        for b in k.blocks:
            if k.nodes[b.start].line <= line <= k.nodes[b.end - 1].line:
                deps = block_deps(k, b.idx, SEM)
                return sum(1 for p in deps.edges if deps.edges[p] & (EDGE_WAR | EDGE_WAW))
    raise AssertionError(line)


def test_bank_moves_separate_the_banks() -> None:
    seen = 0
    for name in ("triton_matmul", "bf16_gemm", "fp8_blockscale_gemm"):
        for m in moves_of(name):
            if m.kind != "bank":
                continue
            seen += 1
            assert m.conflicts > 0 and int(m.old[1:]) % 2 != int(m.new[1:]) % 2, m.description
    assert seen >= 5


def test_reuse_flags_kept_only_where_the_next_read_is_renamed_too() -> None:
    """Every dropped flag is counted; the kept ones pass the checker's reuse rule (the tests above)."""
    dropped = 0
    for name in KERNELS:
        for m in moves_of(name):
            gone = sum(".reuse" in old and ".reuse" not in rep for _l, _c, old, rep in m.edits)
            assert m.dropped_reuse == gone, m.description
            dropped += gone
    assert dropped > 0


# ---------------------------------------------------------------- chains, search, benchmark


def test_chains_stay_clean() -> None:
    name = "triton_matmul"
    text, done = rn.random_moves(original(name), 5, random.Random(3))
    assert len(done) == 5 and findings(text) == []
    assert dataflow(text, live_of(name)) == dataflow(original(name), live_of(name))


def test_neighbour_drives_annealing() -> None:
    text = original("triton_softmax")
    propose = rn.neighbour(text)

    def measure(candidate: str) -> Measured:
        assert findings(candidate) == []
        return Measured("", "match", 1.0 + 0.01 * candidate.count("R2"), seconds=1.0)

    log = annealing(propose, text, measure, 6.0, random.Random(0), max_misses=5)
    assert len(log.trials) == 6
    assert all(len(t.candidate.moves) == 1 and t.candidate.source == "rename" for t in log.trials)


def test_bad_text_is_an_error_not_a_traceback() -> None:
    with pytest.raises(rn.RenameMoveError, match="line"):
        rn.rename_moves(original("triton_add").replace("[B------:R-:W-:Y:S", "[B------:R-:W-:Q:S", 1))


def test_hardware_benchmark_dry_run(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import rename_hardware as bench

    out = tmp_path / "mutants.jsonl"
    args = ["--kernels", "triton_add", "--count", "3", "--moves", "1-2", "--seed", "5", "--jobs", "1"]
    assert bench.main([*args, "--dry-run", "--json", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3 and {r["kernel"] for r in rows} == {"triton_add"}
    assert all(1 <= len(r["moves"]) <= 2 and r["verdict"] == "dry_run" for r in rows)
    printed = capsys.readouterr().out
    assert [json.loads(x) for x in printed.splitlines() if x.startswith("{")] == rows
    assert "triton_add" in printed and "legal renames" in printed


def test_optimize_rename_walk_renames_and_reorders_the_renamed_text() -> None:
    """``optimize --moves reorder,rename``: one walk of renames and reorder moves of renamed texts, every
    schedule clean and computing what the original computes (a stand-in measures it)."""
    pytest.importorskip("sass_lsp.schedule.game")  # gymnasium
    import zlib

    from sass_lsp import app
    from sass_lsp.gpu.corpus import load_kernel
    from sass_lsp.schedule.search import schedule_key

    name = "triton_softmax"
    cubin, spec = load_kernel(name)
    orig = app.Original(original(name), "sm_90", cubin, spec, None)
    assert app.DEFAULT_MOVES == ("reorder", "control") and "rename" in app.MOVE_KINDS

    def measure(text: str) -> Measured:
        assert findings(text) == []
        s = 0.98 + (zlib.crc32(text.encode()) % 400) / 10_000
        return Measured(schedule_key(text), "match", s, s - 0.001, s + 0.001, seconds=1.0)

    log = app.policy_search(orig, app.SearchChoice(moves=("reorder", "rename")), net=None)(measure, 14.0)
    sources = collections.Counter(t.candidate.source for t in log.trials)
    assert sources["rename"] and sources["rename+reorder"], sources  # reorders of a renamed text
    assert set(sources) <= {"rename", "rename+reorder", "reorder"}, sources
    only = app.policy_search(orig, app.SearchChoice(moves=("rename",)), net=None)(measure, 4.0)
    assert {t.candidate.source for t in only.trials} == {"rename"}
