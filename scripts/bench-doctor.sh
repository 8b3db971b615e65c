#!/bin/sh
# Times `cargo cuda doctor --no-workload` (a real nvcc compile included) N
# times and prints min / median / max, with the machine it ran on.
#
#   scripts/bench-doctor.sh [N]        (default 5; needs target/release/cargo-cuda
#                                       and CUDA_HOME or another toolkit setting)
set -eu
n=${1:-5}
bin=${CARGO_CUDA_BIN:-target/release/cargo-cuda}
[ -x "$bin" ] || { echo "error: $bin not found; run: cargo build --release -p cuda-build-cli" >&2; exit 1; }
times=""
i=0
while [ "$i" -lt "$n" ]; do
    start=$(date +%s.%N)
    "$bin" doctor --no-workload >/dev/null 2>&1 || true
    end=$(date +%s.%N)
    times="$times $(awk "BEGIN { print $end - $start }")"
    i=$((i + 1))
done
sorted=$(printf '%s\n' $times | sort -n)
min=$(printf '%s\n' "$sorted" | head -1)
max=$(printf '%s\n' "$sorted" | tail -1)
med=$(printf '%s\n' "$sorted" | sed -n "$(( (n + 1) / 2 ))p")
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
gpu=$( [ -e /proc/driver/nvidia/version ] && echo "NVIDIA driver loaded" || echo "no GPU driver")
printf '| machine | runs | min | median | max |\n|---|---|---|---|---|\n'
printf '| %s cores (%s), %s, load %s | %s | %.2f s | %.2f s | %.2f s |\n' \
    "$(nproc)" "$cpu" "$gpu" "$(cut -d' ' -f1 /proc/loadavg)" "$n" "$min" "$med" "$max"
