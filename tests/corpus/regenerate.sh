#!/usr/bin/env bash
# Regenerates tests/corpus/real/*.txt by running the real CUDA tools installed by
# scripts/test.sh (nvcc 13.0, the mixed nvcc 13.0 + nvvm 13.5 toolkit, ptxas 12.9
# and 11.8). Each file gets a header naming the expected diagnosis code and the
# command that was run; the body is the tool's own stderr+stdout. Temp paths are
# normalised to /tmp/corpus (and nvcc's tmpxft_ names to zeros) so reruns diff cleanly.
#
#   tests/corpus/regenerate.sh            # uses the CARGO_CUDA_TEST_* variables
set -u
C=${CARGO_CUDA_TEST_CACHE:-/root/.cache/cargo-cuda-test}
CU13=${CARGO_CUDA_TEST_CU13:-$C/cu13/nvidia/cu13}
MIXED=${CARGO_CUDA_TEST_MIXED:-$C/mixed/nvidia/cu13}
PTXAS12=${CARGO_CUDA_TEST_PTXAS12:-$C/cu12/nvidia/cuda_nvcc/bin/ptxas}
PTXAS11=${CARGO_CUDA_TEST_PTXAS11:-$C/cu11/nvidia/cuda_nvcc/bin/ptxas}
NVCC=$CU13/bin/nvcc
OUT=$(cd "$(dirname "$0")" && pwd)/real
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1

# save NAME CODE DESCRIPTION -- COMMAND...: run COMMAND, save its output.
save() {
  local name=$1 code=$2 desc=$3
  shift 4
  local body
  body=$("$@" 2>&1)
  {
    echo "# expect: $code"
    echo "# source: real tool output, generated here by tests/corpus/regenerate.sh: $desc"
    echo "# ---"
    printf '%s\n' "$body" | sed -e "s#$W#/tmp/corpus#g" -e "s#$C#/root/.cache/cargo-cuda-test#g" \
      -e 's#tmpxft_[0-9a-f]*_[0-9a-f]*#tmpxft_00000000_00000000#g' \
      -e 's#__cudaRegisterLinkedBinary_[0-9a-f]*_#__cudaRegisterLinkedBinary_00000000_#g'
  } >"$OUT/$name.txt"
  echo "wrote $name.txt ($(printf '%s\n' "$body" | wc -l) lines)"
}

cat >va.cu <<'CU'
extern "C" __global__ void va(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
CU
cat >bf16.cu <<'CU'
#include <cuda_bf16.h>
extern "C" __global__ void to_bf16(const float *in, unsigned short *out) {
  unsigned short r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(in[threadIdx.x]));
  out[threadIdx.x] = r;
}
CU
cat >bulk.cu <<'CU'
extern "C" __global__ void bulk(float *dst, const float *src) {
  __shared__ alignas(128) float buf[256];
  __shared__ alignas(8) unsigned long long bar;
  unsigned s = (unsigned)__cvta_generic_to_shared(buf);
  unsigned b = (unsigned)__cvta_generic_to_shared(&bar);
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 1024, [%2];"
               :: "r"(s), "l"(src), "r"(b) : "memory");
  dst[threadIdx.x] = buf[threadIdx.x];
}
CU
cat >wgmma.cu <<'CU'
extern "C" __global__ void fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
CU
cat >host.cu <<'CU'
#include <cstdio>
__global__ void k() {}
int main() { k<<<1, 1>>>(); std::printf("ok\n"); return 0; }
CU

save nvcc13-arch-sm70 arch-dropped-by-nvcc "nvcc 13.0 -arch=sm_70 (Volta, dropped in 13.0)" -- \
  "$NVCC" -arch=sm_70 -cubin -o va.cubin va.cu
save nvcc13-arch-sm35 arch-dropped-by-nvcc "nvcc 13.0 -arch=sm_35 (Kepler, dropped in 12.0)" -- \
  "$NVCC" -arch=sm_35 -cubin -o va.cubin va.cu
save nvcc13-gencode-compute50 arch-dropped-by-nvcc "nvcc 13.0 -gencode arch=compute_50,code=sm_50 (Maxwell, dropped in 13.0)" -- \
  "$NVCC" -gencode arch=compute_50,code=sm_50 -c -o va.o va.cu
save nvcc13-arch-sm200 arch-too-new-for-nvcc "nvcc 13.0 -arch=sm_200 (no such arch in any release)" -- \
  "$NVCC" -arch=sm_200 -cubin -o va.cubin va.cu
save nvcc13-gencode-compute107 arch-too-new-for-nvcc "nvcc 13.0 -gencode arch=compute_107,code=sm_107 (added in 13.4)" -- \
  "$NVCC" -gencode arch=compute_107,code=sm_107 -c -o va.o va.cu
save nvcc13-code-sm200 arch-too-new-for-nvcc "nvcc 13.0 --gpu-code=sm_200" -- \
  "$NVCC" --gpu-architecture=compute_90 --gpu-code=sm_200 -c -o va.o va.cu
save nvcc13-arch-native-no-gpu arch-not-detected "nvcc 13.0 -arch=native on a machine without a GPU or driver" -- \
  "$NVCC" -arch=native -cubin -o va.cubin va.cu

"$NVCC" -arch=sm_90 -ptx -o va90.ptx va.cu
save ptxas12-fed-ptx90 ptxas-too-old "ptxas 12.9 fed PTX ISA 9.0 from nvcc 13.0" -- \
  "$PTXAS12" -arch=sm_90 -o va.cubin va90.ptx
save ptxas11-fed-ptx90 ptxas-too-old "ptxas 11.8 fed PTX ISA 9.0 from nvcc 13.0" -- \
  "$PTXAS11" -arch=sm_90 -o va.cubin va90.ptx
save mixed-release-compile toolkit-incomplete "nvcc 13.0.88 with nvvm 13.5.37 (mixed wheels), -arch=sm_89" -- \
  "$MIXED/bin/nvcc" -arch=sm_89 -cubin -o va.cubin va.cu

save bf16-cvt-sm75 arch-feature-needs-higher-target "cvt.rn.bf16.f32 in inline PTX, nvcc 13.0 -arch=sm_75" -- \
  "$NVCC" -arch=sm_75 -cubin -o bf16.cubin bf16.cu
save cp-async-bulk-sm80 arch-feature-needs-higher-target "cp.async.bulk in inline PTX, nvcc 13.0 -arch=sm_80" -- \
  "$NVCC" -arch=sm_80 -cubin -o bulk.cubin bulk.cu
save wgmma-fence-sm90 arch-feature-needs-higher-target "wgmma.fence in inline PTX, nvcc 13.0 -arch=sm_90 instead of sm_90a" -- \
  "$NVCC" -arch=sm_90 -cubin -o wgmma.cubin wgmma.cu

# A host compiler that reports gcc 99: host_config.h's own #error fires.
mkdir -p gcc99
cat >gcc99/g++ <<'SH'
#!/bin/sh
printf '#undef __GNUC__\n#define __GNUC__ 99\n' > "${TMPDIR:-/tmp}/gcc99-force.h"
exec /usr/bin/g++ -include "${TMPDIR:-/tmp}/gcc99-force.h" "$@"
SH
chmod +x gcc99/g++
save host-gcc99 host-compiler-unsupported "nvcc 13.0 -ccbin pointing at a g++ wrapper that reports __GNUC__ 99" -- \
  env TMPDIR="$W" "$NVCC" -ccbin "$W/gcc99/g++" -arch=sm_90 -c -o host.o host.cu
save host-ccbin-missing host-compiler-not-found "nvcc 13.0 -ccbin /nonexistent/g++-15" -- \
  "$NVCC" -ccbin /nonexistent/g++-15 -arch=sm_90 -c -o host.o host.cu

# Missing headers: a copy of the toolkit's include dir without CCCL (nv/target) ...
mkdir -p nocccl/bin nocccl/include
for f in "$CU13"/bin/*; do ln -s "$f" nocccl/bin/; done
rm nocccl/bin/nvcc nocccl/bin/nvcc.profile
cp "$CU13/bin/nvcc" "$CU13/bin/nvcc.profile" nocccl/bin/
ln -s "$CU13/nvvm" nocccl/nvvm
ln -s "$CU13/lib" nocccl/lib
for f in "$CU13"/include/*; do
  case $(basename "$f") in cccl | nv) ;; *) ln -s "$f" nocccl/include/ ;; esac
done
save missing-nv-target toolkit-incomplete "nvcc 13.0 whose include/ lacks CCCL (nv/target), compiling a file that includes cuda_bf16.h" -- \
  "$W/nocccl/bin/nvcc" -arch=sm_90 -c -o bf16.o bf16.cu
# ... and nvcc without its profile (no -I for the toolkit headers at all).
save missing-cuda-runtime-h toolkit-incomplete "nvcc 13.0 --dont-use-profile: no toolkit include dir, so cuda_runtime.h is missing" -- \
  env PATH="$CU13/bin:$CU13/nvvm/bin:/usr/bin:/bin" "$NVCC" --dont-use-profile -arch=sm_90 -c -o host.o host.cu
# nvcc whose nvvm/bin (cicc) is not reachable: no profile, PATH without nvvm/bin.
save missing-cicc toolkit-incomplete "nvcc 13.0 --dont-use-profile with PATH lacking nvvm/bin: cicc cannot be run" -- \
  env PATH="$CU13/bin:/usr/bin:/bin" "$NVCC" --dont-use-profile -I"$CU13/include" -arch=sm_90 -cubin -o va.cubin va.cu
# ptxas 11.8 given PTX whose .target (sm_100) it predates (the .version lowered so that check passes).
"$NVCC" -arch=sm_100 -ptx -o va100.ptx va.cu
sed -i 's/^\.version .*/.version 7.8/' va100.ptx
save ptxas11-unknown-target ptxas-too-old "ptxas 11.8 fed PTX for .target sm_100 (from nvcc 13.0, .version lowered to 7.8)" -- \
  "$PTXAS11" -arch=sm_90 -o va.cubin va100.ptx
# A kernel calling a __device__ function defined in another file: without -rdc, and at device link.
cat >caller.cu <<'CU'
__device__ float helper(float x);
extern "C" __global__ void k(float *a) { a[0] = helper(a[0]); }
CU
save rdc-unresolved-extern device-function-unresolved "nvcc 13.0 -cubin of a kernel calling a __device__ function defined elsewhere, without -rdc" -- \
  "$NVCC" -arch=sm_90 -cubin -o caller.cubin caller.cu
"$NVCC" -arch=sm_90 -rdc=true -c -o caller.o caller.cu
save rdc-nvlink-undefined device-function-unresolved "nvcc 13.0 -dlink of an -rdc object whose device function is defined nowhere" -- \
  "$NVCC" -arch=sm_90 -dlink -o dlink.o caller.o
# A host-compiler flag given to nvcc directly.
save nvcc-unknown-option-wall nvcc-unknown-option "nvcc 13.0 -Wall (a host-compiler flag, not an nvcc option)" -- \
  "$NVCC" -arch=sm_90 -Wall -c -o va.o va.cu

# A kernel over ptxas's per-kernel limits: 4 bytes more static shared memory than 48 KB ...
cat >shared.cu <<'CU'
__global__ void too_much_shared(float *out) {
  __shared__ float tile[12289];
  tile[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = tile[(threadIdx.x + 1) % 12289];
}
CU
save kernel-too-much-shared-data kernel-exceeds-target-limit "nvcc 13.0 -arch=sm_90 on a kernel with 49,156 bytes of static shared memory (48 KB is the limit)" -- \
  "$NVCC" -arch=sm_90 -c -o shared.o shared.cu
# ... parameters above CUDA 12.1's 32,764 bytes (cicc's own wording) ...
cat >params.cu <<'CU'
struct Big { float v[8200]; };
__global__ void too_many_params(Big b, float *out) { out[threadIdx.x] = b.v[threadIdx.x]; }
CU
save kernel-formal-parameter-space kernel-exceeds-target-limit "nvcc 13.0 -arch=sm_90 on a kernel taking 32,808 bytes of parameters (the limit is 32,764)" -- \
  "$NVCC" -arch=sm_90 -c -o params.o params.cu
# ... and above the 4,352 bytes ptxas allowed before PTX ISA 8.1 (CUDA 12.1).
cat >params.ptx <<'PTX'
.version 7.0
.target sm_70
.address_size 64

.visible .entry too_many_params(
	.param .align 4 .b8 too_many_params_param_0[4400]
)
{
	ret;
}
PTX
save ptxas11-too-much-parameter-space kernel-exceeds-target-limit "ptxas 11.8 -arch=sm_70 on PTX ISA 7.0 whose kernel takes 4,400 bytes of parameters" -- \
  "$PTXAS11" -arch=sm_70 -o params.cubin params.ptx
save ptxas12-parameter-space-needs-ptx81 kernel-exceeds-target-limit "ptxas 12.9 -arch=sm_75 on the same PTX ISA 7.0: the larger limit needs PTX ISA 8.1" -- \
  "$PTXAS12" -arch=sm_75 -o params.cubin params.ptx
# CUDA 13's CCCL refuses C++14.
cat >thrust14.cu <<'CU'
#include <thrust/device_vector.h>
__global__ void k(float *o) { o[threadIdx.x] = 1.0f; }
CU
save cccl-requires-cpp17 cxx-standard-too-old "nvcc 13.0 -std=c++14 on a file including thrust/device_vector.h (CUDA 13's CCCL requires C++17)" -- \
  "$NVCC" -arch=sm_90 -std=c++14 -c -o thrust14.o thrust14.cu
# Relocatable device code linked by the host linker without nvcc's device link.
cat >rdc_main.cu <<'CU'
__global__ void k(float *o) { o[0] = 1; }
int main() { float *o; cudaMalloc(&o, 4); k<<<1,1>>>(o); return cudaDeviceSynchronize(); }
CU
"$NVCC" -arch=sm_90 -rdc=true -c -o rdc_main.o rdc_main.cu
save rdc-without-device-link device-function-unresolved "nvcc 13.0 -rdc=true -c, then g++ links the object with libcudart_static and no nvcc -dlink step" -- \
  g++ -o rdc_main rdc_main.o -L"$CU13/lib" -L"$CU13/lib64" -lcudart_static -ldl -lpthread -lrt
# CUDA code in a .cpp file: nvcc hands it to the host compiler as plain C++.
cat >kern_in_cpp.cpp <<'CPP'
__global__ void k(float *o) { o[threadIdx.x] = blockIdx.x; }
int main() { float *o = 0; k<<<1, 1>>>(o); return 0; }
CPP
save cuda-in-cpp-file cuda-compiled-as-cpp "nvcc 13.0 -c on a .cpp file holding a kernel, without -x cu" -- \
  "$NVCC" -arch=sm_90 -c -o kern_in_cpp.o kern_in_cpp.cpp
