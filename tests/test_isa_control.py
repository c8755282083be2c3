"""Control codes: parse/format/bits round trips on the worked decodes of notes/cuasm-format.md §2.1."""

import pytest

from sass_lsp.isa.control import (
    ControlCode,
    ControlCodeError,
    control_bits,
    control_from_word,
    control_to_bits,
    format_control,
    parse_control,
)

# (high qword of a real sm_90 instruction, control string CuAssembler prints)
WORKED = [
    (0x000E2E0000002600, "[B------:R-:W0:-:S07]"),  # S2R R7, SR_CTAID.Y
    (0x001FCA00078E40FF, "[B0-----:R-:W-:Y:S05]"),
    (0x000FDA000BF06270, "[B------:R-:W-:Y:S13]"),
    (0x000FC00000000000, "[B------:R-:W-:Y:S00]"),  # pad NOP
    (0x000FE20000000800, "[B------:R-:W-:-:S01]"),  # LDC R1, c[0x0][0x28]
    (0x000E220000000800, "[B------:R-:W0:-:S01]"),
]


@pytest.mark.parametrize(("hi", "text"), WORKED)
def test_worked_decodes(hi: int, text: str) -> None:
    cc = control_from_word(hi << 64)
    assert format_control(cc) == text
    assert parse_control(text) == cc
    assert control_to_bits(cc) == (hi >> 41) & 0x1FFFF


def test_fields_and_roundtrip_all_values() -> None:
    cc = parse_control("[B0-2---:R-:W1:Y:S04]")
    assert cc == ControlCode(wait_mask=0b101, read_sb=None, write_sb=1, yield_flag=True, stall=4)
    assert parse_control("B0-2---:R-:W1:Y:S04") == cc  # brackets optional
    for bits in range(0, 1 << 17, 97):
        cc = control_from_word(bits << 105)
        if cc.read_sb == 6 or cc.write_sb == 6:
            continue  # 6 is not a printable scoreboard
        assert control_to_bits(parse_control(format_control(cc))) == bits


@pytest.mark.parametrize(
    ("text", "col"),
    [
        ("[B------:R-:W-:Y:S16]", 18),  # stall > 15
        ("[B------:R6:W-:Y:S01]", 10),  # scoreboard index > 5
        ("[B------:R-:W9:Y:S01]", 13),
        ("[B-----6:R-:W-:Y:S01]", 7),
        ("[Bx-----:R-:W-:Y:S01]", 2),  # bad char
        ("[B------:R-:W-:Q:S01]", 15),
        ("[B------:R-:W-:Y]", 1),  # missing field
    ],
)
def test_errors_have_columns(text: str, col: int) -> None:
    with pytest.raises(ControlCodeError) as info:
        parse_control(text)
    assert info.value.col == col
    assert info.value.hint


def test_every_well_formed_field_parses_as_it_formats() -> None:
    """All 100352 fields without brackets (the parser's form; read in one match) round-trip."""
    n_fields = 0
    for wait in range(64):
        wait_text = "".join(str(i) if wait >> i & 1 else "-" for i in range(6))
        for rd in "012345-":
            for wr in "012345-":
                for yf in "Y-":
                    for stall in range(16):
                        text = f"B{wait_text}:R{rd}:W{wr}:{yf}:S{stall:02d}"
                        cc = parse_control(text)
                        assert format_control(cc) == f"[{text}]"
                        assert control_bits(text) == control_to_bits(cc)
                        n_fields += 1
    assert n_fields == 64 * 7 * 7 * 2 * 16
    with pytest.raises(ControlCodeError):
        control_bits("B------:R-:W6:-:S01")
