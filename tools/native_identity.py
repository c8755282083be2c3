#!/usr/bin/env python3
"""Dump what the checker computes on a set of kernels, to compare a compiled build with the pure one.

    python tools/native_identity.py OUT.jsonl [--quick]
    SASS_LSP_PURE=1 python tools/native_identity.py PURE.jsonl [--quick]; cmp OUT.jsonl PURE.jsonl

One JSON line per check: what was checked, ``format_json`` of its findings, and for timelines, entry
states and the table builder's mode (``Checker`` with a horizon and an observer) their repr. The
kernels: every ``.cache/corpus/<arch>`` cubin (sm_90a as sm_90, disassembled by the corpus builder as the
tests do), the shared sm_90 .cuasm files, mutations of each text section
(``analysis.mutate``, several per class) and the generated 20k benchmark kernel. ``--quick``: one cubin
per arch and the shared files (what tests/test_native.py runs).
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from sass_lsp import _native  # noqa: E402
from sass_lsp.analysis import check_module, format_json, timeline  # noqa: E402
from sass_lsp.analysis.check import check_kernel  # noqa: E402
from sass_lsp.analysis.hazards import Checker  # noqa: E402
from sass_lsp.analysis.mutate import mutations  # noqa: E402
from sass_lsp.analysis.program import build_kernel, programs_of  # noqa: E402
from sass_lsp.analysis.timeline import kernel_timeline  # noqa: E402
from sass_lsp.cuasm.parser import parse_cuasm  # noqa: E402
from sass_lsp.isa.semantics import load_semantics, supported_arches  # noqa: E402
from sass_lsp.model import Module  # noqa: E402

MUTATIONS_PER_CLASS = 2


def _corpus(quick: bool, shared: Path) -> list[tuple[str, str, Module]]:
    spec = importlib.util.spec_from_file_location("build_semantics", ROOT / "tools/isa/build_semantics.py")
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    known = set(supported_arches())
    out = []
    for d in sorted((ROOT / ".cache" / "corpus").iterdir()):
        arch = d.name if d.name in known else d.name.rstrip("a")
        cubins = sorted(d.glob("*.cubin"))[: 1 if quick else None]
        out += [(f"{d.name}/{p.name}", arch, m) for p, m in builder.load_modules(cubins)]
    for p in sorted(shared.glob("*.cuasm")):
        out.append((f"shared/{p.name}", "sm_90", parse_cuasm(p.read_text())[0]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--shared", default=str(ROOT.parent / "shared" / "corpus" / "sm_90"))
    args = ap.parse_args()
    rows = 0
    with open(args.out, "w") as fh:

        def put(what: str, value: object) -> None:
            nonlocal rows
            fh.write(json.dumps({"what": what, "value": value}) + "\n")
            rows += 1

        modules = _corpus(args.quick, Path(args.shared))
        if not args.quick:
            import check_speed

            src = sorted(glob.glob(str(Path(args.shared) / "*.cuasm")))
            modules.append(("generated-20k", "sm_90", parse_cuasm(check_speed.generate(src, 20000))[0]))
        rng = random.Random(1234)
        for name, arch, module in modules:
            sem = load_semantics(arch)
            put(f"check {name} {arch}", format_json([(name, check_module(module, arch))]))
            for p in programs_of(module, sem):
                put(f"timeline {name} {p.name}", repr(timeline(module, arch, p.name)))
                c = Checker(None, sem, program=p)
                c.run()
                put(f"entry {name} {p.name}", repr(c.entry))
                # The table builder's mode: a horizon, with and without an observer.
                seen: list[tuple] = []
                c = Checker(None, sem, horizon=40, program=p)
                found = c.run()
                c = Checker(None, sem, horizon=40, program=p)
                c.observer = lambda nd, kind, pr, info, seen=seen: seen.append((nd.line, kind, pr.line, info))
                found += c.run()
                put(f"horizon {name} {p.name}", repr((found, c.bar_gaps_seen, seen)))
            if args.quick or name == "generated-20k":
                continue
            for sec in module.sections:
                if not sec.name.startswith(".text."):
                    continue
                for cls, items, line, _codes in mutations(sec, sem, rng, MUTATIONS_PER_CLASS):
                    k = build_kernel(sec.name[6:], sec.line, items, sem)
                    found = check_kernel(k, sem)
                    put(f"mutation {name} {sec.name} {cls} {line}", format_json([(name, found)]))
                    put(f"mutation-timeline {name} {sec.name} {cls} {line}", repr(kernel_timeline(k, sem)))
    print(f"{rows} rows ({'pure' if _native.pure else 'compiled'}, {len(modules)} modules) -> {args.out}")


if __name__ == "__main__":
    main()
