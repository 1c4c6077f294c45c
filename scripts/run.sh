#!/usr/bin/env bash
# Set up, build (preset "release") and start K-Search Studio: the window when there is a display,
# otherwise the headless job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release
ksearch=build/release/bin/ksearch
if [[ -n "${DISPLAY:-}" || -n "${WAYLAND_DISPLAY:-}" ]]; then
    exec "$ksearch" "$@"
fi
echo "run: no display: running the headless job instead of the window"
exec "$ksearch" tasks check rmsnorm "$@"
