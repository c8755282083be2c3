# On the H200, sourced first by every command: install the carried wheels.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || return 1
export PYTHONPATH=/tmp/site:$PWD SASS_LSP_PURE=1 PYTHONUNBUFFERED=1
export SASS_LSP_SETUP=1 OMP_NUM_THREADS=4  # the search's CPU side (policy, assembly) shares the host with the worker
mkdir -p "$OUT"
# The tree's own digest, not `git log`: the copy's .git there is not the tree's (stop 19's said 8112530 for a725e93).
{ lscpu | grep 'Model name'; uptime; find sass_lsp benchmarks -name '*.py' | sort | xargs md5sum | md5sum; } \
    > "$OUT/host.txt"
nvidia-smi --query-gpu=name,clocks.current.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$OUT/smi.txt"
