#!/usr/bin/env bash
# Set up, build (preset "release") and start K-Search Studio: the window when there is a display,
# otherwise the headless job, which exports the bundled example session and prints its report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release
ksearch=build/release/bin/ksearch
if [[ -n "${DISPLAY:-}" || -n "${WAYLAND_DISPLAY:-}" ]]; then
    exec "$ksearch" "$@"
fi
echo "run: no display: exporting the example session instead of opening the window"
out=build/example-export
"$ksearch" export --session resources/examples/matmul-demo --out "$out"
# The report's head: task, search settings, the best kernel's numbers and the path to it.
awk '/^## Best J/ { exit } { print }' "$out/report.md"
echo "run: the whole export (best kernel, tree snapshot, report) is in $out"
