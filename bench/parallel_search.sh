#!/usr/bin/env bash
# Throughput of a search with one or several evaluators (issue #14): the same search (the
# command provider's scripted answers, every answer a new program, a fixed model latency) run
# with each configuration in CONFIGS, then bench/parallel_table.py prints evaluations per hour,
# each GPU's busy fraction and the evaluator's overhead per candidate.
#
#   CONFIGS="w1 w2 w2p3 g2" TASK=gqa_paged_decode_h32_kv4_d128_ps1 bash bench/parallel_search.sh
#
# Configurations: wN = N evaluators on GPU 0 (their runs take turns, compiles overlap), wNpP = the
# same with P actions at once, gN = one evaluator on each of GPUs 0..N-1 (skipped when fewer are
# present). Expects build/gpu-carry.tar.xz (scripts/gpu_carry.sh). Results: $OUT/results.tgz.
set -uo pipefail
cd "$(dirname "$0")/.."
RUN_NAME=parallel-search
source bench/device_run_common.sh
TASK=${TASK:-gqa_paged_decode_h32_kv4_d128_ps1}
CONFIGS=${CONFIGS:-w1 w2 w2p3 g2}
BUDGET=${BUDGET:-16}
DELAY=${DELAY:-2}
GPUS=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > "$RES/device.txt" 2>&1
export KS_SCRIPTED_TASK=$PWD/tasks/$TASK KS_SCRIPTED_VARY=1 KS_SCRIPTED_GROW=1 KS_SCRIPTED_DELAY=$DELAY KS_SCRIPTED_REFERENCE=0
export KS_SCRIPTED_KNOBS=${KNOBS:-KS_A=1;KS_A=2}  # two root intents, plus the broken one: at most 3 per edit
for c in $CONFIGS; do
    args=()
    case $c in
    g*) n=${c#g}
        if [ "$GPUS" -lt "$n" ]; then echo "== $c: skipped, $GPUS GPU(s) here" | tee -a "$RES/summary.log"; continue; fi
        args=(--gpus "$(seq -s, 0 $((n - 1)))") ;;
    w*p*) w=${c#w}; args=(--local-workers "${w%p*}" --parallel "${c#*p}") ;;
    w*) args=(--local-workers "${c#w}") ;;
    esac
    # A fresh compile cache per configuration: every candidate is compiled in every run.
    XDG_CACHE_HOME=/tmp/ksearch-cache-$c step "search-$c" "${SEARCH_LIMIT:-400}" "$BIN/ksearch" run --task "$TASK" \
        --session "$RES/session-$c" --provider command --command "python3 $PWD/bench/scripted_llm.py" \
        --model scripted --budget "$BUDGET" -k 2 --bench-seconds 0.05 --quiet "${args[@]}"
    tail -n 4 "$RES/search-$c.log"
done
python3 bench/parallel_table.py --delay "$DELAY" "$RES"/session-* | tee "$RES/table.txt"
exit $status
