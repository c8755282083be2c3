"""Check control-code moves against the hardware: random legal control moves of each kernel (yield, reuse,
stall, scoreboard; :mod:`sass_lsp.schedule.control_moves`) are assembled and verified bit for bit against the
original on fresh seeds in the GPU worker.

Every move is hazard-free by the checker's model; this measures how often the hardware disagrees.
``--moves 1`` makes every failure attributable to one move; ``--moves 2-6`` chains moves, each legal on the
text the previous ones left. Every verdict is one JSON line (kernel, moves, verdict, mismatch) on stdout
and in ``--json OUT``; the summary table counts verdicts per kernel and, for single-move mutants, per kind.
``--dry-run`` makes and prints the mutants without a GPU.

``scoreboard`` moves need ops that share a scoreboard ahead of a wait that needs only one of them, which
ptxas's code never has: ``--reorders N`` first makes N random legal reorder moves (control codes repaired,
each op keeping its scoreboard) on each mutant, then its control moves. A failure there may come from the
reorder (``reorder_hardware.py`` checks those alone); the row lists them under ``reorders``.
``scoreboard_rename`` (same waits, another scoreboard) needs no reorder.

    python benchmarks/control_hardware.py --kernels triton_matmul sgemm_tiled --count 40 --moves 1 \
        --seed 7 --json OUT.jsonl [--kinds stall yield_off] [--reorders 30] [--time-limit 400] [--dry-run]

Letters in the table: ``.`` match, ``X`` mismatch, ``F`` fault, ``T`` timeout, ``A`` does not assemble,
``-`` not run (``--dry-run``), ``?`` anything else.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from reorder_hardware import LETTER, _assemble

from sass_lsp.files import write_atomic
from sass_lsp.schedule.control_moves import ALL_KINDS, KINDS, random_moves

LETTERS = {**LETTER, "dry_run": "-"}
SEEDS = [31, 32, 33]  # fresh: neither the corpus launch's nor the other hardware checks' seeds


def parse_moves(spec: str) -> tuple[int, int]:
    """``N`` or ``LO-HI`` -> (lo, hi), both at least 1."""
    lo, _, hi = spec.partition("-")
    out = (int(lo), int(hi or lo))
    if not 1 <= out[0] <= out[1]:
        raise argparse.ArgumentTypeError(f"--moves {spec}: want N or LO-HI with 1 <= LO <= HI")
    return out


def distinct_mutants(
    name: str,
    text: str,
    count: int,
    moves: tuple[int, int],
    seed: int,
    chain: Callable[[str, int, random.Random], tuple[str, list]],
    where: Callable[[list], dict] = lambda done: {"lines": [m.line for m in done]},
) -> list[dict]:
    """Up to ``count`` distinct mutants of one kernel's text, each ``chain(text, n, rng)``: 1..n moves of
    one kind chained, each legal on the text the previous ones left. ``where`` says where the moves are."""
    rng = random.Random(f"{seed}:{name}")
    rows: list[dict] = []
    seen = {text}
    for _ in range(count * 4):
        if len(rows) == count:
            break
        new, done = chain(text, rng.randint(*moves), rng)
        if not done or new in seen:
            continue
        seen.add(new)
        moved = {"moves": [m.description for m in done], "kinds": [m.kind for m in done]}
        rows.append({"kernel": name, "i": len(rows), **moved, **where(done), "text": new})
    return rows


def mutants(
    name: str,
    text: str,
    count: int,
    moves: tuple[int, int],
    seed: int,
    kinds: tuple[str, ...],
    reorders: int = 0,
) -> list[dict]:
    """Up to ``count`` distinct mutants of one kernel's text, each 1..n control moves chained (after
    ``reorders`` random reorder moves, when more than 0)."""
    if not reorders:
        chain = functools.partial(random_moves, original=text, kinds=kinds)
        return distinct_mutants(name, text, count, moves, seed, chain)
    from sass_lsp import app
    from sass_lsp.schedule.baselines import random_legal
    from sass_lsp.schedule.game import ReorderGame
    from sass_lsp.schedule.search import game_candidate

    game = ReorderGame.from_text(text, app.kernel_arch(text, name))
    start = game.snapshot()
    done_reorders: dict[str, tuple[str, ...]] = {}

    def chain(text: str, n: int, rng: random.Random) -> tuple[str, list]:
        game.restore(start)
        random_legal(game, reorders, rng)
        cand = game_candidate(game, text, "reorders")
        out, done = random_moves(cand.text, n, rng, kinds=kinds)  # stalls bounded by the reordered text's
        done_reorders[out] = cand.moves
        return out, done

    rows = distinct_mutants(name, text, count, moves, seed, chain)
    return [r | {"reorders": list(done_reorders[r["text"]])} for r in rows]


def _kernel_mutants(item: tuple[str, str], **kw: object) -> tuple[None, list[dict]]:
    name, text = item
    return None, mutants(name, text, **kw)  # type: ignore[arg-type]


def load_texts(names: list[str], work: Path) -> dict[str, tuple[bytes, object, str]]:
    """name -> (cubin, launch spec, .cuasm text) for corpus kernels and benchmarks/kernels CUDA C."""
    from reorder_eval import load_kernels

    from sass_lsp.cuasm import write_cuasm

    return {
        name: (cubin, spec, write_cuasm(cubin, source_name=name))
        for name, _origin, cubin, spec in load_kernels(names, work)
    }


def summary(rows: list[dict]) -> str:
    """A table: verdict counts and letters per kernel, then per kind for the single-move mutants."""
    out = [f"{'kernel':20s} {'n':>4s} {'match':>6s} {'differ':>6s} {'asm':>4s}  verdicts"]
    by_kernel: dict[str, list[dict]] = collections.defaultdict(list)
    for r in rows:
        by_kernel[r["kernel"]].append(r)
    for kernel, rs in by_kernel.items():
        c = collections.Counter(r["verdict"] for r in rs)
        differ = sum(n for v, n in c.items() if v not in ("match", "asm_error", "dry_run"))
        letters = "".join(LETTERS.get(r["verdict"], "?") for r in rs)
        out.append(f"{kernel:20s} {len(rs):4d} {c['match']:6d} {differ:6d} {c['asm_error']:4d}  {letters}")
    single: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in rows:
        if len(r["kinds"]) == 1:
            single[r["kinds"][0]][r["verdict"]] += 1
    if single:
        out.append("single moves by kind: " + "; ".join(f"{k} {dict(v)}" for k, v in sorted(single.items())))
    return "\n".join(out)


def add_arguments(
    ap: argparse.ArgumentParser, kinds: tuple[str, ...], what: str = "moves", choices: tuple[str, ...] = ()
) -> None:
    """The options every move kind's hardware check takes (``choices``: the kinds ``--kinds`` accepts, when
    more than the default ``kinds``)."""
    ap.add_argument("--kernels", nargs="*", help="corpus or benchmarks/kernels names (default: the corpus)")
    ap.add_argument("--count", type=int, default=12, help="mutants per kernel")
    ap.add_argument("--moves", type=parse_moves, default=(1, 4), help=f"{what} per mutant: N or LO-HI")
    ap.add_argument("--kinds", nargs="*", choices=choices or kinds, default=list(kinds))
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--jobs", type=int, default=8, help="processes making and assembling mutants")
    ap.add_argument("--time-limit", type=float, default=0.0, help="stop verifying after S seconds (0: never)")
    ap.add_argument("--json", type=Path, help="write the verdicts here, one JSON line per mutant")
    ap.add_argument("--dry-run", action="store_true", help="make and print the mutants; no GPU")


def verdicts(pool, rows: list[dict], kernels: dict, args: argparse.Namespace, t0: float) -> list[dict]:  # noqa: ANN001
    """Each mutant's verdict from the GPU, or with ``--dry-run`` the mutants printed (and written) unrun."""
    print(f"{len(rows)} mutants in {time.time() - t0:.1f} s", flush=True)
    if not args.dry_run:
        return _verify(pool, rows, kernels, args.time_limit, t0, args.json)
    out = [_row(r, "dry_run") for r in rows]
    for r in out:
        print(json.dumps(r), flush=True)
    if args.json:
        write_atomic(args.json, "".join(json.dumps(r) + "\n" for r in out))
    return out


def mutate_and_verify(
    args: argparse.Namespace,
    work: Callable[[Any], tuple[Any, list[dict]]],
    item: Callable[[str, Any, str], Any] = lambda name, _spec, text: (name, text),
) -> tuple[dict[str, Any], list[dict], dict]:
    """Each kernel's ``(legal moves, mutants) = work(item(name, spec, text))``, made in a process pool, then
    every mutant's verdict (:func:`verdicts`). Returns legal moves by kernel, the verdicts and the kernels."""
    from sass_lsp.gpu.corpus import corpus_names

    t0 = time.time()
    with tempfile.TemporaryDirectory() as work_dir, ProcessPoolExecutor(max(1, args.jobs)) as pool:
        kernels = load_texts(args.kernels or corpus_names(), Path(work_dir))
        made = list(pool.map(work, [item(name, spec, text) for name, (_c, spec, text) in kernels.items()]))
        out = verdicts(pool, [r for _legal, rows in made for r in rows], kernels, args, t0)
    return {name: legal for name, (legal, _rows) in zip(kernels, made, strict=True)}, out, kernels


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap, KINDS, choices=ALL_KINDS)
    ap.add_argument(
        "--reorders", type=int, default=0, help="random reorder moves before each mutant's (for scoreboard)"
    )
    args = ap.parse_args(argv)
    make = functools.partial(
        _kernel_mutants,
        count=args.count,
        moves=args.moves,
        seed=args.seed,
        kinds=tuple(args.kinds),
        reorders=args.reorders,
    )
    _legal, out, _kernels = mutate_and_verify(args, make)
    print(summary(out))
    return 0


def _row(row: dict, verdict: str, mismatch: list | None = None, error: object = None) -> dict:
    out = {k: v for k, v in row.items() if k not in ("text", "asm_error")}
    return out | {"verdict": verdict, "mismatch": mismatch or [], "error": error}


def _verify(
    pool, rows: list[dict], kernels: dict, time_limit: float, t0: float, log: Path | None
) -> list[dict]:  # noqa: ANN001
    from sass_lsp.gpu import GpuRunner

    out: list[dict] = []
    assembled = pool.map(_assemble, rows, chunksize=4)
    with GpuRunner(timeout_s=60) as runner:
        for row, edit in assembled:
            if time_limit and time.time() - t0 > time_limit:
                print("time limit: later mutants not run", flush=True)
                break
            if edit is None:
                out.append(_row(row, "asm_error", error=row.get("asm_error")))
            else:
                cubin, spec, _text = kernels[row["kernel"]]
                reply = runner.verify(cubin, edit, spec, SEEDS)
                res = reply.result if reply.ok else {"status": (reply.error or {}).get("kind", "error")}
                error = res.get("error") or (reply.error if not reply.ok else None)
                out.append(_row(row, res.get("status", "error"), res.get("mismatches", [])[:2], error))
            print(json.dumps(out[-1]), flush=True)
            if log:
                write_atomic(log, "".join(json.dumps(r) + "\n" for r in out))
    return out


if __name__ == "__main__":
    sys.exit(main())
