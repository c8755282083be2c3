"""The VS Code extension's own suite (type check, bundle, unit tests, grammar tests over corpus lines).

Runs `npm ci` and `npm test` in vscode-client/; the end-to-end run in code-server is `npm run e2e`.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from paths import ROOT

CLIENT = ROOT / "vscode-client"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("npm") is None, reason="npm (node 20) is needed for the extension's tests")
def test_extension_builds_and_its_unit_and_grammar_tests_pass() -> None:
    if not (CLIENT / "node_modules").is_dir():
        install = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"], cwd=CLIENT, capture_output=True, text=True, timeout=900
        )
        assert install.returncode == 0, install.stderr[-4000:]
    proc = subprocess.run(["npm", "test"], cwd=CLIENT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "fail 0" in proc.stdout
