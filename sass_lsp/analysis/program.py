"""Kernels as analysable programs: decoded control codes, register effects, basic blocks and the CFG.

Architecture Invariant: reads a :class:`~sass_lsp.model.Module`, never mutates it, does no IO.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from sass_lsp.isa.semantics import Effects, Semantics
from sass_lsp.model import Instruction, Label, Module

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


@dataclass(frozen=True)
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


@dataclass
class Block:
    idx: int
    start: int  # first node index
    end: int  # one past the last node index
    succs: list[int] = field(default_factory=list)
    preds: list[int] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)


@dataclass
class Kernel:
    name: str
    section_line: int
    nodes: list[Node]
    blocks: list[Block]
    label_node: dict[str, int]  # label -> node index it precedes
    unresolved: list[tuple[int, str]] = field(default_factory=list)  # (node idx, why) for CFG gaps
    bad_ctrl: list[Instruction] = field(default_factory=list)


def kernels_of(module: Module, sem: Semantics) -> list[Kernel]:
    out = []
    for sec in module.sections:
        if sec.name.startswith(".text."):
            out.append(build_kernel(sec.name[len(".text.") :], sec.line, sec.items, sem))
    return out


def build_kernel(name: str, line: int, items: list, sem: Semantics) -> Kernel:
    nodes: list[Node] = []
    label_node: dict[str, int] = {}
    bad: list[Instruction] = []
    for item in items:
        if isinstance(item, Label):
            label_node[item.name] = len(nodes)
        elif isinstance(item, Instruction):
            ctrl = decode_ctrl(item.ctrl)
            if ctrl is None:
                bad.append(item)
                continue
            text = item.text
            nodes.append(
                Node(
                    len(nodes),
                    item.line,
                    item.ctrl_col,
                    item.text_col,
                    text,
                    ctrl,
                    sem.effects(text),
                    item.text_col + len(text.rstrip()),
                )
            )
    kernel = Kernel(name, line, nodes, [], label_node, bad_ctrl=bad)
    _build_cfg(kernel)
    return kernel


def _build_cfg(k: Kernel) -> None:
    nodes = k.nodes
    n = len(nodes)
    leaders = {0} if n else set()
    leaders.update(i for i in k.label_node.values() if i < n)
    for nd in nodes:
        f = nd.eff.flags
        if f & {"branch", "exit", "ret", "indirect"} and nd.idx + 1 < n:
            leaders.add(nd.idx + 1)
    starts = sorted(leaders)
    block_of = [0] * n
    for bi, s in enumerate(starts):
        e = starts[bi + 1] if bi + 1 < len(starts) else n
        k.blocks.append(Block(bi, s, e))
        for i in range(s, e):
            block_of[i] = bi
    labels_at: dict[int, list[str]] = {}
    for lab, i in k.label_node.items():
        labels_at.setdefault(i, []).append(lab)
    for b in k.blocks:
        b.labels = labels_at.get(b.start, [])
        last = nodes[b.end - 1]
        eff = last.eff
        conditional = eff.guard is not None or (eff.guard_neg and not eff.never)
        succ: list[int] = []
        falls = True
        if eff.never:
            pass
        elif "exit" in eff.flags or "ret" in eff.flags:
            falls = conditional
        elif "indirect" in eff.flags:
            falls = conditional
            if not eff.indirect:
                k.unresolved.append((last.idx, "indirect branch without BRANCH_TARGETS annotation"))
            for t in eff.indirect:
                if t in k.label_node and k.label_node[t] < n:
                    succ.append(block_of[k.label_node[t]])
        elif "branch" in eff.flags:
            div = {"DIV", "CONV", "ANY"} & set(eff.modifiers)
            falls = conditional or bool(div)
            for t in eff.targets:
                if t in k.label_node and k.label_node[t] < n:
                    succ.append(block_of[k.label_node[t]])
                else:
                    k.unresolved.append((last.idx, f"branch target {t} not found"))
        if falls and b.end < n:
            succ.append(block_of[b.end])
        b.succs = list(dict.fromkeys(succ))
    for b in k.blocks:
        for s in b.succs:
            k.blocks[s].preds.append(b.idx)
