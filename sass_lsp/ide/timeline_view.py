"""Feature: stall diagnostics on hover: the static issue timeline of the hovered instruction's basic block
(:func:`sass_lsp.analysis.timeline`): predicted issue cycle, cycles waited beyond the previous stall, and why.

Computed per stretch between two labels, on first use: every label starts a basic block and a block's
timeline depends on its own instructions only, so a stretch gives exactly the blocks (and issues) that the
whole kernel would, at a cost that does not grow with the kernel. Stretches are cached by their text, so
after an edit only the edited stretch is recomputed.
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections import OrderedDict
from collections.abc import Generator, Iterator, Mapping

from sass_lsp.analysis import BlockTimeline, Issue, timeline
from sass_lsp.ide.checker_input import kernel_module
from sass_lsp.ide.index import DocumentIndex, Kernel
from sass_lsp.isa.archs import UnsupportedArch
from sass_lsp.isa.semantics import load_semantics

log = logging.getLogger(__name__)

IssueAt = tuple[Issue, BlockTimeline]

MAX_CACHED_ISSUES = 60_000  # ~28 MB (~460 bytes an issue); three times a 20,000-instruction kernel


class _StretchCache:
    """(arch, section, first line, lines of the stretch) -> issues by 0-based line; least recently
    stored first out, bounded by the number of issues held (stretches differ a lot in size)."""

    def __init__(self, max_issues: int) -> None:
        self.max_issues = max_issues
        self.n_issues = 0
        self._entries: OrderedDict[tuple, dict[int, IssueAt]] = OrderedDict()
        self._lock = threading.Lock()  # hover and the server's background work may fill it

    def get(self, key: tuple) -> dict[int, IssueAt] | None:
        return self._entries.get(key)

    def put(self, key: tuple, issues: dict[int, IssueAt]) -> None:
        with self._lock:
            old = self._entries.pop(key, None)
            self.n_issues += len(issues) - (len(old) if old is not None else 0)
            self._entries[key] = issues
            while self.n_issues > self.max_issues and len(self._entries) > 1:
                _, evicted = self._entries.popitem(last=False)
                self.n_issues -= len(evicted)

    def prune(self, live: set[str], keep_recent: int) -> None:
        """Drop the stretches whose lines are no longer all in an open document (the last
        ``keep_recent`` stored stay: an undo finds them)."""
        with self._lock:
            keys = list(self._entries)
            for key in keys[: max(0, len(keys) - keep_recent)]:
                if not all(line in live for line in key[3]):
                    self.n_issues -= len(self._entries.pop(key))


_STRETCH_CACHE = _StretchCache(MAX_CACHED_ISSUES)


class KernelTimeline(Mapping[int, IssueAt]):
    """Issues of one kernel keyed by 0-based editor line, with the block each belongs to."""

    def __init__(self, index: DocumentIndex, kernel: Kernel, arch: str) -> None:
        self.index = index
        self.kernel = kernel
        self.arch = arch
        sec = kernel.section
        self._label_lines = sorted(
            d.line for defs in index.labels.values() for d in defs if sec.line < d.line < sec.end_line
        )
        self._stretches: dict[int, dict[int, IssueAt]] = {}

    @property
    def issues(self) -> Mapping[int, IssueAt]:
        return self

    def _stretch(self, line: int) -> dict[int, IssueAt]:
        """The issues of the stretch around ``line``: from its label (or the section start) to the next."""
        sec = self.kernel.section
        pos = bisect.bisect_right(self._label_lines, line)
        start = self._label_lines[pos - 1] if pos else sec.line + 1
        cached = self._stretches.get(start)
        if cached is not None:
            return cached
        end = self._label_lines[pos] if pos < len(self._label_lines) else sec.end_line
        key = (self.arch, sec.name, start, tuple(self.index.lines[start:end]))
        issues = _STRETCH_CACHE.get(key)
        if issues is None:
            module = kernel_module(self.index, self.kernel, start, end)
            try:
                blocks = timeline(module, self.arch, self.kernel.name)
            except Exception as exc:  # a model gap must never cost the user the rest of the hover
                log.warning("timeline failed for lines %d-%d: %r", start + 1, end, exc)
                log.debug("timeline failure", exc_info=True)
                blocks = []
            issues = {iss.line - 1: (iss, b) for b in blocks for iss in b.issues}
            _STRETCH_CACHE.put(key, issues)
        self._stretches[start] = issues
        return issues

    def fill_steps(self) -> Generator[None, None, None]:
        """Compute every stretch of the kernel (into the cache), yielding after each one."""
        for line in (self.kernel.section.line + 1, *self._label_lines):
            self._stretch(line)
            yield

    def __getitem__(self, line: int) -> IssueAt:
        if not self.kernel.contains(line) or line not in self.index.pcs:
            raise KeyError(line)
        return self._stretch(line)[line]

    def __iter__(self) -> Iterator[int]:
        return (line for line in self.kernel.instr_lines if line in self)

    def __len__(self) -> int:  # computes every stretch: for tests and small kernels
        return sum(1 for _ in self)

    def __bool__(self) -> bool:  # a timeline is there even before a stretch is computed (len would do all)
        return True

    def markdown(self, line: int) -> str | None:
        hit = self.get(line)
        if hit is None:
            return None
        issue, block = hit
        head = (
            f"**Issue timeline** (static model): issues at cycle {issue.cycle} of its block "
            f"(lines {block.first_line}–{block.last_line}, {block.cycles} cycles)"
        )
        wait = f"; waits **{issue.waited}** cycles beyond the previous stall" if issue.waited else ""
        reasons = "".join(f"\n- {reason}" for reason in issue.reasons)
        return head + wait + reasons


def kernel_timeline(index: DocumentIndex, line: int, arch: str) -> KernelTimeline | None:
    """The timeline of the kernel containing ``line``; None outside kernels or for arches without tables."""
    kernel = index.kernel_at(line)
    if kernel is None:
        return None
    try:
        load_semantics(arch)
    except UnsupportedArch:
        return None
    return KernelTimeline(index, kernel, arch)
