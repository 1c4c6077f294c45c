#!/usr/bin/env bash
# Remakes the example session that the window opens on a first start: a real run of the engine
# (host backend, real compiles and timings on this machine) with a scripted stand-in for the LLM
# (tests/demollm.cpp, through the command provider). No model is called; the intents and the
# programs are canned, the evaluations are not. Usage: bash resources/examples/matmul-demo/make.sh [build dir]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../../build/release}
tmp=$(mktemp -d)
KS_FAKE_LLM_MODE=demo "$build/bin/ksearch" --log-file - run --task "$here/matmul_host_demo" --session "$tmp/session" \
    --backend host --budget 24 --k 2 --bench-seconds 0.2 --min-improvement 0.05 \
    --provider command --command "$build/bin/ks_fake_llm" --model scripted-demo \
    --label "example: made by bash resources/examples/matmul-demo/make.sh (ksearch run, host backend, a scripted stand-in for the LLM: tests/demollm.cpp; no model was called)"
rm -rf "$here/session.json" "$here/journal.jsonl" "$here/tree.json" "$here/programs"
cp -r "$tmp/session/"* "$here/"
# The session travels with its task folder: name it relative to the session.
python3 - "$here/session.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["task"]["dir"] = "matmul_host_demo"
json.dump(c, open(p, "w"), indent=2)
PY
rm -rf "$tmp"
echo "example session written to $here"
