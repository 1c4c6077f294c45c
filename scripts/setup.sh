#!/usr/bin/env bash
# Installs the Debian 12 packages that K-Search Studio needs to build, test and package
# (--tests: also those the remote-worker tests need).
# Quick when everything is already there: it only calls apt-get for what is missing.
set -euo pipefail

packages=(
    cmake ninja-build g++ pkg-config
    qt6-base-dev qt6-base-dev-tools qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libgl-dev libvulkan-dev
    qtkeychain-qt6-dev
    nlohmann-json3-dev libspdlog-dev
    xvfb xauth
    dpkg-dev file desktop-file-utils
)
# With --tests: what the remote-worker tests start privately (an sshd, a single-node SLURM), the
# CPU PyTorch of the Python runner tests, and clang with libFuzzer for the fuzz targets (fuzz/).
# Not for the app itself: on a desktop the first would enable system services nobody asked for,
# and users bring the torch (and triton) they work with.
if [[ ${1:-} == --tests ]]; then
    packages+=(openssh-server openssh-client slurm-wlm munge python3-torch clang libclang-rt-14-dev)
fi

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    sudo_cmd=()
    if [[ $(id -u) -ne 0 ]]; then
        command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install packages" >&2; exit 3; }
        sudo_cmd=(sudo)
    fi
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
    echo "setup: all ${#packages[@]} packages present"
fi

# What works depends on the CUDA toolkit and on a GPU; say so plainly.
nvcc=${KSEARCH_NVCC:-/usr/local/cuda/bin/nvcc}
if [[ -x "$nvcc" ]]; then
    echo "setup: CUDA toolkit: $("$nvcc" --version | tail -1)"
else
    echo "setup: no CUDA toolkit at $nvcc: the host backend works (g++), CUDA kernels cannot be compiled;"
    echo "       the build still succeeds and the CUDA compile tests skip. Install the toolkit in /usr/local/cuda"
    echo "       or set KSEARCH_NVCC to enable them."
fi
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    echo "setup: GPU: $(nvidia-smi -L | head -1)"
else
    echo "setup: no NVIDIA GPU here: everything but running CUDA kernels works; GPU tests report 'Skipped'."
fi
