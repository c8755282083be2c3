"""Text-only encodings of held-out instructions the encoder used to miss, against the words ptxas wrote.

Every word below was copied from ``nvdisasm -hex`` of a held-out cubin (``tools/isa/heldout/*.cu`` or the
Triton corpus compiled by ``benchmarks/encoder_coverage.py``), never produced by our encoder; the training
kernels (``tools/isa/training``) never held these instructions. The control bits are the word's own (the
encoder leaves them zero), as the coverage benchmark does.
"""

import gzip
import json

import pytest

from sass_lsp.isa.control import CONTROL_MASK
from sass_lsp.isa.encoder import Encoder
from sass_lsp.isa.features import nan_from_f32, nan_to_f32
from tests.paths import ROOT

# (arch, text, word) -- held-out source of each word in the comment
WORDS = [
    # URZ is 255 from sm_100 on (UR63 is a register there): sm_100a / sm_120 wrote 0xff in these fields
    ("sm_100a", "UIADD3 UR9, UPT, UPT, -UR8, URZ, URZ", 0x000FE4000FFFE1FF000000FF08097290),  # calls.cu
    ("sm_120", "UIADD3 UR4, UPT, UPT, -UR4, URZ, URZ", 0x000FE2000FFFE1FF000000FF04047290),  # calls.cu
    ("sm_100a", "UIADD3.X UR9, UPT, UPT, URZ, URZ, URZ, UP0, !UPT", 0x000FC400087FE4FF000000FFFF097290),
    ("sm_100a", "ATOMS.POPC.INC.32 RZ, [R6+URZ]", 0x0001EE000D8000FF0000000006FF7F8C),  # atomics.cu
    ("sm_120", "ATOMS.POPC.INC.32 RZ, [R6+URZ]", 0x0001EE000D8000FF0000000006FF7F8C),
    ("sm_120", "UIMAD.WIDE.U32 UR4, UR5, UR7, URZ", 0x004FC8000F8E00FF00000007050472A5),  # heldout.cu
    ("sm_100a", "UIMAD.WIDE.U32 UR4, UR5, UR7, URZ", 0x004FC8000F8E00FF00000007050472A5),
    ("sm_120", "LDCU.128 UR12, c[0x3][URZ]", 0x000E660008000C0000C00000FF0C77AC),  # memory.cu
    ("sm_100a", "LDCU.128 UR12, c[0x3][URZ]", 0x000E660008000C0000C00000FF0C77AC),
    # FSEL's f32 immediate: a column two training payloads of -QNAN contradicted on was left to majority vote
    ("sm_100a", "FSEL R3, R3, -1, P0", 0x000FE40000000000BF80000003037808),  # math.cu
    ("sm_100a", "FSEL R8, -R8, -0.00082130916416645050049, P0", 0x000FE40000000100BA574D2008087808),
    ("sm_120", "FSEL R6, R6, -0.00019574658654164522886, !P0", 0x000FE20004000000B94D415306067808),
    ("sm_120", "FSEL R7, -R7, -0.16666662693023681641, !P0", 0x000FCA0004000100BE2AAAA807077808),
    # NaN literals: the payload ptxas writes most often in training (CUDA's NaN constant 0x7fffffff; as a
    # half, 0x7fff), and -QNAN's from a double's high half (fp64.cu)
    ("sm_75", "HFMA2 R4, R3.H0_H0, R4.H1_H1, +QNAN , +QNAN", 0x000FE400000608047FFF7FFF03047431),
    ("sm_80", "HFMA2 R8, R2.H0_H0, R5.H1_H1, +QNAN , +QNAN", 0x000FE200000608057FFF7FFF02087431),
    ("sm_90", "HFMA2 R9, R6.H0_H0, R5.H1_H1, +QNAN , +QNAN", 0x000FCE00000608057FFF7FFF06097431),
    ("sm_120", "HFMA2 R10, R0.H0_H0, R7.H1_H1, +QNAN , +QNAN", 0x000FCE00000608077FFF7FFF000A7431),
    ("sm_90", "MUFU.RSQ R0, -QNAN", 0x000E220000001400FFC0000000007908),  # math.cu
    ("sm_75", "MUFU.RSQ R9, -QNAN", 0x000E220000001400FFC0000000097908),
    # FP8 wgmma (Triton fp8_blockscale_gemm): N=128 never trained, known because the shape's N is a field;
    # the form without gsb0 that takes a scale-d predicate comes from training/fp8_tensor.cu
    ("sm_90", "QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], RZ, !UPT", 0x000FE2000C7008FF01E00000081879F3),
    ("sm_90", "QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], R24", 0x000FE2000870081801E00000081879F3),
    ("sm_90", "QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], R24, gsb0", 0x000FE2000800081801E00000081879F3),
    # sm_120 mma.sync on e4m3 x e5m2 (tensor_mma.cu): trained on other type pairs (training/fp8_tensor.cu)
    ("sm_120", "QMMA.16832.F32.E4M3.E5M2 R4, R12, R2, R4", 0x000FDE000000AC04000000020C04727A),
]


@pytest.mark.parametrize(("arch", "text", "word"), WORDS)
def test_heldout_word(arch: str, text: str, word: int) -> None:
    got = Encoder.for_arch(arch).encode(text).word
    assert f"{got:032x}" == f"{word & ~CONTROL_MASK:032x}"


def test_urz_is_255_from_sm_100_and_63_before() -> None:
    assert Encoder.for_arch("sm_100a").ur_zero == Encoder.for_arch("sm_120").ur_zero == 255
    assert Encoder.for_arch("sm_90").ur_zero == 63
    # sm_90: URZ and UR63 are one field value (the same word)
    enc = Encoder.for_arch("sm_90")
    urz = enc.encode("UIADD3 UR21, UR24, -0x60, URZ").word
    assert urz == enc.encode("UIADD3 UR21, UR24, -0x60, UR63").word
    # sm_100a: UR63 is a register, URZ field value 255
    enc = Encoder.for_arch("sm_100a")
    urz = enc.encode("UIADD3 UR9, UPT, UPT, -UR8, URZ, URZ").word
    assert urz ^ enc.encode("UIADD3 UR9, UPT, UPT, -UR8, UR63, URZ").word == 0xC0 << 32


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100a", "sm_120"])
def test_nan_payloads_have_provenance(arch: str) -> None:
    """The table says which payload ptxas wrote for each NaN literal, with the counts it was chosen from."""
    with gzip.open(ROOT / "sass_lsp" / "isa" / "data" / f"{arch}.json.gz", "rt") as fh:
        table = json.load(fh)
    counts = table["provenance"]["nan_payloads"]["f32_payloads"]
    assert table["nan"]["+QNAN"] == max(counts["+QNAN"], key=counts["+QNAN"].get)
    assert all(int(v, 16) & 0x7F800000 == 0x7F800000 and int(v, 16) & 0x7FFFFF for v in table["nan"].values())


def test_nan_payload_moves_between_formats_as_a_conversion_does() -> None:
    assert nan_from_f32(0x7FFFFFFF, 0) == 0x7FFF  # f16: __float2half(NAN)
    assert nan_from_f32(0xFFC00000, 3) == 0xFFF80000  # f64's high half
    assert nan_from_f32(0x7FC00000, 1) == 0x7FC0  # bf16
    assert nan_to_f32(0xFFF80000, 3) == 0xFFC00000
    assert nan_from_f32(0x7F800001, 0) is None  # nothing of the payload is left in a half
