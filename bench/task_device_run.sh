#!/usr/bin/env bash
# One GPU-machine call for one task (issue #12's TriMul and MoE): the kernel lab, the checks, the
# task's rows of the GPU tests, the side-by-side benchmark against PyTorch and a short search,
# each step under its own time limit, results packed as one archive.
#
#   TASK=trimul STEPS="lab check kernels evaltest bench search" bash bench/task_device_run.sh
#
# Expects build/gpu-carry.tar.xz (scripts/gpu_carry.sh) and, for the lab step, build/lab/$TASK
# (bench/kernel_lab.sh build).  Steps:
#   lab       bench/kernel_lab.sh run $TASK with per-kernel times (LAB_ARGS adds options)
#   check     `ksearch tasks check --backend cuda $TASK`: reference.cu and baseline.cu against
#             reference.cpp on the workloads the host can compute
#   kernels   tst_gpukernels, the task's row only
#   evaltest  tst_gpuevaluator: shippedBaselinesPass and taskCheatsAreCaught, the task's rows
#   bench     bench/baselines_vs_torch.py on the task (BENCH_ARGS adds options: --moe-routing balanced)
#   search    a short `ksearch run` with the command provider (bench/scripted_llm.py)
#   python    tst_gpupython (Triton and PyTorch candidates through the Python runner)
#   dispatch  a search over DISPATCH_KNOBS (knob sets as for search), then `ksearch export
#             --dispatch` of it (issue #16: the dispatching kernel next to the best single one);
#             DISPATCH_FLAGS adds flags to both (--unconfined)
#   pysearch  a short `ksearch run --language $SEARCH_LANGUAGE` (default triton) whose coder answers
#             with the files in SEARCH_FILES (';'-separated)
# Results: $OUT/results.tgz and the summaries on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
TASK=${TASK:?set TASK to a folder under tasks/}
RUN_NAME=task-run
source bench/device_run_common.sh
STEPS=${STEPS:-lab check kernels evaltest bench search}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > "$RES/device.txt" 2>&1
for s in $STEPS; do
    case $s in
    lab)
        OUT=$RES LAB_ARGS="${LAB_WORKSPACE_MIB:+--workspace-mib $LAB_WORKSPACE_MIB }--kernels ${LAB_ARGS:-}" \
            step lab "${LAB_LIMIT:-200}" bash bench/kernel_lab.sh run "$TASK"
        grep -v "Warn\|_warn_once" "$RES/lab.log" | tail -n 60 ;;
    check)
        step check "${CHECK_LIMIT:-300}" "$BIN/ksearch" tasks check --backend cuda "$TASK"
        grep -h "vs reference.cpp\|disagrees\|: ok\|error" "$RES/check.log" | cut -c1-200 ;;
    kernels)
        step tst_gpukernels "${KERNELS_LIMIT:-300}" "$BIN/tst_gpukernels" "tasksAgreeOnTheGpu:$TASK"
        grep -h "^PASS\|^FAIL\|^Totals\|checked against\|agree" "$RES/tst_gpukernels.log" | cut -c1-200 ;;
    evaltest)
        rows=("shippedBaselinesPass:$TASK")
        cheats=("half the output" "modifies an input" "NaN output")
        [[ $TASK == moe* ]] && cheats+=("last 5% of the output unwritten")
        for cheat in "${cheats[@]}"; do rows+=("taskCheatsAreCaught:$TASK: $cheat"); done
        step tst_gpuevaluator "${EVAL_LIMIT:-400}" "$BIN/tst_gpuevaluator" "${rows[@]}"
        grep -h "^PASS\|^FAIL\|^SKIP\|^Totals\|Loc:\|workload .*us (baseline" "$RES/tst_gpuevaluator.log" | cut -c1-220 ;;
    bench)
        timeout "${BENCH_LIMIT:-400}" python3 bench/baselines_vs_torch.py --ksearch "$BIN/ksearch" \
            --max-seconds "${BENCH_MAX_SECONDS:-0.3}" --tasks "$TASK" --out "$RES/bench.json" ${BENCH_ARGS:-} 2>&1 |
            tee "$RES/bench.log"
        echo "== bench: exit ${PIPESTATUS[0]}" | tee -a "$RES/summary.log" ;;
    search)
        KS_SCRIPTED_TASK=$PWD/tasks/$TASK KS_SCRIPTED_KNOBS="${SEARCH_KNOBS:-}" KS_SCRIPTED_REFERENCE="${SEARCH_REFERENCE:-1}" \
            step search "${SEARCH_LIMIT:-200}" "$BIN/ksearch" --log-file - run --task "$TASK" --session "$RES/session" \
            --provider command --command "python3 $PWD/bench/scripted_llm.py" --model scripted \
            --budget "${SEARCH_BUDGET:-4}" -k 1 --bench-seconds 0.05
        tail -n 25 "$RES/search.log" ;;
    python)
        step tst_gpupython "${PYTHON_LIMIT:-400}" "$BIN/tst_gpupython"
        grep -h "^PASS\|^FAIL\|^SKIP\|^Totals\|Loc:\|QINFO\|J [0-9]" "$RES/tst_gpupython.log" | cut -c1-240 ;;
    pysearch)
        KS_SCRIPTED_TASK=$PWD/tasks/$TASK KS_SCRIPTED_FILES="${SEARCH_FILES:?set SEARCH_FILES}" \
            step pysearch "${SEARCH_LIMIT:-200}" "$BIN/ksearch" --log-file - run --task "$TASK" \
            --session "$RES/pysession" --language "${SEARCH_LANGUAGE:-triton}" --provider command \
            --command "python3 $PWD/bench/scripted_llm.py" --model scripted --budget "${SEARCH_BUDGET:-3}" -k 1 \
            --bench-seconds 0.05
        tail -n 25 "$RES/pysearch.log" ;;
    dispatch)
        # Issue #16: a search over the baseline's knobs, then the dispatching kernel of its best
        # attempts per shape, measured next to the best single kernel of the same session.
        KS_SCRIPTED_TASK=$PWD/tasks/$TASK KS_SCRIPTED_KNOBS="${DISPATCH_KNOBS:?set DISPATCH_KNOBS}" KS_SCRIPTED_REFERENCE=0 \
            step dispatch-search "${SEARCH_LIMIT:-200}" "$BIN/ksearch" --log-file - run --task "$TASK" \
            --session "$RES/dsession" --provider command --command "python3 $PWD/bench/scripted_llm.py" \
            --model scripted --budget "${DISPATCH_BUDGET:-6}" -k 1 --bench-seconds "${DISPATCH_BENCH_SECONDS:-0.2}" \
            ${DISPATCH_FLAGS:-}
        tail -n 12 "$RES/dispatch-search.log"
        step dispatch-export "${EXPORT_LIMIT:-200}" "$BIN/ksearch" export --session "$RES/dsession" \
            --out "$RES/dexport" --dispatch --bench-seconds "${DISPATCH_BENCH_SECONDS:-0.2}" ${DISPATCH_FLAGS:-}
        cat "$RES/dispatch-export.log" | cut -c1-240 | tail -n 30 ;;
    esac
done
exit $status
