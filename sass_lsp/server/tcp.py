"""The language server over loopback TCP, for one client that proves it holds a token.

Any local process can connect to a loopback port, and the server reads and writes files as the user who
started it, so TCP needs ``--token-file F``: a file only its owner can read or write (the rules of the GPU
worker's :func:`~sass_lsp.gpu.worker.read_token`). The client's first message must be ``initialize`` with
``initializationOptions.token`` equal to the file's token; any LSP client can send that. A connection that
sends anything else first, the wrong token, or nothing within ``AUTH_TIMEOUT_S`` is closed before the server
sees a single message. ``--insecure-no-auth`` serves without a token (with a warning on stderr).

The server serves one authenticated session and exits when it ends (as pygls's ``start_tcp`` does).
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import json
import logging
import sys
import threading
from typing import Any

log = logging.getLogger("sass_lsp.server")

TOKEN_OPTION = "token"
"""The key of ``initializationOptions`` that carries the token."""
AUTH_TIMEOUT_S = 10.0
"""A connection that has not sent a complete ``initialize`` by then is closed."""
MAX_AUTH_MESSAGE = 1 << 20
"""The largest first message accepted before authentication (an ``initialize`` is a few KiB)."""
_MAX_HEADERS = 16
_AUTH_FAILED = -32001  # a server-defined JSON-RPC error code (the reserved range is -32000..-32099)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--token-file`` and ``--insecure-no-auth`` (they apply to ``--tcp``)."""
    parser.add_argument(
        "--token-file",
        metavar="FILE",
        help="with --tcp: a file only you can read (chmod 600) holding a token of 16+ characters; the client "
        f"must send it as initializationOptions.{TOKEN_OPTION} in its initialize request, or is disconnected "
        "(default: none; --tcp then needs --insecure-no-auth)",
    )
    parser.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="with --tcp: accept any local process without a token (it can then read and write your files "
        "through the server); for trusted single-user machines only",
    )


class AuthError(ValueError):
    """Why a connection is refused."""


def server_token(args: argparse.Namespace) -> str | None:
    """The token the TCP server requires (None with ``--insecure-no-auth``); ValueError says what is wrong."""
    from sass_lsp.gpu.worker import read_token

    if args.token_file and args.insecure_no_auth:
        raise ValueError("--token-file and --insecure-no-auth exclude each other")
    if args.token_file:
        try:
            return read_token(args.token_file)
        except OSError as exc:
            raise ValueError(f"{args.token_file}: cannot read the token file: {exc.strerror}") from None
    if args.insecure_no_auth:
        return None
    raise ValueError(
        "--tcp needs --token-file FILE (the client sends its token as "
        f"initializationOptions.{TOKEN_OPTION})\n"
        "  hint: (umask 077; python -c 'import secrets; print(secrets.token_urlsafe(32))' > FILE); "
        "or --insecure-no-auth to accept any local process"
    )


def serve(server: Any, args: argparse.Namespace) -> int:  # noqa: ANN401 - SassLanguageServer (pygls edge)
    """Check the token options, then serve ``server`` on ``args.tcp`` until its client leaves; 2 on bad
    options (with a hint), before anything listens."""
    if not args.tcp:
        print(
            "sass-lsp serve: error: --token-file and --insecure-no-auth apply to --tcp only", file=sys.stderr
        )
        return 2
    try:
        token = server_token(args)
    except ValueError as exc:
        print(f"sass-lsp serve: error: {exc}", file=sys.stderr)
        return 2
    host, port = args.tcp
    if token is None:
        print(
            f"sass-lsp serve: WARNING: --insecure-no-auth: any process on this machine that connects to "
            f"{host}:{port} can make the language server read and write files as you",
            file=sys.stderr,
            flush=True,
        )
    try:
        asyncio.run(_serve(server, host, port, token))
    except asyncio.CancelledError:
        pass
    except OSError as exc:  # e.g. the port is taken
        print(f"sass-lsp serve: error: cannot listen on {host}:{port}: {exc.strerror}", file=sys.stderr)
        return 2
    return 0


async def read_message(reader: asyncio.StreamReader, limit: int) -> dict[str, Any]:
    """One JSON-RPC message (``Content-Length`` framing); AuthError when malformed or over ``limit``."""
    length = None
    for _ in range(_MAX_HEADERS):
        line = await reader.readline()
        if not line.endswith(b"\r\n"):
            raise AuthError("connection closed before a complete header")
        if line == b"\r\n":
            break
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip()) if value.strip().isdigit() else None
    else:
        raise AuthError("too many header lines")
    if length is None or length > limit:
        raise AuthError(f"missing or too large Content-Length ({length})")
    try:
        message = json.loads(await reader.readexactly(length))
    except (ValueError, UnicodeDecodeError) as exc:
        raise AuthError(f"not JSON: {exc}") from None
    if not isinstance(message, dict):
        raise AuthError("not a JSON-RPC message")
    return message


def authenticate(message: dict[str, Any], token: str | None) -> None:
    """Refuse (AuthError) unless ``message`` is ``initialize`` carrying ``token``; the token is removed from
    it either way (the server's settings never see it, and it is never logged)."""
    if message.get("method") != "initialize" or "id" not in message:
        raise AuthError(f"the first message must be initialize, not {str(message.get('method'))[:40]!r}")
    params = message.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    given = options.pop(TOKEN_OPTION, None) if isinstance(options, dict) else None
    if token is None:
        return
    if not isinstance(given, str) or not hmac.compare_digest(given.encode(), token.encode()):
        raise AuthError(f"bad or missing initializationOptions.{TOKEN_OPTION}")


def _refuse(writer: asyncio.StreamWriter, message: dict[str, Any] | None, why: str) -> None:
    """Answer a refused ``initialize`` with an error (so the user sees why), then close."""
    req_id = message.get("id") if isinstance(message, dict) else None
    if isinstance(req_id, int | str):
        body = json.dumps(
            {"jsonrpc": "2.0", "id": req_id, "error": {"code": _AUTH_FAILED, "message": f"sass-lsp: {why}"}}
        ).encode()
        writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    writer.close()


async def _serve(server: Any, host: str, port: int, token: str | None) -> None:  # noqa: ANN401
    from pygls.io_ import run_async  # pygls is an edge dependency: imported when the server starts

    server._stop_event = stop_event = threading.Event()  # what pygls's shutdown() and exit set
    busy = False

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal busy
        peer = writer.get_extra_info("peername")
        message = None
        try:
            message = await asyncio.wait_for(read_message(reader, MAX_AUTH_MESSAGE), AUTH_TIMEOUT_S)
            authenticate(message, token)
            if busy:
                raise AuthError("another client is connected")
        except (AuthError, TimeoutError, asyncio.IncompleteReadError, ValueError, ConnectionError) as exc:
            why = str(exc) or type(exc).__name__
            log.warning("refused a TCP connection from %s: %s", peer, why)
            _refuse(writer, message, why)
            return
        busy = True
        log.info("client %s authenticated", peer)
        protocol = server.protocol
        protocol.set_writer(writer)
        protocol.handle_message(json.loads(json.dumps(message), object_hook=protocol.structure_message))
        await run_async(
            stop_event=stop_event,
            reader=reader,
            protocol=protocol,
            logger=log,
            error_handler=server.report_server_error,
        )
        server.shutdown()  # one session per server, as with stdio

    listener = await asyncio.start_server(on_connect, host, port)
    server._server = listener
    bound = listener.sockets[0].getsockname()
    log.info("listening on %s:%d (%s)", host, bound[1], "token required" if token else "NO AUTHENTICATION")
    async with listener:
        await listener.serve_forever()
