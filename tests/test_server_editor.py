"""Editor-facing behaviour over stdio, the real server process with its log in a file: GPU commands without
a GPU stop at once, settings changes refresh inlay hints, one diagnostic per range, text after ';' is an
error, malformed requests are answered, and the log holds no traceback."""

from __future__ import annotations

import asyncio
import json
import os
import random
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from paths import TRITON_CORPUS
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

SOURCE = TRITON_CORPUS / "triton_add.cuasm"
LOG = Path(tempfile.mkdtemp(prefix="sass-lsp-editor-")) / "server.log"
# no GPU whatever the machine: no device is visible to the probe (and no fake worker backend)
ENV = {k: v for k, v in os.environ.items() if k != "SASS_LSP_GPU_BACKEND"} | {"CUDA_VISIBLE_DEVICES": ""}


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "sass_lsp.server", "--log-file", str(LOG)], server_env=ENV
    ),
)
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    lsp_client.root = tmp_path_factory.mktemp("ws")  # type: ignore[attr-defined]
    lsp_client.refreshed = []  # type: ignore[attr-defined]
    lsp_client.status = []  # type: ignore[attr-defined]

    @lsp_client.feature(lsp.WORKSPACE_INLAY_HINT_REFRESH)
    def _inlay_refresh(_params: None) -> None:
        lsp_client.refreshed.append("inlayHint")  # type: ignore[attr-defined]

    @lsp_client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)
    def _lens_refresh(_params: None) -> None:
        lsp_client.refreshed.append("codeLens")  # type: ignore[attr-defined]

    @lsp_client.feature("sass-lsp/status")
    def _status(*args: object) -> None:  # (client, params)
        lsp_client.status.append(args[-1])  # type: ignore[attr-defined]

    caps = client_capabilities("visual-studio-code")
    assert caps.workspace is not None
    # VS Code has sent inlayHint.refreshSupport since 1.67; pytest-lsp's captured capabilities predate it
    caps.workspace.inlay_hint = lsp.InlayHintWorkspaceClientCapabilities(refresh_support=True)
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=caps,
            root_uri=lsp_client.root.as_uri(),  # type: ignore[attr-defined]
            initialization_options={"diagnosticsDebounceMs": 20},
        )
    )
    yield
    await lsp_client.shutdown_session()


def open_text(client: LanguageClient, name: str, text: str) -> tuple[str, Path]:
    path: Path = client.root / name  # type: ignore[attr-defined]
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="cuasm", version=1, text=text)
        )
    )
    return uri, path


async def diagnostics(client: LanguageClient, uri: str, pred=lambda d: True, timeout=30.0):  # noqa: ANN001, ANN201
    """The diagnostics published for ``uri`` once ``pred`` holds for them (each test opens its own file)."""
    for _ in range(int(timeout / 0.05)):
        if uri in client.diagnostics and pred(client.diagnostics[uri]):
            return list(client.diagnostics[uri])
        await asyncio.sleep(0.05)
    raise AssertionError(f"no diagnostics for {uri} as expected within {timeout} s")


def hazards(diags: list[lsp.Diagnostic]) -> list[lsp.Diagnostic]:
    return [d for d in diags if str(d.code).startswith("SASS")]


@pytest.mark.asyncio(loop_scope="module")
async def test_optimize_without_a_gpu_stops_at_once_with_the_reason(client: LanguageClient):
    uri, _ = open_text(client, "opt.cuasm", SOURCE.read_text())
    started = time.perf_counter()
    result = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="sass-lsp.optimizeSchedule", arguments=[uri])
    )
    elapsed = time.perf_counter() - started
    assert isinstance(result, dict) and result["ok"] is False and result["verdict"] == "no_device"
    assert result["message"].startswith("Optimize schedule needs an NVIDIA GPU: ")
    assert "none was faster" not in result["message"] and result["choices"] == []
    assert elapsed < 30.0, elapsed  # at once, not ~99 s of screening that cannot run
    assert any(m.message == result["message"] for m in client.messages)
    # the status bar hears the same reason, not "not wired into the language server yet"
    for _ in range(100):
        gpu = [s.gpu for s in client.status if getattr(s, "gpu", None)]  # type: ignore[attr-defined]
        if gpu:
            break
        await asyncio.sleep(0.05)
    assert gpu and gpu[-1].available is False, client.status  # type: ignore[attr-defined]
    assert gpu[-1].reason and gpu[-1].reason in result["message"]


@pytest.mark.asyncio(loop_scope="module")
async def test_turning_inlay_stall_hints_on_asks_the_client_to_refresh(client: LanguageClient):
    text = SOURCE.read_text()
    uri, _ = open_text(client, "hints.cuasm", text)
    await diagnostics(client, uri)
    whole = lsp.Range(lsp.Position(0, 0), lsp.Position(len(text.split("\n")), 0))
    params = lsp.InlayHintParams(lsp.TextDocumentIdentifier(uri), whole)
    assert not await client.text_document_inlay_hint_async(params)  # off by default
    client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(settings={"sass-lsp": {"inlayStallHints": True}})
    )
    for _ in range(100):
        if "inlayHint" in client.refreshed:  # type: ignore[attr-defined]
            break
        await asyncio.sleep(0.05)
    assert "inlayHint" in client.refreshed  # type: ignore[attr-defined]
    assert await client.text_document_inlay_hint_async(params)  # what the refreshed client pulls: hints


def with_missing_wait() -> tuple[str, int]:
    """triton_add with one wait on a load's scoreboard dropped (analysis.mutate's drop_wait_raw) and the
    0-based line of the instruction that lost it."""
    from sass_lsp.analysis.mutate import mutations, render
    from sass_lsp.cuasm.parser import parse_cuasm
    from sass_lsp.isa.semantics import load_semantics

    text = SOURCE.read_text()
    module = parse_cuasm(text)[0]
    sem = load_semantics("sm_90")
    for sec in (s for s in module.sections if s.name.startswith(".text.")):
        for cls, items, line, _codes in mutations(sec, sem, random.Random(0)):
            if cls == "drop_wait_raw":
                return "\n".join(render(text.split("\n"), sec.items, items)), line - 1
    raise AssertionError("no drop_wait_raw mutation in triton_add")


@pytest.mark.asyncio(loop_scope="module")
async def test_one_missing_wait_is_one_diagnostic_per_range_with_the_rest_related(client: LanguageClient):
    text, line = with_missing_wait()
    uri, _ = open_text(client, "nowait.cuasm", text)
    diags = hazards(await diagnostics(client, uri, lambda d: bool(hazards(d))))
    ranges = [
        (d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character) for d in diags
    ]
    assert len(ranges) == len(set(ranges)), diags  # was 3 findings on one instruction of this kernel
    merged = [
        d
        for d in diags
        if d.related_information and any(r.message.startswith("SASS") for r in d.related_information)
    ]
    assert merged, diags
    first = merged[0]
    assert "more on this instruction" in first.message
    others = [r for r in first.related_information or [] if r.message.startswith("SASS")]
    assert all(r.location.uri == uri and r.location.range == first.range for r in others)
    assert any(d.range.start.line == line for d in diags)


@pytest.mark.asyncio(loop_scope="module")
async def test_text_after_the_semicolon_is_diagnosed_at_its_position(client: LanguageClient):
    lines = SOURCE.read_text().split("\n")
    at = next(i for i, ln in enumerate(lines) if "S2R R0, SR_TID.X ;" in ln)
    lines[at] = lines[at].replace("SR_TID.X ;", "SR_TID.X ; junk")
    uri, _ = open_text(client, "junk.cuasm", "\n".join(lines))
    diags = await diagnostics(client, uri, lambda d: any(x.range.start.line == at for x in d))
    col = lines[at].index("junk")
    hits = [d for d in diags if d.range.start.line == at and d.severity == lsp.DiagnosticSeverity.Error]
    assert len(hits) == 1, diags
    assert (hits[0].range.start.character, hits[0].range.end.character) == (col, col + len("junk"))
    assert "text after ';'" in hits[0].message


@pytest.mark.asyncio(loop_scope="module")
async def test_no_traceback_in_the_log_after_opening_and_typing_a_label(client: LanguageClient):
    """The timeline logged 'timeline failed ... zip() argument 2 is longer than argument 1' for each stretch
    without instructions: every corpus kernel has some, and typing a label above another makes one more."""
    text = SOURCE.read_text()
    lines = text.split("\n")
    uri, _ = open_text(client, "label.cuasm", text)
    await diagnostics(client, uri)
    at = next(i for i, ln in enumerate(lines) if ln.strip() == ".L_x_0:")
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [
                lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(lsp.Position(at, 0), lsp.Position(at, 0)), text="  .L_new:\n"
                )
            ],
        )
    )
    fadd = next(i for i, ln in enumerate(lines) if "FADD R12, R12, R16" in ln) + 1
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(fadd, lines[fadd - 1].index("FADD")))
    )
    assert hover is not None and "Issue timeline" in hover.contents.value  # type: ignore[union-attr]
    await asyncio.sleep(1.0)  # the background views (every stretch's timeline) of version 2
    log = LOG.read_text()
    assert "Traceback" not in log and "timeline failed" not in log, log[-3000:]


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class _RawReader:
    """JSON-RPC messages from a process's stdout, with a deadline."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.buf = b""

    def until(self, pred, timeout: float) -> dict | None:  # noqa: ANN001
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            while b"\r\n\r\n" in self.buf:
                head, rest = self.buf.split(b"\r\n\r\n", 1)
                length = int(
                    next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(
                        b":"
                    )[1]
                )
                if len(rest) < length:
                    break
                message, self.buf = json.loads(rest[:length]), rest[length:]
                if pred(message):
                    return message
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.05)
            if ready:
                self.buf += os.read(self.proc.stdout.fileno(), 1 << 16)  # type: ignore[union-attr]
        return None


def test_a_malformed_request_gets_invalid_params_and_the_server_keeps_serving(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sass_lsp.server", "--log-file", str(log)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=ENV,
    )
    reader = _RawReader(proc)

    def send(message: dict) -> None:
        proc.stdin.write(_frame(message))  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
        assert reader.until(lambda m: m.get("id") == 1, 30) is not None
        send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        uri = SOURCE.as_uri()
        doc = {"uri": uri, "languageId": "cuasm", "version": 1, "text": SOURCE.read_text()}
        send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": doc}})
        bad = {"textDocument": {"uri": uri}, "position": "x"}
        send({"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": bad})
        reply = reader.until(lambda m: m.get("id") == 2, 2.0)
        assert reply is not None, "no answer to a malformed request within 2 s"
        assert reply["error"]["code"] == lsp.ErrorCodes.InvalidParams
        assert "position" in reply["error"]["message"]
        good = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}
        send({"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover", "params": good})
        reply = reader.until(lambda m: m.get("id") == 3, 10.0)
        assert reply is not None and "error" not in reply
        assert "Traceback" not in log.read_text()
    finally:
        proc.kill()
        proc.wait()


def test_gpu_device_picks_the_worker_s_only_visible_device(monkeypatch: pytest.MonkeyPatch) -> None:
    from sass_lsp.server.gpu_check import device_env, no_gpu_reason

    assert device_env(1, {}) == {"CUDA_VISIBLE_DEVICES": "1"}
    assert device_env(1, {"CUDA_VISIBLE_DEVICES": "3, 5"}) == {"CUDA_VISIBLE_DEVICES": "5"}
    assert device_env(2, {"CUDA_VISIBLE_DEVICES": "3,5"}) == {"CUDA_VISIBLE_DEVICES": ""}
    monkeypatch.setenv("SASS_LSP_GPU_BACKEND", "fake")
    assert no_gpu_reason(0) is None  # the worker's test double needs no driver
    monkeypatch.delenv("SASS_LSP_GPU_BACKEND")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    why = no_gpu_reason(0)
    assert why is not None and ("sass-lsp[gpu]" in why or "gpuDevice 0 is not among" in why)
