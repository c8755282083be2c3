"""Feature: hazard checker. Scoreboard + fixed-latency dataflow over a kernel's CFG, and the rules.

State at a program point (worst case over paths; joins take the union / the smallest distance):
- ``events``: pending variable-latency operations in issue order. Each is on a scoreboard (0-5) or on
  none (``sb == -1``: ptxas relies on a later producer of the same in-order queue, notes §3.2
  "In-order sharing"). A wait completes every event on the waited scoreboard and, by in-order
  completion, every *older* event of the same queue. ``DEPBAR.LE SBn, k`` completes all but the
  youngest k events on SBn.
- ``fixed``: for each register unit, the last fixed-latency producer and its issue cycle.
- ``gmma``: committed HGMMA groups (tracked by ``gsb0``) and the open group's registers.
- ``bar``: issue cycle of the last ``BAR.SYNC``.
Distances are sums of stall fields; scoreboard waits are assumed to add no cycles (worst case).

The dataflow runs on the kernel's :class:`~sass_lsp.analysis.program.Program` with register sets as int
bit masks and events as tuples; :class:`State` / :class:`Event` (frozensets) are what ``Checker.entry``
hands out. A block is re-run only when its entry state changed, and the findings of its last run are
the findings (that run saw the fixed point's entry state), so there is no separate reporting pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from sass_lsp.analysis.findings import RULES, Finding, Fix, RaiseStall, Related, SetWait
from sass_lsp.analysis.program import (
    C_SETS,
    C_SYN,
    C_WAIT,
    F_BAR_SYNC,
    F_DEPBAR,
    F_GMMA,
    F_GMMA_WAIT,
    F_GSB0,
    F_NEVER,
    F_REUSE,
    F_SHARED,
    F_VAR,
    R_MASK,
    Kernel,
    Node,
    Program,
    kernel_of_program,
    program_of_kernel,
)
from sass_lsp.isa.semantics import Semantics, unit_name


@dataclass(frozen=True, slots=True)
class Event:
    idx: int  # producer node
    sb: int  # scoreboard, -1 = none
    kind: str  # 'W' result pending, 'R' sources not yet read
    queue: str
    units: frozenset[int]
    guard: int | None
    guard_neg: bool


@dataclass(slots=True)
class State:
    events: tuple[Event, ...] = ()
    fixed: dict[int, tuple[int, int, str]] | None = None  # unit -> (producer idx, issue cycle, pipe)
    groups: tuple[tuple[int, frozenset[int]], ...] = ()
    open_group: tuple[int, frozenset[int]] | None = None
    bar: tuple[int, int] | None = None  # (BAR node idx, issue cycle)
    cycle: int = 0
    wunits: frozenset[int] = frozenset()  # units of pending W events (fast pre-check)
    aunits: frozenset[int] = frozenset()  # units of all pending events

    def copy(self) -> State:
        st = State(self.events, dict(self.fixed or {}), self.groups, self.open_group, self.bar, self.cycle)
        st.wunits, st.aunits = self.wunits, self.aunits
        return st

    def set_events(self, events: tuple[Event, ...]) -> None:
        self.events = events
        self.wunits = frozenset().union(*(e.units for e in events if e.kind == "W"))
        self.aunits = frozenset().union(*(e.units for e in events))


_MEM_QUEUES = frozenset({"lsu", "mio"})
_BEFORE: Final = C_WAIT | F_DEPBAR | F_GMMA_WAIT | F_NEVER | F_SHARED  # handled before the reads
_OWN: Final = F_VAR | C_SETS  # adds events
_AFTER: Final = _OWN | F_GMMA | F_BAR_SYNC  # own effects other than a fixed-latency result

# An event inside the checker: (idx, sb, kind, queue, units mask, guard, guard_neg), Event's fields, and
# its scoreboard bit (0 for none).
_IDX: Final = 0
_SB: Final = 1
_KIND: Final = 2
_QUEUE: Final = 3
_UNITS: Final = 4
_GUARD: Final = 5
_NEG: Final = 6
_BIT: Final = 7
Ev = tuple[int, int, str, str, int, int | None, bool, int]


class _St:
    """The checker's state: :class:`State` with int masks (``wm``/``am``: units of W / all events)."""

    __slots__ = ("events", "fixed", "groups", "og", "bar", "cycle", "wm", "am", "neg", "sbm")
    events: tuple[Ev, ...]
    fixed: dict[int, tuple[int, int, str]]
    groups: tuple[tuple[int, int], ...]
    og: tuple[int, int] | None
    bar: tuple[int, int] | None
    cycle: int
    wm: int
    am: int
    neg: bool
    sbm: int

    def __init__(
        self,
        events: tuple[Ev, ...] = (),
        fixed: dict[int, tuple[int, int, str]] | None = None,
        groups: tuple[tuple[int, int], ...] = (),
        og: tuple[int, int] | None = None,
        bar: tuple[int, int] | None = None,
    ) -> None:
        self.events = events
        self.fixed = {} if fixed is None else fixed
        self.groups = groups
        self.og = og
        self.bar = bar
        self.cycle = 0
        self.wm = self.am = 0
        self.neg = False  # some event has no scoreboard
        self.sbm = 0  # the scoreboards with events

    def copy(self) -> _St:
        st = _St(self.events, dict(self.fixed), self.groups, self.og, self.bar)
        st.cycle, st.wm, st.am, st.neg, st.sbm = self.cycle, self.wm, self.am, self.neg, self.sbm
        return st


def _masks(events: tuple[Ev, ...]) -> tuple[int, int, bool, int]:
    """(units of W events, units of all events, whether one has no scoreboard, their scoreboards)."""
    wm = am = sbm = 0
    neg = False
    for e in events:
        am |= e[_UNITS]
        if e[_KIND] == "W":
            wm |= e[_UNITS]
        if e[_BIT]:
            sbm |= e[_BIT]
        else:
            neg = True
    return wm, am, neg, sbm


def _wait(events: tuple[Ev, ...], wait: int) -> tuple[tuple[Ev, ...], int, int, bool, int] | None:
    """``(events, W units, all units, False, scoreboards)`` after a wait on the scoreboards in mask
    ``wait`` when no event is scoreboard-less (see :func:`_complete`): the waited ones go, and the read
    events of the writes among them. None if nothing completes."""
    # Loops rather than comprehensions on the event tuples (here and in the per-node paths): they hold a
    # few events, and a comprehension is a function call in 3.11.
    w_idx: list[int] = []
    for e in events:
        if e[_BIT] & wait and e[_KIND] == "W":
            w_idx.append(e[_IDX])
    kept: list[Ev] = []
    wm = am = sbm = 0
    for e in events:
        if e[_BIT] & wait:
            continue
        if e[_KIND] == "W":
            wm |= e[_UNITS]
        elif e[_IDX] in w_idx:
            continue
        am |= e[_UNITS]
        sbm |= e[_BIT]
        kept.append(e)
    if len(kept) == len(events):
        return None
    return tuple(kept), wm, am, False, sbm


def _low(mask: int) -> int:
    """The smallest unit in a mask."""
    return (mask & -mask).bit_length() - 1


class _Horizon(dict):
    def __init__(self, value: int) -> None:
        super().__init__()
        self.value = value

    def get(self, key, default=None):  # noqa: ANN001, ANN201
        return self.value


def _merge_ordered(a: tuple, b: tuple) -> tuple:
    if a == b:
        return a
    seen = set(a)
    out = list(a)
    for x in b:
        if x not in seen:
            out.append(x)
            seen.add(x)
    return tuple(out)


def _normalise(st: _St, maxlat: Mapping[str, int]) -> _St:
    """Entry-state form, in place (``st`` is a block run's own state): cycles relative to 0, expired fixed
    producers dropped."""
    t = st.cycle
    if st.fixed:
        get = maxlat.get
        fixed: dict[int, tuple[int, int, str]] = {}
        for u, (p, c, pipe) in st.fixed.items():
            if t - c < get(pipe, 0):
                fixed[u] = (p, c - t, pipe)
        st.fixed = fixed
    bar = st.bar
    if bar is not None:
        st.bar = (bar[0], bar[1] - t) if t - bar[1] < maxlat.get("__bar__", 0) else None
    st.cycle = 0
    return st


def _join(a: _St, b: _St) -> _St:
    fixed = dict(a.fixed)
    for u, v in b.fixed.items():
        old = fixed.get(u)
        if old is None or v[1] > old[1]:  # later issue = less elapsed = worse
            fixed[u] = v
    bar = a.bar
    if b.bar is not None and (bar is None or b.bar[1] > bar[1]):
        bar = b.bar
    og = a.og
    if b.og is not None:
        og = b.og if og is None else (og[0], og[1] | b.og[1])
    out = _St(_merge_ordered(a.events, b.events), fixed, _merge_ordered(a.groups, b.groups), og, bar)
    out.wm, out.am, out.neg, out.sbm = _masks(out.events)
    return out


def _same(a: _St, b: _St) -> bool:
    return (
        a.events == b.events
        and a.fixed == b.fixed
        and a.groups == b.groups
        and a.og == b.og
        and a.bar == b.bar
    )


def _complete(events: tuple[Ev, ...], done: list[int]) -> tuple[Ev, ...]:
    """``events`` without those at positions ``done`` and what their completion implies.

    A finished write implies every older op of its queue finished (reads and writes); a released read
    only implies older reads were done. Only scoreboard-less ops (sb == -1) are completed by a younger op
    of their queue: ptxas relies on that for them; an op with its own scoreboard is complete only when
    that scoreboard is waited on. A finished write also means the same instruction's sources were read.
    """
    last_w: dict[str, int] = {}
    last_r: dict[str, int] = {}
    w_idx: set[int] = set()
    for p in done:
        e = events[p]
        if e[_KIND] == "W":
            w_idx.add(e[_IDX])
            if last_w.get(e[_QUEUE], -1) < p:
                last_w[e[_QUEUE]] = p
        elif last_r.get(e[_QUEUE], -1) < p:
            last_r[e[_QUEUE]] = p
    dset = set(done)
    kept: list[Ev] = []
    for q, e in enumerate(events):
        if q in dset or (w_idx and e[_KIND] == "R" and e[_IDX] in w_idx):
            continue
        if e[_SB] < 0 and (
            q < last_w.get(e[_QUEUE], -1) or (e[_KIND] == "R" and q < last_r.get(e[_QUEUE], -1))
        ):
            continue
        kept.append(e)
    return tuple(kept)


class Checker:
    """Runs the dataflow over one kernel; ``findings`` is filled by :meth:`run`.

    ``program``: the kernel's columnar view when the caller already has it (then ``kernel`` may be None).
    """

    def __init__(
        self, kernel: Kernel | None, sem: Semantics, horizon: int = 0, program: Program | None = None
    ) -> None:
        """``horizon`` > 0 (table building only): track every fixed producer that many cycles."""
        self.k = kernel
        self.sem = sem
        self.p = program if program is not None else program_of_kernel(kernel, sem)  # type: ignore[arg-type]
        ctx = self.p.ctx
        self.findings: dict[tuple, Finding] = {}
        self.bar_gap = ctx.bar_gap
        self.horizon = horizon
        self.bar_gaps_seen: list[int] = []
        # Mapping, not dict: mypyc's dict.get would bypass _Horizon.get
        self.maxlat: Mapping[str, int] = _Horizon(horizon) if horizon else dict(ctx.maxlat)
        # optional callback(node, kind, producer, distance) for table building
        self.observer: Callable[[Node, str, Node, tuple | None], object] | None = None
        self._entry: list[_St] = []
        self._public: list[State] | None = None
        self._nodes: list[Node] | None = None

    @property
    def entry(self) -> list[State]:
        """The fixed point's state at each block entry (after :meth:`run`)."""
        if self._public is None:
            self._public = [_public_state(st) for st in self._entry]
        return self._public

    # ---------------------------------------------------------------- driver
    def run(self) -> list[Finding]:
        p = self.p
        if not p.facts:
            return []
        blocks = p.blocks
        nb = len(blocks)
        maxlat = self.maxlat
        # The table builder's hooks see every run of every block and a final reporting pass, as they
        # always have; otherwise each block's last run reports.
        replay = bool(self.horizon or self.observer)
        entry: list[_St | None] = [None] * nb
        entry[0] = _St()
        found: list[list | None] = [None] * nb
        ran_on: list[_St | None] = [None] * nb
        work = [0]
        in_work = {0}
        n_iter = 0
        limit = 50 * nb + 100
        fresh = 0
        block = self._block
        while n_iter < limit:
            if not work:
                # Blocks no edge reaches (subroutines entered by CALL, code after the final BRA): start them
                # with nothing pending, as ptxas drains scoreboards before calls.
                while fresh < nb and entry[fresh] is not None:
                    fresh += 1
                if fresh == nb:
                    break
                entry[fresh] = _St()
                work.append(fresh)
                in_work.add(fresh)
            bi = work.pop()
            in_work.discard(bi)
            n_iter += 1
            st = entry[bi]
            out_list: list | None = None if replay else []
            out = _normalise(block(bi, st.copy(), out_list), maxlat)  # type: ignore[union-attr]
            if not replay:
                found[bi], ran_on[bi] = out_list, st
            for s in blocks[bi].succs:
                old = entry[s]
                new = _join(old, out) if old is not None else out
                if old is None or not _same(new, old):
                    entry[s] = new
                    if s not in in_work:
                        work.append(s)
                        in_work.add(s)
        for bi in range(nb):
            if entry[bi] is None:  # only when the iteration limit was hit
                entry[bi] = _St()
            if replay or ran_on[bi] is not entry[bi]:
                found[bi] = []
                block(bi, entry[bi].copy(), found[bi])  # type: ignore[union-attr]
        self._entry = entry  # type: ignore[assignment]
        self._public = None
        # In node order, each node's field and yield rules first (as a reporting pass would add them).
        facts, cts = p.facts, p.cts
        tagged = [
            (i, 0, f)
            for i in p.syn
            if cts[i][0] & C_SYN or facts[i].fb & F_REUSE
            for f in self._syntax_rules(i)
        ]
        tagged += [(i, 1, f) for lst in found for i, f in lst]  # type: ignore[union-attr]
        tagged.sort(key=lambda t: t[:2])
        findings = self.findings
        for _i, _phase, f in tagged:
            findings.setdefault((f.code, f.line, f.message), f)
        return sorted(findings.values(), key=lambda f: (f.line, f.col, f.code))

    # ---------------------------------------------------------------- reporting
    def _finding(
        self,
        code: str,
        i: int,
        message: str,
        related: Sequence[tuple[int, str]] = (),
        col: int | None = None,
        end_col: int | None = None,
        fixes: tuple[Fix, ...] = (),
    ) -> Finding:
        p = self.p
        line = p.lines[i]
        return Finding(
            code,
            RULES[code].severity,
            line,
            col if col is not None else p.text_cols[i],
            line,
            end_col if end_col is not None else p.end_cols[i],
            message,
            tuple(Related(ln, m) for ln, m in related),
            p.name,
            fixes=fixes,
        )

    def _node(self, i: int) -> Node:
        if self._nodes is None:
            self._nodes = self.k.nodes if self.k is not None else kernel_of_program(self.p, self.sem).nodes
        return self._nodes[i]

    # ---------------------------------------------------------------- transfer
    def _block(self, bi: int, st: _St, out: list | None) -> _St:
        """Run block ``bi`` from ``st`` (changed in place); findings go to ``out`` as ``(node, Finding)``."""
        p = self.p
        b = p.blocks[bi]
        facts = p.facts
        cts = p.cts
        events, fixed, groups, og, bar, cycle = st.events, st.fixed, st.groups, st.og, st.bar, st.cycle
        wm, am, neg, sbm = st.wm, st.am, st.neg, st.sbm
        slow = self.horizon or self.observer
        fget = fixed.get
        from_entry: set[int] = set()  # the only events a node of this block may already own
        for e in events:
            from_entry.add(e[_IDX])
        gmma = bool(groups or og)
        pre, post = _BEFORE, _AFTER  # local: read on every node
        for i in range(b.start, b.end):
            cf, rsb, wsb, stall, wait, _syn = cts[i]
            f = facts[i]
            fl = cf | f.fb
            nx = f.nx
            if fl & pre:
                # 1. waits
                if fl & C_WAIT and events:
                    if neg:
                        done: list[int] = []
                        for q, e in enumerate(events):
                            if e[_BIT] & wait:
                                done.append(q)
                        if done:
                            events = _complete(events, done)
                            wm, am, neg, sbm = _masks(events)
                    elif not sbm & ~wait:  # every pending event is on a waited scoreboard
                        events = ()
                        wm = am = sbm = 0
                    else:
                        after = _wait(events, wait)
                        if after is not None:
                            events, wm, am, neg, sbm = after
                if fl & F_DEPBAR:
                    events = self._depbar(i, f, events, out)
                    wm, am, neg, sbm = _masks(events)
                if fl & F_GMMA_WAIT:
                    keep = f.gmma_keep
                    groups = groups[len(groups) - keep :] if keep else ()
                    gmma = bool(groups or og)
                if fl & F_NEVER:
                    cycle += stall
                    continue
                # 2. BAR.SYNC -> shared memory distance
                if fl & F_SHARED and bar is not None:
                    if self.horizon and out is not None:
                        self.bar_gaps_seen.append(cycle - bar[1])
                        bar = None
                    elif self.bar_gap and cycle - bar[1] < self.bar_gap and out is not None:
                        out.append((i, self._bar(i, cycle, bar)))
            # 3. reads
            um = f.use_mask
            if slow:
                self._reads_hooked(out, i, f, events, wm, fixed, cycle)
            else:
                if um & wm:
                    for slot, add, _k, _n in f.uo:
                        if wm >> (nx[slot] + add) & 1:
                            self._raw_var(out, i, f, events, nx[slot] + add)
                if fixed:
                    for slot, add, kind, need in f.uo:
                        fx = fget(nx[slot] + add)
                        if fx is not None and cycle - fx[1] < need[fx[2]]:
                            pf = facts[fx[0]]
                            pg = pf.guard
                            if pg is None or f.guard != pg or f.s.guard_neg == pf.s.guard_neg:
                                found = self._raw_fixed(i, cycle, fx, nx[slot] + add, kind)
                                out.append((i, found))  # type: ignore[union-attr]  # a list when not slow
            # 4. writes: WAR / WAW against pending events
            dm = f.def_mask
            if dm & am:
                self._overwrites(out, i, f, events)
            # 5. HGMMA registers in flight
            if gmma and not fl & F_GMMA:
                self._in_flight(out, i, dm | um, groups, og)
            # 6. own effects
            if fl & post:
                if fl & (_OWN | F_GMMA):  # a result that is not a fixed-latency one
                    for slot, add in f.ds:
                        fixed.pop(nx[slot] + add, None)
                if fl & F_GMMA:
                    units = (dm | um) & R_MASK
                    og = (i, units if og is None else og[1] | units)
                    if fl & F_GSB0:
                        groups = (*groups, og)
                        og = None
                    gmma = True
                elif fl & _OWN:
                    s = f.s
                    queue = s.queue or f"#{i}"  # no queue: never completed by another op
                    write = fl & F_VAR or wsb is not None
                    if i in from_entry and (rsb is not None or (write and (wsb is not None or dm))):
                        # its events from the previous run of a loop are replaced
                        events = tuple(e for e in events if e[_IDX] != i)
                        wm, am, neg, sbm = _masks(events)
                    if write:
                        if wsb is not None:
                            events = (*events, (i, wsb, "W", queue, dm, f.guard, s.guard_neg, 1 << wsb))
                            wm |= dm
                            am |= dm
                            sbm |= 1 << wsb
                        elif dm:
                            events = (*events, (i, -1, "W", queue, dm, f.guard, s.guard_neg, 0))
                            wm |= dm
                            am |= dm
                            neg = True
                    if rsb is not None:
                        # Guards, predicates and uniform registers are read at issue; only GPRs are read late.
                        late = um & R_MASK
                        events = (*events, (i, rsb, "R", queue, late, f.guard, s.guard_neg, 1 << rsb))
                        am |= late
                        sbm |= 1 << rsb
                elif dm:
                    self._fixed_writes(fixed, i, f, cycle)
                if fl & F_BAR_SYNC:
                    bar = (i, cycle)
            elif dm:
                pipe = f.dp
                if pipe is not None:
                    v = (i, cycle, pipe)
                    for slot, add in f.ds:
                        fixed[nx[slot] + add] = v
                else:
                    for slot, add, pipe in f.s.dst_occ:
                        fixed[nx[slot] + add] = (i, cycle, pipe)
            cycle += stall
        st.events, st.fixed, st.groups, st.og, st.bar, st.cycle = events, fixed, groups, og, bar, cycle
        st.wm, st.am, st.neg, st.sbm = wm, am, neg, sbm
        return st

    def _reads_hooked(
        self, out: list | None, i: int, f, events: tuple, wm: int, fixed: dict, cycle: int
    ) -> None:  # noqa: ANN001
        """The reads with the table builder's hooks: per source unit the pending-write check, then the
        fixed-latency one (the order the observer has always seen)."""
        check_var = f.use_mask & wm
        if not (check_var or fixed):
            return
        nx = f.nx
        for slot, add, kind, _need in f.uo:
            u = nx[slot] + add
            if check_var and wm >> u & 1:
                self._raw_var(out, i, f, events, u)
            if fixed:
                fx = fixed.get(u)
                if fx is not None:
                    self._raw_fixed_hooked(out, i, cycle, fx, u, kind)

    @staticmethod
    def _fixed_writes(fixed: dict, i: int, f, cycle: int) -> None:  # noqa: ANN001
        nx = f.nx
        pipe = f.dp
        if pipe is not None:
            v = (i, cycle, pipe)
            for slot, add in f.ds:
                fixed[nx[slot] + add] = v
        else:
            for slot, add, pipe in f.s.dst_occ:
                fixed[nx[slot] + add] = (i, cycle, pipe)

    def _depbar(self, i: int, f, events: tuple, out: list | None) -> tuple:  # noqa: ANN001
        """``DEPBAR.LE SBn, k``: all but the youngest k events on each named scoreboard complete."""
        s = f.s
        keep = f.depbar_keep
        done = []
        for sb in range(6):
            if s.sb_set >> sb & 1:
                on_sb = [q for q, e in enumerate(events) if e[_SB] == sb]
                if keep and out is not None and len({events[q][_QUEUE] for q in on_sb}) > 1:
                    lines = self.p.lines
                    pl = sorted({lines[events[q][_IDX]] for q in on_sb})
                    msg = (
                        f"DEPBAR.LE SB{sb}, {keep} relies on in-order completion but SB{sb} "
                        f"is shared by different queues (lines {', '.join(map(str, pl))})"
                    )
                    related = [(ln, "producer on the same scoreboard") for ln in pl]
                    out.append((i, self._finding("SASS005", i, msg, related)))
                done.extend(on_sb[: max(0, len(on_sb) - keep)])
        return _complete(events, done) if done else events

    def _bar(self, i: int, cycle: int, bar: tuple[int, int]) -> Finding:
        bl = self.p.lines[bar[0]]
        return self._finding(
            "SASS008",
            i,
            f"{self.p.facts[i].s.opcode} accesses shared memory {cycle - bar[1]} cycles after BAR.SYNC at "
            f"line {bl}; ptxas keeps >= {self.bar_gap}",
            [(bl, "barrier")],
        )

    def _overwrites(self, out: list | None, i: int, f, events: tuple) -> None:  # noqa: ANN001
        dm = f.def_mask
        guard = f.guard
        neg = f.s.guard_neg
        is_gmma = f.fb & F_GMMA
        for e in events:
            hit = e[_UNITS] & dm
            if hit and not (e[_GUARD] is not None and guard == e[_GUARD] and neg != e[_NEG]):
                if e[_KIND] == "R":
                    # A memory op's late write cannot overtake an older memory op's operand read: both go
                    # through the in-order MIO/LSU path (ptxas relies on this, e.g. STG R4 then LDS R4).
                    if not _in_order_after(f, e) and out is not None:
                        out.append((i, self._war(i, e, _low(hit))))
                elif not (is_gmma and e[_QUEUE] == "gmma") and not _in_order_after(f, e) and out is not None:
                    out.append((i, self._waw(i, e, _low(hit))))

    def _in_flight(self, out: list | None, i: int, touched: int, groups: tuple, og: tuple | None) -> None:
        for gidx, gunits in (*groups, *((og,) if og else ())):
            hit = gunits & touched
            if hit:
                if out is not None:
                    gl = self.p.lines[gidx]
                    msg = (
                        f"{unit_name(_low(hit))} belongs to the HGMMA at line {gl} that "
                        "is still in flight; wait with WARPGROUP.DEPBAR.LE gsb0 first"
                    )
                    out.append((i, self._finding("SASS013", i, msg, [(gl, "HGMMA")])))
                break

    # ---------------------------------------------------------------- rule bodies
    def _where(self, idx: int) -> tuple[str, int]:
        return self.p.facts[idx].s.opcode, self.p.lines[idx]

    def _raw_var(self, out: list | None, i: int, f, events: tuple, u: int) -> None:  # noqa: ANN001
        """Node ``i`` reads ``u``: report the oldest pending write of it (not on the complementary guard)."""
        guard, neg, is_gmma = f.guard, f.s.guard_neg, f.fb & F_GMMA
        for e in events:
            if (
                e[_KIND] == "W"
                and e[_UNITS] >> u & 1
                and not (e[_GUARD] is not None and guard == e[_GUARD] and neg != e[_NEG])
            ):
                if is_gmma and e[_QUEUE] == "gmma":
                    continue
                break
        else:
            return
        if self.observer:
            self.observer(self._node(i), "raw_var", self._node(e[_IDX]), None)
        if out is None:
            return
        opc, pl = self._where(e[_IDX])
        sb = e[_SB]
        if sb < 0:
            found = self._finding(
                "SASS007",
                i,
                f"reads {unit_name(u)} written by {opc} at line {pl}, which has no "
                "write scoreboard and no later same-queue producer was waited on",
                [(pl, "variable-latency producer without W scoreboard")],
            )
        else:
            found = self._finding(
                "SASS001",
                i,
                f"reads {unit_name(u)} written by {opc} at line {pl} (W{sb}) without waiting on SB{sb}",
                [(pl, f"producer sets W{sb}")],
                col=self.p.ctrl_cols[i],
                end_col=self.p.end_cols[i],
                fixes=(SetWait(self.p.lines[i], sb),),
            )
        out.append((i, found))

    def _raw_fixed(self, i: int, cycle: int, fx: tuple, u: int, kind: str) -> Finding:
        pidx, issued, ppipe = fx
        dist = cycle - issued
        opc, pl = self._where(pidx)
        cpipe = self.p.facts[i].s.pipe
        row = self.sem.latency(ppipe, cpipe, kind)
        cycles: int = row.cycles  # type: ignore[union-attr]
        # The instruction before the reader stalls the missing cycles longer.
        fixes: tuple[Fix, ...] = (RaiseStall(self.p.lines[i - 1], cycles - dist),) if i > 0 else ()
        return self._finding(
            "SASS002",
            i,
            f"reads {unit_name(u)} {dist} cycles after {opc} at line {pl}; "
            f"{ppipe}->{cpipe} {kind} latency is {cycles} ({row.source})",  # type: ignore[union-attr]
            [(pl, f"producer; stalls from here sum to {dist}")],
            fixes=fixes,
        )

    def _raw_fixed_hooked(self, out: list | None, i: int, cycle: int, fx: tuple, u: int, kind: str) -> None:
        """The fixed-latency check with the table builder's horizon and observer."""
        pidx, issued, ppipe = fx
        if not (self.observer or cycle - issued < self.maxlat.get(ppipe, 0)):
            return
        f, pf = self.p.facts[i], self.p.facts[pidx]
        if pf.guard is not None and f.guard == pf.guard and f.s.guard_neg != pf.s.guard_neg:
            return
        row = self.sem.latency(ppipe, f.s.pipe, kind)
        dist = cycle - issued
        if self.observer:
            self.observer(self._node(i), "raw_fixed", self._node(pidx), (ppipe, f.s.pipe, kind, dist, u))
        if row is None or dist >= row.cycles or out is None:
            return
        out.append((i, self._raw_fixed(i, cycle, fx, u, kind)))

    def _war(self, i: int, e: tuple, u: int) -> Finding:
        opc, pl = self._where(e[_IDX])
        return self._finding(
            "SASS003",
            i,
            f"overwrites {unit_name(u)} still to be read by {opc} at line {pl}; "
            f"wait on SB{e[_SB]} (its read scoreboard)",
            [(pl, f"reads {unit_name(u)}, sets R{e[_SB]}")],
            col=self.p.ctrl_cols[i],
            end_col=self.p.end_cols[i],
            fixes=(SetWait(self.p.lines[i], e[_SB]),) if e[_SB] >= 0 else (),
        )

    def _waw(self, i: int, e: tuple, u: int) -> Finding:
        opc, pl = self._where(e[_IDX])
        sb = f"SB{e[_SB]}" if e[_SB] >= 0 else "a scoreboard"
        return self._finding(
            "SASS004",
            i,
            f"overwrites {unit_name(u)} while {opc} at line {pl} may still write it; wait on {sb} first",
            [(pl, "pending producer")],
            col=self.p.ctrl_cols[i],
            end_col=self.p.end_cols[i],
            fixes=(SetWait(self.p.lines[i], e[_SB]),) if e[_SB] >= 0 else (),
        )

    def _syntax_rules(self, i: int) -> list[Finding]:
        """Per-instruction rules that need no dataflow: fields, yield combos."""
        p = self.p
        ctrl = p.ctrl_at(i)
        stall = ctrl.stall
        ctx = p.ctx
        max_noyield = ctx.max_noyield
        long_stall = max_noyield is not None and not ctrl.yield_flag and stall > max_noyield
        if not (ctrl.errors or long_stall or stall == 0 or ctrl.yield_flag):
            return []
        s = p.facts[i].s
        s00 = stall == 0 and s.opcode not in ctx.s00
        reuse_y = ctrl.yield_flag and s.fb & F_REUSE
        if not (ctrl.errors or long_stall or s00 or reuse_y):
            return []  # before reading the column lists (a check that finds nothing never needs them)
        out = []
        cc = p.ctrl_cols[i]
        for col, msg in ctrl.errors:
            out.append(self._finding("SASS012", i, msg, col=cc + col, end_col=cc + col + 2))
        end = p.text_cols[i] - 2
        if long_stall:
            out.append(
                self._finding(
                    "SASS011",
                    i,
                    f"stall S{stall:02d} without Y: ptxas always sets Y for stalls above {max_noyield}",
                    col=cc,
                    end_col=end,
                )
            )
        if s00:
            out.append(
                self._finding(
                    "SASS011",
                    i,
                    f"S00 on {s.opcode}: ptxas uses a zero stall only on padding "
                    "(NOP, the final self-branch)",
                    col=cc,
                    end_col=end,
                )
            )
        if reuse_y:
            out.append(
                self._finding(
                    "SASS011",
                    i,
                    ".reuse together with Y: ptxas never emits this (reuse is dropped on yield)",
                    col=cc,
                    end_col=end,
                )
            )
        return out


def _in_order_after(f, e: tuple) -> bool:  # noqa: ANN001
    """A variable-latency write that cannot land before the pending op ``e`` is done with the register:
    same in-order queue (e.g. two DFMA on sm_80, two I2F), or both in the MIO/LSU path (STG R4 then
    LDS R4). ptxas relies on both."""
    s = f.s
    if not s.variable:
        return False
    return s.queue == e[_QUEUE] or (s.queue in _MEM_QUEUES and e[_QUEUE] in _MEM_QUEUES)


_UNITS_OF: dict[int, frozenset[int]] = {}


def _units(mask: int) -> frozenset[int]:
    hit = _UNITS_OF.get(mask)
    if hit is None:
        out = []
        m = mask
        while m:
            low = m & -m
            out.append(low.bit_length() - 1)
            m ^= low
        if len(_UNITS_OF) > 1 << 16:
            _UNITS_OF.clear()
        hit = _UNITS_OF[mask] = frozenset(out)
    return hit


def _public_state(st: _St) -> State:
    out = State(
        tuple(Event(i, sb, kind, q, _units(m), g, n) for i, sb, kind, q, m, g, n, _b in st.events),
        dict(st.fixed),
        tuple((g, _units(m)) for g, m in st.groups),
        None if st.og is None else (st.og[0], _units(st.og[1])),
        st.bar,
        st.cycle,
    )
    out.wunits, out.aunits = _units(st.wm), _units(st.am)
    return out
