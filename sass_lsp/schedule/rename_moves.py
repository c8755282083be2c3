"""Feature: register-renaming moves. One live range of a general register gets a register the kernel never
names, to break the false (WAR/WAW) dependences that pin instructions of a basic block, or to move a source
out of another source's register bank. Hazard-free by construction: the new register is touched by nothing
else, and the old value is dead where the range ends.

API
---
``rename_moves(text, arch=None, *, kinds=KINDS, threads_per_block=None, allow_occupancy_loss=False)``
    ``-> list[RenameMove]``: the legal renames of every kernel of ``text`` (at most one per live range and
    kind).
``apply(text, move) -> str``
    The text with the range's register tokens renamed (and the ``.reuse`` flags the move drops removed);
    every other byte kept.
``random_moves(text, n, rng, ...) -> (text, moves)``
    ``n`` renames in a row, each legal on the text the previous ones left.
``neighbour(original, arch=None, ...) -> propose``
    ``propose(text, rng) -> Candidate | None`` for :func:`sass_lsp.schedule.search.annealing`.
``occupancy(regs, threads_per_block=None) -> int``
    Resident warps per SM on sm_90 for a register count (registers alone).

The live range (conservative: a wrong rename corrupts a kernel, a missed one only costs speed)
- One unguarded definition of a plain GPR operand (32-bit, or an aligned 64/128-bit group) by an instruction
  that executes (not ``@!PT``), of a known pipe, not HGMMA-like, whose text the encoder can re-encode, and
  every read of that value after it in the same basic block: up to the next unguarded instruction that
  writes every register of the group (the range's *kill*; its reads of the group still belong to the
  range), or the block's end, where the group must be dead (backward liveness over the CFG; a call, a
  return or an unresolved branch makes every register live at that block's end).
- Refused: a read or write that covers only part of the group together with other registers, a guarded or
  partial write inside the range, a ``@!PT`` instruction naming the group, and any register an HGMMA-like
  instruction, an unknown instruction or a wider-than-128-bit operand names, or that an instruction reads or
  writes without naming it.
- The new register: none of its registers is named anywhere in the kernel (so it is free over the whole
  range), its base is aligned as the group's (64-bit: even; 128-bit: a multiple of 4), and its highest
  register is below the register count the assembler will write (:func:`register_count`).
- ``.reuse`` on a renamed source stays only where the next instruction reads the same new register in the
  same operand slot (the cache then holds the same value); otherwise it is dropped (always legal).

Register count and occupancy: the assembler raises ``EIATTR_REGCOUNT`` to the highest register any operand
covers plus 3 (``cuasm.assembler.registers_needed``; it never lowers it: the two registers above the highest
are the hardware's, and a pair renamed into them faulted on an H100). Occupancy follows CUDA's
``cuda_occupancy.h`` (``cudaOccMaxBlocksPerSMRegsLimit``) for sm_90: 64K registers per SM in 4
sub-partitions, allocation in units of 256 registers per warp, at most 64 warps and 32 blocks per SM.
A rename that lowers it is refused unless ``allow_occupancy_loss``.

The moves (``kind``)
- ``false_dep``: the rename removes ``edges`` WAR/WAW pairs from the block's reorder dependences
  (:func:`sass_lsp.schedule.deps.block_deps`), net of the ones it adds; offered only when that is positive.
  The new register is the lowest free one that adds no bank conflict among the range's instructions
  (any free one when none does).
- ``bank``: an instruction of the range reads two distinct 32-bit registers of one bank, neither with
  ``.reuse``, and the rename leaves fewer such instructions in the range. The bank model is Volta's:
  two 64-bit-wide banks, bank = register number % 2 (Z. Jia, M. Maggioni, B. Staiger, D. P. Scarpazza,
  "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking", arXiv:1804.06826, 2018, section
  on register banks); that it holds on sm_90, and that two same-bank sources already cost a cycle, is an
  assumption no measurement here confirms. A bank move is as safe as any rename; whether it is faster is
  the measurement's to say.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sass_lsp.analysis.program import Kernel, build_kernel
from sass_lsp.cuasm import parse_cuasm
from sass_lsp.cuasm.assembler import RESERVED_REGISTERS, module_arch, registers_needed
from sass_lsp.isa.encoder import EncodeError, Encoder
from sass_lsp.isa.semantics import RegisterRef, Semantics, load_semantics
from sass_lsp.schedule.liveness import GPR_UNITS, liveness, mask
from sass_lsp.schedule.moves import proposer, random_chain

KINDS = ("false_dep", "bank")
NUM_GPR = 255  # R0..R254; R255 is RZ
# sm_90 (cuda_occupancy.h): registers per SM, sub-partitions, allocation unit per warp, warps and blocks
REGS_PER_SM = 65536
SUB_PARTITIONS = 4
REG_ALLOC_UNIT = 256
MAX_WARPS = 64
MAX_BLOCKS = 32
REGS_PER_BLOCK = 65536
BANKS = 2  # Jia et al. 2018: bank = register % 2
_TRAILER = re.compile(r"//\s*(hidden|raw)\b")
_TOKEN = re.compile(r"R\d+\|?((?:\.[A-Za-z0-9_]+)*)")
_REGCOUNT = re.compile(
    r"EIATTR_REGCOUNT\s*\n(?:[^\n]*\n){0,6}?\s*/\*[0-9a-f]+\*/\s*\.word\s+index@\(([^)]+)\)\s*\n"
    r"\s*/\*[0-9a-f]+\*/\s*\.word\s+(0x[0-9a-fA-F]+)"
)


class RenameMoveError(ValueError):
    """The text cannot be read, or a move does not belong to it."""


@dataclass(frozen=True)
class RenameMove:
    """One live range renamed. Lines are 1-based; ``edits`` are ``(line, col, old, new)`` with 0-based
    columns into the line, ``old`` the exact text replaced."""

    kind: str
    kernel: str
    def_line: int
    use_lines: tuple[int, ...]
    old: str  # e.g. "R4" (the group's base)
    new: str
    width: int  # registers in the group
    edits: tuple[tuple[int, int, str, str], ...]
    edges: int  # WAR/WAW pairs removed from the block's dependences, net
    conflicts: int  # same-bank source pairs removed from the range's instructions, net
    regs_before: int
    regs_after: int
    warps_before: int  # resident warps per SM (registers alone, or with threads_per_block)
    warps_after: int
    dropped_reuse: int = 0
    description: str = ""

    def __str__(self) -> str:
        return self.description


# ---------------------------------------------------------------- occupancy


def occupancy(regs: int, threads_per_block: int | None = None) -> int:
    """Resident warps per SM on sm_90 for ``regs`` registers per thread; with ``threads_per_block``, whole
    blocks (``cudaOccMaxBlocksPerSMRegsLimit`` and the warp and block limits), else registers alone."""
    if regs <= 0:
        return MAX_WARPS
    per_warp = -(-regs * 32 // REG_ALLOC_UNIT) * REG_ALLOC_UNIT
    warps = (REGS_PER_SM // SUB_PARTITIONS // per_warp) * SUB_PARTITIONS
    if threads_per_block is None:
        return min(warps, MAX_WARPS)
    wpb = -(-threads_per_block // 32)
    assumed = per_warp * -(-wpb // SUB_PARTITIONS) * SUB_PARTITIONS
    if regs > NUM_GPR or assumed > REGS_PER_BLOCK or per_warp * wpb > REGS_PER_BLOCK:
        return 0
    blocks = min(warps // wpb, MAX_WARPS // wpb, MAX_BLOCKS)
    return blocks * wpb


def declared_regcounts(text: str) -> dict[str, int]:
    """kernel -> the ``EIATTR_REGCOUNT`` its ``.nv.info`` declares in the text."""
    return {m.group(1): int(m.group(2), 16) for m in _REGCOUNT.finditer(text)}


def register_count(texts: Sequence[str], arch: str, declared: int = 0) -> int:
    """The register count the assembler writes for a kernel of these instruction texts."""
    return max(declared, registers_needed(list(texts), arch))


# ---------------------------------------------------------------- apply


def apply(text: str, move: RenameMove) -> str:
    lines = text.splitlines(keepends=True)
    for line, col, old, new in sorted(move.edits, key=lambda e: (e[0], -e[1])):  # right to left per line
        if not 0 < line <= len(lines):
            raise RenameMoveError(f"line {line} is not in the text ({len(lines)} lines)")
        s = lines[line - 1]
        if s[col : col + len(old)] != old or _TOKEN.match(s, col) is None:
            raise RenameMoveError(f"line {line} does not hold {old} at column {col + 1}")
        lines[line - 1] = s[:col] + new + s[col + len(old) :]
    return "".join(lines)


# ---------------------------------------------------------------- enumerate


def rename_moves(
    text: str,
    arch: str | None = None,
    *,
    kinds: Sequence[str] = KINDS,
    threads_per_block: int | None = None,
    allow_occupancy_loss: bool = False,
) -> list[RenameMove]:
    module, diags = parse_cuasm(text)
    errors = [d for d in diags if d.severity == "error"]
    if errors:
        raise RenameMoveError(f"line {errors[0].line}: {errors[0].message}")
    arch = arch or module_arch(module)
    sem = load_semantics(arch)
    lines = text.splitlines()
    declared = declared_regcounts(text)
    out: list[RenameMove] = []
    for sec in module.sections:
        if not sec.name.startswith(".text.") or not sec.instructions:
            continue
        name = sec.name[len(".text.") :]
        k = build_kernel(name, sec.line, list(sec.items), sem)
        rules = _Rules(frozenset(kinds), threads_per_block, allow_occupancy_loss)
        out += _Enumerator(k, sem, arch, lines, declared.get(name, 0), rules).moves()
    return out


@dataclass(frozen=True)
class _Rules:
    kinds: frozenset[str]
    threads_per_block: int | None
    allow_occupancy_loss: bool


@dataclass
class _Range:
    block: int
    d: int  # the defining node
    base: int
    width: int
    reads: list[tuple[int, RegisterRef]]  # (node, ref) renamed
    write: RegisterRef
    kill: int | None  # the node that ends the range (its reads are in the range), None: the block's end

    @property
    def units(self) -> frozenset[int]:
        return frozenset(range(self.base, self.base + self.width))

    @property
    def nodes(self) -> list[int]:
        return sorted({self.d, *(j for j, _ in self.reads)})


_ENCODED: dict[tuple[str, str], bool] = {}


def _encodes(arch: str, text: str) -> bool:
    key = (arch, text)
    hit = _ENCODED.get(key)
    if hit is None:
        if len(_ENCODED) > 1 << 16:
            _ENCODED.clear()
        try:
            Encoder.for_arch(arch).encode(text)
            hit = True
        except (EncodeError, ValueError, KeyError):
            hit = False
        _ENCODED[key] = hit
    return hit


def gpr_refs(refs: Sequence[RegisterRef]) -> list[RegisterRef]:
    """The general registers among ``refs`` (not RZ, uniform registers or predicates)."""
    return [r for r in refs if r.units and r.units[0] < 256 and r.name[:1] == "R" and r.name != "RZ"]


class _Enumerator:
    def __init__(
        self, k: Kernel, sem: Semantics, arch: str, lines: list[str], declared: int, rules: _Rules
    ) -> None:
        self.k, self.sem, self.arch, self.lines, self.rules = k, sem, arch, lines, rules
        self.refs = [gpr_refs(sem.register_refs(nd.text)) for nd in k.nodes]
        named: set[int] = set()
        banned: set[int] = set()
        for nd, refs in zip(k.nodes, self.refs, strict=True):
            mine = {u for r in refs for u in r.units}
            named |= mine
            eff = nd.eff
            touched = {u for u in eff.use_units | eff.def_units if u < 256}
            named |= touched
            bad = (
                eff.never
                or "gmma" in eff.flags
                or eff.pipe == "unknown"
                or eff.opcode == "?"
                or bool(_TRAILER.search(lines[nd.line - 1]))
            )
            if bad:
                banned |= mine | touched
            banned |= touched - mine  # read or written without being named
            banned |= {u for r in refs if len(r.units) > 4 for u in r.units}
        named.discard(255)
        self.named, self.banned = named, banned
        self.declared = declared
        self.regs = register_count([nd.text for nd in k.nodes], arch, declared)
        self.warps = occupancy(self.regs, rules.threads_per_block)
        self.live_out = [out & GPR_UNITS for out in liveness(k).live_out]
        self.block_of = {i: b.idx for b in k.blocks for i in range(b.start, b.end)}

    # ------------------------------------------------------------ ranges

    def moves(self) -> list[RenameMove]:
        out: list[RenameMove] = []
        for b in self.k.blocks:
            chains = None
            for i in range(b.start, b.end):
                for w in self.refs[i]:
                    if not w.written:
                        continue
                    rng = self._range(b.idx, i, w)
                    if rng is None:
                        continue
                    if chains is None:
                        chains = _BlockChains(self.k, b.start, b.end)
                    out += self._moves_of(rng, chains)
        return out

    def _range(self, block: int, d: int, w: RegisterRef) -> _Range | None:
        k = self.k
        nd = k.nodes[d]
        eff = nd.eff
        units = w.units
        width = len(units)
        base = units[0]
        if width not in (1, 2, 4) or base % width or units != tuple(range(base, base + width)):
            return None
        if eff.guard is not None or eff.guard_neg or eff.never or not set(units).isdisjoint(self.banned):
            return None
        if any(r.written and r is not w and not set(r.units).isdisjoint(units) for r in self.refs[d]):
            return None
        us = set(units)
        reads: list[tuple[int, RegisterRef]] = []
        kill = None
        end = k.blocks[block].end
        for j in range(d + 1, end):
            hit = [r for r in self.refs[j] if not us.isdisjoint(r.units)]
            if not hit:
                continue
            writes = [r for r in hit if r.written]
            for r in hit:
                if not r.written:
                    if not us.issuperset(r.units):
                        return None  # a read of the group together with other registers
                    reads.append((j, r))
            if writes:
                ej = k.nodes[j].eff
                if ej.guard is not None or ej.guard_neg or not all(us <= set(r.units) for r in writes):
                    return None  # a guarded or partial write: the old value may live on
                kill = j
                break
        if kill is None and self.live_out[block] & mask(units):
            return None
        return _Range(block, d, base, width, reads, w, kill)

    # ------------------------------------------------------------ targets

    def _free_bases(self, width: int) -> list[int]:
        out = []
        for n in range(0, NUM_GPR - width + 1, width):
            if all(u not in self.named for u in range(n, n + width)):
                out.append(n)
        return out

    def _moves_of(self, rng: _Range, chains: _BlockChains) -> list[RenameMove]:
        out: list[RenameMove] = []
        kinds = self.rules.kinds
        conflicts_before = self._conflicts(rng, None)
        edges = chains.removed(rng) if "false_dep" in kinds else 0
        want_bank = "bank" in kinds and conflicts_before > 0
        if edges <= 0 and not want_bank:
            return out
        texts = self._renamed_texts(rng, rng.base)  # the encoder must take the original forms
        if texts is None:
            return out
        fallback = None
        done_dep = edges <= 0
        done_bank = not want_bank
        for n in self._free_bases(rng.width):
            if done_dep and done_bank:
                break
            fit = self._fits(n, rng.width)
            if fit is None:
                continue
            after = self._conflicts(rng, n)
            if not done_dep:
                if after <= conflicts_before:
                    move = self._move("false_dep", rng, n, edges, conflicts_before - after, fit)
                    if move is not None:
                        out.append(move)
                        done_dep = True
                elif fallback is None:
                    fallback = (n, after, fit)
            if not done_bank and after < conflicts_before:
                move = self._move("bank", rng, n, edges, conflicts_before - after, fit)
                if move is not None:
                    out.append(move)
                    done_bank = True
        if not done_dep and fallback is not None:
            n, after, fit = fallback
            move = self._move("false_dep", rng, n, edges, conflicts_before - after, fit)
            if move is not None:
                out.append(move)
        return out

    def _fits(self, n: int, width: int) -> tuple[int, int] | None:
        """(registers, warps) after renaming to base ``n``, or None where the count or occupancy forbids."""
        regs = max(self.regs, n + width + RESERVED_REGISTERS)  # the group's top register + 1 + reserved
        if regs > NUM_GPR:
            return None
        warps = occupancy(regs, self.rules.threads_per_block)
        if warps < self.warps and not self.rules.allow_occupancy_loss:
            return None
        return regs, warps

    def _conflicts(self, rng: _Range, n: int | None) -> int:
        """Same-bank pairs of distinct 32-bit sources without .reuse over the range's instructions, the
        range renamed to base ``n`` (None: as it is)."""
        renamed = {(j, r.start) for j, r in rng.reads}
        total = 0
        for j in rng.nodes:
            regs = set()
            for r in self.refs[j]:
                if r.written or len(r.units) != 1 or not self._plain_src(j, r):
                    continue
                u = r.units[0]
                if n is not None and (j, r.start) in renamed:
                    u = n + (u - rng.base)
                regs.add(u)
            banks = [sum(1 for u in regs if u % BANKS == b) for b in range(BANKS)]
            total += sum(c * (c - 1) // 2 for c in banks)
        return total

    def _plain_src(self, j: int, r: RegisterRef) -> bool:
        for op in self.k.nodes[j].eff.srcs:
            if op.col == r.start and op.role == "src" and op.slot >= 0:
                return not op.reuse
        return False

    # ------------------------------------------------------------ the edit

    def _edits(self, rng: _Range, n: int) -> tuple[list[tuple[int, int, str, str]], int] | None:
        k = self.k
        edits = []
        dropped = 0
        new_of = {(j, r.start): f"R{n + (r.units[0] - rng.base)}" for j, r in rng.reads}
        for j, r in [(rng.d, rng.write), *rng.reads]:
            nd = k.nodes[j]
            col = nd.text_col - 1 + r.start
            line = self.lines[nd.line - 1]
            m = _TOKEN.match(line, col)
            if m is None or line[col : col + len(r.name)] != r.name:
                return None
            new = f"R{n + (r.units[0] - rng.base)}"
            token, suffix = m.group(0), m.group(1)
            if ".reuse" in suffix and not self._reuse_holds(j, r, new_of):
                dropped += 1
                edits.append((nd.line, col, token, new + token[len(r.name) :].replace(".reuse", "", 1)))
            else:
                edits.append((nd.line, col, r.name, new))
        return edits, dropped

    def _reuse_holds(self, j: int, r: RegisterRef, new_of: dict[tuple[int, int], str]) -> bool:
        """Whether the next instruction reads the same renamed register in the same operand slot."""
        slot = next((op.slot for op in self.k.nodes[j].eff.srcs if op.col == r.start), -1)
        nxt = j + 1
        if slot < 0 or self.block_of.get(nxt) != self.block_of[j]:
            return False
        mine = new_of.get((j, r.start))
        for op in self.k.nodes[nxt].eff.srcs:
            if op.slot == slot and op.role == "src" and new_of.get((nxt, op.col)) == mine:
                return True
        return False

    def _renamed_texts(self, rng: _Range, n: int) -> dict[int, str] | None:
        """node -> its text with the range renamed to ``n``; None where the encoder refuses one."""
        made = self._edits(rng, n)
        if made is None:
            return None
        edits, _ = made
        out: dict[int, str] = {}
        by_line = {self.k.nodes[j].line: j for j in rng.nodes}
        for line, col, old, new in sorted(edits, key=lambda e: (e[0], -e[1])):
            j = by_line[line]
            nd = self.k.nodes[j]
            s = out.get(j, nd.text)
            c = col - (nd.text_col - 1)
            out[j] = s[:c] + new + s[c + len(old) :]
        for t in out.values():
            if not _encodes(self.arch, t):
                return None
        return out

    def _move(
        self, kind: str, rng: _Range, n: int, edges: int, conflicts: int, fit: tuple[int, int]
    ) -> RenameMove | None:
        if self._renamed_texts(rng, n) is None:
            return None
        made = self._edits(rng, n)
        if made is None:
            return None
        edits, dropped = made
        k = self.k
        d = k.nodes[rng.d]
        uses = tuple(sorted({k.nodes[j].line for j, _ in rng.reads}))
        old, new = f"R{rng.base}", f"R{n}"
        regs, warps = fit
        why = (
            f"removes {edges} WAR/WAW dependence{'s' if edges != 1 else ''}"
            if kind == "false_dep"
            else f"removes {conflicts} same-bank source pair{'s' if conflicts != 1 else ''}"
        )
        what = (
            f"rename {old} -> {new} ({d.eff.opcode} line {d.line}, {len(uses)} use{'s' * (len(uses) != 1)})"
        )
        if regs != self.regs:
            what += f", registers {self.regs} -> {regs}"
        if warps != self.warps:
            what += f", warps/SM {self.warps} -> {warps}"
        if dropped:
            what += f", drops {dropped} .reuse"
        return RenameMove(
            kind,
            k.name,
            d.line,
            uses,
            old,
            new,
            rng.width,
            tuple(edits),
            edges,
            conflicts,
            self.regs,
            regs,
            self.warps,
            warps,
            dropped,
            f"{what}: {why}",
        )


class _BlockChains:
    """The block's WAR/WAW pairs as :func:`sass_lsp.schedule.deps.block_deps` forms them (chains per
    register unit), with how many units give each pair, to count what a rename removes."""

    def __init__(self, k: Kernel, start: int, end: int) -> None:
        self.events: dict[int, list[tuple[int, bool, bool]]] = {}  # unit -> (node, reads, writes)
        for j in range(start, end):
            eff = k.nodes[j].eff
            if eff.never:
                continue
            for u in eff.use_units | eff.def_units:
                self.events.setdefault(u, []).append((j, u in eff.use_units, u in eff.def_units))
        self.count: dict[tuple[int, int], int] = {}
        for evs in self.events.values():
            for p in _chain(evs):
                self.count[p] = self.count.get(p, 0) + 1

    def removed(self, rng: _Range) -> int:
        """WAR/WAW pairs the rename removes, less the ones it adds (the new register's own chain has none:
        the range's reads follow its one write)."""
        reads = {j for j, _ in rng.reads}
        delta: dict[tuple[int, int], int] = {}
        for u in rng.units:
            evs = self.events.get(u, [])
            for p in _chain(evs):
                delta[p] = delta.get(p, 0) - 1
            rest = []
            for j, r, w in evs:
                r2 = r and j not in reads
                w2 = w and j != rng.d
                if r2 or w2:
                    rest.append((j, r2, w2))
            for p in _chain(rest):
                delta[p] = delta.get(p, 0) + 1
        net = 0
        for p, dv in delta.items():
            before = self.count.get(p, 0)
            after = before + dv
            net += (before > 0) - (after > 0)
        return net


def _chain(events: list[tuple[int, bool, bool]]) -> set[tuple[int, int]]:
    """WAR/WAW pairs of one unit: a write depends on the last write and on the reads since."""
    out: set[tuple[int, int]] = set()
    last = None
    readers: list[int] = []
    for j, r, w in events:
        if w:
            if last is not None:
                out.add((last, j))
            out.update((x, j) for x in readers)
            readers = []
            last = j
        if r and not w:
            readers.append(j)
    return out


# ---------------------------------------------------------------- chains and the search's neighbour


def _enumerator(
    arch: str | None, kinds: Sequence[str], threads_per_block: int | None, allow_occupancy_loss: bool
) -> Callable[[str], list[RenameMove]]:
    return functools.partial(
        rename_moves,
        arch=arch,
        kinds=kinds,
        threads_per_block=threads_per_block,
        allow_occupancy_loss=allow_occupancy_loss,
    )


def random_moves(
    text: str,
    n: int,
    rng: random.Random,
    *,
    arch: str | None = None,
    kinds: Sequence[str] = KINDS,
    threads_per_block: int | None = None,
    allow_occupancy_loss: bool = False,
) -> tuple[str, list[RenameMove]]:
    moves = _enumerator(arch, kinds, threads_per_block, allow_occupancy_loss)
    return random_chain(text, n, rng, moves, apply)


def neighbour(
    original: str,
    arch: str | None = None,
    *,
    kinds: Sequence[str] = KINDS,
    threads_per_block: int | None = None,
    allow_occupancy_loss: bool = False,
    source: str = "rename",
    cache: int = 8,
) -> Callable[[str, random.Random], object]:
    """``propose(text, rng)`` for :func:`sass_lsp.schedule.search.annealing` over renames: one rename away
    from ``text``. The move lists of the last ``cache`` texts are kept (a walk proposes from one text many
    times). A text with no move left gives None."""
    moves = _enumerator(arch, kinds, threads_per_block, allow_occupancy_loss)
    return proposer(moves, apply, source, cache=cache)
