#!/usr/bin/env bash
# compute-sanitizer without memcheck's --padding: KSEARCH_COMPUTE_SANITIZER=$PWD/bench/
# sanitizer_without_padding.sh shows what the padding catches (tst_gpuevaluator::sanitizerReports,
# row "a write just past the output", fails under it).
args=()
skip=0
for word in "$@"; do
    if ((skip)); then skip=0; continue; fi
    if [ "$word" = --padding ]; then skip=1; continue; fi
    args+=("$word")
done
exec "${KSEARCH_REAL_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}" "${args[@]}"
