#!/usr/bin/env bash
# One GPU-machine call for the attention tasks (issue #11): checks, GPU tests and the side-by-side
# benchmark against PyTorch, every step under its own time limit, results packed as one archive.
#
# Expects build/gpu-carry.tar.xz (scripts/gpu_carry.sh). Steps are chosen with STEPS (default all):
#   check   `ksearch tasks check --backend cuda` on both MLA tasks (every workload of decode, the
#           nine smallest of prefill): reference.cu and baseline.cu against reference.cpp
#   check_trimul  the same on trimul (not in the default set)
#   kernels tst_gpukernels (every task: every workload the host can compute)
#   evaltest tst_gpuevaluator (every task's baseline through the whole evaluator, and the cheats)
#   bench   bench/baselines_vs_torch.py over the attention tasks (BENCH_TASKS picks others, trimul too)
#   search  a short `ksearch run` on each MLA task (command provider: bench/scripted_llm.py tries
#           baseline knobs, reference.cu and a file that does not compile)
# Results: $OUT/results.tgz (logs, JSON, tables) and the tables on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
RUN_NAME=mla-run
source bench/device_run_common.sh
STEPS=${STEPS:-check kernels evaltest bench search}
DEC=mla_paged_decode_h16_ckv512_kpe64_ps1
PRE=mla_paged_prefill_causal_h16_ckv512_kpe64_ps1

{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; "$BIN/ksearch-runner" --probe; } \
    > "$RES/device.txt" 2>&1
for s in $STEPS; do
    case $s in
    check)
        step check_decode 240 "$BIN/ksearch" tasks check --backend cuda --workloads 12 $DEC
        step check_prefill 240 "$BIN/ksearch" tasks check --backend cuda --workloads 9 $PRE
        grep -h "vs reference.cpp\|disagrees\|: ok\|error" "$RES"/check_*.log | cut -c1-200 ;;
    check_trimul)
        step check_trimul 300 "$BIN/ksearch" tasks check --backend cuda trimul
        grep -h "vs reference.cpp\|disagrees\|: ok\|error" "$RES"/check_trimul.log | cut -c1-200 ;;
    kernels)
        step tst_gpukernels "${KERNELS_LIMIT:-420}" "$BIN/tst_gpukernels"
        grep -h "^PASS\|^FAIL\|^Totals\|checked against" "$RES/tst_gpukernels.log" ;;
    evaltest)
        # EVAL_ARGS picks test functions or rows, e.g. "taskCheatsAreCaught".
        step tst_gpuevaluator "${EVAL_LIMIT:-540}" "$BIN/tst_gpuevaluator" ${EVAL_ARGS:-}
        grep -h "^PASS\|^FAIL\|^SKIP\|^Totals" "$RES/tst_gpuevaluator.log" ;;
    bench)
        # Printed as it goes (the call's reply carries the end of the output).
        timeout "${BENCH_LIMIT:-560}" python3 bench/baselines_vs_torch.py --ksearch "$BIN/ksearch" \
            --max-seconds "${BENCH_MAX_SECONDS:-0.3}" --tasks "${BENCH_TASKS:-$DEC,$PRE,gqa_paged_decode_h32_kv4_d128_ps1}" \
            --max-flops "${BENCH_MAX_FLOPS:-0}" --out "$RES/bench.json" 2>&1 | tee "$RES/bench.log"
        echo "== bench: exit ${PIPESTATUS[0]}" | tee -a "$RES/summary.log" ;;
    search)
        for t in ${SEARCH_TASKS:-$DEC $PRE}; do
            case $t in
            $DEC) knobs="MLA_DECODE_MIN_CHUNK=128;MLA_DECODE_STAGES=3" reference=1 ;;
            *) knobs="" reference=0 ;; # reference.cu takes minutes on the large prefill workloads
            esac
            KS_SCRIPTED_TASK=$PWD/tasks/$t KS_SCRIPTED_KNOBS=$knobs KS_SCRIPTED_REFERENCE=$reference step "search_${t%%_h16*}" "${SEARCH_LIMIT:-150}" \
                "$BIN/ksearch" --log-file - run --task $t --session "$RES/session_${t%%_h16*}" --provider command \
                --command "python3 $PWD/bench/scripted_llm.py" --model scripted --budget "${SEARCH_BUDGET:-5}" -k 1 \
                --bench-seconds 0.05
            tail -n 25 "$RES/search_${t%%_h16*}.log"
        done ;;
    esac
done
exit $status
