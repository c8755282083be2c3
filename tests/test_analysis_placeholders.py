"""SASS018: an LDGSTS moved above the `@!PT LDS RZ, [RZ]` placeholders ptxas puts before it is an error (the
hardware gave wrong results for exactly that move); ptxas's own order and archs without placeholders pass."""

from __future__ import annotations

from paths import TRITON_CORPUS

from sass_lsp.analysis import check_module
from sass_lsp.cuasm.parser import parse_cuasm
from sass_lsp.isa.semantics import load_semantics

PLACEHOLDER = "@!PT LDS RZ, [RZ]"


def _codes(text: str, arch: str = "sm_90") -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_module(parse_cuasm(text)[0], arch)]


def _hoist_first_ldgsts(lines: list[str]) -> tuple[list[str], int]:
    """The prologue's first placeholder run with its LDGSTS moved above it; the LDGSTS's new 1-based line."""
    first = next(i for i, ln in enumerate(lines) if PLACEHOLDER in ln)
    end = first
    while PLACEHOLDER in lines[end]:
        end += 1
    assert "LDGSTS" in lines[end]
    return lines[:first] + [lines[end]] + lines[first:end] + lines[end + 1 :], first + 1


def test_ptxas_order_has_no_sass018() -> None:
    for path in sorted(TRITON_CORPUS.glob("*.cuasm")):
        assert not [c for c in _codes(path.read_text()) if c[0] == "SASS018"], path.name


def test_ldgsts_above_its_placeholders_is_an_error_at_the_ldgsts() -> None:
    lines = (TRITON_CORPUS / "mm_f16_64x64x32.cuasm").read_text().splitlines()
    moved, line = _hoist_first_ldgsts(lines)
    module = parse_cuasm("\n".join(moved) + "\n")[0]
    findings = [f for f in check_module(module, "sm_90") if f.code == "SASS018"]
    assert [(f.line, f.severity) for f in findings] == [(line, "error")]
    assert "placeholder" in findings[0].message


def test_ldgsts_without_placeholders_is_an_error() -> None:
    text = (TRITON_CORPUS / "triton_matmul.cuasm").read_text()
    stripped = "\n".join(ln for ln in text.splitlines() if PLACEHOLDER not in ln) + "\n"
    n_ldgsts = sum("LDGSTS" in ln for ln in stripped.splitlines())
    assert sum(c == "SASS018" for c, _ in _codes(stripped)) == n_ldgsts > 0


def test_only_archs_whose_ptxas_places_them_are_checked() -> None:
    def guarded(arch: str) -> list[str]:
        return load_semantics(arch).params.get("placeholder_guarded", {}).get("value", [])

    assert guarded("sm_80") == []  # sm_80's ptxas emits no placeholders
    assert guarded("sm_90") == ["LDGSTS"]
