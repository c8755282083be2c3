"""The language server over TCP serves only a client that sends the token: a hostile local process (no token,
a wrong token, the token after another message, a second client) is disconnected before any message runs,
so its ``sass-lsp.assemble`` writes nothing; the client with the token gets initialize, hover and commands.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from paths import ROOT, TRITON_CORPUS

CUASM = TRITON_CORPUS / "triton_add.cuasm"
TOKEN = "s3cret-token-0123456789abcdef"


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


class RawClient:
    """A bare JSON-RPC client on a socket: sends what the test says, in the order it says."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buf = b""

    def send(self, *messages: dict) -> None:
        self.sock.sendall(b"".join(frame(m) for m in messages))

    def recv(self) -> dict | None:
        """The next message; None when the server closed the connection."""
        while b"\r\n\r\n" not in self.buf:
            if not self._more():
                return None
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
        while len(rest) < length:
            if not self._more():
                return None
            rest = self.buf.partition(b"\r\n\r\n")[2]
        self.buf = rest[length:]
        return json.loads(rest[:length])

    def response(self, req_id: int) -> dict | None:
        while (msg := self.recv()) is not None:
            if msg.get("id") == req_id and "method" not in msg:
                return msg
        return None

    def closed(self) -> bool:
        """True when the server has closed the connection (whatever it sent before)."""
        while self.recv() is not None:
            pass
        return True

    def _more(self) -> bool:
        try:
            chunk = self.sock.recv(65536)
        except ConnectionResetError:
            return False
        self.buf += chunk
        return bool(chunk)

    def close(self) -> None:
        self.sock.close()


def initialize(req_id: int, token: str | None, root: Path) -> dict:
    options: dict = {"diagnosticsDebounceMs": 20}
    if token is not None:
        options["token"] = token
    return {
        "jsonrpc": "2.0",
        "id": req_id,
        "method": "initialize",
        "params": {
            "processId": None,
            "rootUri": root.as_uri(),
            "capabilities": {},
            "initializationOptions": options,
        },
    }


def did_open(path: Path) -> dict:
    item = {"uri": path.as_uri(), "languageId": "cuasm", "version": 1, "text": path.read_text()}
    return {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": item}}


def assemble(req_id: int, path: Path) -> dict:
    params = {"command": "sass-lsp.assemble", "arguments": [path.as_uri()]}
    return {"jsonrpc": "2.0", "id": req_id, "method": "workspace/executeCommand", "params": params}


INITIALIZED = {"jsonrpc": "2.0", "method": "initialized", "params": {}}


def start_server(*args: str) -> tuple[subprocess.Popen, int, str]:
    """The server on a free port: (process, port, what it wrote on stderr up to listening)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sass_lsp.server", "--tcp", "127.0.0.1:0", *args],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stderr], daemon=True).start()  # type: ignore[union-attr]
    deadline = time.monotonic() + 60
    seen = []
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            assert proc.poll() is None, "".join(seen)
            continue
        seen.append(line)
        if m := re.search(r"listening on 127\.0\.0\.1:(\d+)", line):
            return proc, int(m.group(1)), "".join(seen)
    proc.kill()
    raise AssertionError("server did not listen:\n" + "".join(seen))


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(CUASM, ws / "planted.cuasm")
    yield ws


def hostile(port: int, first: list[dict], ws: Path) -> RawClient:
    """A client that sends ``first`` then everything a session needs to write planted.cubin."""
    client = RawClient(port)
    client.send(*first, INITIALIZED, did_open(ws / "planted.cuasm"), assemble(90, ws / "planted.cuasm"))
    return client


def test_tcp_refuses_clients_without_the_token_and_serves_the_one_with_it(token_file: Path, workspace: Path):
    proc, port, _ = start_server("--token-file", str(token_file))
    target = workspace / "planted.cubin"
    try:
        # no token: an error answer to initialize, then the connection closes; nothing else ran
        client = hostile(port, [initialize(1, None, workspace)], workspace)
        reply = client.recv()
        assert reply is not None and reply["id"] == 1 and reply["error"]["code"] == -32001
        assert "token" in reply["error"]["message"]
        assert client.closed()
        # a wrong token (same length, one character off)
        client = hostile(port, [initialize(1, TOKEN[:-1] + "X", workspace)], workspace)
        assert client.response(1)["error"]["code"] == -32001 and client.closed()
        # a command before initialize, then initialize with the right token: refused at the first message
        client = RawClient(port)
        client.send(assemble(5, workspace / "planted.cuasm"), initialize(6, TOKEN, workspace))
        assert client.response(5)["error"]["code"] == -32001 and client.closed()
        # garbage (no framing at all) is closed without a word
        client = RawClient(port)
        client.sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert client.recv() is None
        time.sleep(0.5)
        assert not target.exists()

        # a client that connects and says nothing blocks no one (it is dropped after AUTH_TIMEOUT_S)
        silent = RawClient(port)
        # the token: initialize, hover, and the command the hostile clients asked for
        good = RawClient(port)
        good.send(initialize(1, TOKEN, workspace))
        init = good.response(1)
        assert init is not None and "capabilities" in init["result"], init
        good.send(INITIALIZED, did_open(workspace / "planted.cuasm"))
        lines = (workspace / "planted.cuasm").read_text().split("\n")
        line = next(i for i, text in enumerate(lines) if "IADD3" in text)
        hover = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "textDocument/hover",
            "params": {
                "textDocument": {"uri": (workspace / "planted.cuasm").as_uri()},
                "position": {"line": line, "character": lines[line].index("IADD3") + 1},
            },
        }
        good.send(hover)
        answer = good.response(2)
        assert answer is not None and "IADD3" in answer["result"]["contents"]["value"]

        # a second client, even with the token, while the first is connected: refused
        second = RawClient(port)
        second.send(initialize(1, TOKEN, workspace))
        assert "another client" in second.response(1)["error"]["message"] and second.closed()

        good.send(assemble(3, workspace / "planted.cuasm"))
        assert good.response(3)["result"]["ok"] and target.exists()
        good.close()
        silent.close()
        proc.wait(20)  # one session per server: it exits when its client leaves
    finally:
        stop(proc)


def test_tcp_token_file_readable_by_others_is_refused_with_a_hint(token_file: Path):
    token_file.chmod(0o644)
    run = subprocess.run(
        [sys.executable, "-m", "sass_lsp.server", "--tcp", "127.0.0.1:0", "--token-file", str(token_file)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert run.returncode == 2
    assert (
        "accessible to other users (mode 644)" in run.stderr and f"hint: chmod 600 {token_file}" in run.stderr
    )


def test_tcp_without_a_token_file_needs_the_explicit_insecure_flag(workspace: Path):
    run = subprocess.run(
        [sys.executable, "-m", "sass_lsp.server", "--tcp", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert run.returncode == 2 and "--tcp needs --token-file" in run.stderr and "hint:" in run.stderr

    proc, port, stderr = start_server("--insecure-no-auth")
    try:
        assert "WARNING: --insecure-no-auth: any process on this machine" in stderr
        client = RawClient(port)
        client.send(initialize(1, None, workspace))
        assert "capabilities" in client.response(1)["result"]
    finally:
        stop(proc)


def test_tcp_refuses_non_loopback_hosts():
    run = subprocess.run(
        [sys.executable, "-m", "sass_lsp.server", "--tcp", "0.0.0.0:0", "--insecure-no-auth"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert run.returncode == 2 and "only loopback addresses are allowed" in run.stderr
