"""The reorder policy's sub-commands: ``suggest``, ``optimize`` and ``train`` (thin: files and flags in, the
policy, search and GPU packages do the work). torch is imported only when one of them runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from sass_lsp import app
from sass_lsp.cli import CliError
from sass_lsp.gpu.corpus import corpus_dir
from sass_lsp.policy.checkpoint import (
    POLICY_ENV,
    POLICY_HINT,
    POLICY_MODULES,
    SERVING_MODULES,
    missing_policy_modules,
)


def require_policy_extra(modules: tuple[str, ...] = POLICY_MODULES) -> None:
    """A :class:`CliError` naming the ``[policy]`` extra where one of its ``modules`` is missing."""
    missing = missing_policy_modules(modules)
    if missing:
        raise CliError(f"{missing}\n  hint: {POLICY_HINT}")


def _needs_policy(
    cmd: Callable[[argparse.Namespace], int], modules: tuple[str, ...] = POLICY_MODULES
) -> Callable[[argparse.Namespace], int]:
    """``cmd``, run only where the ``[policy]`` extra's ``modules`` are installed (else its hint, exit 2, no
    traceback)."""

    @functools.wraps(cmd)
    def run(args: argparse.Namespace) -> int:
        require_policy_extra(modules)
        return cmd(args)

    return run


def cli_error(exc: app.AppError, code: int = 2) -> CliError:
    """The CLI's words for an application-layer failure."""
    return CliError(str(exc), exc.hint, code=code)


def load_net(path: Path | None, *, torch_net: bool = False):  # noqa: ANN201 (torch is imported lazily)
    """The policy at ``path`` (None: the default checkpoint), for suggesting or (``torch_net``) for the GPU
    searches and training; a :class:`CliError` naming what to do."""
    require_policy_extra(POLICY_MODULES if torch_net else SERVING_MODULES)
    try:
        return app.load_policy(path, torch_net=torch_net)
    except app.PolicyUnavailable as exc:
        raise CliError(
            f"{exc.path}: cannot load the reorder policy: {exc.detail}",
            exc.hint or f"pass --policy DIR or set {POLICY_ENV}; `sass-lsp train` rebuilds the bundled one",
        ) from exc


def _move_kinds(raw: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in raw.split(",") if k.strip())
    if not kinds or set(kinds) - set(app.MOVE_KINDS):
        raise argparse.ArgumentTypeError(f"{raw!r}: some of {','.join(app.MOVE_KINDS)}, comma-separated")
    return kinds


def load_perf():  # noqa: ANN202 (PerfModel; torch is imported lazily)
    """The packaged performance model; a :class:`CliError` naming what to do."""
    try:
        return app.load_perf_model()
    except app.PolicyUnavailable as exc:
        raise CliError(
            f"{exc.path}: cannot load the performance model: {exc.detail}",
            exc.hint or "reinstall sass-lsp, or pass --rank cost to rank by the static cost model",
        ) from exc


def _text_and_arch(path: Path, kernel: str | None = None) -> tuple[str, str]:
    from sass_lsp.cli import _read_text

    text = _read_text(path)
    try:
        return text, app.kernel_arch(text, str(path), kernel)
    except app.AppError as exc:
        raise cli_error(exc) from exc


def cmd_suggest(args: argparse.Namespace) -> int:
    """Reorder suggestions from the policy, each a text edit with its predicted gain."""
    from sass_lsp.policy.suggest import to_json

    text, arch = _text_and_arch(args.cuasm, args.kernel)
    found = app.suggest(
        text,
        arch,
        net=load_net(args.policy),
        top=args.top,
        kernel=args.kernel,
        max_moves=args.max_moves,
        time_budget_s=args.time_budget,
        rank=args.rank,
        perf=load_perf() if args.rank == "model" else None,
    )
    if args.format == "json":
        print(to_json(found))
        return 0
    model = "the performance model" if args.rank == "model" else "the static cost model"
    if not found:
        print(f"{args.cuasm}: no reordering predicted to be faster by {model}")
        print("  `sass-lsp optimize` searches for one on the GPU, measuring every candidate")
    else:
        print(f"Predicted by {model}, not measured, and hazard-free by the checker. Time one first:")
        print(
            "a reordering the checker accepts can still give wrong results on the GPU (docs/evaluation.md);"
            " `sass-lsp bench` verifies and times it."
        )
    for i, s in enumerate(found, 1):
        print(f"{i}. {s.title}  [{s.kernel}: {s.cost_before:.0f} -> {s.cost_after:.0f} cost-model cycles]")
        for move in s.moves:
            print(f"     {move}")
        for first, last, new in s.edits:
            print(f"     edit lines {first}-{last}: {len(new)} lines")
    return 0


@dataclass(frozen=True)
class OptimizeJob:
    """One kernel for ``optimize``: picklable, so a Ray task can run it on another GPU."""

    cuasm: Path
    launch: Path
    budget: float
    out_stem: Path
    policy: Path | None
    seed: int
    search: str = "policy_surrogate"  # policy.candidates.SEARCHES, DEFAULT_SEARCH
    uniform_share: float | None = None  # policy_surrogate's share of uniform draws; None: its default
    min_gain: float | None = None  # least confirmed lower CI bound to write; None: optimize's default
    prior: bool = True  # policy_surrogate: the performance model ranks the draws until the surrogate learns
    moves: tuple[str, ...] = ("reorder", "control")  # app.DEFAULT_MOVES, or some of app.MOVE_KINDS


def _optimize_jobs(args: argparse.Namespace) -> list[OptimizeJob]:
    launches = args.launch or [p.with_suffix(".launch.toml") for p in args.cuasm]
    if len(launches) != len(args.cuasm):
        raise CliError(
            f"{len(args.cuasm)} kernels but {len(launches)} --launch specs\n"
            "  hint: give one --launch per kernel, in order, or none (K.launch.toml beside each K.cuasm)"
        )
    if args.out and len(args.cuasm) > 1:
        raise CliError(
            "--out names one output stem\n  hint: leave it out with several kernels (K.optimized.*)"
        )
    from sass_lsp.gpu.optimize import output_path
    from sass_lsp.policy.candidates import resolve_uniform_share

    if not args.min_gain >= 1.0:
        raise CliError(
            f"--min-gain {args.min_gain:g}: below 1 would write slower schedules\n"
            "  hint: a speedup ratio of at least 1, e.g. 1.005 for half a percent"
        )
    if not args.budget > 0:
        raise CliError(f"--budget {args.budget:g}: must be positive\n  hint: seconds per kernel, e.g. 300")
    try:  # here, before any kernel runs, not in each job
        share = resolve_uniform_share(args.search, args.uniform_share)
    except ValueError as exc:
        raise CliError(
            f"--uniform-share: {exc}\n  hint: a share from 0 to 1 with --search policy_surrogate (the "
            "default) or policy_moves (0.5 unless given); leave it out with the other searches"
        ) from exc

    jobs = [
        OptimizeJob(
            cuasm,
            launch,
            args.budget,
            args.out or cuasm.with_name(cuasm.stem + ".optimized"),
            args.policy,
            args.seed,
            args.search,
            share,
            args.min_gain,
            not args.no_model_prior,
            args.moves or (app.MOVE_KINDS if args.search == "policy_moves" else app.DEFAULT_MOVES),
        )
        for cuasm, launch in zip(args.cuasm, launches, strict=True)
    ]
    for job in jobs:
        if output_path(job.out_stem, ".cuasm").resolve() == job.cuasm.resolve():
            raise CliError(
                f"--out {job.out_stem} would write the best schedule over {job.cuasm}\n"
                f"  hint: name another stem, e.g. --out {job.cuasm.with_suffix('')}.optimized"
            )
    return jobs


def _search_policy(search: str) -> Path | None:
    """The checkpoint a search draws from when --policy names none (None: the default reorder policy)."""
    from sass_lsp.policy.checkpoint import bundled_moves_policy

    return bundled_moves_policy() if search == "policy_moves" else None


def optimize_one(job: OptimizeJob, on_trial=None) -> dict:  # noqa: ANN001 (search.Trial -> None)
    """Policy candidates for one kernel, screened and confirmed on the GPU; the outputs written. A summary.

    ``job.budget`` bounds the GPU seconds of screening and the wall time from here. Without a GPU it stops
    (CliError, exit 3) before loading the policy. The report is rewritten as trials come in, and written
    with what was measured when the run is interrupted (``summary["interrupted"]``)."""
    import time

    from sass_lsp.cli import EXIT_MISSING
    from sass_lsp.gpu import GpuRunner
    from sass_lsp.gpu.optimize import summary_message

    deadline = time.monotonic() + job.budget
    text, arch = _text_and_arch(job.cuasm)
    choice = app.SearchChoice(job.search, job.seed, job.uniform_share, prior=job.prior, moves=job.moves)
    with GpuRunner(timeout_s=120) as runner:
        try:
            original = app.original_kernel(text, str(job.cuasm), job.launch, arch=arch, runner=runner)
        except app.AppError as exc:
            if exc.verdict == "no_device":
                raise CliError(
                    f"{job.cuasm}: {exc}: nothing searched, nothing written", code=EXIT_MISSING
                ) from exc
            raise cli_error(exc) from exc
        optimized = app.optimize_kernel(
            original,
            runner,
            job.budget,
            search=choice,
            net=load_net(job.policy or _search_policy(job.search), torch_net=True),
            min_gain=job.min_gain,
            deadline=deadline,
            on_trial=on_trial,
            out_stem=job.out_stem,
        )
    result, report = optimized.result, optimized.report
    return {
        "kernel": original.label,
        "cuasm": str(job.cuasm),
        "verified": result.verified,
        "interrupted": result.stopped == "interrupted",
        "stopped": result.stopped,
        "message": summary_message(result),
        "gpu_seconds": report["gpu_seconds"],
        "wall_seconds": report["wall_seconds"],
        "n_candidates": report["n_candidates"],
        "paths": [str(p) for p in optimized.paths],
        "gpu": original.gpu,
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "pid": os.getpid(),
    }


def _require_local_gpu() -> None:
    """Before starting Ray here: stop at once when this machine has no GPU to measure on."""
    from sass_lsp.cli import EXIT_MISSING
    from sass_lsp.gpu import GpuRunner

    with GpuRunner(timeout_s=120) as runner:
        hello = runner.hello()
    if not hello.ok:
        raise CliError(f"optimize: {hello.reason}: nothing searched, nothing written", code=EXIT_MISSING)


def cmd_optimize(args: argparse.Namespace) -> int:
    """Policy-guided search verified and timed on the GPU; writes the best verified schedule, report, plot.

    One kernel runs here with a progress bar per GPU second; several fan out over the GPUs with Ray.
    Exit 130 when interrupted (the report and measurement log then hold the trials measured).
    """
    jobs = _optimize_jobs(args)
    try:
        summaries = _run_optimize(args, jobs)
    except KeyboardInterrupt:
        print("optimize: interrupted", file=sys.stderr)
        return 130
    failed = 0
    for job, summary in zip(jobs, summaries, strict=True):
        if "error" in summary:
            failed += 1
            print(f"{job.cuasm}: error: {summary['error']}", file=sys.stderr)
            continue
        if len(jobs) > 1:
            print(f"{job.cuasm} (GPU {summary['cuda_visible_devices'] or '-'}): {summary['message']}")
        else:
            print(summary["message"])
        for p in summary["paths"]:
            print(f"wrote {p}")
    if any(s.get("interrupted") for s in summaries):
        return 130
    return 1 if failed else 0


def _run_optimize(args: argparse.Namespace, jobs: list[OptimizeJob]) -> list[dict]:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn())
    if len(jobs) == 1 and not args.ray:
        with Progress(
            *columns, TextColumn("{task.completed:.0f}/{task.total:.0f} GPU s"), TimeElapsedColumn()
        ) as bar:
            task = bar.add_task("optimize", total=args.budget)
            best, n_done = 1.0, 0

            def on_trial(trial) -> None:  # noqa: ANN001 (search.Trial)
                nonlocal best, n_done
                n_done += 1
                if trial.result.accepted:
                    best = max(best, trial.result.speedup or 1.0)
                done = f"{n_done} candidates, best screened {best:.3f}x"
                bar.update(task, completed=min(trial.spent, args.budget), description=done)

            return [optimize_one(jobs[0], on_trial)]
    from sass_lsp.gpu.fanout import FanOutError, fan_out

    if not (args.ray_address or os.environ.get("RAY_ADDRESS")):
        _require_local_gpu()  # a Ray cluster started here would find none either
    with Progress(*columns, TextColumn("{task.completed}/{task.total} kernels"), TimeElapsedColumn()) as bar:
        task = bar.add_task("optimize (Ray, one kernel per GPU)", total=len(jobs))
        try:
            return fan_out(
                optimize_one, jobs, address=args.ray_address, on_done=lambda i, r: bar.advance(task)
            )
        except FanOutError as exc:
            raise CliError(str(exc)) from exc


# The Triton kernels of the shared sm_90 corpus the policy trains on; the others are held out for the GPU
# evaluations, with the CUDA C kernels of benchmarks/kernels (never trained on): the reorder evaluation's
# six, and the compute-bound held-out set of benchmarks/kernels/split_compute_v1.toml.
TRITON_TRAIN = ("triton_add", "triton_layernorm", "mm_f16_64x64x32", "transpose_f32")
TRITON_HELDOUT = ("gelu_bias", "rmsnorm_f32_4096", "triton_matmul", "triton_softmax")
COMPUTE_HELDOUT = ("fp8_blockscale_gemm", "bf16_gemm", "flash_attn_fwd", "conv2d")
CUDA_HELDOUT = ("sgemm_tiled", "stencil2d")
MIN_INSTRUCTIONS = 24  # smaller kernels have next to nothing to reorder


TRAIN_SOURCES = Path(str(resources.files("sass_lsp.policy") / "train_kernels.cu"))  # package data
# ptxas schedules the same source differently under these flags: more distinct training schedules.
TRAIN_VARIANTS = ((), ("-use_fast_math",), ("-maxrregcount=64",))


def compile_training_kernels(out_dir: Path) -> list[Path]:
    """sass_lsp/policy/train_kernels.cu compiled for sm_90 once per variant (nvcc from CUDA 13)."""
    import shutil
    import subprocess

    if shutil.which("nvcc") is None:
        raise CliError(
            "nvcc not found\n  hint: the training set compiles sass_lsp/policy/train_kernels.cu with nvcc"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, flags in enumerate(TRAIN_VARIANTS):
        path = out_dir / f"train_kernels_v{i}.cubin"
        if not path.exists() or path.stat().st_mtime < TRAIN_SOURCES.stat().st_mtime:
            cmd = ["nvcc", "-cubin", "-arch=sm_90", "-O3", *flags, "-o", str(path), str(TRAIN_SOURCES)]
            subprocess.run(cmd, check=True, capture_output=True)
        paths.append(path)
    return paths


def training_set(corpus: Path, generated: Path, extra: list[Path]) -> list[tuple[str, str, str, str]]:
    """(name, arch, .cuasm text, kernel) for every kernel of the training set, disassembled by our writer: the
    Triton train split, the CUDA C corpus (tests/kernels, built by tools/build_corpus.py) and ``extra``."""
    from sass_lsp.analysis.program import kernels_of
    from sass_lsp.cuasm import parse_cuasm, write_cuasm
    from sass_lsp.cuasm.assembler import module_arch
    from sass_lsp.isa.semantics import load_semantics

    cubins = [corpus / f"{n}.cubin" for n in TRITON_TRAIN] + sorted(generated.glob("*.cubin")) + extra
    out = []
    for path in cubins:
        if not path.exists():
            raise CliError(f"{path}: training kernel missing\n  hint: run tools/build_corpus.py --arch sm_90")
        text = write_cuasm(path.read_bytes(), source_name=path.name)
        module = parse_cuasm(text)[0]
        arch = module_arch(module)
        for k in kernels_of(module, load_semantics(arch)):
            if len(k.nodes) >= MIN_INSTRUCTIONS:
                out.append((f"{path.stem}:{k.name}", arch, text, k.name))
    return out


def cmd_train(args: argparse.Namespace) -> int:
    """Reproduce the bundled checkpoint: PPO on the training set, model card beside the weights.

    ``--time-limit`` counts from here (torch's import included): imitation gets at most half of what is
    left when it starts, PPO stops so that saving and the evaluation end by the deadline."""
    import time

    t0 = time.monotonic()
    deadline = None if args.time_limit is None else t0 + args.time_limit
    from rich.progress import Progress

    from sass_lsp.policy.ppo import PPOConfig
    from sass_lsp.policy.train import (
        MOVE_REWARD,
        PERF_REWARD,
        REWARD,
        game_from_text,
        move_game_from_text,
        perf_game_from_text,
        train,
    )

    if args.game == "moves" and args.reward == "model":
        raise CliError("--reward model rates reorders only", "train the move game with --reward cost")

    extra = compile_training_kernels(args.generated.parent.parent / "policy")
    kernels = training_set(args.corpus or corpus_dir(), args.generated, extra)
    held_out = TRITON_HELDOUT + CUDA_HELDOUT + COMPUTE_HELDOUT
    print(f"training set: {len(kernels)} kernels; held out: {', '.join(held_out)}")
    with Progress() as bar:
        task = bar.add_task("train", total=args.steps)

        def progress(m: dict[str, float]) -> None:
            desc = f"return {m.get('episode_return', float('nan')):.4f} sps {m.get('sps', 0):.0f}"
            bar.update(task, completed=m.get("global_step", 0), description=desc)
            if not sys.stdout.isatty():  # a log file gets one line per update instead of a bar
                print(json.dumps({k: round(v, 5) for k, v in m.items()}), flush=True)

        net, warm = None, None
        if args.imitate_epochs:
            halfway = None if deadline is None else time.monotonic() + (deadline - time.monotonic()) / 2
            net, warm = _imitate(kernels, args, halfway)
        if args.game == "moves":
            game = {"factory": move_game_from_text, "reward": MOVE_REWARD, "net_config": _moves_net_config()}
        elif args.reward == "model":
            perf_game = functools.partial(perf_game_from_text, perf=load_perf())
            game = {"factory": perf_game, "reward": PERF_REWARD}
        else:
            game = {"factory": game_from_text, "reward": REWARD}
        ppo = PPOConfig(
            n_steps=args.n_steps,
            n_minibatches=args.minibatches,
            ent_coef=args.ent_coef,
            target_kl=args.target_kl,
        )

        card = train(
            kernels,
            total_steps=args.steps,
            n_envs=args.envs,
            seed=args.seed,
            out_dir=args.out,
            device=args.device,
            progress=progress,
            heldout=list(TRITON_HELDOUT + CUDA_HELDOUT + COMPUTE_HELDOUT),
            ppo_config=ppo,
            init_net=net,
            warm_start=warm,
            deadline=deadline,
            **game,
        )
    took = time.monotonic() - t0
    print(f"wrote {card['checkpoint']} ({card['checkpoint_mb']} MB) and {card['model_card']} in {took:.0f} s")
    return 0


def cmd_finetune(args: argparse.Namespace) -> int:
    """Fine-tune a checkpoint on measured GPU time: the Triton training kernels of the bundled corpus."""
    import time

    from sass_lsp.cuasm import parse_cuasm, write_cuasm
    from sass_lsp.cuasm.assembler import module_arch
    from sass_lsp.files import write_atomic
    from sass_lsp.gpu import GpuRunner, spec_from_json
    from sass_lsp.gpu.measure import GpuMeasure
    from sass_lsp.policy.finetune import FinetuneConfig, FinetuneKernel, finetune
    from sass_lsp.policy.model import load_config, save_policy
    from sass_lsp.policy.train import MODEL_CARD

    names = args.kernels or list(TRITON_TRAIN)
    held = sorted(set(names) & set(TRITON_HELDOUT + CUDA_HELDOUT + COMPUTE_HELDOUT))
    if held:
        raise CliError(f"{', '.join(held)}: held out for the evaluation\n  hint: fine-tune on {TRITON_TRAIN}")
    base = app.policy_path(args.policy)
    net = load_net(base, torch_net=True)
    args.out.mkdir(parents=True, exist_ok=True)
    log_path = args.out / "finetune_measurements.jsonl"
    cfg = FinetuneConfig(
        budget_s=args.budget,
        max_episodes=args.max_episodes,
        episodes_per_update=args.episodes_per_update,
        lr=args.lr,
        seed=args.seed,
        device=args.device,
    )
    t0 = time.time()
    with GpuRunner(timeout_s=120) as runner:
        hello = runner.hello()
        if not hello.ok:
            raise CliError(hello.reason)
        kernels = []
        for name in names:
            corpus = args.corpus or corpus_dir()
            cubin_path, launch = corpus / f"{name}.cubin", corpus / f"{name}.json"
            if not (cubin_path.exists() and launch.exists()):
                raise CliError(f"{cubin_path}: kernel or its launch JSON missing\n  hint: --corpus DIR")
            cubin = cubin_path.read_bytes()
            spec = spec_from_json(launch.read_text(), cubin)
            text = write_cuasm(cubin, source_name=cubin_path.name)
            measure = GpuMeasure(runner, cubin, spec, name, log_path=log_path, original_text=text)
            arch = module_arch(parse_cuasm(text)[0])
            kernels.append(FinetuneKernel(name, text, arch, spec.kernel, measure))
        summary = finetune(net, kernels, cfg, log=lambda row: print(json.dumps(row), flush=True))
    summary["wall_s"] = round(time.time() - t0, 1)
    summary["gpu"] = hello.result.get("device", {}).get("gpu")
    meta = {**load_config(base).get("meta", {}), "gpu_finetune_of": str(base)}
    save_policy(net.cpu(), args.out, meta=meta)
    card_path = Path(base) / MODEL_CARD
    card = json.loads(card_path.read_text()) if card_path.exists() else {}
    card["gpu_finetune"] = summary
    write_atomic(args.out / MODEL_CARD, json.dumps(card, indent=2) + "\n")
    print(
        f"wrote {args.out}: {summary['episodes']} episodes, {summary['measured']} measured, "
        f"{summary['gpu_seconds']} GPU s, best screened speedup {summary['best_speedup']}"
    )
    return 0


def _imitate(kernels: list, args: argparse.Namespace, deadline: float | None = None):  # noqa: ANN202
    """Warm start: imitate the one-step-lookahead teacher (see sass_lsp.policy.imitate); (PolicyNet, summary).
    ``deadline`` (``time.monotonic``): collection and fitting stop by then (no state collected: no net)."""
    import time

    import torch

    from sass_lsp.policy.imitate import MOVE_TEACHER, Teacher, collect, fit, summary
    from sass_lsp.policy.model import PolicyNet
    from sass_lsp.policy.train import move_game_from_text

    t0 = time.time()
    moves = args.game == "moves"
    teacher = dataclasses.replace(MOVE_TEACHER, factory=move_game_from_text) if moves else Teacher()
    samples = collect(kernels, workers=args.envs, seed=args.seed, deadline=deadline, teacher=teacher)
    t_collect = time.time() - t0
    if not samples:  # the time limit left no time for the teacher: PPO starts from scratch
        return None, {"states": 0, "collect_s": round(t_collect, 1), "epochs": []}
    torch.manual_seed(args.seed)
    net = PolicyNet(_moves_net_config() if moves else None)
    history = fit(
        net,
        samples,
        epochs=args.imitate_epochs,
        device=args.device,
        seed=args.seed,
        log=lambda row: print(json.dumps({"imitate": row}), flush=True),
        deadline=deadline,
    )
    warm = {
        **summary(samples),
        "collect_s": round(t_collect, 1),
        "epochs": history,
        "teacher": "one-step lookahead on the static cost model, softmax(gain / 0.002), STOP = 0",
        "teacher_settings": {k: v for k, v in dataclasses.asdict(teacher).items() if k != "factory"},
    }
    return net, warm


def _moves_net_config():  # noqa: ANN202 (PolicyConfig; torch is imported lazily)
    """The reorder policy's network with the move game's row kinds embedded."""
    from sass_lsp.policy.model import PolicyConfig
    from sass_lsp.schedule.observation import CAND_KINDS

    return PolicyConfig(cand_kinds=len(CAND_KINDS))


def add_parsers(sub: argparse._SubParsersAction) -> None:
    from sass_lsp.cli import HelpFormatter
    from sass_lsp.gpu.optimize import DEFAULT_MIN_GAIN

    root = Path(__file__).resolve().parents[1]

    def command(name: str, summary: str, description: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=summary, description=description, formatter_class=HelpFormatter)

    p = command(
        "suggest",
        "reorder suggestions from the trained policy (text edits + predicted gain)",
        "Reorderings of a kernel's instructions that the reorder policy finds and the learned performance "
        "model predicts to be faster, best first, each with its predicted speedup and 90% interval, "
        "hazard-free and given as text edits. Predicted, not measured: time one with `sass-lsp bench` (or "
        "let `sass-lsp optimize` search on the GPU) before keeping it. None when the model predicts no "
        "gain: then `sass-lsp optimize` is the way to look for one.",
    )
    p.add_argument("cuasm", type=Path, help="the .cuasm file")
    p.add_argument(
        "--top",
        type=int,
        default=3,
        help="how many suggestions to print; the ranking does not depend on it (--top 1 is the first of "
        "--top 3)",
    )
    p.add_argument("--kernel", help="kernel name (default: the largest in the file)")
    p.add_argument(
        "--max-moves", type=int, default=8, help="most instruction moves one suggestion may combine"
    )
    p.add_argument(
        "--time-budget",
        type=float,
        help="seconds for the search, as an editor asks (default: the whole search, same answer each run)",
    )
    p.add_argument(
        "--rank",
        choices=app.RANKINGS,
        default="model",
        help="what ranks the candidates: the learned performance model (predicted speedup with an interval) "
        "or the static cost model (predicted cycles of the hot region; faster, no interval)",
    )
    p.add_argument("--format", choices=["text", "json"], default="text", help="output format")
    p.add_argument(
        "--policy", type=Path, help=f"checkpoint directory (default: ${POLICY_ENV}, else the bundled one)"
    )
    p.set_defaults(func=_needs_policy(cmd_suggest, SERVING_MODULES))

    p = command(
        "optimize",
        "policy-guided search, verified and timed on the GPU",
        "Search for a faster schedule of each kernel: candidates from the reorder policy are checked bit for "
        "bit against the original on the GPU, then timed; the one surest faster is confirmed on fresh inputs "
        "and written to K.optimized.cuasm and .cubin only if the lower bound of its confirmed speedup is at "
        "least --min-gain. "
        "K.optimized.report.json (every trial, rewritten as the run goes), K.optimized.measurements.jsonl "
        "and K.optimized.svg are always written, also when the run is interrupted. Needs an NVIDIA GPU and "
        "driver and `pip install 'sass-lsp[gpu]'`; without them it stops at once.",
    )
    p.epilog = OPTIMIZE_EPILOG
    p.add_argument("cuasm", type=Path, nargs="+", help="one or more K.cuasm (several fan out with Ray)")
    p.add_argument(
        "--launch",
        type=Path,
        action="append",
        help="K.launch.toml, once per kernel in order (default: the one beside each K.cuasm)",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=300.0,
        help="seconds per kernel, both GPU seconds of screening and wall time from the kernel's start: "
        "screening stops when either would run out, leaving time for the confirmation",
    )
    p.add_argument(
        "--min-gain",
        type=float,
        default=DEFAULT_MIN_GAIN,
        metavar="RATIO",
        help="write the schedule only if the lower bound of its confirmed speedup's 95%% interval is at "
        "least this (1.005: at least 0.5%% faster); 1.0 keeps any significant gain",
    )
    p.add_argument("--out", type=Path, help="output stem, one kernel only (default: K.optimized)")
    p.add_argument("--ray", action="store_true", help="run through Ray even for one kernel")
    p.add_argument("--ray-address", help="join this Ray cluster (default: $RAY_ADDRESS, else start one here)")
    p.add_argument(
        "--policy", type=Path, help=f"checkpoint directory (default: ${POLICY_ENV}, else the bundled one)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the search's random choices")
    p.add_argument(
        "--search",
        choices=("beam", "policy_annealing", "policy_surrogate", "policy_moves"),
        default="policy_surrogate",
        help="beam: the policy expands the schedules measured surest faster; policy_annealing: annealing on "
        "GPU time, each move drawn from the policy; policy_surrogate: that walk measuring the move, of 16 "
        "drawn (by the policy, and a share uniformly: --uniform-share), that a model fitted to the "
        "measurements so far predicts fastest; policy_moves: annealing on GPU time over every kind --moves "
        "names in one walk (renames, cross-block and pipeline moves, then reorders, then control codes), "
        "each move drawn from the move game's policy (bundled moves-v1) or, a share of them, uniformly. "
        "Start with the default; policy_moves, which adds renames, cross-block and pipeline moves, is "
        "worth a run where the default finds little",
    )
    p.add_argument(
        "--uniform-share",
        type=float,
        metavar="SHARE",
        help="policy_surrogate and policy_moves: the share (0 to 1) of moves drawn uniformly instead of from "
        "the policy; more explores moves the policy ranks low (default: 0.5)",
    )
    p.add_argument(
        "--moves",
        type=_move_kinds,
        default=None,
        metavar="KINDS",
        help="what the search may change, comma-separated: reorder (instruction order, by --search), control "
        "(yield, reuse, stall and scoreboard fields, by annealing on GPU time), rename (a live range "
        "given a register the kernel does not use, to free instructions pinned by register reuse or to "
        "split same-bank sources; never one that lowers occupancy), cross-block (an arithmetic "
        "instruction hoisted into its block's only predecessor or sunk into its only successor, both "
        "blocks' control codes repaired), pipeline (a global load of a single-block loop issued one "
        "iteration ahead, its registers renamed); with reorder and control, the reorder "
        "search takes half the budget and the control-code walk the rest, from the best reordering found; "
        "with rename, cross-block or pipeline, one annealing walk makes those moves and (with reorder) "
        "uniform reorder moves of the text they made instead of --search, then the control-code walk as "
        "before (default: reorder,control; every kind with --search policy_moves)",
    )
    p.add_argument(
        "--no-model-prior",
        action="store_true",
        help="policy_surrogate only: until its surrogate has learned from 100 measurements, measure the "
        "first move drawn instead of the one the learned performance model predicts fastest",
    )
    p.set_defaults(func=_needs_policy(cmd_optimize))

    root = Path(__file__).resolve().parents[1]
    p = command(
        "train",
        "train the reorder policy with PPO (reproduces the bundled reorder-v2)",
        "Train the reorder policy on the static cost model: a warm start that imitates a one-step lookahead "
        "teacher, then PPO; write the checkpoint and a model card with each training kernel's predicted "
        "speedup under the policy (the held-out kernels are named there, never trained on). "
        "Needs nvcc for the CUDA C training kernels.",
    )
    p.add_argument("--steps", type=int, default=200_000, help="PPO environment steps in total")
    p.add_argument(
        "--reward",
        choices=("cost", "model"),
        default="cost",
        help="what PPO's reward measures: the static cost model's cycles of the hot region (the bundled "
        "policy's), or the time the learned performance model predicts; the imitation warm start follows "
        "the cost model either way",
    )
    p.add_argument(
        "--game",
        choices=("reorder", "moves"),
        default="reorder",
        help="what the policy plays: the reorder game (the bundled reorder-v2), or the move game, every kind "
        "optimize --moves makes (reorders, control codes, renames, cross-block and pipeline moves: moves-v1)",
    )
    p.add_argument(
        "--envs",
        type=int,
        default=max(1, min(16, (os.cpu_count() or 2) - 1)),
        help="parallel environments (default: CPU cores - 1, from 1 to 16)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the initialisation and the environments")
    p.add_argument("--device", default="cpu", help="torch device for the network updates (cpu, cuda)")
    p.add_argument(
        "--out",
        type=Path,
        default=Path("reorder-v2"),
        help="checkpoint directory to write; --policy or $SASS_LSP_POLICY use it (default: reorder-v2 here)",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        help="wall-clock seconds for the whole run, warm start and evaluation included: imitation and PPO "
        "stop early so that the evaluation and saving fit (default: no limit)",
    )
    p.add_argument("--n-steps", type=int, default=64, help="rollout length per environment and update")
    p.add_argument("--minibatches", type=int, default=8, help="minibatches per PPO epoch")
    p.add_argument(
        "--ent-coef", type=float, default=0.01, help="entropy bonus; higher keeps the policy exploring"
    )
    p.add_argument(
        "--target-kl",
        type=float,
        default=0.03,
        help="an update's epochs stop early once the policy moved this far (approximate KL)",
    )
    p.add_argument(
        "--imitate-epochs", type=int, default=6, help="teacher warm-start epochs before PPO (0: none)"
    )
    p.add_argument(
        "--corpus", type=Path, help="directory of Triton kernels, NAME.cubin + NAME.json (default: bundled)"
    )
    p.add_argument(
        "--generated",
        type=Path,
        default=root / ".cache/corpus/sm_90",
        help="directory of the CUDA C training cubins that tools/build_corpus.py writes, all trained on "
        "(default: .cache/corpus/sm_90 in the repository; an empty one leaves them out)",
    )
    p.set_defaults(func=_needs_policy(cmd_train))

    p = command(
        "finetune",
        "fine-tune the reorder policy on measured GPU time (REINFORCE)",
        "Fine-tune a policy checkpoint on GPU time: episodes of the reorder game on the training kernels are "
        "verified and timed on the GPU and the policy is updated with REINFORCE toward measured speedups. "
        "Needs an NVIDIA GPU and driver and `pip install 'sass-lsp[gpu]'`.",
    )
    p.add_argument("--policy", type=Path, help="checkpoint to start from (default: the bundled one)")
    p.add_argument("--out", type=Path, required=True, help="directory for the fine-tuned checkpoint")
    p.add_argument("--budget", type=float, default=240.0, help="GPU seconds to spend")
    p.add_argument(
        "--max-episodes", type=int, help="stop after this many episodes (default: the budget decides)"
    )
    p.add_argument(
        "--episodes-per-update", type=int, default=8, help="episodes per policy update; more are steadier"
    )
    p.add_argument("--lr", type=float, default=3e-5, help="learning rate")
    p.add_argument("--kernels", nargs="*", help=f"corpus kernels (default: {' '.join(TRITON_TRAIN)})")
    p.add_argument(
        "--corpus", type=Path, help="directory of Triton kernels, NAME.cubin + NAME.json (default: bundled)"
    )
    p.add_argument("--device", default="cpu", help="torch device for the updates (cpu, cuda)")
    p.add_argument("--seed", type=int, default=0, help="seed of the episodes and updates")
    p.set_defaults(func=_needs_policy(cmd_finetune))


OPTIMIZE_EPILOG = """exit status:
  0  done (whether or not a faster schedule was found)
  1  a kernel failed (its error is printed)
  2  an input cannot be read or is invalid
  3  no GPU: the reason is printed; nothing was searched
  130  interrupted: the report and measurement log keep the trials measured"""
