#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ (built by `cmake --preset fuzz && cmake --build --preset
# fuzz`), each for SECONDS, on seed corpora made from the repository's own files (the shipped
# tasks, the FlashInfer-Bench fixtures, recorded journals and answers). A crash, a leak, a
# sanitizer report or a hang of more than 10 s fails the run; libFuzzer keeps the input as
# build/fuzz/findings/<target>/crash-* (add it to fuzz/regressions/<target>/ once fixed: every
# run replays those first).
#
#   bash fuzz/run.sh [SECONDS] [TARGET...]     (default: 10 s each, every target)
#
# KSEARCH_FUZZ_SEED=N fixes libFuzzer's random seed (the CI smoke run uses 1, so that it replays
# the same mutations each time instead of exploring anew; exploring is for the long runs).
# KSEARCH_FUZZ_TIMEOUT=S raises the per-input hang limit (10 s) for long runs niced beside builds,
# where a starved process can stall on an input that takes 0.3 s alone.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(definition workloads answer sse journal job)
bin=build/fuzz/bin
work=build/fuzz/corpus
for t in "${targets[@]}"; do rm -rf "${work:?}/$t"; done # only these targets': runs of others may go on beside
seed() { # target, files...
    local dir=$work/$1; shift
    mkdir -p "$dir"
    local f
    for f in "$@"; do cp "$f" "$dir/$(echo "$f" | tr '/' '_')"; done
}
seed_lines() { # target, file: each line a seed of its own
    local dir=$work/$1 n=0 line
    mkdir -p "$dir"
    while IFS= read -r line; do printf '%s\n' "$line" > "$dir/$(basename "$2").$((n++))"; done < "$2"
}
seed definition tasks/*/definition.json tests/data/fib/*.json
seed workloads tasks/gqa_paged_decode_h32_kv4_d128_ps1/workloads.jsonl
seed_lines workloads tasks/gqa_paged_decode_h32_kv4_d128_ps1/workloads.jsonl
seed journal tests/data/engine/*.jsonl tests/data/journal-before-typed-events.jsonl
seed_lines journal tests/data/engine/ksearch.jsonl
mkdir -p "$work/answer" "$work/sse" "$work/job"
printf 'Here is the plan.\n```json\n{"insert": [{"parent": "root", "intent": "tile", "priority": 0.5}]}\n```\n' \
    > "$work/answer/edit"
printf 'Here is the kernel.\n```cuda\n#include "ks_task.h"\nextern "C" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) { return 0; }\n```\n' \
    > "$work/answer/program"
printf '\x05event: message\ndata: {"choices":[{"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n' > "$work/sse/openai"
printf '\x03: comment\r\nevent: content_block_delta\r\ndata: {"delta":{"text":"x"}}\r\ndata: more\r\n\r\n' > "$work/sse/crlf"
printf '%s' '{"backend":"host","library":"/tmp/lib.so","args_size":24,"fields":[{"name":"x","role":"input","offset":0,"size":8,"dtype":"float32"},{"name":"y","role":"output","offset":8,"size":8,"dtype":"float32"},{"name":"n","role":"axis","offset":16,"size":8,"dtype":"int64"}],"calls":[{"id":"w","inputs":{"x":{"fd":3,"bytes":64,"shape":[16]}},"outputs":{"y":{"fd":4,"bytes":64,"shape":[16]}},"axes":{"n":16},"workspace_bytes":0,"poison_seed":1}],"bench":{"enabled":true,"min_samples":10}}' \
    > "$work/job/minimal"
status=0
for t in "${targets[@]}"; do
    findings=build/fuzz/findings/$t
    mkdir -p "$findings"
    corpora=("$work/$t")
    [[ -d fuzz/regressions/$t ]] && corpora+=("fuzz/regressions/$t")
    echo "== fuzz_$t for ${seconds} s"
    if ! ASAN_OPTIONS=detect_leaks=1 "$bin/fuzz_$t" -seed="${KSEARCH_FUZZ_SEED:-0}" -max_total_time="$seconds" \
        -timeout="${KSEARCH_FUZZ_TIMEOUT:-10}" -rss_limit_mb=4096 \
        -artifact_prefix="$findings/" -print_final_stats=1 "${corpora[@]}" > "$findings/log.txt" 2>&1; then
        status=1
        echo "fuzz_$t FAILED: see $findings/log.txt"
        tail -30 "$findings/log.txt"
    fi
    grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$findings/log.txt" | tr '\n' ' '
    echo
done
exit $status
