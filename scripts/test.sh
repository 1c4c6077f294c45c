#!/usr/bin/env bash
# Set up, build (preset "ci": optimised, warnings are errors) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tests
cmake --preset ci
cmake --build --preset ci
ctest --preset ci
