"""Feature: capture. ``sass-lsp capture [--out DIR] [--snapshot] -- python prog.py ARGS…`` runs a Python
program and records every Triton kernel it launches as files sass-lsp works on.

For each distinct compiled kernel (its name and specialisation, i.e. Triton's compile hash) the **first**
launch is recorded; later launches of the same kernel are counted, not recorded. Files in the output folder:

- ``NAME.cubin``        the cubin Triton compiled and launched
- ``NAME.cuasm``        its ``.cuasm`` text (written by the parent process after the program ends)
- ``NAME.launch.toml``  the launch: real CUDA grid (Triton's grid × ``num_ctas``), block ``num_warps × 32``,
  dynamic shared memory, cluster ``(num_ctas, 1, 1)`` when ``num_ctas > 1``, and every parameter in the
  cubin's order: tensors become buffers, scalars keep their value, constexprs (including integers equal to 1
  and ``None`` pointers, which Triton specialises away) are dropped, and Triton's two trailing scratch
  pointers become ``null`` parameters (or zeroed ``scratch`` buffers when the kernel needs scratch memory).
  The list is checked against the cubin's ``EIATTR_KPARAM_INFO`` records.
- ``NAME.inputs.npz``   with ``--snapshot``: every buffer's bytes just before the launch, referenced from the
  spec as ``fill = { kind = "file", … }``.
- ``capture.json``      the manifest: kernels, launch counts, errors.

Roles: every tensor is ``inout``. A launch hook sees arguments, not what the kernel does with them, so it
cannot tell a read-only input from an output; ``inout`` fills each buffer (from the snapshot, or random
normal floats / zeros for integer types without one) and compares it afterwards, which is right for all
three. Edit the role in the spec to ``in`` or ``out`` for tighter checks.

How the launch is seen: Triton 3.6 calls ``triton.knobs.runtime.launch_enter_hook`` with a ``LazyDict`` that
holds only the kernel's name, CUfunction and stream (plus whatever the JIT function's own
``launch_metadata`` callback adds). To reach the compiled kernel, grid and arguments, the bootstrap wraps
``CompiledKernel.launch_metadata`` so that the ``LazyDict`` it returns carries them too; the enter hook reads
them with ``metadata.get()``. Non-tensor pointers (raw ints) and tensor descriptors (TMA) are not supported:
such a kernel is reported in ``errors`` and skipped.

Process layout: :func:`run_capture` (the CLI's side) starts the program's interpreter as
``python -m sass_lsp.gpu.capture --out DIR [--snapshot] -- prog.py ARGS…`` (``-m module`` works too); that
bootstrap installs the hook and runs the program with :mod:`runpy`, writing files as kernels launch. The
parent then writes the ``.cuasm`` files. The pure part (:class:`LaunchRecord` → :class:`LaunchSpec` and files)
needs neither Triton nor torch.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sass_lsp.files import write_atomic
from sass_lsp.gpu.dtypes import lookup_dtype
from sass_lsp.gpu.kparams import kernel_names, read_kparams
from sass_lsp.gpu.spec import (
    BufferParam,
    Fill,
    LaunchSpec,
    NullParam,
    Param,
    ScalarParam,
    SpecError,
    param_size,
    spec_from_dict,
    write_spec,
)

MANIFEST = "capture.json"
# Exit codes of the bootstrap for problems found before the program runs.
EXIT_NO_PROGRAM = 90
EXIT_NO_TRITON = 91
_META_KEY = "sass_lsp_capture"


class CaptureError(Exception):
    """Capture cannot run or saw nothing: the message says what to do."""


@dataclass(frozen=True)
class CapturedArg:
    """One Python-level argument of a launch, in the JIT function's order (tuples flattened)."""

    name: str
    kind: str
    """``tensor``, ``scalar``, ``none`` (a null pointer the kernel still takes) or ``constexpr`` (compiled
    in: Triton's ``constexpr`` parameters, integers equal to 1 and ``None``)."""
    type: str = ""
    """Triton's signature type: ``*fp32`` for a tensor, ``i32``/``i64``/``u1``/``fp32``… for a scalar."""
    dtype: str = ""
    """Tensors: the element type (torch spelling such as ``float32`` or our canonical ``f32``)."""
    shape: tuple[int, ...] = ()
    """Tensors: the shape of the memory the tensor spans (its shape when contiguous, else its flat extent)."""
    value: Any = None
    """Scalars: the number; constexprs: the value as given (kept in the spec's ``[meta]`` when printable)."""
    data: np.ndarray | None = field(default=None, compare=False, repr=False)
    """Tensors with ``--snapshot``: the bytes before the launch, as an array of the dtype's storage type."""


@dataclass(frozen=True)
class LaunchRecord:
    """What one Triton launch says about its kernel, as plain data (no Triton or torch objects)."""

    kernel: str
    """The kernel's symbol in the cubin."""
    cubin: bytes = field(repr=False)
    grid: tuple[int, int, int]
    """Triton's grid (programs); the CUDA grid is ``grid[0] * num_ctas``."""
    num_warps: int
    args: tuple[CapturedArg, ...]
    num_ctas: int = 1
    shared_bytes: int = 0
    global_scratch_size: int = 0
    """Bytes of global scratch per program (0: the pointer is passed null)."""
    profile_scratch_size: int = 0
    cache_hash: str = ""
    """Triton's compile hash: one per (function, specialisation, options)."""
    source: str = ""
    """``file.py:function`` of the JIT function, for the user's notes."""
    notes: tuple[str, ...] = ()
    """Launch attributes a spec cannot express (cooperative grid, PDL)."""


@dataclass(frozen=True)
class CapturedKernel:
    stem: str
    """File name stem in the output folder."""
    kernel: str
    files: tuple[str, ...]
    """Names of the files written for it, in the output folder."""
    launches: int = 1
    """Launches of this kernel seen in the program (only the first is recorded)."""


@dataclass(frozen=True)
class CaptureResult:
    out_dir: Path
    kernels: tuple[CapturedKernel, ...]
    errors: tuple[str, ...]
    """Kernels launched but not recorded, and ``.cuasm`` files that could not be written."""
    program_rc: int
    """The program's exit status (its files are kept even when it failed)."""
    n_launches: int


# ---------------------------------------------------------------------------------------------------------
# Pure part: a launch record → a spec and files.


def scalar_type(triton_type: str) -> str:
    """Our dtype name for a Triton scalar signature type (``i32``, ``u1``, ``fp32`` …)."""
    if triton_type == "u1":
        return "bool"  # Python bools: Triton passes them as uint8_t
    dtype = lookup_dtype(triton_type)
    if dtype is None or dtype.name.startswith("fp8"):
        raise SpecError("type", f"unknown Triton scalar type {triton_type!r}")
    return dtype.name


def spec_from_record(record: LaunchRecord, *, name: str = "", inputs_file: str = "") -> LaunchSpec:
    """The launch spec for ``record``; ``inputs_file`` (an ``.npz`` beside the spec) fills the buffers.

    Raises :class:`SpecError` when the arguments do not match the cubin's ``EIATTR_KPARAM_INFO`` records.
    """
    if record.kernel not in kernel_names(record.cubin):
        raise SpecError(
            "kernel", f"{record.kernel!r} is not in the cubin (has {', '.join(kernel_names(record.cubin))})"
        )
    params: list[Param] = []
    constexprs: dict[str, Any] = {}
    for idx, arg in enumerate(record.args):
        path = f"args[{idx}] ({arg.name})"
        if arg.kind == "constexpr":
            constexprs[arg.name] = _printable(arg.value)
        elif arg.kind == "none":
            params.append(NullParam(arg.name))
        elif arg.kind == "scalar":
            params.append(_scalar_param(arg, path))
        elif arg.kind == "tensor":
            params.append(_buffer_param(arg, path, inputs_file))
        else:
            raise SpecError(f"{path}.kind", f"unknown kind {arg.kind!r}")
    n_programs = math.prod(record.grid) * record.num_ctas
    for label, size in (("global", record.global_scratch_size), ("profile", record.profile_scratch_size)):
        if size > 0:
            # The launcher allocates size bytes per program; a null pointer would fault.
            params.append(
                BufferParam(f"triton_{label}_scratch", "u8", (n_programs * size,), "scratch", Fill("zeros"))
            )
        else:
            params.append(NullParam(f"triton_{label}_scratch"))
    _check_kparams(record, params)
    meta: dict[str, Any] = {
        "captured_by": "sass-lsp capture",
        "roles": "inout (capture cannot tell in from out)",
    }
    if record.source:
        meta["source"] = record.source
    if record.cache_hash:
        meta["triton_hash"] = record.cache_hash
    if constexprs:
        meta["constexprs"] = constexprs
    if record.notes:
        meta["notes"] = list(record.notes)
    table = {
        "kernel": record.kernel,
        "name": name,
        "grid": [record.grid[0] * record.num_ctas, record.grid[1], record.grid[2]],
        "block": [record.num_warps * 32, 1, 1],
        "shared_bytes": record.shared_bytes,
        "meta": meta,
    }
    if record.num_ctas > 1:
        table["cluster"] = [record.num_ctas, 1, 1]
    spec = spec_from_dict(table)  # validates dims the way a TOML spec is
    return LaunchSpec(**{**spec.__dict__, "params": tuple(params)})


def _printable(value: Any) -> Any:
    if isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def _scalar_param(arg: CapturedArg, path: str) -> ScalarParam:
    try:
        type_name = scalar_type(arg.type)
    except SpecError as exc:
        raise SpecError(f"{path}.type", exc.message) from None
    dtype = lookup_dtype(type_name)
    assert dtype is not None
    value = arg.value
    if not isinstance(value, int | float):
        raise SpecError(f"{path}.value", f"must be a number, got {value!r}")
    return ScalarParam(arg.name, type_name, float(value) if dtype.is_float else int(value))


def _buffer_param(arg: CapturedArg, path: str, inputs_file: str) -> BufferParam:
    dtype = lookup_dtype(arg.dtype)
    if dtype is None:
        raise SpecError(f"{path}.dtype", f"unsupported tensor dtype {arg.dtype!r}")
    shape = tuple(arg.shape) or (1,)
    if min(shape) <= 0:
        raise SpecError(f"{path}.shape", f"must be positive, got {list(arg.shape)}")
    if inputs_file and arg.data is not None:
        fill = Fill("file", path=inputs_file, key=arg.name)
    elif dtype.is_float:
        fill = Fill("normal")
    else:
        fill = Fill("zeros")  # integers are often indices: zeros are in range, random values may not be
    return BufferParam(arg.name, dtype.name, shape, "inout", fill)


def _check_kparams(record: LaunchRecord, params: list[Param]) -> None:
    sizes = [kp.size for kp in read_kparams(record.cubin, record.kernel)]
    ours = [param_size(p) for p in params]
    if ours != sizes:
        names = [p.name for p in params]
        raise SpecError(
            "params",
            f"the launch's {len(params)} parameters {names} (sizes {ours}) do not match "
            f"{record.kernel}'s {len(sizes)} KPARAM_INFO records (sizes {sizes})",
        )


def file_stem(kernel: str, cache_hash: str, taken: set[str]) -> str:
    """``kernel`` for the first specialisation of a name, ``kernel-<hash8>`` for the next ones."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", kernel) or "kernel"
    if safe not in taken:
        return safe
    suffix = re.sub(r"[^A-Za-z0-9]", "", cache_hash)[:8] or "x"
    stem = f"{safe}-{suffix}"
    n = 2
    while stem in taken:
        stem = f"{safe}-{suffix}-{n}"
        n += 1
    return stem


def write_record(record: LaunchRecord, out_dir: Path, stem: str, *, snapshot: bool) -> list[str]:
    """Write ``STEM.cubin``, ``STEM.launch.toml`` and (with ``snapshot``) ``STEM.inputs.npz``; names written.

    The spec is built (and checked against the cubin) before anything is written.
    """
    out_dir = Path(out_dir)
    inputs_name = f"{stem}.inputs.npz"
    arrays = {a.name: a.data for a in record.args if a.kind == "tensor" and a.data is not None}
    use_inputs = snapshot and bool(arrays)
    spec = spec_from_record(record, name=stem, inputs_file=inputs_name if use_inputs else "")
    names = [f"{stem}.cubin"]
    write_atomic(out_dir / names[0], record.cubin)
    if use_inputs:
        for param in spec.params:
            if isinstance(param, BufferParam) and param.fill.kind == "file":
                data = arrays[param.name]
                if data.size != param.n_elems:
                    raise SpecError(
                        param.name, f"snapshot has {data.size} elements, the buffer {param.n_elems}"
                    )
        write_atomic(out_dir / inputs_name, _npz_bytes(arrays))
        names.append(inputs_name)
    names.append(f"{stem}.launch.toml")
    write_atomic(out_dir / names[-1], write_spec(spec))
    return names


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    return buf.getvalue()


def write_cuasm_for(out_dir: Path, stem: str) -> str:
    """Write ``STEM.cuasm`` from ``STEM.cubin`` (one nvdisasm call); returns its name."""
    from sass_lsp.cuasm import write_cuasm

    cubin = (Path(out_dir) / f"{stem}.cubin").read_bytes()
    name = f"{stem}.cuasm"
    write_atomic(Path(out_dir) / name, write_cuasm(cubin, source_name=f"{stem}.cubin"))
    return name


# ---------------------------------------------------------------------------------------------------------
# Inside the program's process: the Triton hook (imports Triton and torch lazily).


class _Recorder:
    def __init__(self, out_dir: Path, snapshot: bool, command: list[str]) -> None:
        self.out_dir = out_dir
        self.snapshot = snapshot
        self.command = command
        self.lock = threading.Lock()
        self.seen: dict[str, dict[str, Any]] = {}
        """cache hash → manifest entry."""
        self.stems: set[str] = set()
        self.errors: list[str] = []
        self.n_launches = 0
        self.program_rc: int | None = None

    def on_launch(self, kernel: Any, grid: Any, args: tuple[Any, ...]) -> None:
        with self.lock:
            self.n_launches += 1
            key = str(getattr(kernel, "hash", "") or id(kernel))
            if key in self.seen:
                self.seen[key]["launches"] += 1
                return
            name = str(getattr(kernel, "name", "kernel"))
            entry: dict[str, Any] = {"kernel": name, "hash": key, "launches": 1, "stem": "", "files": []}
            try:
                dims = _grid3(grid)
                if math.prod(dims) == 0:
                    self.n_launches -= 1  # Triton skips empty grids: not a launch, wait for a real one
                    return
                record = record_from_launch(kernel, dims, args, snapshot=self.snapshot)
                stem = file_stem(record.kernel, key, self.stems)
                entry["files"] = write_record(record, self.out_dir, stem, snapshot=self.snapshot)
                entry["stem"] = stem
                self.stems.add(stem)
            except Exception as exc:  # never break the user's program: report and go on
                self.errors.append(f"{name}: {exc}")
                entry["error"] = str(exc)
            self.seen[key] = entry
            self.write_manifest()

    def write_manifest(self) -> None:
        data = {
            "command": self.command,
            "snapshot": self.snapshot,
            "n_launches": self.n_launches,
            "kernels": list(self.seen.values()),
            "errors": self.errors,
            "program_rc": self.program_rc,
        }
        write_atomic(self.out_dir / MANIFEST, json.dumps(data, indent=1) + "\n")


def _grid3(grid: Any) -> tuple[int, int, int]:
    dims = [int(d) for d in grid] if isinstance(grid, tuple | list) else [int(grid)]
    dims += [1] * (3 - len(dims))
    return (dims[0], dims[1], dims[2])


def record_from_launch(
    kernel: Any, grid: tuple[int, int, int], args: tuple[Any, ...], *, snapshot: bool
) -> LaunchRecord:
    """A :class:`LaunchRecord` from Triton's ``CompiledKernel``, the grid and the bound arguments."""
    meta = kernel.metadata
    src = kernel.src
    signature = getattr(src, "signature", None)
    fn = getattr(src, "fn", None)
    if not isinstance(signature, dict) or fn is None:
        raise CaptureError("kernel not compiled from a @triton.jit function (no signature to read)")
    arg_names = list(getattr(fn, "arg_names", signature.keys()))
    captured: list[CapturedArg] = []
    for arg_name, value in zip(arg_names, args, strict=False):
        _flatten(arg_name, signature.get(arg_name, "constexpr"), value, captured, snapshot)
    cubin = kernel.asm.get("cubin") if hasattr(kernel.asm, "get") else None
    if not isinstance(cubin, bytes | bytearray):
        raise CaptureError("the compiled kernel has no cubin (not an NVIDIA target?)")
    notes = []
    if getattr(meta, "launch_cooperative_grid", False):
        notes.append("Triton launched it as a cooperative grid; the spec does not")
    if getattr(meta, "launch_pdl", False):
        notes.append("Triton launched it with programmatic dependent launch; the spec does not")
    code = getattr(fn, "fn", None)
    source = ""
    if code is not None and hasattr(code, "__code__"):
        source = f"{code.__code__.co_filename}:{code.__name__}"
    return LaunchRecord(
        kernel=str(meta.name),
        cubin=bytes(cubin),
        grid=grid,
        num_warps=int(meta.num_warps),
        args=tuple(captured),
        num_ctas=int(getattr(meta, "num_ctas", 1) or 1),
        shared_bytes=int(getattr(meta, "shared", 0) or 0),
        global_scratch_size=int(getattr(meta, "global_scratch_size", 0) or 0),
        profile_scratch_size=int(getattr(meta, "profile_scratch_size", 0) or 0),
        cache_hash=str(getattr(kernel, "hash", "")),
        source=source,
        notes=tuple(notes),
    )


def _flatten(name: str, sig: Any, value: Any, out: list[CapturedArg], snapshot: bool) -> None:
    if isinstance(sig, tuple):
        items = list(value) if isinstance(value, tuple | list) else [None] * len(sig)
        for idx, (sub_sig, sub_value) in enumerate(zip(sig, items, strict=False)):
            _flatten(f"{name}.{idx}", sub_sig, sub_value, out, snapshot)
        return
    sig = str(sig)
    if sig == "constexpr":
        out.append(CapturedArg(name, "constexpr", sig, value=value))
    elif sig.startswith(("tensordesc", "nvTmaDesc")):
        raise CaptureError(f"argument {name!r}: tensor descriptors (TMA) are not supported yet")
    elif sig.startswith("*"):
        if value is None:
            out.append(CapturedArg(name, "none", sig))
        else:
            out.append(_tensor_arg(name, sig, value, snapshot))
    else:
        if hasattr(value, "item"):
            value = value.item()
        if isinstance(value, bool):
            value = int(value)
        out.append(CapturedArg(name, "scalar", sig, value=value))


def _tensor_arg(name: str, sig: str, tensor: Any, snapshot: bool) -> CapturedArg:
    import torch

    if not isinstance(tensor, torch.Tensor):
        raise CaptureError(
            f"argument {name!r}: a {type(tensor).__name__} pointer; only torch tensors give a buffer's size"
        )
    dtype_name = str(tensor.dtype).removeprefix("torch.")
    dtype = lookup_dtype(dtype_name)
    if dtype is None:
        raise CaptureError(f"argument {name!r}: unsupported dtype {dtype_name}")
    if tensor.numel() == 0:
        extent = 0
    else:
        extent = 1 + sum(
            (size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride(), strict=True)
        )
    if tensor.is_contiguous() and tensor.dim() > 0 and extent > 0:
        shape: tuple[int, ...] = tuple(int(d) for d in tensor.shape)
    else:
        shape = (max(extent, 1),)
    data = None
    if snapshot:
        if extent > 0:
            flat = tensor.detach().as_strided((extent,), (1,)).contiguous()
            raw = flat.view(torch.uint8).cpu().numpy()
            data = raw.view(np.dtype(dtype.storage)).reshape(shape)
        else:
            data = np.zeros(shape, dtype=dtype.storage)
    return CapturedArg(name, "tensor", sig, dtype=dtype.name, shape=shape, data=data)


def install_hook(recorder: _Recorder) -> None:
    """Add the launch hook to Triton (3.4+: ``triton.knobs.runtime.launch_enter_hook``)."""
    import triton
    from triton.compiler.compiler import CompiledKernel

    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    if runtime is None or not hasattr(runtime.launch_enter_hook, "add"):
        raise CaptureError(
            f"Triton {triton.__version__} has no triton.knobs launch hooks (3.4 or newer needed)"
        )
    original = CompiledKernel.launch_metadata

    def _carry(kernel: Any, grid: Any, args: tuple[Any, ...]) -> dict[str, Any]:
        return {_META_KEY: (kernel, grid, args)}

    def launch_metadata(self: Any, grid: Any, stream: Any, *args: Any) -> Any:
        lazy = original(self, grid, stream, *args)
        if lazy is not None:
            lazy.add(_carry, (self, grid, args))
        return lazy

    def enter(metadata: Any) -> None:
        info = metadata.get().get(_META_KEY) if metadata is not None else None
        if info is not None:
            recorder.on_launch(*info)

    CompiledKernel.launch_metadata = launch_metadata  # type: ignore[method-assign]
    runtime.launch_enter_hook.add(enter)


def _bootstrap(argv: list[str]) -> int:
    """``python -m sass_lsp.gpu.capture --out DIR [--snapshot] -- (prog.py | -m module) ARGS…``."""
    import runpy

    if "--" not in argv:
        print("usage: python -m sass_lsp.gpu.capture --out DIR [--snapshot] -- prog.py ARGS", file=sys.stderr)
        return 2
    split = argv.index("--")
    opts, target = argv[:split], argv[split + 1 :]
    out_dir = Path(opts[opts.index("--out") + 1]) if "--out" in opts else Path.cwd()
    snapshot = "--snapshot" in opts
    module = target[1] if target[:1] == ["-m"] and len(target) > 1 else None
    if module is None and (not target or not Path(target[0]).is_file()):
        print(f"sass-lsp capture: program not found: {target[0] if target else '(none)'}", file=sys.stderr)
        return EXIT_NO_PROGRAM
    try:
        import triton  # noqa: F401
    except ImportError as exc:
        print(f"sass-lsp capture: cannot import triton in {sys.executable}: {exc}", file=sys.stderr)
        return EXIT_NO_TRITON
    recorder = _Recorder(out_dir, snapshot, target)
    try:
        install_hook(recorder)
    except CaptureError as exc:
        print(f"sass-lsp capture: {exc}", file=sys.stderr)
        return EXIT_NO_TRITON
    recorder.write_manifest()
    rc = 0
    try:
        if module is not None:
            sys.argv = [module, *target[2:]]
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(target)
            sys.path[0] = str(Path(target[0]).resolve().parent)
            runpy.run_path(target[0], run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        rc = code if isinstance(code, int) else (0 if code is None else 1)
        if not isinstance(code, int | None):
            print(code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
        rc = 1
    recorder.program_rc = rc
    recorder.write_manifest()
    return rc


# ---------------------------------------------------------------------------------------------------------
# The CLI's side.


def _is_python(arg: str) -> bool:
    return re.fullmatch(r"python[0-9.]*(\.exe)?", Path(arg).name) is not None


def run_capture(
    command: list[str], out_dir: str | Path = ".", *, snapshot: bool = False, timeout_s: float | None = None
) -> CaptureResult:
    """Run ``command`` (``python prog.py ARGS…``, ``python -m mod ARGS…`` or ``prog.py ARGS…``) under capture.

    Raises :class:`CaptureError` when the program or Triton cannot be found, or no launch was seen.
    """
    if not command:
        raise CaptureError("no program given: sass-lsp capture -- python prog.py ARGS")
    if _is_python(command[0]):
        python = shutil.which(command[0]) or command[0]
        target = command[1:]
    elif command[0].endswith(".py"):
        python, target = sys.executable, list(command)
    else:
        raise CaptureError(f"capture runs Python programs: give `python prog.py …`, not {command[0]!r}")
    if not target:
        raise CaptureError("no program given after the interpreter")
    if not Path(python).is_file() and shutil.which(python) is None:
        raise CaptureError(f"interpreter not found: {command[0]}")
    if target[0] == "-m":
        if len(target) < 2:
            raise CaptureError("-m needs a module name")
    elif target[0].startswith("-"):
        raise CaptureError(f"interpreter option {target[0]!r} is not supported; give prog.py or -m module")
    elif not Path(target[0]).is_file():
        raise CaptureError(f"program not found: {target[0]}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest = out / MANIFEST
    manifest.unlink(missing_ok=True)
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])  # the bootstrap must import this very package
    env["PYTHONPATH"] = os.pathsep.join(
        [root, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    )
    argv = [python, "-m", "sass_lsp.gpu.capture", "--out", str(out.resolve())]
    if snapshot:
        argv.append("--snapshot")
    try:
        proc = subprocess.run([*argv, "--", *target], env=env, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise CaptureError(f"the program ran longer than {timeout_s:g} s") from exc
    if proc.returncode == EXIT_NO_PROGRAM:
        raise CaptureError(f"program not found: {target[0]}")
    if proc.returncode == EXIT_NO_TRITON:
        raise CaptureError(
            f"Triton (3.4+, with launch hooks) is not importable by {python}; pip install triton"
        )
    if not manifest.is_file():
        raise CaptureError(
            f"the capture bootstrap did not start (exit status {proc.returncode}); see its output"
        )
    data = json.loads(manifest.read_text())
    rc = data.get("program_rc")
    program_rc = proc.returncode if rc is None else int(rc)
    kernels: list[CapturedKernel] = []
    errors = list(data.get("errors", []))
    for entry in data.get("kernels", []):
        if not entry.get("stem"):
            continue
        files = list(entry["files"])
        try:
            files.append(write_cuasm_for(out, entry["stem"]))
        except Exception as exc:  # nvdisasm missing or a cubin it cannot read: keep the other files
            errors.append(f"{entry['stem']}.cuasm: {exc}")
        kernels.append(CapturedKernel(entry["stem"], entry["kernel"], tuple(files), int(entry["launches"])))
    n_launches = int(data.get("n_launches", 0))
    if n_launches == 0:
        raise CaptureError(
            f"no Triton kernel launches seen (the program exited with status {program_rc})"
            if program_rc
            else "no Triton kernel launches seen: the program ran without launching a Triton kernel"
        )
    return CaptureResult(out, tuple(kernels), tuple(errors), program_rc, n_launches)


def format_capture(result: CaptureResult) -> str:
    lines = []
    for k in result.kernels:
        more = f" ({k.launches} launches; first recorded)" if k.launches > 1 else ""
        lines.append(f"{k.kernel}{more}: " + ", ".join(str(result.out_dir / f) for f in k.files))
    lines += [f"error: {err}" for err in result.errors]
    lines.append(
        f"{len(result.kernels)} kernel(s) captured from {result.n_launches} launch(es)"
        + (f"; the program exited with status {result.program_rc}" if result.program_rc else "")
    )
    return "\n".join(lines)


def capture_main(command: list[str], out_dir: str | Path = ".", *, snapshot: bool = False) -> int:
    """The CLI command: 0 when kernels were captured and the program succeeded, 1 otherwise, 2 on errors."""
    try:
        result = run_capture(command, out_dir, snapshot=snapshot)
    except CaptureError as exc:
        print(f"sass-lsp capture: {exc}", file=sys.stderr)
        return 2
    print(format_capture(result))
    return 0 if result.kernels and not result.errors and result.program_rc == 0 else 1


if __name__ == "__main__":
    sys.exit(_bootstrap(sys.argv[1:]))
