#!/usr/bin/env bash
# The whole GPU suite and the evaluator benchmarks, in one go, on the GPU machine.
# Expects the `gpu` preset build in build/gpu/bin and its libraries in build/gpu-libs (see
# docs/perf.md); writes every result under $OUT (default: ./gpu-out).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
RAW=$OUT/raw # every log; packed into raw.tar.gz at the end (few files come back from the device)
mkdir -p "$RAW"
export LD_LIBRARY_PATH=$PWD/build/gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export KSEARCH_TEST_SOURCE_DIR=$PWD KSEARCH_TEST_BIN_DIR=$PWD/build/gpu/bin KSEARCH_TASKS_PATH=$PWD/tasks
export QT_QPA_PLATFORM=offscreen XDG_CACHE_HOME=/tmp/ksearch-cache
bin=build/gpu/bin
status=0
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; "$bin/ksearch-runner" --probe; } > "$RAW/device.txt" 2>&1

step() { # name, time limit in seconds, command...
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" > "$RAW/$name.log" 2>&1
    local rc=$?
    echo "$name: exit $rc in $((SECONDS - t0)) s"
    [ $rc -eq 0 ] || status=1
}

if [ "${SUITE_TESTS:-1}" = 1 ]; then
    step tst_cudacompile 120 "$bin/tst_cudacompile"
    step tst_runner 120 "$bin/tst_runner"
    step tst_evaluator 180 "$bin/tst_evaluator"
    step tst_gpukernels 240 "$bin/tst_gpukernels"
    step tst_gpuevaluator 300 "$bin/tst_gpuevaluator"
    grep -H "^Totals" "$RAW"/tst_*.log
fi
if [ "${SUITE_BENCH:-1}" = 1 ]; then
    for task in rmsnorm gqa_paged_decode_h32_kv4_d128_ps1; do
        step "eval_$task" 200 "$bin/ksearch" eval --task "$task" --backend cuda --json --keep --max-seconds 0.5 "tasks/$task/baseline.cu"
        job=$(grep -o 'scratch folder kept: .*' "$RAW/eval_$task.log" | sed 's/scratch folder kept: //')
        sed -i '/^scratch folder kept/d' "$RAW/eval_$task.log"; mv "$RAW/eval_$task.log" "$RAW/eval_$task.json"
        [ -n "$job" ] && step "indep_$task" 200 python3 bench/independent_timer.py "$job/candidate-1"
        [ -f "$RAW/indep_$task.log" ] && mv "$RAW/indep_$task.log" "$RAW/indep_$task.json"
        step "repeat_$task" 300 "$bin/ksearch" eval --task "$task" --backend cuda --json --repeat 10 --max-seconds 0.3 "tasks/$task/baseline.cu"
        [ -f "$RAW/repeat_$task.log" ] && mv "$RAW/repeat_$task.log" "$RAW/repeat_$task.json"
    done
    python3 bench/report.py "$RAW" | tee "$OUT/perf_tables.md"
fi
tar -C "$OUT" -czf "$OUT/raw.tar.gz" raw && rm -rf "$RAW"
exit $status
