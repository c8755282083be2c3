"""Feature: GPU worker. ``python -m sass_lsp.gpu.worker`` owns one CUDA context and answers JSON lines.

Modes:
- stdio (default): requests on stdin, replies on stdout; the parent (:class:`~sass_lsp.gpu.runner.GpuRunner`)
  enforces the watchdog and restarts the worker after a fault.
- ``--listen 127.0.0.1:PORT --token-file F``: a loopback TCP front end. Each connection must first send
  ``{"op": "auth", "token": ...}`` matching the file's token; it then relays requests to a stdio worker it
  runs
  through a ``GpuRunner``, so hangs and faults are handled there exactly as for a local parent.

``SASS_LSP_GPU_BACKEND=fake`` selects the test double (:mod:`sass_lsp.gpu.fake_device`); the default is CUDA.
"""

from __future__ import annotations

import argparse
import binascii
import hmac
import ipaddress
import json
import os
import socket
import sys
import traceback
from pathlib import Path
from typing import IO, Any

from sass_lsp.gpu.protocol import decode, encode, error_reply, unb64
from sass_lsp.gpu.spec import SpecError, spec_from_dict

BACKEND_ENV = "SASS_LSP_GPU_BACKEND"
DEFAULT_SEEDS = [0, 1, 2, 3, 4]


class _Worker:
    def __init__(self) -> None:
        self._session: Any = None
        self._init_error: str = ""

    def session(self) -> Any:
        if self._session is None and not self._init_error:
            from sass_lsp.gpu.session import Session

            backend = os.environ.get(BACKEND_ENV, "cuda")
            try:
                if backend == "fake":
                    from sass_lsp.gpu.fake_device import FakeDevice

                    self._session = Session(FakeDevice())
                else:
                    from sass_lsp.gpu.device import CudaDevice

                    self._session = Session(CudaDevice())
            except Exception as exc:  # no driver, no GPU, no cuda-python: every request says so
                self._init_error = f"{type(exc).__name__}: {exc}"
        return self._session

    def handle(self, msg: dict[str, Any], out: IO[bytes]) -> dict[str, Any]:
        req_id = msg.get("id")
        op = msg.get("op")

        def progress(phase: str, done: int, total: int) -> None:
            out.write(encode({"id": req_id, "progress": {"phase": phase, "done": done, "total": total}}))
            out.flush()

        if op == "shutdown":
            return {"id": req_id, "ok": True, "result": {}}
        if op not in ("hello", "verify", "time", "launch"):
            return error_reply(req_id, "bad_request", f"unknown op {op!r}")
        session = self.session()
        if session is None:
            return error_reply(req_id, "no_device", self._init_error)
        from sass_lsp.gpu.device import DeviceError

        try:
            if op == "hello":
                result = session.hello()
                result["backend"] = os.environ.get(BACKEND_ENV, "cuda")
            elif op == "verify":
                result = session.verify(
                    unb64(msg["orig_b64"]),
                    unb64(msg["edit_b64"]),
                    spec_from_dict(msg["spec"]),
                    [int(s) for s in msg.get("seeds", DEFAULT_SEEDS)],
                    progress,
                )
            elif op == "time":
                options = {
                    k: msg[k]
                    for k in ("rounds", "blocks", "warmup", "target_batch_ms", "cache", "seed", "clocks")
                    if k in msg
                }
                result = session.time(
                    unb64(msg["orig_b64"]),
                    unb64(msg["edit_b64"]),
                    spec_from_dict(msg["spec"]),
                    progress=progress,
                    **options,
                )
            else:
                result = session.launch(
                    unb64(msg["cubin_b64"]),
                    spec_from_dict(msg["spec"]),
                    seed=int(msg.get("seed", 0)),
                    repeats=int(msg.get("repeats", 1)),
                    progress=progress,
                )
        except SpecError as exc:
            return error_reply(req_id, "spec_error", str(exc), path=exc.path)
        except DeviceError as exc:
            details = {k: v for k, v in exc.to_dict().items() if k != "message"}
            return error_reply(req_id, "cuda", str(exc), **details, phase=session.phase)
        except (KeyError, TypeError, ValueError, binascii.Error) as exc:
            return error_reply(req_id, "bad_request", f"{type(exc).__name__}: {exc}")
        except Exception as exc:
            return error_reply(
                req_id, "internal", f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc()
            )
        return {"id": req_id, "ok": True, "result": result, "context_lost": bool(result.get("context_lost"))}


def serve_stdio() -> int:
    # The protocol gets a private copy of stdout; fd 1 then points at stderr so that anything a library prints
    # cannot corrupt the JSON stream.
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    worker = _Worker()
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        try:
            msg = decode(line)
        except ValueError as exc:
            out.write(encode(error_reply(None, "bad_request", f"not a JSON object: {exc}")))
            continue
        reply = worker.handle(msg, out)
        out.write(encode(reply))
        if reply.get("context_lost"):
            # The context is poisoned: exit now; the parent starts a fresh worker for the next request.
            os._exit(3)
        if msg.get("op") == "shutdown":
            break
    return 0


def parse_listen(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--listen wants HOST:PORT, got {address!r}")
    host = host.strip("[]") or "127.0.0.1"
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        # The worker runs arbitrary cubins on request: it must never be reachable from another machine.
        raise ValueError(f"refusing to listen on {host}: only loopback addresses are allowed")
    return host, int(port)


def read_token(path: str | Path) -> str:
    token = Path(path).read_text().strip()
    if len(token) < 16:
        raise ValueError(f"{path}: the token must be at least 16 characters")
    return token


def serve_tcp(address: str, token_file: str, timeout_s: float = 120.0) -> int:
    from sass_lsp.gpu.runner import GpuRunner

    host, port = parse_listen(address)
    token = read_token(token_file)
    server = socket.create_server((host, port))
    actual = server.getsockname()[1]
    sys.stdout.write(json.dumps({"listening": f"{host}:{actual}"}) + "\n")
    sys.stdout.flush()
    with GpuRunner(timeout_s=timeout_s) as runner:
        while True:
            conn, _ = server.accept()
            with conn:
                _serve_connection(conn, token, runner)


def _serve_connection(conn: socket.socket, token: str, runner: Any) -> None:
    conn.settimeout(30.0)  # only for the auth line; a client that says nothing is dropped
    stream = conn.makefile("rwb", buffering=0)

    def send(msg: dict[str, Any]) -> None:
        stream.write(encode(msg))

    try:
        first = decode(stream.readline())
    except (OSError, ValueError):
        return
    given = str(first.get("token", ""))
    if first.get("op") != "auth" or not hmac.compare_digest(given.encode(), token.encode()):
        send(error_reply(first.get("id"), "auth", "refused: bad or missing token"))
        return
    send({"id": first.get("id"), "ok": True, "result": {"authenticated": True}})
    conn.settimeout(None)
    for line in stream:
        try:
            msg = decode(line)
        except ValueError as exc:
            send(error_reply(None, "bad_request", f"not a JSON object: {exc}"))
            continue
        req_id, op = msg.pop("id", None), msg.pop("op", None)
        if op == "shutdown":
            send({"id": req_id, "ok": True, "result": {}})
            return

        def relay(phase: str, done: int, total: int, req_id: Any = req_id) -> None:
            send({"id": req_id, "progress": {"phase": phase, "done": done, "total": total}})

        reply = runner.request(str(op), progress=relay, **msg)
        send({"id": req_id, **reply.to_dict()})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(  # `sass-lsp worker` forwards here; the usage names that command
        prog="sass-lsp worker",
        description="The GPU worker: owns one CUDA context and answers JSON-line requests on stdio, or on "
        "a loopback TCP port for clients that present the shared token.",
    )
    parser.add_argument("--listen", metavar="HOST:PORT", help="serve over TCP on a loopback address")
    parser.add_argument("--token-file", help="file holding the shared token (required with --listen)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds a request may run before the worker behind the TCP port is restarted (default: 120)",
    )
    args = parser.parse_args(argv)
    if args.listen:
        if not args.token_file:
            parser.error("--listen needs --token-file")
        try:
            return serve_tcp(args.listen, args.token_file, args.timeout)
        except (ValueError, OSError) as exc:
            print(f"sass-lsp worker: {exc}", file=sys.stderr)
            return 2
    return serve_stdio()


if __name__ == "__main__":
    sys.exit(main())
