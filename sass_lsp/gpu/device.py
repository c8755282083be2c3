"""The CUDA backend of the worker: one primary context, one stream, driver API calls through cuda-python.

Architecture Invariant: only this module (and the worker process that imports it) talks to the CUDA driver;
nothing in the editor or CLI process ever creates a context, because a faulting edited kernel poisons the
context of the process it runs in.

Every driver call goes through :func:`_check`, which turns a non-success status into :class:`DeviceError`.
Errors that poison the context (illegal address, misaligned address, illegal instruction, trap, …) are marked
``fatal``: the worker reports them and exits.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from sass_lsp.gpu.kparams import read_kparams

# Driver status codes after which the context is unusable ("sticky" errors, CUDA driver API docs).
STICKY_CODES = {
    700: "CUDA_ERROR_ILLEGAL_ADDRESS",
    702: "CUDA_ERROR_LAUNCH_TIMEOUT",
    709: "CUDA_ERROR_CONTEXT_IS_DESTROYED",
    710: "CUDA_ERROR_ASSERT",
    714: "CUDA_ERROR_HARDWARE_STACK_ERROR",
    715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    716: "CUDA_ERROR_MISALIGNED_ADDRESS",
    717: "CUDA_ERROR_INVALID_ADDRESS_SPACE",
    718: "CUDA_ERROR_INVALID_PC",
    719: "CUDA_ERROR_LAUNCH_FAILED",
    999: "CUDA_ERROR_UNKNOWN",
}

# What each fault most likely means for a hand-edited SASS kernel; shown to the user next to the code.
FAULT_HINTS = {
    "CUDA_ERROR_ILLEGAL_ADDRESS": "a load or store used a wrong address (a register read before its producer "
    "finished?)",
    "CUDA_ERROR_MISALIGNED_ADDRESS": "an address was not aligned for the access width "
    "(stale address register?)",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE": "a generic address pointed into the wrong space (global/shared)",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION": "an instruction encoding or operand is invalid on this GPU",
    "CUDA_ERROR_LAUNCH_FAILED": "the kernel trapped (BPT.TRAP, bad barrier or similar)",
    "CUDA_ERROR_HARDWARE_STACK_ERROR": "call/return stack corrupted",
    "CUDA_ERROR_INVALID_PC": "a branch or return jumped outside the kernel",
}


class DeviceError(Exception):
    """A driver call failed; ``fatal`` means the context is poisoned and the process must exit."""

    def __init__(self, error: str, code: int, call: str, message: str = "") -> None:
        super().__init__(f"{call}: {error}" + (f" ({message})" if message else ""))
        self.error = error
        self.code = code
        self.call = call
        self.message = message

    @property
    def fatal(self) -> bool:
        return self.code in STICKY_CODES

    def to_dict(self) -> dict[str, Any]:
        return {
            "error": self.error,
            "code": self.code,
            "call": self.call,
            "message": self.message,
            "fatal": self.fatal,
            "hint": FAULT_HINTS.get(self.error, ""),
        }


@dataclass(frozen=True)
class Geometry:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    cluster: tuple[int, int, int] | None = None


class Device(Protocol):
    """What the worker's session needs from a GPU; :class:`CudaDevice` is the only real implementation."""

    def info(self) -> dict[str, Any]: ...
    def clocks(self) -> dict[str, Any]: ...
    def param_sizes(self, cubin: bytes, kernel: str) -> list[int] | None: ...
    def load(self, cubin: bytes, kernel: str, shared_bytes: int) -> Any: ...
    def unload(self, kernel: Any) -> None: ...
    def alloc(self, n_bytes: int) -> int: ...
    def free(self, ptr: int) -> None: ...
    def upload(self, ptr: int, data: np.ndarray) -> None: ...
    def download(self, ptr: int, n_bytes: int) -> np.ndarray: ...
    def fill_bytes(self, ptr: int, value: int, n_bytes: int) -> None: ...
    def copy(self, dst: int, src: int, n_bytes: int) -> None: ...
    def launch(self, kernel: Any, geometry: Geometry, args: list[bytes]) -> None: ...
    def sync(self) -> None: ...
    def time_launches(self, launches: list[tuple[Any, list[bytes]]], geometry: Geometry) -> float: ...
    def capture(self, launches: list[tuple[Any, list[bytes]]], geometry: Geometry) -> Any: ...
    def time_graph(self, graph: Any) -> float: ...
    def destroy_graph(self, graph: Any) -> None: ...
    def time_flushed(self, kernel: Any, geometry: Geometry, args: list[bytes]) -> float: ...
    def close(self) -> None: ...


def pack_params(args: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Argument storage plus the ``void*[]`` array cuLaunchKernel reads (both must outlive the call)."""
    offsets = []
    pos = 0
    for arg in args:
        offsets.append(pos)
        pos += (len(arg) + 15) // 16 * 16  # 16-byte slots: no argument straddles an alignment it needs
    storage = np.zeros(max(pos, 16), dtype=np.uint8)
    for off, arg in zip(offsets, args, strict=True):
        storage[off : off + len(arg)] = np.frombuffer(arg, dtype=np.uint8)
    base = storage.ctypes.data
    argv = np.array([base + off for off in offsets] or [0], dtype=np.uint64)
    return storage, argv


@dataclass
class CudaKernel:
    module: Any
    function: Any
    name: str


class CudaDevice:
    def __init__(self, ordinal: int = 0) -> None:
        from cuda.bindings import driver as cu  # imported here: the parent process never loads the driver

        self.cu = cu
        _check(cu.cuInit(0), "cuInit")
        self.dev = _check(cu.cuDeviceGet(ordinal), "cuDeviceGet")
        # The primary context: the worker is its own process, and a retained primary context is what torch and
        # Triton use too (a kernel measured here runs under the same context flags as in production).
        self.ctx = _check(cu.cuDevicePrimaryCtxRetain(self.dev), "cuDevicePrimaryCtxRetain")
        _check(cu.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        self.stream = _check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate")
        self._events = [_check(cu.cuEventCreate(0), "cuEventCreate") for _ in range(2)]
        self._flush_ptr = 0
        self._flush_bytes = 0
        self._info: dict[str, Any] | None = None
        self._smi_id = self._pci_bus_id()

    def _pci_bus_id(self) -> str:
        """nvidia-smi's name for this device: its PCI bus id. The CUDA ordinal is not nvidia-smi's index
        where CUDA_VISIBLE_DEVICES picks one GPU of several (``benchmarks/h200/rows.sh``); "0" if unknown."""
        try:
            raw = _check(self.cu.cuDeviceGetPCIBusId(32, self.dev), "cuDeviceGetPCIBusId")
            bus_id = raw.split(b"\0", 1)[0].decode()
        except (DeviceError, AttributeError, TypeError, ValueError):
            return "0"
        return bus_id if bus_id and nvidia_smi(["pci.bus_id"], bus_id) else "0"  # one that nvidia-smi takes

    # -- facts ----------------------------------------------------------------------------------------------
    def _attr(self, name: str) -> int:
        attr = getattr(self.cu.CUdevice_attribute, name)
        return int(_check(self.cu.cuDeviceGetAttribute(attr, self.dev), f"cuDeviceGetAttribute({name})"))

    def info(self) -> dict[str, Any]:
        if self._info is None:
            cu = self.cu
            raw_name = _check(cu.cuDeviceGetName(256, self.dev), "cuDeviceGetName")
            info: dict[str, Any] = {
                "backend": "cuda",
                "gpu": raw_name.split(b"\0", 1)[0].decode(),
                "cuda_driver_api": int(_check(cu.cuDriverGetVersion(), "cuDriverGetVersion")),
                "compute_capability": f"{self._attr('CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR')}."
                f"{self._attr('CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR')}",
                "sm_count": self._attr("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
                "l2_bytes": self._attr("CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE"),
                "memory_bytes": int(_check(cu.cuDeviceTotalMem(self.dev), "cuDeviceTotalMem")),
            }
            smi = nvidia_smi(["name", "driver_version", "clocks.max.sm", "clocks.max.mem"], self._smi_id)
            info["driver"] = smi.get("driver_version", "")
            info["max_sm_mhz"] = smi.get("clocks.max.sm", "")
            info["max_mem_mhz"] = smi.get("clocks.max.mem", "")
            self._info = info
        return dict(self._info)

    def clocks(self) -> dict[str, Any]:
        return nvidia_smi(
            [
                "clocks.sm",
                "clocks.mem",
                "temperature.gpu",
                "power.draw",
                "pstate",
                "clocks_event_reasons.active",
            ],
            self._smi_id,
        )

    def param_sizes(self, cubin: bytes, kernel: str) -> list[int]:
        return [kp.size for kp in read_kparams(cubin, kernel)]

    # -- modules --------------------------------------------------------------------------------------------
    def load(self, cubin: bytes, kernel: str, shared_bytes: int) -> CudaKernel:
        cu = self.cu
        module = _check(cu.cuModuleLoadData(cubin), "cuModuleLoadData")
        function = _check(cu.cuModuleGetFunction(module, kernel.encode()), f"cuModuleGetFunction({kernel})")
        if shared_bytes > 48 * 1024:
            # Above 48 KB the kernel must opt in to the larger dynamic shared memory carve-out.
            attr = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            _check(cu.cuFuncSetAttribute(function, attr, shared_bytes), "cuFuncSetAttribute")
        return CudaKernel(module, function, kernel)

    def unload(self, kernel: CudaKernel) -> None:
        _check(self.cu.cuModuleUnload(kernel.module), "cuModuleUnload")

    # -- memory ---------------------------------------------------------------------------------------------
    def alloc(self, n_bytes: int) -> int:
        return int(_check(self.cu.cuMemAlloc(max(n_bytes, 1)), "cuMemAlloc"))

    def free(self, ptr: int) -> None:
        _check(self.cu.cuMemFree(ptr), "cuMemFree")

    def upload(self, ptr: int, data: np.ndarray) -> None:
        data = np.ascontiguousarray(data)
        # Async on our stream, then sync: a plain cuMemcpyHtoD runs on the legacy stream, which does not order
        # against a non-blocking stream.
        _check(
            self.cu.cuMemcpyHtoDAsync(ptr, data.ctypes.data, data.nbytes, self.stream), "cuMemcpyHtoDAsync"
        )
        self.sync()

    def download(self, ptr: int, n_bytes: int) -> np.ndarray:
        out = np.empty(n_bytes, dtype=np.uint8)
        _check(self.cu.cuMemcpyDtoHAsync(out.ctypes.data, ptr, n_bytes, self.stream), "cuMemcpyDtoHAsync")
        self.sync()
        return out

    def fill_bytes(self, ptr: int, value: int, n_bytes: int) -> None:
        _check(self.cu.cuMemsetD8Async(ptr, value, n_bytes, self.stream), "cuMemsetD8Async")

    def copy(self, dst: int, src: int, n_bytes: int) -> None:
        _check(self.cu.cuMemcpyDtoDAsync(dst, src, n_bytes, self.stream), "cuMemcpyDtoDAsync")

    # -- launches -------------------------------------------------------------------------------------------
    def launch(self, kernel: CudaKernel, geometry: Geometry, args: list[bytes]) -> None:
        cu = self.cu
        _storage, argv = pack_params(args)  # the driver copies the arguments during the call
        (gx, gy, gz), (bx, by, bz) = geometry.grid, geometry.block
        if geometry.cluster is None:
            _check(
                cu.cuLaunchKernel(
                    kernel.function,
                    gx,
                    gy,
                    gz,
                    bx,
                    by,
                    bz,
                    geometry.shared_bytes,
                    self.stream,
                    argv.ctypes.data,
                    0,
                ),
                f"cuLaunchKernel({kernel.name})",
            )
            return
        config = cu.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = gx, gy, gz
        config.blockDimX, config.blockDimY, config.blockDimZ = bx, by, bz
        config.sharedMemBytes = geometry.shared_bytes
        config.hStream = self.stream
        attr = cu.CUlaunchAttribute()
        attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = geometry.cluster
        config.attrs = [attr]
        config.numAttrs = 1
        _check(
            cu.cuLaunchKernelEx(config, kernel.function, argv.ctypes.data, 0),
            f"cuLaunchKernelEx({kernel.name})",
        )

    def sync(self) -> None:
        _check(self.cu.cuStreamSynchronize(self.stream), "cuStreamSynchronize")

    def _elapsed(self) -> float:
        _check(self.cu.cuEventSynchronize(self._events[1]), "cuEventSynchronize")
        return float(
            _check(self.cu.cuEventElapsedTime(self._events[0], self._events[1]), "cuEventElapsedTime")
        )

    def time_launches(self, launches: list[tuple[CudaKernel, list[bytes]]], geometry: Geometry) -> float:
        _check(self.cu.cuEventRecord(self._events[0], self.stream), "cuEventRecord")
        for kernel, args in launches:
            self.launch(kernel, geometry, args)
        _check(self.cu.cuEventRecord(self._events[1], self.stream), "cuEventRecord")
        return self._elapsed()

    def capture(self, launches: list[tuple[CudaKernel, list[bytes]]], geometry: Geometry) -> Any:
        cu = self.cu
        mode = cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        _check(cu.cuStreamBeginCapture(self.stream, mode), "cuStreamBeginCapture")
        try:
            for kernel, args in launches:
                self.launch(kernel, geometry, args)
        except DeviceError:
            cu.cuStreamEndCapture(self.stream)  # leave capture mode; the launch error is the one to report
            raise
        graph = _check(cu.cuStreamEndCapture(self.stream), "cuStreamEndCapture")
        graph_exec = _check(cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        return (graph, graph_exec)

    def time_graph(self, graph: Any) -> float:
        _check(self.cu.cuEventRecord(self._events[0], self.stream), "cuEventRecord")
        _check(self.cu.cuGraphLaunch(graph[1], self.stream), "cuGraphLaunch")
        _check(self.cu.cuEventRecord(self._events[1], self.stream), "cuEventRecord")
        return self._elapsed()

    def destroy_graph(self, graph: Any) -> None:
        _check(self.cu.cuGraphExecDestroy(graph[1]), "cuGraphExecDestroy")
        _check(self.cu.cuGraphDestroy(graph[0]), "cuGraphDestroy")

    def time_flushed(self, kernel: CudaKernel, geometry: Geometry, args: list[bytes]) -> float:
        """One launch timed alone after writing a buffer of twice the L2 size (evicts the kernel's data)."""
        if not self._flush_ptr:
            self._flush_bytes = 2 * int(self.info()["l2_bytes"])
            self._flush_ptr = self.alloc(self._flush_bytes)
        self.fill_bytes(self._flush_ptr, 0, self._flush_bytes)
        return self.time_launches([(kernel, args)], geometry)

    def close(self) -> None:
        if self._flush_ptr:
            self.free(self._flush_ptr)
            self._flush_ptr = 0


def _check(result: tuple[Any, ...], call: str) -> Any:
    """Unwrap cuda-python's ``(status, *values)`` tuples, raising :class:`DeviceError` on failure."""
    from cuda.bindings import driver as cu

    status = result[0]
    code = int(status)
    if code != 0:
        _, name = cu.cuGetErrorName(status)
        _, text = cu.cuGetErrorString(status)
        error = name.decode() if isinstance(name, bytes) else STICKY_CODES.get(code, f"CUDA_ERROR_{code}")
        message = text.decode() if isinstance(text, bytes) else ""
        raise DeviceError(error, code, call, message)
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


def nvidia_smi(fields: list[str], gpu: str = "0") -> dict[str, str]:
    """Query one GPU (an index or PCI bus id) through nvidia-smi; an empty dict where it is missing (clocks
    are then unknown, not guessed).
    """
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return {}
    try:
        proc = subprocess.run(
            [exe, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits", "-i", gpu],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if proc.returncode != 0:
        # Older drivers reject unknown fields; retry field by field so one bad name loses only itself.
        if len(fields) > 1:
            out: dict[str, str] = {}
            for name in fields:
                out.update(nvidia_smi([name], gpu))
            return out
        return {}
    values = (
        [v.strip() for v in proc.stdout.strip().splitlines()[0].split(",")] if proc.stdout.strip() else []
    )
    return dict(zip(fields, values, strict=False))
