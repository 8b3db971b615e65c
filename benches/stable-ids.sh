#!/usr/bin/env bash
# Build::stable_module_ids on a crate from crates.io: candle-flash-attn
# 0.11.1's port (benches/flash-attn/build.rs), built at two checkout paths
# with separate kernel caches, the setting on (BENCH_STABLE_MODULE_IDS=1) or
# off. Its instance files define only template specializations, so nvcc ends
# their module ids with cudafe++'s process id: off, two builds differ in
# those names; on, they must not. Compares the two static libraries with
# `cargo cuda inspect --compare`, and byte for byte: each object's device
# code (its .nv_fatbin section), each object, and the library. Prints a table.
#
#   CUDA_HOME=<toolkit> CARGO_CUDA_HOME=<store with nvidia-cutlass 3.5.0.0> \
#     benches/stable-ids.sh [KERNEL_STEM...]   # default: flash_api flash_fwd_hdim32_fp16_sm80
#
# Environment: SETTINGS (default "1 0": on, then off), BENCH_DIR (default
# target/stable-ids), CARGO_CUDA as for compare-ports.sh. Each build is one
# cold compile of the kept files (about 250 s per instance file on one core).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${BENCH_DIR:-$repo/target/stable-ids}
stems=("$@")
[ ${#stems[@]} -gt 0 ] || stems=(flash_api flash_fwd_hdim32_fp16_sm80)
if [ -z "${CARGO_CUDA:-}" ]; then
    (cd "$repo" && cargo build -q --release -p cuda-build-cli)
    export CARGO_CUDA="$repo/target/release/cargo-cuda"
fi
rm -rf "$root"
echo "| BENCH_STABLE_MODULE_IDS | inspect --compare of the two libraries | device code (.nv_fatbin) | objects | library |"
echo "|---|---|---|---|---|"
for setting in ${SETTINGS:-1 0}; do
    declare -A out=()
    for where in first second/checkout; do
        line=$(BENCH_STABLE_MODULE_IDS=$setting SIDES=ported BENCH_DIR="$root/$setting/$where" \
            "$repo/benches/compare-ports.sh" flash-attn "${stems[@]}" | grep '^ported ')
        out[$where]=${line##* }
    done
    a=${out[first]} b=${out[second/checkout]}
    "$CARGO_CUDA" cuda inspect --compare "$a" "$b" > "$root/$setting/compare.txt" && same=same || same=differs
    # The device code: each object's .nv_fatbin section (binutils only; the
    # wheels' toolkit has no cuobjdump), then the objects and the library.
    lib_a=$(find "$a" -name libflashattention.a | head -1) lib_b=$(find "$b" -name libflashattention.a | head -1)
    for side in a b; do
        dir="$root/$setting/objects-$side"
        mkdir -p "$dir"
        lib=lib_$side
        (cd "$dir" && ar x "${!lib}")
    done
    fatbins=identical objects=identical
    for o in $(cd "$root/$setting/objects-a" && ls); do
        for side in a b; do
            objcopy --dump-section .nv_fatbin="$root/$setting/$o.$side.fatbin" "$root/$setting/objects-$side/$o" /dev/null
        done
        cmp -s "$root/$setting/$o.a.fatbin" "$root/$setting/$o.b.fatbin" || fatbins="differ ($o)"
        cmp -s "$root/$setting/objects-a/$o" "$root/$setting/objects-b/$o" || objects="differ ($o)"
    done
    cmp -s "$lib_a" "$lib_b" && library=identical || library=differs
    echo "| $setting | $same | $fatbins | $objects | $library |"
done
for setting in ${SETTINGS:-1 0}; do echo; echo "BENCH_STABLE_MODULE_IDS=$setting:"; cat "$root/$setting/compare.txt"; done
