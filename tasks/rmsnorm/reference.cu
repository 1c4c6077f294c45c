// GPU reference RMSNorm: one block per row, double accumulation, a plain shared-memory tree
// reduction.  It mirrors reference.cpp so that large workloads can be checked on the device;
// clarity matters more than speed here.
#include "ks_task.h"

namespace {

constexpr int kThreads = 256;       // power of two, required by the tree reduction below
constexpr int64_t kMaxBlocks = 65535;  // rows beyond this are covered by the grid-stride loop

__global__ void __launch_bounds__(kThreads)
rmsnorm_reference_kernel(const ks_bf16_t* x, const ks_bf16_t* weight, float eps,
                         ks_bf16_t* out, int64_t batch, int64_t hidden)
{
    __shared__ double partial[kThreads];

    for (int64_t row = blockIdx.x; row < batch; row += gridDim.x) {
        const ks_bf16_t* xr = x + row * hidden;
        ks_bf16_t* yr = out + row * hidden;

        double sum_sq = 0.0;
        for (int64_t j = threadIdx.x; j < hidden; j += kThreads) {
            const double v = ks_to_float(xr[j]);
            sum_sq += v * v;
        }
        partial[threadIdx.x] = sum_sq;
        __syncthreads();
        for (int stride = kThreads / 2; stride > 0; stride /= 2) {
            if ((int)threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
            __syncthreads();
        }
        const double inv_rms = 1.0 / sqrt(partial[0] / (double)hidden + (double)eps);
        // Every thread must have read partial[0] before the next row overwrites it.
        __syncthreads();

        for (int64_t j = threadIdx.x; j < hidden; j += kThreads) {
            const double v = (double)ks_to_float(xr[j]) * inv_rms * (double)ks_to_float(weight[j]);
            yr[j] = ks_from_float_bf16((float)v);
        }
    }
}

}  // namespace

extern "C" int ks_run(const KsArgs* args, void* /*workspace*/, size_t /*workspace_bytes*/,
                      ks_stream_t stream)
{
    if (!args || args->batch_size < 0 || args->hidden_size < 0) return (int)cudaErrorInvalidValue;
    if (args->batch_size == 0 || args->hidden_size == 0) return 0;
    if (!args->hidden_states || !args->weight || !args->output) return (int)cudaErrorInvalidValue;

    const int64_t blocks = args->batch_size < kMaxBlocks ? args->batch_size : kMaxBlocks;
    rmsnorm_reference_kernel<<<(unsigned)blocks, kThreads, 0, stream>>>(
        args->hidden_states, args->weight, args->eps, args->output, args->batch_size,
        args->hidden_size);
    return (int)cudaGetLastError();
}
