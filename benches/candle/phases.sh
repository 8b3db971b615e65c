#!/bin/sh
# Where a one-.cu edit's wall time goes, per variant: cargo to the build
# script, the script before nvcc, nvcc, the script after nvcc, rustc, cargo
# at the end. Each edit appends a kernel to affine.cu and runs `cargo build`
# under `strace -f --seccomp-bpf -e trace=execve,exit_group` (only process
# starts and exits are stopped for, so the timing barely moves).
#
#   benches/candle/phases.sh        # after run.sh, in its work dir; N=3 edits per variant
#
# Environment: as run.sh (BENCH_DIR, CUDA_HOME, CUDA_ARCHS), N (default 3).
# Needs strace and python3.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
default_work=$repo/target/bench-candle
. "$repo/benches/candle/env.sh"
export CUDA_BUILD_CACHE_DIR="$work/cuda-build-cache"
[ -d "$work/cuda-build/target" ] || { echo "phases.sh: run benches/candle/run.sh first (no $work/cuda-build/target)" >&2; exit 1; }
trace=$(mktemp)
trap 'rm -f "$trace"' EXIT
for i in $(seq 1 "${N:-3}"); do
    for v in cudaforge cuda-build; do
        printf '\nextern "C" __global__ void candle_bench_phase_%s_%s(int* o) { *o = 1; }\n' "$i" "$$" >> "$work/$v/src/affine.cu"
        (cd "$work/$v" && strace -f -ttt --seccomp-bpf -e trace=execve,exit_group -o "$trace" cargo build -q 2> "$work/$v.log") ||
            { cat "$work/$v.log" >&2; echo "phases.sh: the $v build failed" >&2; exit 1; }
        python3 - "$v" "$trace" <<'PY'
import re, sys
ev = []
for line in open(sys.argv[2]):
    pid, t, rest = line.split(None, 2)
    ev.append((int(pid), float(t), rest))
def start(pattern):
    return next((p, t) for p, t, r in ev if re.search(pattern, r))
def exit_of(pid):
    return next(t for p, t, r in ev if p == pid and r.startswith("exit_group"))
t0, end = ev[0][1], ev[-1][1]
bs, bs_t = start(r'execve\("[^"]*build-script-build')
nv, nv_t = start(r'execve\("[^"]*/nvcc".*affine')
rc, rc_t = start(r'execve\("[^"]*/rustc".*"candle_kernels"')
print(f"{sys.argv[1]:10} to-script {bs_t - t0:.3f}  pre-nvcc {nv_t - bs_t:.3f}  nvcc {exit_of(nv) - nv_t:.3f}"
      f"  post-nvcc {exit_of(bs) - exit_of(nv):.3f}  to-rustc {rc_t - exit_of(bs):.3f}"
      f"  rustc {exit_of(rc) - rc_t:.3f}  tail {end - exit_of(rc):.3f}  total {end - t0:.3f}")
PY
    done
done
