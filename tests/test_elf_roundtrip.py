"""cubin -> model -> bytes is the identity; arch detection; .nv.info records."""

from __future__ import annotations

import hashlib
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from paths import TRITON_CORPUS

from sass_lsp.elf import (
    cubin_arch,
    parse_notes,
    parse_nvinfo,
    parse_relocations,
    parse_symbols,
    read_cubin,
    write_cubin,
    write_notes,
    write_nvinfo,
)
from sass_lsp.elf.model import SHT_CUDA_INFO, SHT_NOTE, SHT_REL, SHT_RELA
from sass_lsp.elf.nvinfo import NvInfoAttr

CORPUS = TRITON_CORPUS
CORPUS_CUBINS = sorted(CORPUS.glob("*.cubin"))

CUDA13_SOURCE = r"""
__device__ __noinline__ float helper(float x, int k) { return x * k + 1.0f; }
__device__ __noinline__ int ihelper(int a) { return a ^ (a >> 3); }
__global__ void k_saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = helper(a * x[i], i) + y[i];
}
__global__ void k_reduce(const int* x, int* out, int n) {
  __shared__ int s[256];
  int t = threadIdx.x;
  s[t] = t < n ? ihelper(x[t]) : 0;
  __syncthreads();
  for (int w = 128; w > 0; w >>= 1) { if (t < w) s[t] += s[t + w]; __syncthreads(); }
  if (t == 0) atomicAdd(out, s[0]);
}
__global__ void k_loop(float* y, int n) {
  float acc = 0;
  for (int i = 0; i < n; ++i) acc += __sinf(y[i]) * helper(y[i], i);
  y[threadIdx.x] = acc;
}
"""
CUDA13_ARCHES = ["sm_90a", "sm_80", "sm_120"]


@pytest.fixture(scope="session")
def cuda13_cubins(request: pytest.FixtureRequest) -> dict[str, bytes]:
    """Cubins built by the local CUDA 13 nvcc (several kernels, device-function calls per file);
    cached in pytest's cache by source and nvcc version."""
    nvcc = shutil.which("nvcc")
    assert nvcc, "nvcc (CUDA 13) is required for the CUDA-13 layout tests"
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    key = hashlib.sha256((CUDA13_SOURCE + version).encode()).hexdigest()[:16]
    tmp = Path(request.config.cache.mkdir(f"sass_lsp_elf_cuda13_{key}"))
    if not all((tmp / f"{a}.cubin").is_file() for a in CUDA13_ARCHES):
        src = tmp / "multi.cu"
        src.write_text(CUDA13_SOURCE)
        procs = {
            a: subprocess.Popen([nvcc, "-cubin", f"-arch={a}", "-o", str(tmp / f"{a}.cubin"), str(src)])
            for a in CUDA13_ARCHES
        }
        for arch, proc in procs.items():
            assert proc.wait() == 0, f"nvcc failed for {arch}"
    return {a: (tmp / f"{a}.cubin").read_bytes() for a in CUDA13_ARCHES}


@pytest.mark.parametrize("path", CORPUS_CUBINS, ids=lambda p: p.stem)
def test_corpus_cubin_model_round_trip(path: Path) -> None:
    data = path.read_bytes()
    cubin = read_cubin(data)
    assert write_cubin(cubin) == data
    assert cubin_arch(data) == "sm_90"
    assert (cubin.header.osabi, cubin.header.abiversion) == (0x33, 7)


def test_cuda13_cubins_round_trip(cuda13_cubins: dict[str, bytes]) -> None:
    for arch, data in cuda13_cubins.items():
        cubin = read_cubin(data)
        assert write_cubin(cubin) == data, arch
        assert (cubin.header.osabi, cubin.header.abiversion) == (0x41, 8)
        assert cubin_arch(data) == arch.rstrip("a")
        names = {s.name for s in cubin.sections}
        assert {".note.nv.tkinfo", ".note.nv.cuinfo"} <= names
        assert (".nv.compat" in names) == (arch != "sm_80")
        assert all(s.type == SHT_NOTE for s in cubin.sections if s.name.startswith(".note"))


def test_cuda13_relocations_and_symbols(cuda13_cubins: dict[str, bytes]) -> None:
    cubin = read_cubin(cuda13_cubins["sm_80"])
    symtab, strtab = cubin.section(".symtab"), cubin.section(".strtab")
    assert symtab and strtab
    names = [s.name for s in parse_symbols(symtab.data, strtab.data)]
    assert "_Z7k_saxpyfPKfPfi" in names and "$_Z7k_saxpyfPKfPfi$_Z6helperfi" in names
    # sm_80 keeps REL; sm_90a uses RELA with the addend for the (sym + label@srel) entries.
    rel = [r for s in cubin.sections if s.type == SHT_REL for r in parse_relocations(s)]
    assert rel and all(r.addend is None and r.type == 2 for r in rel)
    rela_cubin = read_cubin(cuda13_cubins["sm_90a"])
    rela = [r for s in rela_cubin.sections if s.type == SHT_RELA for r in parse_relocations(s)]
    assert any(r.addend for r in rela)


def test_nvinfo_records_round_trip_on_corpus() -> None:
    seen = set()
    for path in CORPUS_CUBINS:
        for sec in read_cubin(path.read_bytes()).sections:
            if sec.type == SHT_CUDA_INFO:
                attrs, tail = parse_nvinfo(sec.data)
                assert write_nvinfo(attrs, tail) == sec.data
                assert tail == b""
                seen |= {a.name for a in attrs}
    assert {"EIATTR_REGCOUNT", "EIATTR_KPARAM_INFO", "EIATTR_EXIT_INSTR_OFFSETS"} <= seen


def test_nvinfo_cuda13_num_barriers(cuda13_cubins: dict[str, bytes]) -> None:
    cubin = read_cubin(cuda13_cubins["sm_90a"])
    sec = cubin.section(".nv.info._Z8k_reducePKiPii")
    assert sec is not None
    attrs, tail = parse_nvinfo(sec.data)
    assert tail == b"" and write_nvinfo(attrs, tail) == sec.data
    barriers = [a for a in attrs if a.name == "EIATTR_NUM_BARRIERS"]
    assert barriers and barriers[0].payload == b"\x01" and barriers[0].pad == b"\x00"


def test_nvinfo_sm90_attributes() -> None:
    # MBARRIER_INSTR_OFFSETS: 16-byte entries (offset, 0xff word, 0 word, short, byte, pad) per notes §4.5.
    mbar_entry = struct.pack("<IIIHBB", 0x1A0, 0xFF, 0, 1, 0, 0)
    data = (
        NvInfoAttr(4, 0x39, mbar_entry).to_bytes()
        + NvInfoAttr(3, 0x38, b"\x01\x00").to_bytes()
        + NvInfoAttr(2, 0x4C, b"\x01").to_bytes()
        + b"\x00"
        + NvInfoAttr(4, 0x2F, struct.pack("<II", 9, 26)).to_bytes()
    )
    attrs, tail = parse_nvinfo(data)
    names = [a.name for a in attrs]
    assert names == [
        "EIATTR_MBARRIER_INSTR_OFFSETS",
        "EIATTR_NUM_MBARRIERS",
        "EIATTR_NUM_BARRIERS",
        "EIATTR_REGCOUNT",
    ]
    assert tail == b""
    assert attrs[0].words()[0] == 0x1A0
    assert write_nvinfo(attrs, tail) == data


def test_cubin_arch_both_layouts() -> None:
    head = bytearray(64)
    head[:4] = b"\x7fELF"
    head[7] = 0x33
    struct.pack_into("<I", head, 48, 0x5A0D5A)
    assert cubin_arch(bytes(head)) == "sm_90"
    head[7] = 0x41
    struct.pack_into("<I", head, 48, 0x6005A04)
    assert cubin_arch(bytes(head)) == "sm_90"
    struct.pack_into("<I", head, 48, 0x6007802)
    assert cubin_arch(bytes(head)) == "sm_120"
    with pytest.raises(ValueError):
        cubin_arch(b"not an elf")


def test_cuda13_note_sections(cuda13_cubins: dict[str, bytes]) -> None:
    sm = {"sm_90a": 0x5A, "sm_80": 0x50, "sm_120": 0x78}
    for arch, data in cuda13_cubins.items():
        cubin = read_cubin(data)
        for sec in cubin.sections:
            if sec.type == SHT_NOTE:
                notes, tail = parse_notes(sec.data)
                assert tail == b"" and write_notes(notes, tail) == sec.data
                assert notes[0].name == b"NVIDIA Corp\x00"
        cuinfo = cubin.section(".note.nv.cuinfo")
        assert cuinfo is not None
        version, sm_code, toolkit = struct.unpack_from("<HHH", parse_notes(cuinfo.data)[0][0].desc)
        assert (version, sm_code) == (2, sm[arch]) and toolkit >= 0x82  # 0x82: CUDA 13.0
        tkinfo = cubin.section(".note.nv.tkinfo")
        assert tkinfo is not None and "ptxas" in parse_notes(tkinfo.data)[0][0].strings()
