#!/usr/bin/env bash
# The GPU test binaries in one GPU-machine call, each under its own time limit, logs packed as
# one archive ($OUT/results.tgz) and the totals on stdout.
#
#   TESTS="tst_runner tst_evaluator tst_gpuevaluator tst_gpupython" bash bench/gpu_tests.sh
#   TESTS="tst_gpuevaluator:cudaVerdicts,sideStreamDoesNotPay tst_runner" ...  (some functions only)
#   TESTS="tst_gpuevaluator:shippedBaselinesPass@240 tst_gpuevaluator:cudaVerdicts@120" ... (own limits)
#   TESTS="nobody/tst_gpuevaluator:cudaCandidatesAreConfined" ...  (as the ordinary user nobody)
#
# As nobody: the binaries, libraries, tasks and test data are copied to a folder outside /tmp
# (the repository may lie in root's home, and a confined candidate's /tmp is its own), the tasks
# nobody's (rows write their escape attempts there), HOME and the working directory a fresh
# folder of nobody's there; the log is named nobody-$t.log.
# Expects build/gpu-carry.tar.xz (scripts/gpu_carry.sh). TEST_LIMIT: seconds per binary, unless
# the spec ends with @SECONDS. A binary named twice logs to $t.log, $t-2.log, ...
set -uo pipefail
cd "$(dirname "$0")/.."
RUN_NAME=gpu-tests
source bench/device_run_common.sh
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > "$RES/device.txt" 2>&1
NOBODY_ROOT=/var/tmp/ksearch-nobody
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups env --chdir="$NOBODY_ROOT/home" HOME="$NOBODY_ROOT/home"
    XDG_CACHE_HOME="$NOBODY_ROOT/home/.cache" KSEARCH_TASKS_PATH="$NOBODY_ROOT/tasks"
    KSEARCH_TEST_SOURCE_DIR="$NOBODY_ROOT" KSEARCH_TEST_BIN_DIR="$NOBODY_ROOT/bin" LD_LIBRARY_PATH="$NOBODY_ROOT/libs" PATH="$NOBODY_ROOT/bin:$PATH")
prepare_nobody() {
    [ -d "$NOBODY_ROOT" ] && return
    mkdir -p "$NOBODY_ROOT/home"
    cp -r "$BIN" "$NOBODY_ROOT/bin" && cp -r build/gpu-libs "$NOBODY_ROOT/libs" && cp -r tasks "$NOBODY_ROOT/tasks"
    mkdir -p "$NOBODY_ROOT/tests" && cp -r tests/data "$NOBODY_ROOT/tests/data"
    chown -R 65534:65534 "$NOBODY_ROOT/home" "$NOBODY_ROOT/tasks"
    chmod -R a+rX "$NOBODY_ROOT"
}
declare -A runs=()
for spec in ${TESTS:-tst_cudacompile tst_runner tst_evaluator tst_gpukernels tst_gpuevaluator tst_gpupython}; do
    limit=${TEST_LIMIT:-420}
    if [[ $spec == *@* ]]; then limit=${spec##*@}; spec=${spec%@*}; fi
    user=root
    if [[ $spec == nobody/* ]]; then user=nobody; spec=${spec#nobody/}; prepare_nobody; fi
    t=${spec%%:*}
    functions=()
    [[ $spec == *:* ]] && IFS=, read -ra functions <<< "${spec#*:}"
    key=$user/$t
    runs[$key]=$(( ${runs[$key]:-0} + 1 ))
    name=$t
    [ "$user" = nobody ] && name=nobody-$t
    (( runs[$key] > 1 )) && name=$name-${runs[$key]}
    if [ "$user" = nobody ]; then
        step "$name" "$limit" "${nobody[@]}" "$NOBODY_ROOT/bin/$t" "${functions[@]}"
    else
        step "$name" "$limit" "$BIN/$t" "${functions[@]}"
    fi
    grep -h "^FAIL\|^Totals\|^SKIP\|normal window" "$RES/$name.log" | cut -c1-300
done
exit $status
