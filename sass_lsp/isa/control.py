"""Feature: control codes. Volta+ control field ``[B------:R-:W-:Y:S00]`` <-> 17 bits at bit 105.

Layout of the 17-bit value (see notes/cuasm-format.md §2.1): stall bits 0-3, raw yield bit 4 (CuAssembler
prints ``Y`` when it is 0), write scoreboard bits 5-7 (7 = none), read scoreboard bits 8-10, wait mask 11-16.
Reuse flags (bits 122-125) are not part of the control code; they come from ``.reuse`` operand suffixes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CONTROL_SHIFT = 105
CONTROL_MASK = 0x1FFFF << CONTROL_SHIFT


class ControlCodeError(ValueError):
    """Bad control field. ``col`` is a 0-based offset into the text given to :func:`parse_control`."""

    def __init__(self, message: str, col: int = 0, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.col = col
        self.hint = hint


@dataclass(frozen=True)
class ControlCode:
    wait_mask: int = 0
    read_sb: int | None = None
    write_sb: int | None = None
    yield_flag: bool = False
    stall: int = 0


_FIELD_HINT = "expected [B<wait 6 chars>:R<0-5|->:W<0-5|->:<Y|->:S<00-15>], e.g. [B0-----:R-:W1:Y:S04]"


# A well-formed field without brackets or spaces, as the parser hands it over: read in one match.
_WELL_FORMED = re.compile(r"B(0|-)(1|-)(2|-)(3|-)(4|-)(5|-):R([0-5-]):W([0-5-]):([Y-]):S(0\d|1[0-5])")


def parse_control(text: str) -> ControlCode:
    """Parse ``[B0-2---:R-:W1:Y:S04]`` (brackets optional, surrounding spaces allowed)."""
    m = _WELL_FORMED.fullmatch(text)
    if m is not None:
        w0, w1, w2, w3, w4, w5, rd, wr, yf, stall = m.groups()
        return ControlCode(
            (w0 != "-")
            | (w1 != "-") << 1
            | (w2 != "-") << 2
            | (w3 != "-") << 3
            | (w4 != "-") << 4
            | (w5 != "-") << 5,
            None if rd == "-" else int(rd),
            None if wr == "-" else int(wr),
            yf == "Y",
            int(stall),
        )
    return _parse_control_checked(text)


def _parse_control_checked(text: str) -> ControlCode:
    """Field by field, so that an error names its column."""
    start = len(text) - len(text.lstrip())
    body = text.strip()
    base = start
    if body.startswith("["):
        if not body.endswith("]"):
            raise ControlCodeError("control code lacks closing ']'", base + len(body), _FIELD_HINT)
        body = body[1:-1]
        base += 1
    fields = body.split(":")
    if len(fields) != 5:
        raise ControlCodeError(
            f"control code needs 5 ':'-separated fields, got {len(fields)}", base, _FIELD_HINT
        )
    cols = []
    col = base
    for field in fields:
        cols.append(col)
        col += len(field) + 1
    wait_f, read_f, write_f, yield_f, stall_f = fields

    if len(wait_f) != 7 or wait_f[0] != "B":
        raise ControlCodeError(
            f"bad wait-mask field {wait_f!r}", cols[0], "use B followed by 6 chars, e.g. B0-----"
        )
    wait_mask = 0
    for idx, ch in enumerate(wait_f[1:]):
        if ch == "-":
            continue
        if ch.isdigit() and int(ch) > 5:
            raise ControlCodeError(f"scoreboard index {ch} > 5", cols[0] + 1 + idx, "scoreboards are 0-5")
        if ch != str(idx):
            raise ControlCodeError(
                f"wait-mask position {idx} must be '{idx}' or '-', got {ch!r}",
                cols[0] + 1 + idx,
                f"write '{idx}' to wait on SB{idx}",
            )
        wait_mask |= 1 << idx

    def barrier(field: str, letter: str, col: int) -> int | None:
        if len(field) != 2 or field[0] != letter:
            raise ControlCodeError(
                f"bad {letter} field {field!r}", col, f"use {letter}0..{letter}5 or {letter}-"
            )
        if field[1] == "-":
            return None
        if not field[1].isdigit():
            raise ControlCodeError(f"bad scoreboard {field[1]!r}", col + 1, "scoreboards are 0-5 or '-'")
        if int(field[1]) > 5:
            raise ControlCodeError(f"scoreboard index {field[1]} > 5", col + 1, "scoreboards are 0-5")
        return int(field[1])

    read_sb = barrier(read_f, "R", cols[1])
    write_sb = barrier(write_f, "W", cols[2])
    if yield_f not in ("Y", "-"):
        raise ControlCodeError(f"bad yield field {yield_f!r}", cols[3], "use 'Y' or '-'")
    if not re.fullmatch(r"S\d\d", stall_f):
        raise ControlCodeError(f"bad stall field {stall_f!r}", cols[4], "use S00..S15")
    stall = int(stall_f[1:])
    if stall > 15:
        raise ControlCodeError(f"stall {stall} > 15", cols[4] + 1, "stall is 4 bits: S00..S15")
    return ControlCode(wait_mask, read_sb, write_sb, yield_f == "Y", stall)


def format_control(cc: ControlCode) -> str:
    wait = "".join(str(i) if cc.wait_mask >> i & 1 else "-" for i in range(6))
    rd = "-" if cc.read_sb is None else str(cc.read_sb)
    wr = "-" if cc.write_sb is None else str(cc.write_sb)
    return f"[B{wait}:R{rd}:W{wr}:{'Y' if cc.yield_flag else '-'}:S{cc.stall:02d}]"


def control_to_bits(cc: ControlCode) -> int:
    """The 17-bit value that goes at bit 105 of the instruction word."""
    wb = 7 if cc.write_sb is None else cc.write_sb
    rb = 7 if cc.read_sb is None else cc.read_sb
    raw_yield = 0 if cc.yield_flag else 1
    return (cc.stall & 0xF) | raw_yield << 4 | (wb & 7) << 5 | (rb & 7) << 8 | (cc.wait_mask & 0x3F) << 11


def control_bits(text: str) -> int:
    """``control_to_bits(parse_control(text))``, without a :class:`ControlCode` for the usual text."""
    m = _WELL_FORMED.fullmatch(text)
    if m is None:
        return control_to_bits(parse_control(text))
    w0, w1, w2, w3, w4, w5, rd, wr, yf, stall = m.groups()
    wait = (w0 != "-") | (w1 != "-") << 1 | (w2 != "-") << 2 | (w3 != "-") << 3 | (w4 != "-") << 4
    wait |= (w5 != "-") << 5
    return (
        int(stall)
        | (yf != "Y") << 4
        | (7 if wr == "-" else int(wr)) << 5
        | (7 if rd == "-" else int(rd)) << 8
        | wait << 11
    )


def control_from_bits(bits: int) -> ControlCode:
    wb = bits >> 5 & 7
    rb = bits >> 8 & 7
    return ControlCode(
        wait_mask=bits >> 11 & 0x3F,
        read_sb=None if rb == 7 else rb,
        write_sb=None if wb == 7 else wb,
        yield_flag=not bits >> 4 & 1,
        stall=bits & 0xF,
    )


def control_from_word(word128: int) -> ControlCode:
    return control_from_bits(word128 >> CONTROL_SHIFT & 0x1FFFF)


# The largest stall a control code may hold without the yield flag: nvdisasm rejects S12-S15 with '-'
# (its 'opex' table, which joins the stall, the yield flag and the reuse flags, has no such entry) on every
# arch from sm_75 to sm_120, for every instruction tried.
MAX_STALL_WITHOUT_YIELD = 11


def control_problem(cc: ControlCode, arch: str) -> str | None:
    """Why ``cc`` cannot be encoded on ``arch``, in the words a fix needs; None when nothing is known
    wrong with it."""
    if cc.stall > MAX_STALL_WITHOUT_YIELD and not cc.yield_flag:
        return (
            f"S{cc.stall} needs Y on {arch}: a stall above {MAX_STALL_WITHOUT_YIELD} is encodable only with "
            f"the yield flag (write :Y:S{cc.stall:02d}, or a stall of at most {MAX_STALL_WITHOUT_YIELD})"
        )
    return None
