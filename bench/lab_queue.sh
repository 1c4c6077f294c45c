#!/usr/bin/env bash
# One device call for the kernel-lab work queued in docs/status.md: per PHASES (default "moe trimul
# decode"), each task's lab run, then its winner applied (bench/apply_lab_winners.py) and, when
# the baseline changed, verified through ksearch (tasks check, the GPU evaluator's rows).  Build
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
verify() { # task, steps
    if git diff --quiet -- "tasks/$1/baseline.cu"; then return; fi
    OUT=$OUT/verify-$1 TASK=$1 STEPS="$2" CHECK_LIMIT=${CHECK_LIMIT:-150} EVAL_LIMIT=${EVAL_LIMIT:-220} \
        step 400 bash bench/task_device_run.sh
}
for s in ${PHASES:-moe trimul decode}; do
    case $s in
    moe)
        step 170 env LAB_ARGS="--kernels --workspace-mib 7400" bash bench/kernel_lab.sh run $M
        python3 bench/apply_lab_winners.py --baseline tasks/$M/baseline.cu --json "$OUT/$M.json" \
            --copy fp8w=bench/kernels/moe_fp8_weight_loads.cu --copy fp8tc=bench/kernels/moe_fp8_tensor_cores.cu
        verify $M "${MOE_VERIFY:-check evaltest}" ;;
    trimul)
        step 150 env LAB_ARGS="--workspace-mib 2400 --check-only" bash bench/kernel_lab.sh run trimul
        step 180 env LAB_TAG=-time LAB_ARGS="--workspace-mib 2400 --kernels --scored" bash bench/kernel_lab.sh run trimul
        python3 bench/apply_lab_winners.py --baseline tasks/trimul/baseline.cu --json "$OUT/trimul.json" \
            --json "$OUT/trimul-time.json" --knobs pp=TRIMUL_PROJ_PP --knobs ppres=TRIMUL_PROJ_PP,TRIMUL_OUTPUT_RESIDENT \
            --knobs all3=TRIMUL_PROJ_PP,TRIMUL_OUTPUT_RESIDENT,TRIMUL_CONTRACT_PP
        verify trimul "${TRIMUL_VERIFY:-check}" ;;
    decode) step 150 env LAB_ARGS=--torch bash bench/kernel_lab.sh run $G $L ;;
    esac
done
