"""Control-code moves (yield, reuse, stall) on the real sm_90 corpus: every move the enumeration offers leaves
the checker silent, assembles, and changes only that instruction's control or reuse bits."""

from __future__ import annotations

import collections
import functools
import json
import random
import shutil
from dataclasses import replace

import pytest
from paths import ROOT, TRITON_CORPUS

from sass_lsp.analysis import check_module
from sass_lsp.cuasm import assemble_cuasm, parse_cuasm, write_cuasm
from sass_lsp.elf import read_cubin
from sass_lsp.isa.control import CONTROL_MASK, CONTROL_SHIFT, control_bits
from sass_lsp.model import Instruction
from sass_lsp.schedule import control_moves as cm
from sass_lsp.schedule.search import Measured, annealing

KERNELS = sorted(p.stem for p in TRITON_CORPUS.glob("*.cuasm"))


@functools.cache
def original(name: str) -> str:
    return (TRITON_CORPUS / f"{name}.cuasm").read_text()


@functools.cache
def moves_of(name: str) -> tuple[cm.ControlMove, ...]:
    return tuple(cm.control_moves(original(name)))


@functools.cache
def unreused(name: str) -> str:
    """The kernel with every .reuse flag cleared: ptxas sets every flag the strict rule allows, so reuse_set
    moves appear only once some are gone."""
    return cm.apply_moves(original(name), [m for m in moves_of(name) if m.kind == "reuse_clear"])


def findings(text: str) -> list[tuple[str, int]]:
    module, diags = parse_cuasm(text)
    out = [("parse", d.line) for d in diags if d.severity == "error"]
    return out + [
        (f.code, f.line) for f in check_module(module, "sm_90") if f.severity in ("error", "warning")
    ]


def sample(moves, per_kind: int, rng: random.Random) -> list[cm.ControlMove]:
    by_kind = collections.defaultdict(list)
    for m in moves:
        by_kind[m.kind].append(m)
    return [
        m for kind in sorted(by_kind) for m in rng.sample(by_kind[kind], min(per_kind, len(by_kind[kind])))
    ]


@pytest.mark.parametrize("name", KERNELS)
def test_every_kind_is_offered_and_the_originals_are_clean(name: str) -> None:
    assert findings(original(name)) == []
    kinds = collections.Counter(m.kind for m in moves_of(name))
    assert kinds["yield_on"] and kinds["yield_off"] and kinds["stall"] and kinds["reuse_clear"]
    assert kinds["reuse_set"] == 0  # ptxas already sets every flag the next instruction can use
    assert findings(unreused(name)) == []


def test_reuse_set_puts_back_ptxas_flags_after_a_clear() -> None:
    back = 0
    for name in KERNELS:
        sets = [m for m in cm.control_moves(unreused(name)) if m.kind == "reuse_set"]
        restored = cm.apply_moves(unreused(name), sets)
        for m in sets:  # every offered flag is one ptxas had (its next reader is in the same slot)
            assert restored.splitlines()[m.line - 1] == original(name).splitlines()[m.line - 1], m.description
        back += len(sets)
    assert back >= 60


@pytest.mark.parametrize("name", KERNELS)
def test_sampled_moves_leave_the_checker_silent(name: str) -> None:
    """A deterministic sample of every kind, the deepest cut of every stall move, and reuse sets on the
    text without reuse flags: no finding (the slow test below runs every move)."""
    rng = random.Random(name)
    stall_least: dict[int, cm.ControlMove] = {}
    for m in moves_of(name):
        if m.kind == "stall" and (m.line not in stall_least or m.ctrl < stall_least[m.line].ctrl):
            stall_least[m.line] = m  # S01 < S02 ... as text
    chosen = [(original(name), m) for m in sample(moves_of(name), 2, rng)]
    chosen += [(original(name), m) for m in stall_least.values()]
    reuse_sets = [m for m in cm.control_moves(unreused(name)) if m.kind == "reuse_set"]
    chosen += [(unreused(name), m) for m in rng.sample(reuse_sets, min(3, len(reuse_sets)))]
    for text, move in chosen:
        assert findings(cm.apply(text, move)) == [], move.description


@pytest.mark.slow
@pytest.mark.parametrize("name", KERNELS)
def test_every_move_leaves_the_checker_silent(name: str) -> None:
    cases = [(original(name), m) for m in moves_of(name)]
    cases += [(unreused(name), m) for m in cm.control_moves(unreused(name)) if m.kind == "reuse_set"]
    for text, move in cases:
        assert findings(cm.apply(text, move)) == [], move.description


def test_apply_changes_only_the_field_and_the_flag() -> None:
    text = original("triton_matmul")
    lines = text.splitlines(keepends=True)
    for move in sample(moves_of("triton_matmul"), 5, random.Random(1)):
        new = cm.apply(text, move).splitlines(keepends=True)
        assert len(new) == len(lines)
        assert [i for i, (a, b) in enumerate(zip(lines, new, strict=True)) if a != b] == [move.line - 1]
        before, after = lines[move.line - 1], new[move.line - 1]
        assert f"[{move.old_ctrl}]" in before and f"[{move.ctrl}]" in after
        if move.kind == "reuse_clear":
            assert (
                after
                == before.replace(f"[{move.old_ctrl}]", f"[{move.ctrl}]")[: move.reuse_col]
                + before[move.reuse_col + 6 :]
            )
        elif move.kind in ("stall", "yield_off") or not move.drop_reuse:
            assert after == before.replace(f"[{move.old_ctrl}]", f"[{move.ctrl}]", 1)
        else:
            assert ".reuse" in before and ".reuse" not in after
    stale = moves_of("triton_add")[0]
    with pytest.raises(cm.ControlMoveError, match="does not hold"):
        cm.apply(cm.apply(original("triton_add"), stale), stale)


def _words(cubin: bytes) -> dict[str, list[int]]:
    out = {}
    for sec in read_cubin(cubin).sections:
        if sec.name.startswith(".text."):
            data = sec.data
            out[sec.name] = [int.from_bytes(data[i : i + 16], "little") for i in range(0, len(data), 16)]
    return out


def _positions(text: str) -> dict[int, tuple[str, int]]:
    """line -> (section, instruction index)."""
    module, _ = parse_cuasm(text)
    out = {}
    for sec in module.sections:
        if sec.name.startswith(".text."):
            ins = [it for it in sec.items if isinstance(it, Instruction)]
            out |= {it.line: (sec.name, n) for n, it in enumerate(ins)}
    return out


REUSE_BITS = 0xF << 122


@pytest.mark.parametrize("name", KERNELS)
def test_assembled_words_differ_only_in_the_moved_bits(name: str) -> None:
    """One move per instruction at once (reuse sets on the text without flags): the cubin has only those
    words changed, only in control and reuse bits, with the control field the move names. The first
    kernels also pass nvdisasm's verification of every word."""
    rng = random.Random(f"bits:{name}")
    for base in (original(name), unreused(name)):
        moves = cm.control_moves(base)
        if base is not original(name):
            moves = [m for m in moves if m.kind == "reuse_set"]
        one_each: dict[int, cm.ControlMove] = {}
        for m in rng.sample(moves, len(moves)):
            one_each.setdefault(m.line, m)
        edited = cm.apply_moves(base, one_each.values())
        verify = base is original(name) and name in KERNELS[:2]
        before = _words(assemble_cuasm(base, verify=False))
        after = _words(assemble_cuasm(edited, source_name=name, verify=verify))
        at = _positions(base)
        moved = {at[line]: m for line, m in one_each.items()}
        for sec, words in before.items():
            for n, (a, b) in enumerate(zip(words, after[sec], strict=True)):
                m = moved.get((sec, n))
                if m is None:
                    assert a == b, f"{sec} word {n} changed"
                    continue
                assert (a ^ b) & ~(CONTROL_MASK | REUSE_BITS) == 0, m.description
                assert b >> CONTROL_SHIFT & 0x1FFFF == control_bits(m.ctrl), m.description
                flips = (a ^ b) & REUSE_BITS
                if m.kind in ("reuse_set", "reuse_clear"):
                    assert flips and flips & (flips - 1) == 0, m.description
                    assert bool(b & flips) == (m.kind == "reuse_set"), m.description
                elif m.kind == "yield_on" and m.drop_reuse:
                    assert flips and not b & REUSE_BITS, m.description
                else:
                    assert not flips, m.description


def test_yield_and_stall_rules() -> None:
    for name in KERNELS:
        lines = original(name).splitlines()
        for m in moves_of(name):
            line = lines[m.line - 1]
            assert m.opcode not in ("BRA", "EXIT", "NOP", "BSSY", "BSYNC", "WARPSYNC", "RET", "CALL")
            assert "@!PT" not in line
            if m.kind == "yield_off":
                assert int(m.ctrl[-2:]) <= 11
            if m.kind == "yield_on" and ".reuse" in line:
                assert m.drop_reuse
            if m.kind == "stall":
                new, old = int(m.ctrl[-2:]), int(m.old_ctrl[-2:])
                assert 1 <= new < old and m.ctrl[:-2] == m.old_ctrl[:-2]


def test_stall_moves_can_go_back_up_to_the_original() -> None:
    text = original("triton_add")
    cut = min((m for m in moves_of("triton_add") if m.kind == "stall"), key=lambda m: m.ctrl[-2:])
    edited = cm.apply(text, cut)
    alone = [m for m in cm.control_moves(edited) if m.kind == "stall" and m.line == cut.line]
    assert all(m.ctrl[-2:] < cut.ctrl[-2:] for m in alone)  # without the original: only further down
    back = [m for m in cm.control_moves(edited, original=text) if m.kind == "stall" and m.line == cut.line]
    assert any(m.ctrl == cut.old_ctrl for m in back)
    assert cm.apply(edited, next(m for m in back if m.ctrl == cut.old_ctrl)) == text


def test_chains_stay_clean() -> None:
    for name in ("triton_add", "triton_softmax"):
        rng = random.Random(name)
        text, done = cm.random_moves(original(name), 6, rng, original=original(name))
        assert len(done) == 6 and text != original(name)
        assert findings(text) == []


def test_neighbour_drives_annealing() -> None:
    """The search's annealing over control moves, measured by a stand-in that favours fewer stall cycles:
    every proposal is one move from a text it returned before, and every one is clean."""
    text = original("triton_add")
    propose = cm.neighbour(text)
    total = sum(int(c[-2:]) for c in _ctrls(text))

    def measure(candidate: str) -> Measured:
        assert findings(candidate) == []
        speed = total / sum(int(c[-2:]) for c in _ctrls(candidate))
        return Measured("", "match", speed, seconds=1.0)

    log = annealing(propose, text, measure, 12.0, random.Random(0), max_misses=5)
    assert len(log.trials) == 12
    assert all(len(t.candidate.moves) == 1 and t.candidate.source == "control" for t in log.trials)
    assert max(t.result.speedup or 0 for t in log.trials) > 1.0


def test_flag_variants_prewarm_the_verification_of_every_flag_move() -> None:
    """Each single yield or reuse move's instruction line is in one of the variants, and once they are
    assembled a candidate made by such a move needs no nvdisasm run (its words are recorded)."""
    from sass_lsp.app.optimize import prewarm_verification
    from sass_lsp.cuasm.verified import VERIFIED

    text = original("triton_matmul")
    variants = cm.flag_variants(text)
    lines = [set(v.splitlines()) for v in variants]
    moves = cm.control_moves(text, kinds=("yield_on", "yield_off", "reuse_clear", "reuse_set"))
    assert moves and len(variants) < len(moves)
    for m in moves:
        moved = cm.apply(text, m).splitlines()[m.line - 1]
        assert any(moved in ls for ls in lines), m
    prewarm_verification(variants)
    for m in random.Random(1).sample(moves, 5):
        candidate = cm.apply(text, m)
        module, _ = parse_cuasm(candidate)
        keys = VERIFIED.keys(module, assemble_cuasm(candidate, verify=False), "sm_90")
        assert keys is not None and VERIFIED.known(keys), m


def _ctrls(text: str) -> list[str]:
    module, _ = parse_cuasm(text)
    return [it.ctrl for sec in module.sections for it in sec.items if isinstance(it, Instruction)]


def test_bad_text_is_an_error_not_a_traceback() -> None:
    with pytest.raises(cm.ControlMoveError, match="line"):
        cm.control_moves(original("triton_add").replace("[B------:R-:W-:Y:S", "[B------:R-:W-:Q:S", 1))


def test_hardware_benchmark_dry_run(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # its imports of reorder_eval are lazy
    import control_hardware as bench

    out = tmp_path / "mutants.jsonl"
    args = ["--kernels", "triton_add", "--count", "3", "--moves", "1-2", "--seed", "5", "--jobs", "1"]
    assert bench.main([*args, "--dry-run", "--json", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3 and {r["kernel"] for r in rows} == {"triton_add"}
    assert all(1 <= len(r["moves"]) <= 2 and r["verdict"] == "dry_run" for r in rows)
    printed = capsys.readouterr().out
    assert [json.loads(x) for x in printed.splitlines() if x.startswith("{")] == rows
    assert "triton_add              3" in printed and "---" in printed
    text = original("triton_add")
    again = bench.mutants("triton_add", text, 3, (1, 2), 5, cm.KINDS)
    assert [r["moves"] for r in again] == [
        r["moves"] for r in bench.mutants("triton_add", text, 3, (1, 2), 5, cm.KINDS)
    ]
    assert all(findings(r["text"]) == [] for r in again)
    with pytest.raises(SystemExit):
        bench.main(["--moves", "3-1", "--dry-run"])


# ---------------------------------------------------------------- scoreboard reassignment

SB_KINDS = ("scoreboard", "scoreboard_rename")
DEPBAR_KERNELS = [n for n in KERNELS if "DEPBAR.LE SB" in original(n)]


def _edit_line(text: str, line: int, old: str, new: str) -> str:
    lines = text.splitlines(keepends=True)
    assert old in lines[line - 1], (line, lines[line - 1])
    lines[line - 1] = lines[line - 1].replace(old, new, 1)
    return "".join(lines)


@functools.cache
def shared_add() -> str:
    """triton_add with its two S2Rs sharing SB1, as a schedule that moved them together might leave them:
    ``S2R R3`` (line 904) on W1 instead of W3, so the SHF at line 914, which reads only R0 of ``S2R R0``
    (W1, line 900), waits for both; the LEA at line 916, which reads R3, no longer waits (SHF's wait on SB1
    drained both)."""
    text = _edit_line(original("triton_add"), 904, "[B------:R-:W3:-:S01]", "[B------:R-:W1:-:S01]")
    return _edit_line(text, 916, "[B---3--:R-:W-:Y:S04]", "[B------:R-:W-:Y:S04]")


@functools.cache
def reordered(name: str, seed: int) -> str:
    """The kernel after 30 random legal reorder moves, control codes repaired: the repair keeps each op's
    scoreboard, so ops ptxas kept apart may now share one ahead of a wait that needs only one of them."""
    from sass_lsp.schedule.baselines import random_legal
    from sass_lsp.schedule.game import ReorderGame
    from sass_lsp.schedule.search import game_candidate

    game = ReorderGame.from_text(original(name), "sm_90")
    random_legal(game, 30, random.Random(seed))
    return game_candidate(game, original(name), "test").text


def _gain_texts(names: tuple[str, ...] = ("rmsnorm_f32_4096", "transpose_f32", "triton_layernorm")):
    """(name, text, scoreboard moves) for the first of a few reorder seeds that gives each kernel some."""
    for name in names:
        for seed in range(8):
            moves = cm.control_moves(reordered(name, seed), kinds=("scoreboard",))
            if moves:
                yield name, reordered(name, seed), moves
                break


def test_scoreboard_move_on_a_hand_checked_example() -> None:
    text = shared_add()
    assert findings(text) == []  # sharing a scoreboard is always legal: a wait drains both
    moves = cm.control_moves(text, kinds=SB_KINDS)
    gain = [m for m in moves if m.kind == "scoreboard"]
    # S2R R3's W1: SB0 (LDC R1, never waited), SB2 and SB4 (LDCs waited after line 904) are busy; 3, 5 idle
    assert [(m.line, m.old_ctrl, m.ctrl) for m in gain] == [
        (904, "B------:R-:W1:-:S01", "B------:R-:W3:-:S01"),
        (904, "B------:R-:W1:-:S01", "B------:R-:W5:-:S01"),
    ]
    # the SHF keeps B-1 (S2R R0 is still pending on SB1) and so is not edited; the LEA waits on the new one
    assert [w[0] for m in gain for w in m.waits] == [916, 916]
    assert gain[1].waits == ((916, 7, "B------:R-:W-:Y:S04", "B-----5:R-:W-:Y:S04"),)
    assert "SHF (line 914) waits for it no more, LEA (line 916) does" in gain[1].description
    assert cm.apply(text, gain[0]) == original("triton_add")  # ptxas's assignment, exactly
    five = cm.apply(text, gain[1])
    changed = [
        n + 1 for n, (a, b) in enumerate(zip(text.splitlines(), five.splitlines(), strict=True)) if a != b
    ]
    assert changed == [904, 916] and findings(five) == []
    # S2R R0's first waiter (the SHF) reads R0: moving it is only a renaming, never offered as a gain
    renames = [m for m in moves if m.kind == "scoreboard_rename"]
    assert 900 in {m.line for m in renames} and 900 not in {m.line for m in gain}
    by_default = {m.kind for m in cm.control_moves(text)}
    assert "scoreboard" in by_default and "scoreboard_rename" not in by_default  # a renaming only on request


def test_scoreboard_moves_exist_after_reorders_and_leave_the_checker_silent() -> None:
    """ptxas's own code has no scoreboard move (its first wait after an op needs that op); random reorders
    make some. Every one leaves the checker silent and assembles."""
    assert all(not [m for m in moves_of(n) if m.kind == "scoreboard"] for n in KERNELS)
    counts = {}
    for name, text, moves in _gain_texts():
        counts[name] = len(moves)
        for m in moves:
            new = cm.apply(text, m)
            assert findings(new) == [], m.description
            assemble_cuasm(new, verify=False)
            old_sb, new_sb = (cm.decode_ctrl(c) for c in (m.old_ctrl, m.ctrl))
            assert (old_sb.write_sb, old_sb.read_sb) != (new_sb.write_sb, new_sb.read_sb)
            assert replace(old_sb, write_sb=None, read_sb=None) == replace(
                new_sb, write_sb=None, read_sb=None
            )
    assert len(counts) == 3, counts


@pytest.mark.parametrize("name", ["triton_add", "triton_matmul", "rmsnorm_f32_4096"])
def test_scoreboard_renames_change_only_control_bits(name: str) -> None:
    """Sampled renames on ptxas's code (one at a time): checker silent, and the cubin differs from the
    original only in the control bits of the lines the move names, which hold the fields it names."""
    text = original(name)
    moves = cm.control_moves(text, kinds=("scoreboard_rename",))
    assert moves
    before = _words(assemble_cuasm(text, verify=False))
    at = _positions(text)
    for m in random.Random(name).sample(moves, min(4, len(moves))):
        new = cm.apply(text, m)
        assert findings(new) == [], m.description
        after = _words(assemble_cuasm(new, verify=False))
        fields = {m.line: m.ctrl} | {line: ctrl for line, _col, _old, ctrl in m.waits}
        want = {at[line]: ctrl for line, ctrl in fields.items()}
        for sec, words in before.items():
            for n, (a, b) in enumerate(zip(words, after[sec], strict=True)):
                if (sec, n) not in want:
                    assert a == b, (m.description, sec, n)
                else:
                    assert (a ^ b) & ~CONTROL_MASK == 0 and b >> CONTROL_SHIFT & 0x1FFFF == control_bits(
                        want[sec, n]
                    )


@pytest.mark.parametrize("name", DEPBAR_KERNELS)
def test_scoreboards_a_depbar_counts_are_never_reassigned(name: str) -> None:
    """DEPBAR.LE SBn, k counts SBn's ops in order: no move sets, clears or waits on a DEPBAR's scoreboard
    (these kernels' DEPBARs all count SB0). Renames on ptxas's code and gain moves after reorders."""
    assert all("DEPBAR.LE SB0" in line for line in original(name).splitlines() if "DEPBAR.LE SB" in line)
    moves = cm.control_moves(original(name), kinds=SB_KINDS)
    for seed in range(3):
        moves += cm.control_moves(reordered(name, seed), kinds=SB_KINDS)
    assert moves
    for m in moves:
        for old, new in [(m.old_ctrl, m.ctrl), *((w[2], w[3]) for w in m.waits)]:
            a, b = cm.decode_ctrl(old), cm.decode_ctrl(new)
            assert 0 not in (a.write_sb, a.read_sb, b.write_sb, b.read_sb), m.description
            assert (a.wait_mask ^ b.wait_mask) & 1 == 0, m.description


def test_scoreboard_chains_stay_clean() -> None:
    """Chains of scoreboard, rename and stall moves on reordered kernels: every step is drawn on the text
    the previous ones left, and the end is still clean and assembles."""
    for name, text, _moves in _gain_texts(("transpose_f32", "triton_layernorm")):
        rng = random.Random(name)
        out, done = cm.random_moves(text, 6, rng, kinds=(*SB_KINDS, "stall"))
        assert len(done) == 6 and "scoreboard" in {m.kind for m in done}, [m.kind for m in done]
        assert findings(out) == []
        assemble_cuasm(out, verify=False)


def test_apply_moves_keeps_a_scoreboard_move_alone_on_its_lines() -> None:
    text = shared_add()
    move = next(m for m in cm.control_moves(text, kinds=("scoreboard",)) if m.ctrl.endswith("W5:-:S01"))
    assert cm.apply_moves(text, [move]) == cm.apply(text, move)
    on_waiter = next(m for m in cm.control_moves(text) if m.line == 916 and m.kind == "yield_off")
    with pytest.raises(cm.ControlMoveError, match="line 916"):
        cm.apply_moves(text, [move, on_waiter])
    elsewhere = next(m for m in cm.control_moves(text) if m.line == 920 and m.kind == "yield_on")
    assert cm.apply_moves(text, [move, elsewhere]) == cm.apply(cm.apply(text, move), elsewhere)


def test_hardware_benchmark_makes_scoreboard_mutants_after_reorders(monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import control_hardware as bench

    text = original("transpose_f32")
    assert bench.mutants("transpose_f32", text, 2, (1, 1), 5, ("scoreboard",)) == []  # ptxas's: none
    rows = bench.mutants("transpose_f32", text, 2, (1, 1), 5, ("scoreboard",), reorders=30)
    assert len(rows) == 2
    for r in rows:
        assert r["kinds"] == ["scoreboard"] and r["reorders"] and findings(r["text"]) == []
    with pytest.raises(SystemExit):
        bench.main(["--kinds", "nonsense", "--dry-run"])
    assert (
        bench.main(
            [
                "--kernels",
                "triton_add",
                "--kinds",
                "scoreboard_rename",
                "--count",
                "1",
                "--dry-run",
                "--jobs",
                "1",
            ]
        )
        == 0
    )


def test_yield_interleave_is_deepgemms_ffma_interleaving(monkeypatch) -> None:
    """On the FP8 block-scaled GEMM (two runs of 32 promotion FFMAs, each reading its scale register with
    .reuse), one ``yield_interleave`` move per run: every other FFMA of the run's first 18 yields and drops
    its flag, as DeepGEMM's script flips them. The binary changes only in those words' control and reuse
    bits, the checker stays silent, and control_probe's whole-kernel variant is both moves. A kernel without
    such runs has none."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from control_probe import interleave_ffma

    text = original("fp8_blockscale_gemm")
    moves = [m for m in moves_of("fp8_blockscale_gemm") if m.kind == "yield_interleave"]
    assert [len(m.lines) for m in moves] == [9, 9]
    edited = cm.apply_moves(text, moves)
    assert edited == interleave_ffma(text) == cm.apply(cm.apply(text, moves[0]), moves[1])
    lines = edited.splitlines()
    changed = [n for n, (a, b) in enumerate(zip(text.splitlines(), lines, strict=True)) if a != b]
    assert [n + 1 for n in changed] == sorted(line for m in moves for line in m.lines)
    assert all(":Y:S" in lines[n] and "FFMA" in lines[n] and ".reuse" not in lines[n] for n in changed)
    assert all(".reuse" in text.splitlines()[n] for n in changed)
    assert {changed[i + 1] - changed[i] for i in (*range(8), *range(9, 17))} == {2}  # every other, each run
    assert findings(edited) == []
    before, after = _words(assemble_cuasm(text)), _words(assemble_cuasm(edited))
    diffs = [(a, b) for sec in before for a, b in zip(before[sec], after[sec], strict=True) if a != b]
    assert len(diffs) == 18 and all((a ^ b) & ~(CONTROL_MASK | REUSE_BITS) == 0 for a, b in diffs)
    assert not [m for m in moves_of("triton_add") if m.kind == "yield_interleave"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_yield_interleave_on_the_register_tiled_cuda_kernels(tmp_path, monkeypatch) -> None:
    """Every run the rule picks in the CUDA C kernels with long FFMA runs (benchmarks/kernels, built by nvcc),
    all at once: the checker stays silent and only the picked FFMAs' control and reuse bits change."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from reorder_eval import load_kernels

    counts = {}
    for name, _origin, cubin, _spec in load_kernels(["conv2d", "sgemm_tiled", "fma_2k"], tmp_path):
        text = write_cuasm(cubin, source_name=name)
        moves = cm.control_moves(text, kinds=("yield_interleave",))
        counts[name] = len(moves)
        edited = cm.apply_moves(text, moves)
        assert findings(edited) == [], name
        before, after = _words(cubin), _words(assemble_cuasm(edited))
        diffs = [(a, b) for sec in before for a, b in zip(before[sec], after[sec], strict=True) if a != b]
        assert len(diffs) == sum(len(m.lines) for m in moves), name
        assert all((a ^ b) & ~(CONTROL_MASK | REUSE_BITS) == 0 for a, b in diffs), name
    assert counts["conv2d"] >= 10 and counts["sgemm_tiled"] >= 1 and counts["fma_2k"] >= 1, counts
