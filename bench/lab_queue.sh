#!/usr/bin/env bash
# One device call for the kernel-lab work queued in docs/status.md: per PHASES (default "decode"),
# each task's lab run, then ("verify") ksearch's checks of every baseline that changed (tasks
# check, the GPU evaluator's rows), a winner applied by bench/apply_lab_winners.py or by hand.
# Build the variants here first (bench/kernel_lab.sh build, as docs/status.md says), carry
# build/lab and build/gpu-carry.tar.xz.  Every step has its own limit.  The queue changes as
# variants are settled (see git log; session 24's decode run found no persistent variant faster).
cd "$(dirname "$0")/.."
G=gqa_paged_decode_h32_kv4_d128_ps1
L=mla_paged_decode_h16_ckv512_kpe64_ps1
M=moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048
export OUT=${OUT:-$PWD/lab-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
step() { local limit=$1; shift; echo "### $* (limit $limit s) $(date +%T)"; timeout "$limit" "$@"; echo "### rc $? $(date +%T)"; }
deadline=$((SECONDS + ${CALL_SECONDS:-580}))  # the device call's own limit, less the packing
declare -A shipped  # each baseline's checksum before the labs (the device's copy has no .git)
for t in $G $L $M; do shipped[$t]=$(md5sum < "tasks/$t/baseline.cu"); done
verify() { # task, steps: only when the lab's winner changed the task's baseline
    if [ "$(md5sum < "tasks/$1/baseline.cu")" = "${shipped[$1]}" ]; then return; fi
    local left=$((deadline - SECONDS))
    if [ $left -lt 60 ]; then echo "### verify $1: skipped, $left s left"; return; fi
    OUT=$OUT/verify-$1 TASK=$1 STEPS="$2" CHECK_LIMIT=${CHECK_LIMIT:-150} EVAL_LIMIT=$((left - 20 < 220 ? left - 20 : 220)) \
        step "$left" bash bench/task_device_run.sh
}
for s in ${PHASES:-decode}; do
    case $s in
    verify)
        verify $G "${VERIFY_STEPS:-check evaltest}"
        verify $L "${VERIFY_STEPS:-check evaltest}"
        verify $M "${VERIFY_STEPS:-check evaltest}" ;;
    decode) # GQA_KNOBS / MLA_KNOBS name the knobs of each task's variants, as MOE_KNOBS below, so that
            # a winner is applied and the verify phase checks it
        rm -f "$OUT/$G.json" "$OUT/$L.json"
        step 150 env LAB_ARGS=--torch bash bench/kernel_lab.sh run $G $L
        for pair in "$G:${GQA_KNOBS:-}" "$L:${MLA_KNOBS:-}"; do
            task=${pair%%:*} knobs=()
            for k in ${pair#*:}; do knobs+=(--knobs "$k"); done
            [ ${#knobs[@]} -gt 0 ] && [ -f "$OUT/$task.json" ] &&
                python3 bench/apply_lab_winners.py --baseline "tasks/$task/baseline.cu" --json "$OUT/$task.json" "${knobs[@]}"
        done ;;
    moe) # the variants built here (session 25 settled split-K and the knobs); MOE_KNOBS names
         # which knobs a winning variant sets, as apply_lab_winners.py's --knobs (NAME=K1,K2=V ...)
        rm -f "$OUT/$M.json"  # a lab cut short must not leave an earlier run's winner to apply
        step 300 env LAB_ARGS="--kernels" bash bench/kernel_lab.sh run $M
        knobs=()
        for k in ${MOE_KNOBS:-}; do knobs+=(--knobs "$k"); done
        python3 bench/apply_lab_winners.py --baseline tasks/$M/baseline.cu --json "$OUT/$M.json" "${knobs[@]}" ;;
    esac
done
