"""End to end: the real server process over stdio, driven by pytest-lsp's client with VS Code's
capabilities (results are checked against them): initialize, open a corpus file, diagnostics, hover,
code actions, apply an edit, diagnostics update, formatting, symbols, shutdown/exit.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from paths import TRITON_CORPUS
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

CORPUS = TRITON_CORPUS
HERE = Path(__file__).parent
SAMPLE = HERE / "data" / "lsp_sample.cuasm"


def sample_source() -> Path:
    add = CORPUS / "triton_add.cuasm"
    return add if add.exists() else SAMPLE


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=[sys.executable, "-m", "sass_lsp.server"]),
)
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("ws")
    lsp_client.root = root  # type: ignore[attr-defined]
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=root.as_uri(),
            initialization_options={"diagnosticsDebounceMs": 20, "inlayStallHints": True, "bogus": 1},
        )
    )
    yield
    await lsp_client.shutdown_session()


async def wait_diags(
    client: LanguageClient, uri: str, pred: Callable[[list[lsp.Diagnostic]], bool], timeout=20.0
):
    async def loop() -> list[lsp.Diagnostic]:
        while True:
            diags = list(client.diagnostics.get(uri, []))
            if uri in client.diagnostics and pred(diags):
                return diags
            await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)

    return await asyncio.wait_for(loop(), timeout)


def open_copy(client: LanguageClient, name: str, text: str | None = None) -> tuple[str, list[str]]:
    root: Path = client.root  # type: ignore[attr-defined]
    path = root / name
    if text is None:
        shutil.copy(sample_source(), path)
        text = path.read_text()
    else:
        path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="cuasm", version=1, text=text)
        )
    )
    return uri, text.split("\n")


def find_line(lines: list[str], needle: str) -> int:
    return next(i for i, line in enumerate(lines) if needle in line)


@pytest.mark.asyncio(loop_scope="module")
async def test_unknown_setting_warns(client: LanguageClient):
    await asyncio.sleep(0.2)
    assert any("bogus" in m.message for m in client.messages)


@pytest.mark.asyncio(loop_scope="module")
async def test_workspace_configuration_is_pulled(client: LanguageClient):
    client.set_configuration({"diagnosticsDebounceMs": -5, "inlayStallHints": True}, section="sass-lsp")
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    for _ in range(100):
        if any("diagnosticsDebounceMs" in m.message for m in client.messages):
            break
        await asyncio.sleep(0.05)
    assert any("diagnosticsDebounceMs" in m.message for m in client.messages)


@pytest.mark.asyncio(loop_scope="module")
async def test_open_hover_fix_and_update(client: LanguageClient):
    uri, lines = open_copy(client, "add.cuasm")
    diags = await wait_diags(client, uri, lambda d: True)
    assert not [d for d in diags if d.code == "control-field"]

    # hover on an instruction: control code in words, opcode meaning
    ldg = find_line(lines, "LDG.E.128 R16")
    col = lines[ldg].index("LDG")
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(ldg, col))
    )
    assert hover is not None
    text = hover.contents.value  # type: ignore[union-attr]
    assert "load from global memory" in text and "write scoreboard SB2" in text and "stall **4**" in text

    # hover on a register: definitions and uses
    col = lines[ldg].index("R16")
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(ldg, col + 1))
    )
    assert hover is not None and "**R16**" in hover.contents.value  # type: ignore[union-attr]

    # hover on a scoreboard digit in the wait mask of the FADD that waits on SB2
    fadd = find_line(lines, "FADD R12, R12, R16")
    col = lines[fadd].index("[B--2") + 4
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(fadd, col))
    )
    assert hover is not None and "Scoreboard SB2" in hover.contents.value  # type: ignore[union-attr]
    assert "Waits on SB2" in hover.contents.value  # type: ignore[union-attr]

    # break a control field: stall 22 -> an error diagnostic with a quick fix
    exit_line = find_line(lines, "@P1 EXIT")
    s_col = lines[exit_line].index(":S06]") + 2
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [
                lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(lsp.Position(exit_line, s_col), lsp.Position(exit_line, s_col + 2)),
                    text="22",
                )
            ],
        )
    )
    diags = await wait_diags(client, uri, lambda d: any(x.code == "control-field" for x in d))
    bad = next(d for d in diags if d.code == "control-field")
    assert bad.range.start.line == exit_line and "stall 22 > 15" in bad.message

    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            lsp.TextDocumentIdentifier(uri), bad.range, lsp.CodeActionContext(diagnostics=[bad])
        )
    )
    assert actions
    fix = next(a for a in actions if isinstance(a, lsp.CodeAction) and "S15" in a.title)
    assert fix.edit is not None and fix.edit.document_changes
    change = fix.edit.document_changes[0]
    assert isinstance(change, lsp.TextDocumentEdit) and change.text_document.version == 2
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=3),
            [lsp.TextDocumentContentChangePartial(range=e.range, text=e.new_text) for e in change.edits],  # type: ignore[union-attr]
        )
    )
    diags = await wait_diags(client, uri, lambda d: not any(x.code == "control-field" for x in d))
    assert not [d for d in diags if d.code == "control-field"]


@pytest.mark.asyncio(loop_scope="module")
async def test_encoder_diagnostic(client: LanguageClient):
    uri, lines = open_copy(client, "enc.cuasm")
    await wait_diags(client, uri, lambda d: True)
    line = find_line(lines, "IADD3 R2, R0, 0x200, RZ")
    new = lines[line].replace("IADD3 R2, R0, 0x200, RZ", "IADD3 R2, R0, 0x200")
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [
                lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(lsp.Position(line, 0), lsp.Position(line, len(lines[line]))), text=new
                )
            ],
        )
    )
    diags = await wait_diags(
        client, uri, lambda d: any(x.code == "encode" and x.range.start.line == line for x in d)
    )
    enc = next(d for d in diags if d.code == "encode" and d.range.start.line == line)
    assert enc.message.startswith("this instruction cannot be encoded for sm_90")


@pytest.mark.asyncio(loop_scope="module")
async def test_navigation_and_outline(client: LanguageClient):
    uri, lines = open_copy(client, "nav.cuasm")
    await wait_diags(client, uri, lambda d: True)
    bra = find_line(lines, "BRA `(.L_x_0)")
    col = lines[bra].index(".L_x_0")
    defs = await client.text_document_definition_async(
        lsp.DefinitionParams(lsp.TextDocumentIdentifier(uri), lsp.Position(bra, col + 2))
    )
    assert isinstance(defs, list) and defs[0].range.start.line == find_line(lines, ".L_x_0:")

    ldg = find_line(lines, "LDG.E.128 R16")
    refs = await client.text_document_references_async(
        lsp.ReferenceParams(
            text_document=lsp.TextDocumentIdentifier(uri),
            position=lsp.Position(ldg, lines[ldg].index("R16") + 1),
            context=lsp.ReferenceContext(include_declaration=True),
        )
    )
    assert refs is not None and len(refs) >= 2

    symbols = await client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(uri))
    )
    names = [s.name for s in symbols or []]  # type: ignore[union-attr]
    assert ".text.add_kernel" in names

    folds = await client.text_document_folding_range_async(
        lsp.FoldingRangeParams(lsp.TextDocumentIdentifier(uri))
    )
    assert folds and len(folds) > 5

    tokens = await client.text_document_semantic_tokens_full_async(
        lsp.SemanticTokensParams(lsp.TextDocumentIdentifier(uri))
    )
    assert tokens is not None and len(tokens.data) > 1000

    lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri)))
    assert lenses and any("instructions" in (lens.command.title if lens.command else "") for lens in lenses)

    hints = await client.text_document_inlay_hint_async(
        lsp.InlayHintParams(
            lsp.TextDocumentIdentifier(uri), lsp.Range(lsp.Position(0, 0), lsp.Position(len(lines), 0))
        )
    )
    assert hints and any("cy" in str(h.label) for h in hints)

    completion = await client.text_document_completion_async(
        lsp.CompletionParams(lsp.TextDocumentIdentifier(uri), lsp.Position(ldg, lines[ldg].index("LDG") + 1))
    )
    labels = [i.label for i in completion.items]  # type: ignore[union-attr]
    assert "LDG" in labels and "FFMA" in labels

    edits = await client.text_document_formatting_async(
        lsp.DocumentFormattingParams(
            lsp.TextDocumentIdentifier(uri), lsp.FormattingOptions(tab_size=4, insert_spaces=True)
        )
    )
    assert not edits  # CuAssembler's own output is already formatted


@pytest.mark.asyncio(loop_scope="module")
async def test_garbage_document_and_bad_request(client: LanguageClient):
    uri, _ = open_copy(
        client,
        "garbage.cuasm",
        "\x00\x0c[[[ ]\r\n\u2028@@ .section\n[B0:\n\U0001f600 [B------:R-:W-:-:S01] NOP ;",
    )
    diags = await wait_diags(client, uri, lambda d: True)
    assert diags
    # a request beyond the end of the document answers normally
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(999, 999))
    )
    assert hover is None
    # a failing request answers with an LSP error, and the next request works
    with pytest.raises(Exception):  # noqa: B017 - any JSON-RPC error
        await client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command="sass-lsp.assemble", arguments=[])
        )
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(0, 0))
    )
    assert hover is None or hover.contents


@pytest.mark.asyncio(loop_scope="module")
async def test_disassemble_and_assemble_commands(client: LanguageClient):
    root: Path = client.root  # type: ignore[attr-defined]
    cubin = CORPUS / "triton_add.cubin"
    if not cubin.exists():
        pytest.skip("corpus cubin missing")
    target = root / "k.cubin"
    shutil.copy(cubin, target)
    # opening a .cubin offers its disassembly (code lens running sass-lsp.disassemble)
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=target.as_uri(), language_id="cubin", version=1, text="")
        )
    )
    lenses = await client.text_document_code_lens_async(
        lsp.CodeLensParams(lsp.TextDocumentIdentifier(target.as_uri()))
    )
    assert lenses and lenses[0].command and lenses[0].command.command == "sass-lsp.disassemble"
    result = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="sass-lsp.disassemble", arguments=[target.as_uri()])
    )
    cuasm = root / "k.cuasm"
    assert result == cuasm.as_uri() and cuasm.exists()
    assert any(reports for reports in client.progress_reports.values())  # $/progress was reported

    # check: every lane to completion, summarised
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=cuasm.as_uri(), language_id="cuasm", version=1, text=cuasm.read_text())
        )
    )
    result = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="sass-lsp.check", arguments=[cuasm.as_uri()])
    )
    assert "error(s)" in result["message"] and "sm_90" in result["message"]

    # assemble the disassembly back: byte-identical cubin, written beside it
    text = cuasm.read_text()
    target.unlink()
    result = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="sass-lsp.assemble", arguments=[cuasm.as_uri()])
    )
    assert result["ok"], result
    assert target.read_bytes() == cubin.read_bytes()

    # an instruction the encoder rejects: no cubin, the errors become diagnostics
    broken = text.replace("IADD3 R2, R0, 0x200, RZ", "IADD3 R2, R0, 0x200", 1)
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=cuasm.as_uri(), version=2),
            [lsp.TextDocumentContentChangeWholeDocument(text=broken)],
        )
    )
    target.unlink()
    result = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="sass-lsp.assemble", arguments=[cuasm.as_uri()])
    )
    assert not result["ok"] and not target.exists()
    diags = await wait_diags(client, cuasm.as_uri(), lambda d: any(x.code == "assemble" for x in d))
    assert any(d.source == "sass-lsp assemble" for d in diags)
