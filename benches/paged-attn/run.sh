#!/bin/sh
# mistralrs-paged-attn 0.8.1, a second real crate (14 .cu files with
# flashinfer's headers, all into one static library): cudaforge 0.1.6 (its
# own build.rs) against cuda-build (benches/paged-attn/build.rs swapped in),
# same machine, same run. Prints a table.
#
#   CUDA_HOME=<toolkit> CUDA_ARCHS=89 benches/paged-attn/run.sh
#
# Environment: as benches/candle/run.sh (CUDA_HOME, CUDA_ARCHS, JOBS,
# BENCH_DIR, default target/bench-paged-attn; EDITS, default 3).
# Needs network once (cargo fetches the crate and cudaforge from crates.io).
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
here=$repo/benches/paged-attn
default_work=$repo/target/bench-paged-attn
. "$repo/benches/candle/env.sh"
export CUDA_BUILD_CACHE_DIR="$work/cuda-build-cache"

. "$here/common.sh"

now() { date +%s.%N; }
time_build() {
    t0=$(now)
    (cd "$1" && cargo build -q 2> "$work/last.log") || { cat "$work/last.log" >&2; exit 1; }
    echo "$(now) - $t0" | bc
}
# The library a variant built last (cudaforge: OUT_DIR; cuda-build: its own folder in OUT_DIR).
lib_of() { ls -t $(find "$1/target/debug/build" -name libmistralrspagedattention.a) | head -1; }

# The header edit: cuda_compat.h gets a variable every object that includes
# it must then define. Its includers, from nvcc's own dependency scan.
header=cuda_compat.h
marker=paged_bench_header_edit
includers=0
for f in "$work/cuda-build/src/cuda"/*.cu; do
    nvcc -M -std=c++17 -DENABLE_FP8 -I"$work/cuda-build/src/cuda" "$f" 2>/dev/null | grep -q "/$header" &&
        includers=$((includers + 1))
done
stale_check() {
    n=$(nm -A "$(lib_of "$1")" 2>/dev/null | grep -c "$marker" || true)
    [ "$n" = "$includers" ] && echo "correct ($n of $includers objects)" || echo "STALE ($n of $includers objects)"
}

# Warm-up, not timed: the Rust dependencies, with no nvcc reachable (the
# build script stops at once).
cargo_dir=$(dirname "$(command -v cargo)")
warm_up() {
    (cd "$1" && env -u CUDA_HOME -u CUDA_PATH -u NVCC PATH="$cargo_dir:/usr/bin:/bin" \
        cargo build -q > /dev/null 2>&1) || true
}
for v in cudaforge cuda-build; do
    warm_up "$work/$v"
done

for v in cudaforge cuda-build; do
    n=$(echo "$v" | tr - _)
    eval "cold_$n=\$(time_build $work/$v)"
    # The limit: each file's own nvcc time from this cold build (later steps
    # record new ones), summed, over the cores.
    if [ "$v" = cuda-build ]; then
        nvcc_sum=$(find "$CUDA_BUILD_CACHE_DIR/v1/durations" -name '*.json' -exec cat {} + |
            grep -o '"secs":[0-9.e+-]*' | cut -d: -f2 | paste -sd+ | bc)
        files=$(find "$CUDA_BUILD_CACHE_DIR/v1/durations" -name '*.json' | wc -l)
    fi
    eval "noop_$n=\$(time_build $work/$v)"
    sleep 1
    printf '\n__attribute__((used)) static int %s = 1;\n' "$marker" >> "$work/$v/src/cuda/$header"
    eval "hdr_$n=\$(time_build $work/$v)"
    eval "stale_$n=\"\$(stale_check $work/$v)\""
    (cd "$work/$v" && cargo clean -q -p mistralrs-paged-attn)
    eval "clean_$n=\$(time_build $work/$v)"
done
# Another checkout path, same cache: nothing compiles, and the library is
# byte for byte the one built at the first path.
mkdir -p "$work/elsewhere/deeper"
cp -r "$work/cuda-build" "$work/elsewhere/deeper/cuda-build"
rm -rf "$work/elsewhere/deeper/cuda-build/target"
warm_up "$work/elsewhere/deeper/cuda-build"
moved=$(time_build "$work/elsewhere/deeper/cuda-build")
if cmp -s "$(lib_of "$work/cuda-build")" "$(lib_of "$work/elsewhere/deeper/cuda-build")"; then
    same=identical
else
    same=DIFFERENT
fi

one_cu=copy_blocks_kernel.cu
edits=${EDITS:-3}
for i in $(seq 1 "$edits"); do
    for v in cudaforge cuda-build; do
        printf '\nextern "C" __global__ void paged_bench_one_edit_%s(int* o) { *o = 1; }\n' "$i" >> "$work/$v/src/cuda/$one_cu"
        echo "$v $(time_build "$work/$v")"
    done
done > "$work/edits.txt"
median_of() { grep "^$1 " "$work/edits.txt" | cut -d' ' -f2 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf '\nmistralrs-paged-attn 0.8.1, sm_%s, %s jobs\n\n' "$arch" "$jobs"
printf '| step | cudaforge 0.1.6 | cuda-build |\n|---|---|---|\n'
printf '| cold | %.2f s | %.2f s (%.3f× cudaforge) |\n' "$cold_cudaforge" "$cold_cuda_build" "$(echo "$cold_cuda_build / $cold_cudaforge" | bc -l)"
limit=$(echo "$nvcc_sum / $jobs" | bc -l)
printf '| cold / limit (sum of %s files'"'"' nvcc times %.1f s / %s cores = %.1f s) | %.3f | %.3f |\n' \
    "$files" "$nvcc_sum" "$jobs" "$limit" "$(echo "$cold_cudaforge / $limit" | bc -l)" "$(echo "$cold_cuda_build / $limit" | bc -l)"
printf '| no-op cargo build | %.2f s | %.2f s |\n' "$noop_cudaforge" "$noop_cuda_build"
printf '| header edit (%s) | %.2f s, %s | %.2f s, %s |\n' "$header" "$hdr_cudaforge" "$stale_cudaforge" "$hdr_cuda_build" "$stale_cuda_build"
printf '| one-.cu edit (%s), median of %s alternating | %.2f s | %.2f s |\n' "$one_cu" "$edits" "$(median_of cudaforge)" "$(median_of cuda-build)"
printf '| after cargo clean | %.2f s | %.2f s |\n' "$clean_cudaforge" "$clean_cuda_build"
printf '| another checkout path, same cache | – (no cache) | %.2f s, library %s |\n' "$moved" "$same"
