#!/usr/bin/env python3
"""How much faster could any version of each held-out kernel be? Its roofline floor against its measured time.

For each kernel in the measurement logs (``GpuMeasure``'s JSON lines, ``reorder_eval.py --log``), the
original's median time (every screened trial times the original beside its candidate: ``orig_ms``) is set
against two floors: the fewest bytes the launch must move (each input buffer read once, each output
written once, from the launch spec the evaluation loads the kernel with: nvcc compiles the CUDA C ones)
over the device's copy bandwidth, and, for the matrix products, their arithmetic over the unit's rate.
``cap`` = time / floor bounds the speedup of any version of the kernel; a reordering within basic blocks
moves no fewer bytes and does no less arithmetic, so it is bounded by it too. Printed beside it: the best
screened speedup over every candidate in the logs (biased upwards: a maximum over noisy ratios) and how
many candidates were screened; below the table, the geometric means of the caps and of the best screened
(what a search that always found the fastest schedule any of these logs measured would score).

Ceilings (``--gpu``): the device-to-device copy (bytes read + written) and the fp16/bf16 matrix product on
random data were measured on the lent machines (/work/.library/device/KINDS.md: H200 4.3 TB/s and 788 TFLOP/s,
H100 3.0 TB/s and 798 TFLOP/s); the rest are datasheet rates shared by both (same chip and clocks), leads
rather than measurements: fp32 FMA 67 TFLOP/s, dense fp8 matrix product 1,979 TFLOP/s, and MUFU (exp2 and
the other special functions) 16 per clock per SM, 132 SMs at 1.98 GHz. A kernel with several units gets a
floor for each, and the largest is its bound (flash attention: its matrix products, or its exponentials).

    R=benchmarks/results/reorder_eval_h200.tar.xz  # ARCHIVE:MEMBER paths: benchmarks/results_archive.py
    python benchmarks/headroom.py "$R:reorder_measurements_h200_run*.jsonl"
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from reorder_eval import load_kernel  # a held-out kernel as the evaluation loads it
from results_archive import expand

from sass_lsp.gpu.measure import read_log

# Per GPU: (copy bytes/s, fp16/bf16 matrix FLOP/s), both measured; the other rates are datasheet leads.
MEASURED = {"h200": (4.3e12, 788e12), "h100": (3.0e12, 798e12)}
FP32_FMA, FP8_TENSOR, MUFU = 67e12, 1979e12, 132 * 16 * 1.98e9
FLASH_BHND = (4, 16, 1024, 64)  # flash_attn_fwd's batch, heads, sequence, head dim (its corpus launch)
# The work each compute-bound kernel must do, per unit: (amount, rate or None for the measured tensor rate,
# unit). Matrix products 2·M·N·K; conv2d 2·(3·3·C)·C·H·W; attention two products of 2·N·N·D per head, and
# one exponential per score.
FLOOR_WORK = {
    "sgemm_tiled": [(2 * 2048**3, FP32_FMA, "fp32 FMA (datasheet)")],
    "triton_matmul": [(2 * 4096**3, None, "fp16 tensor core")],
    "bf16_gemm": [(2 * 2048**3, None, "bf16 tensor core")],
    "fp8_blockscale_gemm": [(2 * 2048**3, FP8_TENSOR, "fp8 tensor core (datasheet)")],
    "conv2d": [(2 * 9 * 64 * 64 * 512 * 512, FP32_FMA, "fp32 FMA (datasheet)")],
    "flash_attn_fwd": [
        (4 * FLASH_BHND[0] * FLASH_BHND[1] * FLASH_BHND[2] ** 2 * FLASH_BHND[3], None, "fp16 tensor core"),
        (FLASH_BHND[0] * FLASH_BHND[1] * FLASH_BHND[2] ** 2, MUFU, "MUFU exp2 (datasheet)"),
    ],
}
COLUMNS = (  # (row key, table heading)
    ("kernel", "kernel"), ("original_us", "original µs"), ("bytes_mb", "bytes MB"), ("achieved_tb_s", "TB/s"),
    ("bound", "bound"), ("floor_us", "floor µs"), ("of_roofline", "of roofline"), ("cap", "cap"),
    ("screened", "screened"), ("best_screened", "best screened"),
)  # fmt: skip


def min_bytes(spec) -> int:  # noqa: ANN001
    """Bytes each buffer must cross device memory: read once if read, written once if written."""
    return sum(p.nbytes * (("in" in p.role) + ("out" in p.role)) for _, p in spec.buffers)


def headroom(logs: list[Path], gpu: str = "h200") -> list[dict]:
    copy_rate, tensor_rate = MEASURED[gpu]
    orig_ms: dict[str, list[float]] = defaultdict(list)
    best: dict[str, float] = {}
    screened: dict[str, int] = defaultdict(int)
    for log in logs:
        for rec in read_log(log):
            if rec.get("kind") != "screen":
                continue
            name = rec["kernel"]
            screened[name] += 1
            if rec.get("orig_ms"):
                orig_ms[name].append(rec["orig_ms"])
            if rec.get("verdict") == "match" and rec.get("speedup"):
                best[name] = max(best.get(name, 0.0), rec["speedup"])
    rows = []
    for name in sorted(orig_ms):
        _text, _cubin, spec = load_kernel(name)
        seconds = statistics.median(orig_ms[name]) / 1e3
        nbytes = min_bytes(spec)
        floors = {"memory": nbytes / copy_rate}
        for work, rate, unit in FLOOR_WORK.get(name, ()):
            floors[unit] = work / (rate or tensor_rate)
        bound, floor = max(floors.items(), key=lambda kv: kv[1])
        rows.append(
            {
                "kernel": name,
                "original_us": round(seconds * 1e6, 2),
                "bytes_mb": round(nbytes / 1e6, 1),
                "achieved_tb_s": round(nbytes / seconds / 1e12, 2),
                "bound": bound,
                "floor_us": round(floor * 1e6, 2),
                "of_roofline": round(floor / seconds, 3),
                "cap": round(seconds / floor, 3),
                "screened": screened[name],
                "best_screened": round(best[name], 4) if name in best else None,
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", type=Path, nargs="+")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--gpu", choices=sorted(MEASURED), default="h200", help="whose measured ceilings to use")
    args = ap.parse_args(argv)
    args.logs = expand(args.logs)
    rows = headroom(args.logs, args.gpu)
    if not rows:
        print("error: no screened trial with the original's time in these logs", file=sys.stderr)
        return 2
    print("| " + " | ".join(title for _, title in COLUMNS) + " |")
    print("|---" * len(COLUMNS) + "|")
    for r in rows:
        cells = [f"{r[k]:.0%}" if k == "of_roofline" else str(r[k]) for k, _ in COLUMNS]
        print("| " + " | ".join(cells) + " |")
    geo = statistics.geometric_mean(r["cap"] for r in rows)
    print(f"\ngeomean cap {geo:.3f} over {len(rows)} kernels (a bound on any version, not a prediction)")
    # The best screened schedule of each kernel, over every method and run in the logs: what a search that
    # always found the fastest schedule anything measured would score, before the confirmation's shrinkage.
    found = [r["best_screened"] for r in rows if r["best_screened"]]
    best_geo = statistics.geometric_mean(found) if len(found) == len(rows) else None
    if best_geo:
        print(
            f"geomean of the best screened {best_geo:.4f} over {len(rows)} kernels (each kernel's fastest "
            "schedule of all these logs, screened, not confirmed)"
        )
    if args.json:
        out = {"rows": rows, "geomean_cap": geo, "geomean_best_screened": best_geo}
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
