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

``--game`` dumps the reorder game instead (schedule.deps, repair, cost) on the shared sm_90 .cuasm files,
``benchmarks``' fma_2k cubin when given (``--fma``) and every third ``.cache/corpus/sm_90`` cubin: per kernel
the node facts and block facts, each hot block's dependence edges and pinned sets, the game's initial cost,
candidates and action mask, the state (cost, reward, moves, text edits, mask) after each of 8 moves of the
first legal candidate and of 8 seeded random legal candidates, and ``suggest(..., time_budget_s=None)``'s
JSON with the bundled policy (torch on one thread). ``--game --quick`` leaves out fma_2k and ``suggest``.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import importlib.util
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

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
from sass_lsp.policy.checkpoint import bundled_policy  # noqa: E402

MUTATIONS_PER_CLASS = 2
GAME_MOVES = 8


def _plain(v: object) -> object:
    """A value of the schedule's facts as JSON data in a fixed order (sets sorted, dataclasses by field)."""
    if isinstance(v, (frozenset, set)):
        return sorted((_plain(x) for x in v), key=repr)
    if isinstance(v, dict):
        return [[_plain(k), _plain(x)] for k, x in sorted(v.items(), key=lambda kv: repr(kv[0]))]
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return [type(v).__name__, *(_plain(getattr(v, f.name)) for f in dataclasses.fields(v))]
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.integer, np.floating, np.bool_)):
        return v.item()
    if v is None or isinstance(v, (int, float, str, bool)):
        return v
    return repr(v)


def _game_texts(quick: bool, shared: Path, fma: str | None) -> list[tuple[str, str]]:
    from sass_lsp.cuasm import write_cuasm

    out = [(f"shared/{p.name}", p.read_text()) for p in sorted(shared.glob("*.cuasm"))]
    if fma and not quick:
        out.append(("fma_2k", write_cuasm(Path(fma).read_bytes(), source_name="fma_2k.cubin")))
    for p in sorted((ROOT / ".cache" / "corpus" / "sm_90").glob("*.cubin"))[::3]:
        out.append((f"sm_90/{p.name}", write_cuasm(p.read_bytes(), source_name=p.name)))
    return out


def _game_rows(put: Callable[[str, object], None], quick: bool, shared: Path, fma: str | None) -> int:
    from sass_lsp.schedule.deps import kernel_context
    from sass_lsp.schedule.game import ReorderGame

    net = None
    if not quick:
        import torch

        from sass_lsp.policy.model import load_policy
        from sass_lsp.policy.suggest import suggest, to_json

        torch.set_num_threads(1)
        net = load_policy(bundled_policy())
    texts = _game_texts(quick, shared, fma)
    for name, text in texts:
        try:
            game = ReorderGame.from_text(text, "sm_90")
        except Exception as exc:  # noqa: BLE001  # (the same either way: part of the dump)
            put(f"game {name}", repr(exc))
            continue
        k, sem = game.k0, game.sem
        ctx = kernel_context(k, sem)
        put(f"game-nodes {name} {k.name}", _plain(ctx.nodes))
        context = (ctx.entry, dict(ctx.maxlat), ctx.bar_gap, ctx.gmma_units, ctx.keep_sbs)
        put(f"game-context {name}", _plain(context))
        for b, deps in sorted(game.deps.items()):
            put(f"game-facts {name} {b}", _plain(ctx.block_facts(b)))
            src, dst, bits = deps.edge_arrays()
            edges = [src.tolist(), dst.tolist(), bits.tolist()]
            put(f"game-deps {name} {b}", _plain((edges, deps.fixed, deps.glued, deps.barriers)))
        start = (game.cost_original, game.window0, game.candidates(), game.action_mask())
        put(f"game-start {name}", _plain(start))
        lines = text.splitlines()
        rng = random.Random(name)
        for how in ("first", "random"):
            game.reset()
            for n in range(GAME_MOVES):
                legal = np.flatnonzero(game.action_mask()[:-1]).tolist()
                if not legal:
                    break
                row = legal[0] if how == "first" else rng.choice(legal)
                _obs, reward, done, trunc, info = game.step(row)
                state = (row, reward, done, trunc, info, game.edits(lines), game.action_mask())
                put(f"game-{how} {name} {n}", _plain(state))
        if net is not None:
            put(f"suggest {name}", to_json(suggest(text, "sm_90", net=net, time_budget_s=None)))
    return len(texts)


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
    ap.add_argument("--game", action="store_true", help="the reorder game and suggest instead of the checker")
    ap.add_argument("--fma", help="fma_2k.cubin for --game (benchmarks/kernels/fma_2k.cu built for sm_90)")
    args = ap.parse_args()
    rows = 0
    with open(args.out, "w") as fh:

        def put(what: str, value: object) -> None:
            nonlocal rows
            fh.write(json.dumps({"what": what, "value": value}) + "\n")
            rows += 1

        if args.game:
            n = _game_rows(put, args.quick, Path(args.shared), args.fma)
            print(f"{rows} rows ({'pure' if _native.pure else 'compiled'}, game, {n} kernels) -> {args.out}")
            return
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
