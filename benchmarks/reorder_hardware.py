"""Check the reorder game against the hardware: random legal reorderings of each corpus kernel (control codes
repaired by the game) are assembled and verified bit for bit against the original on the GPU.

Every state of the game is hazard-free by the checker's model; this measures how often the hardware
disagrees. ``--moves 1`` makes every failure attributable to one move. Each row records the moves, the
changed lines and the full verdict (mismatching buffer, first index, seed), so failures can be studied
offline. Candidates are assembled in a process pool; the GPU verifies them one at a time in the worker.

    python benchmarks/reorder_hardware.py --per-kernel 40 --moves 1 --json OUT.json [--time-limit 400]

Letters in the summary: ``.`` match, ``X`` mismatch, ``F`` fault, ``T`` timeout, ``A`` does not assemble,
``?`` anything else.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import json
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

LETTER = {"match": ".", "mismatch": "X", "fault": "F", "timeout": "T", "asm_error": "A"}


def _candidates(name: str, per_kernel: int, moves: tuple[int, int], seed: int) -> list[dict]:
    from sass_lsp.cuasm import write_cuasm
    from sass_lsp.gpu.corpus import load_kernel
    from sass_lsp.schedule.baselines import random_legal
    from sass_lsp.schedule.game import ReorderGame
    from sass_lsp.schedule.search import game_candidate

    cubin, spec = load_kernel(name)
    text = write_cuasm(cubin, source_name=name)
    rng = random.Random(f"{seed}:{name}")
    game = ReorderGame.from_text(text, "sm_90", kernel=spec.kernel)
    start = game.snapshot()
    rows, seen = [], set()
    for _ in range(per_kernel * 4):
        if len(rows) == per_kernel:
            break
        game.restore(start)
        random_legal(game, rng.randint(*moves), rng)
        cand = game_candidate(game, text, "random")
        if cand.text == text or cand.key in seen:
            continue
        seen.add(cand.key)
        diff = [
            line
            for line in difflib.unified_diff(text.splitlines(), cand.text.splitlines(), n=0, lineterm="")
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        ]
        rows.append(
            {"kernel": name, "i": len(rows), "moves": list(cand.moves), "diff": diff, "text": cand.text}
        )
    return rows


def _assemble(row: dict) -> tuple[dict, bytes | None]:
    from sass_lsp.cuasm import assemble_cuasm

    try:
        return row, assemble_cuasm(row["text"], source_name=f"{row['kernel']}#{row['i']}", verify=False)
    except Exception as exc:  # noqa: BLE001 - an unassemblable candidate is a result, not a crash
        row["asm_error"] = str(exc)[:500]
        return row, None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-kernel", type=int, default=12)
    ap.add_argument("--moves", default="1-8", help="moves per candidate: N or LO-HI")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--kernels", nargs="*", help="corpus kernels (default: all)")
    ap.add_argument("--jobs", type=int, default=8, help="assembler processes")
    ap.add_argument("--time-limit", type=float, default=0.0, help="stop verifying after S seconds (0: never)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    lo, _, hi = args.moves.partition("-")
    moves = (int(lo), int(hi or lo))

    from sass_lsp.gpu import GpuRunner
    from sass_lsp.gpu.corpus import corpus_names, load_kernel

    t0 = time.time()
    names = args.kernels or corpus_names()
    with ProcessPoolExecutor(args.jobs) as pool:
        made = pool.map(
            functools.partial(_candidates, per_kernel=args.per_kernel, moves=moves, seed=args.seed), names
        )
        rows = [r for kernel_rows in made for r in kernel_rows]
        print(f"{len(rows)} candidates in {time.time() - t0:.1f} s", flush=True)
        assembled = list(pool.map(_assemble, rows, chunksize=4))
    print(f"assembled in {time.time() - t0:.1f} s", flush=True)

    out: list[dict] = []
    originals = {name: load_kernel(name) for name in names}
    with GpuRunner(timeout_s=60) as runner:
        for row, edit in assembled:
            row.pop("text")
            if args.time_limit and time.time() - t0 > args.time_limit:
                break
            if edit is None:
                row["status"] = "asm_error"
            else:
                cubin, spec = originals[row["kernel"]]
                reply = runner.verify(cubin, edit, spec, [21, 22, 23])
                res = reply.result if reply.ok else {"status": (reply.error or {}).get("kind", "error")}
                row["status"] = res.get("status", "error")
                row["mismatches"] = res.get("mismatches", [])[:2]
                row["error"] = res.get("error") or (reply.error if not reply.ok else None)
            out.append(row)
            if args.json:
                args.json.write_text(json.dumps(out, indent=1))
    by_kernel: dict[str, str] = {}
    for r in out:
        by_kernel[r["kernel"]] = by_kernel.get(r["kernel"], "") + LETTER.get(r["status"], "?")
    bad = [r for r in out if r["status"] != "match"]
    print(f"moves {args.moves}: {len(bad)}/{len(out)} differ from the original ({time.time() - t0:.0f} s)")
    for kernel, letters in by_kernel.items():
        print(f"  {kernel:20s} {letters}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
