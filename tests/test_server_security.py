"""File safety of the server's commands over a real LSP client (pytest-lsp, VS Code's capabilities): every
command that writes a file (``sass-lsp.disassemble``: K.cuasm; ``sass-lsp.assemble``: K.cubin) writes only
beside its document, replaces an existing file only when the user answers "Overwrite" to
``window/showMessageRequest`` (Cancel or dismissing it: the file is unchanged), and for an untitled
document or a bare path writes nothing, in the server's working directory least of all.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from paths import TRITON_CORPUS
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

CUBIN = TRITON_CORPUS / "triton_add.cubin"
CUASM = TRITON_CORPUS / "triton_add.cuasm"
SERVER_CWD = Path(tempfile.mkdtemp(prefix="sass-lsp-cwd-"))  # where an untitled write would have landed
START = f"import os, sys; os.chdir({str(SERVER_CWD)!r}); from sass_lsp.server import main; sys.exit(main())"


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=[sys.executable, "-c", START]))
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    lsp_client.root = tmp_path_factory.mktemp("ws")  # type: ignore[attr-defined]
    lsp_client.answer = None  # type: ignore[attr-defined]  # the title the "user" clicks, None: dismissed
    lsp_client.asked = []  # type: ignore[attr-defined]

    @lsp_client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
    def _ask(params: lsp.ShowMessageRequestParams) -> lsp.MessageActionItem | None:
        lsp_client.asked.append(params)  # type: ignore[attr-defined]
        answer = lsp_client.answer  # type: ignore[attr-defined]
        return None if answer is None else lsp.MessageActionItem(title=answer)

    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=lsp_client.root.as_uri(),  # type: ignore[attr-defined]
            initialization_options={"diagnosticsDebounceMs": 20},
        )
    )
    yield
    await lsp_client.shutdown_session()
    shutil.rmtree(SERVER_CWD, ignore_errors=True)


def user_answers(client: LanguageClient, answer: str | None) -> None:
    client.answer = answer  # type: ignore[attr-defined]
    client.asked.clear()  # type: ignore[attr-defined]


def asked(client: LanguageClient) -> list[lsp.ShowMessageRequestParams]:
    return client.asked  # type: ignore[attr-defined]


async def execute(client: LanguageClient, command: str, *arguments: object) -> object:
    return await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=command, arguments=list(arguments))
    )


def open_doc(client: LanguageClient, uri: str, text: str) -> None:
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="cuasm", version=1, text=text)
        )
    )


@pytest.mark.asyncio(loop_scope="module")
async def test_disassemble_asks_before_replacing_an_edited_cuasm(client: LanguageClient):
    root: Path = client.root  # type: ignore[attr-defined]
    cubin = root / "k.cubin"
    shutil.copy(CUBIN, cubin)
    cuasm = root / "k.cuasm"
    cuasm.write_text("// my edits\n")

    for answer in ("Cancel", None):  # Cancel, or the message dismissed: the edits stay
        user_answers(client, answer)
        result = await execute(client, "sass-lsp.disassemble", cubin.as_uri())
        assert cuasm.read_text() == "// my edits\n"
        assert "left as it is" in str(result)
        [request] = asked(client)
        assert "k.cuasm" in request.message and "Overwrite" in request.message
        assert [a.title for a in request.actions or []] == ["Overwrite", "Cancel"]

    user_answers(client, "Overwrite")
    result = await execute(client, "sass-lsp.disassemble", cubin.as_uri())
    assert result == cuasm.as_uri() and len(asked(client)) == 1
    assert "// my edits" not in cuasm.read_text() and "IADD3" in cuasm.read_text()

    # a new target is written without a question
    cuasm.unlink()
    user_answers(client, None)
    assert await execute(client, "sass-lsp.disassemble", cubin.as_uri()) == cuasm.as_uri()
    assert "IADD3" in cuasm.read_text() and not asked(client)


@pytest.mark.asyncio(loop_scope="module")
async def test_assemble_asks_before_replacing_a_cubin(client: LanguageClient):
    root: Path = client.root  # type: ignore[attr-defined]
    source = root / "a.cuasm"
    shutil.copy(CUASM, source)
    open_doc(client, source.as_uri(), source.read_text())
    target = root / "a.cubin"
    target.write_bytes(b"an older build")

    for answer in ("Cancel", None):
        user_answers(client, answer)
        result = await execute(client, "sass-lsp.assemble", source.as_uri())
        assert target.read_bytes() == b"an older build"
        assert result["written"] is False and "a.cubin" in result["message"]  # type: ignore[index]
        assert len(asked(client)) == 1 and "a.cubin" in asked(client)[0].message

    user_answers(client, "Overwrite")
    result = await execute(client, "sass-lsp.assemble", source.as_uri())
    assert result["ok"] and result["cubin"] == target.as_uri()  # type: ignore[index]
    assert target.read_bytes().startswith(b"\x7fELF")

    target.unlink()
    user_answers(client, None)
    result = await execute(client, "sass-lsp.assemble", source.as_uri())
    assert result["ok"] and target.read_bytes().startswith(b"\x7fELF") and not asked(client)  # type: ignore[index]


@pytest.mark.asyncio(loop_scope="module")
async def test_untitled_documents_and_bare_paths_write_nothing(client: LanguageClient):
    user_answers(client, "Overwrite")
    open_doc(client, "untitled:Untitled-1", CUASM.read_text())
    result = await execute(client, "sass-lsp.assemble", "untitled:Untitled-1")
    assert result["ok"] is False and result["verdict"] == "unsaved"  # type: ignore[index]
    assert "Untitled-1 is not saved" in result["message"]  # type: ignore[index]

    # a path instead of a URI would resolve against the server's working directory: refused
    shutil.copy(CUBIN, SERVER_CWD / "k.cubin")
    with pytest.raises(Exception, match="not a file"):  # noqa: B017 - the JSON-RPC error
        await execute(client, "sass-lsp.disassemble", "k.cubin")
    assert sorted(p.name for p in SERVER_CWD.iterdir()) == ["k.cubin"]
    assert not asked(client)
