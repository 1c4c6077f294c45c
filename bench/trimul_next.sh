#!/usr/bin/env bash
# The next TriMul baseline (bench/kernels/trimul_next.cu) against the shipped one, each change
# alone and all together, in one GPU-machine call.
#
#   bash bench/trimul_next.sh build     (development machine; then carry build/lab)
#   bash bench/trimul_next.sh run       (GPU machine: every variant checked on all 13 workloads,
#                                        timed with per-kernel times on the seven scored ones,
#                                        Nsight Compute on the two largest; results under $OUT)
set -euo pipefail
cd "$(dirname "$0")/.."
next=bench/kernels/trimul_next.cu
case ${1:-} in
build)
    bash bench/kernel_lab.sh build trimul shipped=tasks/trimul/baseline.cu "next=$next" \
        "fuseln=$next@-DTRIMUL_PROJ_FUSE_LN=1" "nowide=$next@-DTRIMUL_CONTRACT_WIDE=0" \
        "out128=$next@-DTRIMUL_OUTPUT_ROWS=128" "noproj=$next@-DTRIMUL_PROJ_RESIDENT=0" \
        "nolnvec=$next@-DTRIMUL_LN_VEC=0" ;;
run)
    OUT=${OUT:-$PWD/lab-out}
    export OUT PYTHONUNBUFFERED=1 # a step cut by its limit still leaves its lines
    # Each step under its own limit so that one slow step never costs the call's other results.
    LAB_ARGS="--workspace-mib 2400 --check-only" timeout "${CHECK_LIMIT:-150}" \
        bash bench/kernel_lab.sh run trimul > "$OUT/check.txt" 2>&1 || true
    LAB_ARGS="--workspace-mib 2400 --kernels --scored" timeout "${LAB_LIMIT:-240}" \
        bash bench/kernel_lab.sh run trimul > "$OUT/lab.txt" 2>&1 || true
    if [[ ${NCU_LIMIT:-150} != 0 ]]; then # 0: no profile
        LAB_ONLY="shipped next" LAB_ARGS="--workspace-mib 2400" timeout "${NCU_LIMIT:-150}" \
            bash bench/kernel_lab.sh ncu trimul de07138c,531c59f6 "ln_kernel|ln_vec|project_|contract_|output_kernel" 24 || true
    fi
    grep -v "Warn\|_warn_once" "$OUT/check.txt" | tail -n 16
    grep -v "Warn\|_warn_once" "$OUT/lab.txt" | tail -n 40 ;;
*)
    echo "usage: $0 build | run" >&2
    exit 2 ;;
esac
