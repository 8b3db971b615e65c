#!/bin/sh
# candle-kernels 0.11.1: cudaforge 0.1.6 (its own build.rs) against cuda-build
# (benches/candle/build.rs swapped in), same machine, same run. Prints a table.
#
#   benches/candle/run.sh                      # full: 11 PTX + 15-object library
#   BENCH_SUBSET="affine fill mmq_quantize" benches/candle/run.sh   # a few files, to develop
#
# Environment: CUDA_HOME (nvcc 12.x/13.x), CUDA_ARCHS (default 89),
# BENCH_DIR (default target/bench-candle), JOBS (default: all cores),
# EDITS (one-.cu edits per variant, alternating; default 7).
# Needs network once (cargo fetches candle-kernels and cudaforge from crates.io).
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
default_work=$repo/target/bench-candle
. "$repo/benches/candle/env.sh"

. "$repo/benches/candle/common.sh"

export CUDA_BUILD_CACHE_DIR="$work/cuda-build-cache"
now() { date +%s.%N; }
# time_build <variant>: seconds for one `cargo build` of the crate.
time_build() {
    t0=$(now)
    (cd "$work/$1" && cargo build -q 2> "$work/$1.log") || { cat "$work/$1.log" >&2; exit 1; }
    echo "$(now) - $t0" | bc
}
# script_rerun <variant>: seconds for the build script alone, run again by
# hand with cargo's variables (nothing to compile), median of 5.
script_rerun() {
    d="$work/$1"
    bin=$(ls -t "$d"/target/debug/build/candle-kernels-*/build-script-build | head -1)
    out=$(ls -td "$d"/target/debug/build/candle-kernels-*/out | head -1)
    for i in 1 2 3 4 5; do
        t0=$(now)
        (cd "$d" && OUT_DIR="$out" CARGO_MANIFEST_DIR="$d" TARGET=x86_64-unknown-linux-gnu \
            HOST=x86_64-unknown-linux-gnu PROFILE=debug OPT_LEVEL=0 DEBUG=true NUM_JOBS="$jobs" \
            CARGO_PKG_NAME=candle-kernels "$bin" > "$work/$1.rerun.out" 2>&1) || { cat "$work/$1.rerun.out" >&2; exit 1; }
        echo "$(now) - $t0" | bc
    done | sort -n | sed -n 3p
}
lines() { grep -c '^cargo:' "$work/$1.rerun.out" || true; }
distinct() { grep '^cargo:' "$work/$1.rerun.out" | sort -u | wc -l; }

header=cuda_utils.cuh
# The stale check: every PTX compiled from an includer of the edited header
# must be newer than it (cudaforge compares only the .cu's mtime).
stale_check() {
    out=$(ls -td "$work/$1"/target/debug/build/candle-kernels-*/out | head -1)
    n=0
    for f in "$work/$1"/src/*.cu; do
        grep -q "$header" "$f" || continue
        p="$out/$(basename "$f" .cu).ptx"
        [ -f "$p" ] && [ "$p" -nt "$work/$1/src/$header" ] || n=$((n + 1))
    done
    [ "$n" = 0 ] && echo correct || echo "STALE ($n PTX)"
}
one_cu=$(ls "$work/cuda-build/src"/*.cu | head -1)
one_cu=$(basename "$one_cu")

# Warm-up, not timed: the Rust dependencies (serde, regex, … for cuda-build;
# cudaforge's own) are compiled with no nvcc reachable, so both build
# scripts stop at once; the timed steps then measure the kernels.
cargo_dir=$(dirname "$(command -v cargo)")
for v in cudaforge cuda-build; do
    (cd "$work/$v" && env -u CUDA_HOME -u CUDA_PATH -u NVCC PATH="$cargo_dir:/usr/bin:/bin" \
        cargo build -q > /dev/null 2>&1) || true
done

for v in cudaforge cuda-build; do
    n=$(echo "$v" | tr - _)
    eval "cold_$n=\$(time_build $v)"
    # The limit: every file's own nvcc time (cuda-build records each job's
    # duration in its cache), summed, over the cores, from this very run.
    if [ "$v" = cuda-build ]; then
        nvcc_sum=$(find "$CUDA_BUILD_CACHE_DIR/v1/durations" -name '*.json' -exec cat {} + |
            grep -o '"secs":[0-9.e+-]*' | cut -d: -f2 | paste -sd+ | bc)
        files=$(find "$CUDA_BUILD_CACHE_DIR/v1/durations" -name '*.json' | wc -l)
    fi
    eval "noop_$n=\$(time_build $v)"
    eval "rerun_$n=\$(script_rerun $v)"
    eval "lines_$n=\"\$(lines $v)/\$(distinct $v)\""
    sleep 1
    printf '\n#define CANDLE_BENCH_EDIT 1\n' >> "$work/$v/src/$header"
    eval "hdr_$n=\$(time_build $v)"
    eval "stale_$n=\$(stale_check $v)"
    (cd "$work/$v" && cargo clean -q -p candle-kernels)
    eval "clean_$n=\$(time_build $v)"
done

# One-.cu edits: one kernel appended per edit, alternating between the
# variants so that both see the same machine load; the median of $edits each
# (a single edit swings by 0.3 s on a shared machine).
edits=${EDITS:-7}
for i in $(seq 1 "$edits"); do
    for v in cudaforge cuda-build; do
        printf '\nextern "C" __global__ void candle_bench_one_edit_%s(int* o) { *o = 1; }\n' "$i" >> "$work/$v/src/$one_cu"
        echo "$v $(time_build $v)"
    done
done > "$work/edits.txt"
median_of() { grep "^$1 " "$work/edits.txt" | cut -d' ' -f2 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
one_cudaforge=$(median_of cudaforge)
one_cuda_build=$(median_of cuda-build)

printf '\ncandle-kernels 0.11.1, sm_%s, %s jobs%s\n\n' "$arch" "$jobs" "${subset:+, subset: $subset}"
printf '| step | cudaforge 0.1.6 | cuda-build |\n|---|---|---|\n'
printf '| cold | %.2f s | %.2f s (%.3f× cudaforge) |\n' "$cold_cudaforge" "$cold_cuda_build" "$(echo "$cold_cuda_build / $cold_cudaforge" | bc -l)"
limit=$(echo "$nvcc_sum / $jobs" | bc -l)
printf '| cold / limit (sum of %s files'"'"' nvcc times %.1f s / %s cores = %.1f s) | %.3f | %.3f |\n' \
    "$files" "$nvcc_sum" "$jobs" "$limit" "$(echo "$cold_cudaforge / $limit" | bc -l)" "$(echo "$cold_cuda_build / $limit" | bc -l)"
printf '| no-op cargo build | %.2f s | %.2f s |\n' "$noop_cudaforge" "$noop_cuda_build"
printf '| build-script rerun, nothing to compile (dev profile) | %.3f s | %.3f s |\n' "$rerun_cudaforge" "$rerun_cuda_build"
printf '| cargo: lines printed / distinct | %s | %s |\n' "$lines_cudaforge" "$lines_cuda_build"
printf '| header edit (%s) | %.2f s, %s | %.2f s, %s |\n' "$header" "$hdr_cudaforge" "$stale_cudaforge" "$hdr_cuda_build" "$stale_cuda_build"
printf '| one-.cu edit (%s), median of %s alternating | %.2f s | %.2f s |\n' "$one_cu" "$edits" "$one_cudaforge" "$one_cuda_build"
printf '| after cargo clean | %.2f s | %.2f s |\n' "$clean_cudaforge" "$clean_cuda_build"
