#!/usr/bin/env python3
"""The reorder game's first build, build after an edit and first move, compiled vs ``SASS_LSP_PURE=1``.

What ``suggest`` pays before its search on a kernel (issue #6): ``ReorderGame.from_text`` (parse, kernels,
dependences, cost model) and the first ``step`` (a move and the block's control-code repair). Each sample is a
fresh interpreter (the game imported and the arch's semantics loaded first, untimed, as after ``warm_up``;
the collector held, as ``suggest`` does): first build of the text, first step (the first legal candidate),
then a build of the text with a comment appended (per-instruction-text caches warm). Samples of the two
builds alternate, so a slow stretch of the host hits all; medians and minima. Besides ``compiled`` and
``pure``, ``--sources MOD,MOD`` adds a build where only those compiled modules run from their ``.py`` files
(the others compiled): what compiling just those modules gains. Only modules that no other compiled module
calls natively can be swapped so (with ``schedule.deps``, ``repair`` and ``cost`` in the group: ``repair``
and ``cost``, or all three).

    python benchmarks/game_build_latency.py [--cubin K.cubin|K.cuasm] [--repeat 7] [--sources M,M ...]

Without ``--cubin``: ``benchmarks/kernels/fma_2k.cu`` (2,072 instructions), compiled here with nvcc for sm_90.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


class _SourcesOf(importlib.abc.MetaPathFinder):
    """Loads the named modules from their ``.py`` files (ahead of their compiled extension modules)."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(self, name: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name not in self.names:
            return None
        return importlib.util.spec_from_file_location(name, Path(path[0]) / (name.rpartition(".")[2] + ".py"))


def child(path: str, sources: str) -> None:
    import gc

    if sources:
        sys.meta_path.insert(0, _SourcesOf(set(sources.split(","))))

    from sass_lsp import _native
    from sass_lsp.cuasm import write_cuasm
    from sass_lsp.isa.semantics import load_semantics
    from sass_lsp.schedule.game import ReorderGame

    p = Path(path)
    text = write_cuasm(p.read_bytes(), source_name=p.name) if p.suffix == ".cubin" else p.read_text()
    load_semantics("sm_90")
    gc.collect()
    gc.freeze()
    gc.disable()
    t0 = time.perf_counter()
    game = ReorderGame.from_text(text, "sm_90")
    t1 = time.perf_counter()
    mask = game.action_mask()
    action = int(mask[:-1].argmax()) if mask[:-1].any() else len(mask) - 1
    t2 = time.perf_counter()
    game.step(action)
    t3 = time.perf_counter()
    ReorderGame.from_text(text + "// edited\n", "sm_90")
    t4 = time.perf_counter()
    import sass_lsp.schedule.deps as deps

    said = "pure" if _native.pure else "compiled"
    said += " deps " + ("source" if deps.__file__.endswith(".py") else "compiled")
    out = {"said": said, "build": t1 - t0, "step": t3 - t2, "edit": t4 - t3}
    print(json.dumps(out))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cubin", help="default: benchmarks/kernels/fma_2k.cu compiled with nvcc for sm_90")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--sources", action="append", default=[], help="modules run from source, comma-separated")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--child-sources", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.cubin, args.child_sources)
        return 0
    if args.cubin is None:
        args.cubin = os.path.join(tempfile.mkdtemp(prefix="game-build-"), "fma_2k.cubin")
        src = Path(__file__).resolve().parent / "kernels" / "fma_2k.cu"
        subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-O3", "-o", args.cubin, str(src)], check=True)
    runs: dict[str, list[dict]] = {"compiled": [], "pure": []}
    runs.update({f"src:{s}": [] for s in args.sources})
    for _ in range(args.repeat):
        for label in runs:
            env = {k: v for k, v in os.environ.items() if k != "SASS_LSP_PURE"}
            if label == "pure":
                env["SASS_LSP_PURE"] = "1"
            cmd = [sys.executable, __file__, "--child", "--cubin", args.cubin]
            cmd += ["--child-sources", label[4:]] if label.startswith("src:") else []
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            runs[label].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{args.cubin}, {args.repeat} fresh processes per build (builds interleaved), ms")
    for label, rows in runs.items():
        said = rows[0]["said"]
        parts = []
        for key in ("build", "edit", "step"):
            xs = [1e3 * r[key] for r in rows]
            parts.append(f"{key} {statistics.median(xs):.1f} (min {min(xs):.1f})")
        tot = [1e3 * (r["build"] + r["step"]) for r in rows]
        print(f"  {label} [{said}]: " + "; ".join(parts) + f"; build+step {statistics.median(tot):.1f}")
        print("    samples build+step " + " ".join(f"{x:.0f}" for x in tot))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
