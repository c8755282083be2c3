#!/usr/bin/env bash
# On the H200: one row of the 300 s table. K=kernel M=method R=run name [B=GPU seconds, default 300]
# [S=the searches' seed, default 0: random replays the same moves under one seed, so a repeat takes another]
# [W=wall-clock seconds per row: screening stops in time to confirm within them, for a search whose CPU side
#  would not finish 300 GPU s inside the call's limit; the row's "stopped" and "gpu_seconds" say so].
#   run(command="K=sgemm_tiled M=annealing R=run19 bash .whl/eval.sh", carry=[".whl"])
# K may name several kernels (K="gelu_bias stencil2d"): one row each, in turn, for a method as short as greedy.
# The log (one JSON row + table), every measurement (.jsonl.gz) and the rows' JSON come back under $OUT;
# the call's 600 s limit leaves ~250 s of wall time beyond a 300 s budget for start-up and confirmation.
set -uo pipefail
[ -n "${SASS_LSP_SETUP:-}" ] || source .whl/setup.sh || exit 1  # rows.sh has set up once for all rows
timeout 560 python3 benchmarks/reorder_eval.py --kernels $K --methods "$M" --budget "${B:-300}" --seed "${S:-0}" ${W:+--wall-limit "$W"} \
    --log "$OUT/reorder_measurements_h200_$R.jsonl" --json "$OUT/reorder_eval_h200_$R.json" \
    2>&1 | tee "$OUT/reorder_eval_h200_$R.log"
echo "eval rc ${PIPESTATUS[0]}" | tee -a "$OUT/reorder_eval_h200_$R.log"
# compressed, or a 300 s row's log (tens of MB: each record holds its edits) is too large to come back
gzip -9f "$OUT/reorder_measurements_h200_$R.jsonl"
nvidia-smi --id="${CUDA_VISIBLE_DEVICES:-0}" \
    --query-gpu=clocks.current.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv >> "$OUT/smi_$R.txt"
