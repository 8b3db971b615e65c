// C = A + B, the operation of NVIDIA's vectorAdd sample, written for
// bandwidth: 16-byte loads, several in flight per thread, grid-stride.
#include "common.cuh"

// Independent float4 loads each thread issues before the first use.
#define VADD_UNROLL 4

extern "C" __global__ void vectorAdd(const float* __restrict__ a,
                                     const float* __restrict__ b,
                                     float* __restrict__ c,
                                     unsigned long long n) {
    const unsigned long long stride = grid_threads();
    unsigned long long i = global_thread();
    if (aligned16(a) && aligned16(b) && aligned16(c)) {
        const unsigned long long n4 = n / 4;
        const float4* a4 = reinterpret_cast<const float4*>(a);
        const float4* b4 = reinterpret_cast<const float4*>(b);
        float4* c4 = reinterpret_cast<float4*>(c);
        // Main loop: VADD_UNROLL iterations' loads are all issued first.
        for (; i + (VADD_UNROLL - 1) * stride < n4; i += VADD_UNROLL * stride) {
            float4 x[VADD_UNROLL], y[VADD_UNROLL];
#pragma unroll
            for (int u = 0; u < VADD_UNROLL; ++u) {
                x[u] = load_stream(a4 + i + u * stride);
                y[u] = load_stream(b4 + i + u * stride);
            }
#pragma unroll
            for (int u = 0; u < VADD_UNROLL; ++u) {
                store_stream(c4 + i + u * stride,
                             make_float4(x[u].x + y[u].x, x[u].y + y[u].y,
                                         x[u].z + y[u].z, x[u].w + y[u].w));
            }
        }
        for (; i < n4; i += stride) {
            float4 x = load_stream(a4 + i), y = load_stream(b4 + i);
            store_stream(c4 + i, make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w));
        }
        // The last n % 4 elements, by the first threads of the grid.
        const unsigned long long t = global_thread();
        if (t < n % 4) {
            const unsigned long long j = n4 * 4 + t;
            c[j] = a[j] + b[j];
        }
    } else {
        for (; i < n; i += stride) c[i] = a[i] + b[i];
    }
}
