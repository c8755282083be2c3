"""Check software-pipelining moves against the hardware: random legal pipeline moves of each kernel (a global
load and its address arithmetic issued one iteration ahead, :mod:`sass_lsp.schedule.pipeline_moves`) are
assembled and verified bit for bit against the original on fresh seeds in the GPU worker.

Every move is hazard-free by the checker's model and keeps each read's value by construction; this measures
how often the hardware disagrees. ``--moves 1`` makes every failure attributable to one move; ``--moves 2-3``
chains moves, each legal on the text the previous ones left. Every verdict is one JSON line (kernel, moves,
verdict, mismatch) on stdout and in ``--json OUT``; the summary table counts verdicts per kernel, after a line
per kernel with its legal moves. ``--dry-run`` makes and prints the mutants without a GPU. ``--time-all R``
then also verifies (5 seeds) and times (R rounds) each legal single move of each kernel, one JSON line each.

    python benchmarks/pipeline_hardware.py --kernels fp8_blockscale_gemm --count 10 --moves 1-3 \
        --seed 7 --json OUT.jsonl [--time-limit 400] [--dry-run] [--time-all 40]

Letters in the table: ``.`` match, ``X`` mismatch, ``F`` fault, ``T`` timeout, ``A`` does not assemble,
``-`` not run (``--dry-run``), ``?`` anything else.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys

from control_hardware import add_arguments, distinct_mutants, mutate_and_verify, summary

from sass_lsp.schedule.pipeline_moves import KINDS, apply, pipeline_moves, random_moves


def _kernel_work(item: tuple[str, str], **kw: object) -> tuple[int, list[dict]]:
    name, text = item
    chain = functools.partial(random_moves, kinds=kw.pop("kinds"))  # type: ignore[arg-type]
    where = lambda done: {"lines": [m.load_line for m in done]}  # noqa: E731
    return len(pipeline_moves(text)), distinct_mutants(name, text, chain=chain, where=where, **kw)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap, KINDS, "moves")
    ap.add_argument("--time-all", type=int, default=0, metavar="ROUNDS", help="time every legal single move")
    args = ap.parse_args(argv)
    make = functools.partial(
        _kernel_work, count=args.count, moves=args.moves, seed=args.seed, kinds=tuple(args.kinds)
    )
    legal, out, kernels = mutate_and_verify(args, make)
    for name, n in legal.items():
        print(f"{name:20s} legal moves: {n}")
    print(summary(out))
    if args.time_all and not args.dry_run:
        time_all(kernels, args.time_all)
    return 0


def time_all(kernels: dict, rounds: int) -> None:
    """Each legal single move of each kernel made, verified and timed against the original."""
    from sass_lsp.cuasm import assemble_cuasm
    from sass_lsp.gpu import GpuRunner
    from sass_lsp.gpu.bench import run_bench

    with GpuRunner(timeout_s=120) as runner:
        for name, (cubin, spec, text) in kernels.items():
            for move in pipeline_moves(text):
                edit = assemble_cuasm(apply(text, move), source_name=name)
                result = run_bench(cubin, edit, spec, rounds=rounds, runner=runner)
                row = {"kernel": name, "move": move.description, "verdict": result.verdict}
                row["verified"] = result.verified
                if result.timing is not None:
                    ci = result.timing.ci
                    row |= {"speedup": ci.ratio, "ci": [ci.low, ci.high]}
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    sys.exit(main())
