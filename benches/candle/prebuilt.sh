#!/bin/sh
# Kernels shipped in the crate (docs/prebuilt.md): the candle-kernels 0.11.1
# port (benches/candle/build.rs) prebuilt with `cargo cuda prebuild`, then a
# fresh downstream crate's build of it, timed two ways from the same state
# (Rust dependencies already compiled, candle-kernels cleaned, empty kernel
# cache): with the shipped images and no nvcc, no CUDA_HOME and no toolkit
# anywhere, against compiling with nvcc (CUDA_BUILD_PREBUILT=never). Prints a
# table with the shipped size.
#
#   CUDA_HOME=… benches/candle/prebuilt.sh                    # full port, 80;86;89;90
#   BENCH_SUBSET="affine fill mmq_quantize" PREBUILT_ARCHS="80;90" benches/candle/prebuilt.sh
#
# Environment: CUDA_HOME (the nvcc to prebuild and to compile with),
# PREBUILT_ARCHS (default 80;86;89;90), COMPILE_ARCHS (the compile row's
# archs; default PREBUILT_ARCHS. One arch, e.g. 80, is the least a user who
# compiles for their own GPU would build), BENCH_SUBSET (kernel stems to keep),
# BENCH_DIR (default target/bench-prebuilt), JOBS (default: all cores),
# PREBUILD_CACHE (the prebuild's kernel cache; default under BENCH_DIR, which
# each run empties: point it elsewhere to rerun the timed rows without
# recompiling the prebuild).
# The full port compiles every kernel once per arch for the prebuild and once
# more for the compile row: about an hour of nvcc on 2 cores.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=${BENCH_DIR:-$repo/target/bench-prebuilt}
subset=${BENCH_SUBSET:-}
archs=${PREBUILT_ARCHS:-80;86;89;90}
compile_archs=${COMPILE_ARCHS:-$archs}
jobs=${JOBS:-$(nproc)}
export CARGO_BUILD_JOBS="$jobs"
[ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ] ||
    { echo "$(basename "$0"): set CUDA_HOME to a toolkit root (bin/nvcc)" >&2; exit 1; }
unset CUDA_ARCHS CUDA_COMPUTE_CAP CUDA_BUILD_PREBUILT

. "$repo/benches/candle/common.sh"
crate=$work/cuda-build
prebuild_cache=${PREBUILD_CACHE:-$work/prebuild-cache}
now() { date +%s.%N; }

(cd "$repo" && cargo build -q -p cuda-build-cli)
t0=$(now)
(cd "$crate" && CARGO_TARGET_DIR="$work/prebuild-target" CUDA_BUILD_CACHE_DIR="$prebuild_cache" \
    "$repo/target/debug/cargo-cuda" prebuild --arch "$archs" --profile dev > "$work/prebuild.log" 2>&1) ||
    { cat "$work/prebuild.log" >&2; exit 1; }
prebuild_s=$(echo "$(now) - $t0" | bc)
images_bytes=$(du -sb "$crate/cuda-prebuilt" | cut -f1)
records=$(($(wc -l < "$crate/cuda-prebuilt/manifest.jsonl") - 1))
# The .crate as cargo would pack it (a gzip'd tar of the package's files);
# `cargo package` itself needs cuda-build from a registry.
crate_bytes=$(tar -C "$work" --exclude=cuda-build/target -czf - cuda-build | wc -c)

# The downstream crate, depending on the prebuilt port.
mkdir -p "$work/consumer/src" "$work/empty-store" "$work/empty-root"
cat > "$work/consumer/Cargo.toml" <<TOML
[package]
name = "consumer"
version = "0.1.0"
edition = "2021"
[dependencies]
candle-kernels = { path = "$crate" }
[workspace]
TOML
# The whole crate keeps its ptx module private; the subset's stub does not.
echo 'pub use candle_kernels as kernels;' > "$work/consumer/src/lib.rs"

cargo_dir=$(dirname "$(command -v cargo)")
# no_nvcc CMD…: CMD with no toolkit to find anywhere.
no_nvcc() {
    env -u CUDA_HOME -u CUDA_PATH -u NVCC PATH="$cargo_dir:/usr/bin:/bin" \
        CARGO_CUDA_HOME="$work/empty-store" CARGO_CUDA_SYSROOT="$work/empty-root" "$@"
}
# Warm-up, not timed: the Rust dependencies.
(cd "$work/consumer" && no_nvcc cargo build -q > /dev/null 2>&1) || true
# time_downstream <name> <archs> ENV…: one downstream build of candle-kernels, cold.
time_downstream() {
    name=$1 row_archs=$2
    shift 2
    (cd "$work/consumer" && cargo clean -q -p candle-kernels)
    rm -rf "$work/cache-$name"
    t0=$(now)
    (cd "$work/consumer" && "$@" env CUDA_BUILD_CACHE_DIR="$work/cache-$name" CUDA_ARCHS="$row_archs" \
        cargo build -vv > "$work/$name.log" 2>&1) || { tail -40 "$work/$name.log" >&2; exit 1; }
    echo "$(now) - $t0" | bc
}
shipped_s=$(time_downstream shipped "$archs" no_nvcc)
grep -q 'prebuilt kernel image' "$work/shipped.log" ||
    { echo "the shipped build did not use the images" >&2; exit 1; }
compiled_s=$(time_downstream compiled "$compile_archs" env CUDA_BUILD_PREBUILT=never)

printf '\ncandle-kernels 0.11.1 port, arch set %s, %s jobs%s\n\n' "$archs" "$jobs" "${subset:+, subset: $subset}"
printf '| what | result |\n|---|---|\n'
printf '| cargo cuda prebuild (dev profile) | %.1f s, %s images |\n' "$prebuild_s" "$records"
printf '| shipped: cuda-prebuilt/ (zstd images + manifest) | %.2f MB |\n' "$(echo "$images_bytes / 1000000" | bc -l)"
printf '| shipped: the package, gzip tar (≈ .crate; crates.io limit 10 MB) | %.2f MB |\n' "$(echo "$crate_bytes / 1000000" | bc -l)"
printf '| downstream build of candle-kernels, shipped images (%s), no nvcc | %.2f s |\n' "$archs" "$shipped_s"
printf '| downstream build of candle-kernels, compiled with nvcc (%s) | %.2f s |\n' "$compile_archs" "$compiled_s"
