"""``sass-lsp capture``: launch records → specs and files (CPU), the bootstrap driven by a stand-in Triton
(CPU), and the real thing on a GPU with Triton (``benchmarks/capture_demo.py``)."""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from paths import ROOT, TRITON_CORPUS

from sass_lsp.cuasm import write_cuasm
from sass_lsp.gpu.capture import (
    CapturedArg,
    CaptureError,
    LaunchRecord,
    file_stem,
    run_capture,
    scalar_type,
    spec_from_record,
    write_record,
)
from sass_lsp.gpu.data import make_input
from sass_lsp.gpu.spec import BufferParam, NullParam, ScalarParam, SpecError, load_spec
from sass_lsp.nvdisasm import NvdisasmError, nvdisasm_path

N = 16_777_216


def _cubin(name: str) -> bytes:
    return (TRITON_CORPUS / f"{name}.cubin").read_bytes()


def _add_args(*, data: bool = False, n: int = N) -> tuple[CapturedArg, ...]:
    def tensor(name: str, seed: int) -> CapturedArg:
        arr = np.random.default_rng(seed).standard_normal(n, dtype=np.float32) if data else None
        return CapturedArg(name, "tensor", "*fp32", dtype="float32", shape=(n,), data=arr)

    return (
        tensor("x_ptr", 1),
        tensor("y_ptr", 2),
        tensor("out_ptr", 3),
        CapturedArg("n_elements", "scalar", "i32", value=n),
        CapturedArg("BLOCK", "constexpr", "constexpr", value=1024),
    )


def _add_record(**changes: object) -> LaunchRecord:
    fields: dict[str, object] = {
        "kernel": "add_kernel",
        "cubin": _cubin("triton_add"),
        "grid": (16384, 1, 1),
        "num_warps": 4,
        "args": _add_args(),
        "cache_hash": "abc123def456",
        "source": "demo.py:add_kernel",
    }
    fields.update(changes)
    return LaunchRecord(**fields)  # type: ignore[arg-type]


# -- pure part -------------------------------------------------------------------------------------------


def test_spec_from_record_matches_the_cubin_parameters() -> None:
    spec = spec_from_record(_add_record(), name="add_kernel")
    assert spec.kernel == "add_kernel"
    assert spec.grid == (16384, 1, 1) and spec.block == (128, 1, 1) and spec.cluster is None
    assert [type(p) for p in spec.params] == [BufferParam] * 3 + [ScalarParam, NullParam, NullParam]
    x = spec.params[0]
    assert isinstance(x, BufferParam) and x.dtype == "f32" and x.shape == (N,) and x.role == "inout"
    assert x.fill.kind == "normal"
    assert spec.params[3] == ScalarParam("n_elements", "i32", N)
    assert spec.extra["constexprs"] == {"BLOCK": 1024}
    assert spec.extra["source"] == "demo.py:add_kernel"


def test_scalars_and_dropped_int_one() -> None:
    # gelu_bias(x, bias, out, n, n_bias, BLOCK): an extra argument specialised to 1 is a constexpr.
    args = (
        *_add_args()[:3],
        CapturedArg("n", "scalar", "i32", value=N),
        CapturedArg("stride", "constexpr", "constexpr", value=1),
        CapturedArg("n_bias", "scalar", "i32", value=4096),
        CapturedArg("BLOCK", "constexpr", "constexpr", value=1024),
    )
    spec = spec_from_record(_add_record(kernel="gelu_bias", cubin=_cubin("gelu_bias"), args=args))
    assert [p.name for p in spec.params] == [
        "x_ptr",
        "y_ptr",
        "out_ptr",
        "n",
        "n_bias",
        "triton_global_scratch",
        "triton_profile_scratch",
    ]
    assert spec.extra["constexprs"] == {"stride": 1, "BLOCK": 1024}


def test_parameter_mismatch_names_kparam_info() -> None:
    args = (*_add_args()[:4], CapturedArg("extra", "scalar", "i64", value=7))
    with pytest.raises(SpecError, match="KPARAM_INFO") as info:
        spec_from_record(_add_record(args=args))
    assert "extra" in str(info.value)


def test_kernel_not_in_cubin() -> None:
    with pytest.raises(SpecError, match="not in the cubin"):
        spec_from_record(_add_record(kernel="nope"))


def test_clusters_scratch_and_shared() -> None:
    record = _add_record(grid=(8, 2, 1), num_ctas=2, global_scratch_size=64, shared_bytes=4096, num_warps=8)
    spec = spec_from_record(record)
    assert spec.grid == (16, 2, 1) and spec.cluster == (2, 1, 1) and spec.block == (256, 1, 1)
    assert spec.shared_bytes == 4096
    scratch = spec.params[4]
    assert isinstance(scratch, BufferParam) and scratch.role == "scratch"
    assert scratch.nbytes == 8 * 2 * 2 * 64  # per program: grid × num_ctas × size
    assert isinstance(spec.params[5], NullParam)


def test_null_pointer_integer_and_bf16_buffers() -> None:
    args = (
        CapturedArg("x_ptr", "none", "*fp32"),
        CapturedArg("y_ptr", "tensor", "*i32", dtype="int32", shape=(4, 8)),
        CapturedArg("out_ptr", "tensor", "*bf16", dtype="bfloat16", shape=(32,)),
        CapturedArg("n_elements", "scalar", "i32", value=32),
    )
    spec = spec_from_record(_add_record(args=args))
    assert isinstance(spec.params[0], NullParam)
    y, out = spec.params[1], spec.params[2]
    assert isinstance(y, BufferParam) and y.dtype == "i32" and y.fill.kind == "zeros" and y.shape == (4, 8)
    assert isinstance(out, BufferParam) and out.dtype == "bf16"


def test_bad_arguments_name_the_field() -> None:
    bad_dtype = (CapturedArg("x_ptr", "tensor", "*c64", dtype="complex64", shape=(4,)), *_add_args()[1:])
    with pytest.raises(SpecError, match=r"args\[0\] \(x_ptr\)\.dtype"):
        spec_from_record(_add_record(args=bad_dtype))
    bad_type = (*_add_args()[:3], CapturedArg("n_elements", "scalar", "q7", value=1))
    with pytest.raises(SpecError, match="unknown Triton scalar type 'q7'"):
        spec_from_record(_add_record(args=bad_type))


def test_scalar_types() -> None:
    assert scalar_type("u1") == "bool" and scalar_type("i1") == "bool"
    assert scalar_type("fp32") == "f32" and scalar_type("bf16") == "bf16" and scalar_type("u64") == "u64"
    with pytest.raises(SpecError):
        scalar_type("fp8e4nv")


def test_file_stems() -> None:
    taken: set[str] = set()
    first = file_stem("add_kernel", "0123456789abcdef", taken)
    taken.add(first)
    second = file_stem("add_kernel", "0123456789abcdef", taken)
    taken.add(second)
    assert (first, second) == ("add_kernel", "add_kernel-01234567")
    assert file_stem("add_kernel", "0123456789abcdef", taken) == "add_kernel-01234567-2"
    assert file_stem("a/b c", "", set()) == "a_b_c"


def test_write_record_with_snapshot(tmp_path: Path) -> None:
    n = 4096
    record = _add_record(args=_add_args(data=True, n=n), grid=(4, 1, 1))
    names = write_record(record, tmp_path, "add_kernel", snapshot=True)
    assert names == ["add_kernel.cubin", "add_kernel.inputs.npz", "add_kernel.launch.toml"]
    assert (tmp_path / "add_kernel.cubin").read_bytes() == record.cubin
    spec = load_spec(tmp_path / "add_kernel.launch.toml")
    assert spec.name == "add_kernel" and spec.grid == (4, 1, 1)
    for idx, param in spec.buffers:
        assert param.fill.kind == "file" and param.fill.key == param.name
        assert Path(param.fill.path) == tmp_path / "add_kernel.inputs.npz"
        expected = record.args[idx].data
        assert expected is not None
        assert np.array_equal(make_input(param, seed=3, param_idx=idx), expected)
    assert not list(tmp_path.glob(".*.tmp"))


def test_write_record_without_snapshot_writes_no_inputs(tmp_path: Path) -> None:
    names = write_record(_add_record(), tmp_path, "k", snapshot=False)
    assert names == ["k.cubin", "k.launch.toml"]
    assert load_spec(tmp_path / "k.launch.toml").params[0].fill.kind == "normal"  # type: ignore[union-attr]


def test_a_bad_record_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(SpecError):
        write_record(_add_record(kernel="nope"), tmp_path, "nope", snapshot=False)
    assert not list(tmp_path.iterdir())


# -- run_capture error paths and the bootstrap, with a stand-in Triton ------------------------------------

FAKE_TRITON = {
    "triton/__init__.py": """
        __version__ = "0.0-fake"
        from triton import knobs
    """,
    "triton/knobs.py": """
        class HookChain:
            def __init__(self):
                self.calls = []
            def add(self, func):
                self.calls.append(func)
            def __call__(self, *args):
                for call in self.calls:
                    call(*args)
        class runtime:
            launch_enter_hook = HookChain()
    """,
    "triton/compiler/__init__.py": "",
    "triton/compiler/compiler.py": """
        class LazyDict:  # as in Triton 3.6
            def __init__(self, data):
                self.data = data
                self.extras = []
            def get(self):
                for func, args in self.extras:
                    self.data = self.data | func(*args)
                self.extras.clear()
                return self.data
            def add(self, func, args):
                self.extras.append((func, args))
        class CompiledKernel:
            def __init__(self, name, cubin, metadata, src, hash):
                self.name, self.asm, self.metadata = name, {"cubin": cubin}, metadata
                self.src, self.hash = src, hash
            def launch_metadata(self, grid, stream, *args):
                return LazyDict({"name": self.name, "function": 0, "stream": stream})
            def launch(self, grid, *args):  # what JITFunction.run does around the C launcher
                from triton import knobs
                knobs.runtime.launch_enter_hook(self.launch_metadata(grid, 0, *args))
    """,
}

FAKE_PROGRAM = """
    import sys
    from types import SimpleNamespace
    from triton.compiler.compiler import CompiledKernel

    def add_kernel():
        pass

    names = ["x_ptr", "y_ptr", "out_ptr", "n_elements", "BLOCK"]
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32", "BLOCK": "constexpr"}
    src = SimpleNamespace(signature=sig, fn=SimpleNamespace(arg_names=names, fn=add_kernel))
    meta = SimpleNamespace(name="add_kernel", num_warps=4, num_ctas=1, shared=0,
                           global_scratch_size=0, profile_scratch_size=0)
    kernel = CompiledKernel("add_kernel", open(sys.argv[1], "rb").read(), meta, src, "feedbeef" * 8)
    kernel.launch((0,), None, None, None, 5, 1024)   # empty grid: Triton skips it, so do we
    kernel.launch((7,), None, None, None, 5000, 1024)
    kernel.launch((7,), None, None, None, 5000, 1024)
    print("program ran", sys.argv[2:])
    sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
"""


def _fake_triton(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    lib = tmp_path / "fake_site"
    for rel, text in FAKE_TRITON.items():
        path = lib / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    monkeypatch.setenv("PYTHONPATH", str(lib))
    return lib


def test_program_not_found(tmp_path: Path) -> None:
    with pytest.raises(CaptureError, match="program not found"):
        run_capture([sys.executable, str(tmp_path / "missing.py")], tmp_path / "out")
    with pytest.raises(CaptureError, match="program not found"):
        run_capture([str(tmp_path / "missing.py")], tmp_path / "out")


def test_not_a_python_command(tmp_path: Path) -> None:
    with pytest.raises(CaptureError, match="Python programs"):
        run_capture(["ls", "-l"], tmp_path)
    with pytest.raises(CaptureError, match="no program"):
        run_capture([], tmp_path)
    with pytest.raises(CaptureError, match="no program given after"):
        run_capture([sys.executable], tmp_path)


def test_triton_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = tmp_path / "no_triton"
    (lib / "triton").mkdir(parents=True)
    (lib / "triton" / "__init__.py").write_text("raise ImportError('no triton here')\n")
    monkeypatch.setenv("PYTHONPATH", str(lib))
    prog = tmp_path / "prog.py"
    prog.write_text("print('hi')\n")
    with pytest.raises(CaptureError, match="Triton .* is not importable"):
        run_capture([sys.executable, str(prog)], tmp_path / "out")


def test_no_launches_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_triton(tmp_path, monkeypatch)
    prog = tmp_path / "prog.py"
    prog.write_text("print('nothing launched')\n")
    with pytest.raises(CaptureError, match="no Triton kernel launches seen"):
        run_capture([sys.executable, str(prog)], tmp_path / "out")
    prog.write_text("raise SystemExit(3)\n")
    with pytest.raises(CaptureError, match="exited with status 3"):
        run_capture([sys.executable, str(prog)], tmp_path / "out")


def test_bootstrap_records_first_launch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        nvdisasm_path()
    except NvdisasmError:
        pytest.skip("nvdisasm is needed for the .cuasm file")
    _fake_triton(tmp_path, monkeypatch)
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(FAKE_PROGRAM))
    out = tmp_path / "out"
    cubin = TRITON_CORPUS / "triton_add.cubin"
    result = run_capture([sys.executable, str(prog), str(cubin), "4"], out, snapshot=True)
    assert result.program_rc == 4  # the program's own exit status, files kept
    assert result.n_launches == 2 and not result.errors
    (kernel,) = result.kernels
    assert kernel.stem == "add_kernel" and kernel.launches == 2
    assert set(kernel.files) == {"add_kernel.cubin", "add_kernel.launch.toml", "add_kernel.cuasm"}
    assert (out / "add_kernel.cubin").read_bytes() == cubin.read_bytes()
    expected = write_cuasm(cubin.read_bytes(), source_name="add_kernel.cubin")
    assert (out / "add_kernel.cuasm").read_text() == expected
    spec = load_spec(out / "add_kernel.launch.toml")
    assert spec.grid == (7, 1, 1) and spec.block == (128, 1, 1)
    assert [type(p) for p in spec.params] == [NullParam] * 3 + [ScalarParam, NullParam, NullParam]
    assert spec.params[3] == ScalarParam("n_elements", "i32", 5000)
    assert spec.extra["source"].endswith("prog.py:add_kernel")
    manifest = json.loads((out / "capture.json").read_text())
    assert manifest["program_rc"] == 4 and manifest["kernels"][0]["hash"] == "feedbeef" * 8


# -- the real thing ---------------------------------------------------------------------------------------


def _gpu_ready() -> bool:
    from sass_lsp.gpu.corpus import has_gpu

    needed = ("triton", "torch")
    return all(importlib.util.find_spec(m) is not None for m in needed) and has_gpu()


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_ready(), reason="needs a CUDA GPU, torch and triton")
def test_capture_demo_on_gpu(tmp_path: Path) -> None:
    from sass_lsp.cuasm import assemble_cuasm
    from sass_lsp.gpu import GpuRunner, run_bench

    out = tmp_path / "cap"
    demo = ROOT / "benchmarks" / "capture_demo.py"
    result = run_capture([sys.executable, str(demo)], out, snapshot=True, timeout_s=300)
    assert result.program_rc == 0 and not result.errors, result
    assert result.n_launches == 3
    by_name = {k.kernel: k for k in result.kernels}
    assert set(by_name) == {"add_kernel", "axpy_kernel"}
    assert by_name["add_kernel"].launches == 2

    axpy = load_spec(out / "axpy_kernel.launch.toml")
    assert [p.name for p in axpy.params] == [
        "x_ptr",
        "out_ptr",
        "alpha",
        "n_elements",
        "triton_global_scratch",
        "triton_profile_scratch",
    ]  # stride == 1 was compiled in
    assert axpy.params[2] == ScalarParam("alpha", "f32", 2.5)

    with GpuRunner(timeout_s=120) as runner:
        for k in result.kernels:
            spec = load_spec(out / f"{k.stem}.launch.toml")
            assert spec.grid == (97, 1, 1) and spec.block[0] % 32 == 0
            assert (out / f"{k.stem}.inputs.npz").is_file()
            cubin = (out / f"{k.stem}.cubin").read_bytes()
            reply = runner.launch(cubin, spec)
            assert reply.ok and reply.result["status"] == "ok", reply
            # The .cuasm assembles back to a cubin that computes the same bits from the captured inputs.
            edit = assemble_cuasm((out / f"{k.stem}.cuasm").read_text(), source_name=f"{k.stem}.cuasm")
            bench = run_bench(cubin, edit, spec, seeds=2, rounds=5, runner=runner)
            assert bench.verification.get("status") == "match", bench.message
