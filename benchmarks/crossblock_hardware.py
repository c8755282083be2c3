"""Check cross-block moves against the hardware: random legal hoists and sinks of each kernel
(:mod:`sass_lsp.schedule.crossblock_moves`) are assembled and verified bit for bit against the original on
fresh seeds in the GPU worker.

Every move is hazard-free and dataflow-preserving by construction (the control codes of both blocks are
repaired); this measures how often the hardware disagrees. ``--moves 1`` makes every failure attributable to
one move; ``--moves 2-6`` chains moves, each legal on the text the previous ones left. Every verdict is one
JSON line (kernel, moves, verdict, mismatch) on stdout and in ``--json OUT``; the summary table counts
verdicts per kernel and, for single-move mutants, per kind, after a line per kernel with its legal moves by
kind. ``--dry-run`` makes and prints the mutants without a GPU.

    python benchmarks/crossblock_hardware.py --kernels triton_softmax flash_attn_fwd --count 40 --moves 1 \
        --seed 7 --json OUT.jsonl [--kinds hoist] [--time-limit 400] [--dry-run]

Letters in the table: ``.`` match, ``X`` mismatch, ``F`` fault, ``T`` timeout, ``A`` does not assemble,
``-`` not run (``--dry-run``), ``?`` anything else.
"""

from __future__ import annotations

import argparse
import collections
import functools
import sys

from control_hardware import add_arguments, distinct_mutants, mutate_and_verify, summary

from sass_lsp.schedule.crossblock_moves import KINDS, crossblock_moves, random_moves


def mutants(
    name: str, text: str, count: int, moves: tuple[int, int], seed: int, kinds: tuple[str, ...]
) -> list[dict]:
    """Up to ``count`` distinct mutants of one kernel's text, each 1..n cross-block moves chained."""
    return distinct_mutants(name, text, count, moves, seed, functools.partial(random_moves, kinds=kinds))


def legal_counts(text: str, kinds: tuple[str, ...]) -> dict:
    return dict(collections.Counter(m.kind for m in crossblock_moves(text, kinds=kinds)))


def _kernel_work(item: tuple[str, str], **kw: object) -> tuple[dict, list[dict]]:
    name, text = item
    return legal_counts(text, kw["kinds"]), mutants(name, text, **kw)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap, KINDS, "moves")
    args = ap.parse_args(argv)
    make = functools.partial(
        _kernel_work, count=args.count, moves=args.moves, seed=args.seed, kinds=tuple(args.kinds)
    )
    legal, out, _kernels = mutate_and_verify(args, make)
    for name, counts in legal.items():
        print(f"{name:20s} legal moves: " + ", ".join(f"{k} {counts.get(k, 0)}" for k in args.kinds))
    print(summary(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
