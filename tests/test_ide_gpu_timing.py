"""GPU timing and profile results in editor terms: formatting, placement, offset → line mapping (pure)."""

from __future__ import annotations

from pathlib import Path

from sass_lsp.gpu.availability import no_gpu_message
from sass_lsp.ide import gpu_timing, profile_view
from sass_lsp.ide.index import build_index

OPS = ["LDC R1, c[0x0][0x28]", "S2R R0, SR_TID.X", "LDG.E R2, desc[UR4][R2.64]", "FADD R3, R2, R2"]


def cuasm(n: int = 40, addr: bool = True) -> str:
    head = [
        '\t.section\t.text.add_kernel,"ax",@progbits',
        "          .type           add_kernel,@function",
        '          .other          add_kernel,@"STO_CUDA_ENTRY STV_DEFAULT"',
        "  add_kernel:",
        "  .text.add_kernel:",
    ]
    body = []
    for i in range(n):
        comment = f"/*{i * 16:04x}*/" if addr else ""
        body.append(f"      [B------:R-:W-:-:S01]         {comment}                   {OPS[i % len(OPS)]} ;")
    body.append("      [B------:R-:W-:-:S05]                                   EXIT ;")
    return "\n".join(head + body) + "\n"


INDEX = build_index(cuasm())
KERNEL_LINE = 0
FIRST_INSTR = 5


def bench(**over) -> dict:
    base = {
        "label": "add",
        "kernel": "add_kernel",
        "verdict": "faster",
        "verified": True,
        "message": "+7.00% faster",
        "verification": {
            "status": "match",
            "bit_identical": True,
            "seeds": [0, 1, 2, 3, 4],
            "mismatches": [],
        },
        "timing": {
            "orig": {"median": 0.107},
            "edit": {"median": 0.1},
            "ci": {"ratio": 1.07, "low": 1.06, "high": 1.08, "confidence": 0.95},
            "rounds": 40,
            "batch": 8,
            "method": "graph",
            "cache": "rotate",
        },
        "device": {"gpu": "NVIDIA H200", "driver": "570"},
    }
    base.update(over)
    return base


def test_companion_paths_share_the_stem():
    found = gpu_timing.companions(Path("/w/k.cuasm"))
    assert found.spec == Path("/w/k.launch.toml")
    assert found.cubin == Path("/w/k.cubin")
    assert found.profile == Path("/w/k.profile.json")
    msg = gpu_timing.missing_spec_message(Path("/w/k.cuasm"), found.spec)
    assert "/w/k.launch.toml" in msg and "k.cuasm" in msg


def test_verified_text_lens_and_hint():
    view = gpu_timing.view_result(bench())
    assert view.text == "verified 1.07× (95% CI 1.06–1.08), outputs bit-identical on 5 inputs"
    lens = gpu_timing.timing_lens(INDEX, view, "file:///w/k.cuasm")
    assert lens is not None and lens.line == KERNEL_LINE and view.text in lens.title
    assert lens.command == gpu_timing.CMD_TIME_EDIT and lens.arguments == ("file:///w/k.cuasm",)
    hint = gpu_timing.timing_hint(INDEX, view)
    assert hint is not None and hint.line == KERNEL_LINE and view.text in hint.label
    assert "NVIDIA H200" in hint.tooltip
    assert gpu_timing.timing_diagnostics(INDEX, view) == []
    assert view.summary["verified"] and view.summary["speedup"] == 1.07
    stale = gpu_timing.timing_lens(INDEX, view, "u", stale_version=3)
    assert stale is not None and "version 3" in stale.title


def test_not_significant_and_slower():
    ci = {"ratio": 1.001, "low": 0.99, "high": 1.01, "confidence": 0.95}
    timing = {**bench()["timing"], "ci": ci}
    view = gpu_timing.view_result(bench(verdict="not_significant", verified=False, timing=timing))
    assert view.text.startswith("no significant difference: 1.00× (95% CI 0.99–1.01)")
    tol = {"status": "match", "bit_identical": False, "seeds": [0]}
    slower = gpu_timing.view_result(bench(verdict="slower", verified=False, verification=tol))
    assert slower.text.startswith("slower 1.07×") and slower.text.endswith("within tolerance on 1 input")


def test_mismatch_gives_a_diagnostic_with_buffer_index_values_and_seed():
    mismatch = {
        "param_idx": 2,
        "name": "out",
        "kind": "output",
        "n_diff": 3,
        "n_elems": 1024,
        "first_idx": 387,
        "first_pos": [387],
        "expected": "1.5",
        "got": "1.25",
        "expected_bits": "0x3fc00000",
        "got_bits": "0x3fa00000",
        "seed": 3,
    }
    ver = {"status": "mismatch", "bit_identical": False, "seeds": [0, 1, 2, 3], "mismatches": [mismatch]}
    view = gpu_timing.view_result(
        bench(verdict="mismatch", verified=False, verification=ver, timing=None, message="mismatch: …")
    )
    assert view.text.startswith("NOT verified: outputs differ")
    (diag,) = gpu_timing.timing_diagnostics(INDEX, view)
    assert diag.line == KERNEL_LINE and diag.severity == "error" and diag.code == gpu_timing.DIAG_CODE
    for part in ("params[2] out[387]", "expected 1.5 (0x3fc00000)", "got 1.25 (0x3fa00000)", "seed 3"):
        assert part in diag.message


def test_no_device_and_failures_are_plain_messages():
    said = no_gpu_message(ImportError("No module named 'cuda'", name="cuda"))
    view = gpu_timing.view_result(
        bench(verdict="no_device", verified=False, timing=None, verification={}, message=said)
    )
    assert view.text == said and "pip install 'sass-lsp[gpu]'" in view.text
    assert gpu_timing.timing_diagnostics(INDEX, view) == []
    fault = gpu_timing.view_result(
        bench(verdict="fault", verified=False, timing=None, message="edit kernel failed: ILLEGAL_ADDRESS")
    )
    assert fault.text == "GPU timing failed (fault): edit kernel failed: ILLEGAL_ADDRESS"


def test_store_is_per_version():
    store = gpu_timing.TimingStore()
    view = gpu_timing.view_result(bench())
    store.put("u", 4, view)
    assert store.current("u", 4) is view and store.current("u", 5) is None
    assert store.latest("u") == (4, view)
    store.forget("u")
    assert store.latest("u") is None


def profile_json(n: int = 40, hot: range = range(20, 36)) -> dict:
    records = []
    for i in range(n):
        samples = 100.0 if i in hot else 1.0
        metrics = {
            "Warp Stall Sampling (All Samples)": samples,
            "Warp Stall Sampling (Not-issued Samples)": samples / 2,
            "Instructions Executed": 16384.0,
            "stall_long_sb": samples * 0.6,
            "stall_wait": samples * 0.3,
            "stall_math": samples * 0.1,
            "stall_barrier": 0.0,
        }
        records.append({"offset": i * 16, "sass": OPS[i % len(OPS)], "metrics": metrics})
    records.append({"offset": n * 16, "sass": "EXIT", "metrics": {"Instructions Executed": 16384.0}})
    return {"records": records, "command": [], "export_command": [], "columns": [], "ok": True, "message": ""}


def test_profile_maps_offsets_to_lines_and_hovers():
    view = profile_view.profile_view(INDEX, profile_json())
    assert view is not None and view.kernel.name == "add_kernel"
    line = FIRST_INSTR + 22  # offset 0x160
    assert "/*0160*/" in INDEX.lines[line]
    md = view.instruction_markdown(line)
    assert md is not None
    assert "executed **16,384** times" in md and "**100** stall samples" in md
    reasons = [ln for ln in md.splitlines() if ln.startswith("- ")]
    assert reasons == [
        "- `long_sb`: 60 samples (60%)",
        "- `wait`: 30 samples (30%)",
        "- `math`: 10 samples (10%)",
    ]
    exit_md = view.instruction_markdown(FIRST_INSTR + 40)
    assert exit_md is not None and "no stall samples" in exit_md


def test_profile_hottest_window_lens():
    view = profile_view.profile_view(INDEX, profile_json())
    assert view is not None
    lens = view.lens(INDEX)
    assert lens is not None and lens.line == KERNEL_LINE
    first, last = FIRST_INSTR + 20 + 1, FIRST_INSTR + 35 + 1
    share = 1600 / (1600 + 24)
    assert lens.title == f"hottest: lines {first}–{last}, {share:.0%} of stall samples"


def test_profile_without_address_comments_uses_instruction_order():
    index = build_index(cuasm(addr=False))
    view = profile_view.profile_view(index, profile_json())
    assert view is not None and FIRST_INSTR + 22 in view.by_line
    assert view.by_line[FIRST_INSTR + 22].offset == 22 * 16


def test_profile_that_fits_no_kernel_or_failed():
    other = {"records": [{"offset": 0, "sass": "HMMA.16816.F32 R0, R4, R8, R0", "metrics": {}}], "ok": True}
    assert profile_view.profile_view(INDEX, other) is None
    assert (
        profile_view.profile_view(INDEX, {"records": [], "ok": False, "message": "ncu not on PATH"}) is None
    )
    assert profile_view.profile_view(INDEX, ["not", "a", "profile"]) is None
