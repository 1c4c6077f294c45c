// CHECK(call) for the stand-alone CUDA probes under bench/: a failed runtime call stops the probe
// with its file, line and the runtime's message, so that no figure is printed from a broken run.
// event_ms(): the milliseconds between two events around one launch on the default stream.
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

template<typename Launch> float event_ms(cudaEvent_t t0, cudaEvent_t t1, Launch&& launch)
{
    CHECK(cudaEventRecord(t0));
    launch();
    CHECK(cudaEventRecord(t1));
    CHECK(cudaEventSynchronize(t1));
    CHECK(cudaGetLastError());
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, t0, t1));
    return ms;
}
