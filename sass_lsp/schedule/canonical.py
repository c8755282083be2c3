"""Feature: schedules of the original. A candidate made from an edited schedule, checked and repaired as an
order of the original's blocks.

The dependence model and the repair are relative to ptxas's order: its waits, distances and ``.reuse`` are
the evidence for what the hardware needs (see :mod:`.deps`). A game built from an already edited text takes
that text for ptxas's, so a chain of moves (the beam expanding a measured schedule, annealing stepping from
its current one) loses the evidence step by step: on the H200 an annealing chain moved `IADD3 R17` above
the `STS` whose wait had kept it after `LDG R16, [R16.64]` in ptxas's order, each step legal against its
parent, and the kernel faulted (sgemm_tiled, ``reorder_eval_h200_run18.log`` in
``benchmarks/results/reorder_eval_h200.tar.xz``).

:class:`OriginalOrders` maps a candidate's text back to a node order per block of the original (its
instruction lines hold the original's instructions, each block in its own line range, ``.reuse`` possibly
dropped); keeps it only if every dependence edge of the original keeps its direction (what any sequence of
legal moves from ptxas's order keeps, and all it keeps) and fixed nodes, glued runs and the rest stay as
they were; and writes it with the control codes and texts the repair gives that order against the original.
The beam passes every candidate of an edited parent through it (annealing needs not: one game of the
original plays its whole chain, :func:`sass_lsp.schedule.search.neighbour`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from sass_lsp.analysis.program import Kernel
from sass_lsp.isa.semantics import load_semantics
from sass_lsp.schedule.deps import BlockDeps, block_deps
from sass_lsp.schedule.game import kernel_of_text
from sass_lsp.schedule.repair import block_edit, repair_block, repaired_texts
from sass_lsp.schedule.search import Candidate, apply_edits

_REUSE = re.compile(r"\.reuse\b")
_ADDRESS = re.compile(r"/\*[0-9a-fA-F]+\*/")


def instruction_identity(text: str) -> str:
    """An instruction's text without ``.reuse`` (the repair drops it), spacing or the final ``;``."""
    return " ".join(_REUSE.sub("", text).strip().rstrip(";").split())


class OriginalOrders:
    def __init__(self, original: str, arch: str, kernel: str | None = None) -> None:
        self.original = original
        self.lines = original.splitlines()
        self.sem = load_semantics(arch)
        self.k: Kernel = kernel_of_text(original, self.sem, kernel)  # the kernel the games play
        self._slots: dict[int, dict[str, list[int]]] = {}  # block -> instruction identity -> its nodes

    def orders(self, text: str) -> dict[int, tuple[int, ...]] | None:
        """The original's blocks whose order ``text`` changes, as node orders; None when ``text`` is not a
        reordering of the original's blocks (another instruction, a line moved across blocks)."""
        lines = text.splitlines()
        if len(lines) != len(self.lines):
            return None
        out: dict[int, tuple[int, ...]] = {}
        nodes = self.k.nodes
        for b in self.k.blocks:
            slots = nodes[b.start : b.end]
            if all(lines[nd.line - 1] == self.lines[nd.line - 1] for nd in slots):
                continue
            free = {ident: list(idxs) for ident, idxs in self._identities(b.idx).items()}
            order = []
            for nd in slots:
                got = _instruction_text(lines[nd.line - 1])
                hit = free.get(instruction_identity(got)) if got is not None else None
                if not hit:
                    return None
                order.append(hit.pop())
            if order != list(range(b.start, b.end)):
                out[b.idx] = tuple(order)
        return out

    def _identities(self, block: int) -> dict[str, list[int]]:
        """The block's nodes per instruction identity, last first (popped from the end: duplicates keep
        their ptxas order); made once per block."""
        got = self._slots.get(block)
        if got is None:
            b = self.k.blocks[block]
            got = self._slots[block] = {}
            for nd in reversed(self.k.nodes[b.start : b.end]):
                got.setdefault(instruction_identity(nd.text), []).append(nd.idx)
        return got

    def canonical(self, cand: Candidate) -> Candidate | None:
        """``cand`` as a schedule of the original (control codes and texts repaired against it), or None
        when no sequence of legal moves from ptxas's order reaches its order."""
        given = cand.text  # unpacked once
        orders = self.orders(given)
        if orders is None:
            return None
        edits = []
        for block, order in sorted(orders.items()):
            if not reachable(order, block_deps(self.k, block, self.sem)):
                return None
            ctrls = repair_block(self.k, self.sem, block, order)
            texts = repaired_texts(self.k, block, order, ctrls)
            edits.append(block_edit(self.lines, self.k, block, order, ctrls, texts))
        text = apply_edits(self.original, edits)
        return cand if text == given else Candidate(text, cand.source, cand.moves, cand.predicted)


def reachable(order: Sequence[int], deps: BlockDeps) -> bool:
    """Whether legal moves from ptxas's order reach ``order``: every edge keeps its direction, fixed nodes
    keep their order among themselves, and a glued node keeps the instruction before it."""
    pos = {x: p for p, x in enumerate(order)}
    if any(pos[i] > pos[j] for i, j in deps.edges):
        return False
    fixed = sorted(deps.fixed)
    if any(pos[a] > pos[b] for a, b in zip(fixed, fixed[1:], strict=False)):
        return False
    for g in deps.glued:
        p = pos[g]
        before = order[p - 1] if p > 0 else None
        if before != (g - 1 if g > deps.start else None):
            return False
    return True


def _instruction_text(line: str) -> str | None:
    """The instruction of a ``.cuasm`` instruction line (after the control field and address), or None."""
    s = line.strip()
    if not s.startswith("["):
        return None
    body = s[s.find("]") + 1 :]
    return _ADDRESS.sub("", body).split("//")[0]
