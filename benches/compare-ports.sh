#!/usr/bin/env bash
# Builds a real crate from crates.io twice, as published (its own builder:
# cudaforge 0.1.6, or for flash-attn-v1 its own rayon-parallel nvcc calls)
# and ported (benches/<dir>/build.rs: docs/migrating.md, and
# Build::like_cudaforge() for the cudaforge crates), then compares the two OUT_DIRs with
# `cargo cuda inspect --compare` (kernels, SASS/PTX targets and bytes, host
# symbols) and byte for byte, and prints a table.
#
#   CUDA_HOME=<toolkit> benches/compare-ports.sh candle|paged-attn|flash-attn|flash-attn-v1 [KERNEL_STEM...]
#
# With stems, only those .cu files are kept (the rest deleted from both
# copies); without, the whole crate is built. Environment: ARCH (default 80:
# the arch both builds get, as CUDA_COMPUTE_CAP for cudaforge and --arch for
# `cargo cuda build`), BENCH_DIR (default target/compare-ports/<crate>),
# CARGO_CUDA (a cargo-cuda binary; default: build target/release/cargo-cuda),
# SIDES (default "published ported"; one of them builds only that side and
# prints its OUT_DIR), CARGO_CUDA_HOME (the store; flash-attn needs nvidia-cutlass 3.5.0.0 in it,
# which `cargo cuda deps fetch` puts there).
#
# flash-attn: cudaforge clones CUTLASS at the crate's commit (7d49e6c7…,
# the v3.5.0 tag) from GitHub. Without network to GitHub the script gives it
# the same headers: a checkout directory in a private CUDAFORGE_HOME made
# from the nvidia-cutlass 3.5.0.0 wheel (whose include/ and
# tools/util/include/ are that commit's, file for file), with a .git whose
# HEAD names the commit, which is what cudaforge checks before using a cache.
# flash-attn-v1: candle-flash-attn-v1 0.0.1, FlashAttention-1 over the
# CUTLASS 3.9.0 it vendors (cutlass/ in the package): four sources, so the
# whole crate of a CUTLASS-heavy crate is compared.
# Needs network once (cargo fetches the crates from crates.io).
# cudaforge gets every core (CUDAFORGE_THREADS; its default is half of
# them); the cold times are side by side, but the machine's load is not
# controlled here: benches/pool/run.sh is the benchmark.
set -euo pipefail
export CUDAFORGE_THREADS=${CUDAFORGE_THREADS:-$(nproc)}
repo=$(cd "$(dirname "$0")/.." && pwd)
crate=${1:?usage: compare-ports.sh candle|paged-attn|flash-attn|flash-attn-v1 [KERNEL_STEM...]}
shift
keep=("$@")
arch=${ARCH:-80}
work=${BENCH_DIR:-$repo/target/compare-ports/$crate}
if [ -n "${CARGO_CUDA:-}" ]; then
    cargo_cuda=$CARGO_CUDA
else
    cargo_cuda="$repo/target/release/cargo-cuda"
    (cd "$repo" && cargo build -q --release -p cuda-build-cli)
fi

case $crate in
candle) pkg=candle-kernels version=0.11.1 ;;
paged-attn) pkg=mistralrs-paged-attn version=0.8.1 ;;
flash-attn) pkg=candle-flash-attn version=0.11.1 ;;
flash-attn-v1) pkg=candle-flash-attn-v1 version=0.0.1 ;;
*) echo "unknown crate $crate" >&2; exit 2 ;;
esac

rm -rf "$work"
mkdir -p "$work/fetch/src"
cat > "$work/fetch/Cargo.toml" <<TOML
[package]
name = "compare-ports-fetch"
version = "0.0.0"
edition = "2021"
publish = false
[dependencies]
$pkg = "=$version"
cudaforge = "=0.1.6"
anyhow = "1"
[workspace]
TOML
: > "$work/fetch/src/lib.rs"
(cd "$work/fetch" && cargo fetch -q)
reg=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$pkg-$version" | head -1)

# Two copies: `published` (cudaforge) and `ported` (cuda-build). Each gets a
# minimal Cargo.toml (the package's build dependencies only: the build script
# is what is compared, not the crate's Rust code) and an empty lib.rs.
for v in published ported; do
    cp -r "$reg" "$work/$v"
    chmod -R u+w "$work/$v"
    rm -f "$work/$v/Cargo.toml.orig" "$work/$v/Cargo.lock"
    : > "$work/$v/src/lib.rs"
    if [ "$v" = published ] && [ "$crate" = flash-attn-v1 ]; then
        # Its own build script's dependencies, as its Cargo.toml pins them.
        dep=$'num_cpus = "1.15.0"\nrayon = "1.7.0"'
    elif [ "$v" = published ]; then
        dep='cudaforge = "=0.1.6"'
    else
        dep="cuda-build = { path = \"$repo/cuda-build\" }"
    fi
    cat > "$work/$v/Cargo.toml" <<TOML
[package]
name = "$pkg"
version = "$version"
edition = "2021"
build = "build.rs"
publish = false

[lib]
path = "src/lib.rs"

[features]
cuda = []

[build-dependencies]
anyhow = "1"
$dep

[workspace]
TOML
done
cp "$repo/benches/$crate/build.rs" "$work/ported/build.rs"
if [ "$crate" = flash-attn ]; then
    printf '\n[package.metadata.cuda]\ncutlass = { commit = "7d49e6c7e2f8896c47f586706e67e1fb215529dc" }\n' >> "$work/ported/Cargo.toml"
    # The published list is a fixed-size array: make it a slice so kernels can go.
    sed -i 's/^const KERNEL_FILES: \[&str; [0-9]*\] = \[/const KERNEL_FILES: \&[\&str] = \&[/' "$work/published/build.rs"
fi
if [ "$crate" = paged-attn ]; then
    # The CUDA part of its build.rs runs under `feature = "cuda"`.
    features=(--features cuda)
else
    features=()
fi

if [ ${#keep[@]} -gt 0 ]; then
    for v in published ported; do
        find "$work/$v" -name '*.cu' | while read -r f; do
            stem=$(basename "$f" .cu)
            case " ${keep[*]} " in *" $stem "*) ;; *) rm "$f" ;; esac
        done
    done
    # The published build.rs lists files by path: drop the deleted ones.
    for f in $(grep -o '"[A-Za-z0-9_/]*\.cu"' "$work/published/build.rs" | tr -d '"' | sort -u); do
        [ -f "$work/published/$f" ] || sed -i "\|^ *\"$f\",|d" "$work/published/build.rs"
    done
fi

export CARGO_CUDA_HOME=${CARGO_CUDA_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/cargo-cuda}
if [ "$crate" = flash-attn ]; then
    (cd "$work/ported" && "$cargo_cuda" cuda deps fetch)
    wheel="$CARGO_CUDA_HOME/deps/nvidia-cutlass/3.5.0.0/cutlass_library/source"
    checkout="$work/cudaforge-home/git/checkouts/cutlass-7d49e6c7e2f8896c"
    mkdir -p "$checkout/tools/util"
    cp -r "$wheel/include" "$checkout/include"
    cp -r "$wheel/tools/util/include" "$checkout/tools/util/include"
    git -C "$checkout" init -q
    echo 7d49e6c7e2f8896c47f586706e67e1fb215529dc > "$checkout/.git/HEAD"
    export CUDAFORGE_HOME="$work/cudaforge-home"
fi

if [ "$crate" = flash-attn-v1 ]; then
    # Its script runs the `nvcc` on PATH and wants CUDA_PATH (or /usr/local/cuda).
    export CUDA_PATH="$CUDA_HOME" PATH="$CUDA_HOME/bin:$PATH"
fi

now() { date +%s.%N; }
declare -A took out_dir
for v in ${SIDES:-published ported}; do
    t0=$(now)
    (cd "$work/$v" && CARGO_TARGET_DIR="$work/target-$v" CUDA_BUILD_CACHE_DIR="$work/cache" \
        "$cargo_cuda" cuda build --arch "$arch" "${features[@]}" --message-format=json > "$work/$v.json" 2> "$work/$v.log") ||
        { tail -40 "$work/$v.log" >&2; exit 1; }
    took[$v]=$(printf "%.1f" "$(echo "$(now) - $t0" | bc)")
    out_dir[$v]=$(grep '"reason":"build-script-executed"' "$work/$v.json" | grep "$pkg" | sed 's/.*"out_dir":"\([^"]*\)".*/\1/' | tail -1)
done

# One side only (SIDES=ported): print where its outputs are, for another script.
if [ -z "${out_dir[published]:-}" ] || [ -z "${out_dir[ported]:-}" ]; then
    for v in "${!out_dir[@]}"; do echo "$v ${took[$v]} s ${out_dir[$v]}"; done
    exit 0
fi

echo
echo "$pkg $version, arch $arch, ${#keep[@]} kept file(s) (0: all), nvcc $("$CUDA_HOME/bin/nvcc" --version | sed -n 's/.*release \([0-9.]*\), V\([0-9.]*\).*/\2/p')"
echo
if [ "$crate" = flash-attn-v1 ]; then
    echo "| | published (its own nvcc calls) | ported (docs/migrating.md) |"
else
    echo "| | published (cudaforge 0.1.6) | ported (like_cudaforge) |"
fi
echo "|---|---|---|"
echo "| cold build (with the build script's Rust dependencies; CUDAFORGE_THREADS=$CUDAFORGE_THREADS) | ${took[published]} s | ${took[ported]} s |"
"$cargo_cuda" cuda inspect --compare "${out_dir[published]}" "${out_dir[ported]}" > "$work/compare.txt" && same=yes || same=no
echo "| inspect --compare | same: $same | |"
for f in $(cd "${out_dir[published]}" && ls *.ptx 2>/dev/null); do
    cmp -s "${out_dir[published]}/$f" "${out_dir[ported]}/$f" && r=identical || r=DIFFERENT
    echo "| $f | $r | |"
done
echo
cat "$work/compare.txt"
