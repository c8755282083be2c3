"""Small hand-written fixtures for each rule, the formatters and run_check."""

from __future__ import annotations

import json

import pytest

from sass_lsp.analysis import check_module, format_json, format_sarif, format_text, run_check, timeline
from sass_lsp.cuasm.parser import parse_cuasm

HEAD = '\t.section\t".text.k", 0, SHT_PROGBITS\nk:\n'


def _check(body: str, arch: str = "sm_90"):  # noqa: ANN202
    module, diags = parse_cuasm(HEAD + body)
    assert not diags
    return check_module(module, arch)


def _codes(body: str, arch: str = "sm_90") -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in _check(body, arch)]


OK_LOAD = """\
  [B------:R-:W0:-:S02]  LDG.E R4, desc[UR4][R2.64] ;
  [B0-----:R-:W-:Y:S04]  IADD3 R5, R4, 0x1, RZ ;
  [B------:R-:W-:Y:S05]  EXIT ;
"""


def test_clean_fixture() -> None:
    assert _codes(OK_LOAD) == []


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # SASS001: consumer does not wait on SB0
        (OK_LOAD.replace("[B0-----:R-:W-:Y:S04]", "[B------:R-:W-:Y:S04]"), [(4, "SASS001")]),
        # SASS002: ISETP -> guard needs 13 cycles
        (
            "  [B------:R-:W-:Y:S04]  ISETP.GE.AND P0, PT, R0, 0x1, PT ;\n"
            "  [B------:R-:W-:Y:S05]  @P0 EXIT ;\n  [B------:R-:W-:Y:S05]  EXIT ;\n",
            [(4, "SASS002")],
        ),
        # SASS003: address register of a pending store rewritten
        (
            "  [B------:R0:W-:-:S01]  STG.E desc[UR4][R2.64], R5 ;\n"
            "  [B------:R-:W-:Y:S04]  IADD3 R2, R2, 0x4, RZ ;\n  [B------:R-:W-:Y:S05]  EXIT ;\n",
            [(4, "SASS003")],
        ),
        # SASS004: pending load result overwritten
        (
            "  [B------:R-:W0:-:S01]  LDG.E R4, desc[UR4][R2.64] ;\n"
            "  [B------:R-:W-:Y:S04]  MOV R4, 0x1 ;\n  [B0-----:R-:W-:Y:S05]  EXIT ;\n",
            [(4, "SASS004")],
        ),
        # SASS016: a wait one cycle after its scoreboard's setter
        (OK_LOAD.replace("W0:-:S02", "W0:-:S01"), [(4, "SASS016")]),
        # SASS017: UR9 rewritten one cycle after a uniform instruction read it
        (
            "  [B------:R-:W-:-:S01]  ULEA.HI.X.SX32 UR4, UR4, UR9, 0x2, UP0 ;\n"
            "  [B------:R-:W-:-:S01]  ULDC.64 UR8, c[0x0][0x208] ;\n  [B------:R-:W-:Y:S05]  EXIT ;\n",
            [(4, "SASS017")],
        ),
        # SASS017: ULDC rewrites UR9 two cycles after ULEA.HI.X read it (faulted on the H200; ptxas: >= 3)
        (
            "  [B------:R-:W-:-:S02]  ULEA.HI.X.SX32 UR4, UR4, UR9, 0x2, UP0 ;\n"
            "  [B------:R-:W-:-:S01]  ULDC.64 UR8, c[0x0][0x208] ;\n  [B------:R-:W-:Y:S05]  EXIT ;\n",
            [(4, "SASS017")],
        ),
        # SASS006: wait on nothing
        ("  [B--2---:R-:W-:Y:S04]  MOV R4, 0x1 ;\n  [B------:R-:W-:Y:S05]  EXIT ;\n", [(3, "SASS006")]),
        # SASS011: long stall without Y; S00 on a real instruction
        (
            "  [B------:R-:W-:-:S13]  MOV R4, 0x1 ;\n  [B------:R-:W-:-:S00]  MOV R5, 0x1 ;\n"
            "  [B------:R-:W-:Y:S05]  EXIT ;\n",
            [(3, "SASS011"), (4, "SASS011")],
        ),
    ],
)
def test_rule_fixtures(body: str, expected: list[tuple[int, str]]) -> None:
    got = _codes(body)
    for item in expected:
        assert item in got, got


def test_uniform_rewrite_distance_depends_on_the_writer() -> None:
    read = "  [B------:R-:W-:-:S0{n}]  ULEA.HI.X.SX32 UR4, UR4, UR9, 0x2, UP0 ;\n"
    tail = "  [B------:R-:W-:Y:S05]  EXIT ;\n"
    uldc = "  [B------:R-:W-:-:S01]  ULDC.64 UR8, c[0x0][0x208] ;\n"
    uiadd = "  [B------:R-:W-:-:S01]  UIADD3 UR9, UR9, 0x1, URZ ;\n"
    assert (4, "SASS017") not in _codes(read.format(n=3) + uldc + tail)
    assert (4, "SASS017") not in _codes(read.format(n=2) + uiadd + tail)
    assert (4, "SASS017") in _codes(read.format(n=1) + uiadd + tail)


# The H200 cases (hazard_hardware_h200_run2.log in
# benchmarks/results/hazard_hardware_h200.tar.xz): a swap left these alu<->fma pairs 4
# cycles apart and the kernel computed wrong results; ptxas puts VIADD<->IMAD at 4 (VIADD issues like IMAD).
ALU_FMA = (
    "  [B------:R-:W-:-:S04]  {first} ;\n  [B------:R-:W-:-:S01]  {second} ;\n"
    "  [B------:R-:W-:Y:S05]  EXIT ;\n"
)


@pytest.mark.parametrize(
    ("first", "second", "flagged"),
    [
        ("LOP3.LUT R21, R21, 0x5c, R26, 0x78, !PT", "IMAD R27, R28, 0x8, R21", True),
        ("IMAD R4, R0, UR9, RZ", "LEA R16, P0, R4, UR10, 0x2", True),
        ("VIADD R4, R0, 0x1", "IMAD R27, R28, 0x8, R4", False),
        ("IMAD R4, R0, UR9, RZ", "VIADD R5, R4, 0x1", False),
        ("LOP3.LUT R4, R0, 0x5c, R26, 0x78, !PT", "I2FP.F32.S32 R5, R4", False),
    ],
)
def test_alu_fma_pairs_need_five_cycles_on_sm90(first: str, second: str, flagged: bool) -> None:
    body = ALU_FMA.format(first=first, second=second)
    assert ((4, "SASS002") in _codes(body)) is flagged
    assert (4, "SASS002") not in _codes(body.replace("S04", "S05", 1))


def test_out_of_range_fields() -> None:
    """The parser rejects S16+ itself; an editor may still hand us such a node (SASS012)."""
    import dataclasses

    module, _ = parse_cuasm(HEAD + OK_LOAD)
    items = module.sections[0].items
    items[1] = dataclasses.replace(items[1], ctrl="B------:R-:W0:-:S17")
    assert (3, "SASS012") in [(f.line, f.code) for f in check_module(module, "sm_90")]
    text, code = run_check_text(HEAD + OK_LOAD.replace("S04]", "S19]"))
    assert code == 1 and "SASS012" in text


def run_check_text(source: str) -> tuple[str, int]:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.cuasm"
        path.write_text(source)
        return run_check([str(path)], "sm_90", "text")


def test_formatters_and_run_check(tmp_path) -> None:  # noqa: ANN001
    bad = OK_LOAD.replace("[B0-----:R-:W-:Y:S04]", "[B------:R-:W-:Y:S04]")
    path = tmp_path / "k.cuasm"
    path.write_text(HEAD + bad)
    text, code = run_check([str(path)], "sm_90", "text")
    assert code == 1
    assert f"{path}:4:" in text and "error: SASS001" in text
    js = json.loads(run_check([str(path)], "sm_90", "json")[0])
    assert js[0]["code"] == "SASS001" and js[0]["related"][0]["line"] == 3
    sarif = json.loads(run_check([str(path)], "sm_90", "sarif")[0])
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"][0]["ruleId"] == "SASS001"
    ok = tmp_path / "ok.cuasm"
    ok.write_text(HEAD + OK_LOAD)
    assert run_check([str(ok)], "sm_90", "text") == ("", 0)
    assert run_check([str(tmp_path / "missing.cuasm")], "sm_90", "text")[1] == 2
    module, _ = parse_cuasm(HEAD + bad)
    findings = check_module(module, "sm_90")
    assert format_text([("x", findings)]).startswith("x:4:")
    assert json.loads(format_json([("x", findings)]))[0]["column"] >= 1
    assert json.loads(format_sarif([("x", [])]))["runs"][0]["results"] == []


def test_timeline_explains_waits() -> None:
    module, _ = parse_cuasm(HEAD + OK_LOAD)
    (block,) = timeline(module, "sm_90", "k")
    first, second, _ = block.issues
    assert first.cycle == 0 and second.waited > 0
    assert any("SB0 set by line 3" in r for r in second.reasons)
