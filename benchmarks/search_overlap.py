"""Where the CPU time of a GPU schedule search goes, and the wall per candidate sequential vs overlapped.

Runs :func:`sass_lsp.schedule.search.beam` with the real policy (``policy_expander``) and the real
:class:`~sass_lsp.gpu.measure.GpuMeasure` (assembly, bootstrap CI, the JSON-lines log with edits) on a
stand-in runner that sleeps for the GPU requests (``--verify-s``, ``--time-s``) and returns synthetic
timings of the real shape (``rounds`` per side, 4 blocks), their speedup a fixed function of the schedule
key, so both runs see the same measurements. No GPU code runs. Per kernel it prints milliseconds per
candidate by part and the wall per candidate of ``beam(..., overlap=False)`` and ``overlap=True``, and checks
that both measured the same candidates in the same order with the same log.

    python benchmarks/search_overlap.py --kernels sgemm_tiled triton_softmax --budget 24
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from reorder_eval import load_kernel  # a held-out kernel as the evaluation loads it

from sass_lsp.cuasm import parse_cuasm
from sass_lsp.cuasm.assembler import module_arch
from sass_lsp.gpu import measure as measure_mod
from sass_lsp.gpu.runner import Reply
from sass_lsp.policy.checkpoint import bundled_policy
from sass_lsp.schedule import search as search_mod

ROOT = Path(__file__).resolve().parents[1]


class Timers:
    """CPU seconds per part, summed over threads (a part's calls never nest in themselves)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()
        self._active = threading.local()

    def wrap(self, part: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if getattr(self._active, part, False):  # a nested call counts once, in the outer one
                return fn(*args, **kwargs)
            setattr(self._active, part, True)
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                dt = time.perf_counter() - t0
                setattr(self._active, part, False)
                with self._lock:
                    self.seconds[part] += dt
                    self.calls[part] += 1

        return timed

    def stream(self, it: Iterator[Any]) -> Iterator[Any]:
        pull = self.wrap("expand next()", lambda: next(it, None))
        while (item := pull()) is not None:
            yield item


class SleepingRunner:
    """``GpuRunner``'s verify/time: sleep (the worker request; the GIL is free) and answer synthetically."""

    def __init__(self, verify_s: float, time_s: float) -> None:
        self.verify_s, self.time_s = verify_s, time_s

    def verify(self, orig: bytes, edit: bytes, spec: Any, seeds: list[int]) -> Reply:
        time.sleep(self.verify_s)
        return Reply(True, {"status": "match"})

    def time(self, orig: bytes, edit: bytes, spec: Any, *, rounds: int, **_: Any) -> Reply:
        time.sleep(self.time_s)
        digest = hashlib.sha256(edit).digest()
        rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
        speedup = 1.0 + (digest[8] - 128) / 128 * 0.02  # ±2%, a fixed function of the cubin
        orig_ms = 1.0 + rng.normal(0, 0.002, rounds)
        edit_ms = orig_ms / speedup * (1.0 + rng.normal(0, 0.002, rounds))
        blocks = [b for b in range(4) for _ in range(rounds // 4)]
        return Reply(
            True,
            {
                "status": "ok",
                "orig_ms": orig_ms.tolist(),
                "edit_ms": edit_ms.tolist(),
                "round_blocks": blocks,
                "batch": 8,
            },
        )


def instrument(timers: Timers) -> Callable[[], None]:
    """Time the CPU parts where GpuMeasure and the search call them; returns the undo."""
    patches = [
        (measure_mod, "assemble_cuasm", "assemble_cuasm"),
        (measure_mod, "bootstrap_ratio_ci", "bootstrap CI"),
        (measure_mod, "schedule_edits", "schedule_edits"),
        (measure_mod.GpuMeasure, "_log", "json log write"),
        (measure_mod, "schedule_key", "schedule_key"),
        (search_mod, "schedule_key", "schedule_key"),
    ]
    saved = [(obj, attr, getattr(obj, attr)) for obj, attr, _ in patches]
    for obj, attr, part in patches:
        setattr(obj, attr, timers.wrap(part, getattr(obj, attr)))

    def undo() -> None:
        for obj, attr, fn in saved:
            setattr(obj, attr, fn)

    return undo


def run(name: str, text: str, cubin: bytes, spec: Any, net: Any, args: argparse.Namespace, overlap: bool):
    from sass_lsp.policy.candidates import policy_expander

    arch = module_arch(parse_cuasm(text)[0])
    timers = Timers()
    expand = policy_expander(text, arch, net=net, kernel=spec.kernel, seed=args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        log_path = Path(tmp) / "log.jsonl"
        measure = measure_mod.GpuMeasure(
            SleepingRunner(args.verify_s, args.time_s),
            cubin,
            spec,
            name,
            log_path=log_path,
            original_text=text,
        )
        undo = instrument(timers)
        try:
            t0 = time.perf_counter()
            log = search_mod.beam(
                lambda t: timers.stream(expand(t)), text, measure, args.budget, overlap=overlap
            )
            wall = time.perf_counter() - t0
        finally:
            undo()
        records = [json.loads(line) for line in log_path.read_text().splitlines()]
    for r in records:
        r.pop("time", None)
    return log, wall, timers, records


def one(name: str, mode: str, args: argparse.Namespace) -> None:
    """One kernel and mode, in a fresh process (so neither mode inherits the other's warm caches): its
    figures as one JSON line, its trials and log records (less the clock) to ``args.records``."""
    from sass_lsp.policy.model import load_policy

    if args.no_deadline:  # every rollout to its end: the candidates no longer depend on the CPU's speed
        import sass_lsp.policy.candidates as cands

        real = cands.suggest
        cands.suggest = lambda *a, **k: real(*a, **{**k, "time_budget_s": None})
    net = load_policy(args.policy)
    text, cubin, spec = load_kernel(name)
    log, wall, timers, records = run(name, text, cubin, spec, net, args, mode == "overlapped")
    for r in records:
        r.pop("seconds", None)  # the stand-in's sleeps, to the microsecond
    n = len(log.trials)
    row = {
        "kernel": name,
        "instructions": sum(line.strip().startswith("[") for line in text.splitlines()),
        "mode": mode,
        "candidates": n,
        "wall_ms": round(1e3 * wall / n, 1),
        "gpu_ms": round(1e3 * (args.verify_s + args.time_s), 1),
        "cpu_ms": {
            p: round(1e3 * s / n, 1) for p, s in sorted(timers.seconds.items(), key=lambda kv: -kv[1])
        },
    }
    print(json.dumps(row), flush=True)
    trials = [
        [t.candidate.key, list(t.candidate.moves), t.result.verdict, t.result.speedup] for t in log.trials
    ]
    Path(args.records).write_text(json.dumps({"trials": trials, "records": records}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", nargs="+", default=["sgemm_tiled", "triton_softmax"])
    ap.add_argument("--policy", type=Path, default=bundled_policy())
    ap.add_argument("--budget", type=float, default=24.0, help="simulated GPU seconds per run")
    ap.add_argument("--verify-s", type=float, default=0.35)
    ap.add_argument("--time-s", type=float, default=0.45)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--modes", nargs="+", default=["sequential", "overlapped"])
    ap.add_argument(
        "--no-deadline",
        action="store_true",
        help="suggest without its 2 s deadline, so that both modes must give the same candidates",
    )
    ap.add_argument("--one", nargs=2, metavar=("KERNEL", "MODE"), help=argparse.SUPPRESS)
    ap.add_argument("--records", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        one(*args.one, args)
        return 0
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.kernels:
            runs = {}
            for mode in args.modes:
                out = Path(tmp) / f"{name}.{mode}.json"
                cmd = [
                    sys.executable,
                    __file__,
                    *(argv or sys.argv[1:]),
                    "--one",
                    name,
                    mode,
                    "--records",
                    str(out),
                ]
                subprocess.run(cmd, check=True)
                runs[mode] = json.loads(out.read_text())
            if len(runs) == 2:
                a, b = runs.values()
                same = a == b
                print(f"{name}: same candidates, order and log records: {same}", flush=True)
                failed |= not same and args.no_deadline
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
