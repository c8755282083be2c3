#!/usr/bin/env python3
"""How much faster could any version of each held-out kernel be? Its roofline floor against its measured time.

For each kernel in the measurement logs (``GpuMeasure``'s JSON lines, ``reorder_eval.py --log``), the
original's median time (every screened trial times the original beside its candidate: ``orig_ms``) is set
against two floors: the fewest bytes the launch must move (each input buffer read once, each output
written once, from the launch spec) over the device's copy bandwidth, and, for the matrix products, their
arithmetic over the unit's rate. ``cap`` = time / floor bounds the speedup of any version of the kernel;
a reordering within basic blocks moves no fewer bytes and does no less arithmetic, so it is bounded by it
too. Printed beside it: the best screened speedup over every candidate in the logs (biased upwards: a
maximum over noisy ratios) and how many candidates were screened.

Ceilings, from /work/.library/device/KINDS.md (measured on these H200 machines) unless noted:
device-to-device copy 4.3 TB/s (bytes read + written), fp16/bf16 matrix product 788 TFLOP/s on random data;
fp32 FMA 67 TFLOP/s is the datasheet's (a lead, not measured here).

    python benchmarks/headroom.py benchmarks/results/reorder_measurements_h200_run*.jsonl.gz
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from sass_lsp.gpu import load_spec, spec_from_json
from sass_lsp.gpu.corpus import corpus_dir
from sass_lsp.gpu.measure import read_log

ROOT = Path(__file__).resolve().parents[1]
COPY_BYTES_PER_S = 4.3e12
# Arithmetic the matrix products must do (2·M·N·K) and the rate of the unit doing it.
FLOOR_FLOPS = {
    "sgemm_tiled": (2 * 2048**3, 67e12, "fp32 FMA (datasheet)"),
    "triton_matmul": (2 * 4096**3, 788e12, "fp16 tensor core"),
}
COLUMNS = (
    "kernel", "original_us", "bytes_mb", "achieved_tb_s", "bound", "floor_us", "of_roofline", "cap",
    "screened", "best_screened",
)  # fmt: skip
HEADER = (
    "kernel", "original µs", "bytes MB", "TB/s", "bound", "floor µs", "of roofline", "cap",
    "screened", "best screened",
)  # fmt: skip


def launch_spec(name: str):  # noqa: ANN201
    """The held-out kernel's launch spec: benchmarks/kernels CUDA C, else the corpus's launch JSON."""
    toml = ROOT / "benchmarks/kernels" / f"{name}.launch.toml"
    if toml.exists():
        return load_spec(toml)
    corpus = corpus_dir()
    if corpus is None or not (corpus / f"{name}.json").exists():
        raise SystemExit(f"{name}: no launch spec in benchmarks/kernels nor the corpus (SASS_LSP_CORPUS)")
    return spec_from_json((corpus / f"{name}.json").read_text(), (corpus / f"{name}.cubin").read_bytes())


def min_bytes(spec) -> int:  # noqa: ANN001
    """Bytes each buffer must cross device memory: read once if read, written once if written."""
    return sum(p.nbytes * (("in" in p.role) + ("out" in p.role)) for _, p in spec.buffers)


def headroom(logs: list[Path]) -> list[dict]:
    orig_ms: dict[str, list[float]] = defaultdict(list)
    best: dict[str, float] = defaultdict(lambda: 1.0)
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
                best[name] = max(best[name], rec["speedup"])
    rows = []
    for name in sorted(orig_ms):
        spec = launch_spec(name)
        seconds = statistics.median(orig_ms[name]) / 1e3
        nbytes = min_bytes(spec)
        floors = {"memory": nbytes / COPY_BYTES_PER_S}
        if name in FLOOR_FLOPS:
            flops, rate, unit = FLOOR_FLOPS[name]
            floors[unit] = flops / rate
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
                "best_screened": round(best[name], 4),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", type=Path, nargs="+")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    rows = headroom(args.logs)
    if not rows:
        print("error: no screened trial with the original's time in these logs", file=sys.stderr)
        return 2
    print("| " + " | ".join(HEADER) + " |")
    print("|---" * len(HEADER) + "|")
    for r in rows:
        cells = [r[k] for k in COLUMNS]
        cells[COLUMNS.index("of_roofline")] = f"{r['of_roofline']:.0%}"
        print("| " + " | ".join(map(str, cells)) + " |")
    geo = math.exp(statistics.fmean(math.log(r["cap"]) for r in rows))
    print(f"\ngeomean cap {geo:.3f} over {len(rows)} kernels (a bound on any version, not a prediction)")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "geomean_cap": geo}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
