"""ncu Source-page CSV parsing (CPU) and a real profile of one corpus kernel (GPU + ncu)."""

from __future__ import annotations

import shutil

import pytest

from sass_lsp.gpu.corpus import has_gpu, load_kernel
from sass_lsp.gpu.profile import ncu_commands, parse_source_csv, profile

# Shape of `ncu --import R --page source --print-source sass --csv` output (ncu 2025.x), a few columns.
CSV = "\n".join(
    [
        "==PROF== Connected to process 1",
        '"# Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)",'
        '"Instructions Executed","stall_long_sb"',
        '"00007f2a4c000000","LDC R1, c[0x0][0x28]","12","3","16,384","0"',
        '"00007f2a4c000010","S2R R0, SR_TID.X","40","38","16,384","0"',
        '"00007f2a4c000020","LDG.E R2, desc[UR4][R2.64]","1,204","1,100","16,384","950"',
        '"00007f2a4c000030","EXIT","0","0","16,384",""',
    ]
)


def test_parse_source_csv_gives_offsets_and_metrics():
    columns, records = parse_source_csv(CSV)
    assert "Instructions Executed" in columns
    assert [r.offset for r in records] == [0x0, 0x10, 0x20, 0x30]
    ldg = records[2]
    assert ldg.sass.startswith("LDG.E") and ldg.executed == 16384
    assert ldg.stalls == {
        "Warp Stall Sampling (All Samples)": 1204,
        "Warp Stall Sampling (Not-issued Samples)": 1100,
        "stall_long_sb": 950,
    }
    assert "stall_long_sb" not in records[3].metrics  # empty cells are absent, not zero


def test_parse_source_csv_without_a_table():
    assert parse_source_csv("==ERROR== no kernels were profiled\n") == ([], [])


def test_ncu_command_leaves_clocks_alone(tmp_path):
    cmd, export = ncu_commands("ncu", tmp_path / "r", tmp_path / "k.cubin", tmp_path / "k.toml", "add_kernel")
    assert cmd[:3] == ["ncu", "--clock-control", "none"]
    assert "SourceCounters" in cmd and cmd[-4:-2] == ["-m", "sass_lsp.gpu.launch_once"]
    assert export[-5:] == ["--page", "source", "--print-source", "sass", "--csv"]


@pytest.mark.gpu
@pytest.mark.skipif(shutil.which("ncu") is None, reason="ncu not on PATH")
@pytest.mark.skipif(not has_gpu(), reason="no CUDA GPU")
def test_profile_triton_add_per_instruction():
    cubin, spec = load_kernel("triton_add")
    result = profile(cubin, spec)
    print("\n[gpu] ncu:", " ".join(result.command))
    assert result.ok, result.message
    print(f"[gpu] ncu columns: {result.columns}")
    assert result.records and all(r.offset % 16 == 0 for r in result.records)
    assert sum(r.executed or 0 for r in result.records) > 0
    assert any(r.stalls for r in result.records)
