#!/usr/bin/env python3
"""Time a full hazard check of a generated 20,000-instruction sm_90 kernel (goal: <= 100 ms).

The kernel is made of the Triton kernels' text sections from ../shared/corpus/sm_90 (or any
``--source`` .cuasm files) concatenated with labels renamed, and registers rotated per copy so that the
scanner's per-text cache does not make repeated copies free. Prints cold (empty caches) and warm times.

    python benchmarks/check_speed.py [--n 20000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import statistics
import time
from pathlib import Path

from sass_lsp.analysis import check_module
from sass_lsp.cuasm.parser import parse_cuasm
from sass_lsp.model import Instruction, Label

SHARED = Path(os.environ.get("SASS_LSP_SHARED", Path(__file__).resolve().parents[2] / "shared"))
SHARED_CORPUS = SHARED / "corpus" / "sm_90"


def generate(sources: list[str], n_instrs: int) -> str:
    blocks = []
    for path in sources:
        with open(path) as fh:
            module, _ = parse_cuasm(fh.read())
        for sec in module.sections:
            if sec.name.startswith(".text."):
                blocks.append([it for it in sec.items if isinstance(it, Instruction | Label)])
    lines = ['\t.section\t".text.bench", 0, SHT_PROGBITS', "bench:"]
    count = copy = 0
    reg = re.compile(r"\bR(\d+)\b")
    while count < n_instrs:
        for items in blocks:
            shift, suffix = copy % 7, f"_c{copy}"
            for it in items:
                if isinstance(it, Label):
                    lines.append(f"{it.name}_c{copy}:")
                    continue
                text = reg.sub(lambda m, s=shift: f"R{(int(m.group(1)) + s) % 200}", it.text)
                text = re.sub(r"`\((\.L[\w.]+)\)", lambda m, s=suffix: f"`({m.group(1)}{s})", text)
                lines.append(f"  [{it.ctrl}]  {text}")
                count += 1
            copy += 1
            if count >= n_instrs:
                break
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--source", nargs="*", default=sorted(glob.glob(str(SHARED_CORPUS / "*.cuasm"))))
    args = ap.parse_args()
    module, _ = parse_cuasm(generate(args.source, args.n))
    n = sum(len(s.instructions) for s in module.sections)
    from sass_lsp.analysis.program import decode_ctrl
    from sass_lsp.isa import semantics

    semantics.load_semantics("sm_90")
    cold = []
    warm = []
    for _ in range(args.repeat):
        semantics._effects.cache_clear()
        decode_ctrl.cache_clear()
        t = time.perf_counter()
        findings = check_module(module, "sm_90")
        cold.append(time.perf_counter() - t)
        t = time.perf_counter()
        check_module(module, "sm_90")
        warm.append(time.perf_counter() - t)
    print(f"{n} instructions, {len(findings)} findings")
    print(f"cold (empty caches): median {statistics.median(cold) * 1e3:.1f} ms")
    print(
        f"warm (text cache hit, e.g. re-check after an edit): median {statistics.median(warm) * 1e3:.1f} ms"
    )


if __name__ == "__main__":
    main()
