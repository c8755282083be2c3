"""Feature: ``sass-lsp optimize``. Screen candidate schedules on the GPU within a budget, confirm the best.

The search comes from the caller (the CLI and the server pass a policy-guided one from
:func:`sass_lsp.policy.candidates.policy_search`, by default the surrogate walk, so this module imports no
torch); each candidate is measured by :class:`~sass_lsp.gpu.measure.GpuMeasure` (bit-exact verification,
then interleaved timing). The screened
candidate surest faster (highest lower CI bound, :meth:`SearchLog.best`) is measured again by the full
verified bench on fresh seeds — screened figures are biased upwards (the winner's curse), the confirmation
is not — and is written out only if that confirmation says it is verified faster by a practical margin: the
lower bound of its 95% interval at least ``min_gain`` (:data:`DEFAULT_MIN_GAIN`). Outputs (all atomic): the
best ``.cuasm`` and ``.cubin``, a JSON report with every trial, and an SVG plot of measured speedup against
GPU seconds spent.

The budget bounds GPU seconds and, given a ``deadline``, wall time: screening stops before a measurement
that would leave no room for itself and the confirmation (each estimated from the slowest screening
measurement so far). ``on_update`` sees the result as it grows (the CLI rewrites the report with it), and a
``KeyboardInterrupt`` ends the run with what was measured (``stopped == "interrupted"``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sass_lsp.cuasm import assemble_cuasm
from sass_lsp.files import write_atomic
from sass_lsp.gpu.bench import BenchResult, bench_to_dict
from sass_lsp.gpu.measure import GpuMeasure
from sass_lsp.schedule.search import Measured, SearchLog, Trial

DEFAULT_MIN_GAIN = 1.005
"""Least lower bound of the confirmed speedup's 95% interval that counts as faster: below half a percent a
schedule is not worth replacing the compiler's."""
CONFIRM_COST = 4.0
"""A confirmation (5 seeds, 40 rounds) in screening measurements (2 seeds, 12 rounds): time kept for it."""
UPDATE_EVERY_S = 1.0
"""Least seconds between two ``on_update`` calls while screening (each rewrites the whole report)."""

# A search strategy bound to its candidates: (measure, budget, on_trial=...) -> log. For example
# ``functools.partial(search.beam, expand, text)`` or ``functools.partial(search.screen, candidates)``.
Search = Callable[..., SearchLog]


@dataclass
class OptimizeResult:
    log: SearchLog
    best: Trial | None
    confirmation: BenchResult | None
    min_gain: float = DEFAULT_MIN_GAIN
    stopped: str = "running"
    """Why screening ended: ``budget`` (GPU seconds), ``wall_clock``, ``exhausted`` (no candidate left),
    ``interrupted``; ``running`` while it goes on."""
    wall_s: float = 0.0

    @property
    def confirmed_low(self) -> float | None:
        """Lower bound of the confirmed speedup's interval (None: no confirmation, or it timed nothing)."""
        timing = self.confirmation.timing if self.confirmation is not None else None
        return timing.ci.low if timing is not None else None

    @property
    def verified(self) -> bool:
        """Verified bit for bit and faster by at least ``min_gain`` (the CI's lower bound): worth writing."""
        low = self.confirmed_low
        return (
            self.confirmation is not None
            and self.confirmation.verified
            and low is not None
            and (low >= self.min_gain)
        )


class OutOfTime(Exception):
    """Raised instead of a measurement that would not end, with a confirmation after it, by the deadline."""


@dataclass
class WallClock:
    """``measure`` within a wall-clock ``deadline`` (``time.monotonic``): before each measurement, stop the
    search (:class:`OutOfTime`) unless the measurement and a confirmation still fit, estimated from the
    slowest measurement so far. The first measurement always runs. Keeps ``measure``'s prepare/finish
    split."""

    measure: Callable[[str], Measured]
    deadline: float | None
    slowest: float = 0.0
    calls: int = 0

    def prepare(self, text: str) -> object:
        prepare = getattr(self.measure, "prepare", None)
        return prepare(text) if callable(prepare) else text

    def finish(self, prepared: object) -> Measured:
        now = time.monotonic()
        room = self.slowest * (1.0 + CONFIRM_COST)
        if self.calls and self.deadline is not None and now + room > self.deadline:
            raise OutOfTime
        self.calls += 1
        finish = getattr(self.measure, "finish", None)
        result = finish(prepared) if callable(finish) else self.measure(prepared)  # type: ignore[arg-type]
        self.slowest = max(self.slowest, time.monotonic() - now)
        return result

    def __call__(self, text: str) -> Measured:
        return self.finish(self.prepare(text))


def optimize(
    search: Search,
    measure: GpuMeasure,
    budget_s: float,
    *,
    on_trial: Callable[[Trial], None] | None = None,
    min_gain: float = DEFAULT_MIN_GAIN,
    deadline: float | None = None,
    on_update: Callable[[OptimizeResult], None] | None = None,
) -> OptimizeResult:
    """Screen within ``budget_s`` GPU seconds (and, given one, the wall-clock ``deadline``, on
    ``time.monotonic``), then confirm the trial surest faster if its screened speedup reaches ``min_gain``.
    ``on_update``: called with the result so far at most every :data:`UPDATE_EVERY_S` while screening, and
    once at the end."""
    start = time.monotonic()
    log = SearchLog(budget_s)  # the trials as the search reports them: kept when it stops by an exception
    result = OptimizeResult(log, None, None, min_gain)
    last_update = start

    def observed(trial: Trial) -> None:
        nonlocal last_update
        log.trials.append(trial)
        log.spent = trial.spent
        if on_trial is not None:
            on_trial(trial)
        if on_update is not None and time.monotonic() - last_update >= UPDATE_EVERY_S:
            result.wall_s = time.monotonic() - start
            on_update(result)
            last_update = time.monotonic()

    try:
        searched = search(WallClock(measure, deadline), budget_s, on_trial=observed)
        result.stopped = "budget" if searched.left <= 0 else "exhausted"
    except OutOfTime:
        result.stopped = "wall_clock"
    except KeyboardInterrupt:
        result.stopped = "interrupted"
    result.best = log.best()
    confirm = (
        result.stopped != "interrupted"
        and result.best is not None
        and (result.best.result.speedup or 0.0) >= min_gain
        and (deadline is None or time.monotonic() < deadline)
    )
    if confirm:
        try:
            result.confirmation = measure.confirm(result.best.candidate.text)  # type: ignore[union-attr]
        except KeyboardInterrupt:
            result.stopped = "interrupted"
    result.wall_s = time.monotonic() - start
    if on_update is not None:
        on_update(result)
    return result


def summary_message(result: OptimizeResult) -> str:
    """One line: what was found, and why the original stays when it does."""
    conf, low = result.confirmation, result.confirmed_low
    ended = {
        "wall_clock": " (screening stopped by the wall-clock budget)",
        "interrupted": " (interrupted)",
    }.get(result.stopped, "")
    if result.verified and conf is not None and result.best is not None:
        return f"verified: {conf.message} ({' + '.join(move_kinds(result.best.candidate.source))} moves)"
    if conf is not None and conf.verified and low is not None:
        return (
            f"verified faster but by less than --min-gain {result.min_gain:g} (interval's lower bound "
            f"{low:.4f}): {conf.message}; the original stays best{ended}"
        )
    if conf is not None:
        return f"best screened candidate not confirmed: {conf.message}; the original stays best{ended}"
    best = result.best
    if best is not None and (best.result.speedup or 0.0) > 1.0 and result.stopped != "interrupted":
        return (
            f"the best screened candidate ({best.result.speedup:.4f}x) is below --min-gain "
            f"{result.min_gain:g}; the original stays best{ended}"
        )
    if result.stopped == "interrupted":
        return f"interrupted after {len(result.log.trials)} candidates; nothing confirmed, the original stays"
    return f"no candidate was faster than the original in screening; the original stays best{ended}"


def report_dict(result: OptimizeResult, *, kernel: str, budget_s: float) -> dict[str, Any]:
    trials = [
        {
            "source": t.candidate.source,
            "key": t.candidate.key,
            "moves": list(t.candidate.moves),
            "predicted_speedup": t.candidate.predicted,
            "verdict": t.result.verdict,
            "speedup": t.result.speedup,
            "ci": [t.result.low, t.result.high],
            "gpu_seconds": round(t.result.seconds, 4),
            "spent": round(t.spent, 3),
        }
        for t in result.log.trials
    ]
    return {
        "kernel": kernel,
        "budget_s": budget_s,
        "min_gain": result.min_gain,
        "stopped": result.stopped,
        "wall_seconds": round(result.wall_s, 3),
        "gpu_seconds": round(result.log.spent, 3),
        "n_candidates": len(trials),
        "n_rejected": sum(t["verdict"] != "match" for t in trials),
        "best": trials[result.log.trials.index(result.best)] if result.best else None,
        "best_move_kinds": move_kinds(result.best.candidate.source) if result.best else [],
        "confirmation": bench_to_dict(result.confirmation) if result.confirmation else None,
        "verified": result.verified,
        "trials": trials,
    }


# a source's parts that name their kind of move
NAMED_KINDS = ("control", "rename", "cross-block", "pipeline")


def move_kinds(source: str) -> list[str]:
    """The kinds of move a candidate's schedule holds, from its source: "+"-joined parts in the order the
    searches applied them ("rename+reorder+control"), where a part that is not a named kind is a reorder
    search's name ("policy", "annealing", ...)."""
    kinds = [part if part in NAMED_KINDS else "reorder" for part in source.split("+")]
    return list(dict.fromkeys(kinds))


def output_path(out_stem: Path, suffix: str) -> Path:
    """``K.optimized`` + ``.cuasm`` = ``K.optimized.cuasm``: appended, never ``with_suffix``, which would
    replace ``.optimized`` and write ``K.cuasm`` — the user's own file."""
    return out_stem.with_name(out_stem.name + suffix)


def write_outputs(result: OptimizeResult, out_stem: Path, report: dict[str, Any]) -> list[Path]:
    """Write the report, the plot and — only when verified — the best .cuasm and .cubin. Returns the paths."""
    paths = [output_path(out_stem, ".report.json"), output_path(out_stem, ".svg")]
    write_atomic(paths[0], json.dumps(report, indent=2, default=str))
    write_atomic(paths[1], speedup_plot(result.log, title=report["kernel"]))
    if result.verified and result.best is not None:
        text = result.best.candidate.text
        cuasm, cubin = output_path(out_stem, ".cuasm"), output_path(out_stem, ".cubin")
        write_atomic(cuasm, text)
        write_atomic(cubin, assemble_cuasm(text, source_name=str(cuasm)))
        paths += [cuasm, cubin]
    return paths


def speedup_plot(log: SearchLog, *, title: str, width: int = 640, height: int = 360) -> str:
    """SVG scatter: measured speedup per candidate against cumulative GPU seconds; best so far as a line."""
    pad_l, pad_r, pad_t, pad_b = 56, 16, 28, 40
    # only accepted candidates were timed (a rejected one has no speedup)
    pts = [(t.spent, t.result.speedup) for t in log.trials if t.result.speedup]
    xmax = max([log.spent, 1e-6] + [p[0] for p in pts])
    ys = [p[1] for p in pts] + [1.0]
    ylo, yhi = min(ys) - 0.01, max(ys) + 0.01

    def sx(x: float) -> float:
        return pad_l + (width - pad_l - pad_r) * x / xmax

    def sy(y: float) -> float:
        return height - pad_b - (height - pad_t - pad_b) * (y - ylo) / (yhi - ylo)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif"'
        ' font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{pad_l}" y="16" font-size="13">{_esc(title)}: measured speedup per candidate</text>',
        f'<line x1="{pad_l}" y1="{sy(1.0):.1f}" x2="{width - pad_r}" y2="{sy(1.0):.1f}" stroke="#999"'
        ' stroke-dasharray="4 3"/>',
        f'<text x="4" y="{sy(1.0) + 4:.1f}">1.00x</text>',
        f'<text x="{pad_l}" y="{height - 8}">GPU seconds spent (0 … {xmax:.1f} s)</text>',
        f'<text x="4" y="{sy(yhi) + 10:.1f}">{yhi:.2f}x</text>',
        f'<text x="4" y="{sy(ylo):.1f}">{ylo:.2f}x</text>',
    ]
    best = 0.0
    line = []
    for x, y in pts:
        out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="#1f77b4"/>')
        best = max(best, y)
        if best:
            line.append(f"{sx(x):.1f},{sy(best):.1f}")
    if line:
        out.append(f'<polyline points="{" ".join(line)}" fill="none" stroke="#2ca02c" stroke-width="1.5"/>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
