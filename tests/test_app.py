"""The application layer's refusals, on real inputs: each step says which one failed (``verdict``), where,
and what to do; none of them loads torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from paths import TRITON_CORPUS

from sass_lsp import app

ADD = TRITON_CORPUS / "triton_add.cuasm"


def test_a_missing_checkpoint_is_said_before_torch_is_imported(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from sass_lsp import app\n"
        f"try: app.load_policy(Path({str(tmp_path / 'none')!r}))\n"
        "except app.PolicyUnavailable as exc: print(exc.verdict, exc.reason, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["no_policy", "no_checkpoint", "False"], out.stderr


def test_a_text_that_does_not_parse_names_its_line_and_column() -> None:
    lines = ADD.read_text().splitlines()
    at = next(i for i, ln in enumerate(lines) if "FADD R12, R12, R16" in ln)
    lines.insert(at, "  [B------:R-:W-:-:S01]")  # a control field without its instruction
    with pytest.raises(app.AppError) as caught:
        app.kernel_arch("\n".join(lines), "k.cuasm")
    assert caught.value.verdict == "parse_error"
    message = str(caught.value)
    assert message.startswith(f"k.cuasm:{at + 1}:") and ": error: control field without" in message


def test_original_kernel_refuses_an_unknown_kernel_and_a_bad_launch_spec(tmp_path: Path) -> None:
    text = ADD.read_text()
    with pytest.raises(app.AppError) as caught:
        app.kernel_arch(text, "k.cuasm", kernel="nope")
    assert caught.value.verdict == "no_kernel" and "nope" in str(caught.value) and caught.value.hint
    spec = tmp_path / "k.launch.toml"
    spec.write_text("grid = [1, 1\n")
    with pytest.raises(app.AppError) as caught:
        app.original_kernel(text, "k.cuasm", spec)
    assert caught.value.verdict == "spec_error" and str(caught.value).startswith(str(spec))


def test_an_edit_that_does_not_assemble_says_which_side_with_editor_diagnostics() -> None:
    text = ADD.read_text().replace("FADD R12, R12, R16", "FADD R12, R12, R999", 1)
    with pytest.raises(app.AppError) as caught:
        app.assemble(text, "k.cuasm", side="edit")
    err = caught.value
    assert err.verdict == "assemble_error" and err.side == "edit" and err.diagnostics
    line = next(i for i, ln in enumerate(text.splitlines()) if "R999" in ln)
    assert any(d.line == line for d in err.diagnostics)
    assert str(err).startswith(f"k.cuasm:{line + 1}:")
