"""Feature: reorder suggestions from the trained policy (:mod:`sass_lsp.policy.suggest`) in editor terms:
one code action per suggestion (its whole edit in one ``WorkspaceEdit``: one click, one undo), labelled with
the performance model's predicted gain and interval, a "Time this suggestion on the GPU" action beside each,
"Search for a faster schedule on the GPU" where nothing is predicted faster, and the JSON the
``sass-lsp.suggestReorders`` command returns.

Architecture Invariant: no torch here, and no IO. The server (an edge, :mod:`sass_lsp.server.suggestions`)
loads the policy and runs it; this module gets its :class:`Suggestion` s as plain values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sass_lsp.ide.actions import CodeAction
from sass_lsp.ide.gpu_timing import CMD_OPTIMIZE, CMD_TIME_EDIT
from sass_lsp.ide.index import DocumentIndex
from sass_lsp.ide.schedule_view import replace_lines

CMD_SUGGEST = "sass-lsp.suggestReorders"
TIME_TITLE = "Time this suggestion on the GPU"
Prediction = tuple[float, float, float]  # predicted speedup, and its central 90% interval (low, high)
PREDICTION_KEYS = ("speedup", "low", "high")
LineEdits = tuple[tuple[int, int, tuple[str, ...]], ...]  # (first, last) 1-based inclusive, new lines


@dataclass(frozen=True)
class SuggestionView:
    """One :class:`sass_lsp.policy.suggest.Suggestion`, detached from torch."""

    kernel: str
    title: str
    moves: tuple[str, ...]
    predicted_gain: float
    cost_before: float
    cost_after: float
    edits: LineEdits
    prediction: Prediction | None = None  # None: ranked by the static cost model

    @property
    def detail(self) -> str:
        """The prediction and the moves (two suggestions can share a title, never their moves), and a
        warning: no reordering is trusted before the GPU has verified it (README "Reordering")."""
        moves = "; ".join(self.moves[:3]) + (f"; +{len(self.moves) - 3} more" if len(self.moves) > 3 else "")
        figures = f"cost model {self.cost_before:,.0f} → {self.cost_after:,.0f} cycles"
        if self.prediction is not None:
            speedup, low, high = self.prediction
            figures = f"predicted {speedup:.3f}× (90%: {low:.3f}–{high:.3f}), {PREDICTED} · {figures}"
        return f"{self.kernel}: {figures} · {moves} · {UNVERIFIED}"


PREDICTED = "predicted, not measured"
UNVERIFIED = "not verified: time it on the GPU before trusting it"
SEARCH_TITLE = "Search for a faster schedule on the GPU"


def view(s: Any) -> SuggestionView:
    return SuggestionView(
        str(s.kernel),
        str(s.title),
        tuple(str(m) for m in s.moves),
        float(s.predicted_gain),
        float(s.cost_before),
        float(s.cost_after),
        tuple((int(a), int(b), tuple(str(x) for x in new)) for a, b, new in s.edits),
        _prediction(getattr(s, "prediction", None)),
    )


def _prediction(p: Any) -> Prediction | None:
    return None if p is None else (float(p.speedup), float(p.low), float(p.high))


# ------------------------------------------------------------------------------------------- the policy


def policy_path(setting: str | None, workspace_root: str | None = None) -> Path | None:
    """The checkpoint the setting names (relative paths from the workspace root); None when it is unset (the
    server then loads the default: :func:`sass_lsp.policy.checkpoint.default_policy_path`)."""
    if setting:
        path = Path(setting).expanduser()
        if not path.is_absolute() and workspace_root:
            path = Path(workspace_root) / path
        return path
    return None


# ------------------------------------------------------------------------------------------- editor terms


def line_edits(index: DocumentIndex, s: SuggestionView, eol: str = "\n") -> tuple:
    return tuple(replace_lines(index.lines, a, b, list(new), eol) for a, b, new in sorted(s.edits))


def text_edits(index: DocumentIndex, new_text: str, eol: str = "\n") -> tuple:
    """The edit turning the document into ``new_text`` (a reordering: same number of lines): one
    replacement from the first to the last line that differs."""
    old, new = index.lines, new_text.split(eol)
    if len(new) != len(old):
        raise ValueError("expected a reordering: the same number of lines")
    changed = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
    if not changed:
        return ()
    first, last = changed[0], changed[-1]
    return (replace_lines(old, first + 1, last + 1, new[first : last + 1], eol),)


def time_arguments(version: int, s: SuggestionView) -> dict[str, Any]:
    """The second argument of ``sass-lsp.timeEdit`` for a suggestion: the edit to time."""
    return {
        "version": version,
        "title": s.title,
        "kernel": s.kernel,
        "edits": [[a, b, list(new)] for a, b, new in s.edits],
    }


def suggestion_actions(
    index: DocumentIndex,
    suggestions: Sequence[SuggestionView],
    uri: str,
    version: int,
    eol: str = "\n",
    timing: bool = True,
) -> list[CodeAction]:
    """Per suggestion: the reorder (all its edits in one action) and, with ``timing``, its GPU timing."""
    out: list[CodeAction] = []
    for s in suggestions:
        out.append(CodeAction(s.title, "refactor.rewrite", line_edits(index, s, eol)))
        if timing:
            out.append(
                CodeAction(
                    f"{TIME_TITLE}: {s.title}",
                    "refactor.rewrite",
                    (),
                    command=CMD_TIME_EDIT,
                    arguments=(uri, time_arguments(version, s)),
                )
            )
    return out


def search_action(uri: str, budget_s: float) -> CodeAction:
    """Where nothing is predicted faster: ``sass-lsp.optimizeSchedule`` (the GPU search, ``budget_s`` GPU
    seconds), asked to offer its verified schedule as an edit to apply when it finds one."""
    return CodeAction(
        f"{SEARCH_TITLE} ({budget_s:.0f} s)",
        "refactor.rewrite",
        (),
        command=CMD_OPTIMIZE,
        arguments=(uri, {"offer": True}),
    )


def parse_time_arguments(raw: Any) -> tuple[int, str, LineEdits]:
    """(version, title, edits) from :func:`time_arguments`'s JSON; ValueError when it is not that."""
    try:
        version = int(raw["version"])
        title = str(raw.get("title") or "the suggestion")
        edits = tuple((int(a), int(b), tuple(str(x) for x in new)) for a, b, new in raw["edits"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"expected {{version, title, edits}} for a suggestion, got {raw!r}") from exc
    return version, title, edits


def apply_line_edits(lines: Sequence[str], edits: LineEdits) -> list[str]:
    """``lines`` with each (first, last, new) applied; edits must not overlap."""
    out = list(lines)
    prev_first = len(out) + 1
    for first, last, new in sorted(edits, reverse=True):
        if not 1 <= first <= last + 1 <= len(out) + 1 or last >= prev_first:
            raise ValueError(f"bad or overlapping line range {first}–{last}")
        out[first - 1 : last] = list(new)
        prev_first = first
    return out


def summary_json(s: SuggestionView) -> dict[str, Any]:
    """The suggestion for ``sass-lsp.suggestReorders`` (the server adds ``edit``, an LSP WorkspaceEdit)."""
    return {
        "title": s.title,
        "detail": s.detail,
        "kernel": s.kernel,
        "moves": list(s.moves),
        "predicted_gain": s.predicted_gain,
        "cost_before": s.cost_before,
        "cost_after": s.cost_after,
        "prediction": None if s.prediction is None else dict(zip(PREDICTION_KEYS, s.prediction, strict=True)),
        "measured": False,
    }
