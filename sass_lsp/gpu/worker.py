"""Feature: GPU worker. ``python -m sass_lsp.gpu.worker`` owns one CUDA context and answers JSON lines.

Modes:
- stdio (default): requests on stdin, replies on stdout; the parent (:class:`~sass_lsp.gpu.runner.GpuRunner`)
  enforces the watchdog and restarts the worker after a fault.
- ``--listen 127.0.0.1:PORT --token-file F``: a loopback TCP front end (:class:`TcpFrontEnd`). Each
  connection must first send ``{"op": "auth", "token": ...}`` matching the file's token (owner-only file); it
  then relays checked requests to a stdio worker it runs through a ``GpuRunner``, one at a time, so hangs and
  faults are handled there exactly as for a local parent.

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
import threading
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
                from sass_lsp.gpu.availability import no_gpu_message

                self._init_error = (
                    no_gpu_message(exc) if backend != "fake" else f"{type(exc).__name__}: {exc}"
                )
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
    """The shared token; refused when the file is readable or writable by anyone but its owner."""
    mode = os.stat(path).st_mode
    if mode & 0o077:
        raise ValueError(
            f"{path}: the token file is accessible to other users (mode {mode & 0o777:o})\n"
            f"  hint: chmod 600 {path}"
        )
    token = Path(path).read_text().strip()
    if len(token) < 16:
        raise ValueError(f"{path}: the token must be at least 16 characters")
    return token


MAX_REQUEST_BYTES = 256 << 20
"""Default limit of one request line over TCP (a cubin pair and its inputs, base64)."""
AUTH_TIMEOUT_S = 10.0
"""A connection that has not authenticated by then is closed (it blocks no one else meanwhile)."""

# What a TCP client may send, per op, with the type each field must have. Anything else is refused: limits
# such as the watchdog are the worker's own settings, never the client's.
_INT, _NUM, _STR, _DICT, _BOOL = (int,), (int, float), (str,), (dict,), (bool,)
REQUEST_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "hello": {},
    "verify": {"orig_b64": _STR, "edit_b64": _STR, "spec": _DICT, "seeds": (list,)},
    "time": {
        "orig_b64": _STR,
        "edit_b64": _STR,
        "spec": _DICT,
        "rounds": _INT,
        "blocks": _INT,
        "warmup": _INT,
        "target_batch_ms": _NUM,
        "cache": _BOOL,
        "seed": _INT,
        "clocks": _BOOL,
    },
    "launch": {"cubin_b64": _STR, "spec": _DICT, "seed": _INT, "repeats": _INT},
}


class RequestError(ValueError):
    """A TCP request the worker will not relay; the client gets a ``bad_request`` reply."""


def check_request(op: Any, fields: dict[str, Any], inputs_dir: Path | None) -> None:
    """Refuse unknown ops, unknown or mistyped fields, and fill files outside ``inputs_dir``."""
    allowed = REQUEST_FIELDS.get(op) if isinstance(op, str) else None
    if allowed is None:
        raise RequestError(f"unknown op {op!r} (one of {', '.join(REQUEST_FIELDS)}, shutdown)")
    for key, value in fields.items():
        if key not in allowed:
            raise RequestError(f"{op}: unexpected field {key!r} (allowed: {', '.join(allowed) or 'none'})")
        kinds = allowed[key]
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise RequestError(f"{op}.{key}: expected {' or '.join(k.__name__ for k in kinds)}")
    seeds = fields.get("seeds", [])
    if not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise RequestError(f"{op}.seeds: expected a list of integers")
    if "spec" in fields:
        _check_fill_files(fields["spec"], inputs_dir)


def _check_fill_files(spec: dict[str, Any], inputs_dir: Path | None) -> None:
    params = spec.get("params", [])
    for i, param in enumerate(params if isinstance(params, list) else []):
        fill = param.get("fill") if isinstance(param, dict) else None
        if not (isinstance(fill, dict) and fill.get("kind") == "file"):
            continue
        if inputs_dir is None:
            raise RequestError(
                f"spec.params[{i}].fill: file inputs are refused over TCP\n"
                "  hint: start the worker with --inputs-dir DIR and put the file under it"
            )
        target = (inputs_dir / str(fill.get("path", ""))).resolve()
        if not target.is_relative_to(inputs_dir):
            raise RequestError(f"spec.params[{i}].fill.path: outside the worker's --inputs-dir")
        fill["path"] = str(target)


class TcpFrontEnd:
    """Loopback TCP in front of one stdio worker: a thread per connection, requests serialized on the GPU.

    No peer can take it down: before authentication any bad, partial or oversized input closes that connection
    only; after it, a malformed request gets an error reply and the connection goes on."""

    def __init__(
        self,
        token: str,
        runner: Any,
        *,
        inputs_dir: Path | None = None,
        max_request_bytes: int = MAX_REQUEST_BYTES,
        auth_timeout_s: float = AUTH_TIMEOUT_S,
    ) -> None:
        self._token = token.encode()
        self._runner = runner
        self._gpu = threading.Lock()
        self._inputs_dir = inputs_dir.resolve() if inputs_dir else None
        self._max = max_request_bytes
        self._auth_timeout_s = auth_timeout_s

    def serve_forever(self, server: socket.socket) -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                continue  # e.g. a peer that reset before accept: nothing to serve
            threading.Thread(target=self.serve_connection, args=(conn,), daemon=True).start()

    def serve_connection(self, conn: socket.socket) -> None:
        try:
            with conn:
                self._serve(conn)
        except Exception as exc:  # noqa: BLE001  # one peer's failure never reaches the others or the listener
            print(f"sass-lsp worker: connection dropped: {type(exc).__name__}: {exc}", file=sys.stderr)

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(self._auth_timeout_s)
        reader = conn.makefile("rb")  # buffered: readline() is not a read per byte
        send_lock = threading.Lock()

        def send(msg: dict[str, Any]) -> None:
            with send_lock:
                conn.sendall(encode(msg))

        first = self._read(reader)
        if not isinstance(first, dict):
            return  # unauthenticated garbage: close without a word
        given = str(first.get("token", "")).encode()
        if first.get("op") != "auth" or not hmac.compare_digest(given, self._token):
            send(error_reply(first.get("id"), "auth", "refused: bad or missing token"))
            return
        send({"id": first.get("id"), "ok": True, "result": {"authenticated": True}})
        conn.settimeout(None)
        while True:
            msg = self._read(reader)
            if msg is None:
                return
            if isinstance(msg, str):
                send(error_reply(None, "bad_request", msg))
                if msg.startswith("request too large"):
                    return  # the rest of that line cannot be told from the next request
                continue
            req_id, op = msg.pop("id", None), msg.pop("op", None)
            if op == "shutdown":
                send({"id": req_id, "ok": True, "result": {}})
                return
            try:
                check_request(op, msg, self._inputs_dir)
            except RequestError as exc:
                send(error_reply(req_id, "bad_request", str(exc)))
                continue

            def relay(phase: str, done: int, total: int, req_id: Any = req_id) -> None:
                send({"id": req_id, "progress": {"phase": phase, "done": done, "total": total}})

            with self._gpu:
                reply = self._runner.request(str(op), progress=relay, **msg)
            send({"id": req_id, **reply.to_dict()})

    def _read(self, reader: IO[bytes]) -> dict[str, Any] | str | None:
        """The next request; a string says why a line was refused; None at the end of the stream."""
        line = reader.readline(self._max + 1)
        if not line:
            return None
        if len(line) > self._max:
            return f"request too large: over {self._max} bytes"
        try:
            return decode(line)
        except (ValueError, UnicodeDecodeError) as exc:
            return f"not a JSON object: {exc}"


def serve_tcp(
    address: str,
    token_file: str,
    timeout_s: float = 120.0,
    *,
    inputs_dir: Path | None = None,
    max_request_bytes: int = MAX_REQUEST_BYTES,
) -> int:
    from sass_lsp.gpu.runner import GpuRunner

    host, port = parse_listen(address)
    token = read_token(token_file)
    server = socket.create_server((host, port))
    actual = server.getsockname()[1]
    sys.stdout.write(json.dumps({"listening": f"{host}:{actual}"}) + "\n")
    sys.stdout.flush()
    with GpuRunner(timeout_s=timeout_s) as runner:
        front = TcpFrontEnd(token, runner, inputs_dir=inputs_dir, max_request_bytes=max_request_bytes)
        front.serve_forever(server)
    return 0


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
    parser.add_argument(
        "--inputs-dir",
        type=Path,
        help="TCP mode: the only directory whose .npy/.npz files a spec's file fill may read (default: none)",
    )
    parser.add_argument(
        "--max-request-mb",
        type=float,
        default=MAX_REQUEST_BYTES / (1 << 20),
        help="TCP mode: largest request line in MiB; a larger one closes that connection (default: 256)",
    )
    args = parser.parse_args(argv)
    if args.listen:
        if not args.token_file:
            parser.error("--listen needs --token-file")
        try:
            return serve_tcp(
                args.listen,
                args.token_file,
                args.timeout,
                inputs_dir=args.inputs_dir,
                max_request_bytes=int(args.max_request_mb * (1 << 20)),
            )
        except (ValueError, OSError) as exc:
            print(f"sass-lsp worker: {exc}", file=sys.stderr)
            return 2
    return serve_stdio()


if __name__ == "__main__":
    sys.exit(main())
