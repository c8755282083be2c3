"""Feature: diagnostics. Three lanes, cheapest first:

1. parse — control-field errors, lines the parser cannot classify, instructions outside a .text section
   (from the cached line lexing; instant);
2. encode — "this instruction cannot be encoded for sm_90: …", one encoder call per distinct instruction
   text (branches: per text and target displacement), cached across edits and documents;
3. hazards — the checker's findings per kernel, cached per (arch, kernel text), so an edit re-runs the
   analysis of the edited kernel only.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass

from sass_lsp.ide.backends import EncodeProblem, EncoderAdapter, Finding, Related, run_checker
from sass_lsp.ide.checker_input import kernel_module
from sass_lsp.ide.index import DocumentIndex, Kernel, build_index, section_label_pcs
from sass_lsp.ide.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Diag:
    line: int  # 0-based
    col: int
    end_line: int
    end_col: int
    severity: str  # error | warning | information | hint
    message: str
    code: str
    source: str = "sass-lsp"
    related: tuple[Related, ...] = ()


def _with_hint(message: str, hint: str) -> str:
    return f"{message}\nhint: {hint}" if hint else message


def parse_diagnostics(index: DocumentIndex, only_lines: list[int] | None = None) -> list[Diag]:
    """Errors of single lines and of the document's structure; with ``only_lines``, of those lines only."""
    out: list[Diag] = []
    infos = index.infos
    lines = range(len(infos)) if only_lines is None else [ln for ln in only_lines if 0 <= ln < len(infos)]
    for line in lines:
        info = infos[line]
        err = info.error
        if err is not None:
            code = err.code or ("control-field" if info.kind == "instruction" else "syntax")
            out.append(
                Diag(
                    line,
                    err.col,
                    line,
                    max(err.end_col, err.col + 1),
                    "error",
                    _with_hint(err.message, err.hint),
                    code,
                )
            )
    wanted = None if only_lines is None else set(only_lines)
    for line, col, end_col, message, hint in index.structure_errors:
        if wanted is not None and line not in wanted:
            continue
        out.append(Diag(line, col, line, max(end_col, col + 1), "error", _with_hint(message, hint), "syntax"))
    out.sort(key=lambda d: (d.line, d.col))
    return out


# ------------------------------------------------------------------------------------------------ encode


class LruCache(OrderedDict):
    """A bounded cache, safe to fill from a worker thread while the event loop reads it."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self._lock = threading.Lock()

    def get(self, key: object, default: object = None) -> object:  # type: ignore[override]
        # no lock: a read never reorders, and one dict look-up is atomic under the GIL; locking here
        # cost ~10 ms per 20,000 instruction lines on the way to the first diagnostics
        return OrderedDict.get(self, key, default)

    def put(self, key: object, value: object) -> None:
        with self._lock:
            self[key] = value
            if len(self) > self.size:
                self.popitem(last=False)


_ENCODE_CACHE = LruCache(400_000)
MISSING = object()


_LINE_CACHE: dict[str, LruCache] = {}


@dataclass
class EncodePass:
    """Encoder diagnostics known now, and the instructions still to encode (slow lane)."""

    diags: list[Diag]
    pending: list[int]  # instruction lines not in the caches


def encode_known(index: DocumentIndex, arch: str, only_lines: list[int] | None = None) -> EncodePass:
    """Encoder diagnostics for ``arch`` from the caches only (a dictionary look-up per instruction line,
    no encoder tables needed); with ``only_lines``, for those lines alone."""
    by_line = _LINE_CACHE.setdefault(arch, LruCache(400_000))
    diags: list[Diag] = []
    pending: list[int] = []
    lines = index.lines
    infos = index.infos
    for kernel in index.kernels:
        instr_lines = kernel.instr_lines
        if only_lines is not None:
            instr_lines = tuple(ln for ln in only_lines if ln in index.pcs and kernel.contains(ln))
        for line in instr_lines:
            text_line = lines[line]
            if "`(" not in text_line:
                hit = by_line.get(text_line, MISSING)
                if hit is None:
                    continue
                if hit is not MISSING:
                    col, end, message = hit  # type: ignore[misc]
                    diags.append(Diag(line, col, line, end, "error", message, "encode"))
                    continue
            if infos[line].error is None:
                pending.append(line)
    return EncodePass(diags, pending)


def encode_pending(index: DocumentIndex, adapter: EncoderAdapter, line: int) -> Diag | None:
    section = index.section_at(line)
    labels = section_label_pcs(index, section) if section is not None else {}
    text = index.instruction_text(line)
    diag = encode_line(adapter, line, text, index.pcs[line], labels, index.infos[line].text_start)
    text_line = index.lines[line]
    if "`(" not in text_line:
        by_line = _LINE_CACHE.setdefault(adapter.arch, LruCache(400_000))
        by_line.put(text_line, None if diag is None else (diag.col, diag.end_col, diag.message))
    return diag


def _encode_key(arch: str, text: str, pc: int, labels: dict[str, int]) -> object:
    if "`(" not in text:
        return (arch, text)
    targets = tuple(labels.get(name) for name in _targets(text))
    return (arch, text, tuple(None if t is None else t - pc for t in targets))


def cached_encode(adapter: EncoderAdapter, text: str, pc: int, labels: dict[str, int]) -> object:
    """The cached problem for this instruction (None when it encodes), or :data:`MISSING`."""
    return _ENCODE_CACHE.get(_encode_key(adapter.arch, text, pc, labels), MISSING)


def encode_line(
    adapter: EncoderAdapter, line: int, text: str, pc: int, labels: dict[str, int], text_col: int
) -> Diag | None:
    key = _encode_key(adapter.arch, text, pc, labels)
    problem = _ENCODE_CACHE.get(key, MISSING)
    if problem is MISSING:
        problem = adapter.check(text, pc, labels)
        _ENCODE_CACHE.put(key, problem)
    if problem is None:
        return None
    return encode_diag(adapter, line, text, problem, text_col)  # type: ignore[arg-type]


def encode_diag(adapter: EncoderAdapter, line: int, text: str, problem: EncodeProblem, text_col: int) -> Diag:
    offset = min(max(0, problem.col), max(0, len(text) - 1))
    col = text_col + offset
    end = text_col + len(text)
    if offset > 0:
        rest = text[offset:]
        stop = min((i for i in (rest.find(","), rest.find(" "), rest.find(";")) if i > 0), default=len(rest))
        end = col + stop
    message = f"this instruction cannot be encoded for {adapter.arch}: {problem.message}"
    return Diag(line, col, line, max(end, col + 1), "error", _with_hint(message, problem.hint), "encode")


def _targets(text: str) -> list[str]:
    out = []
    start = text.find("`(")
    while start >= 0:
        end = text.find(")", start)
        if end < 0:
            break
        out.append(text[start + 2 : end])
        start = text.find("`(", end)
    return out


# ----------------------------------------------------------------------------------------------- hazards

_HAZARD_CACHE = LruCache(256)


def kernel_key(index: DocumentIndex, kernel: Kernel, arch: str) -> tuple:
    sec = kernel.section
    return (arch, sec.line, tuple(index.lines[sec.line : sec.end_line]))


def check_section_lines(lines: list[str], first_line: int, arch: str) -> list[Finding]:
    """Findings for the kernel whose section is ``lines`` (starting at document line ``first_line``);
    self-contained so that it can run in a worker process. The section is checked at its own lines
    (blank lines stand in for the rest of the document), so that messages that name a line ("written by
    S2R at line 1502") name the document's line, as ``kernel_findings`` does."""
    index = build_index([""] * first_line + lines)
    out: list[Finding] = []
    for kernel in index.kernels:
        out += run_checker(kernel_module(index, kernel), arch)
    return out


def store_findings(index: DocumentIndex, kernel: Kernel, arch: str, findings: list[Finding]) -> None:
    _HAZARD_CACHE.put(kernel_key(index, kernel, arch), findings)


def cached_findings(index: DocumentIndex, kernel: Kernel, arch: str) -> list[Finding] | None:
    return _HAZARD_CACHE.get(kernel_key(index, kernel, arch))  # type: ignore[return-value]


def checker_failed(index: DocumentIndex, kernel: Kernel, exc: BaseException) -> list[Finding]:
    """The finding that stands for a check that raised on ``kernel``: on its section line, so that the
    other kernels' findings still show (one kernel's failure never costs the file its diagnostics)."""
    log.warning("hazard checker failed on kernel %s: %s: %s", kernel.name, type(exc).__name__, exc)
    log.debug("hazard checker failure", exc_info=exc)
    line = kernel.section.line
    text = index.lines[line] if line < len(index.lines) else ""
    start = len(text) - len(text.lstrip())
    message = (
        f"the hazard check failed on kernel {kernel.name} ({type(exc).__name__}: {exc}); "
        "its hazards are not shown\nhint: fix the errors reported in this kernel, or report this message"
    )
    return [Finding("check-failed", "warning", line, start, line, max(start, len(text.rstrip())), message)]


def kernel_findings(index: DocumentIndex, kernel: Kernel, arch: str) -> list[Finding]:
    key = kernel_key(index, kernel, arch)
    cached = _HAZARD_CACHE.get(key)
    if cached is None:
        try:
            cached = run_checker(kernel_module(index, kernel), arch)
        except Exception as exc:
            cached = checker_failed(index, kernel, exc)
        _HAZARD_CACHE.put(key, cached)
    return cached  # type: ignore[return-value]


def _widen(index: DocumentIndex, related: Related) -> Related:
    """Give a related location without columns the span of its instruction text."""
    info = index.info(related.line)
    if related.end_col > related.col or info is None or info.kind != "instruction":
        return related
    return Related(related.line, info.text_start, info.text_end, related.message)


def hazard_diagnostics(index: DocumentIndex, kernel: Kernel, arch: str, settings: Settings) -> list[Diag]:
    out = []
    for finding in kernel_findings(index, kernel, arch):
        severity = settings.hazardSeverities.get(finding.code, finding.severity)
        if severity == "off":
            continue
        if severity == "note":
            severity = "information"
        out.append(
            Diag(
                finding.line,
                finding.col,
                finding.end_line,
                finding.end_col,
                severity if severity in ("error", "warning", "information", "hint") else "warning",
                finding.message,
                finding.code,
                "sass-lsp hazards",
                tuple(_widen(index, r) for r in finding.related),
            )
        )
    return merge_same_range(out)


_RANK = {"error": 0, "warning": 1, "information": 2, "hint": 3}


def merge_same_range(diags: list[Diag]) -> list[Diag]:
    """One diagnostic per range: one missing wait is found once per register and rule (four findings on
    one instruction); the most severe stays and carries the others as related information."""
    groups: dict[tuple[int, int, int, int], list[Diag]] = {}
    for d in diags:
        groups.setdefault((d.line, d.col, d.end_line, d.end_col), []).append(d)
    out = []
    for group in groups.values():
        if len(group) == 1:
            out.append(group[0])
            continue
        first = min(group, key=lambda d: _RANK.get(d.severity, 1))  # min keeps the earliest of a rank
        rest = [d for d in group if d is not first]
        related = list(first.related)
        for d in rest:
            related.append(Related(d.line, d.col, d.end_col, f"{d.code}: {d.message}"))
            related += [r for r in d.related if r not in related]
        message = f"{first.message}\n(+{len(rest)} more on this instruction: see related information)"
        out.append(dataclasses.replace(first, message=message, related=tuple(related)))
    return out


def all_diagnostics(index: DocumentIndex, arch: str | None, settings: Settings) -> list[Diag]:
    """Every lane, to completion (for the ``sass-lsp.check`` command and the CLI)."""
    from sass_lsp.ide.backends import encoder_for

    out = parse_diagnostics(index)
    adapter = encoder_for(arch) if settings.encoderDiagnostics else None
    if adapter is not None:
        known = encode_known(index, adapter.arch)
        out += known.diags
        out += [d for d in (encode_pending(index, adapter, line) for line in known.pending) if d is not None]
    if arch and settings.hazardDiagnostics:
        for kernel in index.kernels:
            out += hazard_diagnostics(index, kernel, arch, settings)
    return sorted(out, key=lambda d: (d.line, d.col))
