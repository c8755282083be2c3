#!/usr/bin/env python3
"""Latency of ``sass-lsp suggest`` on the CPU (goal, issue #6: <= 200 ms for a 2,000-instruction kernel).

Kernels: ``benchmarks/kernels/fma_2k.cu`` (compiled here with nvcc for sm_90: 2,072 instructions, one
straight-line block) and the sm_90 corpus kernels. What is timed is ``policy.suggest`` with the bundled
policy, as the editor's code actions and the CLI call it (its default 0.2 s search budget):

- new text: the first request for a text (the editor after an edit): parse, dependences, cost model and
  the search; each sample gets a text no earlier call has seen (a comment line appended);
- same text: the request repeated (cursor moves): the game for the text is cached, only the search runs.

The policy's load (once per process) is printed on its own. Medians and minima of ``--repeat`` samples.

    python benchmarks/suggest_latency.py [--repeat 7] [--threads N] [--policy DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import torch

from sass_lsp.cuasm import parse_cuasm, write_cuasm
from sass_lsp.cuasm.assembler import module_arch
from sass_lsp.policy.model import load_policy
from sass_lsp.policy.suggest import suggest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("SASS_LSP_SHARED", ROOT.parent / "shared")) / "corpus" / "sm_90"


def kernels(work: Path) -> list[tuple[str, str]]:
    cubin = work / "fma_2k.cubin"
    src = ROOT / "benchmarks/kernels/fma_2k.cu"
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-O3", "-o", str(cubin), str(src)], check=True)
    out = [("fma_2k", write_cuasm(cubin.read_bytes(), source_name=cubin.name))]
    out += [(p.stem, p.read_text()) for p in sorted(CORPUS.glob("*.cuasm"))]
    return out


def n_instructions(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.lstrip().startswith("["))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    ap.add_argument("--policy", type=Path, default=ROOT / "policy_models/reorder-v2")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    net = load_policy(args.policy)
    print(
        f"policy load {1e3 * (time.perf_counter() - t0):.0f} ms; torch threads {torch.get_num_threads()};"
        f" load average {os.getloadavg()[0]:.2f}"
    )
    print(f"{'kernel':18} {'instr':>6} {'new text ms (min/med)':>22} {'same text ms (min/med)':>23} found")
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in kernels(Path(tmp)):
            arch = module_arch(parse_cuasm(text)[0])
            new, same, found = [], [], 0
            for i in range(args.repeat):
                fresh = f"{text}// sample {i}\n"
                t = time.perf_counter()
                found = len(suggest(fresh, arch, net=net))
                new.append(time.perf_counter() - t)
                t = time.perf_counter()
                suggest(fresh, arch, net=net)
                same.append(time.perf_counter() - t)
            print(
                f"{name:18} {n_instructions(text):6} {1e3 * min(new):10.0f} /{1e3 * statistics.median(new):5.0f}"
                f" {1e3 * min(same):12.0f} /{1e3 * statistics.median(same):5.0f} {found:5}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
