"""The mypyc-compiled modules (sass_lsp._native.COMPILED) compute exactly what their Python sources do.

Runs tools/native_identity.py --quick (checks, timelines and entry states of one corpus cubin per arch
and the shared Triton kernels; with --game the reorder game on the shared kernels and some sm_90 cubins)
once on the compiled build and once with SASS_LSP_PURE=1, and compares the dumps byte for byte. Skipped
where no compiled build is installed (a pure install has nothing to compare).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from paths import ROOT, TRITON_CORPUS

from sass_lsp import _native


def _dump(tmp_path, pure: bool, *extra: str) -> tuple[str, bytes]:  # noqa: ANN001
    env = {k: v for k, v in os.environ.items() if k != "SASS_LSP_PURE"}
    if pure:
        env["SASS_LSP_PURE"] = "1"
    out = tmp_path / ("pure.jsonl" if pure else "compiled.jsonl")
    cmd = [sys.executable, str(ROOT / "tools/native_identity.py"), str(out), "--quick", *extra]
    proc = subprocess.run([*cmd, "--shared", str(TRITON_CORPUS)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, out.read_bytes()


@pytest.mark.skipif(not _native.compiled_present(), reason="no compiled build (pure-Python install)")
def test_compiled_matches_pure(tmp_path) -> None:  # noqa: ANN001
    said_c, compiled = _dump(tmp_path, pure=False)
    said_p, pure = _dump(tmp_path, pure=True)
    assert "(compiled," in said_c, said_c
    assert "(pure," in said_p, said_p
    assert compiled.count(b"\n") > 50
    assert compiled == pure


@pytest.mark.slow
@pytest.mark.skipif(not _native.compiled_present(), reason="no compiled build (pure-Python install)")
def test_compiled_game_matches_pure(tmp_path) -> None:  # noqa: ANN001
    """The reorder game (schedule.deps, repair, cost): facts, edges, costs, masks and moves' text edits."""
    said_c, compiled = _dump(tmp_path, False, "--game")
    said_p, pure = _dump(tmp_path, True, "--game")
    assert "(compiled," in said_c and "(pure," in said_p, (said_c, said_p)
    assert compiled.count(b"\n") > 100
    assert compiled == pure


def test_pure_switch_loads_sources() -> None:
    code = "import sass_lsp._native as n, sass_lsp.analysis.hazards as h; print(n.pure, h.__file__)"
    env = {**os.environ, "SASS_LSP_PURE": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    pure, path = out.stdout.split()
    assert pure == "True" and path.endswith("hazards.py"), out.stdout


def test_compiled_lists_agree() -> None:
    """setup.py's COMPILED (what mypyc compiles), sass_lsp._native.COMPILED (what the pure switch and the
    edit check cover) and pyproject's mypy overrides (what must type-check) name the same modules."""
    import ast
    import tomllib

    tree = ast.parse((ROOT / "setup.py").read_text())
    paths = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "COMPILED" for t in node.targets)
    )
    from_setup = [p.removesuffix(".py").replace("/", ".") for p in paths]
    assert from_setup == list(_native.COMPILED)
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
    checked = next(o["module"] for o in mypy if o.get("ignore_errors") is False)
    assert sorted(checked) == sorted(_native.COMPILED)
