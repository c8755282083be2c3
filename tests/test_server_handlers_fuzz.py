"""Robustness of the handlers themselves (in process, no transport): random documents and positions
through didOpen / didChange / hover / completion / tokens / actions never raise, and diagnostics are
published for the latest version only."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types as lsp
from test_ide_fuzz import documents

from sass_lsp.server import build_server

URI = "file:///fuzz/k.cuasm"


def make_server():  # noqa: ANN201
    server = build_server()
    # no policy: a torch import and a model load per example would dominate the run (the suggestions run on
    # real files in tests/test_server_schedule.py)
    server.apply_settings({"policyModelPath": "/nonexistent/policy", "inlayStallHints": True})
    sent: list = []
    server.protocol._send_data = sent.append  # type: ignore[method-assign]
    server.sent = sent  # type: ignore[attr-defined]
    return server


def feature(server, method: str):  # noqa: ANN001, ANN201
    return server.protocol.fm.features[method]


async def call(server, method: str, params: object) -> object:  # noqa: ANN001
    """A handler's answer, awaited when the handler is a coroutine."""
    result = feature(server, method)(params)
    return await result if asyncio.iscoroutine(result) else result


async def settle(server) -> None:  # noqa: ANN001
    await asyncio.sleep(0.25)  # debounce (150 ms default)
    for _ in range(400):
        if all(t.done() for t in server._diag_tasks.values()):
            return
        await asyncio.sleep(0.02)


async def drive(text: str, positions: list[tuple[int, int]], edit: tuple[int, int, str]) -> None:
    server = make_server()
    doc = lsp.TextDocumentIdentifier(URI)
    feature(server, lsp.TEXT_DOCUMENT_DID_OPEN)(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=URI, language_id="cuasm", version=1, text=text)
        )
    )
    await settle(server)
    line, col, new = edit
    for version, (a, b) in (
        (2, (line, col)),
        (3, (line // 2, col // 2)),
    ):  # the second edit builds on the first's results
        feature(server, lsp.TEXT_DOCUMENT_DID_CHANGE)(
            lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(uri=URI, version=version),
                [
                    lsp.TextDocumentContentChangePartial(
                        range=lsp.Range(lsp.Position(a, b), lsp.Position(a, b + 3)), text=new
                    )
                ],
            )
        )
        await settle(server)
    for line, col in positions:
        pos = lsp.Position(line, col)
        feature(server, lsp.TEXT_DOCUMENT_HOVER)(lsp.HoverParams(doc, pos))
        feature(server, lsp.TEXT_DOCUMENT_COMPLETION)(lsp.CompletionParams(doc, pos))
        feature(server, lsp.TEXT_DOCUMENT_DEFINITION)(lsp.DefinitionParams(doc, pos))
        feature(server, lsp.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT)(lsp.DocumentHighlightParams(doc, pos))
        rng = lsp.Range(pos, lsp.Position(line + 2, 0))
        for trigger in lsp.CodeActionTriggerKind:  # Invoked also recomputes control codes and asks the policy
            context = lsp.CodeActionContext(diagnostics=[], trigger_kind=trigger)
            await call(server, lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionParams(doc, rng, context))
    await call(server, lsp.TEXT_DOCUMENT_CODE_LENS, lsp.CodeLensParams(doc))
    await call(
        server,
        lsp.TEXT_DOCUMENT_INLAY_HINT,
        lsp.InlayHintParams(doc, lsp.Range(lsp.Position(0, 0), lsp.Position(len(text.splitlines()) + 1, 0))),
    )
    await feature(server, lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL)(lsp.SemanticTokensParams(doc))
    feature(server, lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)(lsp.DocumentSymbolParams(doc))
    feature(server, lsp.TEXT_DOCUMENT_FOLDING_RANGE)(lsp.FoldingRangeParams(doc))
    feature(server, lsp.TEXT_DOCUMENT_FORMATTING)(
        lsp.DocumentFormattingParams(doc, lsp.FormattingOptions(tab_size=4, insert_spaces=True))
    )
    await settle(server)
    published = [
        m for m in server.sent if isinstance(m, dict) and m.get("method") == "textDocument/publishDiagnostics"
    ]
    assert published and published[-1]["params"]["version"] == 3
    # incremental results equal a fresh analysis of the final text
    final_text = "\n".join(server.docs[URI].lines)
    fresh = make_server()
    feature(fresh, lsp.TEXT_DOCUMENT_DID_OPEN)(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=URI, language_id="cuasm", version=2, text=final_text)
        )
    )
    await settle(fresh)
    fresh_published = [
        m for m in fresh.sent if isinstance(m, dict) and m.get("method") == "textDocument/publishDiagnostics"
    ]
    key = lambda d: (d["range"]["start"]["line"], d["range"]["start"]["character"], d["message"])  # noqa: E731
    assert sorted(map(key, published[-1]["params"]["diagnostics"])) == sorted(
        map(key, fresh_published[-1]["params"]["diagnostics"])
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    documents,
    st.lists(st.tuples(st.integers(0, 45), st.integers(0, 90)), min_size=1, max_size=4),
    st.tuples(st.integers(0, 45), st.integers(0, 90), st.text(max_size=5)),
)
@pytest.mark.slow
def test_handlers_never_raise(text: str, positions: list, edit: tuple) -> None:
    asyncio.run(drive(text, positions, edit))
