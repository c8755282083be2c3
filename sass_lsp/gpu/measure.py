"""GPU measurements for schedule search: one candidate ``.cuasm`` → verified against the original, then timed.

:class:`GpuMeasure` is the ``measure`` function that :mod:`sass_lsp.schedule.search` strategies call. Each
call assembles the candidate (our assembler, nvdisasm-verified), checks its outputs bit for bit against the
original on ``seeds`` fresh input sets in the isolated worker, and only then times both interleaved. The
budget it reports is GPU seconds: the wall time of the worker requests, not the CPU-side assembly. The call
is ``finish(prepare(text))``: ``prepare`` (key, assembly: CPU, no side effects) may run in another thread
while the previous candidate is on the GPU (``search.screen``/``search.beam`` do that), ``finish`` (the
worker requests, the CI, the log record) runs in the search's thread, in measurement order.

Every measurement is appended to a JSON-lines log (schedule key, verdict, speedup and CI, medians, seconds)
so a learned cost model can later be fitted on them and checked against the GPU (issue #6). Given the
original's text, each record also carries the candidate as line edits of it (``schedule_edits``), and the log
holds that text once (a ``kind: original`` record before the kernel's first measurement), so the log alone
rebuilds every schedule it measured."""

from __future__ import annotations

import difflib
import gzip
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sass_lsp.cuasm import AssembleError, assemble_cuasm
from sass_lsp.gpu.bench import BenchResult, bench_to_dict, run_bench
from sass_lsp.gpu.runner import GpuRunner
from sass_lsp.gpu.spec import LaunchSpec
from sass_lsp.gpu.stats import bootstrap_ratio_ci, summarize
from sass_lsp.schedule.search import LineEdit, Measured, schedule_key


@dataclass(frozen=True)
class Prepared:
    """A candidate ready for the GPU: its cubin, or why it did not assemble."""

    text: str
    key: str
    cubin: bytes | None
    error: str | None = None


@dataclass
class GpuMeasure:
    runner: GpuRunner
    original: bytes  # the original cubin
    spec: LaunchSpec
    kernel_label: str
    log_path: Path | None = None
    original_text: str | None = None  # the .cuasm the candidates edit: records then carry their edits
    seeds: tuple[int, ...] = (101, 202)  # not the seeds the final confirmation uses
    rounds: int = 12
    target_batch_ms: float = 2.0
    calls: int = 0
    _original_logged: bool = False

    def __call__(self, text: str) -> Measured:
        return self.finish(self.prepare(text))

    def prepare(self, text: str) -> Prepared:
        """The CPU side before the GPU: the key and the assembly. No side effects, so a search may run it
        ahead (in another thread) for a candidate it then never measures."""
        key = schedule_key(text)
        try:
            return Prepared(text, key, assemble_cuasm(text, source_name=f"<candidate {key}>"))
        except AssembleError as exc:
            return Prepared(text, key, None, str(exc)[:300])

    def finish(self, prepared: Prepared) -> Measured:
        """Verify and time the prepared candidate in the worker, then the CI and the log record."""
        text, key, cubin = prepared.text, prepared.key, prepared.cubin
        self.calls += 1
        if cubin is None:
            return self._record(text, Measured(key, "asm_error", None), {"error": prepared.error})
        t0 = time.monotonic()
        checked = self.runner.verify(self.original, cubin, self.spec, list(self.seeds))
        status = checked.result.get("status", "error") if checked.ok else checked.kind
        if status != "match":
            return self._record(text, Measured(key, status, None, seconds=time.monotonic() - t0), {})
        timed = self.runner.time(  # no clock readings: only the confirmation reports them
            self.original,
            cubin,
            self.spec,
            rounds=self.rounds,
            target_batch_ms=self.target_batch_ms,
            clocks=False,
        )
        seconds = time.monotonic() - t0
        if not timed.ok or timed.result.get("status") != "ok":
            return self._record(text, Measured(key, "timing_error", None, seconds=seconds), {})
        raw = timed.result
        ci = bootstrap_ratio_ci(
            raw["orig_ms"], raw["edit_ms"], blocks=raw.get("round_blocks"), n_resamples=2000
        )
        extra = {
            "orig_ms": summarize(raw["orig_ms"]).median,
            "edit_ms": summarize(raw["edit_ms"]).median,
            "batch": raw["batch"],
        }
        return self._record(text, Measured(key, "match", ci.ratio, ci.low, ci.high, seconds), extra)

    def confirm(self, text: str, *, seeds: int = 5, rounds: int = 40) -> BenchResult:
        """The full verified bench (fresh seeds 0..seeds-1, more rounds) for the chosen candidate."""
        cubin = assemble_cuasm(text, source_name="<best candidate>")
        result = run_bench(self.original, cubin, self.spec, seeds=seeds, rounds=rounds, runner=self.runner)
        self._log({"kind": "confirm", "key": schedule_key(text), **bench_to_dict(result)})
        return result

    def _record(self, text: str, m: Measured, extra: dict[str, Any]) -> Measured:
        if self.original_text is not None:
            if not self._original_logged:
                self._original_logged = True
                self._log(
                    {
                        "kind": "original",
                        "kernel": self.kernel_label,
                        "function": self.spec.kernel,
                        "key": schedule_key(self.original_text),
                        "text": self.original_text,
                    }
                )
            extra = {**extra, "edits": schedule_edits(self.original_text, text)}
        self._log(
            {
                "kind": "screen",
                "kernel": self.kernel_label,
                "key": m.key,
                "verdict": m.verdict,
                "speedup": m.speedup,
                "low": m.low,
                "high": m.high,
                "seconds": round(m.seconds, 4),
                "time": time.time(),
                **extra,
            }
        )
        return m

    def _log(self, record: dict[str, Any]) -> None:
        if self.log_path is None:
            return
        # One line per write, appended: a crash loses at most the line being written.
        with open(self.log_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, default=str) + "\n")


def read_log(path: Path) -> list[dict[str, Any]]:
    """The records of a measurement log (``.jsonl``, or gzipped ``.jsonl.gz``)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def schedule_edits(original: str, candidate: str) -> list[LineEdit]:
    """``candidate`` as (first_line, last_line, new_lines) edits of ``original`` (1-based, inclusive; an
    insertion has last = first - 1): ``search.apply_edits(original, edits) == candidate``."""
    a, b = original.splitlines(), candidate.splitlines()
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    return [(i1 + 1, i2, b[j1:j2]) for tag, i1, i2, j1, j2 in ops if tag != "equal"]
