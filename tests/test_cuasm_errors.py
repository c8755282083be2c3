"""Bad input: the parser never raises; every error has a line, a column and a hint."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

import pytest
from paths import TRITON_CORPUS

from sass_lsp.cuasm.assembler import AssembleError, assemble_cuasm
from sass_lsp.cuasm.ctrl import CTRL_MASK
from sass_lsp.cuasm.disasm import disassemble, normalise_text
from sass_lsp.cuasm.parser import parse_cuasm
from sass_lsp.cuasm.writer import write_cuasm

CUBIN = TRITON_CORPUS / "triton_add.cubin"


@cache
def _fixture() -> tuple[str, dict[tuple[int, str], int]]:
    data = CUBIN.read_bytes()
    dis = disassemble(data)
    table = {
        (i.pc, normalise_text(i.text)): i.word & ~CTRL_MASK for i in dis.sections[".text.add_kernel"].instrs
    }
    return write_cuasm(data, source_name=CUBIN.name, encode=_stub(table), disassembly=dis), table


def _stub(table: dict[tuple[int, str], int]):  # noqa: ANN202
    def encode(text: str, *, pc: int, labels: Mapping[str, int]) -> int:
        key = (pc, normalise_text(text))
        if key not in table:
            raise ValueError(f"stub cannot encode '{text}'")
        return table[key]

    return encode


def _line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def _assemble_errors(text: str) -> list:  # noqa: ANN401
    with pytest.raises(AssembleError) as info:
        assemble_cuasm(text, source_name="k.cuasm", encode=_stub(_fixture()[1]))
    return info.value.diagnostics


def test_parser_never_raises_on_garbage() -> None:
    module, diags = parse_cuasm('\x00\x01 ]] [[ ;;; \n\t.section\n[B------\n@@@:\n"unterminated\n')
    assert module is not None
    assert all(d.line >= 1 and d.col >= 1 and d.hint for d in diags)


def test_bad_control_field_has_column_and_hint() -> None:
    text, _ = _fixture()
    bad = text.replace("[B------:R-:W1:-:S07]", "[B------:R-:W9:-:S07]", 1)
    _, diags = parse_cuasm(bad)
    line = _line_of(bad, "R-:W9:")
    assert [(d.line, d.col) for d in diags] == [(line, bad.splitlines()[line - 1].index("W9") + 2)]
    assert "scoreboard" in diags[0].message and diags[0].hint
    assert diags[0].format("k.cuasm").startswith(f"k.cuasm:{line}:")


def test_old_six_field_control_gets_conversion_hint() -> None:
    _, diags = parse_cuasm('\t.section .text.k,"ax",@progbits\n  [R---:B------:R-:W-:Y:S04] NOP ;\n')
    assert diags and diags[0].line == 2 and "obsolete" in diags[0].hint


def test_instruction_without_control_field() -> None:
    _, diags = parse_cuasm('\t.section .text.k,"ax",@progbits\n        IADD3 R0, R1, R2, RZ ;\n')
    assert len(diags) == 1
    assert (diags[0].line, diags[0].col) == (2, 9)
    assert "control" in diags[0].hint


def test_unknown_directive_is_reported_by_the_assembler() -> None:
    text, _ = _fixture()
    bad = text.replace(
        "\t//----- nvinfo : EIATTR_FRAME_SIZE", "\t.bogus 1, 2\n\t//----- nvinfo : EIATTR_FRAME_SIZE", 1
    )
    diags = _assemble_errors(bad)
    line = _line_of(bad, ".bogus 1, 2")
    assert diags[0].line == line and diags[0].col == bad.splitlines()[line - 1].index(".bogus") + 1
    assert "unknown directive" in diags[0].message and ".byte" in diags[0].hint


def test_undefined_label_in_expression() -> None:
    text, _ = _fixture()
    bad = text.replace(".word\t.L_x_1@srel", ".word\t.L_nowhere@srel", 1)
    diags = _assemble_errors(bad)
    line = _line_of(bad, ".L_nowhere@srel")
    assert (diags[0].line, "'.L_nowhere'" in diags[0].message) == (line, True)
    assert diags[0].col == bad.splitlines()[line - 1].index(".L_nowhere") + 1
    assert diags[0].hint


def test_encoder_failure_points_at_instruction() -> None:
    text, _ = _fixture()
    bad = text.replace("CS2R R16, SRZ ;", "FROB R16, SRZ ;", 1)
    diags = _assemble_errors(bad)
    line = _line_of(bad, "FROB R16")
    assert diags[0].line == line and diags[0].col == bad.splitlines()[line - 1].index("FROB") + 1
    assert "FROB" in diags[0].message and diags[0].hint


def test_verifier_names_line_and_both_texts() -> None:
    text, table = _fixture()
    # An encoder that returns the word of the instruction 16 bytes later for pc 0x40.
    words = {pc: w for (pc, _), w in table.items()}

    def wrong(text_: str, *, pc: int, labels: Mapping[str, int]) -> int:
        return words[pc + 16] if pc == 0x40 else words[pc]

    with pytest.raises(AssembleError) as info:
        assemble_cuasm(text, source_name="k.cuasm", encode=wrong)
    (diag,) = info.value.diagnostics
    assert diag.line == _line_of(text, "/*0040*/                   CS2R R16")
    assert "'CS2R R16, SRZ'" in diag.message and "'S2R R3, SR_CTAID.X'" in diag.message
    assert "k.cuasm:" in str(info.value)


def test_verification_can_be_skipped() -> None:
    text, table = _fixture()
    words = {pc: w for (pc, _), w in table.items()}
    out = assemble_cuasm(
        text, encode=lambda t, *, pc, labels: words[pc + 16] if pc == 0x40 else words[pc], verify=False
    )
    assert len(out) == CUBIN.stat().st_size


def test_bad_control_field_keeps_the_instruction_for_the_checker() -> None:
    """One error at the field, and the instruction stays in the module (so the checker keeps its waits)."""
    text, _ = _fixture()
    bad = text.replace("[B------:R-:W1:-:S07]", "[B------:R-:W1:-:S16]", 1)
    module, diags = parse_cuasm(bad)
    line = _line_of(bad, "R-:W1:-:S16")
    assert [(d.line, "stall 16 > 15" in d.message) for d in diags] == [(line, True)]
    kept = [i for s in module.sections for i in s.instructions if i.line == line]
    assert [i.ctrl for i in kept] == ["B------:R-:W1:-:S16"]


def test_text_after_semicolon_is_an_error_at_its_column() -> None:
    text, _ = _fixture()
    bad = text.replace("CS2R R16, SRZ ;", "CS2R R16, SRZ ; IADD3", 1)
    _, diags = parse_cuasm(bad)
    line = _line_of(bad, "SRZ ; IADD3")
    assert [(d.line, d.col) for d in diags] == [(line, bad.splitlines()[line - 1].index("IADD3") + 1)]
    assert "text after ';'" in diags[0].message and diags[0].hint


def test_long_bad_line_is_quoted_clipped() -> None:
    _, diags = parse_cuasm('\t.section .text.k,"ax",@progbits\n  ' + "Q" * 1_000_000 + "\n")
    assert len(diags) == 1 and len(diags[0].message) < 200 and diags[0].message.count("Q") < 130


def test_undefined_branch_label_is_named() -> None:
    text, _ = _fixture()
    bad = text.replace("BRA `(.L_x_0);", "BRA `(.L_gone);", 1)
    line = _line_of(bad, ".L_gone")
    with pytest.raises(AssembleError) as info:
        assemble_cuasm(bad, source_name="k.cuasm")
    (diag,) = info.value.diagnostics
    assert (diag.line, diag.col) == (line, bad.splitlines()[line - 1].index(".L_gone") + 1)
    assert diag.message == "undefined label '.L_gone'" and diag.hint


def test_no_kernel_is_not_assembled() -> None:
    for text in ("", "// nothing\n", '\t.section .text.k,"ax",@progbits\n'):
        with pytest.raises(AssembleError) as info:
            assemble_cuasm(text, source_name="k.cuasm")
        assert "no kernel" in str(info.value) and info.value.diagnostics[0].hint
