"""Optimize a kernel's schedule on the GPU: the original (arch, launch spec, cubin), the device, the policy's
search, screening within a budget of GPU seconds, the best confirmed on fresh inputs, and the outputs."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sass_lsp.app.errors import AppError
from sass_lsp.app.kernel import assemble, kernel_arch, launch_spec
from sass_lsp.app.policy import load_policy

if TYPE_CHECKING:
    from sass_lsp.gpu import GpuRunner, LaunchSpec
    from sass_lsp.gpu.measure import GpuMeasure
    from sass_lsp.gpu.optimize import OptimizeResult, Search


@dataclass(frozen=True)
class Original:
    """A kernel as ptxas scheduled it, ready to search: its text, arch, cubin and launch spec."""

    text: str
    arch: str
    cubin: bytes
    spec: LaunchSpec
    gpu: str | None = None  # the device that answered, when one was asked

    @property
    def label(self) -> str:
        return self.spec.label


def original_kernel(
    text: str,
    source: str,
    launch: Path | LaunchSpec,
    *,
    arch: str | None = None,
    cubin: bytes | None = None,
    runner: GpuRunner | None = None,
) -> Original:
    """The original kernel: its arch (``arch``, else read from the text), launch spec, the device (``runner``
    asked first: with no GPU nothing else is worth doing) and its cubin (``cubin``, else assembled).
    :class:`AppError`: ``parse_error``, ``no_kernel``, ``spec_error``, ``no_device``, ``assemble_error``."""
    arch = arch or kernel_arch(text, source)
    spec = launch_spec(launch)
    gpu = None
    if runner is not None:
        hello = runner.hello()
        if not hello.ok:
            raise AppError("no_device", hello.reason)
        gpu = hello.result.get("device", {}).get("gpu")
    return Original(text, arch, cubin if cubin is not None else assemble(text, source), spec, gpu)


MOVE_KINDS = ("reorder", "control", "rename", "cross-block", "pipeline")  # ``optimize --moves``
STRUCTURAL = ("rename", "cross-block", "pipeline")  # moves that give the reorder game a new text to reorder
DEFAULT_MOVES = ("reorder", "control")
CONTROL_SHARE = 0.5  # of the budget, with both kinds: the control-code walk from the best reorder found


@dataclass(frozen=True)
class SearchChoice:
    """Which policy-guided search (``policy.candidates.SEARCHES``) and its settings."""

    name: str = "policy_surrogate"  # policy.candidates.DEFAULT_SEARCH
    seed: int = 0
    uniform_share: float | None = None  # None: the search's default
    features: str = "displacement"  # what policy_surrogate's model sees of a schedule
    prior: bool = True  # policy_surrogate: the performance model ranks its draws until its surrogate learns
    # what the search may change (with both: reorders first, then control codes from the best)
    moves: tuple[str, ...] = DEFAULT_MOVES

    def resolved_share(self) -> float:
        """The share of uniform draws the search uses (ValueError for one it cannot use)."""
        from sass_lsp.policy.candidates import resolve_uniform_share

        return resolve_uniform_share(self.name, self.uniform_share)


def policy_search(original: Original, choice: SearchChoice, net: Any) -> Search:
    """The search ``choice`` over ``original``: the policy-guided reorder search, annealing over control-code
    moves (yield, reuse, stalls: :mod:`sass_lsp.schedule.control_moves`), or the first for half the budget
    and the second from the schedule it measured surest faster (imports torch). With ``rename`` or
    ``cross-block`` the first is :func:`structural_search` instead (those moves, and uniform reorder moves
    of the text they made with ``reorder``). The search ``policy_moves`` is one walk over every kind
    ``choice.moves`` names, each move drawn from ``net``, a policy of the move game."""
    unknown = set(choice.moves) - set(MOVE_KINDS)
    if unknown or not choice.moves:
        raise ValueError(f"moves must be some of {', '.join(MOVE_KINDS)}, not {', '.join(choice.moves)}")
    if choice.name == "policy_moves":  # one walk over every kind named, each move from the move game's policy
        from sass_lsp.policy.candidates import move_policy_walk

        threads = math.prod(original.spec.block)
        kinds = tuple(k for k in MOVE_KINDS if k in choice.moves)
        share = choice.resolved_share()
        return move_policy_walk(
            original.text, original.arch, net=net, kernel=original.spec.kernel, kinds=kinds,
            threads=threads, seed=choice.seed, uniform_share=share, control_share=CONTROL_SHARE,
        )  # fmt: skip
    if getattr(getattr(net, "cfg", None), "cand_kinds", 0):
        raise ValueError(f"a policy of the move game draws the policy_moves search, not {choice.name}")
    structural = tuple(k for k in STRUCTURAL if k in choice.moves)
    if structural:
        first = structural_search(original, choice.seed, structural, reorder="reorder" in choice.moves)
    elif "reorder" in choice.moves:
        first = reorder_search(original, choice, net)
    else:
        return control_search(original, choice.seed)(None, None)
    if "control" not in choice.moves:
        return first
    from sass_lsp.schedule.search import chained

    return chained(first, control_search(original, choice.seed), 1 - CONTROL_SHARE)


def control_search(
    original: Original, seed: int, *, overlap: bool = True
) -> Callable[[tuple[str, float] | None, str | None], Search]:
    """Annealing on GPU time over control-code moves, from a given schedule (None: the original) that a
    search whose candidates' source was ``start_source`` found; the walk's candidates' source names both.
    ``overlap``: the next move is proposed while one is measured (the same walk, less wall time)."""
    import random

    from sass_lsp.schedule import control_moves
    from sass_lsp.schedule.search import annealing

    def walk_from(start: tuple[str, float] | None, start_source: str | None) -> Search:
        source = "control" if start is None else f"{start_source or 'reorder'}+control"
        propose = control_moves.neighbour(original.text, original.arch, source=source)

        def search(measure: Any, budget: float, *, on_trial: Any = None) -> Any:
            prewarm_verification(control_moves.flag_variants(start[0] if start else original.text))
            rng = random.Random(seed)
            return annealing(
                propose, original.text, measure, budget, rng, on_trial=on_trial, start=start, overlap=overlap
            )

        return search

    return walk_from


def prewarm_verification(texts: list[str]) -> None:
    """Assemble ``texts`` once so that nvdisasm's verification of their instruction words is recorded
    (:mod:`sass_lsp.cuasm.verified`) and later candidates made of those words skip it."""
    import contextlib

    from sass_lsp.cuasm import AssembleError, assemble_cuasm

    for text in texts:
        # a word nvdisasm reads otherwise is caught again when a candidate uses it
        with contextlib.suppress(AssembleError):
            assemble_cuasm(text, source_name="<verification prewarm>")


def structural_search(
    original: Original, seed: int, kinds: Sequence[str], *, reorder: bool = True, overlap: bool = True
) -> Search:
    """Annealing on GPU time where each step is one of ``kinds`` (``STRUCTURAL``: a register rename,
    :mod:`sass_lsp.schedule.rename_moves`; a hoist or sink, :mod:`sass_lsp.schedule.crossblock_moves`; a
    load issued an iteration ahead, :mod:`sass_lsp.schedule.pipeline_moves`)
    made on the original or on a text such steps made, or, with ``reorder``, a uniform reorder move
    (:func:`sass_lsp.schedule.search.neighbour`) of such a text: the reorder game is built on that text so
    the dependences the moves freed can be used. That text keeps its control codes (repaired where a
    cross-block move changed a block), so the game may take it for ptxas's. A step of ``kinds`` proposed at a
    reordered schedule is made on the text it reorders (its reorder moves are dropped: a game's orders
    belong to one text). A candidate's source names the kinds of move it holds in the order made
    ("cross-block+rename+reorder"). ``overlap``: the next step is proposed while one is measured."""
    import random

    from sass_lsp.schedule import crossblock_moves, pipeline_moves, rename_moves
    from sass_lsp.schedule.search import Candidate, schedule_key
    from sass_lsp.schedule.search import neighbour as reorder_neighbour

    unknown = set(kinds) - set(STRUCTURAL)
    if unknown or not kinds:
        raise ValueError(f"structural moves are some of {', '.join(STRUCTURAL)}, not {', '.join(kinds)}")
    threads = math.prod(original.spec.block)
    makers = {
        "rename": lambda: rename_moves.neighbour(original.text, original.arch, threads_per_block=threads),
        "cross-block": lambda: crossblock_moves.neighbour(original.text, original.arch),
        "pipeline": lambda: pipeline_moves.neighbour(original.text, original.arch, threads_per_block=threads),
    }
    steps = {kind: makers[kind]() for kind in STRUCTURAL if kind in kinds}
    games: dict[str, Any] = {}  # a text the steps made (the original too) -> its reorder proposer
    # a proposed text's key -> (the text of steps it reorders, or itself; the kinds that text holds)
    made: dict[str, tuple[str, tuple[str, ...]]] = {schedule_key(original.text): (original.text, ())}

    def holding(done: tuple[str, ...], kind: str) -> tuple[str, ...]:
        return done if kind in done else (*done, kind)

    def step(base: str, done: tuple[str, ...], rng: random.Random) -> Candidate | None:
        for kind in rng.sample(list(steps), len(steps)):  # another kind where this one has no move left
            cand = steps[kind](base, rng)
            if cand is not None:
                now = holding(done, kind)
                made[cand.key] = (cand.text, now)
                return Candidate(cand.text, "+".join(now), cand.moves)
        return None

    def reorder_from(base: str, done: tuple[str, ...], text: str, rng: random.Random) -> Any:
        if base not in games:
            source = "+".join(holding(done, "reorder"))
            games[base] = reorder_neighbour(base, original.arch, original.spec.kernel, source=source)
        return games[base](text, rng)

    def propose(text: str, rng: random.Random) -> Any:
        base, done = made.get(schedule_key(text), (text, ()))
        if not reorder or rng.random() < 0.5:
            cand = step(base, done, rng)
            if cand is not None or not reorder:
                return cand
        cand = reorder_from(base, done, text, rng)
        if cand is not None:
            made.setdefault(cand.key, (base, done))
        return cand

    return _walk(propose, original, seed, overlap)


def _walk(propose: Callable[[str, Any], Any], original: Original, seed: int, overlap: bool) -> Search:
    """Annealing on GPU time from ``original``, each step one of ``propose``'s moves; ``overlap``: the next
    proposed while one is measured (its move lists' caches may then differ, so the walk may too)."""
    import random

    from sass_lsp.schedule.search import annealing

    def search(measure: Any, budget: float, *, on_trial: Any = None) -> Any:
        rng = random.Random(seed)
        return annealing(propose, original.text, measure, budget, rng, on_trial=on_trial, overlap=overlap)

    return search


def reorder_search(original: Original, choice: SearchChoice, net: Any) -> Search:
    """The policy-guided reorder search ``choice`` over ``original``."""
    from sass_lsp.app.policy import load_perf_model
    from sass_lsp.policy.candidates import policy_search as build

    perf = load_perf_model() if choice.prior and choice.name == "policy_surrogate" else None
    return build(
        choice.name,
        original.text,
        original.arch,
        net=net,
        kernel=original.spec.kernel,
        seed=choice.seed,
        uniform_share=choice.resolved_share(),
        features=choice.features,
        perf=perf,
    )


def kernel_measure(
    original: Original, runner: GpuRunner, log_path: Path | None = None, label: str | None = None
) -> GpuMeasure:
    """One candidate text -> its verified, timed measurement against ``original``, logged (JSON lines) under
    ``label`` (default: the launch spec's)."""
    from sass_lsp.gpu.measure import GpuMeasure

    label = label or original.label
    text = original.text
    return GpuMeasure(runner, original.cubin, original.spec, label, log_path=log_path, original_text=text)


@dataclass
class Optimized:
    """What :func:`optimize_kernel` found: the search's result, its report and the files written."""

    result: OptimizeResult
    report: dict[str, Any]
    paths: list[Path] = field(default_factory=list)


def optimize_kernel(
    original: Original,
    runner: GpuRunner,
    budget_s: float,
    *,
    search: SearchChoice | Search = SearchChoice(),
    net: Any = None,
    policy: Path | None = None,
    min_gain: float | None = None,
    deadline: float | None = None,
    on_trial: Callable[[Any], None] | None = None,
    measure: GpuMeasure | None = None,
    out_stem: Path | None = None,
) -> Optimized:
    """Screen candidates of ``search`` (a :class:`SearchChoice` of the policy, loaded from ``policy`` unless
    ``net`` is given; or any ``gpu.optimize.Search``) on the GPU for ``budget_s`` GPU seconds (and until the
    wall-clock ``deadline``), confirm the best on fresh inputs; kept only if its confirmed lower bound reaches
    ``min_gain``. ``measure``: one shared by several searches of the same original (else a new one).
    ``out_stem``: ``K.optimized`` -> the measurement log, the report (rewritten as trials come in, and kept
    when the run is interrupted), the plot and, only when verified faster, ``.cuasm`` and ``.cubin``."""
    from sass_lsp.files import write_atomic
    from sass_lsp.gpu.optimize import DEFAULT_MIN_GAIN, optimize, output_path, report_dict, write_outputs

    described = {}
    if isinstance(search, SearchChoice):
        described = {"name": search.name, "uniform_share": search.resolved_share()}
        net = net if net is not None else load_policy(policy, torch_net=True)
        search = policy_search(original, search, net)
    log_path = output_path(out_stem, ".measurements.jsonl") if out_stem is not None else None
    measure = measure or kernel_measure(original, runner, log_path)

    def report_of(result: OptimizeResult) -> dict[str, Any]:
        report = report_dict(result, kernel=original.label, budget_s=budget_s)
        return {**report, "search": described} if described else report

    def write_report(result: OptimizeResult) -> None:
        assert out_stem is not None
        text = json.dumps(report_of(result), indent=2, default=str)
        write_atomic(output_path(out_stem, ".report.json"), text)

    result = optimize(
        search,
        measure,
        budget_s,
        on_trial=on_trial,
        min_gain=DEFAULT_MIN_GAIN if min_gain is None else min_gain,
        deadline=deadline,
        on_update=write_report if out_stem is not None else None,
    )
    report = report_of(result)
    if out_stem is None:
        return Optimized(result, report)
    paths = write_outputs(result, out_stem, report)
    if log_path is not None and log_path.exists():
        paths.append(log_path)
    return Optimized(result, report, paths)
