#!/usr/bin/env python3
"""Time a full hazard check of a generated 20,000-instruction sm_90 kernel (goal: <= 100 ms).

The kernel is made of the Triton kernels' text sections from sass_lsp/corpus/sm_90 (or any
``--source`` .cuasm files) concatenated with labels renamed and registers rotated per copy, so that
copies are not all the same text (``--distinct``: no two copies share a text at all).

What is timed is ``check_module(module, "sm_90")`` as ``sass-lsp check`` and the language server call it:
CFG, dataflow and every rule, for an already parsed module (parsing is the parser's budget).

- cold: each sample is a fresh interpreter whose first call is timed — the semantics table is loaded
  and every cache is empty, whatever caches the code grows (clearing named caches in one process would
  miss new ones);
- warm: the same process then re-parses the text into a new module and checks it again, as the server
  does after an edit (per-text caches hit, nothing keyed on the module object can);
- timeline: ``analysis.timeline`` (hover) on the same kernel, cold (fresh interpreter) and warm.

Each cold sample is bracketed by ``host_speed.host_probe`` in the same process, and the samples taken
with the host at full speed get their own median beside the median of all (``host_speed`` says why).

    python benchmarks/check_speed.py [--n 20000] [--repeat 5] [--distinct]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from host_speed import full_speed, host_probe

SHARED_CORPUS = Path(__file__).resolve().parents[1] / "sass_lsp" / "corpus" / "sm_90"
KERNEL = "bench"


def generate(sources: list[str], n_instrs: int, distinct: bool = False) -> str:
    from sass_lsp.cuasm.parser import parse_cuasm
    from sass_lsp.model import Instruction, Label

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
    # The corpus names registers up to R104: shifts below 96 never wrap, so every copy differs.
    cycle = 96 if distinct else 7
    while count < n_instrs:
        for items in blocks:
            shift, suffix = copy % cycle, f"_c{copy}"
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


def child(path: str, mode: str, repeat: int) -> None:
    """One fresh interpreter: time the first call (cold), then calls on re-parsed modules (warm)."""
    from sass_lsp.analysis import check_module, timeline
    from sass_lsp.cuasm.parser import parse_cuasm

    text = Path(path).read_text()
    t = time.perf_counter()
    module, _ = parse_cuasm(text)
    parse = time.perf_counter() - t

    def run(m):  # noqa: ANN001, ANN202
        return check_module(m, "sm_90") if mode == "check" else timeline(m, "sm_90", KERNEL)

    probe_before = host_probe()
    t, c = time.perf_counter(), time.process_time()
    result = run(module)
    cold, cold_cpu = time.perf_counter() - t, time.process_time() - c
    probes = (probe_before, host_probe())
    warm, warm_cpu = [], []
    for _ in range(repeat):
        module, _ = parse_cuasm(text)
        t, c = time.perf_counter(), time.process_time()
        run(module)
        warm.append(time.perf_counter() - t)
        warm_cpu.append(time.process_time() - c)
    n = sum(len(s.instructions) for s in module.sections)
    out = {"cold": cold, "cold_cpu": cold_cpu, "warm": warm, "warm_cpu": warm_cpu, "parse": parse}
    out["probes"] = probes
    print(json.dumps({**out, "n": n, "items": len(result)}))


def measure(path: str, mode: str, repeat: int) -> list[dict]:
    out = []
    for _ in range(repeat):
        proc = subprocess.run(
            [sys.executable, __file__, "--child", path, "--mode", mode, "--repeat", "3"],
            capture_output=True,
            text=True,
            check=True,
        )
        out.append(json.loads(proc.stdout.splitlines()[-1]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5, help="fresh interpreters per figure")
    ap.add_argument("--distinct", action="store_true", help="no two copies of a corpus kernel share a text")
    ap.add_argument("--source", nargs="*", default=sorted(glob.glob(str(SHARED_CORPUS / "*.cuasm"))))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="check", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.mode, args.repeat)
        return
    text = generate(args.source, args.n, args.distinct)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.cuasm")
        Path(path).write_text(text)
        check = measure(path, "check", args.repeat)
        tl = measure(path, "timeline", args.repeat)

    def ms(rows: list[dict], key: str) -> str:
        wall = [x for r in rows for x in (r[key] if isinstance(r[key], list) else [r[key]])]
        cpu = [x for r in rows for x in (r[key + "_cpu"] if isinstance(r[key], list) else [r[key + "_cpu"]])]
        return (
            f"median {statistics.median(wall) * 1e3:.1f} ms (min {min(wall) * 1e3:.1f}; "
            f"CPU median {statistics.median(cpu) * 1e3:.1f})"
        )

    c = check[0]
    n_texts = len({line.split("]", 1)[1].strip() for line in text.splitlines() if line.startswith("  [")})
    print(f"{c['n']} instructions ({n_texts} distinct texts), {c['items']} findings")
    parse = [r["parse"] for r in check]
    print(f"parse (not timed below): median {statistics.median(parse) * 1e3:.1f} ms")
    print(f"check cold (fresh interpreter, first call): {ms(check, 'cold')}")
    print("  cold samples (ms, in run order): " + " ".join(f"{r['cold'] * 1e3:.0f}" for r in check))
    print(full_speed(check))
    print(f"check warm (re-parsed module, as after an edit): {ms(check, 'warm')}")
    print(f"timeline cold: {ms(tl, 'cold')}; {tl[0]['items']} blocks")
    print(full_speed(tl))
    print(f"timeline warm: {ms(tl, 'warm')}")


if __name__ == "__main__":
    main()
