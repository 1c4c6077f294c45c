#!/usr/bin/env bash
# Issue #13's benchmark, on the GPU machine: each task's baseline.cu timed through ksearch-runner
# and, as a Python candidate that calls the same compiled library (bench/native_in_python.py),
# through the Python runner, side by side in one `ksearch eval` (the baseline is timed by
# ksearch-runner in the same run). Then the same file evaluated as CUDA for the native overhead.
#
#   TASKS="rmsnorm gqa_paged_decode_h32_kv4_d128_ps1" bash bench/pyrunner_vs_runner.sh
#
# Expects build/gpu-carry.tar.xz. Prints the table (bench/pyrunner_table.py); JSON under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
RUN_NAME=pyrunner
source bench/device_run_common.sh
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
for task in ${TASKS:-rmsnorm gqa_paged_decode_h32_kv4_d128_ps1}; do
    dir=$RES/$task
    mkdir -p "$dir/include"
    "$BIN/ksearch" tasks show --abi "tasks/$task" > "$dir/include/ks_task.h"
    # The flags of gpu/compiler.cpp, so that both runners call the same machine code.
    "$nvcc" -std=c++17 -O3 -lineinfo -gencode=arch=compute_90a,code=sm_90a -Xcompiler -fPIC -shared \
        -I "$dir/include" "tasks/$task/baseline.cu" -o "$dir/base.so" || { status=1; continue; }
    python3 bench/native_in_python.py --task "tasks/$task" --header "$dir/include/ks_task.h" \
        --library "$dir/base.so" --out "$dir/wrap.py"
    for kind in python native; do
        file=$dir/wrap.py
        [[ $kind == native ]] && file=tasks/$task/baseline.cu
        t0=$SECONDS
        timeout "${LIMIT:-240}" "$BIN/ksearch" eval --task "$task" --json --repeat "${REPEATS:-3}" \
            --max-seconds "${MAX_SECONDS:-0.5}" "$file" > "$dir/$kind.json" 2> "$dir/$kind.err"
        echo "== $task $kind: exit $? in $((SECONDS - t0)) s" | tee -a "$RES/summary.log"
    done
done
python3 bench/pyrunner_table.py "$RES" | tee "$RES/table.md"
cp "$RES/table.md" "$OUT/" 2>/dev/null
exit $status
