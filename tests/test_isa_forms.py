"""Forms known because their fields are, not because a kernel used them: CuAssembler-written files (text
only, no ``// hidden`` trailers) with float immediates printed as names (±INF, NaN), ``.reuse`` on
register sources the training never saw reused, and the control-field rule nvdisasm enforces."""

from __future__ import annotations

import re

import pytest
from paths import ROOT, TRITON_CORPUS

from sass_lsp.cuasm.assembler import AssembleError, assemble_cuasm
from sass_lsp.cuasm.disasm import disassemble, normalise_text, texts_equivalent
from sass_lsp.isa.control import ControlCode, control_problem
from sass_lsp.isa.encoder import EncodeError, Encoder
from sass_lsp.nvdisasm import nvdisasm_path

needs_nvdisasm = pytest.mark.skipif(nvdisasm_path() is None, reason="nvdisasm not installed")

CUASM = TRITON_CORPUS / "gelu_bias.cuasm"
# (line in the corpus file, the same instruction in a form no training kernel has)
UNSEEN = [
    ("HFMA2.MMA R2, -RZ, RZ, 0, 0 ;", "HFMA2.MMA R2, -RZ, RZ, -INF , -INF ;"),
    ("IABS R12, R18 ;", "IABS R12, R18.reuse ;"),
    ("IABS R4, R0 ;", "IABS R4, R0.reuse ;"),
]


def _texts(cubin: bytes) -> list[str]:
    return [normalise_text(i.text) for sec in disassemble(cubin).sections.values() for i in sec.instrs]


def test_corpus_cuasm_is_text_only() -> None:
    """The regression file below is what CuAssembler writes: no hidden-bit trailers to lean on."""
    text = CUASM.read_text()
    assert "// hidden" not in text
    assert all(old in text for old, _ in UNSEEN)


def _with_unseen_forms(text: str) -> str:
    """The corpus file with the UNSEEN forms written in; a line given .reuse loses its yield flag (nvdisasm
    shows .reuse only without it, and ptxas sets it only without it)."""
    lines = text.splitlines(keepends=True)
    for old, new in UNSEEN:
        n = next(i for i, ln in enumerate(lines) if old in ln)
        lines[n] = lines[n].replace(old, new)
        if ".reuse" in new:
            lines[n] = lines[n].replace(":Y:S", ":-:S", 1)
    return "".join(lines)


@needs_nvdisasm
def test_unseen_forms_assemble_from_text_alone() -> None:
    text = _with_unseen_forms(CUASM.read_text())
    cubin = assemble_cuasm(text, source_name=CUASM.name)  # verify: nvdisasm reads back every text
    got = _texts(cubin)
    for _, new in UNSEEN:
        assert normalise_text(new) in got


@needs_nvdisasm
def test_stall_above_11_without_yield_names_the_cause() -> None:
    """Reported at assembly (no word holds it), not as nvdisasm's rejection of the whole file."""
    text = CUASM.read_text()
    line = next(ln for ln in text.splitlines() if "IABS R12, R18 ;" in ln)
    ctrl = line[line.index("[") : line.index("]") + 1]
    bad = line.replace(ctrl, re.sub(r":[Y-]:S\d\d\]$", ":-:S12]", ctrl))
    assert bad != line
    with pytest.raises(AssembleError) as info:
        assemble_cuasm(text.replace(line, bad, 1), source_name=CUASM.name)
    found = [d for d in info.value.diagnostics if d.message == "S12 needs Y on sm_90"]
    assert found and "yield flag" in found[0].hint, info.value.diagnostics
    assert found[0].line == text.splitlines().index(line) + 1


def test_control_problem() -> None:
    assert control_problem(ControlCode(stall=11), "sm_90") is None
    assert control_problem(ControlCode(stall=15, yield_flag=True), "sm_90") is None
    assert (control_problem(ControlCode(stall=13), "sm_80") or "").startswith("S13 needs Y on sm_80")


# Every class of float immediate nvdisasm prints, on the f16, f32 and f64 forms: the text must read back.
FLOAT_TEXTS = [
    "HFMA2.MMA R4, -RZ, RZ, -INF , -INF",
    "HFMA2.MMA R4, -RZ, RZ, +INF , -0.0",
    "HFMA2.MMA R5, -RZ, RZ, 5.9604644775390625e-08, +QNAN",
    "FADD R4, R5, -INF",
    "FADD R4, R5, +QNAN",
    "FADD R4, R5, -0.0",
    "FADD R4, R5, 1.4012984643248170709e-45",
    "FADD R4, R5, +SNAN",
    "FMNMX R4, R5, -INF , !PT",
    "FFMA R4, R5, +INF , R6",
    "DADD R4, R6, +INF",
    "DADD R4, R6, -QNAN",
]
# .reuse on register sources in every slot (ra, rb, rc), including forms never seen reused
REUSE_TEXTS = [
    "IABS R7, R4.reuse",
    "FADD R4, R5.reuse, R6.reuse",
    "IMAD R4, R5.reuse, R6.reuse, R7.reuse",
    "FFMA R4, R5, 2, R7.reuse",
    "FFMA R4, R5, R6.reuse, R7.reuse",
    "LOP3.LUT R4, R5.reuse, R6.reuse, R7.reuse, 0xc0, !PT",
    "FMUL R4, |R5|.reuse, -R6.reuse",
    "MOV R4, R5.reuse",
]
# a control value under which nvdisasm accepts .reuse (stall 1, no yield, no scoreboards, waits on SB2)
_CONTROL = 0x27F1 << 105


def _read_back(arch: str, texts: list[str]) -> list[str | None]:
    import sys

    sys.path.insert(0, str(ROOT / "tools" / "isa"))
    from build_tables import ARCHES, nvdisasm_raw

    enc = Encoder.for_arch(arch)
    words = [enc.encode(t).word | _CONTROL for t in texts]
    out = nvdisasm_raw(words, ARCHES[arch][1])
    return [out.get(16 * i) for i in range(len(texts))]


@needs_nvdisasm
@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90", "sm_120"])
def test_float_names_and_reuse_read_back(arch: str) -> None:
    # sm_75 and sm_120 code has no HFMA2.MMA with immediates (ptxas writes HFMA2 or MOV there)
    mma = arch in ("sm_80", "sm_90")
    texts = [t if mma else t.replace("HFMA2.MMA", "HFMA2") for t in FLOAT_TEXTS] + REUSE_TEXTS
    assert _read_back(arch, texts) == texts


# Known only through the field walk (tools/isa/walk_fields.py): a special register no training kernel read,
# a swizzle never seen on this operand of this form, reuse flags of forms trained without them.
WALKED_TEXTS = [
    "S2R R0, SR_LTMASK",
    "S2UR UR4, SR_CTAID.X",
    "HFMA2 R8, R2, R5.H1_H1, 1, 2",
    "HSET2.EQ.AND R9, R6.reuse, R5.reuse, PT",
    "I2FP.F32.S32 R12, R6.reuse",
]


@needs_nvdisasm
def test_walked_fields_read_back() -> None:
    assert Encoder.for_arch("sm_90").provenance["field_walk"]["tokens_added"]["general"] > 0
    assert _read_back("sm_90", WALKED_TEXTS) == WALKED_TEXTS


# Forms that bit-flip probing alone got wrong: float immediates whose low mantissa bits were taken for
# invisible (a probed NaN literal prints the same whatever its payload), carry-out predicates that print
# alike in two encodings (IADD3 P1 with PT, or PT with P1); and opcodes or operand kinds known only since
# the training kernels have them (tools/isa/training/texture.cu, operand_kinds.cu).
PROBED_TEXTS = [
    "FSEL R4, R5, 1.0000001192092895508, P2",
    "FSEL R4, R5, -3.4332279028603807092e-05, !P1",
    "HFMA2 R4, R5.H1_H1, R6.H0_H0, 0.0999755859375, -3",
    "IADD3 R4, P2, R6, -0x81, RZ",
    "TEX.LL RZ, R4, R4, R8, UR4, 0x0, 1D, 0x3",
    "TEX.LL RZ, R4, R4, R8, UR6, 0x0, ARRAY_CUBE, 0x3",
    "TLD4.G RZ, R8, R4, UR6, 0x0, 2D, 0x3",
    "TLD.LZ RZ, R8, R4, UR6, 0x0, 2D, 0x1",
    "TXD RZ, R8, R4, R12, UR6, 0x0, 1D, 0x1",
    "TXQ RZ, R8, R8, TEX_HEADER_DIMENSION, UR6, 0x0, 0x8",
    "SULD.D.BA.3D.STRONG.SM.IGN R4, [R6], UR5, 0x0",
    "SUST.D.BA.2D.64.STRONG.SM.TRAP [R6], R4, UR5, 0x0",
    "FLO.U32.SH R3, UR7",
    "F2FP.SATFINITE.E5M2.F16.UNPACK_B_MERGE_C R4, R6, RZ",
    "SHF.R.W.U32.HI R4, R7, R2, 0x80000001",
]


@needs_nvdisasm
def test_probed_and_trained_forms_read_back() -> None:
    assert _read_back("sm_90", PROBED_TEXTS) == PROBED_TEXTS


# A float written as its f32 bits (PTX's and CuAssembler's ``0f…``): the bits themselves in an f32 field, a
# NaN's payload as a conversion moves it elsewhere; nvdisasm reads back the value (every quiet NaN as +QNAN).
F32_BITS_TEXTS = [
    ("FSEL R7, R8, 0f7fc00000, !P1", "FSEL R7, R8, +QNAN , !P1", 0x7FC00000),
    ("FSEL R7, R8, 0f7fffffff, !P1", "FSEL R7, R8, +QNAN , !P1", 0x7FFFFFFF),
    ("FADD R4, R5, 0f3f800000", "FADD R4, R5, 1", 0x3F800000),
    ("FADD R4, R5, 0fff800000", "FADD R4, R5, -INF", 0xFF800000),
    ("DADD R4, R6, 0fffc00000", "DADD R4, R6, -QNAN", 0xFFF80000),  # f64's high half
]


@needs_nvdisasm
def test_floats_written_as_f32_bits_set_exactly_those_bits() -> None:
    enc = Encoder.for_arch("sm_90")
    words = [enc.encode(text).word for text, _, _ in F32_BITS_TEXTS]
    assert [w >> 32 & 0xFFFFFFFF for w in words] == [bits for *_, bits in F32_BITS_TEXTS]
    assert words[0] != words[1]  # the payload the text +QNAN cannot show
    assert _read_back("sm_90", [t for t, _, _ in F32_BITS_TEXTS]) == [shown for _, shown, _ in F32_BITS_TEXTS]
    # a NaN payload a half cannot hold is refused, not dropped
    with pytest.raises(EncodeError, match="loses its payload"):
        enc.encode("HADD2 R0, R1, 0f7f800001, 0.5")


def test_verification_compares_a_written_float_by_value() -> None:
    assert texts_equivalent("FSEL R7, R8, 0f7fc00000, !P1", "FSEL R7, R8, +QNAN , !P1")
    assert texts_equivalent("FADD R4, R5, 0f3f800000", "FADD R4, R5, 1")
    assert not texts_equivalent("FADD R4, R5, 0f3f800000", "FADD R4, R5, 2")
    assert not texts_equivalent("FADD R4, R5, 0f3f800000", "FADD R4, R6, 1")
    assert not texts_equivalent("FSEL R7, R8, 0fffc00000, !P1", "FSEL R7, R8, +QNAN , !P1")  # the sign
    assert not texts_equivalent("FSEL R7, R8, -QNAN , !P1", "FSEL R7, R8, +QNAN , !P1")
