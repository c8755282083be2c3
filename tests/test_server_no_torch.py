"""Without the [policy] extra (torch, gymnasium, safetensors) the server starts and answers everything;
reorder suggestions are off with one clear message naming the extra, and ``sass-lsp.suggestReorders`` says
why. ``tests/no_torch`` first on PYTHONPATH makes those imports fail in the server process exactly as they do
where they are not installed."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from paths import TRITON_CORPUS
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

HERE = Path(__file__).parent
SOURCE = TRITON_CORPUS / "triton_add.cuasm"
PYTHONPATH = os.pathsep.join(p for p in (str(HERE / "no_torch"), os.environ.get("PYTHONPATH")) if p)


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "sass_lsp.server"],
        server_env={**os.environ, "PYTHONPATH": PYTHONPATH},
    ),
)
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("notorch")
    lsp_client.root = root  # type: ignore[attr-defined]
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=root.as_uri(),
            # no policyModelPath: the bundled checkpoint exists, so the server gets as far as importing torch
            initialization_options={"diagnosticsDebounceMs": 20},
        )
    )
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio(loop_scope="module")
async def test_no_torch_no_suggestions_one_message_everything_else_works(client: LanguageClient):
    path = client.root / "k.cuasm"  # type: ignore[attr-defined]
    shutil.copy(SOURCE, path)
    text = path.read_text()
    lines = text.split("\n")
    uri = path.as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="cuasm", version=1, text=text)
        )
    )
    fadd = next(i for i, ln in enumerate(lines) if "FADD R12, R12, R16" in ln)
    for _ in range(2):
        found = await client.text_document_code_action_async(
            lsp.CodeActionParams(
                lsp.TextDocumentIdentifier(uri),
                lsp.Range(lsp.Position(fadd, 0), lsp.Position(fadd, 0)),
                lsp.CodeActionContext(diagnostics=[], trigger_kind=lsp.CodeActionTriggerKind.Invoked),
            )
        )
        assert not [a for a in found or [] if a.title.startswith("Reorder")]
    said = [m.message for m in client.messages if "the reorder policy needs" in m.message]
    assert len(said) == 1 and "pip install 'sass-lsp[policy]'" in said[0], client.messages
    result = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="sass-lsp.suggestReorders", arguments=[uri])
    )
    assert result["ok"] is False and result["message"] == said[0]
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(fadd, lines[fadd].index("FADD")))
    )
    assert hover is not None and "Issue timeline" in hover.contents.value  # type: ignore[union-attr]
    lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri)))
    assert any(lens.command and lens.command.title.startswith("hottest block") for lens in lenses or [])
