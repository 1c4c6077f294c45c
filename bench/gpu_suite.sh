#!/usr/bin/env bash
# The GPU test suite and the evaluator benchmarks, in one go, on the GPU machine.
# Expects the `gpu` preset build in build/gpu/bin and its libraries in build/gpu-libs (see
# docs/perf.md). Writes at most eight files under $OUT (default ./gpu-out): the device
# probe, all test logs in one file, the evaluation and timer JSON, and the perf tables.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/build/gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export KSEARCH_TEST_SOURCE_DIR=$PWD KSEARCH_TEST_BIN_DIR=$PWD/build/gpu/bin KSEARCH_TASKS_PATH=$PWD/tasks
export QT_QPA_PLATFORM=offscreen XDG_CACHE_HOME=/tmp/ksearch-cache
bin=build/gpu/bin
tests=${SUITE_TESTS:-"tst_cudacompile tst_runner tst_evaluator tst_gpukernels tst_gpuevaluator"}
tasks=${SUITE_TASKS:-"rmsnorm gqa_paged_decode_h32_kv4_d128_ps1"}
repeat_tasks=${SUITE_REPEAT:-"gqa_paged_decode_h32_kv4_d128_ps1"}
status=0
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; "$bin/ksearch-runner" --probe; } > "$OUT/device.txt" 2>&1

run() { # log file, time limit in seconds, command...
    local log=$1 limit=$2; shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" >> "$log" 2>&1
    local rc=$?
    echo "$* -> exit $rc in $((SECONDS - t0)) s" | tee -a "$OUT/tests.log"
    [ $rc -eq 0 ] || status=1
}

for t in $tests; do
    echo "===== $t" >> "$OUT/tests.log"
    run "$OUT/tests.log" "${TEST_LIMIT:-150}" "$bin/$t"
done
grep "^Totals\|^FAIL\|^SKIP" "$OUT/tests.log"

for task in $tasks; do
    short=${task%%_*}
    run "$OUT/eval_$short.json" "${EVAL_LIMIT:-60}" "$bin/ksearch" eval --task "$task" --backend cuda --json --keep --max-seconds 0.3 "tasks/$task/baseline.cu"
    job=$(grep -o 'scratch folder kept: .*' "$OUT/eval_$short.json" | sed 's/scratch folder kept: //')
    sed -i '/^scratch folder kept/d' "$OUT/eval_$short.json"
    [ -n "$job" ] && run "$OUT/indep_$short.json" 60 python3 bench/independent_timer.py "$job/candidate-1"
    rm -rf "$job"
done
for task in $repeat_tasks; do
    short=${task%%_*}
    run "$OUT/repeat_$short.json" "${REPEAT_LIMIT:-240}" "$bin/ksearch" eval --task "$task" --backend cuda --json --repeat "${REPEAT_N:-10}" --max-seconds 0.1 "tasks/$task/baseline.cu"
done
python3 bench/report.py "$OUT" > "$OUT/perf_tables.md" 2>&1
cat "$OUT/perf_tables.md"
exit $status
