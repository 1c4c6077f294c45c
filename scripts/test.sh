#!/usr/bin/env bash
# Set up, build (preset "ci": optimised, warnings are errors) and run the whole test suite, then
# build the parsers' libFuzzer targets (preset "fuzz", clang) and run each for a short smoke run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tests
cmake --preset ci
cmake --build --preset ci
ctest --preset ci
cmake --preset fuzz > /dev/null
cmake --build --preset fuzz
KSEARCH_FUZZ_SEED=${KSEARCH_FUZZ_SEED:-1} bash fuzz/run.sh "${KSEARCH_FUZZ_SECONDS:-10}"
