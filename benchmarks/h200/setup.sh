# On the H200, sourced first by every command: install the carried wheels and point sass_lsp at the corpus.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || return 1
export PYTHONPATH=/tmp/site:$PWD SASS_LSP_PURE=1 SASS_LSP_CORPUS=$PWD/.whl/corpus PYTHONUNBUFFERED=1
export OMP_NUM_THREADS=4  # the search's CPU side (policy, assembly) shares the host with the worker
mkdir -p "$OUT"
{ lscpu | grep 'Model name'; uptime; git log --oneline -1 2>/dev/null; } > "$OUT/host.txt"
nvidia-smi --query-gpu=name,clocks.current.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$OUT/smi.txt"
