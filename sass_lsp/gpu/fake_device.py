"""TEST DOUBLE: a pretend GPU for protocol, watchdog and verification-logic tests on machines without one.

Selected only by ``SASS_LSP_GPU_BACKEND=fake`` in the worker's environment; nothing else imports it. It runs
no
SASS: a "cubin" here is the bytes ``FAKE:<behaviour>[:<time factor>]`` and a launch does something simple to
the
buffers its pointer arguments name (the last one is the output, the others inputs):

- ``ok``         output = first input's bytes (repeated to size) XOR 0x5A: deterministic, depends on inputs
- ``wrong``      as ``ok`` but one byte of the output is off
- ``stray``      as ``ok`` and also overwrites a byte of the first input
- ``nondet``     as ``ok`` plus a random byte changed each launch (atomics-like)
- ``partial``    writes only the first half of the output
- ``fault``      the next sync fails with CUDA_ERROR_ILLEGAL_ADDRESS (fatal)
- ``hang``       the next sync never returns
- ``crash``      the worker process dies during the launch (as a segfaulting driver would)
- ``loadfail``   loading fails with CUDA_ERROR_INVALID_IMAGE (not fatal)

Timings are ``0.1 ms × factor`` with 0.5% Gaussian noise from a fixed seed.
"""

from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from sass_lsp.gpu.device import DeviceError, Geometry

BASE_MS = 0.1


@dataclass
class FakeKernel:
    behaviour: str
    factor: float
    name: str


class FakeDevice:
    def __init__(self) -> None:
        self._mem: dict[int, np.ndarray] = {}
        self._next_ptr = 0x7F0000000000
        self._pending: str = ""
        self._rng = np.random.default_rng(1234)
        self._n_nondet = 0

    def info(self) -> dict[str, Any]:
        return {
            "backend": "fake",
            "gpu": "FakeGPU (test double)",
            "driver": "0.0",
            "cuda_driver_api": 0,
            "compute_capability": "9.0",
            "sm_count": 1,
            "l2_bytes": 1 << 16,
            "memory_bytes": 1 << 30,
            "max_sm_mhz": "",
            "max_mem_mhz": "",
        }

    def clocks(self) -> dict[str, Any]:
        return {"clocks.sm": "1000", "clocks.mem": "1000"}

    def param_sizes(self, cubin: bytes, kernel: str) -> None:
        return None  # a fake cubin has no KPARAM_INFO; the session then skips the size check

    def load(self, cubin: bytes, kernel: str, shared_bytes: int) -> FakeKernel:
        parts = cubin.decode(errors="replace").split(":")
        if parts[0] != "FAKE" or len(parts) < 2:
            raise DeviceError("CUDA_ERROR_INVALID_IMAGE", 200, "cuModuleLoadData", "not a FAKE: cubin")
        if parts[1] == "loadfail":
            raise DeviceError(
                "CUDA_ERROR_INVALID_IMAGE", 200, "cuModuleLoadData", "device kernel image is invalid"
            )
        return FakeKernel(parts[1], float(parts[2]) if len(parts) > 2 else 1.0, kernel)

    def unload(self, kernel: FakeKernel) -> None:
        pass

    def alloc(self, n_bytes: int) -> int:
        ptr = self._next_ptr
        self._mem[ptr] = np.zeros(n_bytes, dtype=np.uint8)
        self._next_ptr += (n_bytes + 0xFFFF) // 0x10000 * 0x10000 + 0x10000
        return ptr

    def free(self, ptr: int) -> None:
        del self._mem[ptr]

    def upload(self, ptr: int, data: np.ndarray) -> None:
        self._mem[ptr][:] = np.frombuffer(np.ascontiguousarray(data).tobytes(), dtype=np.uint8)

    def download(self, ptr: int, n_bytes: int) -> np.ndarray:
        self.sync()
        return self._mem[ptr][:n_bytes].copy()

    def fill_bytes(self, ptr: int, value: int, n_bytes: int) -> None:
        self._mem[ptr][:n_bytes] = value

    def copy(self, dst: int, src: int, n_bytes: int) -> None:
        self._mem[dst][:n_bytes] = self._mem[src][:n_bytes]

    def launch(self, kernel: FakeKernel, geometry: Geometry, args: list[bytes]) -> None:
        behaviour = kernel.behaviour
        if behaviour == "crash":
            os._exit(139)
        if behaviour in ("fault", "hang"):
            self._pending = behaviour
            return
        ptrs = [struct.unpack("<Q", a)[0] for a in args if len(a) == 8]
        buffers = [self._mem[p] for p in ptrs if p in self._mem]
        if not buffers:
            return
        out = buffers[-1]
        source = buffers[0] if len(buffers) > 1 else np.zeros(1, dtype=np.uint8)
        result = np.resize(source, out.size) ^ np.uint8(0x5A)
        if behaviour == "partial":
            out[: out.size // 2] = result[: out.size // 2]
            return
        out[:] = result
        if behaviour == "wrong":
            out[out.size // 2] ^= 0x01
        elif behaviour == "stray" and len(buffers) > 1:
            buffers[0][3] ^= 0xFF
        elif behaviour == "nondet":
            self._n_nondet += 1  # a different byte on every launch, like atomics finishing in another order
            out[(self._n_nondet * 37) % out.size] ^= 0x10

    def sync(self) -> None:
        pending, self._pending = self._pending, ""
        if pending == "fault":
            raise DeviceError(
                "CUDA_ERROR_ILLEGAL_ADDRESS",
                700,
                "cuStreamSynchronize",
                "an illegal memory access was encountered",
            )
        if pending == "hang":
            while True:
                time.sleep(3600)

    def _time(self, launches: list[tuple[FakeKernel, list[bytes]]], geometry: Geometry) -> float:
        total = 0.0
        for kernel, args in launches:
            self.launch(kernel, geometry, args)
            total += BASE_MS * kernel.factor * (1.0 + 0.005 * float(self._rng.standard_normal()))
        self.sync()
        return total

    def time_launches(self, launches: list[tuple[FakeKernel, list[bytes]]], geometry: Geometry) -> float:
        return self._time(launches, geometry)

    def capture(self, launches: list[tuple[FakeKernel, list[bytes]]], geometry: Geometry) -> Any:
        return (list(launches), geometry)

    def time_graph(self, graph: Any) -> float:
        return self._time(graph[0], graph[1])

    def destroy_graph(self, graph: Any) -> None:
        pass

    def time_flushed(self, kernel: FakeKernel, geometry: Geometry, args: list[bytes]) -> float:
        return self._time([(kernel, args)], geometry)

    def close(self) -> None:
        self._mem.clear()
