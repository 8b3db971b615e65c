#!/bin/sh
# Benchmarks cuda-build's kernel compiles on tests/fixtures/compile/kernels
# (13 kernels) and prints a table: cold (1 and 2 jobs), no-op, header edit
# and after-clean times, each next to a plain serial loop of nvcc over the
# same files with the same -gencode flags.
#
#   scripts/bench-compile.sh                 # CUDA_HOME, else the test toolkit
#   scripts/bench-compile.sh 3               # three rounds, medians reported
#   CUDA_ARCHS="80;86;90" scripts/bench-compile.sh   # default 80;90
#   scripts/bench-compile.sh rerun           # build-script rerun overhead in the
#                                            # dev profile (500 tiny .cu, a 50 MB .cu;
#                                            # stand-in nvcc, no toolkit needed)
# candle-kernels against cudaforge: benches/candle/run.sh (see its README).
set -eu
cd "$(dirname "$0")/.."
if [ "${1:-}" = rerun ]; then
    exec cargo run -q -p cuda-build --example rerun_overhead
fi
if [ -z "${CUDA_HOME:-}" ]; then
    CUDA_HOME="${CARGO_CUDA_TEST_CU13:-$HOME/.cache/cargo-cuda-test/cu13/nvidia/cu13}"
    export CUDA_HOME
fi
if [ ! -x "$CUDA_HOME/bin/nvcc" ]; then
    echo "bench-compile: no nvcc at $CUDA_HOME/bin/nvcc; set CUDA_HOME or run scripts/test.sh once to install the test toolkit" >&2
    exit 1
fi
exec cargo bench -p cuda-build --bench compile -- "${1:-1}"
