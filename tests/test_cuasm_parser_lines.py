"""Line-level parsing: plain instruction lines (read in one match) give what the general path gives, and the
comment stripper and argument splitter keep their rules."""

from __future__ import annotations

import pytest

from sass_lsp.cuasm.assembler import split_args
from sass_lsp.cuasm.parser import parse_cuasm, strip_comments
from sass_lsp.model import Instruction

HEAD = '.section .text.k,"ax",@progbits\n'
PLAIN = [
    "      [B------:R-:W1:-:S01]         /*0000*/                   LDC R1, c[0x0][0x28] ;",
    "[B0-2-45:R3:W-:Y:S15] @!P0 IADD3 R0, R1, -0x10, RZ ;",
    "\t[B------:R-:W-:-:S00]\t/*0a0*/\tBRA `(.L_x_1) ;  ",
    "  [B------:R-:W-:Y:S02]   NOP ;",
]


def _instruction(line: str) -> Instruction:
    module, diags = parse_cuasm(HEAD + line + "\n")
    assert not diags
    (ins,) = module.sections[0].instructions
    return ins


@pytest.mark.parametrize("line", PLAIN)
def test_plain_line_matches_the_general_path(line: str) -> None:
    plain = _instruction(line)
    general = _instruction(line + " // a comment sends the line down the general path")
    assert plain == general
    code = line.replace(line[line.find("/*") : line.find("*/") + 2], " " * 8) if "/*" in line else line
    assert line[plain.text_col - 1 :].rstrip() == plain.text == code[code.find("]") + 1 :].strip()
    assert line[plain.ctrl_col - 1 : plain.ctrl_col - 1 + len(plain.ctrl)] == plain.ctrl


def test_hidden_and_raw_trailers_still_read() -> None:
    ins = _instruction("[B------:R-:W-:-:S01] NOP ; // hidden 0x10")
    assert (ins.text, ins.hidden, ins.raw) == ("NOP ;", 0x10, None)
    assert _instruction("[B------:R-:W-:-:S01] NOP ; // raw 0x5").raw == 5


def test_bad_control_field_on_a_plain_line_is_still_reported() -> None:
    _, diags = parse_cuasm(HEAD + "[B------:R-:W6:-:S01] NOP ;\n")
    assert len(diags) == 1 and "bad control field" in diags[0].message


def test_strip_comments() -> None:
    assert strip_comments("a /* b */ c // d") == "a         c "
    assert strip_comments("x/y /* open") == "x/y" + " " * 8
    assert strip_comments("/**/") == "    "
    assert strip_comments('.string "a//b" // c') == '.string "a//b" '


def test_split_args() -> None:
    assert split_args("0x1, 0x2 ,0x3") == ["0x1", "0x2", "0x3"]
    assert split_args("  ") == []
    assert split_args(" , ") == ["", ""]
    assert split_args('"a,b", (1, 2)') == ['"a,b"', "(1, 2)"]
