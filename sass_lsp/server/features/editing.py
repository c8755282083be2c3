"""Writing a document: completion and formatting (whole document or a range)."""

from __future__ import annotations

from lsprotocol import types as lsp

from sass_lsp.ide import editing
from sass_lsp.ide.backends import encoder_for
from sass_lsp.server import convert
from sass_lsp.server.features.common import Shared, at
from sass_lsp.server.state import SassLanguageServer

TRIGGERS = lsp.CompletionOptions(trigger_characters=[".", "[", "(", " "])


def register(ls: SassLanguageServer, _shared: Shared) -> None:
    @ls.feature(lsp.TEXT_DOCUMENT_COMPLETION, TRIGGERS)
    def on_completion(params: lsp.CompletionParams) -> lsp.CompletionList:
        found = at(ls, params.text_document.uri, params.position)
        if found is None:
            return lsp.CompletionList(is_incomplete=False, items=[])
        snap, line, col = found
        items = editing.completions(snap.index, line, col, encoder_for(snap.arch))
        return lsp.CompletionList(is_incomplete=False, items=[convert.to_lsp_completion(i) for i in items])

    @ls.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    def on_format(params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit]:
        snap = ls.snapshot(params.text_document.uri)
        if snap is None:
            return []
        cols = ls.columns(snap.doc)
        edits = editing.format_edits(snap.index, renumber=ls.settings.formatRenumberAddresses)
        return [convert.to_lsp_text_edit(e, cols) for e in edits]

    @ls.feature(lsp.TEXT_DOCUMENT_RANGE_FORMATTING)
    def on_range_format(params: lsp.DocumentRangeFormattingParams) -> list[lsp.TextEdit]:
        snap = ls.snapshot(params.text_document.uri)
        if snap is None:
            return []
        cols = ls.columns(snap.doc)
        rng = params.range
        edits = editing.format_edits(
            snap.index, rng.start.line, rng.end.line, ls.settings.formatRenumberAddresses
        )
        return [convert.to_lsp_text_edit(e, cols) for e in edits]
