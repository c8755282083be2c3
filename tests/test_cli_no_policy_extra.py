"""Without the ``[policy]`` extra (``tests/no_torch`` first on PYTHONPATH makes torch, gymnasium and
safetensors fail to import, as where they are not installed) the policy's commands name the extra, exit 2 and
print no traceback; the rest (here ``demo`` and ``check``) run. ``tests/test_wheel.py`` checks the same on a
real base install."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT, TRITON_CORPUS

HINT = "pip install 'sass-lsp[policy]'"
PYTHONPATH = os.pathsep.join(p for p in (str(ROOT / "tests" / "no_torch"), str(ROOT)) if p)


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    code = "import sys; from sass_lsp.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": PYTHONPATH}
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize(
    "args",
    [
        ["suggest", "k.cuasm"],
        ["optimize", "k.cuasm"],
        ["train", "--time-limit", "1", "--out", "out"],
        ["finetune", "--out", "out"],
    ],
)
def test_policy_commands_name_the_extra(tmp_path: Path, args: list[str]) -> None:
    shutil.copy(TRITON_CORPUS / "triton_add.cuasm", tmp_path / "k.cuasm")
    out = _cli(tmp_path, *args)
    assert out.returncode == 2, out.stdout + out.stderr
    # suggest runs the policy's numpy forward pass: it names what it needs of the extra, torch not among them
    lacks = "gymnasium and safetensors" if args[0] == "suggest" else "torch, gymnasium and safetensors"
    assert f"the reorder policy needs {lacks}, which" in out.stderr and HINT in out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.cuasm"]  # nothing written


def test_demo_and_check_run_without_the_extra(tmp_path: Path) -> None:
    demo = _cli(tmp_path, "demo", "--out", "demo")
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "byte-identical" in demo.stdout and HINT in demo.stdout and "Traceback" not in demo.stderr
    shutil.copy(TRITON_CORPUS / "triton_add.cuasm", tmp_path / "k.cuasm")
    assert _cli(tmp_path, "check", "k.cuasm").returncode == 0
