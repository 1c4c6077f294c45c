#!/usr/bin/env bash
# The GPU test binaries in one GPU-machine call, each under its own time limit, logs packed as
# one archive ($OUT/results.tgz) and the totals on stdout.
#
#   TESTS="tst_runner tst_evaluator tst_gpuevaluator tst_gpupython" bash bench/gpu_tests.sh
#   TESTS="tst_gpuevaluator:cudaVerdicts,sideStreamDoesNotPay tst_runner" ...  (some functions only)
#   TESTS="tst_gpuevaluator:shippedBaselinesPass@240 tst_gpuevaluator:cudaVerdicts@120" ... (own limits)
#
# Expects build/gpu-carry.tar.xz (scripts/gpu_carry.sh). TEST_LIMIT: seconds per binary, unless
# the spec ends with @SECONDS. A binary named twice logs to $t.log, $t-2.log, ...
set -uo pipefail
cd "$(dirname "$0")/.."
RUN_NAME=gpu-tests
source bench/device_run_common.sh
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > "$RES/device.txt" 2>&1
declare -A runs=()
for spec in ${TESTS:-tst_cudacompile tst_runner tst_evaluator tst_gpukernels tst_gpuevaluator tst_gpupython}; do
    limit=${TEST_LIMIT:-420}
    if [[ $spec == *@* ]]; then limit=${spec##*@}; spec=${spec%@*}; fi
    t=${spec%%:*}
    functions=()
    [[ $spec == *:* ]] && IFS=, read -ra functions <<< "${spec#*:}"
    runs[$t]=$(( ${runs[$t]:-0} + 1 ))
    name=$t
    (( runs[$t] > 1 )) && name=$t-${runs[$t]}
    step "$name" "$limit" "$BIN/$t" "${functions[@]}"
    grep -h "^FAIL\|^Totals\|^SKIP" "$RES/$name.log" | cut -c1-300
done
exit $status
