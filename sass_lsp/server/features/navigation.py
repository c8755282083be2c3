"""Reading a document: definition, references, highlights, outline (symbols) and folding."""

from __future__ import annotations

from lsprotocol import types as lsp

from sass_lsp.ide import navigation, outline
from sass_lsp.server import convert
from sass_lsp.server.features.common import Shared, at
from sass_lsp.server.state import SassLanguageServer


def register(ls: SassLanguageServer, _shared: Shared) -> None:
    @ls.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def on_definition(params: lsp.DefinitionParams) -> list[lsp.Location]:
        found = at(ls, params.text_document.uri, params.position)
        if found is None:
            return []
        snap, line, col = found
        cols = ls.columns(snap.doc)
        return [
            lsp.Location(uri=snap.uri, range=cols.span(s.line, s.start, s.end))
            for s in navigation.definition(snap.index, line, col)
        ]

    @ls.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    def on_references(params: lsp.ReferenceParams) -> list[lsp.Location]:
        found = at(ls, params.text_document.uri, params.position)
        if found is None:
            return []
        snap, line, col = found
        cols = ls.columns(snap.doc)
        spans = navigation.references(snap.index, line, col, params.context.include_declaration)
        return [lsp.Location(uri=snap.uri, range=cols.span(s.line, s.start, s.end)) for s in spans]

    @ls.feature(lsp.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT)
    def on_highlight(params: lsp.DocumentHighlightParams) -> list[lsp.DocumentHighlight]:
        found = at(ls, params.text_document.uri, params.position)
        if found is None:
            return []
        snap, line, col = found
        cols = ls.columns(snap.doc)
        return [
            lsp.DocumentHighlight(
                range=cols.span(o.line, o.start, o.end),
                kind=lsp.DocumentHighlightKind.Write if o.is_def else lsp.DocumentHighlightKind.Read,
            )
            for o in navigation.highlights(snap.index, line, col)
        ]

    @ls.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def on_symbols(params: lsp.DocumentSymbolParams) -> list[lsp.DocumentSymbol]:
        snap = ls.snapshot(params.text_document.uri)
        if snap is None:
            return []
        cols = ls.columns(snap.doc)
        return [convert.to_lsp_symbol(s, cols) for s in outline.document_symbols(snap.index)]

    @ls.feature(lsp.TEXT_DOCUMENT_FOLDING_RANGE)
    def on_folding(params: lsp.FoldingRangeParams) -> list[lsp.FoldingRange]:
        snap = ls.snapshot(params.text_document.uri)
        return [] if snap is None else [convert.to_lsp_fold(f) for f in outline.folding_ranges(snap.index)]
