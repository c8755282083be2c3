"""Text synchronisation: open, change (incremental edits), save, close."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as lsp

from sass_lsp.ide.text import Document
from sass_lsp.server.features.common import Shared
from sass_lsp.server.state import SassLanguageServer

CMD_DISASSEMBLE = "sass-lsp.disassemble"


def register(ls: SassLanguageServer, shared: Shared) -> None:
    @ls.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: lsp.DidOpenTextDocumentParams) -> None:
        item = params.text_document
        ls.docs[item.uri] = Document.from_text(item.uri, item.version, item.text)
        ls.record_edit(item.uri, None)
        shared.timing.set_original(item.uri, item.text)
        if item.uri.endswith(".cubin"):
            ls.window_show_message(
                lsp.ShowMessageParams(
                    type=lsp.MessageType.Info,
                    message=f"{Path(item.uri).name} is a cubin: run '{CMD_DISASSEMBLE}' (or its code lens) "
                    "to open its .cuasm disassembly",
                )
            )
            return
        ls.schedule_diagnostics(item.uri, 0.0)

    @ls.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: lsp.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        doc = ls.docs.get(uri)
        version = params.text_document.version
        for change in params.content_changes:
            if isinstance(change, lsp.TextDocumentContentChangePartial) and doc is not None:
                cols = ls.columns(doc)
                rng = change.range
                start = (rng.start.line, cols.from_client(rng.start.line, rng.start.character))
                end = (rng.end.line, cols.from_client(rng.end.line, rng.end.character))
                doc, edit = doc.apply_edit(start, end, change.text, version)
                ls.record_edit(uri, edit)
            else:
                doc = Document.from_text(uri, version, change.text)
                ls.record_edit(uri, None)
        if doc is not None:
            ls.docs[uri] = doc.with_version(version)
            ls.schedule_diagnostics(uri)

    @ls.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: lsp.DidSaveTextDocumentParams) -> None:
        doc = ls.docs.get(params.text_document.uri)
        text = params.text if params.text is not None else (doc.text if doc is not None else None)
        if text is not None:
            shared.timing.set_original(params.text_document.uri, text)  # the original for sass-lsp.timeEdit

    @ls.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: lsp.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)
        shared.forget(params.text_document.uri)
        ls.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[])
        )
