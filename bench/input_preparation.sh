#!/usr/bin/env bash
# Input preparation of an MLA decode evaluation (host backend, so it runs anywhere), for one or
# more ksearch binaries side by side: the evaluator's "inputs" phase and the whole evaluation.
# Usage: bench/input_preparation.sh KSEARCH... (e.g. an older build's and this one's)
set -euo pipefail
cd "$(dirname "$0")/.."
task=mla_paged_decode_h16_ckv512_kpe64_ps1
ids=${IDS:-cfe6e592,1ce2f5e9,55606db0}
echo "| binary | workloads | inputs s | total s | peak RSS GB |"
echo "|---|---|---|---|---|"
for bin in "$@"; do
    out=$(mktemp)
    /usr/bin/time -f "%M" -o "$out.rss" "$bin" eval --task $task --backend host --workloads "$ids" --json \
        --max-seconds 0.05 "tasks/$task/reference.cpp" > "$out" 2>/dev/null
    python3 - "$bin" "$ids" "$out" "$(cat "$out.rss")" <<'PY'
import json, sys
text = open(sys.argv[3]).read()
e = json.loads(text[text.find("{"):])
s = e["seconds"]
print(f"| {sys.argv[1]} | {len(sys.argv[2].split(','))} | {s['inputs']:.1f} | {s['total']:.1f} | {int(sys.argv[4]) / 1e6:.1f} |")
PY
    rm -f "$out" "$out.rss"
done
