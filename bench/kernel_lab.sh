#!/usr/bin/env bash
# Kernel lab (bench/kernel_lab.py): build kernel variants here, time them side by side there.
#
#   bash bench/kernel_lab.sh build TASK NAME=SOURCE[@-DKNOB=V,-DKNOB2=V] ...
#       (development machine) writes build/lab/TASK/: ks_task.h, reference.so, NAME.so and the
#       list of variants; nvcc with the flags of gpu/compiler.cpp, sm_90a. Carry build/lab.
#   bash bench/kernel_lab.sh run TASK...
#       (GPU machine) times every built variant of each TASK against the others, after checking
#       each against reference.cu on the same inputs; tables on stdout, JSON under $OUT.
#       LAB_ARGS passes options to kernel_lab.py (--pages N, --sequential, --rounds N, --kernels),
#       LAB_TAG names the JSON.
#   bash bench/kernel_lab.sh ncu TASK WORKLOADS KERNEL_REGEX [LAUNCHES]
#       (GPU machine) Nsight Compute's speed-of-light, memory and occupancy sections for the
#       kernels matching KERNEL_REGEX, on the workloads with these uuid prefixes (comma-separated),
#       one checked call of every variant each (LAB_ONLY="a b": only these); report text under
#       $OUT/TASK-ncu.txt (NCU_SOURCE=1: per SASS line too, in $OUT/TASK-source.csv).
#   bash bench/kernel_lab.sh sass TASK
#       (GPU machine) cuobjdump -sass of every built variant to $OUT/TASK-NAME.sass.xz.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=$1
shift
case $mode in
build)
    task=$1
    shift
    dir=build/lab/$task
    rm -rf "$dir" && mkdir -p "$dir/include"
    ksearch=${KSEARCH:-build/ci/bin/ksearch}
    "$ksearch" tasks show --abi "tasks/$task" > "$dir/include/ks_task.h"
    nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
    compile() { # source output defines...
        local src=$1 out=$2
        shift 2
        "$nvcc" -std=c++17 -O3 -lineinfo -gencode=arch=compute_90a,code=sm_90a -Xcompiler -fPIC -shared \
            -I "$dir/include" "$@" "$src" -o "$out"
    }
    compile "tasks/$task/reference.cu" "$dir/reference.so" &
    for v in "$@"; do
        name=${v%%=*}
        spec=${v#*=}
        src=${spec%%@*}
        defines=()
        [[ $spec == *@* ]] && IFS=, read -r -a defines <<< "${spec#*@}"
        compile "$src" "$dir/$name.so" "${defines[@]}"
        echo "$name" >> "$dir/variants"
    done
    wait
    echo "built $(wc -l < "$dir/variants") variants of $task in $dir"
    ;;
run)
    OUT=${OUT:-$PWD/lab-out}
    mkdir -p "$OUT"
    for task in "$@"; do
        dir=build/lab/$task
        args=()
        while read -r name; do args+=("$name=$PWD/$dir/$name.so"); done < "$dir/variants"
        echo "## $task"
        python3 bench/kernel_lab.py --task "tasks/$task" --header "$dir/include/ks_task.h" \
            --reference "$PWD/$dir/reference.so" --json "$OUT/$task${LAB_TAG:-}.json" ${LAB_ARGS:-} "${args[@]}" ||
            echo "(some variant was WRONG or failed)"
    done
    ;;
sass)
    # The machine code of each built variant (this machine has no disassembler; the GPU machine's
    # toolkit does), xz-compressed, one file a variant.
    task=$1
    OUT=${OUT:-$PWD/lab-out}
    mkdir -p "$OUT"
    while read -r name; do
        cuobjdump -sass "build/lab/$task/$name.so" | xz -T2 > "$OUT/$task-$name.sass.xz"
    done < "build/lab/$task/variants"
    echo "sass of $(wc -l < "build/lab/$task/variants") variants in $OUT"
    ;;
ncu)
    task=$1 workloads=$2 regex=$3 launches=${4:-40}
    OUT=${OUT:-$PWD/lab-out}
    mkdir -p "$OUT"
    dir=build/lab/$task
    args=()
    while read -r name; do
        [[ -z ${LAB_ONLY:-} || " $LAB_ONLY " == *" $name "* ]] && args+=("$name=$PWD/$dir/$name.so")
    done < "$dir/variants"
    # NCU_NAME_BASE=mangled matches the regex against the signature too (the reference's kernels
    # may share the baseline's names).
    # NCU_SOURCE=1 adds the per-instruction counters (stall samples, executed instructions) and
    # prints them per SASS line, kernel after kernel, to $OUT/TASK-source.csv.
    source=()
    [[ -n ${NCU_SOURCE:-} ]] && source=(--section SourceCounters --import-source no -o "$OUT/$task-ncu" -f)
    ncu --clock-control none --kernel-name-base "${NCU_NAME_BASE:-function}" -k "regex:$regex" -c "$launches" \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
        --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis "${source[@]}" \
        python3 bench/kernel_lab.py --task "tasks/$task" --header "$dir/include/ks_task.h" \
        --reference "$PWD/$dir/reference.so" --check-only --workloads "$workloads" ${LAB_ARGS:-} "${args[@]}" \
        > "$OUT/$task-ncu.txt" 2>&1 || echo "ncu: the lab exited $? (a probe variant is WRONG by design)"
    if [[ -n ${NCU_SOURCE:-} ]]; then
        ncu -i "$OUT/$task-ncu.ncu-rep" >> "$OUT/$task-ncu.txt" 2>&1
        ncu -i "$OUT/$task-ncu.ncu-rep" --page source --csv --print-source sass > "$OUT/$task-source.csv" 2>&1 || true
    fi
    echo "ncu: exit $? ($(grep -c "Section: GPU Speed Of Light" "$OUT/$task-ncu.txt") kernels profiled)"
    ;;
*)
    echo "usage: $0 build TASK NAME=SOURCE[@DEFINES] ... | run TASK... | ncu TASK WORKLOADS REGEX [LAUNCHES] | sass TASK" >&2
    exit 2
    ;;
esac
