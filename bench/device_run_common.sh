# Sourced by the GPU-machine scripts (bench/mla_device_run.sh, bench/task_device_run.sh), after
# they cd to the repository root: unpacks the carried build, sets the test environment, packs
# $RES into $OUT/results.tgz however the call ends, and defines step().
OUT=${OUT:-$PWD/gpu-out}
RES=$(mktemp -d "/tmp/${RUN_NAME:-device-run}-XXXXXX")
mkdir -p "$OUT"
tar xJf build/gpu-carry.tar.xz -C build || exit 1
export LD_LIBRARY_PATH=$PWD/build/gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
BIN=$PWD/build/gpu-run/bin
export KSEARCH_TEST_SOURCE_DIR=$PWD KSEARCH_TEST_BIN_DIR=$BIN KSEARCH_TASKS_PATH=$PWD/tasks
export QT_QPA_PLATFORM=offscreen XDG_CACHE_HOME=/tmp/ksearch-cache PYTHONUNBUFFERED=1
status=0
# Whatever happens (a step past its limit, the call's own limit), what ran so far comes back.
trap 'tar czf "$OUT/results.tgz" -C "$RES" . 2>/dev/null' EXIT

step() { # name, time limit in seconds, command...
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" > "$RES/$name.log" 2>&1
    local rc=$?
    echo "== $name: exit $rc in $((SECONDS - t0)) s" | tee -a "$RES/summary.log"
    [ $rc -eq 0 ] || status=1
    return $rc
}
