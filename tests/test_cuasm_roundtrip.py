"""cubin -> .cuasm -> cubin is byte-identical; CuAssembler's own corpus files assemble to their cubins."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from collections.abc import Mapping
from functools import cache
from pathlib import Path

import pytest
from paths import TRITON_CORPUS

from sass_lsp.cuasm.assembler import AssembleError, assemble_cuasm, assemble_module
from sass_lsp.cuasm.ctrl import CTRL_MASK
from sass_lsp.cuasm.disasm import Disassembly, disassemble, normalise_text
from sass_lsp.cuasm.parser import parse_cuasm
from sass_lsp.cuasm.writer import default_encoder, write_cuasm
from sass_lsp.elf import cubin_arch, parse_nvinfo, parse_symbols, read_cubin, write_cubin

CORPUS = TRITON_CORPUS
CORPUS_CUBINS = sorted(CORPUS.glob("*.cubin"))
KERNELS = r"""
__device__ __noinline__ float helper(float x, int k) { return x * k + 1.0f; }
__global__ void k_saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = helper(a * x[i], i) + y[i];
}
__global__ void k_loop(float* y, int n) {
  float acc = 0;
  for (int i = 0; i < n; ++i) acc += __sinf(y[i]) * helper(y[i], i);
  y[threadIdx.x] = acc;
}
"""


@cache
def _disasm(path: Path) -> Disassembly:
    return disassemble(path.read_bytes())


def stub_by_pc(dis: Disassembly):  # noqa: ANN201
    """Encoder stub: the real word (without control bits) of the instruction at (pc, text)."""
    table: dict[tuple[int, str], int] = {}
    for sec in dis.sections.values():
        for ins in sec.instrs:
            table.setdefault((ins.pc, normalise_text(ins.text)), ins.word & ~CTRL_MASK)

    def encode(text: str, *, pc: int, labels: Mapping[str, int]) -> int:
        return table[(pc, normalise_text(text))]

    return encode


def stub_by_text(dis: Disassembly):  # noqa: ANN201
    """Encoder stub keyed by text only, dropping bit 101: exercises the ``// hidden`` trailers."""
    table: dict[str, int] = {}
    for sec in dis.sections.values():
        for ins in sec.instrs:
            table.setdefault(normalise_text(ins.text), ins.word & ~CTRL_MASK & ~(1 << 101))

    def encode(text: str, *, pc: int, labels: Mapping[str, int]) -> int:
        return table[normalise_text(text)]

    return encode


@pytest.fixture(scope="session")
def cuda13_dir(request: pytest.FixtureRequest) -> Path:
    """Cubins from the local CUDA 13 nvcc, cached in pytest's cache by source and nvcc version."""
    nvcc = shutil.which("nvcc")
    assert nvcc, "nvcc (CUDA 13) is required"
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    key = hashlib.sha256((KERNELS + version).encode()).hexdigest()[:16]
    tmp = Path(request.config.cache.mkdir(f"sass_lsp_cuda13_{key}"))
    arches = ("sm_90a", "sm_80", "sm_120")
    if not all((tmp / f"{a}.cubin").is_file() for a in arches):
        (tmp / "k.cu").write_text(KERNELS)
        procs = [
            subprocess.Popen([nvcc, "-cubin", f"-arch={a}", "-o", str(tmp / f"{a}.cubin"), str(tmp / "k.cu")])
            for a in arches
        ]
        assert all(p.wait() == 0 for p in procs)
    return tmp


@pytest.mark.parametrize("path", CORPUS_CUBINS, ids=lambda p: p.stem)
def test_corpus_write_then_assemble_is_identical(path: Path) -> None:
    data = path.read_bytes()
    dis = _disasm(path)
    encode = stub_by_pc(dis)
    text = write_cuasm(data, source_name=path.name, encode=encode, disassembly=dis)
    # Texts are verified by the product-path test; here only the container is under test.
    assert assemble_cuasm(text, source_name=path.name, encode=encode, verify=False) == data


def test_cuda13_write_then_assemble_is_identical(cuda13_dir: Path) -> None:
    for path in sorted(cuda13_dir.glob("*.cubin")):
        data = path.read_bytes()
        dis = _disasm(path)
        encode = stub_by_text(dis)
        text = write_cuasm(data, source_name=path.name, encode=encode, disassembly=dis)
        assert ".note.nv.tkinfo" in text and "// hidden 0x" in text
        assert assemble_cuasm(text, source_name=path.name, encode=encode, verify=False) == data, path.name


def test_hidden_trailers_restore_dropped_bits() -> None:
    path = CORPUS / "triton_matmul.cubin"
    data, dis = path.read_bytes(), _disasm(path)
    by_pc = stub_by_pc(dis)

    def encode(text: str, *, pc: int, labels: Mapping[str, int]) -> int:
        # An encoder blind to bit 100 on global memory ops: the trailer must carry that bit.
        word = by_pc(text, pc=pc, labels=labels)
        return word ^ (1 << 100) if "LDG" in text or "STG" in text else word

    text = write_cuasm(data, source_name=path.name, encode=encode, disassembly=dis)
    n_hidden = len(re.findall(r"// hidden 0x0*10000000000000000000000000 *$", text, re.M))
    n_mem = sum("LDG" in i.text or "STG" in i.text for s in dis.sections.values() for i in s.instrs)
    assert n_hidden == n_mem > 0
    assert assemble_cuasm(text, source_name=path.name, encode=encode, verify=False) == data


@pytest.mark.parametrize("path", CORPUS_CUBINS, ids=lambda p: p.stem)
def test_product_path_round_trip(path: Path) -> None:
    """No ``encode`` argument: the real encoder, with ``// hidden`` / ``// raw`` trailers; exact."""
    data = path.read_bytes()
    text = write_cuasm(data, source_name=path.name, disassembly=_disasm(path))
    assert assemble_cuasm(text, source_name=path.name, encode=default_encoder(cubin_arch(data))) == data


def test_product_path_round_trip_cuda13(cuda13_dir: Path) -> None:
    for path in sorted(cuda13_dir.glob("*.cubin")):
        data = path.read_bytes()
        text = write_cuasm(data, source_name=path.name, disassembly=_disasm(path))
        encode = default_encoder(cubin_arch(data))
        if encode is None:  # no encoder tables for this arch yet: every word is kept raw
            assert text.count("// raw 0x") == text.count("      [B")
        assert assemble_cuasm(text, source_name=path.name, encode=encode) == data, path.name


def with_fallback(real, fallback, counts: dict[str, int]):  # noqa: ANN001, ANN201
    """The real encoder, falling back to the stub where it cannot encode (counted, for the report)."""

    def encode(text: str, *, pc: int, labels: Mapping[str, int]) -> int:
        if real is not None:
            try:
                word = real(text, pc=pc, labels=labels).word
                counts["real"] += 1
                return word
            except Exception:
                pass
        counts["fallback"] += 1
        return fallback(text, pc=pc, labels=labels)

    return encode


@pytest.mark.parametrize("path", CORPUS_CUBINS, ids=lambda p: p.stem)
def test_cuassembler_corpus_file_assembles_to_its_cubin(path: Path) -> None:
    """Container half, with the stub encoder: CuAssembler's file gives back the exact cubin."""
    cuasm_text = path.with_suffix(".cuasm").read_text()
    module, diags = parse_cuasm(cuasm_text)
    assert diags == []
    assert (
        assemble_cuasm(cuasm_text, source_name=path.name, encode=stub_by_pc(_disasm(path)))
        == path.read_bytes()
    )


@pytest.mark.parametrize("path", CORPUS_CUBINS, ids=lambda p: p.stem)
def test_cuassembler_corpus_file_with_real_encoder(path: Path) -> None:
    """Product path: either the exact cubin up to hidden bits in instruction words, or an
    AssembleError naming every line whose word does not disassemble to its text (never wrong bytes)."""
    cuasm_text = path.with_suffix(".cuasm").read_text()
    counts = {"real": 0, "fallback": 0}
    encode = with_fallback(default_encoder("sm_90"), stub_by_pc(_disasm(path)), counts)
    data = path.read_bytes()
    try:
        out = assemble_cuasm(cuasm_text, source_name=path.name, encode=encode)
    except AssembleError as err:
        assert err.diagnostics and all(d.line > 0 and d.col > 0 and d.hint for d in err.diagnostics)
        print(
            f"{path.stem}: {len(err.diagnostics)} instructions rejected by the verifier "
            f"(real-encoded {counts['real']}, stub {counts['fallback']})"
        )
        return
    text_ranges = [
        (s.offset, s.offset + s.size) for s in read_cubin(data).sections if s.name.startswith(".text")
    ]
    diff_slots = [i for i in range(0, len(data), 16) if out[i : i + 16] != data[i : i + 16]]
    assert len(out) == len(data)
    assert all(any(a <= i < b for a, b in text_ranges) for i in diff_slots)
    print(
        f"{path.stem}: real-encoded {counts['real']}, stub {counts['fallback']}, "
        f"{len(diff_slots)} words differ in hidden bits"
    )


def test_control_code_edit_changes_only_control_bits() -> None:
    path = CORPUS / "triton_add.cubin"
    data, dis = path.read_bytes(), _disasm(path)
    encode = stub_by_pc(dis)
    text = write_cuasm(data, encode=encode, disassembly=dis)
    edited = text.replace(
        "[B------:R-:W1:-:S07]         /*0010*/", "[B------:R-:W1:Y:S09]         /*0010*/", 1
    )
    assert edited != text
    out = assemble_cuasm(edited, encode=encode)
    text_sec = read_cubin(data).section(".text.add_kernel")
    assert text_sec is not None
    pos = text_sec.offset + 0x10
    before = int.from_bytes(data[pos : pos + 16], "little")
    after = int.from_bytes(out[pos : pos + 16], "little")
    assert (before ^ after) & ~CTRL_MASK == 0 and before != after
    assert out[:pos] == data[:pos] and out[pos + 16 :] == data[pos + 16 :]


def test_inserted_instruction_relayouts_file() -> None:
    path = CORPUS / "triton_add.cubin"
    data, dis = path.read_bytes(), _disasm(path)
    pc_stub = stub_by_pc(dis)
    nop_word = next(i.word for i in dis.sections[".text.add_kernel"].instrs if i.text.startswith("NOP"))

    def encode(text: str, *, pc: int, labels: Mapping[str, int]) -> int:
        return nop_word & ~CTRL_MASK if text.startswith("NOP") else pc_stub(text, pc=pc, labels=labels)

    text = write_cuasm(data, encode=encode, disassembly=dis)
    last_nop = "/*0370*/                   NOP;\n"
    assert last_nop in text
    edited = text.replace(last_nop, last_nop + "      [B------:R-:W-:Y:S00]         /*0380*/  NOP;\n")
    out = assemble_cuasm(edited, encode=encode)  # the verifier disassembles the new layout
    new = read_cubin(out)
    sec = new.section(".text.add_kernel")
    assert sec is not None and sec.size == 0x390 and sec.offset % 128 == 0
    syms = parse_symbols(new.section(".symtab").data, new.section(".strtab").data)  # type: ignore[union-attr]
    assert next(s for s in syms if s.name == "add_kernel").size == 0x390
    assert write_cubin(new) == out


def test_regcount_raised_for_higher_register() -> None:
    path = CORPUS / "triton_add.cubin"
    data, dis = path.read_bytes(), _disasm(path)
    words = {i.pc: i.word & ~CTRL_MASK for i in dis.sections[".text.add_kernel"].instrs}
    text = write_cuasm(data, encode=stub_by_pc(dis), disassembly=dis)
    edited = text.replace("CS2R R16, SRZ ;", "CS2R R200, SRZ ;", 1)
    module, diags = parse_cuasm(edited)
    assert diags == []
    cubin, diags = assemble_module(module, encode=lambda text, *, pc, labels: words[pc])
    assert cubin is not None and diags == []
    nvinfo = cubin.section(".nv.info")
    assert nvinfo is not None
    regcount = [a for a in parse_nvinfo(nvinfo.data)[0] if a.name == "EIATTR_REGCOUNT"]
    assert regcount[0].words() == [9, 204]  # CS2R writes the pair R200:R201


def test_regcount_covers_the_high_half_of_a_wide_register() -> None:
    """A 64-bit pair or a 128-bit quad counts to its last register: ``LDC.64 R200`` writes R200:R201, so the
    kernel needs 201 + 1 + 2 registers (counting the named R200 only, an H100 faulted on such an edit)."""
    from sass_lsp.cuasm.assembler import registers_needed

    assert registers_needed(["LDC.64 R200, c[0x0][0x210] ;"], "sm_90") == 204
    assert registers_needed(["LDG.E.128 R12, desc[UR4][R200.64] ;"], "sm_90") == 204
    assert registers_needed(["LDG.E.128 R196, desc[UR4][R2.64] ;"], "sm_90") == 202
    assert registers_needed(["FADD R7, R5, R6 ;", "EXIT ;"], "sm_90") == 10
    assert registers_needed(["EXIT ;"], "sm_90") == 0


def test_missing_header_fields_are_derived_from_directives() -> None:
    """Hand-written files may omit .__section_* fields that the .section line and directives imply."""
    path = CORPUS / "rmsnorm_f32_4096.cubin"
    data, dis = path.read_bytes(), _disasm(path)
    text = write_cuasm(data, encode=stub_by_pc(dis), disassembly=dis)
    out_lines, section = [], ""
    for line in text.splitlines():
        if line.lstrip().startswith(".section"):
            section = line
        if (".text." in section and ".__section_flags" in line) or (
            "SHT_RELA" in section and (".__section_link" in line or ".__section_info" in line)
        ):
            continue
        out_lines.append(line)
    stripped = "\n".join(out_lines) + "\n"
    assert stripped.count("\n") < text.count("\n")
    assert assemble_cuasm(stripped, encode=stub_by_pc(dis), verify=False) == data


def _raw_words_only(text: str, **_: object) -> int:
    raise LookupError("this test keeps every word in a '// raw' trailer")


def test_regcount_raised_in_sh_info_on_sm80(cuda13_dir: Path) -> None:
    """sm_80 under CUDA 13 keeps the register count in the text section's sh_info bits 24-31."""
    data = (cuda13_dir / "sm_80.cubin").read_bytes()
    text = write_cuasm(data, disassembly=_disasm(cuda13_dir / "sm_80.cubin"), encode=_raw_words_only)
    before = read_cubin(data).section(".text._Z6k_loopPfi")
    assert before is not None and before.info >> 24
    head, body = text.split(".section\t.text._Z6k_loopPfi,", 1)
    body = body.replace("MOV.U32 R1, RZ, RZ, c[0x0][0x28]", "MOV.U32 R250, RZ, RZ, c[0x0][0x28]", 1)
    module, diags = parse_cuasm(head + ".section\t.text._Z6k_loopPfi," + body)
    assert diags == []
    cubin, diags = assemble_module(module, encode=None)  # words come from the "// raw" trailers
    assert cubin is not None and diags == []
    after = cubin.section(".text._Z6k_loopPfi")
    assert after is not None and after.info >> 24 == 253 and after.info & 0xFFFFFF == before.info & 0xFFFFFF


NAN_KERNEL = r"""
#include <math.h>
extern "C" __global__ void nan_select(float *out, const float *in) {
    float x = in[threadIdx.x];
    out[threadIdx.x] = x > 1.0f ? NAN : x * 3.0f;                        // C's NAN: 0x7fc00000
    out[threadIdx.x + 64] = x < -1.0f ? __int_as_float(0x7fffffff) : x;  // CUDA's: 0x7fffffff
}
"""


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_a_nan_payload_the_text_cannot_show_is_written_as_f32_bits(tmp_path: Path) -> None:
    """nvdisasm prints both NaN constants as +QNAN. The writer spells out the one the encoder would not
    assume, so the file's text alone (no trailers) assembles to the cubin, checked by nvdisasm."""
    (tmp_path / "k.cu").write_text(NAN_KERNEL)
    cubin = tmp_path / "k.cubin"
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-o", str(cubin), str(tmp_path / "k.cu")], check=True)
    data = cubin.read_bytes()
    text = write_cuasm(data, source_name=cubin.name)
    fsel = [line for line in text.splitlines() if " FSEL " in line]
    assert any("0f7fc00000" in line for line in fsel) and any("+QNAN" in line for line in fsel)
    assert "// hidden" not in text and "// raw" not in text
    assert assemble_cuasm(text, source_name=cubin.name) == data
    # the payload is what the spelling carries: +QNAN in its place assembles to CUDA's NaN instead
    assert assemble_cuasm(text.replace("0f7fc00000", "+QNAN"), source_name=cubin.name) != data
