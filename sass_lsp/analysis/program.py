"""Kernels as analysable programs: decoded control codes, register effects, basic blocks and the CFG.

Two views of one kernel:

- :class:`Kernel` — the object view (a :class:`Node` per instruction with its :class:`Effects`), for the
  reorder game and the editor features;
- :class:`Program` — the columnar view the hazard checker, the local rules and the timeline run on: per
  instruction its line and columns, its :class:`Ctrl` and its :class:`Facts` (register sets as int bit
  masks, latency-table handles), shared by every instruction with the same text. Facts come from the
  scanner's :class:`~sass_lsp.isa.semantics.Shape` of the text, so a text costs a scan only when no text
  that differs from it in register numbers alone was seen before.

Architecture Invariant: reads a :class:`~sass_lsp.model.Module`, never mutates it, does no IO.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import itertools
import operator
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from sass_lsp._native import mypyc_attr
from sass_lsp.isa.semantics import Effects, Semantics, Shape, hole_widths, unit_kind
from sass_lsp.model import Directive, Instruction, Label, Module

_CTRL = re.compile(r"^\s*\[?\s*B([0-9-]{6}):R([0-9-]):W([0-9-]):([Y-]):S(\d+)\s*\]?\s*$")


@dataclass(frozen=True)
class Ctrl:
    wait_mask: int
    read_sb: int | None
    write_sb: int | None
    yield_flag: bool  # True when printed 'Y'
    stall: int
    errors: tuple[tuple[int, str], ...] = ()  # (0-based column in the ctrl text, message)


@functools.lru_cache(maxsize=4096)
def decode_ctrl(text: str) -> Ctrl | None:
    """Lenient decode: out-of-range values are kept and reported in ``errors`` (rule SASS012)."""
    m = _CTRL.match(text)
    if not m:
        return None
    wait_s, rd, wr, yld, stall_s = m.groups()
    errors: list[tuple[int, str]] = []
    mask = 0
    for i, ch in enumerate(wait_s):
        if ch == "-":
            continue
        if int(ch) > 5:
            errors.append((text.index("B") + 1 + i, f"wait-mask scoreboard index {ch} > 5"))
        mask |= 1 << min(int(ch), 5)

    def sb(ch: str, letter: str) -> int | None:
        if ch == "-":
            return None
        if int(ch) > 5:
            errors.append(
                (text.index(letter + ch), f"{letter} scoreboard index {ch} > 5 (6 scoreboards: 0-5)")
            )
            return None
        return int(ch)

    rsb = sb(rd, "R")
    wsb = sb(wr, "W")
    stall = int(stall_s)
    if stall > 15:
        errors.append(
            (
                text.index("S" + stall_s),
                f"stall {stall} > 15 (4-bit field; CuAssembler would overflow into the yield bit)",
            )
        )
    return Ctrl(mask, rsb, wsb, yld == "Y", stall, tuple(errors))


def encode_ctrl(c: Ctrl) -> str:
    """The inverse of :func:`decode_ctrl`: ``B------:R-:W2:Y:S04`` (the text inside the brackets)."""
    wait = "".join(str(i) if c.wait_mask >> i & 1 else "-" for i in range(6))
    rsb = "-" if c.read_sb is None else c.read_sb
    wsb = "-" if c.write_sb is None else c.write_sb
    return f"B{wait}:R{rsb}:W{wsb}:{'Y' if c.yield_flag else '-'}:S{c.stall:02d}"


@dataclass  # not frozen, never changed once built (see semantics.Operand)
class Node:
    """One instruction of a kernel."""

    idx: int
    line: int
    ctrl_col: int  # 1-based
    text_col: int  # 1-based
    text: str
    ctrl: Ctrl
    eff: Effects
    end_col: int


@dataclass(slots=True)
class Block:
    idx: int
    start: int  # first node index
    end: int  # one past the last node index
    succs: list[int] = field(default_factory=list)
    preds: list[int] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)


@mypyc_attr(native_class=False)  # a plain class when compiled: schedule.deps holds weak references to it
@dataclass
class Kernel:
    name: str
    section_line: int
    nodes: list[Node]
    blocks: list[Block]
    label_node: dict[str, int]  # label -> node index it precedes
    unresolved: list[tuple[int, str]] = field(default_factory=list)  # (node idx, why) for CFG gaps
    bad_ctrl: list[Instruction] = field(default_factory=list)
    # labels that the module's metadata names (``.word .L_x_7@srel`` in ``.nv.info``): see metadata_labels
    metadata_labels: frozenset[str] = frozenset()


# ---------------------------------------------------------------- facts

# ShapeFacts.fb bits
F_NEVER = 1  # @!PT: never executes
F_VAR = 2  # variable latency
F_DEPBAR = 4  # DEPBAR with a scoreboard operand
F_GMMA_WAIT = 8
F_SHARED = 16  # shared-memory access
F_GMMA = 32
F_BAR_SYNC = 64
F_CALL = 128
F_FLOW = 256  # ends a basic block: branch, exit, ret, indirect branch
F_GSB0 = 512  # HGMMA that commits its group (gsb0)
F_REUSE = 1024  # some source has .reuse
# Control-code bits, in the first field of a node's control tuple (see _Ctx.ctrl_tuple), disjoint from F_*
C_WAIT = 1 << 16  # waits on a scoreboard
C_SETS = 1 << 17  # sets a read or write scoreboard
C_SYN = 1 << 18  # a field rule may apply: field errors, S00, a long stall without Y
C_YIELD = 1 << 19

R_MASK = (1 << 256) - 1  # GPR units


_SPAN_MASKS: dict[tuple[int, int], list[int]] = {}
_UNITS = 512  # units are below this (see semantics.UNIT_BASE)


def _span_masks(width: int, base: int) -> list[int]:
    """The mask of units ``base + n .. base + n + width - 1``, indexed by the register number ``n``."""
    hit = _SPAN_MASKS.get((width, base))
    if hit is None:
        w = (1 << width) - 1
        hit = _SPAN_MASKS[(width, base)] = [w << first for first in range(base, _UNITS)]
    return hit


def _kind_of(okind: str, u: int) -> str:
    """Operand kind for the latency lookup (as the checker names it)."""
    if okind == "guard":
        return "guard"
    if okind == "addr" and u < 256:
        return "addr"
    if okind == "hi":
        return "reg_hi"
    return unit_kind(u)


class _LatTable(dict):
    """Producer pipe -> fixed RAW latency in cycles (0: no row) for one (consumer pipe, operand kind)."""

    def __init__(self, sem: Semantics, consumer: str, kind: str) -> None:
        super().__init__()
        self.sem, self.consumer, self.kind = sem, consumer, kind

    def __missing__(self, producer: str) -> int:
        row = self.sem.latency(producer, self.consumer, self.kind)
        need = self[producer] = 0 if row is None else row.cycles
        return need


class ShapeFacts:
    """What the checker needs from a :class:`Shape`, with the register numbers still open.

    A unit is ``(slot, add)``: ``nx[slot] + add`` where ``nx`` is the text's register numbers with a 0
    appended (slot ``nslots`` holds units that do not depend on a number)."""

    __slots__ = (
        "shape",
        "opcode",
        "modifiers",
        "pipe",
        "variable",
        "queue",
        "flags",
        "fb",
        "guard_neg",
        "guard",
        "targets",
        "indirect",
        "sb_set",
        "le",
        "dynamic",
        "depbar_keep",
        "gmma_keep",
        "nslots",
        "use_occ",
        "dst_occ",
        "dst_sa",
        "dst_pipe",
        "use_const",
        "use_var",
        "use_bases",
        "def_const",
        "def_var",
        "def_bases",
        "reuse",
    )

    def __init__(self, shape: Shape, ctx: _Ctx) -> None:
        opcode, mods, guard_neg, never, pipe, var, queue, flags, indirect, sb_set = shape.head
        self.shape = shape
        self.opcode, self.modifiers, self.pipe, self.variable, self.queue = opcode, mods, pipe, var, queue
        self.flags, self.guard_neg, self.indirect, self.sb_set = flags, guard_neg, indirect, sb_set
        self.targets = shape.targets  # None: per text (Facts.extras)
        imm = shape.imm
        n = self.nslots = shape.nslots
        use_occ = []
        reuse = []
        for segs, role, _slot, is_reuse, tcol, nb, hi in shape.srcs:
            units = _occ(segs, n)
            for j, (slot, add) in enumerate(units):
                kind = _kind_of("hi" if hi and j >= hi else role, add)
                use_occ.append((slot, add, kind, ctx.lat_table(pipe, kind)))
            if is_reuse and units:
                reuse.append((*units[0], tcol, nb))
        self.use_occ = tuple(use_occ)  # (slot, add, operand kind, latency table) per source unit
        self.reuse = tuple(reuse)
        dst_occ = []
        dst_sa = []
        pipes = set()
        for segs, _tcol, _nb, hi in shape.dsts:
            for j, (slot, add) in enumerate(_occ(segs, n)):
                p = pipe + "_hi" if hi and j >= hi else pipe
                dst_occ.append((slot, add, p))
                dst_sa.append((slot, add))
                pipes.add(p)
        self.dst_occ = tuple(dst_occ)  # (slot, add, producer pipe) per destination unit
        self.dst_sa = tuple(dst_sa)
        self.dst_pipe = pipes.pop() if len(pipes) == 1 else None  # one pipe for every destination unit
        self.use_const, self.use_var, self.use_bases = _seg_masks([src[0] for src in shape.srcs])
        self.def_const, self.def_var, self.def_bases = _seg_masks([dst[0] for dst in shape.dsts])
        fb = (F_NEVER if never else 0) | (F_VAR if var else 0)
        if any(src[3] for src in shape.srcs):
            fb |= F_REUSE
        if "depbar" in flags and sb_set:
            fb |= F_DEPBAR
        for name in flags & _FLAG_BITS.keys():
            fb |= _FLAG_BITS[name]
        if flags & _FLOW_FLAGS:
            fb |= F_FLOW
        if "gsb0" in shape.template:
            fb |= F_GSB0
        self.fb = fb
        self.le = "LE" in mods
        # Only DEPBAR's and WARPGROUP.DEPBAR's counts and the branch targets matter to the checker.
        self.dynamic = (imm is None and bool(fb & (F_DEPBAR | F_GMMA_WAIT))) or (
            self.targets is None and bool(fb & F_FLOW)
        )
        self.depbar_keep = self.gmma_keep = 0
        if imm is not None:
            self.depbar_keep, self.gmma_keep = _keeps(imm, self.le)
        gslot, gbase = shape.guard
        self.guard = (n, gbase) if gslot < 0 else (gslot, gbase)  # gbase None: no guard


_FLAG_BITS = {
    "gmma_wait": F_GMMA_WAIT,
    "shared": F_SHARED,
    "gmma": F_GMMA,
    "bar_sync": F_BAR_SYNC,
    "call": F_CALL,
}
_FLOW_FLAGS = frozenset({"branch", "exit", "ret", "indirect"})


def _occ(segs: tuple, n: int) -> list[tuple[int, int]]:
    """The ``(slot, add)`` units of an operand's segments (``n``: the slot of units that depend on no
    number)."""
    out = []
    for slot, base, w in segs:
        if slot < 0:
            for u in base:
                out.append((n, u))
        else:
            for j in range(w):
                out.append((slot, base + j))
    return out


def _seg_masks(ops: list[tuple]) -> tuple[int, tuple[tuple[int, list[int]], ...], frozenset[int]]:
    """(mask of the fixed units, ((slot, span masks by register number), ...), the bases of those segments)
    over the operands."""
    const = 0
    var = []
    bases = set()
    for segs in ops:
        for slot, base, w in segs:
            if slot < 0:
                for u in base:
                    const |= 1 << u
            else:
                var.append((slot, _span_masks(w, base)))
                bases.add(base)
    return const, tuple(var), frozenset(bases)


def _keeps(imm: tuple[int, ...], le: bool) -> tuple[int, int]:
    """(pending events a ``DEPBAR.LE`` keeps, HGMMA groups a ``WARPGROUP.DEPBAR`` keeps)."""
    return (imm[0] if imm and le else 0), (imm[0] if imm else 0)


class Facts:
    """One instruction text as the checker sees it (shared by every node with that text).

    ``s``: its :class:`ShapeFacts`; ``nx``: its register numbers and a 0 (units are ``nx[slot] + add``);
    ``use_mask``/``def_mask``: the units it reads/writes as int bit masks; ``guard``: the guard unit;
    ``x``: None, or for a shape whose counts or targets are holes this text's
    ``(depbar keep, gmma keep, targets)``. ``fb``, ``flow``, ``uo``, ``ds``, ``dp`` copy the shape's
    flags, ``F_FLOW`` bit, ``use_occ``, ``dst_sa`` and ``dst_pipe`` (one lookup fewer per node).
    """

    __slots__ = (
        "s",
        "fb",
        "flow",
        "nx",
        "uo",
        "ds",
        "dp",
        "guard",
        "use_mask",
        "def_mask",
        "x",
    )
    # Declared for the type checker (and mypyc, which compiles hazards.py against them).
    s: ShapeFacts
    fb: int
    flow: int
    nx: tuple[int, ...]
    uo: tuple[tuple[int, int, str, Mapping[str, int]], ...]  # a _LatTable: its __missing__ fills it
    ds: tuple[tuple[int, int], ...]
    dp: str | None
    guard: int | None
    use_mask: int
    def_mask: int
    x: tuple | None

    @property
    def reuse(self) -> tuple[tuple[int, int, int], ...]:
        """``(register, tcol, nb)`` per .reuse source (see :func:`reuse_col`); only the local rules ask."""
        nx = self.nx
        out = []  # a loop: one or two sources, and a comprehension is a call
        for s, a, tcol, nb in self.s.reuse:
            out.append((nx[s] + a, tcol, nb))
        return tuple(out)

    @property
    def targets(self) -> tuple[str, ...]:
        return self.s.targets if self.x is None else self.x[2]  # type: ignore

    @property
    def depbar_keep(self) -> int:
        return self.s.depbar_keep if self.x is None else self.x[0]

    @property
    def gmma_keep(self) -> int:
        return self.s.gmma_keep if self.x is None else self.x[1]


def facts_of_text(text: str, sf: ShapeFacts, nums: list[int]) -> Facts:
    """The facts of one text of shape ``sf`` with register numbers ``nums`` (within the slots' caps)."""
    return facts_of_texts(sf, [text], [[n] for n in nums])[0]


def facts_of_texts(sf: ShapeFacts, texts: list[str], cols: list[list[int]]) -> list[Facts]:
    """The facts of texts of one shape, their register numbers by slot in ``cols`` (each within the slot's
    cap). The numbers and masks are made column by column in C-level passes, so the per-text Python is the
    loop that fills the objects (a first check builds the facts of ~10k texts)."""
    n = len(texts)
    nxs = list(zip(*cols, itertools.repeat(0, n), strict=True))  # slot nslots: units that depend on no number
    ums = _mask_column(sf.use_const, sf.use_var, cols, n)
    dms = _mask_column(sf.def_const, sf.def_var, cols, n)
    gs, gb = sf.guard
    if gb is None or gs == sf.nslots:
        guards: Iterable[int | None] = itertools.repeat(gb, n)
    else:
        guards = map(operator.add, cols[gs], itertools.repeat(gb))
    xs: Iterable[tuple | None] = itertools.repeat(None, n)
    if sf.dynamic:
        xs = []
        for text in texts:
            imm, targets = sf.shape.extras(text)
            xs.append((*_keeps(imm, sf.le), targets))
    out = []
    fb, uo, ds, dp = sf.fb, sf.use_occ, sf.dst_sa, sf.dst_pipe
    flow = fb & F_FLOW
    for nx, um, dm, guard, x in zip(nxs, ums, dms, guards, xs, strict=True):
        f = Facts()  # one store per field: a tuple assignment would build and unpack a tuple per text
        f.s = sf
        f.fb = fb
        f.flow = flow
        f.nx = nx
        f.uo = uo
        f.ds = ds
        f.dp = dp
        f.guard = guard
        f.use_mask = um
        f.def_mask = dm
        f.x = x
        out.append(f)
    return out


def _mask_column(const: int, var: tuple, cols: list[list[int]], n: int) -> Iterable[int]:
    """Per text, the mask ``const | spans[number]`` over the ``(slot, spans)`` of ``var`` (see
    :func:`_seg_masks`)."""
    column = None
    for slot, spans in var:
        masks = map(spans.__getitem__, cols[slot])
        column = masks if column is None else map(operator.or_, column, masks)
    if column is None:
        return itertools.repeat(const, n)
    return map(operator.or_, column, itertools.repeat(const)) if const else column


def reuse_col(text: str, tcol: int, nb: int) -> int:
    """The 0-based column in ``text`` of a .reuse source (``Facts.reuse``)."""
    return tcol + sum(hole_widths(text)[:nb]) if nb else tcol


class _Ctx:
    """Per-:class:`Semantics` caches: facts per text, latency tables, checker constants."""

    def __init__(self, sem: Semantics) -> None:
        self.sem = sem
        self.facts: dict[str, Facts] = {}
        self.lat: dict[tuple[str, str], _LatTable] = {}
        maxlat: dict[str, int] = {}
        for (prod, _c, _o), row in sem._lat.items():
            maxlat[prod] = max(maxlat.get(prod, 0), row.cycles)
        self.bar_gap = sem.param("bar_sync_to_shared") or 0
        maxlat["__bar__"] = self.bar_gap
        self.maxlat = maxlat
        self.max_noyield = sem.param("max_stall_without_yield")
        self.s00 = frozenset(sem.data.get("params", {}).get("s00_opcodes", {}).get("value", ()))
        self.followers = frozenset(
            sem.data.get("params", {}).get("placeholder_followers", {}).get("value", ())
        )
        self.guarded = frozenset(sem.data.get("params", {}).get("placeholder_guarded", {}).get("value", ()))
        # control text -> (Ctrl, ctrl_tuple), or _BAD when it does not decode (so: object, for mypyc)
        self.ctrl_text: dict[str, object] = {}
        self.bad_ctrl_seen = False  # some control text did not decode (ctrl_text may hold _BAD)
        self.ctrl_of: dict[int, tuple[tuple, Ctrl]] = {}  # id(Ctrl) -> (ctrl_tuple, the Ctrl)

    def ctrl_tuple(self, c: Ctrl) -> tuple[int, int | None, int | None, int, int, bool]:
        """(C_* flags, read sb, write sb, stall, wait mask, C_SYN or C_YIELD set): what the checker reads
        of a control code; one shared tuple per Ctrl object."""
        entry = self.ctrl_of.get(id(c))  # by identity: hashing a Ctrl hashes its fields
        if entry is not None and entry[1] is c:  # the entry holds c, so its id is not reused meanwhile
            return entry[0]
        flags = (C_WAIT if c.wait_mask else 0) | (C_YIELD if c.yield_flag else 0)
        if c.read_sb is not None or c.write_sb is not None:
            flags |= C_SETS
        mny = self.max_noyield
        if c.errors or c.stall == 0 or (mny is not None and not c.yield_flag and c.stall > mny):
            flags |= C_SYN
        if len(self.ctrl_of) > 4096:
            self.ctrl_of.clear()
        syn = bool(flags & (C_SYN | C_YIELD))
        hit = (flags, c.read_sb, c.write_sb, c.stall, c.wait_mask, syn)
        self.ctrl_of[id(c)] = (hit, c)
        return hit

    def lat_table(self, consumer: str, kind: str) -> _LatTable:
        t = self.lat.get((consumer, kind))
        if t is None:
            t = self.lat[(consumer, kind)] = _LatTable(self.sem, consumer, kind)
        return t

    def facts_of(self, texts: list[str]) -> list[Facts]:
        """Facts per text; texts not seen before are scanned together (see ``Semantics.template_groups``)."""
        cache = self.facts
        if cache:
            try:
                return list(map(cache.__getitem__, texts))
            except KeyError:
                new = [t for t in dict.fromkeys(texts) if t not in cache]
        else:
            new = list(dict.fromkeys(texts))
        if len(cache) + len(new) > 1 << 18:
            cache.clear()
            new = list(dict.fromkeys(texts))
        self._add_facts(new)
        return list(map(cache.__getitem__, texts))

    def shape_facts(self, shape: Shape) -> ShapeFacts:
        sf = shape.memo
        if isinstance(sf, ShapeFacts):
            return sf
        sf = shape.memo = ShapeFacts(shape, self)
        return sf

    def _add_facts(self, texts: list[str]) -> None:
        """Facts of new texts, group by group of one template (see ``Semantics.template_groups``): a group
        whose template has a shape and whose numbers are within its caps is built at once
        (:func:`facts_of_texts`), any other text on its own as ``Semantics.shapes_of`` would."""
        sem = self.sem
        cache = self.facts
        groups = sem.template_groups(texts)
        if groups is None:
            shapes, numss = sem.shapes_of(texts)
            for text, one, nums in zip(texts, shapes, numss, strict=True):
                cache[text] = facts_of_text(text, self.shape_facts(one), nums)
            return
        get = sem.template_shapes.get
        for template, group, cols in groups:
            shape = get(template)
            if shape is None:
                shape, _pos = sem.shape_for(group[0], template, 0)
            if shape.template == template and all(max(cols[k]) <= cap for k, cap in shape.all_caps):
                cache.update(zip(group, facts_of_texts(self.shape_facts(shape), group, cols), strict=True))
                continue
            for k, text in enumerate(group):  # no shape for the template, or some text beyond a cap
                shape, _pos = sem.shape_for(text, template, 0)
                nums = [col[k] for col in cols] if shape.nslots else []
                if any(x > cap for x, cap in zip(nums, shape.caps, strict=True)):
                    shape, nums = sem.own_shape(text), []
                cache[text] = facts_of_text(text, self.shape_facts(shape), nums)


def context(sem: Semantics) -> _Ctx:
    ctx = sem.memo.get("analysis")
    if ctx is None:
        ctx = sem.memo["analysis"] = _Ctx(sem)
    return ctx  # type: ignore[return-value]


# Young objects left by a call beyond which they are promoted rather than collected (see gc_paused).
_PROMOTE = 10_000
# What the permanent generation holds before anyone froze anything: nothing up to Python 3.11, the
# interpreter's own objects from 3.12 (375 on 3.12.1), so "a caller froze objects" is "more than this".
_FROZEN_AT_START = gc.get_freeze_count()


@contextlib.contextmanager
def gc_paused(promote_over: int = _PROMOTE) -> Iterator[None]:
    """Pause the cyclic garbage collector for one analysis call. A check of a 20k-instruction kernel
    creates tens of thousands of objects that outlive it (per-text facts), which makes CPython run dozens
    of young-generation collections and a full one over the whole heap in the middle of it (~27 ms
    there). The analysis leaves no cyclic garbage (its only cycles are in the per-table caches, which live
    as long as the table). When the call left many young objects (a first check of a large kernel: ~37k),
    they are moved to the oldest generation (``freeze`` then ``unfreeze``, O(1)) instead of being walked
    by the young and gen1 collections that the next allocation would start (~8 ms); the caller's own young
    objects go with them, so this is kept to those large calls: a loop of small checks collects as usual.
    A caller that froze objects itself (the language server) keeps them frozen and collects as usual.
    ``promote_over=0`` always promotes: for a request in a long-lived process (``policy.suggest``)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if gc.get_count()[0] > promote_over and gc.get_freeze_count() <= _FROZEN_AT_START:
            gc.freeze()
            gc.unfreeze()
        gc.enable()


# ---------------------------------------------------------------- columnar program


class Program:
    """One kernel in columns (index = node index); what the checker, the rules and the timeline read.

    ``lines``, ``ctrl_cols``, ``text_cols`` and ``end_cols`` are read off ``src`` (the instructions or
    nodes) on first use: a check that finds nothing never needs them.
    """

    def __init__(
        self,
        name: str,
        section_line: int,
        src: list,
        texts: list[str],
        ctrls: list[Ctrl] | None,
        cts: list[tuple[int, int | None, int | None, int, int, bool]],
        facts: list[Facts],
        label_node: dict[str, int],
        bad_ctrl: list[Instruction],
        ctx: _Ctx,
        end_cols: list[int] | None = None,
    ) -> None:
        self.name = name
        self.section_line = section_line
        self.src = src  # objects with .line, .ctrl_col, .text_col (Instruction or Node)
        self.texts = texts
        self._ctrls = ctrls
        self._ctrl_pairs: list[tuple[Ctrl, tuple]] = []  # (Ctrl, cts[i]) per node when ctrls is None
        self.cts = cts  # _Ctx.ctrl_tuple per node
        self.facts = facts
        self.label_node = label_node
        self.bad_ctrl = bad_ctrl
        self.ctx = ctx
        self.blocks: list[Block] = []
        self.unresolved: list[tuple[int, str]] = []  # (node idx, why) for CFG gaps
        self.syn = list(itertools.compress(range(len(cts)), map(_SYN, cts)))  # C_SYN or C_YIELD nodes
        self._lines: list[int] | None = None
        self._ccols: list[int] | None = None
        self._tcols: list[int] | None = None
        self._ends = end_cols
        self._shapes: list[ShapeFacts] | None = None
        self._shape_set: set[ShapeFacts] | None = None

    @property
    def ctrls(self) -> list[Ctrl]:
        if self._ctrls is None:
            self._ctrls = [c for c, _ct in self._ctrl_pairs]
        return self._ctrls

    def ctrl_at(self, i: int) -> Ctrl:
        """``ctrls[i]`` without building the list (the syntax rules read a few thousand of 20k)."""
        return self._ctrl_pairs[i][0] if self._ctrls is None else self._ctrls[i]

    @property
    def lines(self) -> list[int]:
        if self._lines is None:
            self._lines = list(map(_LINE, self.src))
        return self._lines

    @property
    def ctrl_cols(self) -> list[int]:
        if self._ccols is None:
            self._ccols = list(map(_CTRL_COL, self.src))
        return self._ccols

    @property
    def text_cols(self) -> list[int]:
        if self._tcols is None:
            self._tcols = list(map(_TEXT_COL, self.src))
        return self._tcols

    @property
    def shapes(self) -> list[ShapeFacts]:
        """Each node's :class:`ShapeFacts` (``facts[i].s``)."""
        if self._shapes is None:
            self._shapes = [f.s for f in self.facts]
        return self._shapes

    @property
    def shape_set(self) -> set[ShapeFacts]:
        """The distinct shapes of the kernel: what a rule that looks at a few opcodes filters on first."""
        if self._shape_set is None:
            self._shape_set = set(self.shapes)
        return self._shape_set

    @property
    def end_cols(self) -> list[int]:
        """1-based column after the instruction text."""
        if self._ends is None:
            self._ends = [c + len(t.rstrip()) for c, t in zip(self.text_cols, self.texts, strict=True)]
        return self._ends


def program_of_items(name: str, line: int, items: list, sem: Semantics) -> Program:
    # Column by column, in C-level passes where there is one (this runs per check on every instruction).
    ctx = context(sem)
    is_ins = list(map(isinstance, items, itertools.repeat(Instruction)))
    instrs: list[Instruction] = list(itertools.compress(items, is_ins))
    label_node: dict[str, int] = {}
    if len(instrs) < len(items):  # labels: the index of the instruction they precede
        others = itertools.compress(range(len(items)), map(operator.not_, is_ins))
        for k, j in enumerate(others):  # item j is the k-th item that is not an instruction
            if isinstance(items[j], Label):
                label_node[items[j].name] = j - k
    cache = ctx.ctrl_text
    try:
        hits = [cache[ins.ctrl] for ins in instrs]
    except KeyError:
        if len(cache) > 4096:
            cache.clear()
        for c in {ins.ctrl for ins in instrs}:
            if c not in cache:
                ctrl = decode_ctrl(c)
                if ctrl is None:
                    ctx.bad_ctrl_seen = True
                cache[c] = _BAD if ctrl is None else (ctrl, ctx.ctrl_tuple(ctrl))
        hits = [cache[ins.ctrl] for ins in instrs]
    bad: list[Instruction] = []
    if ctx.bad_ctrl_seen and _BAD in hits:  # undecodable control fields: those instructions are not nodes
        bad = [it for it, h in zip(instrs, hits, strict=True) if h is _BAD]
        label_node = {}
        n = 0
        for item in items:
            if isinstance(item, Instruction):
                n += cache[item.ctrl] is not _BAD
            elif isinstance(item, Label):
                label_node[item.name] = n
        instrs = [it for it, h in zip(instrs, hits, strict=True) if h is not _BAD]
        hits = [h for h in hits if h is not _BAD]
    texts = [ins.text for ins in instrs]
    facts = ctx.facts_of(texts)
    p = Program(name, line, instrs, texts, None, list(map(_CT, hits)), facts, label_node, bad, ctx)  # type: ignore
    p._ctrl_pairs = hits  # type: ignore  # Program.ctrls from these when asked
    _build_cfg(p)
    return p


_BAD = object()  # cached for an undecodable control field (not a tuple: `in` compares by identity)
_SYN = operator.itemgetter(5)
_CT = operator.itemgetter(1)  # of a (Ctrl, control tuple) pair
_TEXT_COL = operator.attrgetter("text_col")
_CTRL_COL = operator.attrgetter("ctrl_col")
_LINE = operator.attrgetter("line")


def program_of_kernel(k: Kernel, sem: Semantics) -> Program:
    """The columnar view of a kernel built elsewhere (e.g. reordered by the game); its facts are those of
    each node's text (``Node.eff`` is ``sem.effects(text)``)."""
    nodes = k.nodes
    ctx = context(sem)
    texts = [nd.text for nd in nodes]
    ctrls = [nd.ctrl for nd in nodes]
    p = Program(
        k.name,
        k.section_line,
        nodes,
        texts,
        ctrls,
        [ctx.ctrl_tuple(c) for c in ctrls],
        ctx.facts_of(texts),
        k.label_node,
        k.bad_ctrl,
        ctx,
        [nd.end_col for nd in nodes],
    )
    p.blocks = k.blocks
    p.unresolved = k.unresolved
    return p


def programs_of(module: Module, sem: Semantics) -> list[Program]:
    return [
        program_of_items(sec.name[len(".text.") :], sec.line, sec.items, sem)
        for sec in module.sections
        if sec.name.startswith(".text.")
    ]


# ---------------------------------------------------------------- object view


_LABEL_REF = re.compile(r"\.L\w*")


def metadata_labels(module: Module) -> frozenset[str]:
    """The labels that a section other than code names (``.word .L_x_7@srel`` in ``.nv.info``): the ELF's
    metadata records those instructions by address (EXIT and cooperative-group SHFL offsets, ...), so each
    must stay where its label is, whether or not a branch names the label too."""
    out: set[str] = set()
    for sec in module.sections:
        if sec.name.startswith(".text."):
            continue
        for item in sec.items:
            if isinstance(item, Directive):
                out.update(_LABEL_REF.findall(item.args))
    return frozenset(out)


def kernels_of(module: Module, sem: Semantics) -> list[Kernel]:
    labels = metadata_labels(module)
    return [kernel_of_program(p, sem, labels) for p in programs_of(module, sem)]


def build_kernel(
    name: str, line: int, items: list, sem: Semantics, labels: frozenset[str] = frozenset()
) -> Kernel:
    """The kernel of one code section's items; ``labels``: the module's :func:`metadata_labels`."""
    return kernel_of_program(program_of_items(name, line, items, sem), sem, labels)


def kernel_of_program(p: Program, sem: Semantics, labels: frozenset[str] = frozenset()) -> Kernel:
    nodes = [
        Node(i, ln, cc, tc, text, ctrl, eff, end)
        for i, (ln, cc, tc, text, ctrl, eff, end) in enumerate(
            zip(
                p.lines,
                p.ctrl_cols,
                p.text_cols,
                p.texts,
                p.ctrls,
                sem.effects_of(p.texts),
                p.end_cols,
                strict=True,
            )
        )
    ]
    return Kernel(p.name, p.section_line, nodes, p.blocks, p.label_node, p.unresolved, p.bad_ctrl, labels)


# ---------------------------------------------------------------- CFG


def _build_cfg(p: Program) -> None:
    facts = p.facts
    n = len(facts)
    label_node = p.label_node
    leaders = {i for i, f in enumerate(facts, 1) if f.flow}  # the node after a branch
    leaders.update(label_node.values())
    if n:
        leaders.add(0)
    starts = sorted(i for i in leaders if i < n)  # not the end
    labels_at: dict[int, list[str]] = {}
    for lab, i in label_node.items():
        labels_at.setdefault(i, []).append(lab)
    block_at = dict(zip(starts, itertools.count()))  # every branch target and block end is a leader
    ends = [*starts[1:], n] if starts else []  # no instructions (a stretch between two labels): no blocks
    blocks = p.blocks
    get_labels = labels_at.get
    for bi, (start, end) in enumerate(zip(starts, ends, strict=True)):
        b = Block(bi, start, end, [], [], get_labels(start, []))
        blocks.append(b)
        f = facts[end - 1]
        if not f.flow:  # falls through (whatever its guard)
            if end < n:
                b.succs.append(bi + 1)
            continue
        b.succs = _flow_succs(p, end - 1, f, block_at)
    for b in blocks:
        for s in b.succs:
            blocks[s].preds.append(b.idx)


def _flow_succs(p: Program, last: int, f: Facts, block_at: dict[int, int]) -> list[int]:
    """The successor blocks of a block that ends with a branch, exit, return or indirect branch."""
    n = len(p.facts)
    label_node = p.label_node
    s = f.s
    never = bool(f.fb & F_NEVER)
    conditional = f.guard is not None or (s.guard_neg and not never)
    succ: list[int] = []
    falls = True
    flags = s.flags
    if never:
        pass
    elif "exit" in flags or "ret" in flags:
        falls = conditional
    elif "indirect" in flags:
        falls = conditional
        if not s.indirect:
            p.unresolved.append((last, "indirect branch without BRANCH_TARGETS annotation"))
        for t in s.indirect:
            if t in label_node and label_node[t] < n:
                succ.append(block_at[label_node[t]])
    elif "branch" in flags:
        div = {"DIV", "CONV", "ANY"} & set(s.modifiers)
        falls = conditional or bool(div)
        for t in f.targets:
            if t in label_node and label_node[t] < n:
                succ.append(block_at[label_node[t]])
            else:
                p.unresolved.append((last, f"branch target {t} not found"))
    if falls and last + 1 < n:
        succ.append(block_at[last + 1])
    return list(dict.fromkeys(succ))
