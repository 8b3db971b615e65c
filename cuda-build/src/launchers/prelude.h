/* cuda-build launchers: what nvcc provides implicitly, for reading kernel
 * signatures with libclang and no CUDA headers. Only declarations matter:
 * function bodies are skipped, so device builtins need no definitions. */
#pragma once
#define __CUDACC__ 1
#define __NVCC__ 1
#define __global__ __attribute__((annotate("cuda_build_global")))
#define __device__
#define __host__
#define __shared__
#define __constant__
#define __managed__
#define __grid_constant__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __maxnreg__(n)
#define __cluster_dims__(...)
#define CUDART_CB

typedef __SIZE_TYPE__ size_t;

/* The storage of cuda_fp16.h / cuda_bf16.h: what matters is the type name. */
struct __align__(2) __half { unsigned short __x; };
struct __align__(4) __half2 { __half x, y; };
typedef __half half;
typedef __half2 half2;
struct __align__(2) __nv_bfloat16 { unsigned short __x; };
struct __align__(4) __nv_bfloat162 { __nv_bfloat16 x, y; };
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

#define CUDA_BUILD_VEC(T, N)                                                   \
    struct N##1 { T x; };                                                      \
    struct N##2 { T x, y; };                                                   \
    struct N##3 { T x, y, z; };                                                \
    struct N##4 { T x, y, z, w; };
CUDA_BUILD_VEC(signed char, char)
CUDA_BUILD_VEC(unsigned char, uchar)
CUDA_BUILD_VEC(short, short)
CUDA_BUILD_VEC(unsigned short, ushort)
CUDA_BUILD_VEC(int, int)
CUDA_BUILD_VEC(unsigned int, uint)
CUDA_BUILD_VEC(long, long)
CUDA_BUILD_VEC(unsigned long, ulong)
CUDA_BUILD_VEC(long long, longlong)
CUDA_BUILD_VEC(unsigned long long, ulonglong)
CUDA_BUILD_VEC(float, float)
CUDA_BUILD_VEC(double, double)
#undef CUDA_BUILD_VEC
struct dim3 {
    unsigned int x, y, z;
    dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
};
extern const uint3 threadIdx;
extern const uint3 blockIdx;
extern const dim3 blockDim;
extern const dim3 gridDim;
extern const int warpSize;
typedef struct CUstream_st *cudaStream_t;
typedef int cudaError_t;
