"""``sass-lsp.timeEdit`` over stdio on a real GPU: the server assembles the open file, times it against the
original in the GPU worker and shows the verified result in the lens and the inlay hint. Needs a GPU.
"""

from __future__ import annotations

import os
import sys

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from paths import TRITON_CORPUS
from pytest_lsp import ClientServerConfig, LanguageClient
from test_server_gpu_timing import open_copy, start_session, time_edit

from sass_lsp.gpu.corpus import has_gpu

CORPUS = TRITON_CORPUS
SOURCE = CORPUS / "triton_add.cuasm"

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not SOURCE.exists(), reason="corpus triton_add.cuasm not found"),
    pytest.mark.skipif(not has_gpu(), reason="no CUDA GPU"),
]


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "sass_lsp.server"],
        server_env={k: v for k, v in os.environ.items() if k != "SASS_LSP_GPU_BACKEND"},
    ),
)
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    await start_session(lsp_client, tmp_path_factory.mktemp("gpu"))
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio(loop_scope="module")
async def test_time_edit_of_a_legal_stall_change_is_bit_identical_and_timed(client: LanguageClient):
    from sass_lsp.gpu import write_spec
    from sass_lsp.gpu.corpus import load_kernel

    _, spec = load_kernel("triton_add")
    path, uri, lines = open_copy(client, "timed.cuasm")
    path.with_name("timed.launch.toml").write_text(write_spec(spec))
    # A hazard-free edit: one more stall cycle on the first FADD (the checker accepts it; outputs must match).
    idx = next(i for i, ln in enumerate(lines) if "FADD R12, R12, R16" in ln)
    edited = lines[idx].replace(":S01]", ":S02]", 1)
    assert edited != lines[idx]
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [
                lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(lsp.Position(idx, 0), lsp.Position(idx, len(lines[idx]))), text=edited
                )
            ],
        )
    )
    result = await time_edit(client, uri)
    print(f"\n[gpu] timeEdit: {result['message']}")
    assert result["kernel"] == "add_kernel" and result["version"] == 2
    assert result["verdict"] in ("faster", "slower", "not_significant"), result
    assert "outputs bit-identical on 5 inputs" in result["message"], result["message"]
    lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri)))
    assert any(lens.command and result["message"] in lens.command.title for lens in lenses or [])
