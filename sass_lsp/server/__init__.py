"""The language server edge: ``main(argv)`` starts it over stdio (default) or TCP on loopback.

Entry points: ``sass-lsp serve [--tcp HOST:PORT]`` and ``python -m sass_lsp.server``.
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys

from sass_lsp.server import tcp

__all__ = ["build_server", "main"]


def build_server():  # noqa: ANN201 - returns SassLanguageServer (imported lazily: pygls is an edge dependency)
    from sass_lsp.server.features import register
    from sass_lsp.server.state import SassLanguageServer

    server = SassLanguageServer()
    register(server)
    return server


def _host_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    host = host or "127.0.0.1"
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise argparse.ArgumentTypeError(f"refusing to listen on {host}: only loopback addresses are allowed")
    try:
        return host, int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad port in {text!r}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The server's options, shared by ``python -m sass_lsp.server`` and ``sass-lsp serve``."""
    parser.add_argument(
        "--stdio", action="store_true", help="talk LSP over stdin/stdout (what editors start; the default)"
    )
    parser.add_argument(
        "--tcp",
        type=_host_port,
        metavar="HOST:PORT",
        help="listen on a loopback TCP port instead of stdio (HOST is 127.0.0.1, localhost or ::1; "
        "default: stdio)",
    )
    parser.add_argument("--log-file", help="append the server log to this file (default: stderr)")
    parser.add_argument(
        "--log-level",
        default="INFO",
        type=str.upper,
        choices=LOG_LEVELS,
        help="least severe log records kept; DEBUG also logs every LSP message (case-insensitive)",
    )
    tcp.add_arguments(parser)


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def build_parser() -> argparse.ArgumentParser:
    from sass_lsp.cli import HelpFormatter

    parser = argparse.ArgumentParser(
        prog="sass-lsp serve",
        description="Run the SASS (.cuasm) language server.",
        formatter_class=HelpFormatter,
    )
    add_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Start the server with parsed options (``add_arguments``); returns when the client disconnects."""
    try:
        handler: logging.Handler = (
            logging.FileHandler(args.log_file) if args.log_file else logging.StreamHandler(sys.stderr)
        )
    except OSError as exc:
        print(f"{args.log_file}: error: cannot open the log file: {exc.strerror}", file=sys.stderr)
        return 2
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(args.log_level)
    if args.log_level != "DEBUG":
        logging.getLogger("pygls").setLevel(logging.WARNING)  # pygls logs every message at INFO
    sys.setswitchinterval(0.001)  # the checker runs in a worker thread: hand the GIL back to requests often
    server = build_server()
    gc.freeze()  # the imported modules live as long as the server (see server.state.freeze_heap)
    if args.tcp or args.token_file or args.insecure_no_auth:
        return tcp.serve(server, args)  # the token check, then loopback TCP
    else:
        server.start_io()
    return 0
