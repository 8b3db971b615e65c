# Sourced first by run.sh and sccache.sh: the settings both read (see their
# headers) and the nvcc they need. Expects: repo, default_work.
work=${BENCH_DIR:-$default_work}
arch=${CUDA_ARCHS:-89}
jobs=${JOBS:-$(nproc)}
subset=${BENCH_SUBSET:-}
export CUDA_ARCHS="$arch" CUDA_COMPUTE_CAP="$arch" CUDAFORGE_THREADS="$jobs"
export CARGO_BUILD_JOBS="$jobs"
[ -n "${CUDA_HOME:-}" ] && export PATH="$CUDA_HOME/bin:$PATH"
command -v nvcc >/dev/null || { echo "$(basename "$0"): no nvcc; set CUDA_HOME" >&2; exit 1; }
