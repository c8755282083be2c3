"""Encoder, MC style: instruction text -> 128-bit word, expected words copied from `nvdisasm -hex` of
real sm_90 cubins in sass_lsp/corpus/sm_90 (never from our encoder). The control bits come from the
expected word itself (the encoder leaves them zero), as the coverage benchmark does."""

import random

import pytest

from sass_lsp.isa.control import CONTROL_MASK, control_from_word, format_control
from sass_lsp.isa.encoder import EncodeError, Encoder, UnsupportedArch
from sass_lsp.isa.shape import split_shape

# (text, pc, labels, lo qword, hi qword)   # SM90: source cubin
CASES = [
    ("LDC R1, c[0x0][0x28]", 0x0, {}, 0x00000A00FF017B82, 0x000E220000000800),  # triton_add
    ("S2R R0, SR_TID.X", 0x10, {}, 0x0000000000007919, 0x000E6E0000002100),
    ("LDC.64 R20, c[0x0][0x210]", 0x20, {}, 0x00008400FF147B82, 0x000EA20000000A00),
    ("ULDC.64 UR4, c[0x0][0x208]", 0x90, {}, 0x0000820000047AB9, 0x000FE20000000A00),
    ("CS2R R16, SRZ", 0x40, {}, 0x0000000000107805, 0x000FE2000001FF00),
    ("LOP3.LUT R0, R0, 0x1fc, RZ, 0xc0, !PT", 0x100, {}, 0x000001FC00007812, 0x000FC800078EC0FF),
    ("ISETP.GE.AND P0, PT, R0.reuse, UR6, PT", 0x120, {}, 0x0000000600007C0C, 0x040FE2000BF06270),
    ("IMAD.WIDE R20, R0.reuse, 0x4, R20", 0x130, {}, 0x0000000400147825, 0x044FE200078E0214),
    ("@!P0 LDG.E.128 R16, desc[UR4][R20.64]", 0x180, {}, 0x0000000414108981, 0x000EA8000C1E1D00),
    ("@!P0 STG.E.128 desc[UR4][R2.64], R12", 0x210, {}, 0x0000000C02008986, 0x0003E2000C101D04),
    ("@P1 EXIT", 0x260, {}, 0x000000000000194D, 0x001FEC0003800000),
    ("BRA `(.L_x_0)", 0x290, {".L_x_0": 0x290}, 0xFFFFFFFC00FC7947, 0x000FC0000383FFFF),
    ("NOP", 0x2A0, {}, 0x0000000000007918, 0x000FC00000000000),
    ("MOV R8, 0xff800000", 0x60, {}, 0xFF80000000087802, 0x000FC40000000F00),  # triton_softmax
    ("SHFL.BFLY PT, R14, R15, 0x10, 0x1f", 0x280, {}, 0x0E001F000F0E7F89, 0x000E6400000E0000),
    ("@!P4 STS [R12+UR4], R19", 0x380, {}, 0x000000130C00C988, 0x000FE20008000804),
    ("BAR.SYNC.DEFER_BLOCKING 0x0", 0x390, {}, 0x0000000000007B1D, 0x000FEC0000010000),
    ("FMUL R15, R8, 1.4426950216293334961", 0x460, {}, 0x3FB8AA3B080F7820, 0x000FE20000400000),
    ("FSETP.GEU.AND P6, PT, R15, -126, PT", 0x4C0, {}, 0xC2FC00000F00780B, 0x000FE20003FCE000),
    (
        "FSETP.GT.AND P0, PT, |R6|.reuse, 8.50705917302346158658e+37, PT",
        0x960,
        {},
        0x7E8000000600780B,
        0x044FE40003F04200,
    ),
    ("MUFU.EX2 R8, R15", 0x570, {}, 0x0000000F00087308, 0x000E700000000800),
    (
        "PLOP3.LUT P2, PT, PT, PT, UP0, 0x80, 0x0",
        0xF0,
        {},
        0x000000000000781C,
        0x000FE20003F4F008,
    ),  # mm_f16_64x64x32
    ("LDGSTS.E.BYPASS.128 [R19], desc[UR22][R10.64], P0", 0x5F0, {}, 0x000000000A137FAE, 0x000FE40008101C56),
    ("UIADD3 UR21, UR24, -0x60, URZ", 0xB30, {}, 0xFFFFFFA018157890, 0x000FE2000FFFE03F),
    ("DEPBAR.LE SB0, 0x4", 0xBD0, {}, 0x000081000000791A, 0x000FC80000000000),
    (
        "HGMMA.64x64x16.F32 R24, gdesc[UR12].tnspB, R24, gsb0",
        0xE80,
        {},
        0x40E000000C1879F0,
        0x000FE60008000818,
    ),
    ("WARPGROUP.DEPBAR.LE gsb0, 0x1", 0xE90, {}, 0x00008000000079C5, 0x000FE40000010100),
    ("F2FP.F16.F32.PACK_AB R4, R27, R26", 0xFF0, {}, 0x0000001A1B04723E, 0x000FE400000000FF),
    ("STS.128 [R8+UR11], R24", 0x1150, {}, 0x0000001808007988, 0x0005E60008000C0B),
    ("LDSM.16.M88.4 R28, [R10]", 0x12B0, {}, 0x000000000A1C783B, 0x000E620000000200),
    (
        "FFMA R24, R0.reuse, -R13.reuse, R9",
        0x460,
        {},
        0x8000000D00187223,
        0x0C2FE20000000009,
    ),  # triton_layernorm
    ("HFMA2.MMA R29, -RZ, RZ, 1.625, 0", 0x780, {}, 0x3E800000FF1D7435, 0x002FC600000001FF),
]


@pytest.fixture(scope="module")
def enc() -> Encoder:
    return Encoder.for_arch("sm_90")


@pytest.mark.parametrize(("text", "pc", "labels", "lo", "hi"), CASES, ids=[c[0] for c in CASES])
def test_sm90_encoding(enc: Encoder, text: str, pc: int, labels: dict, lo: int, hi: int) -> None:
    want = lo | hi << 64
    got = enc.encode(text, pc=pc, labels=labels)
    assert got.word & CONTROL_MASK == 0
    assert hex(got.word | (want & CONTROL_MASK)) == hex(want)


def test_control_of_first_case() -> None:
    assert format_control(control_from_word(0x000E220000000800 << 64)) == "[B------:R-:W0:-:S01]"


def test_sm90a_shares_sm90_tables() -> None:
    assert Encoder.for_arch("sm_90a").table is Encoder.for_arch("sm_90").table


def test_relocations_and_unresolved_targets(enc: Encoder) -> None:
    res = enc.encode("MOV R20, 32@lo((_Z7argtestPiS_S_ + .L_x_0@srel))")
    assert [(r.kind, r.symbol) for r in res.relocs] == [("32@lo", "_Z7argtestPiS_S_")]
    res = enc.encode("CALL.REL.NOINC `(_Z2f1ii)", pc=0x100)
    assert res.relocs[0].kind == "call" and res.relocs[0].symbol == "_Z2f1ii"


def test_errors_and_hints(enc: Encoder) -> None:
    with pytest.raises(EncodeError) as info:
        enc.encode("FFMAX R0, R1, R2, R3")
    assert info.value.col == 0 and "FFMA" in info.value.hint
    with pytest.raises(EncodeError) as info:
        enc.encode("ISETP.GE.ANDD P0, PT, R0, UR6, PT")
    assert "AND" in info.value.hint and info.value.col == 9
    with pytest.raises(EncodeError):
        enc.encode("IADD3 R0, R1,")
    with pytest.raises(UnsupportedArch):
        Encoder.for_arch("sm_61")


def test_completion_lists(enc: Encoder) -> None:
    assert {"FFMA", "LDG", "HGMMA", "IMAD"} <= set(enc.known_opcodes())
    assert {"E", "128", "CONSTANT"} & set(enc.known_modifiers("LDG"))
    assert enc.provenance["script"] == "tools/isa/build_tables.py"


# Compiled shapes (isa/shape.py): once a shape is compiled, every text of that shape must encode exactly as
# the full parse -> features -> predict path does. Texts below cover the slot kinds the CASES lack.
SHAPE_TEXTS = [c[0] for c in CASES] + [
    "@!UP0 UIADD3 UR4, UR5, -0x10, URZ",
    "LDS R0, [R3+-0x8]",
    'LDL.LU R4, [R1+0x4]                                              (*"SpillRefill"*)',
    "BRA `(.L_x_7)",
    "@P2 BRA `(.L_x_7)",
    "CALL.REL.NOINC `(_Z2f1ii)",
    "BRX R6 -0x1b0",
    "FSEL R0, R1, -QNAN , P0",
    "HADD2 R0, -RZ, 1.5, -0.25",
    "DFMA R2, R4, 2, R2",
    "MOV R20, 32@lo((_Z7argtestPiS_S_ + .L_x_0@srel))",
    "ULDC.64 UR4, c[0x0][0x208]",
    "LDC R2, c[0x3][R0+0x10]",
    "DEPBAR.LE SB0, 0x0, {4,3,2,1}",
    "BSSY B0, `(.L_x_2)",
]


def _perturb(text: str, rng: random.Random) -> str:
    """``text`` with every slot given a new value of its kind (same shape)."""
    parts = split_shape(text)
    for idx in range(1, len(parts), 2):
        before = parts[idx - 1]
        if before.endswith("`("):
            parts[idx] = rng.choice([".L_x_7", ".L_x_2", "_Z2f1ii", "far"])
        elif before.endswith("0x"):
            parts[idx] = f"{rng.getrandbits(rng.choice([4, 8, 16, 32, 64])):x}"
        elif before.endswith(("@P", "@!P", "@UP", "@!UP")):
            parts[idx] = rng.choice("0123456T")
        elif before[-1:].isalpha():
            zero = "Z" if before.endswith("R") else "T" if before.endswith("P") else str(rng.randrange(6))
            parts[idx] = rng.choice([str(rng.randrange(256)), str(rng.randrange(8)), zero])
        else:
            parts[idx] = rng.choice(["0.5", "2", "1.4426950216293334961", "3.0e+38", "1e-05", "65504"])
    return "".join(parts)


def test_compiled_shapes_encode_as_the_full_path() -> None:
    rng = random.Random(7)
    labels = {".L_x_7": 0x40, ".L_x_2": 0x1230, "_Z2f1ii": 0x0}
    compiled = Encoder.uncached("sm_90")
    n_compared = 0
    for text in SHAPE_TEXTS:
        compiled.encode(text, pc=0x100, labels=labels)  # compiles the shape (its values all encode)
        for _ in range(40):
            variant, pc = _perturb(text, rng), 16 * rng.randrange(0x400)
            try:
                want = Encoder.uncached("sm_90").encode(variant, pc=pc, labels=labels)  # full path
            except EncodeError as err:
                with pytest.raises(EncodeError) as info:
                    compiled.encode(variant, pc=pc, labels=labels)
                got = (info.value.message, info.value.col, info.value.hint)
                assert got == (err.message, err.col, err.hint)
                continue
            assert compiled.encode(variant, pc=pc, labels=labels) == want, variant
            n_compared += 1
    assert n_compared > 30 * len(SHAPE_TEXTS)
    n_plans = sum(plan is not None for plan in compiled._plans.values())
    assert n_plans == len(compiled._plans) - 1  # all but the set {4,3,2,1}


def test_shape_keeps_opcode_and_suffix_digits_literal() -> None:
    assert split_shape("@P1 HMMA.16816.F32 R4, R8.reuse, c[0x0][0x210], -1.5, R2.64, SR_CTAID.X") == [
        "@P", "1", " HMMA.16816.F32 R", "4", ", R", "8", ".reuse, c[0x", "0", "][0x", "210", "], -", "1.5",
        ", R", "2", ".64, SR_CTAID.X",
    ]  # fmt: skip
    assert split_shape("R2UR UR4, R2")[:3] == ["R2UR UR", "4", ", R"]
    assert split_shape("BRA `(.L_x_12)") == ["BRA `(", ".L_x_12", ")"]
