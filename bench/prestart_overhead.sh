#!/usr/bin/env bash
# What starting runners ahead saves (issues #13 and #14), on the GPU machine: the evaluator's
# overhead per candidate beyond compile and timed GPU work, with runners started ahead (the
# default) and started when the candidate is ready (--cold-runners), side by side in one call.
# Native: each task's baseline.cu through ksearch-runner. Python: the same compiled kernel as a
# Python candidate (bench/native_in_python.py) through the Python runner, also with a gap between
# repeats (--gap, the model's turn in a search) so the runner started ahead has time to come up.
#
#   TASKS="rmsnorm gqa_paged_decode_h32_kv4_d128_ps1" REPEATS=6 GAP=4 bash bench/prestart_overhead.sh
#   (NATIVE_GAP=S gives the native repeats a gap too; PYTHON=0 leaves the Python runner out;
#   PAGEABLE=1 adds ksearch-runner copying from pageable memory, KSEARCH_PIN_TRANSFERS=0;
#   PYTHON_COLD=0 leaves out the Python runner started with its candidate, NATIVE=0 ksearch-runner;
#   NOGAP=0 the Python runner's back-to-back repeats)
#
# Expects build/gpu-carry.tar.xz. Prints the table (bench/prestart_table.py); JSON under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
RUN_NAME=prestart
source bench/device_run_common.sh
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
repeats=${REPEATS:-6}
gap=${GAP:-4}
native_gap=${NATIVE_GAP:-0} # as nvcc's time on a new candidate in a search; 0: back to back
evaluate() { # output name, file, extra flags...
    local name=$1 file=$2; shift 2
    local t0=$SECONDS
    timeout "${LIMIT:-300}" "$BIN/ksearch" eval --task "$task" --json --repeat "$repeats" --max-seconds 0.1 "$@" \
        "$file" > "$dir/$name.json" 2> "$dir/$name.err"
    echo "== $task $name: exit $? in $((SECONDS - t0)) s" | tee -a "$RES/summary.log"
}
for task in ${TASKS:-rmsnorm gqa_paged_decode_h32_kv4_d128_ps1}; do
    dir=$RES/$task
    mkdir -p "$dir/include"
    if [[ ${NATIVE:-1} == 1 ]]; then
        evaluate native-cold "tasks/$task/baseline.cu" --cold-runners --gap "$native_gap"
        evaluate native-ahead "tasks/$task/baseline.cu" --gap "$native_gap"
    fi
    [[ ${PAGEABLE:-0} == 1 ]] && KSEARCH_PIN_TRANSFERS=0 evaluate native-ahead-pageable "tasks/$task/baseline.cu" \
        --gap "$native_gap"
    [[ ${PYTHON:-1} == 1 ]] || continue
    "$BIN/ksearch" tasks show --abi "tasks/$task" > "$dir/include/ks_task.h"
    "$nvcc" -std=c++17 -O3 -lineinfo -gencode=arch=compute_90a,code=sm_90a -Xcompiler -fPIC -shared \
        -I "$dir/include" "tasks/$task/baseline.cu" -o "$dir/base.so" || { status=1; continue; }
    python3 bench/native_in_python.py --task "tasks/$task" --header "$dir/include/ks_task.h" \
        --library "$dir/base.so" --out "$dir/wrap.py"
    [[ ${PYTHON_COLD:-1} == 1 ]] && evaluate python-cold "$dir/wrap.py" --cold-runners --gap "$gap"
    evaluate python-ahead "$dir/wrap.py" --gap "$gap"
    [[ ${NOGAP:-1} == 1 ]] && evaluate python-ahead-nogap "$dir/wrap.py"
done
python3 bench/prestart_table.py "$RES" | tee "$RES/table.md"
cp "$RES/table.md" "$OUT/" 2>/dev/null
exit $status
