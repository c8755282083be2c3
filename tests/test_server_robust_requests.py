"""Every request answered on a large document, in time or with an LSP error; a request whose document changes
before it is answered gets ``ContentModified`` (issue #39)."""

from __future__ import annotations

import asyncio
import importlib.util
import time
from pathlib import Path

import pytest
from lsp_stdio import CORPUS, REQUESTS, StdioClient, request_params, tracebacks
from lsprotocol import types as lsp
from test_server_handlers_fuzz import make_server

from sass_lsp.server import state

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("server_latency", ROOT / "benchmarks" / "server_latency.py")
assert _spec is not None and _spec.loader is not None
server_latency = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(server_latency)

URI = "file:///robust/big.cuasm"
METHODS = [*REQUESTS, "textDocument/formatting", "textDocument/semanticTokens/range"]


@pytest.fixture(scope="module")
def big_text() -> str:
    return server_latency.generate(CORPUS / "triton_matmul.cuasm", 5000)


@pytest.mark.slow
def test_every_request_type_is_answered_on_a_5k_instruction_file(big_text: str, tmp_path: Path) -> None:
    lines = big_text.split("\n")
    instr = [i for i, line in enumerate(lines) if line.lstrip().startswith("[B")]
    assert len(instr) >= 5000
    log_file = tmp_path / "server.log"
    client = StdioClient(log_file, {"policyModelPath": "/nonexistent/policy", "diagnosticsDebounceMs": 20})
    try:
        client.open(URI, big_text)
        client.settled_diagnostics(URI, 1, quiet_s=1.0, timeout=120)
        slow = {}
        for k, method in enumerate(METHODS):
            line = instr[(k * 997) % len(instr)]
            reply = client.request(method, request_params(method, URI, line, 30, len(lines)), timeout=30)
            assert reply.error is None, (method, reply.error)
            if reply.seconds > state.REQUEST_DEADLINE_S + 1.0:  # the deadline plus the way through the pipe
                slow[method] = reply.seconds
        assert not slow
        # right after an edit, while its diagnostics run: answered all the same
        line = instr[len(instr) // 2]
        col = lines[line].index(":S") + 3
        for k, method in enumerate(METHODS):
            at = {"start": {"line": line, "character": col}, "end": {"line": line, "character": col + 1}}
            client.change(URI, k + 2, [{"range": at, "text": str(k % 9 + 1)}])
            params = request_params(method, URI, instr[k * 31], 30, len(lines))
            reply = client.request(method, params, timeout=30)
            assert reply.error is None or reply.error["code"] == lsp.LSPErrorCodes.ContentModified, (
                reply.error
            )
    finally:
        client.shutdown()
    assert tracebacks(log_file) == []


def _send(server, message: dict) -> None:  # noqa: ANN001
    server.protocol.handle_message(server.protocol.structure_message(message))


def _answers(server) -> dict:  # noqa: ANN001
    return {m.id: m for m in server.sent if getattr(m, "id", None) is not None}


async def _stale_and_overdue(text: str) -> dict:
    server = make_server()
    item = {"uri": URI, "languageId": "cuasm", "version": 1, "text": text}
    _send(server, {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": item}})
    await asyncio.sleep(0.2)
    tokens = {"textDocument": {"uri": URI}}
    # 1: asked, then the document changes before the (time-sliced) answer is ready
    _send(server, {"jsonrpc": "2.0", "id": 1, "method": "textDocument/semanticTokens/full", "params": tokens})
    change = {
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "text": "\n",
    }
    doc = {"uri": URI, "version": 2}
    _send(
        server,
        {
            "jsonrpc": "2.0",
            "method": "textDocument/didChange",
            "params": {"textDocument": doc, "contentChanges": [change]},
        },
    )
    # 2: the same request on the current version is answered with tokens
    _send(server, {"jsonrpc": "2.0", "id": 2, "method": "textDocument/semanticTokens/full", "params": tokens})
    # 3: cancelled by the client ($/cancelRequest)
    _send(server, {"jsonrpc": "2.0", "id": 3, "method": "textDocument/semanticTokens/full", "params": tokens})
    _send(server, {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 3}})
    for _ in range(500):
        await asyncio.sleep(0.01)
        if {1, 2, 3} <= set(_answers(server)):
            break
    # 4: past the deadline (made 0 s here): an error, not silence
    state.REQUEST_DEADLINE_S = 0.0
    lens = {"textDocument": {"uri": URI}}
    _send(server, {"jsonrpc": "2.0", "id": 4, "method": "textDocument/codeLens", "params": lens})
    for _ in range(500):
        await asyncio.sleep(0.01)
        if 4 in _answers(server):
            break
    assert not server.protocol._request_futures and not server.protocol._doc_requests
    return _answers(server)


def test_stale_requests_get_content_modified_and_overdue_ones_an_error(
    big_text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state, "REQUEST_DEADLINE_S", state.REQUEST_DEADLINE_S)  # restored afterwards
    started = time.perf_counter()
    answers = asyncio.run(_stale_and_overdue(big_text))
    assert answers[1].error.code == lsp.LSPErrorCodes.ContentModified
    assert getattr(answers[2], "error", None) is None and len(answers[2].result.data) > 5 * 5000
    assert answers[3].error.code == lsp.LSPErrorCodes.RequestCancelled
    assert answers[4].error.code == lsp.LSPErrorCodes.RequestFailed
    assert time.perf_counter() - started < 60
