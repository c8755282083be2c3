"""The server's shape: each registered handler only converts LSP in and out around one call into
``sass_lsp.ide`` or ``sass_lsp.app``, so none is longer than 40 lines; and importing the server (every feature
module) loads no torch, no GPU package and no policy."""

from __future__ import annotations

import inspect
import subprocess
import sys

from sass_lsp.server import build_server

MAX_LINES = 40


def registered_handlers() -> dict[str, object]:
    """Every LSP method and command the server registers, as the function written for it."""
    fm = build_server().protocol.fm
    found = {**fm.features, **fm.commands}
    return {name: getattr(f, "func", f) for name, f in found.items()}  # pygls may wrap one in a partial


def test_every_handler_is_at_most_40_lines() -> None:
    handlers = registered_handlers()
    ours = {n: f for n, f in handlers.items() if f.__module__.startswith("sass_lsp.server.features.")}
    assert ours == handlers, sorted(set(handlers) - set(ours))  # every handler lives in a feature module
    assert "textDocument/hover" in ours and "sass-lsp.optimizeSchedule" in ours and len(ours) >= 28
    sizes = {name: len(inspect.getsourcelines(f)[0]) for name, f in ours.items()}
    assert {n: s for n, s in sizes.items() if s > MAX_LINES} == {}, sizes


def test_the_server_imports_no_torch_gpu_or_policy() -> None:
    code = (
        "import sys; from sass_lsp.server import build_server; build_server(); "
        "print(sorted(m for m in sys.modules if m in ('torch', 'sass_lsp.gpu', 'sass_lsp.policy.suggest')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout
