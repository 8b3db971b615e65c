// Sum of a float array in two passes, deterministic (no atomics):
//   reduceSumPartial: each block sums a grid-stride share -> partial[blockIdx.x]
//   reduceSumFinal:   one block sums the partials        -> out[0]
// Loads are float4 with several in flight; lanes accumulate in float over
// independent chains, then fold into double so the result does not depend
// on how many elements one thread saw.
#include "common.cuh"

#define REDUCE_UNROLL 4
#define REDUCE_MAX_THREADS 1024

__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// Sum of v over the block; the result is valid in thread 0.
__device__ __forceinline__ double block_sum(double v) {
    __shared__ double warp_totals[REDUCE_MAX_THREADS / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) warp_totals[warp] = v;
    __syncthreads();
    const int warps = (blockDim.x + 31) >> 5;
    v = (threadIdx.x < warps) ? warp_totals[threadIdx.x] : 0.0;
    if (warp == 0) v = warp_sum(v);
    return v;
}

extern "C" __global__ void __launch_bounds__(REDUCE_MAX_THREADS)
reduceSumPartial(const float* __restrict__ x, unsigned long long n, double* __restrict__ partial) {
    const unsigned long long stride = grid_threads();
    unsigned long long i = global_thread();
    double total = 0.0;
    if (aligned16(x)) {
        const unsigned long long n4 = n / 4;
        const float4* x4 = reinterpret_cast<const float4*>(x);
        float acc[REDUCE_UNROLL] = {};
        for (; i + (REDUCE_UNROLL - 1) * stride < n4; i += REDUCE_UNROLL * stride) {
            float4 v[REDUCE_UNROLL];
#pragma unroll
            for (int u = 0; u < REDUCE_UNROLL; ++u) v[u] = load_stream(x4 + i + u * stride);
#pragma unroll
            for (int u = 0; u < REDUCE_UNROLL; ++u) acc[u] += (v[u].x + v[u].y) + (v[u].z + v[u].w);
        }
        for (; i < n4; i += stride) {
            float4 v = load_stream(x4 + i);
            acc[0] += (v.x + v.y) + (v.z + v.w);
        }
#pragma unroll
        for (int u = 0; u < REDUCE_UNROLL; ++u) total += acc[u];
        const unsigned long long t = global_thread();
        if (t < n % 4) total += x[n4 * 4 + t];
    } else {
        for (; i < n; i += stride) total += x[i];
    }
    total = block_sum(total);
    if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

extern "C" __global__ void __launch_bounds__(REDUCE_MAX_THREADS)
reduceSumFinal(const double* __restrict__ partial, unsigned int count, double* __restrict__ out) {
    double total = 0.0;
    for (unsigned int i = threadIdx.x; i < count; i += blockDim.x) total += partial[i];
    total = block_sum(total);
    if (threadIdx.x == 0) out[0] = total;
}
