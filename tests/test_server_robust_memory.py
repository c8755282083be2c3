"""Bounded server memory (issues #39, #40, #36 item 5): what one edit leaves behind is freed, and closing a
document frees its state."""

from __future__ import annotations

import asyncio

from lsp_stdio import CORPUS
from test_server_handlers_fuzz import make_server

MATMUL = (CORPUS / "triton_matmul.cuasm").read_text()
URI = "file:///robust/matmul.cuasm"


def _message(method: str, params: dict) -> dict:
    return {"jsonrpc": "2.0", "method": method, "params": params}


async def _notifications_leave_nothing(n_edits: int) -> dict:
    server = make_server()
    protocol = server.protocol

    def send(message: dict) -> None:  # as pygls reads it off the wire
        protocol.handle_message(protocol.structure_message(message))

    item = {"uri": URI, "languageId": "cuasm", "version": 1, "text": MATMUL}
    send(_message("textDocument/didOpen", {"textDocument": item}))
    line_no, line = next((i, ln) for i, ln in enumerate(MATMUL.split("\n")) if "R2," in ln)
    col = line.index("R2,") + 1
    at = {"start": {"line": line_no, "character": col}, "end": {"line": line_no, "character": col + 1}}
    for i in range(n_edits):
        doc = {"uri": URI, "version": i + 2}
        send(
            _message(
                "textDocument/didChange",
                {"textDocument": doc, "contentChanges": [{"range": at, "text": str(i % 2 + 2)}]},
            )
        )
        await asyncio.sleep(0)
    await asyncio.sleep(0.05)
    left = dict(protocol._request_futures)
    send(_message("textDocument/didClose", {"textDocument": {"uri": URI}}))
    await asyncio.sleep(0.05)
    assert URI not in server.docs and URI not in server._snapshots
    return left | dict(protocol._request_futures)


def test_document_notifications_leave_no_future_behind() -> None:
    # pygls 2.1 filed a Future per generator-handled notification (didOpen/didChange/didClose) and never
    # removed it: ~2 MB per 1,000 edits that no cache pruning could reach
    assert asyncio.run(_notifications_leave_nothing(200)) == {}


async def _failed_policy_tracebacks(n_versions: int) -> list[int]:
    from lsprotocol import types as lsp

    from sass_lsp.server.suggestions import SuggestionJobs

    server = make_server()
    server.protocol._workspace = server.protocol._workspace or _workspace()
    jobs = SuggestionJobs(server)
    doc = lsp.TextDocumentItem(uri=URI, language_id="cuasm", version=1, text=MATMUL)
    server.protocol.fm.features[lsp.TEXT_DOCUMENT_DID_OPEN](lsp.DidOpenTextDocumentParams(doc))
    depths = []
    for version in range(2, 2 + n_versions):
        server.docs[URI] = server.docs[URI].apply((0, 0), (0, 0), " ", version)
        snap = server.snapshot(URI)
        assert await jobs.get(snap, None, timeout=None) is None  # no policy: no suggestions, said once
        (failure,) = jobs._models.values()
        tb, depth = failure.__traceback__, 0
        while tb is not None:
            tb, depth = tb.tb_next, depth + 1
        depths.append(depth)
    return depths


def _workspace():  # noqa: ANN202
    from pygls.workspace import Workspace

    return Workspace(None)


def test_a_missing_policy_raised_again_keeps_no_old_frames() -> None:
    # the stored PolicyUnavailable was raised again for every version: its traceback grew by the frames of
    # each request, which held that version's snapshot (~70 kB per code-action request without a policy)
    depths = asyncio.run(_failed_policy_tracebacks(6))
    assert depths[-1] == depths[1], depths
