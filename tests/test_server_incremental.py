"""The server's incremental state (in process, no transport): once a document's diagnostics are complete,
its register index is built, hover answers from it exactly what a full search of the kernel gives, and an
edit carries the index over, updated, without a rebuild."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as lsp
from paths import TRITON_CORPUS
from test_server_handlers_fuzz import call, make_server

from sass_lsp.ide import hover
from sass_lsp.ide.index import build_index
from sass_lsp.ide.lexer import line_detail
from sass_lsp.ide.registers import kernel_registers

URI = "file:///incremental/matmul.cuasm"
TEXT = (TRITON_CORPUS / "triton_matmul.cuasm").read_text()


async def settle(server) -> None:  # noqa: ANN001
    for _ in range(1000):
        tasks = [*server._diag_tasks.values(), *(t for _, t in server._view_tasks.values())]
        if tasks and all(t.done() for t in tasks):
            return
        await asyncio.sleep(0.02)


def expected_hover(text: str, line: int, col: int) -> str | None:
    """Hover from a fresh index without a register index, searching the whole kernel (no time budget)."""
    result = hover.hover(build_index(text), line, col)
    return None if result is None else result.markdown


async def hovers(server, lines: list[str], line_nos: list[int]) -> dict:  # noqa: ANN001
    out = {}
    for line in line_nos:
        for reg in line_detail(lines[line]).regs:
            params = lsp.HoverParams(lsp.TextDocumentIdentifier(URI), lsp.Position(line, reg.start))
            result = await call(server, lsp.TEXT_DOCUMENT_HOVER, params)
            out[line, reg.start] = None if result is None else result.contents.value
    return out


async def scenario(monkeypatch: pytest.MonkeyPatch) -> None:
    server = make_server()
    server.apply_settings({"policyModelPath": "/nonexistent/policy", "diagnosticsDebounceMs": 0})
    await call(
        server,
        lsp.TEXT_DOCUMENT_DID_OPEN,
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(URI, "cuasm", 1, TEXT)),
    )
    await settle(server)
    snap = server.snapshot(URI)
    (kernel,) = snap.index.kernels
    built = kernel_registers(snap.index, kernel)
    assert built is not None
    lines = TEXT.split("\n")
    probe = list(kernel.instr_lines[::25])
    got = await hovers(server, lines, probe)
    monkeypatch.setattr(hover, "HOVER_BUDGET_S", 1e9)
    assert got and got == {key: expected_hover(TEXT, *key) for key in got}
    # rename the last register operand of a line: the index is carried over and updated
    line = next(ln for ln in kernel.instr_lines if "R16" in line_detail(lines[ln]).regs[-1].name)
    reg = line_detail(lines[line]).regs[-1]
    change = lsp.TextDocumentContentChangePartial(
        range=lsp.Range(lsp.Position(line, reg.start), lsp.Position(line, reg.end)), text="R200"
    )
    await call(
        server,
        lsp.TEXT_DOCUMENT_DID_CHANGE,
        lsp.DidChangeTextDocumentParams(lsp.VersionedTextDocumentIdentifier(version=2, uri=URI), [change]),
    )
    lines[line] = lines[line][: reg.start] + "R200" + lines[line][reg.end :]
    edited = server.snapshot(URI)
    assert kernel_registers(edited.index, edited.index.kernels[0]) is not built  # updated copy
    assert kernel_registers(edited.index, edited.index.kernels[0]) is not None  # not dropped
    got = await hovers(server, lines, [line, *probe[:10]])
    assert got == {key: expected_hover("\n".join(lines), *key) for key in got}
    server.close_workers()


def test_register_hover_from_the_index_equals_a_full_search(monkeypatch: pytest.MonkeyPatch) -> None:
    asyncio.run(scenario(monkeypatch))
