"""Feature: instruction syntax. Parse one SASS instruction as nvdisasm prints it into typed operands.

Input is the instruction text only (no control field, no ``/*addr*/``); a trailing `` ;`` and nvdisasm
annotations ``(*"..."*)`` are accepted. Parsing is purely syntactic: it does not know which opcodes
exist (the encoder does). Register numbering follows the hardware: RZ=255, URZ=63, PT/UPT=7.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

REG_ZERO = {"R": 255, "UR": 63, "P": 7, "UP": 7}


class InstructionSyntaxError(SyntaxError):
    """Malformed instruction text; ``col`` is a 0-based offset in the parsed text."""

    def __init__(self, message: str, col: int = 0, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.col = col
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} (col {self.col})" + (f"; {self.hint}" if self.hint else "")


@dataclass(frozen=True)
class Reg:
    """A register-like name. ``kind`` is R, UR, P, UP, B (convergence barrier) or SB (scoreboard)."""

    kind: str
    index: int

    @property
    def name(self) -> str:
        if self.index == REG_ZERO.get(self.kind):
            return {"R": "RZ", "UR": "URZ", "P": "PT", "UP": "UPT"}[self.kind]
        return f"{self.kind}{self.index}"


@dataclass(frozen=True)
class AddrPart:
    """One ``+``-separated component of ``[...]``: a register (suffixes like .64/.X4/.U32) or an offset."""

    reg: Reg | None = None
    suffixes: tuple[str, ...] = ()
    value: int = 0


@dataclass(frozen=True)
class Reloc:
    """A relocated immediate such as ``32@lo(sym)`` or ``32@lo((k + .L_x_0@srel))``."""

    kind: str  # '32@lo', '32@hi', ...
    symbol: str
    addend: int = 0
    srel_label: str | None = None  # for (sym + label@srel)


@dataclass(frozen=True)
class Operand:
    """One operand. ``kind``: reg, sreg, name, imm, fimm, cbank, addr, label, reloc, set."""

    kind: str
    text: str
    col: int
    neg: bool = False  # '-'
    abs: bool = False  # '|..|'
    not_: bool = False  # '!'
    inv: bool = False  # '~'
    reg: Reg | None = None
    suffixes: tuple[str, ...] = ()  # operand suffixes except .reuse, e.g. ('64',) or ('H0_H0',)
    reuse: bool = False
    value: int | None = None  # imm value; set mask; cbank bank (when constant)
    fvalue: float | str | None = None  # fimm value, or 'INF'/'QNAN'/... with sign in ``neg``
    fbits: int | None = None  # fimm written as f32 bits (PTX's and CuAssembler's ``0f7fc00000``)
    name: str | None = None  # sreg / name / label / space prefix ('desc', 'gdesc', 'c', 'cx')
    base: Reg | None = None  # desc[UR] register or cx[UR] bank register
    parts: tuple[AddrPart, ...] = ()  # address / cbank offset components
    reloc: Reloc | None = None

    def registers(self) -> list[Reg]:
        """Registers this operand names (the base register of a .64 address counts once)."""
        regs = [r for r in (self.reg, self.base) if r is not None]
        regs += [p.reg for p in self.parts if p.reg is not None]
        return regs


@dataclass(frozen=True)
class Instruction:
    opcode: str
    modifiers: tuple[str, ...] = ()
    operands: tuple[Operand, ...] = ()
    guard: Reg | None = None
    guard_neg: bool = False
    text: str = ""
    opcode_col: int = 0

    @property
    def full_opcode(self) -> str:
        return ".".join((self.opcode, *self.modifiers))


_GUARD = re.compile(r"@(!?)(U?P)(\d|T)\s+")
_OPCODE = re.compile(r"[A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*")
_REG = re.compile(r"(UR|UP|SB|R|P|B)(\d+|Z|T)$")
_HEX = re.compile(r"[+-]?0x[0-9a-fA-F]+$")
# f32 bits spelled out, as PTX and CuAssembler write them: the one float literal that states a NaN's payload
_F32_BITS = re.compile(r"0[fF]([0-9a-fA-F]{8})$")
_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|INF|QNAN|SNAN|NAN)$")
_RELOC = re.compile(r"(\d+@\w+)\((.*)\)$")
_ANNOT = re.compile(r"\(\*.*?\*\)")
_IDENT = re.compile(r"[A-Za-z_$.][\w$.@]*$")
_DIM = re.compile(r"\d+D$")  # texture dimensions: TEX ... 2D, SULD.D.BA.1D


def parse_reg(text: str) -> Reg | None:
    m = _REG.match(text)
    if not m:
        return None
    kind, idx = m.groups()
    if idx == "Z":
        return Reg(kind, REG_ZERO[kind]) if kind in ("R", "UR") else None
    if idx == "T":
        return Reg(kind, 7) if kind in ("P", "UP") else None
    return Reg(kind, int(idx))


def parse_int(text: str) -> int:
    neg = text.startswith("-")
    value = int(text.lstrip("+-"), 16)
    return -value if neg else value


def _split_top(text: str, sep: str, base: int) -> list[tuple[str, int]]:
    """Split on ``sep`` outside brackets / braces / parens / backquoted labels; keep column offsets."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "[({":
            depth += 1
        elif ch in "])}":
            depth -= 1
        elif ch == sep and depth == 0:
            out.append((text[start:i], base + start))
            start = i + 1
    out.append((text[start:], base + start))
    return out


def _strip(piece: str, col: int) -> tuple[str, int]:
    lead = len(piece) - len(piece.lstrip())
    return piece.strip(), col + lead


def parse_instruction(text: str) -> Instruction:
    body = _ANNOT.sub(lambda m: " " * len(m.group()), text.split("//", 1)[0]).rstrip()
    if body.endswith(";"):
        body = body[:-1].rstrip()
    pos = len(body) - len(body.lstrip())
    guard, guard_neg = None, False
    m = _GUARD.match(body, pos)
    if m:
        guard_neg = m.group(1) == "!"
        guard = Reg(m.group(2), 7 if m.group(3) == "T" else int(m.group(3)))
        pos = m.end()
    elif body.startswith("@", pos):
        raise InstructionSyntaxError("bad predicate guard", pos, "use @P0..@P6, @PT, @!P0, @UP0, ...")
    m = _OPCODE.match(body, pos)
    if not m:
        raise InstructionSyntaxError(
            "expected an opcode", pos, "opcodes are upper case, e.g. IADD3, LDG.E.128"
        )
    opcode_col = pos
    opcode, *mods = m.group().split(".")
    pos = m.end()
    rest = body[pos:]
    if rest and not rest[0].isspace() and rest[0] != "`":
        raise InstructionSyntaxError(
            f"unexpected {rest[0]!r} after opcode", pos, "separate operands by a space"
        )
    operands: list[Operand] = []
    if rest.strip():
        for piece, col in _split_top(rest, ",", pos):
            piece, col = _strip(piece, col)
            if not piece:
                raise InstructionSyntaxError("empty operand", col, "remove the extra ','")
            # `CALL.REL.NOINC R6 `(f)`, `BRX R6 -0x1b0`: a register and a target without a comma.
            head, _, tail = piece.partition(" ")
            if tail.strip() and parse_reg(head.split(".")[0]) is not None:
                operands.append(parse_operand(head, col))
                tail_s, tail_col = _strip(tail, col + len(head) + 1)
                operands.append(parse_operand(tail_s, tail_col))
            else:
                operands.append(parse_operand(piece, col))
    return Instruction(opcode, tuple(mods), tuple(operands), guard, guard_neg, text, opcode_col)


def _parse_addr_parts(inner: str, col: int) -> tuple[AddrPart, ...]:
    parts: list[AddrPart] = []
    # '+-0x10' means a negative offset; split on '+' at top level and keep the sign on the number.
    for piece, pcol in _split_top(inner, "+", col):
        piece, pcol = _strip(piece, pcol)
        if not piece:
            if parts or inner.strip().startswith("+"):
                raise InstructionSyntaxError("empty address component", pcol, "e.g. [R2.64+0x10]")
            continue
        if _HEX.match(piece):
            parts.append(AddrPart(value=parse_int(piece)))
            continue
        core, *sufs = piece.split(".")
        reg = parse_reg(core)
        if reg is None:
            raise InstructionSyntaxError(
                f"bad address component {piece!r}", pcol, "use Rn, URn or a 0x offset"
            )
        parts.append(AddrPart(reg=reg, suffixes=tuple(sufs)))
    return tuple(parts)


def _bracket_end(text: str, start: int, col: int) -> int:
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "[":
            depth += 1
        elif text[i] == "]":
            depth -= 1
            if depth == 0:
                return i
    raise InstructionSyntaxError("unclosed '['", col + start, "add ']'")


def _parse_reloc(m: re.Match[str], text: str, col: int) -> Operand:
    kind, inner = m.group(1), m.group(2).strip()
    while inner.startswith("(") and inner.endswith(")"):
        inner = inner[1:-1].strip()
    symbol, addend, srel = inner, 0, None
    if "+" in inner:
        a, b = (s.strip() for s in inner.split("+", 1))
        symbol = a
        if b.endswith("@srel"):
            srel = b[: -len("@srel")]
        elif _HEX.match(b):
            addend = parse_int(b)
        else:
            raise InstructionSyntaxError(
                f"bad relocation expression {inner!r}", col, "e.g. 32@lo(sym) or 32@lo((f + .L_x_0@srel))"
            )
    return Operand("reloc", text, col, reloc=Reloc(kind, symbol, addend, srel))


def parse_operand(text: str, col: int) -> Operand:
    orig = text
    neg = not_ = inv = absv = False
    fm = _FLOAT.match(text)
    if _HEX.match(text):
        return Operand("imm", orig, col, value=parse_int(text))
    if bits := _F32_BITS.match(text):
        fbits = int(bits.group(1), 16)
        return Operand(
            "fimm", orig, col, fvalue=struct.unpack("<f", fbits.to_bytes(4, "little"))[0], fbits=fbits
        )
    if fm and not text.lstrip("+-").isalpha() or text.lstrip("+-") in ("INF", "QNAN", "SNAN", "NAN"):
        mag = text.lstrip("+-")
        fneg = text.startswith("-")
        if mag.isalpha():
            return Operand("fimm", orig, col, neg=fneg, fvalue=mag)
        return Operand("fimm", orig, col, fvalue=float(text))
    if text.startswith("`(") and text.endswith(")"):
        return Operand("label", orig, col, name=text[2:-1])
    m = _RELOC.match(text)
    if m:
        return _parse_reloc(m, orig, col)
    if text.startswith("{") and text.endswith("}"):
        mask = 0
        for item, icol in _split_top(text[1:-1], ",", col + 1):
            item, icol = _strip(item, icol)
            if not item.isdigit():
                raise InstructionSyntaxError(f"bad set element {item!r}", icol, "e.g. {4,3,2,1}")
            mask |= 1 << int(item)
        return Operand("set", orig, col, value=mask)
    # prefix operators
    while text[:1] in ("-", "!", "~"):
        if text[0] == "-":
            neg = True
        elif text[0] == "!":
            not_ = True
        else:
            inv = True
        text = text[1:]
    suffix_tail = ""
    if text.startswith("|"):
        end = text.find("|", 1)
        if end < 0:
            raise InstructionSyntaxError("unclosed '|'", col + len(orig) - len(text), "write |R3|")
        absv = True
        suffix_tail = text[end + 1 :]
        text = text[1:end] + suffix_tail
    flags = dict(neg=neg, not_=not_, inv=inv, abs=absv)
    # constant bank / memory: c[..][..], cx[..][..], desc[..][..], gdesc[..], [..]
    if "[" in text:
        lb = text.index("[")
        space = text[:lb]
        end = _bracket_end(text, lb, col)
        first = text[lb + 1 : end]
        after = text[end + 1 :]
        base_col = col + len(orig) - len(text)
        if space in ("c", "cx"):
            gap = len(after) - len(after.lstrip(" "))  # nvdisasm prints HFMA2's bank as c[0x0] [0x170]
            after, end = after[gap:], end + gap
            if not after.startswith("["):
                raise InstructionSyntaxError(
                    "constant bank needs two brackets", base_col + end + 1, "e.g. c[0x0][0x160]"
                )
            end2 = _bracket_end(after, 0, base_col + end + 1)
            sufs = tuple(s for s in after[end2 + 1 :].split(".") if s)
            parts = _parse_addr_parts(after[1:end2], base_col + end + 2)
            if space == "c":
                if not _HEX.match(first):
                    raise InstructionSyntaxError(f"bad bank {first!r}", base_col + lb + 1, "e.g. c[0x0][...]")
                return Operand(
                    "cbank",
                    orig,
                    col,
                    name=space,
                    value=parse_int(first),
                    parts=parts,
                    suffixes=sufs,
                    **flags,
                )
            return Operand(
                "cbank", orig, col, name=space, base=parse_reg(first), parts=parts, suffixes=sufs, **flags
            )
        if space and after.startswith("["):
            end2 = _bracket_end(after, 0, base_col + end + 1)
            base = parse_reg(first)
            if base is None:
                raise InstructionSyntaxError(
                    f"bad {space} register {first!r}", base_col + lb + 1, "e.g. desc[UR4][R2.64]"
                )
            parts = _parse_addr_parts(after[1:end2], base_col + end + 2)
            sufs = tuple(s for s in after[end2 + 1 :].split(".") if s)
            return Operand("addr", orig, col, name=space, base=base, parts=parts, suffixes=sufs, **flags)
        if space and not _IDENT.match(space):
            raise InstructionSyntaxError(f"bad address prefix {space!r}", col, "e.g. [R2], desc[UR4][R2.64]")
        parts = _parse_addr_parts(first, base_col + lb + 1)
        sufs = tuple(s for s in after.split(".") if s)
        return Operand("addr", orig, col, name=space or None, parts=parts, suffixes=sufs, **flags)
    if text.startswith("SR_") or text == "SRZ":
        return Operand("sreg", orig, col, name=text, **flags)
    core, *sufs = text.split(".")
    reg = parse_reg(core)
    reuse = "reuse" in sufs
    sufs = [s for s in sufs if s != "reuse"]
    if reg is not None:
        return Operand("reg", orig, col, reg=reg, suffixes=tuple(sufs), reuse=reuse, **flags)
    if _IDENT.match(text) and text[:1].isalpha() or _DIM.match(text):
        return Operand("name", orig, col, name=core, suffixes=tuple(sufs), reuse=reuse, **flags)
    if re.match(r"[+-]?0[fF]", orig):
        raise InstructionSyntaxError(
            f"cannot parse operand {orig!r}",
            col,
            "a float as f32 bits is 0f and 8 hex digits, unsigned: 0f7fc00000",
        )
    raise InstructionSyntaxError(
        f"cannot parse operand {orig!r}", col, "expected a register, immediate, c[..][..], [..] or `(label)"
    )
