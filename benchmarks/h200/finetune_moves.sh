#!/usr/bin/env bash
# On the GPU: fine-tune the move game's policy on measured GPU time (`sass-lsp finetune`, the Triton training
# kernels), then one row of the 300 s table drawn from the fine-tuned checkpoint (reorder_eval.py's
# policy_moves), in one call. F=GPU seconds of fine-tuning [default 120] K=kernel R=run name W=the row's
# wall-clock seconds [B=the row's GPU seconds, default 300].
#   run(command="F=120 K=flash_attn_fwd R=flash_moves W=300 bash .whl/finetune_moves.sh", carry=[".whl"])
# The fine-tuned checkpoint comes back as $OUT/moves-v1-ft.tar.gz (a call returns at most 8 files; commit it as
# sass_lsp/policy/models/moves-v1).
set -uo pipefail
source .whl/setup.sh || exit 1
timeout $(( ${F:-120} * 2 + 60 )) python3 -c 'import sys; from sass_lsp.cli import main; sys.argv[0] = "sass-lsp"; sys.exit(main())' \
    finetune --policy sass_lsp/policy/models/moves-v1 --out "$OUT/moves-v1-ft" --budget "${F:-120}" \
    2>&1 | tee "$OUT/finetune_moves.log"
echo "finetune rc ${PIPESTATUS[0]}" | tee -a "$OUT/finetune_moves.log"
tar -C "$OUT" -czf "$OUT/moves-v1-ft.tar.gz" moves-v1-ft && mv "$OUT/moves-v1-ft" /tmp/moves-v1-ft
timeout "$(( ${W:-300} + 40 ))" python3 benchmarks/reorder_eval.py --kernels $K --methods policy_moves \
    --moves-policy /tmp/moves-v1-ft --budget "${B:-300}" --wall-limit "${W:-300}" \
    --log "$OUT/reorder_measurements_h200_$R.jsonl" --json "$OUT/reorder_eval_h200_$R.json" \
    2>&1 | tee "$OUT/reorder_eval_h200_$R.log"
echo "eval rc ${PIPESTATUS[0]}" | tee -a "$OUT/reorder_eval_h200_$R.log"
gzip -9f "$OUT/reorder_measurements_h200_$R.jsonl"
