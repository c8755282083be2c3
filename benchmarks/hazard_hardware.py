"""Check the hazard checker against the hardware: run injected hazards on the GPU against the original.

For every corpus kernel (NAME.cubin + NAME.json): disassemble with our writer (the text reassembles to the
original bit for bit), inject hazards with :mod:`sass_lsp.analysis.mutate`, plus "safe" edits the checker
accepts (adjacent swaps with zero findings), assemble each with our assembler, and verify it against the
original on fresh random inputs in the isolated GPU worker. Every mutant that gives a wrong result or
crashes must be flagged; no mutant the checker calls safe may differ.

    python benchmarks/hazard_hardware.py --corpus DIR [--per-class 2] [--safe 6] [--seeds 2] [--json OUT]
        [--time-limit S]
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import time
from pathlib import Path

from sass_lsp.analysis import check_module
from sass_lsp.analysis.mutate import mutations, render
from sass_lsp.cuasm import assemble_cuasm, parse_cuasm, write_cuasm
from sass_lsp.cuasm.assembler import module_arch
from sass_lsp.gpu import GpuRunner, spec_from_json
from sass_lsp.isa.semantics import Effects, Semantics, load_semantics
from sass_lsp.model import Instruction

CORRUPT = {"mismatch", "fault", "timeout", "crash"}


def n_errors(text: str, arch: str) -> int:
    return len(finding_codes(text, arch))


def finding_codes(text: str, arch: str) -> list[str]:
    """The codes of every error and warning the parser and the checker report on ``text``."""
    module, diags = parse_cuasm(text)
    codes = ["parse" for d in diags if d.severity == "error"]
    return codes + [f.code for f in check_module(module, arch) if f.severity in ("error", "warning")]


# Swapping two fixed-latency arithmetic instructions with no register in common keeps the program's meaning;
# the checker then decides whether the control codes still cover the new order.
ARITHMETIC_PIPES = {"alu", "fma", "fma_wide", "fp16", "fp64", "uniform", "umov"}


def independent(a: Effects, b: Effects) -> bool:
    if a.pipe not in ARITHMETIC_PIPES or b.pipe not in ARITHMETIC_PIPES or a.variable or b.variable:
        return False
    return not (a.def_units & (b.use_units | b.def_units) or b.def_units & a.use_units)


def safe_swaps(lines: list[str], module, sem: Semantics, rng: random.Random, limit: int):  # noqa: ANN001
    """Swaps of adjacent independent instructions that the checker accepts without any finding."""
    cands = []
    for sec in module.sections:
        items = sec.items
        for a, b in zip(items, items[1:], strict=False):
            adjacent = isinstance(a, Instruction) and isinstance(b, Instruction) and b.line == a.line + 1
            if adjacent and independent(sem.effects(a.text), sem.effects(b.text)):
                cands.append((a.line, b.line))
    rng.shuffle(cands)
    found = 0
    for la, lb in cands:
        new = list(lines)
        new[la - 1], new[lb - 1] = lines[lb - 1], lines[la - 1]
        text = "\n".join(new) + "\n"
        if n_errors(text, sem.arch) == 0:
            yield la, text
            found += 1
            if found >= limit:
                return


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--per-class", type=int, default=2)
    ap.add_argument("--safe", type=int, default=6)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--only-safe", action="store_true", help="run only the checker-accepted swaps")
    ap.add_argument("--classes", nargs="*", help="run only these mutation classes (default: all)")
    ap.add_argument("--kernels", nargs="*", help="only these corpus kernels (default: all)")
    ap.add_argument("--time-limit", type=float, default=0.0, help="stop running mutants after S seconds")
    args = ap.parse_args(argv)
    runner = GpuRunner(timeout_s=60)
    rng = random.Random(2026)
    rows = []
    t0 = time.time()
    for cubin_path in sorted(args.corpus.glob("*.cubin")):
        name = cubin_path.stem
        if args.kernels and name not in args.kernels:
            continue
        cubin = cubin_path.read_bytes()
        text = write_cuasm(cubin, source_name=cubin_path.name)
        assert assemble_cuasm(text, source_name=name) == cubin, f"{name}: round trip is not exact"
        module = parse_cuasm(text)[0]
        arch = module_arch(module)
        sem = load_semantics(arch)
        spec = spec_from_json(cubin_path.with_suffix(".json").read_text(), cubin)
        lines = text.splitlines()
        variants = []
        for sec in module.sections:
            if not sec.name.startswith(".text."):
                continue
            items = list(sec.items)
            for cls, new, line, _codes in mutations(sec, sem, rng, 0 if args.only_safe else args.per_class):
                mutant = "\n".join(render(lines, items, new)) + "\n"
                variants.append((cls, line, mutant))
        variants += [("safe_swap", ln, text) for ln, text in safe_swaps(lines, module, sem, rng, args.safe)]
        if args.classes:
            variants = [v for v in variants if v[0] in args.classes]
        for cls, line, mutant in variants:
            if args.time_limit and time.time() - t0 > args.time_limit:
                print(f"time limit: {name} {cls} line {line} and later mutants not run", flush=True)
                break
            codes = sorted(set(finding_codes(mutant, arch)))
            flagged = bool(codes)
            try:
                edit = assemble_cuasm(mutant, source_name=f"{name}:{line}", verify=False)
            except Exception as exc:  # report, never stop the sweep
                rows.append(
                    {"kernel": name, "class": cls, "line": line, "flagged": flagged, "status": f"asm: {exc}"}
                )
                continue
            reply = runner.verify(cubin, edit, spec, list(range(args.seeds)))
            if reply.ok:
                status = reply.result.get("status", "error")
            else:
                status = (reply.error or {}).get("kind", "error")
            rows.append(
                {
                    "kernel": name,
                    "class": cls,
                    "line": line,
                    "flagged": flagged,
                    "codes": codes,
                    "status": status,
                }
            )
            print(
                f"{name:18s} {cls:26s} line {line:5d} {','.join(codes) or 'clean':22s} -> {status}",
                flush=True,
            )
    runner.close()
    table = collections.Counter()
    for r in rows:
        outcome = "corrupt" if r["status"] in CORRUPT else "clean" if r["status"] == "match" else "not run"
        key = "safe " if r["class"] == "safe_swap" else "flagged " if r["flagged"] else "unflagged "
        table[key + outcome] += 1
    summary = {
        "mutants": len(rows),
        "flagged_and_corrupt": table["flagged corrupt"],
        "flagged_but_clean": table["flagged clean"],
        "unflagged_and_corrupt": table["unflagged corrupt"],
        "unflagged_and_clean": table["unflagged clean"],
        "safe_and_differ": table["safe corrupt"],
        "safe_and_match": table["safe clean"],
        "not_run": sum(n for k, n in table.items() if k.endswith("not run")),
        "by_class": {
            cls: dict(collections.Counter(r["status"] for r in rows if r["class"] == cls))
            for cls in sorted({r["class"] for r in rows})
        },
        "seconds": round(time.time() - t0, 1),
    }
    print(json.dumps(summary, indent=1))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 0 if summary["unflagged_and_corrupt"] == 0 and summary["safe_and_differ"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
