"""Check register-renaming moves against the hardware: random legal renames of each kernel
(:mod:`sass_lsp.schedule.rename_moves`: ``false_dep`` and ``bank``) are assembled and verified bit for bit
against the original on fresh seeds in the GPU worker.

Every rename is hazard-free and dataflow-preserving by construction; this measures how often the hardware
disagrees. ``--moves 1`` makes every failure attributable to one rename; ``--moves 2-6`` chains renames, each
legal on the text the previous ones left. The launch spec's block size bounds the occupancy (renames that
lower it are refused unless ``--allow-occupancy-loss``). Every verdict is one JSON line (kernel, moves,
verdict, mismatch) on stdout and in ``--json OUT``; the summary table counts verdicts per kernel and, for
single-move mutants, per kind, after a line per kernel with its legal renames by kind. ``--dry-run`` makes
and prints the mutants without a GPU.

    python benchmarks/rename_hardware.py --kernels triton_matmul bf16_gemm --count 40 --moves 1 \
        --seed 7 --json OUT.jsonl [--kinds false_dep] [--time-limit 400] [--dry-run]

Letters in the table: ``.`` match, ``X`` mismatch, ``F`` fault, ``T`` timeout, ``A`` does not assemble,
``-`` not run (``--dry-run``), ``?`` anything else.
"""

from __future__ import annotations

import argparse
import collections
import functools
import math
import sys

from control_hardware import add_arguments, distinct_mutants, mutate_and_verify, summary

from sass_lsp.schedule.rename_moves import KINDS, random_moves, rename_moves


def mutants(
    name: str,
    text: str,
    count: int,
    moves: tuple[int, int],
    seed: int,
    kinds: tuple[str, ...],
    threads_per_block: int | None = None,
    allow_occupancy_loss: bool = False,
) -> list[dict]:
    """Up to ``count`` distinct mutants of one kernel's text, each 1..n renames chained."""
    chain = functools.partial(
        random_moves,
        kinds=kinds,
        threads_per_block=threads_per_block,
        allow_occupancy_loss=allow_occupancy_loss,
    )

    def where(done: list) -> dict:
        return {"lines": [m.def_line for m in done], "regs": [done[0].regs_before, done[-1].regs_after]}

    return distinct_mutants(name, text, count, moves, seed, chain, where)


def legal_counts(text: str, kinds: tuple[str, ...], threads_per_block: int | None, allow: bool) -> dict:
    moves = rename_moves(text, kinds=kinds, threads_per_block=threads_per_block, allow_occupancy_loss=allow)
    return dict(collections.Counter(m.kind for m in moves))


def _kernel_work(item: tuple[str, str, int | None], **kw: object) -> tuple[dict, list[dict]]:
    name, text, threads = item
    counts = legal_counts(text, kw["kinds"], threads, kw["allow_occupancy_loss"])  # type: ignore[arg-type]
    return counts, mutants(name, text, threads_per_block=threads, **kw)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap, KINDS, "renames")
    ap.add_argument("--allow-occupancy-loss", action="store_true", help="also renames that lower occupancy")
    args = ap.parse_args(argv)
    make = functools.partial(
        _kernel_work,
        count=args.count,
        moves=args.moves,
        seed=args.seed,
        kinds=tuple(args.kinds),
        allow_occupancy_loss=args.allow_occupancy_loss,
    )
    legal, out, _kernels = mutate_and_verify(
        args, make, lambda name, spec, text: (name, text, math.prod(spec.block))
    )
    for name, counts in legal.items():
        print(f"{name:20s} legal renames: " + ", ".join(f"{k} {counts.get(k, 0)}" for k in args.kinds))
    print(summary(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
