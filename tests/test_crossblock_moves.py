"""Cross-block moves on the real sm_90 corpus: every hoist and sink the enumeration offers leaves the checker
silent, keeps every read reading the same writes on every path (a reaching-definitions oracle over the CFG
that an illegal move fails), assembles with the same instructions, lands where it says, and never crosses a
loop boundary."""

from __future__ import annotations

import collections
import dataclasses
import functools
import json
import random
import re

import pytest
from paths import ROOT, TRITON_CORPUS

from sass_lsp.analysis import check_module
from sass_lsp.analysis.program import Kernel, build_kernel, metadata_labels
from sass_lsp.cuasm import assemble_cuasm, parse_cuasm
from sass_lsp.isa.semantics import load_semantics
from sass_lsp.schedule import crossblock_moves as cb
from sass_lsp.schedule.deps import OFFSET_MARK
from sass_lsp.schedule.liveness import liveness, mask
from sass_lsp.schedule.search import Measured, annealing

KERNELS = sorted(p.stem for p in TRITON_CORPUS.glob("*.cuasm"))
FAST = ("triton_softmax", "triton_layernorm", "triton_matmul")
SEM = load_semantics("sm_90")
IN = "in"  # the value a unit holds at kernel entry


@functools.cache
def original(name: str) -> str:
    return (TRITON_CORPUS / f"{name}.cuasm").read_text()


@functools.cache
def moves_of(name: str) -> tuple[cb.CrossBlockMove, ...]:
    return tuple(cb.crossblock_moves(original(name)))


def findings(text: str) -> list[tuple[str, int]]:
    module, diags = parse_cuasm(text)
    out = [("parse", d.line) for d in diags if d.severity == "error"]
    return out + [
        (f.code, f.line) for f in check_module(module, "sm_90") if f.severity in ("error", "warning")
    ]


def kernel(text: str, name: str) -> Kernel:
    module, _ = parse_cuasm(text)
    sec = next(s for s in module.sections if s.name == f".text.{name}")
    return build_kernel(name, sec.line, list(sec.items), SEM)


def kernel_names(text: str) -> list[str]:
    module, _ = parse_cuasm(text)
    return [s.name[6:] for s in module.sections if s.name.startswith(".text.") and s.instructions]


def reaching(k: Kernel, ids: list[int] | None = None) -> dict[tuple[int, int], frozenset]:
    """(instruction, unit it reads) -> the instructions whose writes can reach that read (``IN``: the
    kernel's entry), over every path of the CFG; a guarded write adds itself without killing. ``ids`` names
    the instructions (node index -> id; the identity when None), so two orders of the same instructions
    compare."""
    ids = ids or list(range(len(k.nodes)))
    nb = len(k.blocks)
    entry: list[dict[int, frozenset] | None] = [None] * nb
    entry[0] = {}
    exits: list[dict[int, frozenset] | None] = [None] * nb
    reads: dict[tuple[int, int], frozenset] = {}
    work = [0] + [b.idx for b in k.blocks if not b.preds and b.idx]
    for b in work[1:]:
        entry[b] = {}
    while work:
        bi = work.pop()
        b = k.blocks[bi]
        state = dict(entry[bi] or {})
        for j in range(b.start, b.end):
            eff = k.nodes[j].eff
            if eff.never:
                continue
            for u in eff.use_units:
                reads[(ids[j], u)] = state.get(u, frozenset({IN}))
            guarded = eff.guard is not None or eff.guard_neg
            for u in eff.def_units:
                state[u] = state.get(u, frozenset({IN})) | {ids[j]} if guarded else frozenset({ids[j]})
        if state == exits[bi]:
            continue
        exits[bi] = state
        for s in b.succs:
            old = entry[s]
            new = dict(old) if old is not None else dict(state)
            if old is not None:
                for u in set(old) | set(state):
                    new[u] = old.get(u, frozenset({IN})) | state.get(u, frozenset({IN}))
            if new != old:
                entry[s] = new
                work.append(s)
    return reads


def dataflow(text: str, name: str, move: cb.CrossBlockMove | None = None) -> dict:
    """The reaching definitions of ``name`` in ``text``, instructions named by their node index in the text
    before ``move`` (the moved instruction goes from ``move.node`` to ``move.to_node``)."""
    k = kernel(text, name)
    ids = list(range(len(k.nodes)))
    if move is not None:
        ids.remove(move.node)
        ids.insert(move.to_node, move.node)
    return reaching(k, ids)


@functools.cache
def flow_of(name: str) -> dict[str, dict]:
    return {kn: dataflow(original(name), kn) for kn in kernel_names(original(name))}


def sample(moves, per_kind: int, rng: random.Random) -> list[cb.CrossBlockMove]:
    by_kind = collections.defaultdict(list)
    for m in moves:
        by_kind[m.kind].append(m)
    return [
        m for kind in sorted(by_kind) for m in rng.sample(by_kind[kind], min(per_kind, len(by_kind[kind])))
    ]


def check_move(name: str, move: cb.CrossBlockMove) -> str:
    """Apply the move and assert everything the move promises; returns the new text."""
    text = original(name)
    new = cb.apply(text, move)
    assert findings(new) == [], move.description
    assert dataflow(new, move.kernel, move) == flow_of(name)[move.kernel], move.description
    before, after = kernel(text, move.kernel), kernel(new, move.kernel)
    assert len(after.nodes) == len(before.nodes) and len(after.blocks) == len(before.blocks)
    landed = after.nodes[move.to_node]
    assert _plain(landed.text) == _plain(before.nodes[move.node].text), move.description
    b = after.blocks[move.to_block]
    assert b.start <= move.to_node < b.end and move.to_node - b.start == move.position, move.description
    assert [(x.succs, x.preds) for x in after.blocks] == [(x.succs, x.preds) for x in before.blocks]
    assert sorted(_plain(n.text) for n in after.nodes) == sorted(_plain(n.text) for n in before.nodes)
    assert _addresses(new) == _addresses(text), move.description
    return new


def _plain(text: str) -> str:
    return re.sub(r"\.reuse\b", "", text)


def _addresses(text: str) -> list[str]:
    return re.findall(r"^\s*\[[^\]]*\]\s*(/\*[0-9a-f]+\*/)", text, flags=re.M)


# ---------------------------------------------------------------- legality


def test_the_corpus_has_hoists_and_sinks() -> None:
    counts = {name: collections.Counter(m.kind for m in moves_of(name)) for name in KERNELS}
    assert sum(c["hoist"] for c in counts.values()) >= 50
    assert sum(c["sink"] for c in counts.values()) >= 25
    for name in ("triton_softmax", "triton_layernorm", "flash_attn_fwd"):
        assert counts[name]["hoist"] and counts[name]["sink"], name
    for name in KERNELS:
        for m in moves_of(name):
            assert m.opcode not in cb.COLLECTIVE and m.kind in cb.KINDS


@pytest.mark.parametrize("name", FAST)
def test_sampled_moves_are_clean_and_keep_the_dataflow(name: str) -> None:
    """A deterministic sample of each kind (the slow test below runs every move of every kernel)."""
    assert findings(original(name)) == []
    for move in sample(moves_of(name), 4, random.Random(name)):
        check_move(name, move)


@pytest.mark.slow
@pytest.mark.parametrize("name", KERNELS)
def test_every_move_is_clean_and_keeps_the_dataflow(name: str) -> None:
    for move in moves_of(name):
        check_move(name, move)


def test_a_move_over_a_conditional_branch_keeps_the_other_path() -> None:
    """Hoists over a conditional branch (the other successor must not read the result) are offered, and
    each keeps the dataflow on both paths."""
    over = []
    for name in KERNELS:
        ks = {kn: kernel(original(name), kn) for kn in kernel_names(original(name))}
        for m in moves_of(name):
            if m.kind == "hoist" and len(ks[m.kernel].blocks[m.to_block].succs) > 1:
                over.append((name, m))
    assert over
    for name, m in random.Random(1).sample(over, min(4, len(over))):
        check_move(name, m)


def test_illegal_moves_are_caught_by_the_dataflow_oracle() -> None:
    """The oracle can fail: a hoist over a conditional branch of an instruction whose result the other
    successor reads, and a hoist over an instruction it depends on, change which writes a read sees (and the
    enumeration offers neither)."""
    caught = collections.Counter()
    for name in sorted(KERNELS, key=lambda n: len(original(n))):  # the small kernels first: fast
        text = original(name)
        offered = {(m.node, m.to_block, m.kind) for m in moves_of(name)}
        for kn in kernel_names(text):
            k = kernel(text, kn)
            live = liveness(k).live_in
            for p in k.blocks:
                last = k.nodes[p.end - 1]
                if "branch" not in last.eff.flags or len(p.succs) < 2:
                    continue
                for s in p.succs:
                    b = k.blocks[s]
                    others = [o for o in p.succs if o != s]
                    for i in range(b.start, b.end):
                        eff = k.nodes[i].eff
                        if eff.never or not eff.def_units or eff.flags or eff.variable:
                            continue
                        crossed = range(b.start, i)
                        depends = any(not eff.use_units.isdisjoint(k.nodes[j].eff.def_units) for j in crossed)
                        live_other = any(live[o] & mask(eff.def_units) for o in others)
                        if not (depends or live_other):
                            continue
                        term = p.end - 1
                        bad = cb.CrossBlockMove(
                            "hoist", kn, k.nodes[i].line, i, term - (i < term), s, p.idx, term - p.start,
                            term, False, eff.opcode,
                        )  # fmt: skip
                        assert (i, p.idx, "hoist") not in offered
                        new = cb.apply(text, bad)
                        assert dataflow(new, kn, bad) != flow_of(name)[kn], (name, k.nodes[i].text)
                        caught["depends" if depends else "live"] += 1
                        if caught["depends"] >= 3 and caught["live"] >= 3:
                            return
    raise AssertionError(f"too few illegal hoists to test: {dict(caught)}")


def test_no_move_crosses_a_loop_boundary() -> None:
    """Both blocks of every move lie in the same strongly connected part of the CFG (a move into or out of
    a loop changes how often the instruction runs); the corpus has loops, and moves inside them."""
    inside = 0
    loops = 0
    for name in KERNELS:
        text = original(name)
        for kn in kernel_names(text):
            k = kernel(text, kn)
            reach = _reach(k)
            cyclic = {b.idx for b in k.blocks if b.idx in reach[b.idx]}
            loops += bool(cyclic)
            for m in moves_of(name):
                if m.kernel != kn:
                    continue
                a, b = m.from_block, m.to_block
                same = (a in reach[b] and b in reach[a]) or (a not in cyclic and b not in cyclic)
                assert same, m.description
                assert m.from_block != m.to_block
                inside += a in cyclic
    assert loops >= 3 and inside > 0


def _reach(k: Kernel) -> list[set[int]]:
    """Per block, the blocks reachable from it by one edge or more."""
    out = []
    for b in k.blocks:
        seen: set[int] = set()
        work = list(b.succs)
        while work:
            x = work.pop()
            if x not in seen:
                seen.add(x)
                work.extend(k.blocks[x].succs)
        out.append(seen)
    return out


def test_dependent_pairs_keep_ptxas_distances_along_the_path() -> None:
    """Along P then B, every dependent pair keeps min(ptxas's distance, its floor) as inside a block: the
    repair alone, judging the moved text, would cut some (the test of the padding), apply never does."""
    short_without = 0
    for name in ("triton_layernorm", "triton_matmul", "rmsnorm_f32_4096"):
        text = original(name)
        for move in sample(moves_of(name), 3, random.Random(f"dist:{name}")):
            new = cb.apply(text, move)
            assert _short_pairs(text, new, move) == 0, move.description
            bare = _without_padding(text, move)
            short_without += _short_pairs(text, bare, move)
    assert short_without > 0


def _without_padding(text: str, move: cb.CrossBlockMove) -> str:
    keep = cb._keep_distances
    try:
        cb._keep_distances = lambda t, *_a: t
        return cb.apply(text, move)
    finally:
        cb._keep_distances = keep


def _short_pairs(text: str, new: str, move: cb.CrossBlockMove) -> int:
    """Dependent pairs along P then B of ``new`` closer than ptxas's distance (capped) in ``text``."""
    from sass_lsp.schedule.deps import kernel_context

    k0, k1 = kernel(text, move.kernel), kernel(new, move.kernel)
    order = [i for i in range(len(k0.nodes)) if i != move.node]
    order.insert(move.to_node, move.node)
    p, b = (move.to_block, move.from_block) if move.kind == "hoist" else (move.from_block, move.to_block)

    def path(k: Kernel) -> list[int]:
        return [*range(k.blocks[p].start, k.blocks[p].end), *range(k.blocks[b].start, k.blocks[b].end)]

    t0, t = {}, 0
    for x in path(k0):
        t0[x], t = t, t + k0.nodes[x].ctrl.stall
    t1, t = [], 0
    for x in path(k1):
        t1.append(t)
        t += k1.nodes[x].ctrl.stall
    pairs = cb.path_pairs(kernel_context(k0, SEM), [order[x] for x in path(k1)], t0, SEM)
    assert pairs
    return sum(t1[c] - t1[a] < need for a, c, need in pairs)


def test_labels_named_by_nvinfo_keep_their_instruction() -> None:
    """Exit and cooperative-group offsets name instructions through labels (``.word .L_x_1@srel``, and
    CuAssembler's offset markers): after any move, every such label still precedes the same instruction."""
    name = "triton_softmax"
    text = original(name)
    before = _labelled(text)
    assert sum(lab.startswith(OFFSET_MARK) for lab, _ in before) > 5
    assert sum(lab in metadata_labels(parse_cuasm(text)[0]) for lab, _ in before) > 5
    for move in moves_of(name):
        assert _labelled(cb.apply(text, move)) == before, move.description


def _labelled(text: str) -> list[tuple[str, str]]:
    """(label, the instruction it precedes) for the referenced labels and the offset markers, in order (a
    marker's name holds its line number: the name is cut there)."""
    named = metadata_labels(parse_cuasm(text)[0])
    out = []
    for kn in kernel_names(text):
        k = kernel(text, kn)
        for lab, i in sorted(k.label_node.items(), key=lambda x: x[1]):
            if i < len(k.nodes) and (lab in named or lab.startswith(OFFSET_MARK)):
                out.append((lab if lab in named else lab.rsplit(".", 1)[0], _plain(k.nodes[i].text)))
    return sorted(out)


def test_assembles_with_the_same_instruction_count() -> None:
    for name in ("triton_softmax", "triton_matmul"):
        text = original(name)
        size = len(assemble_cuasm(text, verify=False))
        for move in sample(moves_of(name), 2, random.Random(f"asm:{name}")):
            assert len(assemble_cuasm(cb.apply(text, move), verify=False)) == size, move.description


# ---------------------------------------------------------------- chains, search, errors, benchmark


def test_chains_stay_clean() -> None:
    name = "triton_layernorm"
    text, done = cb.random_moves(original(name), 4, random.Random(3))
    assert len(done) == 4 and findings(text) == []
    k0, k1 = kernel(original(name), done[0].kernel), kernel(text, done[0].kernel)
    assert len(k0.nodes) == len(k1.nodes)

    # The reads of the chained text see instructions of the same texts as before (ids differ after a chain).
    def named(k: Kernel) -> collections.Counter:
        r = reaching(k)
        return collections.Counter(
            (_plain(k.nodes[j].text), u, frozenset(_plain(k.nodes[d].text) if d != IN else IN for d in ds))
            for (j, u), ds in r.items()
        )

    assert named(k1) == named(k0)


def test_neighbour_drives_annealing() -> None:
    text = original("triton_softmax")
    propose = cb.neighbour(text)

    def measure(candidate: str) -> Measured:
        assert findings(candidate) == []
        return Measured("", "match", 1.0 + 0.01 * candidate.count("S02"), seconds=1.0)

    log = annealing(propose, text, measure, 6.0, random.Random(0), max_misses=5)
    assert len(log.trials) == 6
    assert all(len(t.candidate.moves) == 1 and t.candidate.source == "cross-block" for t in log.trials)


def test_bad_text_and_foreign_moves_are_errors() -> None:
    with pytest.raises(cb.CrossBlockMoveError, match="line"):
        cb.crossblock_moves(original("triton_add").replace("[B------:R-:W-:Y:S", "[B------:R-:W-:Q:S", 1))
    m = moves_of("triton_softmax")[0]
    with pytest.raises(cb.CrossBlockMoveError, match="no kernel"):
        cb.apply(original("triton_matmul"), m)
    with pytest.raises(cb.CrossBlockMoveError, match="is not node"):
        cb.apply(original("triton_softmax"), dataclasses.replace(m, line=m.line + 1))


def test_hardware_benchmark_dry_run(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import crossblock_hardware as bench

    out = tmp_path / "mutants.jsonl"
    args = ["--kernels", "triton_softmax", "--count", "3", "--moves", "1-2", "--seed", "5", "--jobs", "1"]
    assert bench.main([*args, "--dry-run", "--json", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3 and {r["kernel"] for r in rows} == {"triton_softmax"}
    assert all(1 <= len(r["moves"]) <= 2 and r["verdict"] == "dry_run" for r in rows)
    printed = capsys.readouterr().out
    assert [json.loads(x) for x in printed.splitlines() if x.startswith("{")] == rows
    assert "triton_softmax" in printed and "legal moves: hoist 2, sink 6" in printed


def test_optimize_cross_block_walk_and_every_kind_together() -> None:
    """``optimize --moves cross-block``: one annealing walk of cross-block moves; with every kind, one walk of
    cross-block moves, renames and reorders of the texts they made, then the control-code walk. Every
    schedule is clean (a stand-in measures it) and its source names the kinds it holds."""
    pytest.importorskip("sass_lsp.schedule.game")  # gymnasium
    import zlib

    from sass_lsp import app
    from sass_lsp.cli_policy import _move_kinds
    from sass_lsp.gpu.corpus import load_kernel
    from sass_lsp.gpu.optimize import move_kinds
    from sass_lsp.schedule.search import schedule_key

    name = "triton_softmax"
    cubin, spec = load_kernel(name)
    orig = app.Original(original(name), "sm_90", cubin, spec, None)
    assert app.DEFAULT_MOVES == ("reorder", "control") and "cross-block" in app.MOVE_KINDS

    def measure(text: str) -> Measured:
        assert findings(text) == []
        s = 0.98 + (zlib.crc32(text.encode()) % 400) / 10_000
        return Measured(schedule_key(text), "match", s, s - 0.001, s + 0.001, seconds=1.0)

    log = app.policy_search(orig, app.SearchChoice(moves=("cross-block",)), net=None)(measure, 5.0)
    assert log.trials and {t.candidate.source for t in log.trials} == {"cross-block"}
    every = _move_kinds("reorder,control,rename,cross-block")
    log = app.policy_search(orig, app.SearchChoice(moves=every), net=None)(measure, 24.0)
    kinds = [move_kinds(t.candidate.source) for t in log.trials]
    assert {"cross-block", "rename", "reorder", "control"} <= {k for ks in kinds for k in ks}, kinds
    assert any(len(ks) > 1 and "control" not in ks for ks in kinds), (
        kinds
    )  # a reorder or step of another's text
    first_control = next(i for i, ks in enumerate(kinds) if "control" in ks)
    assert all("control" in ks for ks in kinds[first_control:])  # then only the control walk
