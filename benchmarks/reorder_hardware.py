"""Check the reorder game against the hardware: random legal reorderings of each corpus kernel (control codes
repaired by the game) are assembled and verified bit for bit against the original on the GPU.

Every state of the game is hazard-free by the checker's model; this measures how often the hardware
disagrees, per ``--margin`` (``SASS_LSP_RAW_MARGIN``: extra cycles for a fixed-latency RAW pair a move brings
closer than ptxas had it). Each margin runs in its own process so the repair tables are built with it.

    python benchmarks/reorder_hardware.py --per-kernel 12 --margins 0 1 2 --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path


def one_margin(per_kernel: int, seed: int) -> list[dict]:
    from sass_lsp.cuasm import assemble_cuasm, write_cuasm
    from sass_lsp.gpu import GpuRunner
    from sass_lsp.gpu.corpus import corpus_names, load_kernel
    from sass_lsp.schedule.search import random_candidates, take

    rows = []
    with GpuRunner(timeout_s=60) as runner:
        for name in corpus_names():
            cubin, spec = load_kernel(name)
            text = write_cuasm(cubin, source_name=name)
            cands = take(
                random_candidates(text, "sm_90", random.Random(seed), kernel=spec.kernel), per_kernel
            )
            for i, cand in enumerate(cands):
                edit = assemble_cuasm(cand.text, source_name=f"{name}#{i}", verify=False)
                reply = runner.verify(cubin, edit, spec, [21, 22, 23])
                status = reply.result.get("status", "error") if reply.ok else (reply.error or {}).get("kind")
                rows.append({"kernel": name, "i": i, "moves": list(cand.moves), "status": status})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-kernel", type=int, default=12)
    ap.add_argument("--margins", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(one_margin(args.per_kernel, args.seed)))
        return 0
    out = {}
    for margin in args.margins:
        t0 = time.time()
        env = {**os.environ, "SASS_LSP_RAW_MARGIN": str(margin)}
        cmd = [
            sys.executable,
            __file__,
            "--child",
            "--per-kernel",
            str(args.per_kernel),
            "--seed",
            str(args.seed),
        ]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode:
            print(done.stderr[-2000:], file=sys.stderr)
            continue
        rows = json.loads(done.stdout.strip().splitlines()[-1])
        bad = [r for r in rows if r["status"] != "match"]
        out[margin] = {
            "candidates": len(rows),
            "not_match": len(bad),
            "seconds": round(time.time() - t0, 1),
            "rows": rows,
        }
        by_kernel: dict[str, list[str]] = {}
        for r in rows:
            by_kernel.setdefault(r["kernel"], []).append(r["status"][0])
        print(
            f"margin {margin}: {len(bad)}/{len(rows)} differ from the original  "
            + "  ".join(f"{k}:{''.join(v)}" for k, v in by_kernel.items()),
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
