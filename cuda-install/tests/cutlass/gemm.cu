// A basic CUTLASS device GEMM (single precision, column major), as a
// downstream crate would write it: C = alpha * A * B + beta * C.
#include <cutlass/gemm/device/gemm.h>

extern "C" cudaError_t cutlass_sgemm_nn(int m, int n, int k, float alpha, const float *a, int lda,
                                        const float *b, int ldb, float beta, float *c, int ldc,
                                        cudaStream_t stream) {
    using ColumnMajor = cutlass::layout::ColumnMajor;
    using Gemm = cutlass::gemm::device::Gemm<float, ColumnMajor, float, ColumnMajor, float, ColumnMajor>;
    Gemm gemm;
    Gemm::Arguments args({m, n, k}, {a, lda}, {b, ldb}, {c, ldc}, {c, ldc}, {alpha, beta});
    cutlass::Status status = gemm(args, nullptr, stream);
    return status == cutlass::Status::kSuccess ? cudaSuccess : cudaErrorUnknown;
}
