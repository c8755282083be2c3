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
"""

from __future__ import annotations

from dataclasses import dataclass

from sass_lsp.analysis.findings import RULES, Finding, Related
from sass_lsp.analysis.program import Kernel, Node
from sass_lsp.isa.semantics import Semantics, unit_kind, unit_name


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


def _normalise(st: State, sem_maxlat: dict[str, int]) -> State:
    """Entry-state form: cycles relative to 0, expired fixed producers dropped."""
    t = st.cycle
    fixed = {}
    for u, (p, c, pipe) in (st.fixed or {}).items():
        el = t - c
        if el < sem_maxlat.get(pipe, 0):
            fixed[u] = (p, -el, pipe)
    bar = None
    if st.bar is not None and t - st.bar[1] < sem_maxlat.get("__bar__", 0):
        bar = (st.bar[0], st.bar[1] - t)
    out = State(st.events, fixed, st.groups, st.open_group, bar, 0)
    out.wunits, out.aunits = st.wunits, st.aunits
    return out


def _join(a: State | None, b: State) -> State:
    if a is None:
        return b
    fixed = dict(a.fixed or {})
    for u, v in (b.fixed or {}).items():
        old = fixed.get(u)
        if old is None or v[1] > old[1]:  # later issue = less elapsed = worse
            fixed[u] = v
    bar = a.bar
    if b.bar is not None and (bar is None or b.bar[1] > bar[1]):
        bar = b.bar
    og = a.open_group
    if b.open_group is not None:
        og = b.open_group if og is None else (og[0], og[1] | b.open_group[1])
    out = State((), fixed, _merge_ordered(a.groups, b.groups), og, bar, 0)
    out.set_events(_merge_ordered(a.events, b.events))
    return out


def _same(a: State, b: State) -> bool:
    return (
        a.events == b.events
        and a.fixed == b.fixed
        and a.groups == b.groups
        and a.open_group == b.open_group
        and a.bar == b.bar
    )


def _complementary(guard: int | None, neg: bool, node: Node) -> bool:
    return guard is not None and node.eff.guard == guard and node.eff.guard_neg != neg


class Checker:
    """Runs the dataflow over one kernel; ``findings`` is filled by :meth:`run`."""

    def __init__(self, kernel: Kernel, sem: Semantics, horizon: int = 0) -> None:
        """``horizon`` > 0 (table building only): track every fixed producer that many cycles."""
        self.k = kernel
        self.sem = sem
        self.findings: dict[tuple, Finding] = {}
        self.emit = False
        maxlat: dict[str, int] = {}
        for (prod, _c, _o), row in sem._lat.items():
            maxlat[prod] = max(maxlat.get(prod, 0), row.cycles)
        self.bar_gap = sem.param("bar_sync_to_shared") or 0
        maxlat["__bar__"] = self.bar_gap
        self.horizon = horizon
        self.bar_gaps_seen: list[int] = []
        if horizon:
            maxlat = _Horizon(horizon)
        self.maxlat = maxlat
        self.observer = None  # optional callback(node, kind, producer, distance) for table building

    # ---------------------------------------------------------------- driver
    def run(self) -> list[Finding]:
        k = self.k
        if not k.nodes:
            return []
        entry: list[State | None] = [None] * len(k.blocks)
        entry[0] = State(fixed={})
        work = [0]
        in_work = {0}
        n_iter = 0
        limit = 50 * len(k.blocks) + 100
        while n_iter < limit:
            if not work:
                # Blocks no edge reaches (subroutines entered by CALL, code after the final BRA): start them
                # with nothing pending, as ptxas drains scoreboards before calls.
                fresh = next((i for i, e in enumerate(entry) if e is None), None)
                if fresh is None:
                    break
                entry[fresh] = State(fixed={})
                work.append(fresh)
                in_work.add(fresh)
            bi = work.pop()
            in_work.discard(bi)
            n_iter += 1
            out = _normalise(self._block(bi, entry[bi].copy()), self.maxlat)
            for s in k.blocks[bi].succs:
                new = _join(entry[s], out) if entry[s] is not None else out
                if entry[s] is None or not _same(new, entry[s]):
                    entry[s] = new
                    if s not in in_work:
                        work.append(s)
                        in_work.add(s)
        self.emit = True
        for bi in range(len(k.blocks)):
            if entry[bi] is None:  # only when the iteration limit was hit
                entry[bi] = State(fixed={})
            self._block(bi, entry[bi].copy())
        self.entry = entry
        return sorted(self.findings.values(), key=lambda f: (f.line, f.col, f.code))

    # ---------------------------------------------------------------- reporting
    def _report(
        self,
        code: str,
        node: Node,
        message: str,
        related: list[tuple[int, str]] = (),
        col: int | None = None,
        end_col: int | None = None,
        severity: str | None = None,
    ) -> None:
        if not self.emit:
            return
        key = (code, node.line, message)
        if key in self.findings:
            return
        c = col if col is not None else node.text_col
        self.findings[key] = Finding(
            code,
            severity or RULES[code].severity,
            node.line,
            c,
            node.line,
            end_col if end_col is not None else node.end_col,
            message,
            tuple(Related(ln, m) for ln, m in related),
            self.k.name,
        )

    def _where(self, idx: int) -> str:
        nd = self.k.nodes[idx]
        return f"{nd.eff.opcode} at line {nd.line}"

    # ---------------------------------------------------------------- transfer
    def _block(self, bi: int, st: State) -> State:
        b = self.k.blocks[bi]
        nodes = self.k.nodes
        for i in range(b.start, b.end):
            self._step(nodes[i], st)
        return st

    def _complete(self, st: State, done: list[Event]) -> None:
        if not done:
            return
        # A finished write implies every older op of its queue finished (reads and writes); a released
        # read only implies older reads were done.
        last_w: dict[str, int] = {}
        last_r: dict[str, int] = {}
        pos_of = {e: p for p, e in enumerate(st.events)}
        for e in done:
            p = pos_of[e]
            last = last_w if e.kind == "W" else last_r
            if last.get(e.queue, -1) < p:
                last[e.queue] = p
        # Only scoreboard-less ops (sb == -1) are completed by a younger op of their queue: ptxas relies on
        # that for them; an op with its own scoreboard is complete only when that scoreboard is waited on.
        # A finished write also means the same instruction's sources were read.
        w_idx = {e.idx for e in done if e.kind == "W"}
        dset = set(done) | {e for e in st.events if e.kind == "R" and e.idx in w_idx}
        st.set_events(
            tuple(
                e
                for p, e in enumerate(st.events)
                if e not in dset
                and not (
                    e.sb < 0
                    and (p < last_w.get(e.queue, -1) or (e.kind == "R" and p < last_r.get(e.queue, -1)))
                )
            )
        )

    def _step(self, nd: Node, st: State) -> None:
        eff = nd.eff
        ctrl = nd.ctrl
        if self.emit:
            self._syntax_rules(nd)
        # 1. waits
        if ctrl.wait_mask:
            mask = ctrl.wait_mask
            done = [e for e in st.events if e.sb >= 0 and mask >> e.sb & 1]
            self._complete(st, done)
        if "depbar" in eff.flags and eff.sb_set:
            keep = eff.imm[0] if eff.imm and "LE" in eff.modifiers else 0
            done = []
            for sb in range(6):
                if eff.sb_set >> sb & 1:
                    on_sb = [e for e in st.events if e.sb == sb]
                    if keep and len({e.queue for e in on_sb}) > 1:
                        lines = sorted({self.k.nodes[e.idx].line for e in on_sb})
                        self._report(
                            "SASS005",
                            nd,
                            f"DEPBAR.LE SB{sb}, {keep} relies on in-order completion but "
                            f"SB{sb} is shared by different queues (lines {', '.join(map(str, lines))})",
                            [(ln, "producer on the same scoreboard") for ln in lines],
                        )
                    done.extend(on_sb[: max(0, len(on_sb) - keep)])
            self._complete(st, done)
        if "gmma_wait" in eff.flags:
            keep = eff.imm[0] if eff.imm else 0
            st.groups = st.groups[len(st.groups) - keep :] if keep else ()
        if eff.never:
            st.cycle += ctrl.stall
            return
        fixed = st.fixed
        # 2. BAR.SYNC -> shared memory distance
        if self.horizon and self.emit and "shared" in eff.flags and st.bar is not None:
            self.bar_gaps_seen.append(st.cycle - st.bar[1])
            st.bar = None
        if "shared" in eff.flags and st.bar is not None and self.bar_gap:
            dist = st.cycle - st.bar[1]
            if dist < self.bar_gap:
                bl = self.k.nodes[st.bar[0]].line
                self._report(
                    "SASS008",
                    nd,
                    f"{eff.opcode} accesses shared memory {dist} cycles after BAR.SYNC at "
                    f"line {bl}; ptxas keeps >= {self.bar_gap}",
                    [(bl, "barrier")],
                )
        # 3. reads
        is_gmma = "gmma" in eff.flags
        pending_w = st.wunits
        uses = eff.use_units
        check_var = bool(uses & pending_w)
        check_fixed = bool(fixed) and any(u in fixed for u in uses)
        for op in eff.srcs if check_var or check_fixed else ():
            okind = op.role
            for j, u in enumerate(op.units):
                if op.hi and j >= op.hi:
                    okind = "hi"
                for e in st.events if check_var and u in pending_w else ():
                    if e.kind == "W" and u in e.units and not _complementary(e.guard, e.guard_neg, nd):
                        if is_gmma and e.queue == "gmma":
                            continue
                        self._raw_var(nd, e, u)
                        break
                if check_fixed:
                    f = fixed.get(u)
                    if f is not None and (self.observer or st.cycle - f[1] < self.maxlat.get(f[2], 0)):
                        self._raw_fixed(nd, st, f, u, okind)
        # 4. writes: WAR / WAW against pending events
        dunits = eff.def_units
        if dunits and st.events and not dunits.isdisjoint(st.aunits):
            for e in st.events:
                hit = e.units & dunits
                if hit and not _complementary(e.guard, e.guard_neg, nd):
                    if e.kind == "R":
                        # A memory op's late write cannot overtake an older memory op's operand read: both go
                        # through the in-order MIO/LSU path (ptxas relies on this, e.g. STG R4 then LDS R4).
                        if not self._in_order_after(eff, nd, e):
                            self._war(nd, e, min(hit))
                    elif not (is_gmma and e.queue == "gmma") and not self._in_order_after(eff, nd, e):
                        self._waw(nd, e, min(hit))
        # 5. HGMMA registers in flight
        if (st.groups or st.open_group) and not is_gmma:
            touched = dunits | eff.use_units
            for gidx, gunits in (*st.groups, *((st.open_group,) if st.open_group else ())):
                hit = gunits & touched
                if hit:
                    gl = self.k.nodes[gidx].line
                    self._report(
                        "SASS013",
                        nd,
                        f"{unit_name(min(hit))} belongs to the HGMMA at line {gl} that "
                        "is still in flight; wait with WARPGROUP.DEPBAR.LE gsb0 first",
                        [(gl, "HGMMA")],
                    )
                    break
        # 6. own effects
        if is_gmma:
            units = dunits | eff.use_units
            units = frozenset(u for u in units if u < 256)
            og = st.open_group
            og = (nd.idx, units if og is None else og[1] | units)
            if "gsb0" in nd.text:
                st.groups = (*st.groups, og)
                st.open_group = None
            else:
                st.open_group = og
            if fixed is not None:
                for u in dunits:
                    fixed.pop(u, None)
        elif eff.variable or ctrl.write_sb is not None or ctrl.read_sb is not None:
            if fixed is not None:
                for u in dunits:
                    fixed.pop(u, None)
            new: list[Event] = []
            queue = eff.queue or f"#{nd.idx}"  # no queue: never completed by another op
            if eff.variable or ctrl.write_sb is not None:
                wsb = -1 if ctrl.write_sb is None else ctrl.write_sb
                if wsb >= 0 or dunits:
                    new.append(Event(nd.idx, wsb, "W", queue, dunits, eff.guard, eff.guard_neg))
            if ctrl.read_sb is not None:
                # Guards, predicates and uniform registers are read at issue; only GPRs are read late.
                late = frozenset(u for u in eff.use_units if u < 256)
                new.append(Event(nd.idx, ctrl.read_sb, "R", queue, late, eff.guard, eff.guard_neg))
            if new:
                old = [e for e in st.events if e.idx != nd.idx]
                st.set_events((*old, *new))
        elif dunits:
            if fixed is None:
                st.fixed = fixed = {}
            for op in eff.dsts:
                for j, u in enumerate(op.units):
                    fixed[u] = (nd.idx, st.cycle, eff.pipe + "_hi" if op.hi and j >= op.hi else eff.pipe)
        if "bar_sync" in eff.flags:
            st.bar = (nd.idx, st.cycle)
        st.cycle += ctrl.stall

    @staticmethod
    def _in_order_after(eff, nd: Node, e: Event) -> bool:  # noqa: ANN001
        """A variable-latency write that cannot land before the pending op ``e`` is done with the register:
        same in-order queue (e.g. two DFMA on sm_80, two I2F), or both in the MIO/LSU path (STG R4 then
        LDS R4). ptxas relies on both."""
        if not eff.variable:
            return False
        return eff.queue == e.queue or (eff.queue in _MEM_QUEUES and e.queue in _MEM_QUEUES)

    # ---------------------------------------------------------------- rule bodies
    def _raw_var(self, nd: Node, e: Event, u: int) -> None:
        p = self.k.nodes[e.idx]
        if self.observer:
            self.observer(nd, "raw_var", p, None)
        if e.sb < 0:
            self._report(
                "SASS007",
                nd,
                f"reads {unit_name(u)} written by {p.eff.opcode} at line {p.line}, which has no "
                "write scoreboard and no later same-queue producer was waited on",
                [(p.line, "variable-latency producer without W scoreboard")],
            )
        else:
            self._report(
                "SASS001",
                nd,
                f"reads {unit_name(u)} written by {p.eff.opcode} at line {p.line} "
                f"(W{e.sb}) without waiting on SB{e.sb}",
                [(p.line, f"producer sets W{e.sb}")],
                col=nd.ctrl_col,
                end_col=nd.end_col,
            )

    def _raw_fixed(self, nd: Node, st: State, f: tuple[int, int, str], u: int, okind: str) -> None:
        pidx, issued, ppipe = f
        dist = st.cycle - issued
        p = self.k.nodes[pidx]
        if _complementary(p.eff.guard, p.eff.guard_neg, nd):
            return
        kind = (
            "guard"
            if okind == "guard"
            else "addr"
            if okind == "addr" and u < 256
            else "reg_hi"
            if okind == "hi"
            else unit_kind(u)
        )
        row = self.sem.latency(ppipe, nd.eff.pipe, kind)
        if self.observer:
            self.observer(nd, "raw_fixed", p, (ppipe, nd.eff.pipe, kind, dist, u))
        if row is None or dist >= row.cycles:
            return
        self._report(
            "SASS002",
            nd,
            f"reads {unit_name(u)} {dist} cycles after {p.eff.opcode} at line {p.line}; "
            f"{ppipe}->{nd.eff.pipe} {kind} latency is {row.cycles} ({row.source})",
            [(p.line, f"producer; stalls from here sum to {dist}")],
        )

    def _war(self, nd: Node, e: Event, u: int) -> None:
        p = self.k.nodes[e.idx]
        self._report(
            "SASS003",
            nd,
            f"overwrites {unit_name(u)} still to be read by {p.eff.opcode} at line {p.line}; "
            f"wait on SB{e.sb} (its read scoreboard)",
            [(p.line, f"reads {unit_name(u)}, sets R{e.sb}")],
            col=nd.ctrl_col,
            end_col=nd.end_col,
        )

    def _waw(self, nd: Node, e: Event, u: int) -> None:
        p = self.k.nodes[e.idx]
        sb = f"SB{e.sb}" if e.sb >= 0 else "a scoreboard"
        self._report(
            "SASS004",
            nd,
            f"overwrites {unit_name(u)} while {p.eff.opcode} at line {p.line} may still write "
            f"it; wait on {sb} first",
            [(p.line, "pending producer")],
            col=nd.ctrl_col,
            end_col=nd.end_col,
        )

    def _syntax_rules(self, nd: Node) -> None:
        """Per-instruction rules that need no dataflow: fields, yield combos, placeholder position."""
        ctrl = nd.ctrl
        for col, msg in ctrl.errors:
            self._report("SASS012", nd, msg, col=nd.ctrl_col + col, end_col=nd.ctrl_col + col + 2)
        sem = self.sem
        max_noyield = sem.param("max_stall_without_yield")
        eff = nd.eff
        if max_noyield is not None and not ctrl.yield_flag and ctrl.stall > max_noyield:
            self._report(
                "SASS011",
                nd,
                f"stall S{ctrl.stall:02d} without Y: ptxas always sets Y for stalls above {max_noyield}",
                col=nd.ctrl_col,
                end_col=nd.text_col - 2,
            )
        if ctrl.stall == 0 and eff.opcode not in sem.data.get("params", {}).get("s00_opcodes", {}).get(
            "value", ()
        ):
            self._report(
                "SASS011",
                nd,
                f"S00 on {eff.opcode}: ptxas uses a zero stall only on padding (NOP, the final self-branch)",
                col=nd.ctrl_col,
                end_col=nd.text_col - 2,
            )
        if ctrl.yield_flag and any(o.reuse for o in eff.srcs):
            self._report(
                "SASS011",
                nd,
                ".reuse together with Y: ptxas never emits this (reuse is dropped on yield)",
                col=nd.ctrl_col,
                end_col=nd.text_col - 2,
            )
