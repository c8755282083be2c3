"""Feature: per-instruction profile. Runs Nsight Compute on one launch and returns records per SASS offset.

The exact commands (``ncu`` 2025.x, CUDA 13; ``REPORT`` is a temporary path)::

    ncu --clock-control none --target-processes all --kernel-name KERNEL --launch-count 1 \\
        --section SourceCounters --section WarpStateStats --export REPORT --force-overwrite \\
        python -m sass_lsp.gpu.launch_once KERNEL.cubin K.launch.toml
    ncu --import REPORT.ncu-rep --page source --print-source sass --csv

``--clock-control none`` leaves the GPU's clocks as they are (the lent H200s must not be reconfigured, and the
numbers then match what the timing runs see). ``SourceCounters`` collects warp-state sampling per PC and the
executed-instruction counts per SASS instruction; the second command prints the Source page as CSV, one row
per SASS instruction. Column names differ between ncu versions, so every numeric column is kept under its
own name; stall-reason columns are those whose name mentions a stall, and addresses are turned into offsets
from the kernel's first instruction.
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sass_lsp.gpu.spec import LaunchSpec, write_spec
from sass_lsp.model.profile import InstructionProfile

SECTIONS = ("SourceCounters", "WarpStateStats")


@dataclass(frozen=True)
class ProfileResult:
    records: list[InstructionProfile]
    command: list[str]
    export_command: list[str]
    columns: list[str]
    ok: bool = True
    message: str = ""


def ncu_commands(
    ncu: str, report: Path, cubin_path: Path, spec_path: Path, kernel: str, python: str = sys.executable
) -> tuple[list[str], list[str]]:
    profile_cmd = [
        ncu,
        "--clock-control",
        "none",
        "--target-processes",
        "all",
        "--kernel-name",
        kernel,
        "--launch-count",
        "1",
    ]
    for section in SECTIONS:
        profile_cmd += ["--section", section]
    profile_cmd += [
        "--export",
        str(report),
        "--force-overwrite",
        python,
        "-m",
        "sass_lsp.gpu.launch_once",
        str(cubin_path),
        str(spec_path),
    ]
    export_cmd = [ncu, "--import", f"{report}.ncu-rep", "--page", "source", "--print-source", "sass", "--csv"]
    return profile_cmd, export_cmd


def find_ncu() -> str | None:
    """The ``ncu`` executable on PATH, or None."""
    return shutil.which("ncu")


def profile(
    cubin: bytes, spec: LaunchSpec, *, ncu: str | None = None, timeout_s: float = 600.0
) -> ProfileResult:
    """Profile one launch of ``cubin`` under ``spec``; failures come back as ``ok=False`` (ncu's text)."""
    exe = ncu or find_ncu()
    if exe is None:
        return ProfileResult([], [], [], [], ok=False, message="ncu (Nsight Compute) is not on PATH")
    with tempfile.TemporaryDirectory(prefix="sass-lsp-ncu-") as tmp:
        tmp_path = Path(tmp)
        cubin_path = tmp_path / "kernel.cubin"
        spec_path = tmp_path / "kernel.launch.toml"
        cubin_path.write_bytes(cubin)
        spec_path.write_text(write_spec(spec))
        profile_cmd, export_cmd = ncu_commands(exe, tmp_path / "report", cubin_path, spec_path, spec.kernel)
        from sass_lsp.gpu.runner import worker_env

        env = worker_env(None)
        try:
            run = subprocess.run(profile_cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
            if run.returncode != 0:
                return ProfileResult(
                    [],
                    profile_cmd,
                    export_cmd,
                    [],
                    ok=False,
                    message=f"ncu failed ({run.returncode}):\n{run.stdout[-3000:]}{run.stderr[-3000:]}",
                )
            export = subprocess.run(export_cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return ProfileResult(
                [], profile_cmd, export_cmd, [], ok=False, message=f"ncu ran over {timeout_s:g} s"
            )
        if export.returncode != 0:
            return ProfileResult(
                [],
                profile_cmd,
                export_cmd,
                [],
                ok=False,
                message=f"ncu --import failed:\n{export.stderr[-3000:]}",
            )
        columns, records = parse_source_csv(export.stdout)
        if not records:
            return ProfileResult(
                [],
                profile_cmd,
                export_cmd,
                columns,
                ok=False,
                message=f"no SASS rows in ncu's output:\n{export.stdout[:2000]}",
            )
        return ProfileResult(records, profile_cmd, export_cmd, columns)


def parse_source_csv(text: str) -> tuple[list[str], list[InstructionProfile]]:
    """Rows of ncu's ``--page source --print-source sass --csv`` output, one per SASS instruction."""
    rows = list(csv.reader(io.StringIO(text)))
    header_idx = next(
        (
            i
            for i, row in enumerate(rows)
            if _find(row, "address") is not None and _find(row, "source") is not None
        ),
        None,
    )
    if header_idx is None:
        return [], []
    header = [h.strip() for h in rows[header_idx]]
    addr_col = _find(header, "address")
    src_col = _find(header, "source")
    assert addr_col is not None and src_col is not None
    parsed: list[tuple[int, str, dict[str, float]]] = []
    for row in rows[header_idx + 1 :]:
        if len(row) != len(header):
            if parsed:
                break  # the next function's block (or a trailer) starts here
            continue
        address = _parse_int(row[addr_col])
        if address is None:
            continue
        metrics = {}
        for col, name in enumerate(header):
            if col in (addr_col, src_col) or not name:
                continue
            value = _parse_float(row[col])
            if value is not None:
                metrics[name] = value
        parsed.append((address, row[src_col].strip(), metrics))
    if not parsed:
        return header, []
    base = min(addr for addr, _, _ in parsed)
    return header, [InstructionProfile(addr - base, sass, metrics) for addr, sass, metrics in parsed]


def _find(row: list[str], name: str) -> int | None:
    for idx, cell in enumerate(row):
        if cell.strip().strip("#").strip().lower() == name:
            return idx
    return None


def _parse_int(text: str) -> int | None:
    # ncu prints SASS addresses in hex, with or without 0x.
    try:
        return int(text.strip(), 16)
    except ValueError:
        return None


def _parse_float(text: str) -> float | None:
    text = text.strip().replace(",", "").rstrip("%")
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None
