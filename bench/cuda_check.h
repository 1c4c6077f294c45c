// CHECK(call) for the stand-alone CUDA probes under bench/: a failed runtime call stops the probe
// with its file, line and the runtime's message, so that no figure is printed from a broken run.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(x)                                                                                                       \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                           \
            std::exit(1);                                                                                              \
        }                                                                                                              \
    } while (0)
