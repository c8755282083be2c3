"""``sass-lsp.timeEdit`` and profile import over stdio: the real server process with
``SASS_LSP_GPU_BACKEND=fake`` in its environment (the GPU worker then uses the test double
:mod:`sass_lsp.gpu.fake_device`, which loads only ``FAKE:`` cubins, so a real assembled kernel ends as a
``load_error`` verdict: the test checks that the result reaches the code lens, the inlay hint and the
command's reply, not the numbers).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from paths import TRITON_CORPUS
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

CORPUS = TRITON_CORPUS
SOURCE = CORPUS / "triton_add.cuasm"


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "sass_lsp.server"],
        server_env={**os.environ, "SASS_LSP_GPU_BACKEND": "fake"},
    ),
)
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    await start_session(lsp_client, tmp_path_factory.mktemp("gpu"))
    yield
    await lsp_client.shutdown_session()


async def start_session(lsp_client: LanguageClient, root: Path) -> None:
    """Initialize with VS Code's capabilities in ``root``; record the client's refresh requests."""
    lsp_client.root = root  # type: ignore[attr-defined]
    refreshed: list[str] = []
    lsp_client.refreshed = refreshed  # type: ignore[attr-defined]

    @lsp_client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)
    def _code_lens_refresh(_params: None) -> None:
        refreshed.append("codeLens")

    @lsp_client.feature(lsp.WORKSPACE_INLAY_HINT_REFRESH)
    def _inlay_hint_refresh(_params: None) -> None:
        refreshed.append("inlayHint")

    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=root.as_uri(),
            initialization_options={"diagnosticsDebounceMs": 20},
        )
    )


def open_copy(client: LanguageClient, name: str) -> tuple[Path, str, list[str]]:
    path: Path = client.root / name  # type: ignore[attr-defined]
    shutil.copy(SOURCE, path)
    text = path.read_text()
    uri = path.as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="cuasm", version=1, text=text)
        )
    )
    return path, uri, text.split("\n")


async def time_edit(client: LanguageClient, uri: str) -> dict:
    result = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="sass-lsp.timeEdit", arguments=[uri])
    )
    assert isinstance(result, dict)
    return result


@pytest.mark.asyncio(loop_scope="module")
async def test_time_edit_without_a_launch_spec_names_the_expected_path(client: LanguageClient):
    path, uri, _ = open_copy(client, "nospec.cuasm")
    result = await time_edit(client, uri)
    expected = str(path.with_name("nospec.launch.toml"))
    assert result["ok"] is False and result["verdict"] == "spec_error"
    assert expected in result["message"]
    assert any(expected in m.message for m in client.messages)


@pytest.mark.asyncio(loop_scope="module")
async def test_time_edit_result_shows_in_lens_and_inlay_hint(client: LanguageClient):
    from sass_lsp.gpu import write_spec
    from sass_lsp.gpu.corpus import load_kernel

    _, spec = load_kernel("triton_add")
    path, uri, lines = open_copy(client, "timed.cuasm")
    path.with_name("timed.launch.toml").write_text(write_spec(spec))
    kernel_line = next(i for i, ln in enumerate(lines) if ".section" in ln and ".text.add_kernel" in ln)

    before = await client.text_document_code_lens_async(lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri)))
    assert any(lens.command and lens.command.command == "sass-lsp.timeEdit" for lens in before or [])

    result = await time_edit(client, uri)
    assert result["kernel"] == "add_kernel" and result["version"] == 1
    assert result["verified"] is False and result["verdict"] == "load_error"  # FAKE device, real cubins
    text = result["message"]
    assert text.startswith("GPU timing failed (load error)")
    for _ in range(50):
        if client.refreshed:  # type: ignore[attr-defined]
            break
        await asyncio.sleep(0.05)
    assert "codeLens" in client.refreshed  # type: ignore[attr-defined]

    lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri)))
    timing = [lens for lens in lenses or [] if lens.command and text in lens.command.title]
    assert timing and timing[0].range.start.line == kernel_line
    assert timing[0].command is not None and list(timing[0].command.arguments or []) == [uri]

    hints = await client.text_document_inlay_hint_async(
        lsp.InlayHintParams(
            lsp.TextDocumentIdentifier(uri), lsp.Range(lsp.Position(0, 0), lsp.Position(len(lines), 0))
        )
    )
    labels = [h for h in hints or [] if isinstance(h.label, str) and text in h.label]
    assert labels and labels[0].position.line == kernel_line


@pytest.mark.asyncio(loop_scope="module")
async def test_profile_beside_the_file_shows_in_hover_and_lens(client: LanguageClient):
    path = client.root / "prof.cuasm"  # type: ignore[attr-defined]
    records = [
        {"offset": 0x0, "sass": "LDC R1, c[0x0][0x28]", "metrics": {"Instructions Executed": 4096.0}},
        {
            "offset": 0x10,
            "sass": "S2R R0, SR_TID.X",
            "metrics": {
                "Warp Stall Sampling (All Samples)": 40.0,
                "stall_long_sb": 30.0,
                "Instructions Executed": 4096.0,
            },
        },
    ]
    path.with_name("prof.profile.json").write_text(json.dumps({"records": records, "ok": True}))
    _, uri, lines = open_copy(client, "prof.cuasm")
    s2r = next(i for i, ln in enumerate(lines) if "/*0010*/" in ln and "S2R" in ln)
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(s2r, lines[s2r].index("S2R")))
    )
    assert hover is not None
    value = hover.contents.value  # type: ignore[union-attr]
    assert "executed **4,096** times" in value and "`long_sb`: 30 samples (75%)" in value
    lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri)))
    assert any(lens.command and lens.command.title.startswith("hottest: lines") for lens in lenses or [])
