"""Instruction syntax: typed operands as nvdisasm prints them."""

import pytest

from sass_lsp.isa.syntax import InstructionSyntaxError, Reg, parse_instruction


def test_guard_opcode_modifiers_address() -> None:
    ins = parse_instruction("@!P0 LDG.E.128 R16, desc[UR4][R20.64+0x800] ;")
    assert ins.guard == Reg("P", 0) and ins.guard_neg
    assert ins.opcode == "LDG" and ins.modifiers == ("E", "128")
    dst, addr = ins.operands
    assert dst.kind == "reg" and dst.reg == Reg("R", 16)
    assert addr.kind == "addr" and addr.name == "desc" and addr.base == Reg("UR", 4)
    assert addr.parts[0].reg == Reg("R", 20) and addr.parts[0].suffixes == ("64",)
    assert addr.parts[1].value == 0x800
    assert addr.registers() == [Reg("UR", 4), Reg("R", 20)]


def test_reuse_immediates_and_zero_registers() -> None:
    ins = parse_instruction("IMAD.WIDE R20, R0.reuse, 0x4, R20")
    assert ins.operands[1].reuse and ins.operands[1].reg == Reg("R", 0)
    assert ins.operands[2].kind == "imm" and ins.operands[2].value == 4
    ins = parse_instruction("ISETP.GE.AND P0, PT, RZ, -0x110, PT")
    assert [op.reg for op in ins.operands if op.kind == "reg"] == [
        Reg("P", 0),
        Reg("P", 7),
        Reg("R", 255),
        Reg("P", 7),
    ]
    assert ins.operands[3].value == -0x110


def test_labels_relocs_and_calls() -> None:
    assert parse_instruction("BRA `(.L_x_0)").operands[0].name == ".L_x_0"
    ins = parse_instruction("MOV R20, 32@lo((_Z7argtestPiS_S_ + .L_x_0@srel))")
    reloc = ins.operands[1].reloc
    assert (
        reloc is not None
        and reloc.kind == "32@lo"
        and reloc.symbol == "_Z7argtestPiS_S_"
        and reloc.srel_label == ".L_x_0"
    )
    ins = parse_instruction("CALL.REL.NOINC R6 `(_Z2f1ii)")
    assert [op.kind for op in ins.operands] == ["reg", "label"]
    assert parse_instruction("CALL.REL.NOINC `(_Z2f1ii)").operands[0].name == "_Z2f1ii"


def test_hopper_and_special_operands() -> None:
    ins = parse_instruction("HGMMA.64x64x16.F32 R24, gdesc[UR4], RZ, !UPT, gsb0")
    assert ins.modifiers == ("64x64x16", "F32")
    kinds = [op.kind for op in ins.operands]
    assert kinds == ["reg", "addr", "reg", "reg", "name"]
    assert ins.operands[3].not_ and ins.operands[3].reg == Reg("UP", 7)
    ins = parse_instruction("DEPBAR.LE SB0, 0x1")
    assert ins.operands[0].reg == Reg("SB", 0)
    ins = parse_instruction("FSEL R0, R1, +QNAN, P0")
    assert ins.operands[2].kind == "fimm" and ins.operands[2].fvalue == "QNAN"
    ins = parse_instruction("FADD R0, -|R1|, -1.5")
    assert ins.operands[1].neg and ins.operands[1].abs and ins.operands[2].fvalue == -1.5
    ins = parse_instruction("S2R R0, SR_TID.X")
    assert ins.operands[1].kind == "sreg" and ins.operands[1].name == "SR_TID.X"
    ins = parse_instruction("LDC R6, c[0x3][R6+0x10]")
    assert (
        ins.operands[1].kind == "cbank"
        and ins.operands[1].value == 3
        and ins.operands[1].parts[1].value == 0x10
    )
    assert parse_instruction("DEPBAR {4,3,2,1}").operands[0].value == 0b11110
    assert parse_instruction("HADD2.F32 R0, -RZ, R2.H0_H0").operands[2].suffixes == ("H0_H0",)


@pytest.mark.parametrize(
    ("text", "col"), [("@Q0 NOP", 0), ("IADD3 R0, , R1", 10), ("LDG.E R0, [R2", 10), ("mov r0", 0)]
)
def test_errors(text: str, col: int) -> None:
    with pytest.raises(InstructionSyntaxError) as info:
        parse_instruction(text)
    assert info.value.col == col


def test_a_float_written_as_f32_bits() -> None:
    op = parse_instruction("FSEL R7, R8, 0f7fc00000, !P1").operands[2]
    assert op.kind == "fimm" and op.fbits == 0x7FC00000 and op.fvalue != op.fvalue  # a NaN
    assert parse_instruction("FADD R4, R5, 0F3F800000").operands[2].fvalue == 1.0
    for bad in ("-0f7fc00000", "0f7fc0000"):
        with pytest.raises(InstructionSyntaxError, match="cannot parse operand") as err:
            parse_instruction(f"FSEL R7, R8, {bad}, !P1")
        assert "0f and 8 hex digits" in err.value.hint
