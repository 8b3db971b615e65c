// y = alpha * x + y (single precision), written for bandwidth like vectorAdd.
#include "common.cuh"

#define SAXPY_UNROLL 4

extern "C" __global__ void saxpy(float alpha,
                                 const float* __restrict__ x,
                                 float* __restrict__ y,
                                 unsigned long long n) {
    const unsigned long long stride = grid_threads();
    unsigned long long i = global_thread();
    if (aligned16(x) && aligned16(y)) {
        const unsigned long long n4 = n / 4;
        const float4* x4 = reinterpret_cast<const float4*>(x);
        float4* y4 = reinterpret_cast<float4*>(y);
        for (; i + (SAXPY_UNROLL - 1) * stride < n4; i += SAXPY_UNROLL * stride) {
            float4 xv[SAXPY_UNROLL], yv[SAXPY_UNROLL];
#pragma unroll
            for (int u = 0; u < SAXPY_UNROLL; ++u) {
                xv[u] = load_stream(x4 + i + u * stride);
                yv[u] = load_stream(y4 + i + u * stride);
            }
#pragma unroll
            for (int u = 0; u < SAXPY_UNROLL; ++u) {
                store_stream(y4 + i + u * stride,
                             make_float4(fmaf(alpha, xv[u].x, yv[u].x), fmaf(alpha, xv[u].y, yv[u].y),
                                         fmaf(alpha, xv[u].z, yv[u].z), fmaf(alpha, xv[u].w, yv[u].w)));
            }
        }
        for (; i < n4; i += stride) {
            float4 a = load_stream(x4 + i), b = load_stream(y4 + i);
            store_stream(y4 + i, make_float4(fmaf(alpha, a.x, b.x), fmaf(alpha, a.y, b.y),
                                             fmaf(alpha, a.z, b.z), fmaf(alpha, a.w, b.w)));
        }
        const unsigned long long t = global_thread();
        if (t < n % 4) {
            const unsigned long long j = n4 * 4 + t;
            y[j] = fmaf(alpha, x[j], y[j]);
        }
    } else {
        for (; i < n; i += stride) y[i] = fmaf(alpha, x[i], y[i]);
    }
}
