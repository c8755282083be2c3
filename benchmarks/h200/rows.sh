#!/usr/bin/env bash
# On a machine of several H200s: several rows of the 300 s table at once, one per GPU, each as eval.sh runs it.
#   run(command='ROWS="sgemm_tiled:annealing:run29 stencil2d:beam:run30" bash .whl/rows.sh', carry=[".whl"],
#       kind="nvidia-h200-x2")
# A row is KERNEL:METHOD:RUN. Each row sees only its GPU (CUDA_VISIBLE_DEVICES), so its original and its
# candidates are timed on the same device; rows never share one. More rows than GPUs is refused: a second
# wave would not fit the call's 600 s.
set -uo pipefail
source .whl/setup.sh || exit 1
read -ra rows <<< "$ROWS"
gpus=$(nvidia-smi -L | wc -l)
if (( ${#rows[@]} > gpus )); then
    echo "rows.sh: ${#rows[@]} rows for $gpus GPUs; at most one row per GPU" >&2
    exit 2
fi
for i in "${!rows[@]}"; do
    IFS=: read -r K M R <<< "${rows[$i]}"
    K=$K M=$M R=$R CUDA_VISIBLE_DEVICES=$i bash .whl/eval.sh > "$OUT/eval_$R.out" 2>&1 &
done
wait
tail -n 4 "$OUT"/eval_*.out
