"""Feature: verified timing in the editor (``sass-lsp.timeEdit``), the pure part.

The server assembles the edited text and the original, runs :func:`sass_lsp.gpu.run_bench` off the request
path and hands the result here as plain data (:func:`sass_lsp.gpu.bench_to_dict`). This module turns it into
editor terms: a code lens on the kernel line, an inlay hint after it, a diagnostic when outputs differ, and a
short summary for the client. Results are kept per (uri, version) in a :class:`TimingStore`.

No IO and no import of ``sass_lsp.gpu`` (an edge): only paths are computed here, never read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sass_lsp.ide.diagnostics import Diag
from sass_lsp.ide.index import DocumentIndex, Kernel
from sass_lsp.ide.outline import InlayHint, Lens

CMD_TIME_EDIT = "sass-lsp.timeEdit"
CMD_OPTIMIZE = "sass-lsp.optimizeSchedule"
DIAG_CODE = "gpu-timing"
SOURCE = "sass-lsp gpu"


# ------------------------------------------------------------------------------------------- companions


@dataclass(frozen=True)
class Companions:
    """Files beside ``K.cuasm`` that GPU features use (they may or may not exist)."""

    spec: Path
    cubin: Path
    profile: Path


def companions(path: Path) -> Companions:
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    return Companions(
        path.with_name(f"{stem}.launch.toml"),
        path.with_name(f"{stem}.cubin"),
        path.with_name(f"{stem}.profile.json"),
    )


def missing_spec_message(source: Path, spec: Path) -> str:
    return (
        f"GPU timing of {source.name} needs a launch spec: expected {spec} "
        f"(write it by hand, or with `sass-lsp spec-from-json NAME.json -o {spec.name}`)"
    )


# ------------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class TimingView:
    """One bench result in editor terms."""

    kernel: str
    verdict: str
    verified: bool
    text: str
    """One line for the inlay hint and the code lens."""
    detail: str
    """A longer tooltip: medians, rounds, GPU."""
    mismatch: str = ""
    """Where outputs differ (buffer, index, both values, seed), when they do."""
    summary: dict[str, Any] = field(default_factory=dict)


def _ratio(value: float) -> str:
    return f"{value:.2f}×"


def _ci(ci: dict[str, Any]) -> str:
    conf = ci.get("confidence") or 0.95
    return f"{conf:.0%} CI {ci.get('low', 0.0):.2f}–{ci.get('high', 0.0):.2f}"


def _outputs(ver: dict[str, Any]) -> str:
    seeds = ver.get("seeds") or []
    n = len(seeds)
    how = "bit-identical" if ver.get("bit_identical") else "within tolerance"
    return f"outputs {how} on {n} input{'s' if n != 1 else ''}"


def describe_mismatch(m: dict[str, Any]) -> str:
    """``params[2] out[12,3] (flat 387): original 1.5 (0x3fc00000), edit 1.25 (0x3fa00000), seed 3``."""
    pos = m.get("first_pos")
    where = (
        ",".join(str(p) for p in pos) if isinstance(pos, list | tuple) and pos else str(m.get("first_idx"))
    )
    what = {
        "output": "differs from the original",
        "stray_write": "input overwritten by the edit",
        "nondeterministic": "differs between two runs of the original",
    }.get(str(m.get("kind", "output")), str(m.get("kind")))
    n = f" ({m['n_diff']}/{m['n_elems']} elements)" if "n_diff" in m and "n_elems" in m else ""
    exp_bits = f" ({m['expected_bits']})" if m.get("expected_bits") else ""
    got_bits = f" ({m['got_bits']})" if m.get("got_bits") else ""
    return (
        f"params[{m.get('param_idx', '?')}] {m.get('name', '?')}[{where}] (flat {m.get('first_idx', '?')}) "
        f"{what}{n}: expected {m.get('expected', '?')}{exp_bits}, got {m.get('got', '?')}{got_bits}, "
        f"seed {m.get('seed', '?')}"
    )


def view_result(result: dict[str, Any]) -> TimingView:
    """A :func:`sass_lsp.gpu.bench_to_dict` result → text for the lens, the inlay hint and the diagnostic."""
    verdict = str(result.get("verdict", "error"))
    verified = bool(result.get("verified"))
    message = str(result.get("message", ""))
    ver = result.get("verification") or {}
    timing = result.get("timing")
    mismatches = [m for m in ver.get("mismatches") or [] if isinstance(m, dict)]
    mismatch = describe_mismatch(mismatches[0]) if mismatches else ""
    ci = (timing or {}).get("ci") or {}
    ratio = ci.get("ratio")
    speed = f"{_ratio(ratio)} ({_ci(ci)})" if isinstance(ratio, int | float) else ""
    if verdict == "faster" and verified:
        text = f"verified {speed}, {_outputs(ver)}"
    elif verdict == "not_significant":
        text = f"no significant difference: {speed}, {_outputs(ver)}"
    elif verdict == "slower":
        text = f"slower {speed}, {_outputs(ver)}"
    elif verdict in ("mismatch", "nondeterministic"):
        what = "outputs differ" if verdict == "mismatch" else "original is nondeterministic"
        text = f"NOT verified: {what}" + (f" — {mismatch}" if mismatch else f" — {message}")
    elif verdict == "no_device":
        text = message.removeprefix("no_device: ") or "no GPU timing: no GPU available"
    else:
        text = f"GPU timing failed ({verdict.replace('_', ' ')}): {message}"
    detail_lines = [text]
    if timing:
        orig, edit = timing.get("orig") or {}, timing.get("edit") or {}
        detail_lines.append(
            f"original median {_ms(orig.get('median'))}, edit median {_ms(edit.get('median'))}; "
            f"{timing.get('rounds')} rounds × {timing.get('batch')} launches, {timing.get('method')}, "
            f"cache={timing.get('cache')}"
        )
    dev = result.get("device") or {}
    if dev.get("gpu"):
        detail_lines.append(f"GPU {dev['gpu']}, driver {dev.get('driver', '?')}")
    if message and message not in text:
        detail_lines.append(message)
    summary: dict[str, Any] = {
        "kernel": result.get("kernel", ""),
        "verdict": verdict,
        "verified": verified,
        "message": text,
    }
    if isinstance(ratio, int | float):
        summary.update(speedup=ratio, ci_low=ci.get("low"), ci_high=ci.get("high"))
    if mismatch:
        summary["mismatch"] = mismatch
    return TimingView(
        str(result.get("kernel", "")), verdict, verified, text, "\n".join(detail_lines), mismatch, summary
    )


def _ms(value: Any) -> str:
    if not isinstance(value, int | float):
        return "?"
    return f"{value * 1000:.2f} us" if value < 1.0 else f"{value:.4f} ms"


# ------------------------------------------------------------------------------------------- placement


def find_kernel(index: DocumentIndex, name: str) -> Kernel | None:
    """The kernel called ``name`` (the spec's kernel), else the only entry kernel, else the first one."""
    for kernel in index.kernels:
        if kernel.name == name:
            return kernel
    entries = [k for k in index.kernels if k.entry]
    if len(entries) == 1:
        return entries[0]
    return index.kernels[0] if index.kernels else None


def kernel_line(kernel: Kernel) -> int:
    return kernel.section.line


def timing_lens(
    index: DocumentIndex, view: TimingView, uri: str, stale_version: int | None = None
) -> Lens | None:
    kernel = find_kernel(index, view.kernel)
    if kernel is None:
        return None
    title = f"GPU: {view.text}"
    if stale_version is not None:
        title += f" (measured on version {stale_version}; click to re-run)"
    return Lens(kernel_line(kernel), title, CMD_TIME_EDIT, (uri,))


def run_lens(index: DocumentIndex, uri: str) -> list[Lens]:
    """A lens that runs the timing on the kernel line (shown when a launch spec exists)."""
    kernel = find_kernel(index, "")
    if kernel is None:
        return []
    return [Lens(kernel_line(kernel), "Time this edit on the GPU", CMD_TIME_EDIT, (uri,))]


def timing_hint(index: DocumentIndex, view: TimingView) -> InlayHint | None:
    kernel = find_kernel(index, view.kernel)
    if kernel is None:
        return None
    line = kernel_line(kernel)
    return InlayHint(line, len(index.lines[line].rstrip()), f"  {view.text}", view.detail)


def timing_diagnostics(index: DocumentIndex, view: TimingView) -> list[Diag]:
    """An error on the kernel line when outputs differ; nothing otherwise (other failures are messages)."""
    if view.verdict not in ("mismatch", "nondeterministic"):
        return []
    kernel = find_kernel(index, view.kernel)
    if kernel is None:
        return []
    line = kernel_line(kernel)
    text = index.lines[line]
    start = len(text) - len(text.lstrip())
    what = (
        "the edit's outputs differ from the original's"
        if view.verdict == "mismatch"
        else ("the original kernel is nondeterministic: outputs differ between two runs")
    )
    message = f"GPU verification: {what}" + (f": {view.mismatch}" if view.mismatch else "")
    severity = "error" if view.verdict == "mismatch" else "warning"
    return [Diag(line, start, line, len(text.rstrip()), severity, message, DIAG_CODE, SOURCE)]


# ------------------------------------------------------------------------------------------- state


@dataclass
class TimingStore:
    """Per document: the original text (as opened or last saved) and the latest result per version."""

    originals: dict[str, str] = field(default_factory=dict)
    results: dict[str, tuple[int, TimingView]] = field(default_factory=dict)

    def set_original(self, uri: str, text: str) -> None:
        self.originals[uri] = text

    def put(self, uri: str, version: int, view: TimingView) -> None:
        self.results[uri] = (version, view)

    def current(self, uri: str, version: int) -> TimingView | None:
        got = self.results.get(uri)
        return got[1] if got is not None and got[0] == version else None

    def latest(self, uri: str) -> tuple[int, TimingView] | None:
        return self.results.get(uri)

    def forget(self, uri: str) -> None:
        self.originals.pop(uri, None)
        self.results.pop(uri, None)
