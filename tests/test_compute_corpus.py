"""The compute-bound kernel set (issue #33): the frozen split file, the CUDA C kernels it names (conv2d's
semantics and its nvcc build), and byte-exact disassembly/reassembly of every corpus cubin, which covers the
Triton kernels of tools/make_compute_corpus.py as soon as they are added to sass_lsp/corpus/sm_90."""

from __future__ import annotations

import datetime
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT, TRITON_CORPUS

from sass_lsp.cuasm import assemble_cuasm, write_cuasm
from sass_lsp.gpu.from_json import spec_from_json
from sass_lsp.gpu.spec import BufferParam

sys.path.insert(0, str(ROOT / "benchmarks"))
from kernel_split import SET_NAMES, SplitError, kernel_origin, load_split  # noqa: E402

KERNELS = ROOT / "benchmarks" / "kernels"
# Written by tools/make_compute_corpus.py on a GPU machine: until their files are in the corpus these may be
# absent; once present they are checked like every other member (the tests below iterate over the corpus).
TRITON_PENDING = {"fp8_blockscale_gemm", "bf16_gemm", "flash_attn_fwd"}
CORPUS_CUBINS = sorted(TRITON_CORPUS.glob("*.cubin"))


def test_split_is_frozen_and_disjoint() -> None:
    split = load_split()
    assert split.frozen == datetime.date(2026, 12, 5)
    assert set(split.sets) == set(SET_NAMES)
    names = [n for key in SET_NAMES for n in split.sets[key]]
    assert len(names) == len(set(names)) == 15
    assert set(split.sets["held_out"]) == TRITON_PENDING | {"conv2d"}


def test_split_names_existing_kernels() -> None:
    """Every name is a CUDA C kernel with a launch spec or a corpus Triton kernel; only the Triton held-out
    kernels not generated yet may be missing."""
    split = load_split()
    missing = {n for key in SET_NAMES for n in split.sets[key] if kernel_origin(n, TRITON_CORPUS) is None}
    assert missing <= TRITON_PENDING
    assert kernel_origin("conv2d", TRITON_CORPUS) == "CUDA C"
    assert kernel_origin("triton_matmul", TRITON_CORPUS) == "Triton"


GOOD_SETS = 'held_out = ["a"]\ntrain = ["b"]\nmemory_bound = ["c"]\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "frozen = 2026-01-01\n[sets]\n" + GOOD_SETS.replace('["b"]', '["b", "a"]'),
            "a in both held_out and train",
        ),
        ('frozen = 2026-01-01\n[sets]\nheld_out = ["a"]\ntrain = ["b"]\n', "must have exactly"),
        ('frozen = "today"\n[sets]\n' + GOOD_SETS, "frozen"),
        ("frozen = 2026-01-01\n[sets]\n" + GOOD_SETS.replace('["a"]', "[]"), "held_out"),
        ("frozen = 2026-01-01\n[sets]\n" + GOOD_SETS.replace('["a"]', '["a", "a"]'), "twice"),
        ("frozen = [", "split.toml"),
    ],
)
def test_split_rejects_broken_files(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "good.toml").write_text("frozen = 2026-01-01\n[sets]\n" + GOOD_SETS)
    assert load_split(tmp_path / "good.toml").sets["train"] == ("b",)  # the broken ones differ only as named
    path = tmp_path / "split.toml"
    path.write_text(text)
    with pytest.raises(SplitError, match=message) as info:
        load_split(path)
    assert str(info.value).startswith(str(path))


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


@needs_nvcc
def test_split_cuda_kernels_load_and_round_trip(tmp_path: Path) -> None:
    """reorder_eval.load_kernels builds every CUDA C member with nvcc and reads its launch spec; each cubin
    disassembles and reassembles byte for byte."""
    from reorder_eval import load_kernels

    split = load_split()
    names = [n for key in SET_NAMES for n in split.sets[key] if kernel_origin(n, TRITON_CORPUS) == "CUDA C"]
    assert set(names) == {"conv2d", "sgemm_tiled", "stencil2d", "fma_2k"}
    loaded = load_kernels(names, tmp_path)
    assert [name for name, *_ in loaded] == names
    for name, origin, cubin, spec in loaded:
        assert origin == "CUDA C"
        assert spec.kernel == name
        assert assemble_cuasm(write_cuasm(cubin, source_name=name), source_name=name) == cubin, name
    conv = next(spec for name, _, _, spec in loaded if name == "conv2d")
    assert conv.grid == (8, 32, 8) and conv.block == (256, 1, 1)
    shapes = {p.name: p.shape for p in conv.params if isinstance(p, BufferParam)}
    assert shapes == {"in": (64 * 514 * 514,), "w": (64 * 64 * 9,), "out": (64 * 512 * 512,)}


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_conv2d_matches_direct_convolution(tmp_path: Path) -> None:
    """conv2d.cu run on the CPU (a std::thread per CUDA thread, std::barrier for __syncthreads) against a
    naive convolution on a small image: every output written and within 1e-4."""
    exe = tmp_path / "conv2d_check"
    build = subprocess.run(
        ["g++", "-std=c++20", "-O1", "-pthread", "-o", str(exe), str(KERNELS / "conv2d_check.cpp")],
        capture_output=True,
        text=True,
    )
    if build.returncode and "barrier" in build.stderr:
        pytest.skip("this g++ has no C++20 <barrier>")
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("max |err| = ")


@pytest.mark.parametrize("cubin", CORPUS_CUBINS, ids=[p.stem for p in CORPUS_CUBINS])
def test_corpus_cubin_round_trips(cubin: Path) -> None:
    data = cubin.read_bytes()
    assert assemble_cuasm(write_cuasm(data, source_name=cubin.name), source_name=cubin.name) == data


@pytest.mark.parametrize("cubin", CORPUS_CUBINS, ids=[p.stem for p in CORPUS_CUBINS])
def test_corpus_launch_json_matches_cubin(cubin: Path) -> None:
    """The worker can build a launch from each corpus JSON (arguments matched to the cubin's parameters)."""
    spec = spec_from_json(cubin.with_suffix(".json").read_text(), cubin.read_bytes())
    assert spec.buffers


def test_the_policy_never_trains_or_finetunes_on_the_compute_held_out_set() -> None:
    from sass_lsp.cli_policy import COMPUTE_HELDOUT, TRITON_TRAIN

    held = set(load_split().sets["held_out"])
    assert held <= set(COMPUTE_HELDOUT) and not held & set(TRITON_TRAIN)
