#!/usr/bin/env bash
# The GPU test suite and the evaluator benchmarks, in one go, on the GPU machine.
# Expects the `gpu` preset's binaries in $BIN (default build/gpu/bin) and their libraries in
# build/gpu-libs (see docs/perf.md for how they travel). Results go to $OUT (default ./gpu-out) as four files: the device probe, all
# test logs, the perf tables, and raw.tgz with every evaluation and timer JSON.
#
# Knobs (environment): SUITE_TESTS, SUITE_TASKS, SUITE_REPEAT (tasks evaluated REPEAT_N times),
# SUITE_SPANS (CUPTI kernel spans for the single evaluations: "1", "0" or "0 1" for both),
# TEST_SPANS and REPEAT_SPANS (the same for the tests and the repeats), and time limits
# TEST_LIMIT, EVAL_LIMIT, REPEAT_LIMIT in seconds.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
RAW=${RAW:-$(mktemp -d /tmp/gpu-suite-XXXXXX)}
mkdir -p "$OUT" "$RAW"
export LD_LIBRARY_PATH=$PWD/build/gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bin=${BIN:-build/gpu/bin}
export KSEARCH_TEST_SOURCE_DIR=$PWD KSEARCH_TEST_BIN_DIR=$PWD/$bin KSEARCH_TASKS_PATH=$PWD/tasks
export QT_QPA_PLATFORM=offscreen XDG_CACHE_HOME=/tmp/ksearch-cache
tests=${SUITE_TESTS-"tst_cudacompile tst_runner tst_evaluator tst_gpukernels tst_gpuevaluator"}
tasks=${SUITE_TASKS-"rmsnorm gqa_paged_decode_h32_kv4_d128_ps1"}
repeat_tasks=${SUITE_REPEAT-"rmsnorm gqa_paged_decode_h32_kv4_d128_ps1"}
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
    echo "===== $t (KSEARCH_CUPTI_SPANS=${TEST_SPANS:-1})" >> "$OUT/tests.log"
    KSEARCH_CUPTI_SPANS=${TEST_SPANS:-1} run "$OUT/tests.log" "${TEST_LIMIT:-420}" "$bin/$t"
done
grep "^Totals\|^FAIL\|^SKIP" "$OUT/tests.log"

for spans in ${SUITE_SPANS:-0 1}; do
    for task in $tasks; do
        tag=${task%%_*}_spans$spans
        KSEARCH_CUPTI_SPANS=$spans run "$RAW/eval_$tag.json" "${EVAL_LIMIT:-60}" "$bin/ksearch" eval --task "$task" \
            --backend cuda --json --keep --max-seconds 0.3 "tasks/$task/baseline.cu"
        job=$(grep -o 'scratch folder kept: .*' "$RAW/eval_$tag.json" | sed 's/scratch folder kept: //')
        sed -i '/^scratch folder kept/d' "$RAW/eval_$tag.json"
        [ -n "$job" ] && run "$RAW/indep_$tag.json" 90 python3 bench/independent_timer.py "$job/candidate-1"
        rm -rf "$job"
    done
done
for task in $repeat_tasks; do
    KSEARCH_CUPTI_SPANS=${REPEAT_SPANS:-1} run "$RAW/repeat_${task%%_*}.json" "${REPEAT_LIMIT:-120}" "$bin/ksearch" eval \
        --task "$task" --backend cuda --json --repeat "${REPEAT_N:-10}" --max-seconds 0.1 "tasks/$task/baseline.cu"
done
python3 bench/report.py "$RAW" > "$OUT/perf_tables.md" 2>&1
cat "$OUT/perf_tables.md"
tar czf "$OUT/raw.tgz" -C "$RAW" .
exit $status
