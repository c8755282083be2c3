"""The `sass-lsp` command line, run as a user runs it (a subprocess), on the bundled example."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from paths import TRITON_CORPUS

from sass_lsp.cli import DEMO_CUBIN


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sass_lsp", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def test_demo_round_trip_is_byte_identical(tmp_path: Path) -> None:
    proc = run_cli("demo", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "round trip is byte-identical" in proc.stdout
    assert "hazard check of the control codes: 0 errors" in proc.stdout
    assert (tmp_path / "triton_add.cubin").read_bytes() == DEMO_CUBIN.read_bytes()
    # The demo's suggestion step is the policy's answer on the written .cuasm, as `suggest` gives it.
    found = re.search(r"5\. reorder policy: (\d+) suggestions?\b", proc.stdout)
    assert found, proc.stdout
    listed = run_cli("suggest", str(tmp_path / "triton_add.cuasm"), "--format", "json")
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == int(found[1])
    assert ("Reorder: " in proc.stdout) == (int(found[1]) > 0)


def test_disasm_then_asm_reproduces_the_cubin(tmp_path: Path) -> None:
    cuasm = tmp_path / "k.cuasm"
    assert run_cli("disasm", str(DEMO_CUBIN), "-o", str(cuasm)).returncode == 0
    text = cuasm.read_text()
    assert "[B------:R-:W0:-:S01]" in text and "LDC R1, c[0x0][0x28] ;" in text
    out = tmp_path / "k.cubin"
    proc = run_cli("asm", str(cuasm), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == DEMO_CUBIN.read_bytes()


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("[B------:R-:W0:-:S01]", "[B------:R-:W0:-:S16]", "stall"),
        ("LDC R1, c[0x0][0x28] ;", "LDCX R1, c[0x0][0x28] ;", "LDCX"),
    ],
)
def test_bad_input_reports_file_line_col_and_writes_nothing(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    cuasm = tmp_path / "k.cuasm"
    assert run_cli("disasm", str(DEMO_CUBIN), "-o", str(cuasm)).returncode == 0
    text = cuasm.read_text()
    line_no = next(i for i, line in enumerate(text.splitlines(), 1) if old in line)
    cuasm.write_text(text.replace(old, new, 1))
    before = cuasm.read_bytes()
    proc = run_cli("asm", str(cuasm), "-o", str(tmp_path / "out.cubin"))
    assert proc.returncode == 2
    first = proc.stderr.splitlines()[0]
    assert first.startswith(f"{cuasm}:{line_no}:"), proc.stderr
    assert ": error: " in first and message in proc.stderr
    assert "hint:" in proc.stderr
    assert not (tmp_path / "out.cubin").exists()
    assert cuasm.read_bytes() == before


def test_asm_refuses_to_overwrite_its_input(tmp_path: Path) -> None:
    cuasm = tmp_path / "k.cuasm"
    assert run_cli("disasm", str(DEMO_CUBIN), "-o", str(cuasm)).returncode == 0
    proc = run_cli("asm", str(cuasm), "-o", str(cuasm))
    assert proc.returncode == 2 and "refusing to overwrite" in proc.stderr


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    proc = run_cli("disasm", str(tmp_path / "nope.cubin"))
    assert proc.returncode == 2 and "nope.cubin: cannot read" in proc.stderr


def test_suggest_json_edits_reparse_hazard_free(tmp_path: Path) -> None:
    import json

    from sass_lsp.analysis import check_module
    from sass_lsp.cuasm import parse_cuasm
    from sass_lsp.schedule.search import apply_edits

    # gelu_bias: the held-out kernel the bundled policy improves most in the cost model
    cuasm = tmp_path / "k.cuasm"
    assert run_cli("disasm", str(TRITON_CORPUS / "gelu_bias.cubin"), "-o", str(cuasm)).returncode == 0
    proc = run_cli("suggest", str(cuasm), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found and all(s["predicted_gain"] > 0 for s in found)
    text = cuasm.read_text()
    for s in found:
        edited = apply_edits(text, [(a, b, list(new)) for a, b, new in s["edits"]])
        assert edited != text
        assert not [f for f in check_module(parse_cuasm(edited)[0], "sm_90") if f.severity == "error"]
