"""Expressions in data directives: ``0x10``, ``(.L_1 - .L_0)``, ``index@(sym)``, ``.L_x_1@srel``,
``sym``, ``(sym + .L_x_0@srel)``, ``32@lo(...)`` / ``32@hi(...)``.

A bare symbol name yields a relocation against it (value 0 + the rest as addend), like nvdisasm prints.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_TOKEN_RE = re.compile(
    r"\s*(?:(?P<num>-?0[xX][0-9a-fA-F]+|-?\d+)|(?P<fn>index@|32@lo|32@hi)|(?P<name>[A-Za-z_.$][\w.$@#]*)"
    r"|(?P<op>[()+\-]))"
)


class ExprError(ValueError):
    def __init__(self, message: str, hint: str = "", col: int = 0) -> None:
        super().__init__(message)
        self.hint = hint
        self.col = col  # 0-based offset within the expression text


@dataclass
class Value:
    value: int
    reloc_sym: str | None = None  # symbol the value is relative to (needs a relocation)


@dataclass
class Context:
    label_offset: Callable[[str], int | None]  # label -> offset within its section
    symbol_index: Callable[[str], int | None]  # symbol -> .symtab index
    is_symbol: Callable[[str], bool]  # a symtab name that is not a local label


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out = []
    pos = 0
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
            continue
        m = _TOKEN_RE.match(text, pos)
        if not m or m.end() == pos:
            raise ExprError(
                f"unexpected character '{text[pos]}' in expression", "check the expression syntax", pos
            )
        kind = m.lastgroup or "op"
        out.append((kind, m.group(kind), m.start(kind)))
        pos = m.end()
    return out


def evaluate(text: str, ctx: Context) -> Value:
    parser = _Parser(text, ctx)
    result = parser.expr()
    toks, pos = parser.toks, parser.pos
    if pos != len(toks):
        raise ExprError(
            f"unexpected '{toks[pos][1]}' after expression", "remove the extra text", toks[pos][2]
        )
    return result


class _Parser:
    """Recursive descent over the tokens of one expression (methods, not closures that call each other: those
    would make a reference cycle per call, keeping ``ctx`` alive until the collector runs)."""

    def __init__(self, text: str, ctx: Context) -> None:
        self.text, self.ctx = text, ctx
        self.toks = _tokens(text)
        self.pos = 0

    def peek(self) -> tuple[str, str, int] | None:
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def take(self) -> tuple[str, str, int]:
        if self.pos >= len(self.toks):
            raise ExprError("expression ends early", "complete the expression", len(self.text))
        self.pos += 1
        return self.toks[self.pos - 1]

    def expect(self, op: str) -> None:
        tok = self.take()
        if tok[1] != op:
            raise ExprError(f"expected '{op}' but found '{tok[1]}'", f"insert '{op}'", tok[2])

    def atom(self) -> Value:
        ctx = self.ctx
        kind, val, col = self.take()
        if kind == "num":
            return Value(int(val, 0))
        if kind == "op" and val == "(":
            inner = self.expr()
            self.expect(")")
            return inner
        if kind == "op" and val == "-":
            inner = self.atom()
            return Value(-inner.value, inner.reloc_sym)
        if kind == "fn":
            self.expect("(")
            if val == "index@":
                _, name, ncol = self.take()
                self.expect(")")
                idx = ctx.symbol_index(name)
                if idx is None:
                    raise ExprError(f"unknown symbol '{name}' in index@()", "use a name from .symtab", ncol)
                return Value(idx)
            inner = self.expr()
            self.expect(")")
            if inner.reloc_sym is not None:
                return inner  # resolved by the relocation, the field stays zero
            shift = 0 if val == "32@lo" else 32
            return Value((inner.value >> shift) & 0xFFFFFFFF)
        if kind == "name":
            if val.endswith("@srel"):
                off = ctx.label_offset(val[:-5])
                if off is None:
                    raise ExprError(f"undefined label '{val[:-5]}'", "define the label in a section", col)
                return Value(off)
            if ctx.is_symbol(val):
                return Value(0, val)
            off = ctx.label_offset(val)
            if off is None:
                raise ExprError(f"undefined label or symbol '{val}'", "define it or check the spelling", col)
            return Value(off)
        raise ExprError(f"unexpected '{val}' in expression", "check the expression syntax", col)

    def expr(self) -> Value:
        left = self.atom()
        while (tok := self.peek()) is not None and tok[1] in "+-" and tok[0] == "op":
            self.take()
            right = self.atom()
            sign = 1 if tok[1] == "+" else -1
            if right.reloc_sym is not None and (sign < 0 or left.reloc_sym is not None):
                raise ExprError("a relocated symbol may only be added once", "use (sym + offset)", tok[2])
            left = Value(left.value + sign * right.value, left.reloc_sym or right.reloc_sym)
        return left
