"""Hover: the instruction or operand under the cursor, with its kernel's stall timeline and, where a
``K.profile.json`` lies beside the file, the profile's figures for the line."""

from __future__ import annotations

from lsprotocol import types as lsp

from sass_lsp.ide import hover
from sass_lsp.server.features.common import Shared, at
from sass_lsp.server.state import SassLanguageServer, Snapshot


def register(ls: SassLanguageServer, shared: Shared) -> None:
    @ls.feature(lsp.TEXT_DOCUMENT_HOVER)
    def on_hover(params: lsp.HoverParams) -> lsp.Hover | None:
        found = at(ls, params.text_document.uri, params.position)
        if found is None:
            return None
        snap, line, col = found
        result = hover.hover(snap.index, line, col, timeline=_extra(shared, snap, line))
        if result is None:
            return None
        cols = ls.columns(snap.doc)
        return lsp.Hover(
            contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=result.markdown),
            range=cols.span(result.line, result.start, result.end),
        )


def _extra(shared: Shared, snap: Snapshot, line: int):  # noqa: ANN202 (int -> str | None)
    """The hover's extra markdown for an instruction line: stalls, then the profile's figures."""
    prof = shared.views.profile(snap)
    stalls = shared.views.timeline(snap, line)

    def extra(at: int) -> str | None:
        parts = [
            stalls.markdown(at) if stalls else None,
            prof.instruction_markdown(at) if prof else None,
        ]
        return "\n\n".join(p for p in parts if p) or None

    return extra
