#!/usr/bin/env bash
# One GPU-machine call: the three views of each timed call (events, host clock, CUPTI spans) on
# launch-bound calls, and what each sample rule charges (bench/sample_views.py), then the GPU tests
# of the rule. The MoE baseline against itself on its small workloads with the runners started
# ahead, with a 2 s gap between evaluations, with cold runners, with half the host's cores busy and
# without spans; the GQA baseline as the control, and rmsnorm's ten repeats (issue #3's CV goal).
#
#   STEPS="views tests" bash bench/sample_views_device_run.sh
#   VIEWS_ONLY="moe_ahead gqa" VIEWS_REPEAT=2 STEPS=views ...   (some of the evaluations, fewer repeats)
#
# Expects build/gpu-carry.tar.xz (scripts/gpu_carry.sh). Results: $OUT/results.tgz (the kept
# result lines, views.md, the test logs) and the summaries on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
RUN_NAME=sample-views
source bench/device_run_common.sh
STEPS=${STEPS:-views tests}
M=moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048
G=gqa_paged_decode_h32_kv4_d128_ps1
MOE_WORKLOADS=${MOE_WORKLOADS:-a3055adc,bc92338f,04727f6c,c6a323a3,3b1b5b4e}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > "$RES/device.txt" 2>&1
cat "$RES/device.txt"

# name, extra environment (VAR=value ... or -), then ksearch eval's arguments. Keeps only the result
# lines of the runner jobs (--keep also writes every input as a file).
eval_kept() {
    local name=$1 extra=$2
    shift 2
    [[ -n ${VIEWS_ONLY:-} && " $VIEWS_ONLY " != *" $name "* ]] && return 0
    # Not /tmp: --keep writes each job's inputs (the MoE's weights, 1.4 GB a job), and the lent
    # machines' /tmp filled at the sixth job (session 37).
    local tmp=${VIEWS_TMP:-/var/tmp}/sample-views-$name
    rm -rf "$tmp" && mkdir -p "$tmp"
    [ "$extra" = - ] && extra=
    # shellcheck disable=SC2086
    step "$name" "${EVAL_LIMIT:-150}" env TMPDIR="$tmp" $extra "$BIN/ksearch" eval --keep --json --seed 7 "$@"
    (cd "$tmp" && find . -name result.jsonl) | while read -r f; do
        mkdir -p "$RES/$name/$(dirname "$f")" && cp -p "$tmp/$f" "$RES/$name/$f"
    done
    rm -rf "$tmp"
    python3 - "$RES/$name.log" << 'PY'
import json, sys
text = open(sys.argv[1]).read()
start = text.find("\n{") + 1 if not text.startswith("{") else 0
try:
    j, _ = json.JSONDecoder().raw_decode(text[start:])
except ValueError:
    sys.exit(print("  (no JSON)"))
r = j.get("repeats", {})
cv = " ".join("%s %.2f%%" % (k, 100 * v) for k, v in r.get("workload_latency_cv", {}).items())
print("  last J %.2f, latency CV over %s runs %.2f%% (%s)" % (j.get("score", 0), r.get("runs", 1),
      100 * r.get("latency_cv", 0), cv))
PY
}

for s in $STEPS; do
    case $s in
    views)
        moe=(tasks/$M/baseline.cu --task "$M" --workloads "$MOE_WORKLOADS" --repeat "${VIEWS_REPEAT:-4}")
        eval_kept moe_ahead - "${moe[@]}"
        eval_kept moe_gap - "${moe[@]}" --gap 2
        eval_kept moe_cold - "${moe[@]}" --cold-runners
        busy=()
        for _ in $(seq $(($(nproc) / 2))); do yes > /dev/null & busy+=($!); done
        eval_kept moe_busy - "${moe[@]}"
        kill "${busy[@]}" 2> /dev/null
        eval_kept moe_nospans KSEARCH_CUPTI_SPANS=0 "${moe[@]}"
        eval_kept gqa - tasks/$G/baseline.cu --task "$G" --repeat 4
        eval_kept rmsnorm - tasks/rmsnorm/baseline.cu --task rmsnorm --repeat 10
        python3 bench/sample_views.py "$RES"/moe_* "$RES"/gqa "$RES"/rmsnorm --json "$RES/views.json" > "$RES/views.md"
        cat "$RES/views.md" ;;
    tests)
        step tst_gpuevaluator "${TEST_LIMIT:-300}" "$BIN/tst_gpuevaluator" memsetOnItsOwnStreamIsSeen \
            launchBoundCallsScoreThemselves sideStreamDoesNotPay priorityStreamUnderTheLeadInPays
        grep -h "^PASS\|^FAIL\|^SKIP\|^Totals\|Loc:\|J \|  [0-9a-f-]*: \|own stream\|priority stream" \
            "$RES/tst_gpuevaluator.log" | cut -c1-220
        step tst_gpupython "${PYTHON_LIMIT:-200}" "$BIN/tst_gpupython" sideStreamIsStillTimed
        grep -h "^PASS\|^FAIL\|^SKIP\|^Totals\|Loc:\|side stream" "$RES/tst_gpupython.log" | cut -c1-220 ;;
    esac
done
exit $status
