// GEMM on tensor cores with TF32 inputs (WMMA m16n16k8), FP32 accumulate:
//   C[M,N] = alpha * A[M,K] * B[K,N] + beta * C[M,N], all row-major.
//
// NOT an FP32 result: A and B are rounded to TF32 (10-bit mantissa) before
// each product, so expect relative errors near 1e-3, not 1e-6. Reported by
// the workload as "SGEMM (TF32 tensor cores)", never as FP32.
//
// Block tile 128x128, k-step 32, 8 warps as 2 x 4 warp tiles of 64 x 32
// (4 x 2 WMMA fragments each). The next k-tile is fetched into registers
// while the current one is multiplied. Requires compute capability >= 8.0,
// M % 128 == 0, N % 128 == 0, K % 32 == 0 and 16-byte-aligned pointers.
#include <mma.h>
#include "common.cuh"

#define TC_BM 128
#define TC_BN 128
#define TC_BK 32
#define TC_THREADS 256
// Row padding (floats): WMMA needs ldm % 4 == 0; +4 also spreads banks.
#define TC_PAD 4

extern "C" __global__ void __launch_bounds__(TC_THREADS)
sgemmTf32(int M, int N, int K, float alpha,
          const float* __restrict__ A, const float* __restrict__ B,
          float beta, float* __restrict__ C) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    using namespace nvcuda;
    __shared__ __align__(32) float As[TC_BM][TC_BK + TC_PAD];
    __shared__ __align__(32) float Bs[TC_BK][TC_BN + TC_PAD];

    const int tile_n = blockIdx.x, tile_m = blockIdx.y;
    const int tid = threadIdx.x, warp = tid >> 5;
    const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;

    A += (size_t)tile_m * TC_BM * K;
    B += (size_t)tile_n * TC_BN;
    C += (size_t)tile_m * TC_BM * N + (size_t)tile_n * TC_BN;

    // Global -> shared: A tile 128 x 32 (8 float4 per row), B tile 32 x 128
    // (32 float4 per row); four float4 of each per thread.
    const int a_r = tid >> 3, a_c = (tid & 7) * 4;    // rows a_r + 32p
    const int b_r = tid >> 5, b_c = (tid & 31) * 4;   // rows b_r + 8p
    float4 ra[4], rb[4];

    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[4][2];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += TC_BK) {
#pragma unroll
        for (int p = 0; p < 4; ++p) {
            ra[p] = *reinterpret_cast<const float4*>(A + (size_t)(a_r + 32 * p) * K + k0 + a_c);
            rb[p] = *reinterpret_cast<const float4*>(B + (size_t)(k0 + b_r + 8 * p) * N + b_c);
        }
        // Everyone is done reading the previous tile.
        __syncthreads();
#pragma unroll
        for (int p = 0; p < 4; ++p) {
            *reinterpret_cast<float4*>(&As[a_r + 32 * p][a_c]) = ra[p];
            *reinterpret_cast<float4*>(&Bs[b_r + 8 * p][b_c]) = rb[p];
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TC_BK; kk += 8) {
            wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> af[4];
            wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> bf[2];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                wmma::load_matrix_sync(af[i], &As[wm + 16 * i][kk], TC_BK + TC_PAD);
#pragma unroll
                for (int e = 0; e < af[i].num_elements; ++e) af[i].x[e] = wmma::__float_to_tf32(af[i].x[e]);
            }
#pragma unroll
            for (int j = 0; j < 2; ++j) {
                wmma::load_matrix_sync(bf[j], &Bs[kk][wn + 16 * j], TC_BN + TC_PAD);
#pragma unroll
                for (int e = 0; e < bf[j].num_elements; ++e) bf[j].x[e] = wmma::__float_to_tf32(bf[j].x[e]);
            }
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], af[i], bf[j], acc[i][j]);
        }
    }

#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            float* dst = C + (size_t)(wm + 16 * i) * N + wn + 16 * j;
            // Element-wise scaling is valid: both fragments share one layout.
            if (beta != 0.0f) {
                wmma::fragment<wmma::accumulator, 16, 16, 8, float> old;
                wmma::load_matrix_sync(old, dst, N, wmma::mem_row_major);
#pragma unroll
                for (int e = 0; e < old.num_elements; ++e)
                    acc[i][j].x[e] = alpha * acc[i][j].x[e] + beta * old.x[e];
            } else {
#pragma unroll
                for (int e = 0; e < acc[i][j].num_elements; ++e) acc[i][j].x[e] *= alpha;
            }
            wmma::store_matrix_sync(dst, acc[i][j], N, wmma::mem_row_major);
        }
#else
    // Tensor-core TF32 needs compute capability 8.0; the host never launches
    // this on older GPUs.
    __trap();
#endif
}
