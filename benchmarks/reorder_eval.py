"""Evaluate the reorder policy on the GPU against baselines at the same GPU-time budget (issue #6).

Held-out kernels only (the model card's ``heldout`` list): Triton kernels from the sm_90 corpus (cubin +
launch JSON) and CUDA C kernels from ``benchmarks/kernels`` (compiled here with nvcc for sm_90, launched
per their ``.launch.toml``). For every kernel and method, candidates are screened by :class:`GpuMeasure`
(bit-exact verification on two seeds, then interleaved timing) until ``--budget`` GPU seconds are spent;
the screened candidate surest faster (highest lower CI bound) is then confirmed by the full verified bench
on five fresh seeds (that confirmation's speedup and CI are what the table reports: screened figures are
biased upwards). A
method whose best candidate is not verified faster keeps the original (speedup 1.0).

Methods: ``ptxas`` (the original), ``random`` (random legal moves), ``greedy`` (hill climbing on the
static cost model), ``annealing`` (simulated annealing on measured GPU time), ``policy`` (the policy's
rollouts, screened in order), ``beam`` (the policy expanding the original and the schedules measured surest
faster so far, ``search.beam``: the policy guided by the GPU's measurements), ``policy_annealing``
(annealing's walk on GPU time with each move drawn from the policy instead of uniformly),
``policy_surrogate`` (that walk measuring, of 16 moves the policy draws, the one an online surrogate of the
measurements so far predicts fastest), ``policy_surrogate_mix`` (the same with half of the 16 drawn
uniformly, which ``policy_prior.py`` rates above the policy's alone on sgemm_tiled and triton_matmul;
``optimize``'s default since its six 300 s rows led), ``policy_surrogate_mix_pairs`` (that search with the
surrogate over pairs of instructions out of ptxas's order instead of displacements, which
``surrogate_replay.py`` rates higher offline and which confirmed less on the H200, runs 58-59) and
``surrogate`` (all 16 uniform: the surrogate without the policy, to tell the two apart). Beyond reorders
(issue #33's table and its ablation): ``random_all`` (random legal chains of reorder, control, rename and
cross-block moves, screened in order), ``control``, ``rename`` and ``cross_block`` (``optimize --moves`` of
that kind alone: annealing on GPU time), ``optimize_default`` (``optimize``'s default: the reorder search,
then control codes), ``pipeline_all`` (``optimize --moves pipeline,reorder,control``: one walk of pipeline
moves and reorders of the texts they made, then control codes) and ``all_kinds`` (``optimize --moves`` of
every kind: one walk of renames, cross-block and pipeline moves and reorders of the texts they made, then
control codes). ``policy_moves`` is ``optimize --search policy_moves``: one walk over every kind, each
move drawn from the move game's policy (``--moves-policy``) or, half of them, uniformly;
``policy_moves_uniform`` is that walk with every move drawn uniformly (``--uniform-share 1``), to tell what
the policy adds.
``policy_surrogate_mix_prior`` is the reorder search alone.

    python benchmarks/reorder_eval.py --policy sass_lsp/policy/models/reorder-v2 --budget 20 --json OUT.json

A run cut short keeps the rows it printed (one JSON line each), so an evaluation can be spread over several
GPU sessions (``--kernels``/``--methods`` per run) and its table made from their logs, where a later log's
row for a kernel and method replaces an earlier one (a cell run again):

    python benchmarks/reorder_eval.py --table RUN1.log RUN2.log … [--json OUT.json]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

from kernel_split import SET_NAMES, load_split

from sass_lsp import app
from sass_lsp.cuasm import assemble_cuasm, write_cuasm
from sass_lsp.gpu import GpuRunner, load_spec, spec_from_json
from sass_lsp.gpu.bench import BenchResult, bench_to_dict
from sass_lsp.gpu.corpus import corpus_dir
from sass_lsp.gpu.optimize import Search
from sass_lsp.policy.checkpoint import bundled_moves_policy, bundled_policy
from sass_lsp.schedule.search import (
    Candidate,
    annealing,
    greedy_candidates,
    neighbour,
    random_candidates,
    screen,
)
from sass_lsp.schedule.surrogate import surrogate_annealing

ROOT = Path(__file__).resolve().parents[1]
POLICY_METHODS = (  # these load the policy
    "policy",
    "beam",
    "policy_annealing",
    "policy_surrogate",
    "policy_surrogate_mix",
    "policy_surrogate_mix_pairs",
    "policy_surrogate_mix_prior",
    "optimize_default",
)
MIX_UNIFORM_SHARE = 0.5  # policy_surrogate_mix: the share of each 16 draws made uniformly
SURROGATE_ROWS = {  # row -> policy_search's policy_surrogate with (its share of uniform draws, its features)
    "policy_surrogate": (0.0, "displacement"),
    "policy_surrogate_mix": (MIX_UNIFORM_SHARE, "displacement"),
    "policy_surrogate_mix_pairs": (MIX_UNIFORM_SHARE, "pairs"),
    "policy_surrogate_mix_prior": (MIX_UNIFORM_SHARE, "displacement"),  # + the performance model's prior
}
# Rows that are `optimize` settings beyond reorders: each kind alone, optimize's default (the reorder search
# with the performance model's prior for half the budget, then control codes), and every kind together.
CHOICES = {
    "control": app.SearchChoice(moves=("control",)),
    "rename": app.SearchChoice(moves=("rename",)),
    "cross_block": app.SearchChoice(moves=("cross-block",)),
    "pipeline_all": app.SearchChoice(moves=("pipeline", "reorder", "control")),
    "optimize_default": app.SearchChoice(),
    "all_kinds": app.SearchChoice(moves=app.MOVE_KINDS),
}
# ``optimize --search policy_moves`` rows: the share of moves drawn uniformly (None: the search's default)
MOVES_ROWS: dict[str, float | None] = {"policy_moves": None, "policy_moves_uniform": 1.0}
METHODS = (
    "random", "random_all", "greedy", "annealing", *POLICY_METHODS, "surrogate", *CHOICES, *MOVES_ROWS,
)  # fmt: skip


def load_kernels(names: list[str], work: Path) -> list[tuple[str, str, bytes, object]]:
    """(name, origin, cubin, spec) per held-out kernel: corpus Triton kernels or benchmarks/kernels CUDA C."""
    out = []
    corpus = corpus_dir()
    for name in names:
        cu = ROOT / "benchmarks/kernels" / f"{name}.cu"
        if cu.exists():
            cubin_path = work / f"{name}.cubin"
            subprocess.run(
                ["nvcc", "-cubin", "-arch=sm_90", "-O3", "-o", str(cubin_path), str(cu)], check=True
            )
            cubin = cubin_path.read_bytes()
            out.append((name, "CUDA C", cubin, load_spec(cu.with_suffix(".launch.toml"))))
        elif corpus is not None and (corpus / f"{name}.json").exists():
            cubin = (corpus / f"{name}.cubin").read_bytes()
            out.append((name, "Triton", cubin, spec_from_json((corpus / f"{name}.json").read_text(), cubin)))
        else:
            print(f"skip {name}: no kernel source found", file=sys.stderr)
    return out


def run_rows(log: Path) -> list[dict]:
    """The rows a run printed to its log, one JSON line each, in order."""
    return [json.loads(line) for line in log.read_text().splitlines() if line.startswith('{"kernel"')]


def load_kernel(name: str) -> tuple[str, bytes, object]:
    """One held-out kernel as the evaluation loads it: (its ``.cuasm`` text, cubin, launch spec)."""
    with tempfile.TemporaryDirectory() as work:
        found = load_kernels([name], Path(work))
    if not found:
        raise SystemExit(f"{name}: not in benchmarks/kernels nor the corpus (SASS_LSP_CORPUS)")
    _name, _origin, cubin, spec = found[0]
    return write_cuasm(cubin, source_name=name), cubin, spec


def run_method(
    method: str,
    text: str,
    arch: str,
    kernel: str,
    net,  # noqa: ANN001
    seed: int,
    threads: int | None = None,
    draw_workers: int = 1,
) -> Search | app.SearchChoice:
    """The method's search, bound to its proposer (``(measure, budget, on_trial=...) -> SearchLog``), or the
    policy-guided search that ``app.optimize_kernel`` builds. ``threads``: per block (renames keep the
    occupancy it gives); ``draw_workers``: processes drawing ``random_all``'s chains."""
    rng = random.Random(seed)
    if method == "random":
        return partial(screen, random_candidates(text, arch, rng, kernel=kernel))
    if method == "random_all":
        return partial(screen, random_chains(text, arch, kernel, threads, f"{seed}:{kernel}", draw_workers))
    if method == "greedy":
        return partial(screen, greedy_candidates(text, arch, kernel=kernel))
    if method == "annealing":
        return partial(annealing, neighbour(text, arch, kernel), text, rng=rng)
    if method == "policy":
        from sass_lsp.policy.candidates import policy_candidates  # torch: only when the policy runs

        return partial(screen, policy_candidates(text, arch, net=net, kernel=kernel))
    if method == "surrogate":
        return surrogate_annealing(text, arch, kernel, seed=seed)
    if method in CHOICES:
        return dataclasses.replace(CHOICES[method], seed=seed)
    if method in MOVES_ROWS:  # the move game's policy (--moves-policy) over every kind, one walk
        return app.SearchChoice("policy_moves", seed, MOVES_ROWS[method], moves=app.MOVE_KINDS)
    if method in POLICY_METHODS:  # the searches over GPU measurements ("policy" screened above)
        name = "policy_surrogate" if method in SURROGATE_ROWS else method
        share, features = SURROGATE_ROWS.get(method, (0.0, "displacement"))
        prior = method == "policy_surrogate_mix_prior"
        return app.SearchChoice(name, seed, share, features, prior=prior, moves=("reorder",))
    raise ValueError(method)


def random_chains(
    text: str, arch: str, kernel: str, threads: int | None, seed: str, workers: int = 1
) -> Iterator[Candidate]:
    """Distinct random chains of 1-4 legal moves of every kind, as ``move_campaign.py`` draws them (chain j
    from the stream ``seed:j``, in ``workers`` processes)."""
    from move_campaign import KINDS, Drawer, Kernel, chains, distinct_schedules

    k = Kernel(kernel, "", text, arch, kernel, threads)
    with contextlib.closing(chains(Drawer(k, KINDS, 4, random.Random(seed)), seed, workers)) as draws:
        for s in distinct_schedules(k, draws):
            yield Candidate(s.text, "random_all", s.moves)


def main(argv: list[str] | None = None) -> int:
    from move_campaign import default_draw_workers  # it imports this module

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", type=Path, default=bundled_policy())
    ap.add_argument(
        "--moves-policy", type=Path, default=bundled_moves_policy(), help="policy_moves draws from it"
    )
    ap.add_argument(
        "--budget", type=float, default=20.0, help="GPU seconds per kernel and method (screening)"
    )
    ap.add_argument("--kernels", nargs="*", help="default: the model card's held-out list")
    ap.add_argument(
        "--split",
        choices=SET_NAMES,
        help="instead of --kernels: that set of the frozen split benchmarks/kernels/split_compute_v1.toml",
    )
    ap.add_argument("--methods", nargs="*", default=list(METHODS))
    ap.add_argument("--json", type=Path, help="write every row (and the raw trials) here")
    ap.add_argument("--log", type=Path, help="JSON-lines log of every GPU measurement")
    ap.add_argument(
        "--seed", type=int, default=0, help="the searches' random stream (random replays its moves under one)"
    )
    ap.add_argument(
        "--wall-limit",
        type=float,
        help="wall-clock seconds per kernel and method: screening stops in time to confirm within it, and "
        "the row says so (stopped: wall_clock, fewer GPU seconds than --budget)",
    )
    ap.add_argument(
        "--draw-workers",
        type=int,
        default=default_draw_workers(),
        help="processes drawing random_all's chains (default: the cores but two, at most 8)",
    )
    ap.add_argument("--table", type=Path, nargs="+", help="only tabulate the rows in these run logs")
    args = ap.parse_args(argv)
    if args.table:
        rows = [row for log in args.table for row in run_rows(log)]
        cells = {(row["kernel"], row["method"]): row for row in rows}  # the latest row of each cell
        return report(list(cells.values()), args.json, args.budget, wall_seconds=None)

    from sass_lsp.policy.train import MODEL_CARD

    if args.split:
        names = list(load_split().sets[args.split])
    else:
        names = args.kernels or json.loads((args.policy / MODEL_CARD).read_text())["heldout"]
    net = app.load_policy(args.policy, torch_net=True) if set(POLICY_METHODS) & set(args.methods) else None
    wants_moves = set(MOVES_ROWS) & set(args.methods)
    moves_net = app.load_policy(args.moves_policy, torch_net=True) if wants_moves else None
    rows = []
    t_start = time.time()
    with tempfile.TemporaryDirectory() as tmp, GpuRunner(timeout_s=120) as runner:
        kernels = load_kernels(names, Path(tmp))
        if not kernels:
            print(f"error: none of the kernels {names} was found (corpus: SASS_LSP_CORPUS)", file=sys.stderr)
            return 2
        for name, origin, cubin, spec in kernels:
            text = write_cuasm(cubin, source_name=name)
            assert assemble_cuasm(text, source_name=name) == cubin, f"{name}: round trip is not exact"
            original = app.original_kernel(text, name, spec, cubin=cubin)
            # one measurement log (and cache) for all the methods of a kernel
            measure = app.kernel_measure(original, runner, args.log, name)
            threads = math.prod(spec.block)
            for method in args.methods:
                t0 = time.time()
                deadline = time.monotonic() + args.wall_limit if args.wall_limit else None
                search = run_method(
                    method, text, original.arch, spec.kernel, net, args.seed, threads, args.draw_workers
                )
                # screening, then the best confirmed
                result = app.optimize_kernel(
                    original,
                    runner,
                    args.budget,
                    search=search,
                    net=moves_net if method in MOVES_ROWS else net,
                    measure=measure,
                    deadline=deadline,
                ).result
                log, best, confirmation = result.log, result.best, result.confirmation
                conf = bench_to_dict(confirmation) if confirmation else None
                verified = bool(confirmation and confirmation.verified)
                timing = confirmation.timing if confirmation else None
                row = {
                    "kernel": name,
                    "origin": origin,
                    "method": method,
                    "seed": args.seed,  # the search's proposals: a repeat with the same seed replays them
                    "candidates": len(log.trials),
                    "rejected": sum(not t.result.accepted for t in log.trials),
                    "screen_best": best.result.speedup if best else None,  # the one confirmed
                    "screen_max": max(
                        (t.result.speedup for t in log.trials if t.result.accepted), default=None
                    ),
                    "predicted_best": best.candidate.predicted if best else None,
                    "verified": verified,
                    "speedup": timing.ci.ratio if verified and timing else 1.0,
                    "ci": [timing.ci.low, timing.ci.high] if timing else None,
                    "confirm_verdict": confirmation.verdict if confirmation else None,
                    # a screened match that differs on the fresh confirmation seeds = a wrong result accepted
                    "wrong_accepted": bool(
                        confirmation and confirmation.verification.get("status") != "match"
                    ),
                    "gpu_seconds": round(log.spent + (_gpu_s(conf) if conf else 0.0), 2),
                    "confirm_capped": _capped(confirmation) if confirmation else None,
                    "wall_seconds": round(time.time() - t0, 1),
                    "stopped": result.stopped,  # budget, exhausted, wall_clock (--wall-limit) or interrupted
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    return report(rows, args.json, args.budget, wall_seconds=round(time.time() - t_start, 1))


def report(rows: list[dict], json_path: Path | None, budget: float, *, wall_seconds: float | None) -> int:
    summary = summarize(rows)
    if wall_seconds is not None:
        summary["wall_seconds"] = wall_seconds
    print(format_table(rows, summary))
    if json_path:
        json_path.write_text(json.dumps({"rows": rows, "summary": summary, "budget_s": budget}, indent=2))
    return 0


def _capped(result: BenchResult) -> str | None:
    """'SM 1980 -> 1425 MHz' when the GPU was clock-capped (power or thermal) by the confirmation's end: its
    speedup then holds at the capped clock, which a schedule drawing less power can win on."""
    before, after = result.clocks_before, result.clocks_after
    reasons = int(str(after.get("clocks_event_reasons.active", "0")), 16)
    if not reasons & ~0x1:  # bit 0 is GPU idle
        return None
    return f"SM {before.get('clocks.sm', '?')} -> {after.get('clocks.sm', '?')} MHz"


def _gpu_s(conf: dict) -> float:
    timing = conf.get("timing") or {}
    ms = sum(timing.get("orig_ms", ())) + sum(timing.get("edit_ms", ()))
    return ms * (timing.get("batch") or 1) / 1e3


def summarize(rows: list[dict]) -> dict:
    out = {}
    for method in sorted({r["method"] for r in rows}):
        sp = [r["speedup"] for r in rows if r["method"] == method]
        out[method] = {
            "geomean": math.exp(sum(math.log(s) for s in sp) / len(sp)) if sp else None,
            "best": max(sp, default=None),
            "verified": sum(r["verified"] for r in rows if r["method"] == method),
            "kernels": len(sp),
            "wrong_accepted": sum(r["wrong_accepted"] for r in rows if r["method"] == method),
            "candidates": sum(r["candidates"] for r in rows if r["method"] == method),
            "rejected": sum(r["rejected"] for r in rows if r["method"] == method),
            "gpu_seconds": round(sum(r["gpu_seconds"] for r in rows if r["method"] == method), 1),
        }
    return out


def format_table(rows: list[dict], summary: dict) -> str:
    lines = [
        "| kernel | origin | method | verified speedup [95% CI] | GPU s | candidates (rejected) |",
        "|---" * 6 + "|",
    ]
    for r in rows:
        ci = f" [{r['ci'][0]:.4f}, {r['ci'][1]:.4f}]" if r["ci"] else ""
        mark = "" if r["verified"] else " (not verified: kept original)"
        if r["verified"] and r.get("confirm_capped"):
            mark = f" (clock-capped during the confirmation: {r['confirm_capped']})"
        lines.append(
            f"| {r['kernel']} | {r['origin']} | {r['method']} | {r['speedup']:.4f}{ci}{mark} |"
            f" {r['gpu_seconds']} | {r['candidates']} ({r['rejected']}) |"
        )
    lines.append("")
    lines.append(
        "| method | geomean speedup | best | verified faster | candidates (rejected) | GPU s"
        " | wrong results accepted |"
    )
    lines.append("|---" * 7 + "|")
    for m, s in summary.items():
        if isinstance(s, dict):
            lines.append(
                f"| {m} | {s['geomean']:.4f} | {s['best']:.4f} | {s['verified']}/{s['kernels']} |"
                f" {s['candidates']} ({s['rejected']}) | {s['gpu_seconds']} | {s['wrong_accepted']} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
