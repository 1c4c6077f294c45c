#!/usr/bin/env bash
# Screenshots of the window for docs/screenshots, taken from a real X display (Xvfb): a live search
# of the example task mid-run, the inspector with a diff, each chart. Full-size images go to
# build/screenshots; small copies (for the README and docs) to docs/screenshots.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-dev}
cmake --build --preset "$preset" --target ks_screenshots ks_fake_llm ksearch-runner
out=build/screenshots
rm -rf "$out" && mkdir -p "$out"
home=$(mktemp -d)
Xvfb :97 -screen 0 1600x1000x24 >/dev/null 2>&1 &
xvfb=$!
trap 'kill $xvfb; rm -rf "$home"' EXIT
sleep 1
DISPLAY=:97 QT_QPA_PLATFORM=xcb HOME=$home XDG_CONFIG_HOME=$home/config XDG_DATA_HOME=$home/data \
    "build/$preset/bin/ks_screenshots" "$out"
DISPLAY=:97 QT_QPA_PLATFORM=xcb HOME=$home XDG_CONFIG_HOME=$home/config XDG_DATA_HOME=$home/data \
    "build/$preset/bin/ks_screenshots" "$out" --settings-only
DISPLAY=:97 QT_QPA_PLATFORM=xcb HOME=$home XDG_CONFIG_HOME=$home/config XDG_DATA_HOME=$home/data \
    "build/$preset/bin/ks_screenshots" "$out" --sanitizer-only
DISPLAY=:97 QT_QPA_PLATFORM=xcb HOME=$home XDG_CONFIG_HOME=$home/config XDG_DATA_HOME=$home/data \
    "build/$preset/bin/ks_screenshots" "$out" --code-only
for f in "$out"/*.png; do
    convert "$f" -resize '1100x1100>' "docs/screenshots/$(basename "$f")"
done
ls -la docs/screenshots
