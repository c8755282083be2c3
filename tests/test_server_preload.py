"""The policy and the performance model load in the background once the server is initialized and the first
document's diagnostics are out: no request for suggestions is needed, the first Ctrl+. finds them, and torch
is never imported (serving runs their numpy forward passes)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from lsp_stdio import StdioClient
from paths import TRITON_CORPUS

from sass_lsp.server.suggestions import PRELOADED

pytest.importorskip("sass_lsp.schedule.game")  # gymnasium


def loaded(pid: int, name: str) -> bool:
    return any(name in line for line in Path(f"/proc/{pid}/maps").read_text().splitlines())


def test_models_load_in_the_background_after_the_first_diagnostics(tmp_path: Path) -> None:
    client = StdioClient(tmp_path / "server.log", {"diagnosticsDebounceMs": 10})
    try:
        text = (TRITON_CORPUS / "mm_f16_64x64x32.cuasm").read_text()
        uri = (tmp_path / "k.cuasm").as_uri()
        client.open(uri, text)
        client.settled_diagnostics(uri, 1, quiet_s=0.2)
        log = tmp_path / "server.log"
        deadline = time.monotonic() + 60
        while PRELOADED not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert PRELOADED in log.read_text(), "the models were not loaded without a request"
        line = next(i for i, ln in enumerate(text.split("\n")) if ln.lstrip().startswith("[B"))
        params = {
            "textDocument": {"uri": uri},
            "range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}},
            "context": {"diagnostics": [], "triggerKind": 1},
        }
        # Ctrl+. (each waits up to 3 s for the suggestions; a busy machine may need a second one)
        for attempt in range(5):
            t0 = time.perf_counter()
            reply = client.request("textDocument/codeAction", params, timeout=30)
            took = time.perf_counter() - t0
            titles = [a["title"] for a in reply.result]
            print(f"attempt {attempt + 1}: {took * 1000:.0f} ms, {len(titles)} actions")
            if any(t.startswith("Reorder:") for t in titles):
                break
        assert any(t.startswith("Reorder:") for t in titles), titles
        print(f"\nCtrl+. number {attempt + 1} after the background load: {took * 1000:.0f} ms")
        assert not loaded(client.proc.pid, "libtorch")
    finally:
        client.shutdown()


def test_the_gpu_search_loads_the_torch_network_once_per_checkpoint_version(tmp_path: Path) -> None:
    """ "Optimize schedule" asks for the torch network each time: the second ask is the same object, and a
    replaced checkpoint is read again."""
    import shutil

    pytest.importorskip("torch")
    from sass_lsp.policy.checkpoint import bundled_policy
    from sass_lsp.server.suggestions import load_net

    path = tmp_path / "policy"
    shutil.copytree(bundled_policy(), path)
    first = load_net(path, torch_net=True)
    assert load_net(path, torch_net=True) is first
    time.sleep(0.01)
    (path / "extra.txt").write_text("a new file changes the folder's time")
    assert load_net(path, torch_net=True) is not first
