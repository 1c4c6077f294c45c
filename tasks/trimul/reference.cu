// GPU reference TriMul: three plain fp32 kernels, written to be checked, not to be fast.
//
//   1. one block per (b, i, k): LayerNorm over dim, then thread h computes the five projections
//      of that row (left, right with mask and sigmoid gates, and the output gate);
//   2. a tiled fp32 batched GEMM per (b, h): out[i, j] = sum_k left[i, k] * right[j, k];
//   3. one block per (b, i, j): LayerNorm over hidden_dim, the output gate, the projection to dim.
// Intermediates go to the workspace: left and right as [b, h, i, k], gate and out as [b, i, j, h].
// Checked against reference.cpp on the workloads the host can compute.
#include "ks_task.h"

#include <climits>

namespace {

constexpr int kHidden = (int)KS_HIDDEN_DIM;
constexpr float kEps = 1e-5f;
constexpr int kTile = 64;  // GEMM tile: 64 x 64 outputs, 16 x 16 threads with 4 x 4 each
constexpr int kTileK = 16;

__device__ float sigmoidf(float v) { return 1.0f / (1.0f + expf(-v)); }

// Mean and inverse standard deviation of n values in shared memory, by every thread of the block.
__device__ void block_stats(const float* v, int n, float* red, float& mean, float& inv)
{
    float s = 0.0f, q = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += v[i];
    red[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
        __syncthreads();
    }
    mean = red[0] / (float)n;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) q += (v[i] - mean) * (v[i] - mean);
    red[threadIdx.x] = q;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
        __syncthreads();
    }
    inv = rsqrtf(red[0] / (float)n + kEps);
    __syncthreads();
}

__global__ void __launch_bounds__(kHidden) project_kernel(KsArgs a, float* left, float* right, float* gate)
{
    extern __shared__ float smem[];  // x[dim], then kHidden floats for reductions
    const int64_t N = a.seq_len, C = a.dim;
    const int64_t row = blockIdx.x;  // (b, i, k) flattened
    const int64_t b = row / (N * N), p = row % (N * N);
    float* x = smem;
    float* red = smem + C;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) x[c] = a.input[row * C + c];
    __syncthreads();
    float mean, inv;
    block_stats(x, (int)C, red, mean, inv);
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) x[c] = (x[c] - mean) * inv * a.norm_weight[c] + a.norm_bias[c];
    __syncthreads();

    const int h = threadIdx.x;
    float lp = 0.0f, lg = 0.0f, rp = 0.0f, rg = 0.0f, og = 0.0f;
    for (int64_t c = 0; c < C; ++c) {
        const float v = x[c];
        lp += v * a.left_proj[h * C + c];
        lg += v * a.left_gate[h * C + c];
        rp += v * a.right_proj[h * C + c];
        rg += v * a.right_gate[h * C + c];
        og += v * a.out_gate[h * C + c];
    }
    const float m = a.mask[row] ? 1.0f : 0.0f;
    const int64_t bh = (b * kHidden + h) * N * N + p;  // [b, h, i, k]
    left[bh] = lp * m * sigmoidf(lg);
    right[bh] = rp * m * sigmoidf(rg);
    gate[row * kHidden + h] = sigmoidf(og);
}

// out[b, i, j, h] = sum_k L[b, h, i, k] * R[b, h, j, k]; grid (N / 64, N / 64, B * H).
__global__ void __launch_bounds__(256) contract_kernel(const float* left, const float* right, float* out, int64_t N)
{
    __shared__ float ls[kTileK][kTile + 1], rs[kTileK][kTile + 1];
    const int64_t bh = blockIdx.z;
    const int64_t b = bh / kHidden, h = bh % kHidden;
    const float* L = left + bh * N * N;
    const float* R = right + bh * N * N;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int64_t i0 = (int64_t)blockIdx.y * kTile, j0 = (int64_t)blockIdx.x * kTile;
    float acc[4][4] = {};
    for (int64_t k0 = 0; k0 < N; k0 += kTileK) {
        for (int e = threadIdx.x; e < kTile * kTileK; e += blockDim.x) {
            const int r = e / kTileK, kk = e % kTileK;
            const int64_t k = k0 + kk;
            ls[kk][r] = i0 + r < N && k < N ? L[(i0 + r) * N + k] : 0.0f;
            rs[kk][r] = j0 + r < N && k < N ? R[(j0 + r) * N + k] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < kTileK; ++kk)
            for (int u = 0; u < 4; ++u)
                for (int v = 0; v < 4; ++v) acc[u][v] += ls[kk][ty * 4 + u] * rs[kk][tx * 4 + v];
        __syncthreads();
    }
    for (int u = 0; u < 4; ++u)
        for (int v = 0; v < 4; ++v) {
            const int64_t i = i0 + ty * 4 + u, j = j0 + tx * 4 + v;
            if (i < N && j < N) out[((b * N + i) * N + j) * kHidden + h] = acc[u][v];
        }
}

__global__ void __launch_bounds__(kHidden) output_kernel(KsArgs a, const float* out, const float* gate)
{
    __shared__ float y[kHidden], red[kHidden];
    const int64_t row = blockIdx.x;  // (b, i, j)
    const int h = threadIdx.x;
    y[h] = out[row * kHidden + h];
    __syncthreads();
    float mean, inv;
    block_stats(y, kHidden, red, mean, inv);
    const float v = ((y[h] - mean) * inv * a.to_out_norm_weight[h] + a.to_out_norm_bias[h]) * gate[row * kHidden + h];
    __syncthreads();
    y[h] = v;
    __syncthreads();
    for (int64_t c = threadIdx.x; c < a.dim; c += blockDim.x) {
        float s = 0.0f;
        for (int k = 0; k < kHidden; ++k) s += y[k] * a.to_out[c * kHidden + k];
        a.output[row * a.dim + c] = s;
    }
}

}  // namespace

extern "C" int ks_run(const KsArgs* args, void* workspace, size_t workspace_bytes, ks_stream_t stream)
{
    if (!args || args->batch_size < 0 || args->seq_len < 0 || args->dim <= 0) return (int)cudaErrorInvalidValue;
    const int64_t B = args->batch_size, N = args->seq_len, C = args->dim;
    const int64_t rows = B * N * N;
    if (rows == 0) return 0;
    const size_t plane = (size_t)rows * kHidden;
    if (!workspace || workspace_bytes < 4 * plane * sizeof(float) || rows > INT_MAX || (N + kTile - 1) / kTile > 65535 ||
        B * kHidden > 65535)
        return (int)cudaErrorInvalidValue;
    float* left = static_cast<float*>(workspace);
    float* right = left + plane;
    float* gate = right + plane;
    float* out = gate + plane;
    const size_t smem = (size_t)(C + kHidden) * sizeof(float);
    if (smem > 48 * 1024) return (int)cudaErrorInvalidValue;
    project_kernel<<<(unsigned)rows, kHidden, smem, stream>>>(*args, left, right, gate);
    const unsigned tiles = (unsigned)((N + kTile - 1) / kTile);
    contract_kernel<<<dim3(tiles, tiles, (unsigned)(B * kHidden)), 256, 0, stream>>>(left, right, out, N);
    output_kernel<<<(unsigned)rows, kHidden, 0, stream>>>(*args, out, gate);
    return (int)cudaGetLastError();
}
