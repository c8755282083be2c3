"""Feature: ``sass-lsp optimize``. Screen candidate schedules on the GPU within a budget, confirm the best.

The search comes from the caller (the CLI and the server pass a policy-guided one from
:func:`sass_lsp.policy.candidates.policy_search`, by default the surrogate walk, so this module imports no
torch); each candidate is measured by :class:`~sass_lsp.gpu.measure.GpuMeasure` (bit-exact verification,
then interleaved timing). The screened
candidate surest faster (highest lower CI bound, :meth:`SearchLog.best`) is measured again by the full
verified bench on fresh seeds — screened figures are biased upwards (the winner's curse), the confirmation
is not — and is written out only if that confirmation says it is verified faster. Outputs (all atomic):
the best ``.cuasm`` and ``.cubin``, a JSON report with every trial, and an SVG plot of measured speedup
against GPU seconds spent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sass_lsp.cuasm import assemble_cuasm
from sass_lsp.files import write_atomic
from sass_lsp.gpu.bench import BenchResult, bench_to_dict
from sass_lsp.gpu.measure import GpuMeasure
from sass_lsp.schedule.search import SearchLog, Trial

# A search strategy bound to its candidates: (measure, budget, on_trial=...) -> log. For example
# ``functools.partial(search.beam, expand, text)`` or ``functools.partial(search.screen, candidates)``.
Search = Callable[..., SearchLog]


@dataclass
class OptimizeResult:
    log: SearchLog
    best: Trial | None
    confirmation: BenchResult | None

    @property
    def verified(self) -> bool:
        return self.confirmation is not None and self.confirmation.verified


def optimize(
    search: Search,
    measure: GpuMeasure,
    budget_s: float,
    *,
    on_trial: Callable[[Trial], None] | None = None,
) -> OptimizeResult:
    log = search(measure, budget_s, on_trial=on_trial)
    best = log.best()
    confirmation = None
    if best is not None and (best.result.speedup or 0.0) > 1.0:
        confirmation = measure.confirm(best.candidate.text)
    return OptimizeResult(log, best, confirmation)


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
        "gpu_seconds": round(result.log.spent, 3),
        "n_candidates": len(trials),
        "n_rejected": sum(t["verdict"] != "match" for t in trials),
        "best": trials[result.log.trials.index(result.best)] if result.best else None,
        "confirmation": bench_to_dict(result.confirmation) if result.confirmation else None,
        "verified": result.verified,
        "trials": trials,
    }


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
