#!/usr/bin/env bash
# Packs what the GPU machine needs into build/gpu-carry.tar.xz (the device tool carries at most
# 64 MiB): the `gpu` preset's binaries, stripped, and the shared libraries a bare server lacks.
# On the GPU machine: `tar xJf build/gpu-carry.tar.xz -C build`, then BIN=build/gpu-run/bin and
# LD_LIBRARY_PATH=build/gpu-libs (bench/gpu_suite.sh and bench/mla_device_run.sh do both).
set -euo pipefail
cd "$(dirname "$0")/.."
bins=(ksearch ksearch-runner libksearch_spans.so libksearch_confine.so tst_cudacompile tst_runner tst_evaluator tst_gpukernels tst_gpuevaluator tst_gpupython tst_confinement)
rm -rf build/gpu-run build/gpu-libs
mkdir -p build/gpu-run/bin
for b in "${bins[@]}"; do
    strip -o "build/gpu-run/bin/$b" "build/gpu/bin/$b"
done
bash "${BUNDLE_LIBS:-../shared/tools/bundle-libs}" build/gpu-run/bin/* build/gpu-libs
tar cJf build/gpu-carry.tar.xz -C build gpu-run gpu-libs
ls -l build/gpu-carry.tar.xz
