#!/usr/bin/env bash
# On the GPU: one reorder-only measurement campaign (move_campaign.py) over the performance model's second
# training set, benchmarks/kernels/perf_train_v2.toml. S=seed [0] L=wall seconds for the whole campaign [520]
# N=the campaign's name [move_campaign_perf_v2_s$S] K=only the set's first K kernels, in the file's order [all]
# (a short call: each kernel needs about 50 s of wall time for 32 schedules) KERNELS="a b"=these of the set
# instead (a repair rule's hardware check: the kernel whose reorderings broke, on the fixed tree).
#   run(command="S=0 bash .whl/perf_campaign.sh", carry=[".whl"], timeout_s=600)
#   run(command="KERNELS=dp4a_gemm S=2 L=120 bash .whl/perf_campaign.sh; bash .whl/first_call.sh", ...)
# The campaign file comes back as $OUT/$N.tar.xz: commit it to benchmarks/results, name it in
# sass_lsp.perf.dataset.TRIAL_CAMPAIGNS, `python -m sass_lsp.perf.dataset build-trial`, and score it with
# `benchmarks/perf_model_eval.py --extra` (perf-v1.md's rule decides whether a checkpoint trains on it).
set -uo pipefail
source .whl/setup.sh || exit 1
kernels=${KERNELS:-$(python3 -c 'import tomllib; print(*tomllib.load(open("benchmarks/kernels/perf_train_v2.toml", "rb"))["kernels"])' | tr ' ' '\n' | head -n "${K:-99}")}
name=${N:-move_campaign_perf_v2_s${S:-0}}
timeout $(( ${L:-520} + 60 )) python3 benchmarks/move_campaign.py --kinds reorder --max-moves 12 --kernels $kernels \
    --budget 100 --time-limit "${L:-520}" --seed "${S:-0}" --out "$OUT/$name.tar.xz" 2>&1 | tail -n 20
echo "campaign rc ${PIPESTATUS[0]}"
