"""The checker's worker process dies with the server, however the server dies (SIGKILL included): the real
server over stdio opens a corpus file (so the pool starts), is killed, and every process it started is gone
within seconds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from paths import ROOT, TRITON_CORPUS

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None


def descendants(root: int) -> dict[int, str]:
    """pid -> command line of every live process below ``root``."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            parents[int(entry.name)] = int(fields[1])
    found: dict[int, str] = {}
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in found:
                try:
                    found[child] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    continue
                frontier.append(child)
    return found


def alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"  # a zombie left to a non-reaping pid 1 is dead


def test_checker_pool_dies_with_a_killed_server(tmp_path: Path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [sys.executable, "-m", "sass_lsp.server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    threading.Thread(target=lambda: [None for _ in server.stdout], daemon=True).start()  # type: ignore[union-attr]
    try:
        source = TRITON_CORPUS / "triton_add.cuasm"
        item = {"uri": source.as_uri(), "languageId": "cuasm", "version": 1, "text": source.read_text()}
        init = {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}
        server.stdin.write(  # type: ignore[union-attr]
            frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
            + frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
            + frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": item}})
        )
        server.stdin.flush()  # type: ignore[union-attr]
        deadline = time.monotonic() + 90
        children: dict[int, str] = {}
        while time.monotonic() < deadline:
            children = descendants(server.pid)
            if any("spawn_main" in cmd for cmd in children.values()):
                break
            time.sleep(0.2)
        assert any("spawn_main" in cmd for cmd in children.values()), children
        time.sleep(0.5)  # let the worker finish starting (it must die however far it got)
        children = descendants(server.pid)
        server.send_signal(signal.SIGKILL)
        server.wait(10)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(alive(pid) for pid in children):
            time.sleep(0.1)
        assert not [cmd for pid, cmd in children.items() if alive(pid)]
    finally:
        if server.poll() is None:
            server.kill()
        server.wait(10)
