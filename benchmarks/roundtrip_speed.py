"""Disassembly and assembly throughput (instructions/s): largest corpus kernels and a 50k-instruction one.

Goal (issue 2): asm >= 100k instructions/s excluding the nvdisasm verification pass, which is one nvdisasm
call per cubin. ``asm i/s`` times ``assemble_cuasm(verify=False)`` (parse, layout, encode, ELF) with a fresh
encoder per run, so nothing it memoises survives from an earlier run (the tables' JSON stays loaded: that
is a once-per-process cost, printed on its own). ``parse i/s`` times ``parse_cuasm`` alone (the language
server runs it on every edit). Figures are medians of ``--repeat`` runs; ``asm cpu`` is the same throughput
in process CPU time of the same runs, which a machine shared with other work disturbs less than wall time.

The 50k kernel is the largest corpus kernel with straight-line instructions of every corpus kernel (no
branches, no exits, no relocations) copied in front of its body, each run of 32 with its registers renamed
at random in aligned groups of 8, so that its texts are about as varied as a real kernel's
(``distinct`` column: distinct instruction texts). It assembles and verifies; it is not meant to run.

    python benchmarks/roundtrip_speed.py [--corpus DIR] [--instructions 50000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from sass_lsp.cuasm import assemble_cuasm, parse_cuasm, write_cuasm
from sass_lsp.cuasm.assembler import module_arch, verify_instructions
from sass_lsp.cuasm.disasm import disassemble
from sass_lsp.isa.encoder import Encoder

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = ROOT / "sass_lsp" / "corpus" / "sm_90"
INSTR = re.compile(r"^\s*\[[^\]]*\]\s*/\*[0-9a-f]+\*/")
CONTROL_FLOW = re.compile(r"\b(BRA|BRX|JMP|JMX|EXIT|CALL|RET|BSSY|BSYNC|WARPSYNC|BPT)\b|`\(|@lo\(|@hi\(")
GPR = re.compile(r"(?<![\w.])(U?)R(\d+)\b")
RUN = 32  # instructions that share one register assignment
N_GROUPS = {"": 30, "U": 7}  # renamed in aligned groups of 8 among R0-R239 and UR0-UR55 (RZ 255, URZ 63)


def instruction_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if INSTR.match(line)]


def straight_line(text: str) -> list[str]:
    return [ln for ln in instruction_lines(text) if not CONTROL_FLOW.search(ln.split("*/", 1)[-1])]


def rename_registers(line: str, groups: dict[str, list[int]]) -> str:
    """R<n> -> R<8 * groups[n // 8] + n % 8> (and UR): a new register assignment keeping every alignment."""

    def rename(m: re.Match[str]) -> str:
        n = int(m.group(2))
        group = groups[m.group(1)]
        return f"{m.group(1)}R{8 * group[n // 8] + n % 8 if n // 8 < len(group) else n}"

    head, sep, body = line.partition("*/")
    return head + sep + GPR.sub(rename, body)


def grow(text: str, bodies: list[str], target: int, seed: int = 0) -> str:
    """``text`` with instructions from ``bodies`` put in front of its first kernel up to ``target``."""
    rng = random.Random(seed)
    lines = text.splitlines()
    first = next(i for i, ln in enumerate(lines) if INSTR.match(ln))
    need = max(0, target - len(instruction_lines(text)))
    filler: list[str] = []
    while len(filler) < need:
        start = rng.randrange(len(bodies))
        run = [bodies[(start + k) % len(bodies)] for k in range(min(RUN, need - len(filler)))]
        groups = {kind: rng.sample(range(n), n) for kind, n in N_GROUPS.items()}
        filler += [rename_registers(ln, groups) for ln in run]
    return "\n".join(lines[:first] + filler + lines[first:]) + "\n"


def median_time(
    fn: Callable[[], object], repeat: int, clock: Callable[[], float] = time.perf_counter
) -> float:
    times = []
    for _ in range(repeat):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times)


def both_clocks(fn: Callable[[], object], repeat: int) -> tuple[list[float], list[float]]:
    """Wall and process CPU seconds of the same ``repeat`` runs (on a shared machine the two differ when
    other work takes the CPU; separate batches of runs would differ by more than that)."""
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return wall, cpu


def cold_asm(text: str, arch: str) -> bytes:
    return assemble_cuasm(text, encode=Encoder.uncached(arch).encode_word, verify=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--instructions", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    all_cubins = sorted(args.corpus.glob("*.cubin"))
    t0 = time.perf_counter()
    Encoder.uncached("sm_90")
    print(f"encoder tables loaded in {time.perf_counter() - t0:.2f} s (once per process)")
    cubins = sorted(all_cubins, key=lambda p: p.stat().st_size, reverse=True)[:3]
    cases = [(p.stem, p.read_bytes()) for p in cubins]
    bodies = [ln for p in all_cubins for ln in straight_line(write_cuasm(p.read_bytes()))]
    big_text = grow(write_cuasm(cases[0][1]), bodies, args.instructions)
    big = assemble_cuasm(big_text, source_name="grown", verify=False)
    cases.append((f"grown_{args.instructions // 1000}k", big))
    print(
        f"{'kernel':18s} {'instrs':>6s} {'distinct':>8s} {'disasm i/s':>10s} {'nvdisasm s':>10s} "
        f"{'parse i/s':>9s} {'asm i/s':>8s} {'asm cpu':>8s} {'verify s':>8s} {'round trip':>10s}"
    )
    samples: list[tuple[str, int, list[float]]] = []
    for name, cubin in cases:
        text = write_cuasm(cubin)
        arch = module_arch(parse_cuasm(text)[0])
        texts = [ln.split("*/", 1)[1].strip() for ln in instruction_lines(text)]
        n = len(texts)
        t_nvdisasm = median_time(lambda c=cubin: disassemble(c), 1)
        t_disasm = median_time(lambda c=cubin: write_cuasm(c), 1)
        t_parse = median_time(lambda t=text: parse_cuasm(t), args.repeat)
        walls, cpus = both_clocks(lambda t=text, a=arch: cold_asm(t, a), args.repeat)
        t_asm, t_asm_cpu = statistics.median(walls), statistics.median(cpus)
        samples.append((name, n, walls))
        data = cold_asm(text, arch)
        t0 = time.perf_counter()
        problems = verify_instructions(parse_cuasm(text)[0], data)
        t_verify = time.perf_counter() - t0
        same = data == cubin and not problems
        print(
            f"{name:18s} {n:6d} {len(set(texts)):8d} {n / t_disasm:10.0f} {t_nvdisasm:10.2f} "
            f"{n / t_parse:9.0f} {n / t_asm:8.0f} {n / t_asm_cpu:8.0f} {t_verify:8.2f} "
            f"{'identical' if same else 'DIFFERS':>10s}"
        )
    name, n, walls = samples[-1]
    runs = " ".join(f"{n / t / 1e3:.0f}k" for t in walls)
    print(f"{name} asm runs (instructions/s, in run order): {runs}")


if __name__ == "__main__":
    main()
