#!/bin/sh
# Benchmarks a real CUTLASS device GEMM (cuda-install/tests/cutlass/gemm.cu,
# cutlass::gemm::device::Gemm, sm_80) compiled through cuda-build with CUTLASS
# from the store, and prints two tables: compile times (cold, cached, no-op,
# after a CUTLASS version change and back) and the bytes stored per version.
#
#   scripts/bench-cutlass.sh              # CUTLASS 4.2 against 3.8
#   scripts/bench-cutlass.sh 4.2 3.7      # other versions (nvidia-cutlass on PyPI)
#
# The store is target/bench-cutlass/store (CARGO_CUDA_HOME): both versions are
# fetched into it once with `cargo cuda deps fetch` (network then, not after).
# CUDA_HOME names the toolkit, else the test toolkit.
set -eu
cd "$(dirname "$0")/.."
new="${1:-4.2}"
old="${2:-3.8}"
if [ -z "${CUDA_HOME:-}" ]; then
    CUDA_HOME="${CARGO_CUDA_TEST_CU13:-$HOME/.cache/cargo-cuda-test/store/toolkits/13.0.88}"
    export CUDA_HOME
fi
if [ ! -x "$CUDA_HOME/bin/nvcc" ]; then
    echo "bench-cutlass: no nvcc at $CUDA_HOME/bin/nvcc; set CUDA_HOME or run scripts/test.sh once to install the test toolkit" >&2
    exit 1
fi
store="$PWD/target/bench-cutlass/store"
cargo build -q -p cuda-build-cli
for v in "$new" "$old"; do
    CARGO_CUDA_HOME="$store" target/debug/cargo-cuda cuda deps fetch --cutlass "$v" >/dev/null
done
exec cargo run -q -p cuda-install --example bench_cutlass -- "$store" "$new" "$old"
