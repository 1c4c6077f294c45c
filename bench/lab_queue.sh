#!/usr/bin/env bash
# One device call for the kernel-lab work queued in docs/status.md: per PHASES (default "moe trimul
# verify decode"), each task's lab run and its winner applied (bench/apply_lab_winners.py), then,
# where a baseline changed, verified through ksearch (tasks check, the GPU evaluator's rows).  Build
# the variants here first (bench/kernel_lab.sh build, as docs/status.md says), carry build/lab and
# build/gpu-carry.tar.xz.  Every step has its own limit; the queue changes as variants are settled.
cd "$(dirname "$0")/.."
M=moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048
G=gqa_paged_decode_h32_kv4_d128_ps1
L=mla_paged_decode_h16_ckv512_kpe64_ps1
export OUT=${OUT:-$PWD/lab-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
step() { local limit=$1; shift; echo "### $* (limit $limit s) $(date +%T)"; timeout "$limit" "$@"; echo "### rc $? $(date +%T)"; }
deadline=$((SECONDS + ${CALL_SECONDS:-580}))  # the device call's own limit, less the packing
verify() { # task, steps: only when the lab's winner changed the task's baseline
    if git diff --quiet -- "tasks/$1/baseline.cu"; then return; fi
    local left=$((deadline - SECONDS))
    if [ $left -lt 60 ]; then echo "### verify $1: skipped, $left s left"; return; fi
    OUT=$OUT/verify-$1 TASK=$1 STEPS="$2" CHECK_LIMIT=${CHECK_LIMIT:-150} EVAL_LIMIT=$((left - 20 < 220 ? left - 20 : 220)) \
        step "$left" bash bench/task_device_run.sh
}
for s in ${PHASES:-moe trimul verify decode}; do
    case $s in
    moe)
        step 170 env LAB_ARGS="--kernels --workspace-mib 7400" bash bench/kernel_lab.sh run $M
        python3 bench/apply_lab_winners.py --baseline tasks/$M/baseline.cu --json "$OUT/$M.json" \
            --copy fp8w=bench/kernels/moe_fp8_weight_loads.cu --copy fp8tc=bench/kernels/moe_fp8_tensor_cores.cu ;;
    trimul)
        # The timed run checks the seven scored shapes; the small ones are checked by verify's
        # tasks check (TRIMUL_CHECK_ONLY=1: all thirteen here first, against reference.cu).
        [ -n "${TRIMUL_CHECK_ONLY:-}" ] &&
            step 150 env LAB_ARGS="--workspace-mib 2400 --check-only" bash bench/kernel_lab.sh run trimul
        step 180 env LAB_TAG=-time LAB_ARGS="--workspace-mib 2400 --kernels --scored" bash bench/kernel_lab.sh run trimul
        jsons=(--json "$OUT/trimul-time.json")
        [ -f "$OUT/trimul.json" ] && jsons+=(--json "$OUT/trimul.json")
        python3 bench/apply_lab_winners.py --baseline tasks/trimul/baseline.cu "${jsons[@]}" \
            --knobs pp=TRIMUL_PROJ_PP --knobs ppres=TRIMUL_PROJ_PP,TRIMUL_OUTPUT_RESIDENT \
            --knobs all3=TRIMUL_PROJ_PP,TRIMUL_OUTPUT_RESIDENT,TRIMUL_CONTRACT_PP ;;
    verify)
        verify $M "${MOE_VERIFY:-check evaltest}"
        verify trimul "${TRIMUL_VERIFY:-check}" ;;
    decode) step 150 env LAB_ARGS=--torch bash bench/kernel_lab.sh run $G $L ;;
    esac
done
