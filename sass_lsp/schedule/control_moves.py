"""Feature: control-code moves. Edits of one instruction's control field or ``.reuse`` flags (with the waits
on it, for a scoreboard reassignment), in the text's order, that keep a kernel hazard-free by construction:
the reorder game's companion for the scheduler hints.

API
---
``control_moves(text, arch=None, *, original=None, kinds=KINDS) -> list[ControlMove]``
    Every legal move of every kernel of ``text`` (``kinds``: some of ``ALL_KINDS``). ``original`` (same
    lines, e.g. ptxas's text when ``text`` is an edit of it) bounds the stall moves from above: a stall may
    take any value from the least the hazard model allows up to the original's; without it, up to the
    current stall.
``apply(text, move) -> str`` / ``apply_moves(text, moves) -> str``
    The text with that instruction's control field (and ``.reuse`` flags) changed; every other byte kept.
    ``apply_moves`` applies moves enumerated on the same text at once: one per instruction (a scoreboard
    move's waits count as its instructions), or several ``reuse_*`` moves on one; legal together only where
    they do not share a constraint (stall moves of nearby instructions share slack, scoreboard moves may
    pick the same idle scoreboard: use :func:`random_moves` for chains).
``random_moves(text, n, rng, *, original=None, kinds=KINDS) -> (text, moves)``
    ``n`` moves in a row, each drawn among the legal moves of the text the previous ones left (a kind
    first, uniformly, then a move of that kind), so every intermediate text is legal.
``neighbour(original, arch=None, *, kinds=KINDS, source="control") -> propose``
    ``propose(text, rng) -> Candidate | None`` for :func:`sass_lsp.schedule.search.annealing`: one legal
    control move away from ``text``, stalls bounded by ``original``'s.

The moves (``kind``)
- ``yield_on`` / ``yield_off``: the yield flag, never on control flow and NOP-like instructions (semantics
  pipes ``branch`` and ``control``: their yield bit belongs to their encoding) nor on ``@!PT`` placeholders.
  Setting Y drops the instruction's ``.reuse`` flags (with Y set the hardware does not reuse; SASS011).
  Clearing it only where the stall is encodable without it (:func:`sass_lsp.isa.control.control_problem`:
  S12+ needs Y).
- ``reuse_clear``: one ``.reuse`` flag dropped; always legal (the cache is a hint).
- ``reuse_set``: a ``.reuse`` flag on a register source of a fixed-latency instruction without Y that does
  not write that register, when the next instruction of the block (also fixed-latency) reads the same
  register in the same operand slot: the slot is the reuse flag the encoder sets for the operand (the ISA
  tables), compared between the two instructions, so a flag the form cannot encode is never offered.
- ``stall``: any value from the least the schedule's distance constraints allow to the original stall.
  The constraints are the reorder repair's (:mod:`.deps` ``BlockFacts.dist``, ``entry_bounds``,
  ``exit_bounds``: the checker's latency rows, raised where the H200 showed them short, BAR.SYNC -> shared,
  uniform and late-read WAR distances), plus ``scoreboard_set_cycles`` between a scoreboard's setter and a
  wait on it or the block's end. A cut of x's stall moves every later instruction of its block as many
  cycles closer to the instructions up to x, so the least stall is the stall less the smallest slack of any
  constraint that spans it. Never on the nodes the reorder game never moves (barriers, branches, DEPBAR,
  WARPGROUP, HGMMA, placeholders, the block's last instruction): what their issue needs is not modelled.
  The repair keeps ptxas's stall where no latency explains it; these moves do cut those gaps, so they rest
  on the model alone: the GPU decides (``benchmarks/control_hardware.py``).
- ``scoreboard``: a variable-latency op's W (or R) scoreboard moved to another, where two ops shared one
  and the first wait on it after the op (W1) needs only the other: W1 stops waiting for this op, and the
  first instruction from W1 on that may need it (it touches the op's registers, or is variable-latency,
  memory, barrier, HGMMA, control flow or clock/PC-reading; else the block's last) waits on the new
  scoreboard. W1 (and that instruction) keep the old scoreboard only while another op is pending on it.
  The new one must be idle from the op to that wait: nothing pending on it at the op (the checker's
  block-entry state counts as pending), no set or wait of it in between. Not for scoreboards a DEPBAR
  counts (it counts ops in order), nor when W1 is in another block, nor on the nodes stall moves skip.
  Each move is also run through the checker, kept only if it adds no finding. ptxas's own code has none
  (its first waiter needs the op); reorders that make ops share a scoreboard do.
- ``scoreboard_rename`` (only when asked for, not in ``KINDS``): the same where W1 needs the op itself:
  every wait waits for the same ops as before, so it tests the scoreboard model, not a speed-up.
- ``yield_interleave``: DeepGEMM's FFMA interleaving (``deep_gemm/jit/interleave_ffma.py``, 10%+ on Hopper
  FP8 GEMMs whose per-block scaling promotes the tensor cores' sums with runs of FFMAs), as one move per run
  of at least 16 consecutive FFMAs in a block: over the run's first 9/16 (an even count), an FFMA whose
  second source carries ``.reuse`` gets yield on (its ``.reuse`` dropped) when that register is new to the
  run or the FFMA before had just lost its flag on it, so every other FFMA that shares a source yields. It
  is a chain of ``yield_on`` moves that a walk of single moves would hardly find.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from sass_lsp.analysis.check import check_kernel
from sass_lsp.analysis.program import Block, Ctrl, Kernel, Node, build_kernel, decode_ctrl, encode_ctrl
from sass_lsp.cuasm import parse_cuasm
from sass_lsp.cuasm.assembler import module_arch
from sass_lsp.isa.control import ControlCode, control_problem
from sass_lsp.isa.encoder import EncodeError, Encoder
from sass_lsp.isa.semantics import Operand, Semantics, load_semantics
from sass_lsp.model import Instruction
from sass_lsp.schedule.deps import block_deps, entry_bounds, exit_bounds, kernel_context
from sass_lsp.schedule.moves import pick_move, recent_moves
from sass_lsp.schedule.repair import strip_reuse

KINDS = ("yield_on", "yield_off", "reuse_clear", "reuse_set", "stall", "scoreboard", "yield_interleave")
# On request only: ``scoreboard_rename`` keeps every wait waiting for the same ops (a check of the model).
ALL_KINDS = (*KINDS, "scoreboard_rename")
INTERLEAVE_RUN = 16  # the fewest consecutive FFMAs DeepGEMM interleaves
# Pipes whose instructions keep their yield bit (control flow, NOP, BSSY/BSYNC, WARPSYNC, ...).
NO_YIELD_PIPES = frozenset({"branch", "control"})
REUSE_BITS = 0xF << 122  # the operand-slot reuse flags of the 128-bit word
_REUSE = re.compile(r"\.reuse\b")
_REG_TOKEN = re.compile(r"[-!~|]*R(\d+)\|?((?:\.[A-Za-z0-9_]+)*)")
_REG_BEFORE = re.compile(r"U?R\d+\|?(?:\.[A-Za-z0-9_]+)*$")
_TRAILER = re.compile(r"//\s*(hidden|raw)\b")
_SLOT = "abcd"
_FLAG_KINDS = frozenset({"reuse_clear", "reuse_set"})  # moves that leave the control field as it is


class ControlMoveError(ValueError):
    """The text cannot be read, or a move does not belong to it."""


@dataclass(frozen=True)
class ControlMove:
    """One edit of one instruction. ``line`` is 1-based; columns are 0-based offsets into that line."""

    kind: str
    line: int
    opcode: str
    old_ctrl: str  # the control field before (inside the brackets)
    ctrl: str  # and after
    ctrl_col: int
    reuse_col: int = -1  # reuse_set: where ".reuse" goes; reuse_clear: where it starts
    register: str = ""  # reuse_*: the register, e.g. "R51"
    drop_reuse: bool = False  # yield_on: the instruction's .reuse flags go
    description: str = ""
    # the other lines it rewrites, as (line, ctrl_col, old_ctrl, ctrl) like the fields above: scoreboard's
    # waits; yield_interleave's other FFMAs (their .reuse dropped too)
    waits: tuple[tuple[int, int, str, str], ...] = ()

    @property
    def lines(self) -> tuple[int, ...]:
        """Every line the move edits."""
        return (self.line, *(w[0] for w in self.waits))

    def __str__(self) -> str:
        return self.description


# ---------------------------------------------------------------- apply


def apply(text: str, move: ControlMove) -> str:
    lines = text.splitlines(keepends=True)
    _apply_to(lines, move)
    return "".join(lines)


def apply_moves(text: str, moves: Iterable[ControlMove]) -> str:
    lines = text.splitlines(keepends=True)
    moves = list(moves)
    by_line: dict[int, list[ControlMove]] = {}
    for m in moves:
        for line in m.lines:
            by_line.setdefault(line, []).append(m)
    for line, ms in by_line.items():
        if len(ms) > 1 and not all(m.kind in _FLAG_KINDS for m in ms):
            raise ControlMoveError(f"{len(ms)} moves on line {line}: apply them one at a time")
    for m in sorted(moves, key=lambda m: -m.reuse_col):  # right to left on a line: the columns stay valid
        _apply_to(lines, m)
    return "".join(lines)


def _apply_to(lines: list[str], move: ControlMove) -> None:
    for line in move.lines:
        if not 0 < line <= len(lines):
            raise ControlMoveError(f"line {line} is not in the text ({len(lines)} lines)")
    lines[move.line - 1] = _apply_line(lines[move.line - 1], move)
    also = move.kind == "yield_interleave"
    for line, col, old, new in move.waits:
        lines[line - 1] = _apply_line(
            lines[line - 1], ControlMove("wait", line, "", old, new, col, drop_reuse=also)
        )


def _apply_line(line: str, move: ControlMove) -> str:
    a = move.ctrl_col
    if (
        line[a : a + len(move.old_ctrl)] != move.old_ctrl
        or line[a + len(move.old_ctrl) : a + 1 + len(move.old_ctrl)] != "]"
    ):
        raise ControlMoveError(f"line {move.line} does not hold [{move.old_ctrl}] at column {a + 1}")
    out = line[:a] + move.ctrl + line[a + len(move.old_ctrl) :]
    if move.kind == "reuse_set":
        out = out[: move.reuse_col] + ".reuse" + out[move.reuse_col :]
    elif move.kind == "reuse_clear":
        if out[move.reuse_col : move.reuse_col + 6] != ".reuse":
            raise ControlMoveError(f"line {move.line} has no .reuse at column {move.reuse_col + 1}")
        out = out[: move.reuse_col] + out[move.reuse_col + 6 :]
    elif move.drop_reuse:
        out = strip_reuse(out)
    return out


# ---------------------------------------------------------------- enumerate


def control_moves(
    text: str, arch: str | None = None, *, original: str | None = None, kinds: Sequence[str] = KINDS
) -> list[ControlMove]:
    upper = _stalls_by_line(original) if original is not None else None
    return _moves(text, arch, upper, kinds)


def _moves(
    text: str, arch: str | None, upper: dict[int, int] | None, kinds: Sequence[str]
) -> list[ControlMove]:
    module, diags = parse_cuasm(text)
    errors = [d for d in diags if d.severity == "error"]
    if errors:
        d = errors[0]
        raise ControlMoveError(f"line {d.line}: {d.message}")
    arch = arch or module_arch(module)
    sem = load_semantics(arch)
    lines = text.splitlines()
    out: list[ControlMove] = []
    for sec in module.sections:
        if not sec.name.startswith(".text.") or not sec.instructions:
            continue
        k = build_kernel(sec.name[len(".text.") :], sec.line, list(sec.items), sem)
        out += _kernel_moves(k, sem, arch, lines, upper, frozenset(kinds))
    return out


def _stalls_by_line(text: str) -> dict[int, int]:
    module, _diags = parse_cuasm(text)
    out = {}
    for sec in module.sections:
        for it in sec.items:
            if isinstance(it, Instruction) and (c := decode_ctrl(it.ctrl)) is not None:
                out[it.line] = c.stall
    return out


def _kernel_moves(
    k: Kernel,
    sem: Semantics,
    arch: str,
    lines: list[str],
    upper: dict[int, int] | None,
    kinds: frozenset[str],
) -> list[ControlMove]:
    out: list[ControlMove] = []
    enc = Encoder.for_arch(arch) if "reuse_set" in kinds else None
    least = _least_stalls(k, sem) if "stall" in kinds else {}
    block_end = {b.end - 1 for b in k.blocks}
    for nd in k.nodes:
        if nd.eff.never or not _editable(nd, lines):
            continue
        if "yield_on" in kinds or "yield_off" in kinds:
            out += [m for m in _yield_moves(nd, arch) if m.kind in kinds]
        if "reuse_clear" in kinds:
            out += _reuse_clears(nd)
        if "reuse_set" in kinds and enc is not None and nd.idx not in block_end:
            out += _reuse_sets(nd, k.nodes[nd.idx + 1], enc)
        if "stall" in kinds and nd.idx in least:
            top = nd.ctrl.stall if upper is None else max(nd.ctrl.stall, upper.get(nd.line, nd.ctrl.stall))
            out += _stall_moves(nd, least[nd.idx], top, arch)
    if kinds & _SB_KINDS:
        out += _scoreboard_moves(k, sem, lines, kinds)
    if "yield_interleave" in kinds:
        out += _interleave_moves(k, lines)
    return out


def _editable(nd: Node, lines: list[str]) -> bool:
    """Whether the control field is one a move may rewrite: readable, written as ``encode_ctrl`` writes it
    (not with spaces or without brackets: that is left to the user), on a line without a trailer."""
    line = lines[nd.line - 1]
    field = encode_ctrl(nd.ctrl)
    return (
        not nd.ctrl.errors
        and not _TRAILER.search(line)
        and line[nd.ctrl_col - 1 : nd.ctrl_col - 1 + len(field)] == field
    )


def _move(nd: Node, kind: str, ctrl: Ctrl, what: str, **kw: object) -> ControlMove:
    return ControlMove(
        kind,
        nd.line,
        nd.eff.opcode,
        encode_ctrl(nd.ctrl),
        encode_ctrl(ctrl),
        nd.ctrl_col - 1,
        description=f"{what} (line {nd.line})",
        **kw,  # type: ignore[arg-type]
    )


def _yield_moves(nd: Node, arch: str) -> list[ControlMove]:
    if nd.eff.pipe in NO_YIELD_PIPES:
        return []
    c = nd.ctrl
    op = nd.eff.opcode
    if not c.yield_flag:
        reused = bool(_REUSE.search(nd.text))
        what = f"yield on {op}" + (", dropping its .reuse" if reused else "")
        return [_move(nd, "yield_on", replace(c, yield_flag=True), what, drop_reuse=reused)]
    off = replace(c, yield_flag=False)
    if control_problem(ControlCode(c.wait_mask, c.read_sb, c.write_sb, False, c.stall), arch) is not None:
        return []
    return [_move(nd, "yield_off", off, f"yield off {op}")]


def _interleave_moves(k: Kernel, lines: list[str]) -> list[ControlMove]:
    """One ``yield_interleave`` move per run of FFMAs long enough, where DeepGEMM's rule picks any."""
    out = []
    for b in k.blocks:
        run: list[Node] = []
        for i in range(b.start, b.end + 1):  # one past the end closes the last run
            nd = k.nodes[i] if i < b.end else None
            if nd is not None and nd.eff.opcode == "FFMA" and not nd.eff.never and _editable(nd, lines):
                run.append(nd)
                continue
            picked = _interleaved(run) if len(run) >= INTERLEAVE_RUN else []
            if picked:
                out.append(_interleave_move(run, picked))
            run = []
    return out


def _interleave_move(run: list[Node], picked: list[Node]) -> ControlMove:
    def yielding(nd: Node) -> Ctrl:
        return replace(nd.ctrl, yield_flag=True)

    first = picked[0]
    others = tuple(
        (n.line, n.ctrl_col - 1, encode_ctrl(n.ctrl), encode_ctrl(yielding(n))) for n in picked[1:]
    )
    what = f"interleave yields: yield on {len(picked)} of {len(run)} FFMAs"
    return _move(
        first,
        "yield_interleave",
        yielding(first),
        what + ", dropping their .reuse",
        drop_reuse=True,
        waits=others,
    )


def _interleaved(run: list[Node]) -> list[Node]:
    """The FFMAs of ``run`` DeepGEMM's rule gives the yield flag (see the module's doc)."""
    picked, seen = [], set()
    last_reused, last_reg = False, ()
    for nd in run[: len(run) * 9 // 16 // 2 * 2]:
        second = next((op for op in nd.eff.srcs if op.slot == 1 and _reusable(op)), None)
        reg, reused = (second.units, second.reuse) if second else ((), False)
        if reused and not nd.ctrl.yield_flag and (reg not in seen or (last_reused and reg == last_reg)):
            picked.append(nd)
            reused = False
        seen.add(reg)
        last_reused, last_reg = reused, reg
    return picked


def _reuse_clears(nd: Node) -> list[ControlMove]:
    out = []
    code = nd.text.split("//", 1)[0]
    for m in _REUSE.finditer(code):
        reg = _REG_BEFORE.search(code, 0, m.start())
        name = reg.group(0).split(".")[0].rstrip("|") if reg else "?"
        col = nd.text_col - 1 + m.start()
        what = f"reuse clear on {name} of {nd.eff.opcode}"
        out.append(_move(nd, "reuse_clear", nd.ctrl, what, reuse_col=col, register=name))
    return out


def _reuse_sets(nd: Node, nxt: Node, enc: Encoder) -> list[ControlMove]:
    eff, neff = nd.eff, nxt.eff
    if nd.ctrl.yield_flag or nxt.eff.never or eff.variable or neff.variable:
        return []
    if eff.pipe in NO_YIELD_PIPES or neff.pipe in NO_YIELD_PIPES:
        return []
    out = []
    for op in eff.srcs:
        if not _reusable(op) or op.reuse or eff.def_units.intersection(op.units):
            continue
        mine = None
        for other in neff.srcs:
            if not _reusable(other) or other.units != op.units:
                continue
            if mine is None:
                mine = _reuse_flag(enc, nd.text, op)
                if mine is None:
                    break
            if _reuse_flag(enc, nxt.text, other) == mine:
                col = _token_end(nd.text, op)
                name = f"R{op.units[0]}"
                slot = _SLOT[(mine.bit_length() - 1) - 122]
                what = f"reuse set on {name} (slot {slot}) of {eff.opcode}, read again by {neff.opcode}"
                out.append(
                    _move(nd, "reuse_set", nd.ctrl, what, reuse_col=nd.text_col - 1 + col, register=name)
                )
                break
    return out


def _reusable(op: Operand) -> bool:
    """A plain GPR source (not RZ, not an address, predicate or uniform register)."""
    return op.role == "src" and op.slot >= 0 and bool(op.units) and all(u < 256 for u in op.units)


def _token_end(text: str, op: Operand) -> int:
    m = _REG_TOKEN.match(text, op.col)
    if m is None:
        raise ControlMoveError(f"no register at column {op.col + 1} of {text!r}")
    return m.end()


def _reuse_flag(enc: Encoder, text: str, op: Operand) -> int | None:
    """The reuse bit the encoder sets for ``op`` of ``text`` (None: not exactly one reuse bit)."""
    end = _token_end(text, op)
    token = text[op.col : end]
    bare_token = _REUSE.sub("", token)
    bare = text[: op.col] + bare_token + text[end:]
    flagged = text[: op.col] + bare_token + ".reuse" + text[end:]
    try:
        diff = enc.encode(bare).word ^ enc.encode(flagged).word
    except (EncodeError, ValueError):
        return None
    if diff & ~REUSE_BITS or diff & (diff - 1) or not diff:
        return None
    return diff


def _stall_moves(nd: Node, least: int, top: int, arch: str) -> list[ControlMove]:
    c = nd.ctrl
    out = []
    for v in range(least, top + 1):
        if v == c.stall:
            continue
        cc = ControlCode(c.wait_mask, c.read_sb, c.write_sb, c.yield_flag, v)
        if control_problem(cc, arch) is not None:
            continue
        what = f"stall S{c.stall:02d} -> S{v:02d} on {nd.eff.opcode}"
        out.append(_move(nd, "stall", replace(c, stall=v, errors=()), what))
    return out


# ---------------------------------------------------------------- the least stall of each instruction

# A slack this large never binds: no stall is cut by more than the 4-bit field holds.
_NO_BIND = 16


def _least_stalls(k: Kernel, sem: Semantics) -> dict[int, int]:
    """``node -> the least stall the distance constraints allow`` for the nodes a stall move may touch."""
    ctx = kernel_context(k, sem)
    sb_set = ctx.sb_set
    out: dict[int, int] = {}
    for b in k.blocks:
        if b.end - b.start < 2:
            continue
        deps = block_deps(k, b.idx, sem)
        facts = ctx.block_facts(b.idx)
        entry = ctx.entry[b.idx]
        lb = entry_bounds(ctx, facts, entry)
        exit_cons, c0 = exit_bounds(ctx, facts, entry)
        t, total = facts.orig_t, facts.orig_len
        start, end = b.start, b.end
        slack = {x: min(_NO_BIND, total - c0) for x in range(start, end)}
        bind = _binder(slack, start)
        for j, cons in facts.dist.items():
            for i, c in cons:
                bind(i, j, t[j] - t[i] - c)
        for j, c in lb.items():
            bind(start, j, t[j] - c)
        for i, c in exit_cons.items():
            bind(i, end, total - t[i] - c)
        last_set: dict[int, int] = {}  # scoreboard -> its latest setter so far
        for j in range(start, end):
            f = facts.info[j]
            for sb, i in last_set.items():
                if f.wait >> sb & 1:
                    bind(i, j, t[j] - t[i] - sb_set)
            for sb in (f.wsb, f.rsb):
                if sb is not None:
                    last_set[sb] = j
        for i in set(last_set.values()):  # a successor may wait on it first thing
            bind(i, end, total - t[i] - sb_set)
        for x in range(start, end - 1):
            nd = k.nodes[x]
            if x in deps.fixed or nd.eff.never:
                continue
            stall = nd.ctrl.stall
            floor = 1 if stall >= 1 else 0
            out[x] = max(floor, stall - max(0, slack[x]))
    return out


def _binder(slack: dict[int, int], start: int) -> Callable[[int, int, int], None]:
    def bind(i: int, j: int, s: int) -> None:
        """A constraint from node i to node j (the block's end: one past its last node) with ``s`` cycles to
        spare: the stalls of i..j-1 may shrink by at most s together."""
        if s >= _NO_BIND:
            return
        for x in range(max(i, start), j):
            if s < slack[x]:
                slack[x] = s

    return bind


# ---------------------------------------------------------------- scoreboard reassignment

_SBS = range(6)
_SB_KINDS = frozenset({"scoreboard", "scoreboard_rename"})
Pending = tuple[frozenset[tuple[int, str]], ...]  # per scoreboard: (setter, "W" | "R"); (-1, "") from entry


def _scoreboard_moves(
    k: Kernel, sem: Semantics, lines: list[str], kinds: frozenset[str]
) -> list[ControlMove]:
    """Every legal reassignment of one setter's scoreboard (see the module docstring), each checked."""
    depbar = 0  # scoreboards a DEPBAR counts: their ops are counted in order, never touched
    for nd in k.nodes:
        if "depbar" in nd.eff.flags:
            depbar |= nd.eff.sb_set
    base: set[tuple[str, int]] | None = None
    out: list[ControlMove] = []
    for b in k.blocks:
        # (setter, field, scoreboard, W1, J) of the kinds asked for: cheap, so the checker runs only for these
        shapes = []
        for x in range(b.start, b.end - 1):
            nd = k.nodes[x]
            for field, sb in (("W", nd.ctrl.write_sb), ("R", nd.ctrl.read_sb)):
                if sb is None or depbar >> sb & 1 or nd.eff.never:
                    continue
                span = _span(k, sem, b, x, sb)
                if span and ("scoreboard_rename" if span[0] == span[1] else "scoreboard") in kinds:
                    shapes.append((x, field, sb, *span))
        if not shapes:
            continue
        if base is None:  # once per kernel, and only for one with a candidate
            base = {(f.code, f.line) for f in check_kernel(k, sem)}
        entry = kernel_context(k, sem).entry[b.idx]  # the checker's state at block entry (cached per kernel)
        before = _pending(k, b, {e.sb for e in entry.events if e.sb >= 0})
        fixed = block_deps(k, b.idx, sem).fixed
        for x, field, sb, w1, waiter in shapes:
            if x in fixed or not _editable(k.nodes[x], lines):
                continue
            for move in _reassignments(k, b, x, field, sb, w1, waiter, before, depbar, lines):
                if _clean(k, sem, move, base):
                    out.append(move)
    return out


def _span(k: Kernel, sem: Semantics, b: Block, x: int, sb: int) -> tuple[int, int] | None:
    """(W1, J) for node x's scoreboard ``sb``: W1, the first wait on ``sb`` after x, is where the original
    completes x; J, the first node from W1 on that may need x done (else the block's last, so that nothing
    of x is pending in its successors), is where the new scoreboard is waited on. None: no W1 in the block
    (what the successors wait on is not followed)."""
    nodes = k.nodes
    w1 = next((j for j in range(x + 1, b.end) if nodes[j].ctrl.wait_mask >> sb & 1), None)
    if w1 is None:
        return None
    units = nodes[x].eff.def_units | nodes[x].eff.use_units
    return w1, next((j for j in range(w1, b.end) if not _independent(nodes[j], units, sem)), b.end - 1)


def _pending(k: Kernel, b: Block, entry: set[int]) -> list[Pending]:
    """Per node of the block: the ops pending on each scoreboard before its wait (``entry``: those that may
    be pending when the block starts; ops are kept until a wait on their scoreboard, whatever else)."""
    pending: list[set[tuple[int, str]]] = [{(-1, "")} if sb in entry else set() for sb in _SBS]
    out = []
    for j in range(b.start, b.end):
        c = k.nodes[j].ctrl
        out.append(tuple(map(frozenset, pending)))
        for sb in _SBS:
            if c.wait_mask >> sb & 1:
                pending[sb] = set()
        if c.write_sb is not None:
            pending[c.write_sb].add((j, "W"))
        if c.read_sb is not None:
            pending[c.read_sb].add((j, "R"))
    return out


def _reassignments(
    k: Kernel,
    b: Block,
    x: int,
    field: str,
    sb: int,
    w1: int,
    waiter: int,
    before: list[Pending],
    depbar: int,
    lines: list[str],
) -> Iterable[ControlMove]:
    """Node x's ``field`` scoreboard ``sb`` moved to each one idle from x to J (``waiter``, see _span)."""
    nodes, at = k.nodes, b.start
    nd = nodes[x]
    ev = (x, field)
    # W1 and J keep their wait on sb only while another op is pending on it
    drop = {j: not (before[j - at][sb] - {ev}) for j in (w1, waiter)}
    used = depbar | 1 << sb  # scoreboards that are not free from x to J
    used |= sum(1 << s for s in (nd.ctrl.write_sb, nd.ctrl.read_sb) if s is not None)
    used |= sum(1 << s for s in _SBS if before[x - at][s] and not nd.ctrl.wait_mask >> s & 1)
    for j in range(x + 1, waiter + 1):
        c = nodes[j].ctrl
        used |= c.wait_mask
        if j < waiter:
            used |= sum(1 << s for s in (c.write_sb, c.read_sb) if s is not None)
    w1_op = f"{nodes[w1].eff.opcode} (line {nodes[w1].line})"
    j_op = f"{nodes[waiter].eff.opcode} (line {nodes[waiter].line})"
    for new in _SBS:
        if used >> new & 1:
            continue
        waits = []
        for j, gone in drop.items():
            c = nodes[j].ctrl
            mask = c.wait_mask & ~(1 << sb) if gone and c.wait_mask >> sb & 1 else c.wait_mask
            mask |= 1 << new if j == waiter else 0
            if mask != c.wait_mask:
                if nodes[j].eff.never or not _editable(nodes[j], lines):
                    break
                edit = (
                    nodes[j].line,
                    nodes[j].ctrl_col - 1,
                    encode_ctrl(c),
                    encode_ctrl(replace(c, wait_mask=mask)),
                )
                waits.append(edit)
        else:
            moved = replace(nd.ctrl, write_sb=new) if field == "W" else replace(nd.ctrl, read_sb=new)
            kind = "scoreboard_rename" if waiter == w1 else "scoreboard"
            move = _move(nd, kind, moved, "", waits=tuple(waits))
            what = f"scoreboard {field}{sb} -> {field}{new} on {nd.eff.opcode} (line {nd.line})"
            if waiter == w1:
                what += f", still waited on by {w1_op}"
            else:
                what += f": {w1_op} waits for it no more, {j_op} does"
            yield replace(move, description=what)


def _independent(nd: Node, units: frozenset[int], sem: Semantics) -> bool:
    """Whether node ``nd`` provably needs no op on ``units`` done: a fixed-latency instruction that touches
    none of them, no memory, barrier, HGMMA or control flow, nothing read off the clock or the PC."""
    e = nd.eff
    return not (
        e.variable
        or e.never
        or e.flags
        or e.pipe in NO_YIELD_PIPES
        or e.pipe == "unknown"
        or sem.is_barrier(e.opcode)
        or sem.positional(nd.text)
        or units & e.def_units
        or units & e.use_units
    )


def _clean(k: Kernel, sem: Semantics, move: ControlMove, base: set[tuple[str, int]]) -> bool:
    """Whether the kernel with ``move``'s fields has no finding the original lacks (a second opinion)."""
    by_line = {move.line: move.ctrl} | {line: ctrl for line, _col, _old, ctrl in move.waits}
    nodes = list(k.nodes)
    for i, nd in enumerate(nodes):
        ctrl = decode_ctrl(by_line[nd.line]) if nd.line in by_line else None
        if ctrl is not None:  # a Node built, not replaced: it is a native class where program.py is compiled
            nodes[i] = Node(nd.idx, nd.line, nd.ctrl_col, nd.text_col, nd.text, ctrl, nd.eff, nd.end_col)
    edited = Kernel(k.name, k.section_line, nodes, k.blocks, k.label_node, k.unresolved, k.bad_ctrl)
    return {(f.code, f.line) for f in check_kernel(edited, sem)} <= base


# ---------------------------------------------------------------- chains and the search's neighbour


def random_moves(
    text: str,
    n: int,
    rng: random.Random,
    *,
    arch: str | None = None,
    original: str | None = None,
    kinds: Sequence[str] = KINDS,
) -> tuple[str, list[ControlMove]]:
    done: list[ControlMove] = []
    for _ in range(n):
        move = pick_move(control_moves(text, arch, original=original, kinds=kinds), rng)
        if move is None:
            break
        text = apply(text, move)
        done.append(move)
    return text, done


def neighbour(
    original: str, arch: str | None = None, *, kinds: Sequence[str] = KINDS, source: str = "control"
) -> Callable[[str, random.Random], object]:
    """``propose(text, rng)`` for :func:`sass_lsp.schedule.search.annealing` over control moves: one move
    away from ``text`` (the original or a text ``propose`` returned), stalls up to the original's. A text
    with no move left gives None."""
    from sass_lsp.schedule.search import Candidate

    upper = _stalls_by_line(original)
    moves_of = recent_moves(lambda text: _moves(text, arch, upper, kinds))

    def propose(text: str, rng: random.Random) -> Candidate | None:
        move = pick_move(moves_of(text), rng)
        if move is None:
            return None
        return Candidate(apply(text, move), source, (move.description,))

    return propose


def flag_variants(text: str, arch: str | None = None) -> list[str]:
    """``text`` and texts that hold, between them, every single yield or reuse move of it (one move per line
    in each, so as few texts as the busiest line has moves): assembling them once records those instruction
    words as verified (:mod:`sass_lsp.cuasm.verified`), which spares the control walk an nvdisasm run for
    nearly every candidate. The variants are not schedules to run: their moves are not legal together."""
    by_line: dict[int, list[ControlMove]] = {}
    for m in control_moves(text, arch, kinds=("yield_on", "yield_off", "reuse_clear", "reuse_set")):
        by_line.setdefault(m.line, []).append(m)
    rounds = max(map(len, by_line.values()), default=0)
    variants = [apply_moves(text, [ms[r] for ms in by_line.values() if r < len(ms)]) for r in range(rounds)]
    return [text, *variants]
