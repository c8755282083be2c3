#!/usr/bin/env bash
# Here (not on the H200): fill .whl/ with what the H200's image lacks, for `run(..., carry=[".whl"])`.
# The image has torch, numpy, rich, safetensors, pytest, hypothesis and cuda-python; it lacks the LSP stack,
# gymnasium and pyelftools, and it cannot reach a registry. Its python3 is 3.12, so sass_lsp runs there as
# pure Python (SASS_LSP_PURE=1). Its nvdisasm on PATH is older than the package's and writes other text (the
# ELF metadata's instruction offsets as numbers, blocks split elsewhere), so the package's nvdisasm wheel
# comes along and is found first.
# OLD=rev also puts that revision's sass_lsp under .whl/old, for first_call.sh's before/after comparison.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
grep -qx '/.whl/' .git/info/exclude || echo '/.whl/' >> .git/info/exclude
mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_17_x86_64 -d .whl \
    attrs cattrs lsprotocol==2025.0.0 pygls farama-notifications gymnasium pyelftools pytest-asyncio pytest-lsp \
    threadpoolctl 'nvidia-cuda-nvdisasm>=13.0'
cp benchmarks/h200/setup.sh benchmarks/h200/eval.sh benchmarks/h200/rows.sh benchmarks/h200/first_call.sh \
    benchmarks/h200/perf_campaign.sh \
    benchmarks/h200/finetune_moves.sh .whl/
rm -rf .whl/old
if [ -n "${OLD:-}" ]; then mkdir -p .whl/old && git archive "$OLD" sass_lsp | tar -x -C .whl/old; fi
du -sh .whl
