#!/usr/bin/env bash
# On the H200, a session's first call: the GPU tests on this tree, then the screening overhead of an older
# tree against this one, alternating (old, new, old, new), each side's requests timed by the same
# screen_phases.py. OLD=rev given to pack.sh put that revision's sass_lsp under .whl/old.
#   run(command="bash .whl/first_call.sh", carry=[".whl"], timeout_s=600)
# Comes back: gpu_tests.txt, phases_{old,new}_{1,2}.txt, host.txt, smi.txt.
set -uo pipefail
source .whl/setup.sh >/dev/null 2>&1 || exit 1
# every test file with a test marked gpu (collecting only those: the others may import what the image lacks)
timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider $(grep -l "mark.gpu" tests/test_*.py) \
    > "$OUT/gpu_tests.txt" 2>&1
echo "pytest rc $?" >> "$OUT/gpu_tests.txt"
tail -n 3 "$OUT/gpu_tests.txt"
[ -d .whl/old/sass_lsp ] || { echo "no .whl/old/sass_lsp: pack.sh with OLD=rev makes it"; exit 0; }
new=$PYTHONPATH old=/tmp/site:$PWD/.whl/old
cd benchmarks
for r in 1 2; do
    for side in old new; do
        [ "$side" = old ] && p=$old || p=$new
        PYTHONPATH=$p:$PWD timeout 60 python3 screen_phases.py --kernels sgemm_tiled triton_matmul \
            --candidates 12 > "$OUT/phases_${side}_$r.txt" 2>&1
        echo "$side $r rc $?" | tee -a "$OUT/phases_${side}_$r.txt"
    done
done
grep -h -A4 "of requests per candidate" "$OUT"/phases_*.txt | head -40
