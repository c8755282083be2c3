"""What the worker does with a device: verify an edit against the original, and time both.

This runs inside the worker process only. It is written against the small :class:`~sass_lsp.gpu.device.Device`
interface, so the same code runs on the GPU and, in protocol tests, on the fake device.

Results are plain dicts (they go straight into the JSON-lines protocol). A fatal device error is reported as a
result with ``context_lost: true``; the worker then exits, because nothing more can run in that context.
"""

from __future__ import annotations

import hashlib
import math
import os
import struct
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from sass_lsp.gpu.data import (
    POISON_BYTE,
    BoundedCache,
    InputCache,
    compare_buffer,
    count_poison,
    dtype_of,
)
from sass_lsp.gpu.device import Device, DeviceError, Geometry
from sass_lsp.gpu.dtypes import from_float32, lookup_dtype, to_float32
from sass_lsp.gpu.spec import BufferParam, LaunchSpec, NullParam, SpecError, param_size

ProgressFn = Callable[[str, int, int], None]
"""``progress(phase, done, total)``: also the worker's heartbeat, so it is called before every device step."""


def _no_progress(phase: str, done: int, total: int) -> None:
    pass


def pack_args(spec: LaunchSpec, ptrs: dict[int, int]) -> list[bytes]:
    """Each parameter's bytes as the kernel's constant bank expects them."""
    out = []
    for idx, param in enumerate(spec.params):
        if isinstance(param, BufferParam):
            out.append(struct.pack("<Q", ptrs[idx]))
        elif isinstance(param, NullParam):
            out.append(bytes(8))
        else:
            dtype = lookup_dtype(param.type)
            assert dtype is not None
            if dtype.is_float and not dtype.native:
                out.append(from_float32(dtype, np.array([param.value], dtype=np.float32)).tobytes())
            else:
                out.append(np.array([param.value]).astype(dtype.storage).tobytes())
    return out


def spec_param_sizes(spec: LaunchSpec) -> list[int]:
    return [param_size(p) for p in spec.params]


class Session:
    def __init__(self, device: Device) -> None:
        self.device = device
        self.phase = "idle"
        """What the device is doing now ("edit seed 3"); reported with faults and timeouts."""
        self._progress: ProgressFn = _no_progress
        self._seed: int | None = None
        # A worker serves one search: the same original, buffers and seeds, candidate after candidate. So
        # each seed's inputs are made once, and the original's outputs on each seed are kept (_reference).
        self.inputs = InputCache()
        self.references = BoundedCache()
        self.spent: dict[str, float] = {}
        """Seconds per kind of device step in the current request (its result's ``phase_ms``)."""

    @contextmanager
    def _clock(self, kind: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.spent[kind] = self.spent.get(kind, 0.0) + time.perf_counter() - t0

    def _spent_ms(self) -> dict[str, float]:
        return {kind: round(seconds * 1e3, 3) for kind, seconds in self.spent.items()}

    def _step(self, phase: str, done: int, total: int) -> None:
        self.phase = phase
        self._progress(phase, done, total)

    def hello(self) -> dict[str, Any]:
        return {"device": self.device.info(), "clocks": self.device.clocks(), "pid": os.getpid()}

    # -- shared plumbing ------------------------------------------------------------------------------------
    def _check_sizes(self, cubin: bytes, spec: LaunchSpec, side: str) -> None:
        try:
            sizes = self.device.param_sizes(cubin, spec.kernel)
        except KeyError as exc:
            raise SpecError("kernel", f"{spec.kernel!r} is not in the {side} cubin") from exc
        if sizes is not None and sizes != spec_param_sizes(spec):
            raise SpecError(
                "params",
                f"the spec's parameter sizes {spec_param_sizes(spec)} differ from the {side} "
                f"kernel's KPARAM_INFO {sizes}",
            )

    @contextmanager
    def _loaded(self, cubins: dict[str, bytes], spec: LaunchSpec) -> Iterator[dict[str, Any]]:
        kernels: dict[str, Any] = {}
        try:
            for side, cubin in cubins.items():
                self._check_sizes(cubin, spec, side)
                self.phase = f"load {side}"
                with self._clock("load"):
                    kernels[side] = self.device.load(cubin, spec.kernel, spec.shared_bytes)
            yield kernels
        except DeviceError as exc:
            if not exc.fatal:
                self._quietly(lambda: [self.device.unload(k) for k in kernels.values()])
            raise  # after a fatal error the context is gone: touching it again would only hide the cause
        except BaseException:
            self._quietly(lambda: [self.device.unload(k) for k in kernels.values()])
            raise
        else:
            with self._clock("unload"):
                for kernel in kernels.values():
                    self.device.unload(kernel)

    def _quietly(self, cleanup: Callable[[], Any]) -> None:
        """Best-effort cleanup while another error propagates (that error is the one to report)."""
        with suppress(DeviceError):
            cleanup()

    def _alloc_set(self, spec: LaunchSpec) -> dict[int, int]:
        with self._clock("alloc"):
            return {idx: self.device.alloc(p.nbytes) for idx, p in spec.buffers}

    def _free(self, ptrs: dict[int, int]) -> None:
        with self._clock("free"):
            for ptr in ptrs.values():
                self.device.free(ptr)

    def _inputs(self, spec: LaunchSpec, seed: int) -> dict[int, np.ndarray]:
        """Every non-output buffer's contents for ``seed`` (made once per worker, read-only)."""
        return {idx: self.inputs.input(p, seed, idx) for idx, p in spec.buffers if p.role != "out"}

    def _prepare(self, spec: LaunchSpec, ptrs: dict[int, int], inputs: dict[int, np.ndarray]) -> None:
        with self._clock("upload"):
            for idx, param in spec.buffers:
                if param.role == "out":
                    self.device.fill_bytes(ptrs[idx], POISON_BYTE, param.nbytes)
                else:
                    self.device.upload(ptrs[idx], inputs[idx])

    def _run(
        self, kernel: Any, spec: LaunchSpec, ptrs: dict[int, int], inputs: dict[int, np.ndarray]
    ) -> dict[int, np.ndarray]:
        """Fresh inputs, poisoned outputs, one launch; every compared buffer read back."""
        self._prepare(spec, ptrs, inputs)
        with self._clock("launch"):
            self.device.launch(kernel, _geometry(spec), pack_args(spec, ptrs))
            self.device.sync()
        with self._clock("download"):
            return {
                idx: self.device.download(ptrs[idx], p.nbytes).view(dtype_of(p).storage)
                for idx, p in spec.buffers
                if p.compared
            }

    def _failure(self, exc: DeviceError, side: str, seed: int | None) -> dict[str, Any]:
        status = "fault" if exc.fatal else "launch_error"
        return {
            "status": status,
            "context_lost": exc.fatal,
            "fault": {**exc.to_dict(), "side": side, "seed": seed, "phase": self.phase},
        }

    # -- verification ---------------------------------------------------------------------------------------
    def verify(
        self,
        orig: bytes,
        edit: bytes,
        spec: LaunchSpec,
        seeds: list[int],
        progress: ProgressFn = _no_progress,
    ) -> dict[str, Any]:
        self._progress = progress
        self.spent = {}
        result: dict[str, Any] = {
            "status": "match",
            "bit_identical": True,
            "seeds": [],
            "mismatches": [],
            "nondeterministic": spec.nondeterministic,
            "max_abs_diff": {},
            "notes": [],
            "context_lost": False,
        }
        try:
            with self._loaded({"original": orig, "edit": edit}, spec) as kernels:
                ptrs = self._alloc_set(spec)
                try:
                    self._verify_seeds(kernels, hashlib.sha256(orig).digest(), spec, ptrs, seeds, result)
                except DeviceError as exc:
                    if not exc.fatal:
                        self._quietly(lambda: self._free(ptrs))
                    raise
                else:
                    self._free(ptrs)
        except DeviceError as exc:
            out = self._failure(exc, _side_of(self.phase, "original"), self._seed)
            if self.phase.startswith("load"):
                out["status"] = "load_error"
            result.update(out)
        result["phase_ms"] = self._spent_ms()
        return result

    def _verify_seeds(
        self,
        kernels: dict[str, Any],
        orig_digest: bytes,
        spec: LaunchSpec,
        ptrs: dict[int, int],
        seeds: list[int],
        result: dict[str, Any],
    ) -> None:
        total = 2 * len(seeds) + 1
        done = 0
        for seed_idx, seed in enumerate(seeds):
            self._seed = seed
            self._step(f"fill seed {seed}", done, total)
            inputs = self._inputs(spec, seed)
            self._step(f"original seed {seed}", done, total)
            ref = self._reference(kernels["original"], orig_digest, spec, ptrs, inputs, seed, seed_idx == 0)
            done += 2 if seed_idx == 0 else 1
            if ref.check is not None:
                _merge_check(result, ref.check)
                if ref.check["stop"]:
                    return
            self._step(f"edit seed {seed}", done, total)
            got = self._run(kernels["edit"], spec, ptrs, inputs)
            done += 1
            with self._clock("compare"):
                self._compare(spec, inputs, ref.outputs, got, seed, result)
            result["seeds"].append(seed)
            if result["mismatches"]:
                result["status"] = "mismatch"
                return
        self._step("done", total, total)

    def _reference(
        self,
        kernel: Any,
        orig_digest: bytes,
        spec: LaunchSpec,
        ptrs: dict[int, int],
        inputs: dict[int, np.ndarray],
        seed: int,
        check: bool,
    ) -> _Reference:
        """The original's outputs on ``seed`` (and, for a first seed, what checking the original found),
        run once per (original, spec, seed) in this worker: the same cubin on the same inputs gives the
        same bits, and the first seed's check runs it twice to make sure of that."""
        key = (orig_digest, spec, seed, check)
        hit = self.references.get(key)
        if hit is not None:
            return hit
        ran = self._run(kernel, spec, ptrs, inputs)
        found = None
        if check:
            found = {"status": None, "notes": [], "nondeterministic": False, "mismatches": []}
            found["stop"] = self._check_original(spec, ptrs, inputs, ran, kernel, seed, found)
        outputs = {idx: ran[idx] for idx, p in spec.buffers if p.compared and p.role != "in"}
        for data in outputs.values():
            data.flags.writeable = False
        ref = _Reference(outputs, found)
        self.references.put(key, ref, sum(a.nbytes for a in outputs.values()))
        return ref

    def _check_original(
        self,
        spec: LaunchSpec,
        ptrs: dict[int, int],
        inputs: dict[int, np.ndarray],
        ref: dict[int, np.ndarray],
        kernel: Any,
        seed: int,
        result: dict[str, Any],
    ) -> bool:
        """Run the original a second time; returns True when verification cannot go on."""
        for idx, param in spec.buffers:
            if param.role == "in" and not np.array_equal(ref[idx].view(np.uint8), inputs[idx].view(np.uint8)):
                result["status"] = "spec_error"
                result["notes"].append(
                    f'the original kernel writes to params[{idx}] {param.name} (role "in"): '
                    'mark it "inout" or "scratch"'
                )
                return True
            if param.role == "out":
                n_unwritten = count_poison(param, ref[idx])
                if n_unwritten:
                    result["notes"].append(
                        f"params[{idx}] {param.name}: the original left {n_unwritten} of "
                        f"{param.n_elems} elements unwritten (poison pattern)"
                    )
        self._step(f"original again seed {seed}", 1, 1)
        again = self._run(kernel, spec, ptrs, inputs)
        diffs = []
        for idx, param in spec.buffers:
            if param.compared:
                cmp = compare_buffer(
                    param, idx, ref[idx], again[idx], None, kind="nondeterministic", seed=seed
                )
                if cmp.mismatch is not None:
                    diffs.append(asdict(cmp.mismatch))
        if diffs:
            result["nondeterministic"] = True
            has_tolerance = spec.tolerance is not None or any(
                p.tolerance is not None for _, p in spec.buffers
            )
            if not has_tolerance:
                result["status"] = "nondeterministic"
                result["mismatches"] = diffs
                result["notes"].append(
                    "the original gives different bits on identical inputs (atomics?): set "
                    "nondeterministic = true and a tolerance in the spec"
                )
                return True
        return False

    def _compare(
        self,
        spec: LaunchSpec,
        inputs: dict[int, np.ndarray],
        ref: dict[int, np.ndarray],
        got: dict[int, np.ndarray],
        seed: int,
        result: dict[str, Any],
    ) -> None:
        for idx, param in spec.buffers:
            if not param.compared:
                continue
            if param.role == "in":
                cmp = compare_buffer(param, idx, inputs[idx], got[idx], None, kind="stray_write", seed=seed)
            else:
                cmp = compare_buffer(param, idx, ref[idx], got[idx], spec.tolerance_for(param), seed=seed)
            if cmp.mismatch is not None:
                result["mismatches"].append(asdict(cmp.mismatch))
            if not cmp.bit_identical:
                result["bit_identical"] = False
                if math.isfinite(cmp.max_abs_diff):
                    prev = result["max_abs_diff"].get(param.name, 0.0)
                    result["max_abs_diff"][param.name] = max(prev, cmp.max_abs_diff)

    # -- timing ---------------------------------------------------------------------------------------------
    def time(
        self,
        orig: bytes,
        edit: bytes,
        spec: LaunchSpec,
        *,
        rounds: int = 40,
        blocks: int = 4,
        warmup: int = 5,
        target_batch_ms: float = 5.0,
        cache: str = "rotate",
        seed: int = 0,
        max_sets: int = 64,
        max_rotate_bytes: int = 8 << 30,
        clocks: bool = True,
        progress: ProgressFn = _no_progress,
    ) -> dict[str, Any]:
        """Interleaved timing: per-launch milliseconds per round and side (statistics are the caller's).

        The rounds run in ``blocks``; each block loads both modules afresh, in alternating order, and captures
        its own graphs. Where a module lands in memory and which graph was captured first can shift a kernel's
        time by a few tenths of a percent (an H200 saw an identical copy "verified" 0.14% faster), so each
        side gets each placement equally often, and ``round_blocks`` lets the statistics resample per block.
        ``clocks=False`` skips the SM clock readings before and after, two nvidia-smi runs (on the H200 the
        intervals that held them took 34 and 28 ms of sgemm_tiled's 167 ms request: ``screen_phases.py``); a
        search's screening asks so. ``phase_ms`` in the result says where the request's time went.
        """
        self._progress = progress
        self.spent = {}
        if cache not in ("rotate", "flush"):
            raise SpecError("cache", f"unknown cache mode {cache!r} (rotate or flush)")
        device = self.device
        info = device.info()
        geometry = _geometry(spec)
        footprint = max(1, sum(p.nbytes for _, p in spec.buffers))
        n_sets = 1
        if cache == "rotate":
            # Enough copies of every buffer that a launch's data was last touched ≥ 2×L2 bytes ago.
            n_sets = max(
                1,
                min(
                    max_sets, math.ceil(2 * int(info["l2_bytes"]) / footprint), max_rotate_bytes // footprint
                ),
            )
        n_blocks = max(1, min(blocks, rounds // 2))
        block_rounds = [rounds // n_blocks + (1 if b < rounds % n_blocks else 0) for b in range(n_blocks)]
        sets: list[dict[int, int]] = []
        args: list[list[bytes]] = []  # each set's packed parameters (the sets outlive the blocks' modules)
        side = "original"
        result: dict[str, Any] = {"status": "ok", "context_lost": False}
        samples: dict[str, list[float]] = {"original": [], "edit": []}
        round_blocks: list[int] = []
        plan: _TimingPlan | None = None
        clocks_before: dict[str, Any] = {}
        try:
            for block, n_rounds in enumerate(block_rounds):
                cubins = {"original": orig, "edit": edit}
                if block % 2:
                    cubins = {"edit": edit, "original": orig}
                with self._loaded(cubins, spec) as kernel_of:
                    if not sets:
                        self._step("allocate", 0, rounds)
                        inputs = self._inputs(spec, seed)
                        for set_idx in range(n_sets):
                            sets.append(self._alloc_set(spec))
                            if set_idx == 0:
                                self._prepare(spec, sets[0], inputs)
                            else:
                                with self._clock("upload"):
                                    for idx, param in spec.buffers:
                                        device.copy(sets[set_idx][idx], sets[0][idx], param.nbytes)
                        device.sync()
                        clocks_before = self._read_clocks(clocks)
                        args = [pack_args(spec, ptrs) for ptrs in sets]
                    with self._clock("warm-up"):
                        if plan is None:
                            plan = self._plan_timing(
                                kernel_of, args, geometry, warmup, target_batch_ms, cache
                            )
                        else:  # a short warm-up of the freshly loaded modules
                            for side in cubins:
                                device.time_launches([(kernel_of[side], args[0])] * 2, geometry)
                    graphs: list[Any] = []
                    try:
                        self._time_block(
                            kernel_of,
                            args,
                            geometry,
                            plan,
                            cubins,
                            graphs,
                            samples,
                            len(round_blocks),
                            n_rounds,
                            rounds,
                            result,
                        )
                    except DeviceError as exc:
                        if not exc.fatal:  # after a fatal error the context is gone
                            self._quietly(lambda gs=graphs: [device.destroy_graph(g) for g in gs])
                        raise
                    with self._clock("graphs"):
                        for graph in graphs:
                            device.destroy_graph(graph)
                round_blocks += [block] * n_rounds
            assert plan is not None
            self._step("done", rounds, rounds)
            result.update(
                {
                    "orig_ms": samples["original"],
                    "edit_ms": samples["edit"],
                    "round_blocks": round_blocks,
                    "rounds": rounds,
                    "blocks": n_blocks,
                    "batch": plan.batch,
                    "n_sets": n_sets,
                    "method": plan.method,
                    "cache": cache,
                    "footprint_bytes": footprint,
                    "warmup": plan.warmup,
                    "estimate_ms": plan.estimate_ms,
                    "device": info,
                    "clocks_before": clocks_before,
                    "clocks_after": self._read_clocks(clocks),
                }
            )
        except DeviceError as exc:
            if not exc.fatal:
                self._quietly(lambda: [self._free(ptrs) for ptrs in sets])
            result.update(self._failure(exc, _side_of(self.phase, side), seed))
            if self.phase.startswith("load"):
                result["status"] = "load_error"
        else:
            for ptrs in sets:
                self._free(ptrs)
        result["phase_ms"] = self._spent_ms()
        return result

    def _read_clocks(self, wanted: bool) -> dict[str, Any]:
        with self._clock("clocks"):
            return self.device.clocks() if wanted else {}

    def _plan_timing(
        self,
        kernel_of: dict[str, Any],
        args: list[list[bytes]],
        geometry: Geometry,
        warmup: int,
        target_batch_ms: float,
        cache: str,
    ) -> _TimingPlan:
        """Warm both sides up and size a batch to about ``target_batch_ms``, a whole number of buffer sets."""
        n_sets = len(args)
        n_warm = max(warmup, n_sets)
        est: dict[str, float] = {}
        for side in ("original", "edit"):
            self._step(f"warm-up {side}", 0, 1)
            launches = [(kernel_of[side], args[i % n_sets]) for i in range(n_warm)]
            self.device.time_launches(launches, geometry)
            est[side] = self.device.time_launches(launches, geometry) / n_warm
        per_launch = max(max(est.values()), 1e-4)
        if cache == "flush":
            batch = max(1, min(50, math.ceil(target_batch_ms / per_launch)))
        else:
            batch = n_sets * max(1, math.ceil(target_batch_ms / (per_launch * n_sets)))
            batch = min(batch, max(n_sets, 5000 // n_sets * n_sets))
        return _TimingPlan(batch, "flush+events" if cache == "flush" else "graph", n_warm, est)

    def _time_block(
        self,
        kernel_of: dict[str, Any],
        args: list[list[bytes]],
        geometry: Geometry,
        plan: _TimingPlan,
        sides: dict[str, bytes],
        graphs: list[Any],
        samples: dict[str, list[float]],
        first_round: int,
        n_rounds: int,
        rounds: int,
        result: dict[str, Any],
    ) -> None:
        """One block's rounds; graphs it captures are appended to ``graphs`` for the caller to destroy."""
        device = self.device
        n_sets = len(args)
        graph_of: dict[str, Any] = {}
        if plan.method == "graph":
            try:
                for side in sides:  # capture in this block's load order
                    self._step(f"capture {side}", first_round, rounds)
                    launches = [(kernel_of[side], args[i % n_sets]) for i in range(plan.batch)]
                    with self._clock("graphs"):
                        graph_of[side] = device.capture(launches, geometry)
                    graphs.append(graph_of[side])
            except DeviceError as exc:
                if exc.fatal:
                    raise
                plan.method = "stream"  # capture unsupported: plain launches (gaps are then included)
                result.setdefault("notes", []).append(f"graph capture failed ({exc}); timed stream launches")
        with self._clock("warm-up"):
            for graph in graph_of.values():
                device.time_graph(graph)  # untimed: a fresh graph's first replay runs a few percent slow
        for round_idx in range(first_round, first_round + n_rounds):
            # Alternate which side goes first (AB, BA, AB …) so neither always runs right after the other's
            # warm caches or clocks.
            order = ("original", "edit") if round_idx % 2 == 0 else ("edit", "original")
            for side in order:
                self._step(f"round {round_idx + 1}/{rounds} {side}", round_idx, rounds)
                kernel = kernel_of[side]
                with self._clock("timed"):
                    if plan.method == "flush+events":
                        total = sum(device.time_flushed(kernel, geometry, args[0]) for _ in range(plan.batch))
                    elif plan.method == "graph":
                        total = device.time_graph(graph_of[side])
                    else:
                        launches = [(kernel, args[i % n_sets]) for i in range(plan.batch)]
                        total = device.time_launches(launches, geometry)
                samples[side].append(total / plan.batch)

    # -- one launch (smoke tests, the profiler's launcher) --------------------------------------------------
    def launch(
        self,
        cubin: bytes,
        spec: LaunchSpec,
        *,
        seed: int = 0,
        repeats: int = 1,
        progress: ProgressFn = _no_progress,
    ) -> dict[str, Any]:
        self._progress = progress
        result: dict[str, Any] = {"status": "ok", "context_lost": False}
        try:
            with self._loaded({"kernel": cubin}, spec) as kernels:
                ptrs = self._alloc_set(spec)
                inputs = self._inputs(spec, seed)
                outs: dict[int, np.ndarray] = {}
                for rep in range(repeats):
                    self._step(f"launch {rep + 1}/{repeats}", rep, repeats)
                    outs = self._run(kernels["kernel"], spec, ptrs, inputs)
                buffers = []
                for idx, param in spec.buffers:
                    if param.role in ("out", "inout"):
                        raw = outs[idx]
                        values = to_float32(dtype_of(param), raw)  # bf16 and fp8 decoded
                        buffers.append(
                            {
                                "param_idx": idx,
                                "name": param.name,
                                "n_elems": param.n_elems,
                                "unwritten": count_poison(param, raw),
                                "finite": int(np.isfinite(values).sum()),
                            }
                        )
                result["outputs"] = buffers
                self._free(ptrs)
        except DeviceError as exc:
            result.update(self._failure(exc, "kernel", seed))
            if self.phase.startswith("load"):
                result["status"] = "load_error"
        return result


@dataclass(frozen=True)
class _Reference:
    outputs: dict[int, np.ndarray]  # the compared buffers that are not inputs, read-only
    check: dict[str, Any] | None  # first seed: what _check_original added to a result, and "stop"


def _merge_check(result: dict[str, Any], found: dict[str, Any]) -> None:
    """Apply what checking the original found (see :meth:`Session._check_original`) to ``result``."""
    if found["status"]:
        result["status"] = found["status"]
    if found["mismatches"]:
        result["mismatches"] = list(found["mismatches"])
    result["notes"].extend(found["notes"])
    result["nondeterministic"] = result["nondeterministic"] or found["nondeterministic"]


@dataclass
class _TimingPlan:
    batch: int
    method: str
    """"graph", "flush+events", or "stream" once a graph capture failed."""
    warmup: int
    estimate_ms: dict[str, float]


def _geometry(spec: LaunchSpec) -> Geometry:
    return Geometry(spec.grid, spec.block, spec.shared_bytes, spec.cluster)


def _side_of(phase: str, fallback: str) -> str:
    for side in ("original", "edit"):
        if side in phase:
            return side
    return fallback
