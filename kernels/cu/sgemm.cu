// FP32 SGEMM on CUDA cores (FFMA, no tensor cores):
//   C[M,N] = alpha * A[M,K] * B[K,N] + beta * C[M,N], all row-major.
//
// Block tile 128x128, k-step 16, 256 threads; each thread owns an 8x8 block
// of C in registers (two 4x4 quadrants 32 rows / 16 columns apart, so the
// warp's shared-memory fragment reads are contiguous 16-byte vectors).
// A is stored transposed in shared memory (As[k][m]) so the inner loop reads
// 16-byte vectors of both operands. Shared memory is double-buffered: the
// next tile is fetched into registers while the current one is multiplied,
// with one barrier per k-step.
//
// Requires M % 128 == 0, N % 128 == 0, K % 16 == 0 and 16-byte-aligned
// pointers; the host checks this (and refuses other sizes) before launching.
#include "common.cuh"

#define SG_BM 128
#define SG_BN 128
#define SG_BK 16
#define SG_THREADS 256
// Row padding of the transposed A tile: keeps 16-byte alignment and halves
// the bank conflicts of the transposing stores.
#define SG_APAD 4
// Block rows walked together, so that concurrently running blocks share
// panels of A and B in L2.
#define SG_GROUP 8

extern "C" __global__ void __launch_bounds__(SG_THREADS, 2)
sgemm(int M, int N, int K, float alpha,
      const float* __restrict__ A, const float* __restrict__ B,
      float beta, float* __restrict__ C) {
    __shared__ __align__(16) float As[2][SG_BK][SG_BM + SG_APAD];
    __shared__ __align__(16) float Bs[2][SG_BK][SG_BN];

    // Grouped tile order (see SG_GROUP).
    const int grid_m = M / SG_BM, grid_n = N / SG_BN;
    const int per_group = SG_GROUP * grid_n;
    const int bid = blockIdx.x;
    const int first_m = (bid / per_group) * SG_GROUP;
    const int group_m = min(grid_m - first_m, SG_GROUP);
    const int tile_m = first_m + (bid % per_group) % group_m;
    const int tile_n = (bid % per_group) / group_m;
    if (tile_m >= grid_m) return;

    const int tid = threadIdx.x;
    const int warp = tid >> 5, lane = tid & 31;
    // 8 warps as 2 x 4 warp tiles of 64 x 32; lanes as 8 x 4.
    const int row0 = (warp >> 2) * 64 + (lane >> 2) * 4;
    const int col0 = (warp & 3) * 32 + (lane & 3) * 4;

    A += (size_t)tile_m * SG_BM * K;
    B += (size_t)tile_n * SG_BN;
    C += (size_t)tile_m * SG_BM * N + (size_t)tile_n * SG_BN;

    // Global -> shared mapping: A tile 128x16 and B tile 16x128, two float4 each.
    const int a_r = tid >> 2, a_c = (tid & 3) * 4;
    const int b_r = tid >> 5, b_c = (tid & 31) * 4;
    float4 ra[2], rb[2];

    // Running pointers into this thread's slices of the A and B panels.
    const float* a_src = A + (size_t)a_r * K + a_c;
    const float* b_src = B + (size_t)b_r * N + b_c;
    const size_t a_half = (size_t)64 * K, b_half = (size_t)8 * N, b_step = (size_t)SG_BK * N;

#define SG_LOAD()                                                                       \
    do {                                                                                \
        ra[0] = *reinterpret_cast<const float4*>(a_src);                               \
        ra[1] = *reinterpret_cast<const float4*>(a_src + a_half);                      \
        rb[0] = *reinterpret_cast<const float4*>(b_src);                               \
        rb[1] = *reinterpret_cast<const float4*>(b_src + b_half);                      \
        a_src += SG_BK;                                                                 \
        b_src += b_step;                                                                \
    } while (0)

#define SG_STORE(buf)                                                                   \
    do {                                                                                \
        _Pragma("unroll") for (int p = 0; p < 2; ++p) {                                 \
            As[buf][a_c + 0][a_r + 64 * p] = ra[p].x;                                   \
            As[buf][a_c + 1][a_r + 64 * p] = ra[p].y;                                   \
            As[buf][a_c + 2][a_r + 64 * p] = ra[p].z;                                   \
            As[buf][a_c + 3][a_r + 64 * p] = ra[p].w;                                   \
        }                                                                               \
        *reinterpret_cast<float4*>(&Bs[buf][b_r][b_c]) = rb[0];                         \
        *reinterpret_cast<float4*>(&Bs[buf][b_r + 8][b_c]) = rb[1];                     \
    } while (0)

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

    SG_LOAD();
    SG_STORE(0);
    __syncthreads();

    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += SG_BK) {
        const bool has_next = k0 + SG_BK < K;
        if (has_next) SG_LOAD();
#pragma unroll
        for (int k = 0; k < SG_BK; ++k) {
            const float4 a_lo = *reinterpret_cast<const float4*>(&As[buf][k][row0]);
            const float4 a_hi = *reinterpret_cast<const float4*>(&As[buf][k][row0 + 32]);
            const float4 b_lo = *reinterpret_cast<const float4*>(&Bs[buf][k][col0]);
            const float4 b_hi = *reinterpret_cast<const float4*>(&Bs[buf][k][col0 + 16]);
            const float a[8] = {a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w};
            const float b[8] = {b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (has_next) {
            // The other buffer was last read before the previous barrier.
            SG_STORE(buf ^ 1);
            __syncthreads();
            buf ^= 1;
        }
    }
#undef SG_LOAD
#undef SG_STORE

#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int r = row0 + (i & 3) + (i >> 2) * 32;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float4* dst = reinterpret_cast<float4*>(C + (size_t)r * N + col0 + h * 16);
            float4 v = make_float4(alpha * acc[i][4 * h + 0], alpha * acc[i][4 * h + 1],
                                   alpha * acc[i][4 * h + 2], alpha * acc[i][4 * h + 3]);
            if (beta != 0.0f) {
                const float4 old = *dst;
                v.x = fmaf(beta, old.x, v.x);
                v.y = fmaf(beta, old.y, v.y);
                v.z = fmaf(beta, old.z, v.z);
                v.w = fmaf(beta, old.w, v.w);
            }
            *dst = v;
        }
    }
}
