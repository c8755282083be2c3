"""The TCP worker survives any peer.

A socket fuzz (random bytes, wrong tokens, resets, oversized and malformed JSON, unexpected fields) leaves it
serving a valid client, a silent peer blocks no one, and a client can neither change the worker's limits nor
make it read files outside ``--inputs-dir``. Fake device; the real worker process.
"""

from __future__ import annotations

import json
import random
import secrets
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sass_lsp.gpu.protocol import b64, decode, encode
from sass_lsp.gpu.runner import GpuRunner, worker_env
from sass_lsp.gpu.spec import parse_spec, spec_to_dict
from sass_lsp.gpu.worker import AUTH_TIMEOUT_S, RequestError, check_request

FAKE = {"SASS_LSP_GPU_BACKEND": "fake"}
SPEC = spec_to_dict(
    parse_spec('kernel = "k"\ngrid = [1]\nblock = [32]\n[[params]]\nname = "y"\ndtype = "f32"\nshape = [8]\n')
)


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    root = tmp_path_factory.mktemp("tcp")
    token = secrets.token_hex(16)
    token_file = root / "token"
    token_file.write_text(token)
    token_file.chmod(0o600)
    inputs = root / "inputs"
    inputs.mkdir()
    cmd = [sys.executable, "-m", "sass_lsp.gpu.worker", "--listen", "127.0.0.1:0"]
    cmd += ["--token-file", str(token_file), "--timeout", "5"]
    cmd += ["--inputs-dir", str(inputs), "--max-request-mb", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=worker_env(FAKE))
    host, _, port = json.loads(proc.stdout.readline())["listening"].rpartition(":")
    yield (host, int(port)), token, proc
    proc.kill()
    proc.wait()


def _connect(address) -> socket.socket:
    return socket.create_connection(address, timeout=10)


def _authed(address, token):
    sock = _connect(address)
    stream = sock.makefile("rwb", buffering=0)
    stream.write(encode({"id": 0, "op": "auth", "token": token}))
    assert decode(stream.readline())["ok"]
    return sock, stream


def _reset(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST on close
    sock.close()


def _assert_serving(address, token) -> None:
    with GpuRunner(address=f"{address[0]}:{address[1]}", token=token, timeout_s=20) as client:
        assert client.hello().ok


def test_fuzzed_peers_do_not_take_the_worker_down(worker):
    address, token, proc = worker
    rng = random.Random(7)
    cases = 0
    for _ in range(30):  # unauthenticated: random bytes, partial lines, wrong tokens, resets
        sock = _connect(address)
        kind = rng.choice(["bytes", "partial", "wrong", "reset_after_wrong", "array", "huge"])
        try:
            if kind == "bytes":
                sock.sendall(rng.randbytes(rng.randint(1, 4096)) + b"\n")
            elif kind == "partial":
                sock.sendall(b'{"op": "auth", "tok')
            elif kind in ("wrong", "reset_after_wrong"):
                sock.sendall(encode({"id": 1, "op": "auth", "token": secrets.token_hex(16)}))
            elif kind == "array":
                sock.sendall(b"[1, 2, 3]\n")
            else:
                sock.sendall(b"x" * (2 << 20))
        except OSError:
            pass  # the worker may close first: that is the point
        if kind == "reset_after_wrong" or rng.random() < 0.5:
            _reset(sock)
        else:
            sock.close()
        cases += 1
    assert proc.poll() is None
    # authenticated: malformed JSON, unexpected fields, wrong types, oversized lines
    bad_requests = [
        b"{not json}\n",
        b"\xff\xfe\n",
        encode({"id": 1, "op": "hello", "progress": 1}),
        encode({"id": 2, "op": "verify", "orig_b64": 1, "edit_b64": "", "spec": {}}),
        encode({"id": 3, "op": "time", "orig_b64": "", "edit_b64": "", "spec": SPEC, "timeout_s": "x"}),
        encode({"id": 4, "op": "launch", "cubin_b64": "!!", "spec": SPEC}),
        encode({"id": 5, "op": "nope"}),
        encode({"id": 6, "op": "verify", "orig_b64": "", "edit_b64": "", "spec": SPEC, "seeds": ["a"]}),
    ]
    sock, stream = _authed(address, token)
    with sock:
        for raw in bad_requests:
            stream.write(raw)
            reply = decode(stream.readline())
            assert reply["ok"] is False and reply["error"]["kind"] in ("bad_request", "spec_error"), reply
            cases += 1
        stream.write(encode({"id": 9, "op": "hello"}))
        assert decode(stream.readline())["ok"]  # the same connection goes on
        stream.write(b"y" * (1 << 20) + b"zz\n")  # over --max-request-mb 1: refused, connection closed
        reply = decode(stream.readline())
        assert reply["error"]["kind"] == "bad_request" and "too large" in reply["error"]["message"]
        cases += 1
    assert proc.poll() is None, proc.stderr.read().decode()
    _assert_serving(address, token)


def test_a_silent_peer_blocks_no_one(worker):
    address, token, _ = worker
    silent = _connect(address)  # connects and says nothing
    try:
        t0 = time.monotonic()
        _assert_serving(address, token)
        assert time.monotonic() - t0 < AUTH_TIMEOUT_S  # served before the silent peer's auth timeout
    finally:
        silent.close()


def test_fill_files_only_from_the_inputs_dir(tmp_path):
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    spec = {"params": [{"name": "x", "fill": {"kind": "file", "path": "/etc/secret.npy"}}]}
    with pytest.raises(RequestError, match="--inputs-dir"):
        check_request("verify", {"spec": json.loads(json.dumps(spec))}, None)
    with pytest.raises(RequestError, match="outside"):
        check_request("verify", {"spec": json.loads(json.dumps(spec))}, inputs)
    escape = {"params": [{"fill": {"kind": "file", "path": "../x.npy"}}]}
    with pytest.raises(RequestError, match="outside"):
        check_request("verify", {"spec": escape}, inputs)
    inside = {"params": [{"fill": {"kind": "file", "path": "a.npy"}}]}
    check_request("verify", {"spec": inside}, inputs)
    assert inside["params"][0]["fill"]["path"] == str(inputs.resolve() / "a.npy")


def test_limits_are_the_workers_own(worker):
    address, token, _ = worker
    sock, stream = _authed(address, token)
    with sock:
        orig = b64(b"FAKE:ok")
        stream.write(encode({"id": 1, "op": "verify", "orig_b64": orig, "edit_b64": orig, "spec": SPEC,
                             "timeout_s": 3600}))  # fmt: skip
        reply = decode(stream.readline())
        assert not reply["ok"] and "timeout_s" in reply["error"]["message"]


def test_a_large_request_is_answered(worker, tmp_path):
    """A 0.9 MB request (under this worker's 1 MiB limit) is read whole and answered
    (benchmarks/worker_fuzz.py reports how long a 10 MB one takes)."""
    address, token, _ = worker
    sock, stream = _authed(address, token)
    with sock:
        pad = b64(b"FAKE:ok" + b"\0" * 600_000)
        stream.write(encode({"id": 1, "op": "launch", "cubin_b64": pad, "spec": SPEC}))
        assert decode(stream.readline())["id"] == 1


def test_main_usage_paths(tmp_path: Path):
    proc = subprocess.run(
        [sys.executable, "-m", "sass_lsp.gpu.worker", "--listen", "127.0.0.1:0"],
        capture_output=True, text=True, env=worker_env(FAKE), timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2 and "--token-file" in proc.stderr
