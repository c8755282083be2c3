"""Instruction shapes: an instruction text with its numbers cut out, to compile encodings per shape.

:func:`split_shape` cuts a text into literal pieces and *slots*: register numbers (``R12`` -> ``12``, also
``Z`` of ``RZ`` and ``T`` of ``PT``), the digits of hex numbers, decimal numbers and branch target names.
Each kind of slot is one small language, and the kind is told by the literal before it (``R``, ``UR``,
``0x``, ``\\`(``, anything else for decimals). Two texts with the same literal pieces therefore differ only
inside slots, and :func:`parse_instruction` and the feature model decide nothing on a slot's content
beyond its value: the operand kinds, tokens and form keys are those of the shape, and only value bits
change. :func:`slot_roles` says which value-bit field each slot fills, from the parse of one text of the
shape; the encoder checks the compiled result against the full path on that text.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .syntax import REG_ZERO, Instruction, Operand

# Every slot but a branch target starts with one of [0-9a-fA-FTZ]; with the lookbehind before it, the scan
# skips other positions cheaply. A register name follows no word character, '.', '$', '@' or '@!' (guards
# are their own slot).
_SLOT = re.compile(
    r"(?<![ACDEFGHIJKLMNOQSTUVWXYZa-wyz0-9_.$])"  # a slot follows R, P, B, x, ( or no word character
    r"((?=[0-9a-fA-FTZ])(?:"
    r"(?:(?<=[^\w.$@][RPB])|(?<=[^\w.$@](?:UR|UP|SB)))(?<!@!P)(?<!@!UP)"
    r"(?:(?<=R)(?:\d+|Z)|(?<=P)(?:\d+|T)|(?<=B)\d+)(?![\w$])"  # register number (RZ, URZ, PT, UPT too)
    r"|(?<=^@P)[0-9T](?=\s)|(?<=^@!P)[0-9T](?=\s)|(?<=^@UP)[0-9T](?=\s)|(?<=^@!UP)[0-9T](?=\s)"  # guard
    r"|(?<=0x)(?<![\w.$]0x)[0-9a-fA-F]+(?![\w.@$])"  # hex digits
    r"|(?<![\w.$])\d+(?:\.\d*)?(?:[eE][+-]?\d+)?(?![\w.@$]))"  # decimal (float immediates)
    r"|(?<=`\()[\w.$]+(?=\)))"  # branch target name in `(...)
)


def split_shape(text: str, memo: dict[str, _OperandSplit] | None = None) -> list[str]:
    """``[literal, slot, literal, slot, ..., literal]``; the literals (``[::2]``) are the shape.

    The scan runs per operand; ``memo`` (operand text -> its split) saves rescanning operands, which
    kernels repeat far more than whole texts. That gives the whole text's split: no slot spans the ``", "``
    between operands, and no look-around of ``_SLOT`` reaches past the space before an operand or sees
    more than "no word character" after it. The opcode holds no slot (nothing is one after a word character
    or '.'); a guard is one."""
    head, sep, rest = text.partition(" ")
    if not sep:
        return _SLOT.split(text)
    if head[:1] == "@":
        opcode, sep, rest = rest.partition(" ")
        parts = _SLOT.split(head + " ")  # the guard's slot needs the space after it
        parts[-1] += opcode
        if not sep:
            return parts
    else:
        parts = [head]
    if memo is None:
        memo = {}
    elif len(memo) >= _MAX_OPERANDS:
        memo.clear()
    last = parts.pop()  # the literal that the next operand's first literal extends
    lead = 0  # the first operand follows a space, the others ", "
    for op in rest.split(", "):
        entry = memo.get(op)
        if entry is None:
            pieces = _SLOT.split(" " + op)
            entry = memo[op] = ((pieces[0], "," + pieces[0]), pieces[1:-1], pieces[-1])
        first, middle, end = entry
        if middle:
            parts.append(last + first[lead])
            parts += middle
            last = end
        else:
            last += first[lead]
        lead = 1
    parts.append(last)
    return parts


_MAX_OPERANDS = 1 << 16  # operand splits remembered before a memo starts over
# an operand's split: (its first literal after " " and after ", ", the slots and literals between, the last)
_OperandSplit = tuple[tuple[str, str], list[str], str]
_JOIN = "\x1f"  # joins a piece's literals into one key (no instruction text holds it)


def head_shape(head: str) -> tuple[str, list[str]]:
    """(literal key, slots) of the text before the first space: an opcode (no slot) or a guard."""
    if head[:1] != "@":
        return head, []
    parts = _SLOT.split(head + " ")  # the guard's slot needs the space after it
    return _JOIN.join(parts[::2]), parts[1::2]


def chunk_shape(chunk: str) -> tuple[str, list[str]]:
    """(literal key, slots) of one piece of the text after the first space, cut at ``", "``; pieces with
    equal keys differ only inside slots, and a text's pieces' slots, in order, are its slots (the split
    per operand of :func:`split_shape`)."""
    parts = _SLOT.split(" " + chunk)
    return _JOIN.join(parts[::2]), parts[1::2]


class Role(NamedTuple):
    """What one slot holds: ``kind`` is reg, guard, hex, float or label; ``prefix`` + bit index names the
    value-bit features (as :func:`instruction_features` names them) and ``width`` is the field's width."""

    kind: str
    prefix: str
    width: int
    zero: int = 0  # reg/guard: the value of Z or T (RZ=255, URZ=63, PT=7)
    negative: bool = False  # hex/float: the literal carries a '-'
    operand_idx: int = 0


def slot_roles(
    parts: list[str], ins: Instruction, ur_zero: int = REG_ZERO["UR"]
) -> tuple[int | None, list[Role]] | None:
    """The guard value when it is literal text (None when a slot holds it) and the role of every slot of
    ``parts`` (``split_shape(ins.text)``); None when a slot is not one this module compiles (set elements,
    relocation addends, numbers outside operands). ``ur_zero``: URZ's field value on the arch."""
    starts, pos = [], 0
    for i, piece in enumerate(parts):
        if i % 2:
            starts.append(pos)
        pos += len(piece)
    slots = parts[1::2]
    roles: list[Role] = []
    guard: int | None = 7 if ins.guard is None else ins.guard.index  # no guard means @PT
    if ins.guard is not None and starts and starts[0] < ins.opcode_col:
        roles.append(Role("guard", "g.r", 3, 7))
        guard = None
    cursor = len(roles)
    for op_idx, op in enumerate(ins.operands):
        end, first = op.col + len(op.text), cursor
        while cursor < len(slots) and starts[cursor] < end:
            if starts[cursor] < op.col:
                return None
            cursor += 1
        wanted = _operand_roles(op_idx, op, parts, list(range(first, cursor)), {**REG_ZERO, "UR": ur_zero})
        if wanted is None:
            return None
        roles += wanted
    if cursor != len(slots):
        return None
    return guard, roles


def _kind_of(parts: list[str], slot_idx: int) -> str:
    """Slot kind from the literal before it: 'reg', 'hex', 'label' or 'dec'."""
    before = parts[2 * slot_idx]
    if before.endswith("`("):
        return "label"
    if before.endswith("0x"):
        return "hex"
    if before[-1:].isalpha():
        return "reg"
    return "dec"


def _operand_roles(
    op_idx: int, op: Operand, parts: list[str], mine: list[int], zeros: dict[str, int]
) -> list[Role] | None:
    """Roles of the slots ``mine`` inside operand ``op``, in the order the feature model lists their bits."""
    p = f"o{op_idx}"
    want: list[tuple[str, str, int, int]] = []  # (slot kind, prefix, width, zero) in text order
    if op.kind == "reg" and op.reg is not None:
        want.append(("reg", f"{p}.r", 8, zeros.get(op.reg.kind, 0)))
    elif op.kind == "imm":
        want.append(("hex", f"{p}.i", 64, 0))
    elif op.kind == "fimm" and not isinstance(op.fvalue, str):
        want.append(("dec", f"{p}.i", 64, 0))
    elif op.kind == "label":
        want.append(("label", f"{p}.i", 64, 0))
    elif op.kind in ("cbank", "addr"):
        if op.value is not None:
            want.append(("hex", f"{p}.k", 8, 0))
        if op.base is not None:
            want.append(("reg", f"{p}.b", 8, zeros.get(op.base.kind, 0)))
        for j, part in enumerate(op.parts):
            if part.reg is not None:
                want.append(("reg", f"{p}.p{j}.", 8, zeros.get(part.reg.kind, 0)))
            else:
                want.append(("hex", f"{p}.off", 64, 0))
    elif op.kind not in ("sreg", "name", "reloc", "fimm"):
        return None  # a set: several decimals make one mask
    if [kind for kind, *_ in want] != [_kind_of(parts, s) for s in mine]:
        return None  # e.g. a relocation with an addend
    roles = []
    for slot_idx, (kind, prefix, width, zero) in zip(mine, want, strict=True):
        if kind == "dec":
            roles.append(Role("float", prefix, width, negative=op.text.startswith("-"), operand_idx=op_idx))
        else:
            negative = kind == "hex" and parts[2 * slot_idx].endswith("-0x")
            roles.append(Role(kind, prefix, width, zero, negative, op_idx))
    return roles
