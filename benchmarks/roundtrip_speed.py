"""Disassembly and assembly throughput (instructions/s): largest corpus kernels and a 50k-instruction one.

Goal (issue 2): asm >= 100k instructions/s excluding the nvdisasm verification pass, which is one nvdisasm
call per cubin. The 50k kernel is a corpus kernel with straight-line instructions (no branches, no exits)
copied in front of its body: it assembles (it is not meant to run).

    python benchmarks/roundtrip_speed.py [--corpus DIR] [--instructions 50000]
"""

from __future__ import annotations

import argparse
import os
import re
import time
from pathlib import Path

from sass_lsp.cuasm import assemble_cuasm, write_cuasm
from sass_lsp.cuasm.disasm import disassemble

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = Path(os.environ.get("SASS_LSP_SHARED", ROOT.parent / "shared")) / "corpus" / "sm_90"
INSTR = re.compile(r"^\s*\[[^\]]*\]\s*/\*[0-9a-f]+\*/")
CONTROL_FLOW = re.compile(r"\b(BRA|BRX|JMP|JMX|EXIT|CALL|RET|BSSY|BSYNC|WARPSYNC|BPT)\b|`\(")


def n_instructions(text: str) -> int:
    return sum(1 for line in text.splitlines() if INSTR.match(line))


def grow(text: str, target: int) -> str:
    """``text`` with straight-line instructions of its first kernel repeated up to ``target`` instructions."""
    lines = text.splitlines()
    body = [ln for ln in lines if INSTR.match(ln) and not CONTROL_FLOW.search(ln.split("*/", 1)[-1])]
    first = next(i for i, ln in enumerate(lines) if INSTR.match(ln))
    need = max(0, target - n_instructions(text))
    filler = [body[i % len(body)] for i in range(need)]
    return "\n".join(lines[:first] + filler + lines[first:]) + "\n"


def timed(fn, repeat: int = 3) -> float:  # noqa: ANN001
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--instructions", type=int, default=50_000)
    args = ap.parse_args()
    cubins = sorted(args.corpus.glob("*.cubin"), key=lambda p: p.stat().st_size, reverse=True)[:3]
    cases = [(p.stem, p.read_bytes()) for p in cubins]
    big_text = grow(write_cuasm(cases[0][1]), args.instructions)
    big = assemble_cuasm(big_text, source_name="grown", verify=False)
    cases.append((f"grown_{args.instructions // 1000}k", big))
    print(
        f"{'kernel':22s} {'instrs':>7s} {'disasm i/s':>11s} {'nvdisasm s':>10s} {'asm i/s':>9s} "
        f"{'verify s':>9s} {'round trip':>10s}"
    )
    for name, cubin in cases:
        text = write_cuasm(cubin)
        n = n_instructions(text)
        t_nvdisasm = timed(lambda c=cubin: disassemble(c), 1)
        t_disasm = timed(lambda c=cubin: write_cuasm(c), 1)
        t_asm = timed(lambda t=text: assemble_cuasm(t, verify=False))
        t_full = timed(lambda t=text: assemble_cuasm(t, verify=True), 1)
        same = assemble_cuasm(text) == cubin
        print(
            f"{name:22s} {n:7d} {n / t_disasm:11.0f} {t_nvdisasm:10.2f} {n / t_asm:9.0f} "
            f"{max(t_full - t_asm, 0):9.2f} {'identical' if same else 'DIFFERS':>10s}"
        )


if __name__ == "__main__":
    main()
