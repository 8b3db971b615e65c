#!/usr/bin/env bash
# GPU check: every GPU test, `cargo cuda doctor`, vector-add and the workload,
# in one call, with a short table printed last and a dated record.
#
# Two modes, because the GPU machine has no Rust toolchain:
#
#   scripts/gpu-check.sh --bundle
#       (where cargo exists) builds release binaries -- cargo-cuda,
#       cuda-workload, vector-add and every test binary of the workspace
#       (`cargo test --no-run`; GPU tests are compiled in and run only under
#       CARGO_CUDA_TEST_GPU=1) -- strips them and copies them, kernels
#       embedded, into target/gpu-bundle/ (kept under ~60 MiB).
#
#   scripts/gpu-check.sh [--no-build]
#       (on the GPU machine) runs the bundle: each test binary with
#       CARGO_CUDA_TEST_GPU=1, `cargo-cuda doctor`, vector-add, and
#       `cuda-workload` (table on stdout, JSON into $OUT when set). Appends a
#       dated entry (GPU, driver, toolkit, numbers) to GPU-RESULTS.md, or
#       writes it to $OUT/gpu-results-entry.md for the lead to copy when $OUT
#       is set. Where cargo exists it rebuilds the bundle first (unless
#       --no-build). Without a GPU it says so, shows the workload's driver
#       diagnosis, and exits 3.
#
# Environment: OUT (results folder), GPU_BUNDLE (bundle folder, default
# target/gpu-bundle), WORKLOAD_ARGS (extra cuda-workload arguments),
# CUDA_ARCHS (bundle: arch list, default `80;90`), CUDARC_CUDA_VERSION
# (bundle: the CUDA API cudarc binds, default 13000 = the H200 machines'
# driver 580).
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bundle=${GPU_BUNDLE:-$repo/target/gpu-bundle}
mode=run
build=auto
for arg in "$@"; do
  case $arg in
    --bundle) mode=bundle ;;
    --no-build) build=no ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument \`$arg\` (expected --bundle, --no-build or --help)" >&2; exit 2 ;;
  esac
done

say() { echo "gpu-check: $*" >&2; }

# ---------------------------------------------------------------- bundle mode
make_bundle() {
  command -v cargo >/dev/null || { say "cargo not found: --bundle needs a Rust toolchain"; return 2; }
  cd "$repo" || return 2
  # The kernels need nvcc: use the test command's toolkit when nothing else is set.
  local cache=${CARGO_CUDA_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cargo-cuda-test}
  if [[ -z ${NVCC:-} && -z ${CUDA_HOME:-} && -z ${CUDA_PATH:-} ]] && ! command -v nvcc >/dev/null; then
    if [[ -x $cache/cu13/nvidia/cu13/bin/nvcc ]]; then
      export CUDA_HOME=$cache/cu13/nvidia/cu13
      say "using nvcc from $CUDA_HOME (run scripts/test.sh once to install it)"
    fi
  fi
  export CUDA_ARCHS=${CUDA_ARCHS:-80;90}
  export CUDARC_CUDA_VERSION=${CUDARC_CUDA_VERSION:-13000}
  export CARGO_PROFILE_RELEASE_STRIP=symbols
  say "building release binaries (CUDA_ARCHS=$CUDA_ARCHS, CUDARC_CUDA_VERSION=$CUDARC_CUDA_VERSION)"
  cargo build --release -p cargo-cuda -p cuda-workload -p vector-add || return 1
  local list
  list=$(mktemp)
  cargo test --release --workspace --no-run --message-format=json >"$list" || { rm -f "$list"; return 1; }
  rm -rf "$bundle.tmp"
  mkdir -p "$bundle.tmp/bin" "$bundle.tmp/tests"
  local b
  for b in cargo-cuda cuda-workload vector-add; do
    cp "target/release/$b" "$bundle.tmp/bin/" || return 1
  done
  # Test executables: each compiler-artifact line with a test profile names
  # its package, target and executable. Copied as <package>.<target>.
  python3 - "$list" >"$bundle.tmp/tests.list" <<'PY' || return 1
import json, sys
seen = set()
for line in open(sys.argv[1]):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") != "compiler-artifact" or not m.get("executable") or not m["profile"]["test"]:
        continue
    pkg = m["package_id"].split("#")[-1]
    pkg = pkg.split("@")[0] if "@" in pkg else m["package_id"].split("#")[0].rstrip("/").split("/")[-1]
    name = f"{pkg}.{m['target']['name']}"
    if name not in seen:
        seen.add(name)
        print(name, m["executable"])
PY
  rm -f "$list"
  local name exe
  while read -r name exe; do
    [[ -x $exe ]] && cp "$exe" "$bundle.tmp/tests/$name"
  done <"$bundle.tmp/tests.list"
  strip "$bundle.tmp"/bin/* "$bundle.tmp"/tests/* 2>/dev/null || true
  {
    echo "build_root=$repo"
    echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "rev=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "cuda_archs=$CUDA_ARCHS"
    echo "cudarc_cuda_version=$CUDARC_CUDA_VERSION"
    echo "nvcc=$("${NVCC:-${CUDA_HOME:+$CUDA_HOME/bin/}nvcc}" --version 2>/dev/null | tail -n 1)"
  } >"$bundle.tmp/manifest"
  rm -rf "$bundle"
  mv "$bundle.tmp" "$bundle"
  local size
  size=$(du -sm "$bundle" | cut -f1)
  say "bundle ready: $bundle ($size MiB, $(ls "$bundle/tests" | wc -l) test binaries)"
  if ((size > 60)); then
    say "warning: the bundle is over 60 MiB; the device copy allows 64 MiB in all"
  fi
}

if [[ $mode == bundle ]]; then
  make_bundle
  exit $?
fi

# ------------------------------------------------------------------- run mode
if [[ $build == auto ]] && command -v cargo >/dev/null; then
  make_bundle || { say "building the bundle failed"; exit 1; }
fi
if [[ ! -x $bundle/bin/cuda-workload ]]; then
  say "no bundle at $bundle: run \`scripts/gpu-check.sh --bundle\` where cargo exists and carry target/gpu-bundle"
  exit 2
fi
manifest() { sed -n "s/^$1=//p" "$bundle/manifest" 2>/dev/null; }

logdir=${OUT:-$repo/target/gpu-check}
mkdir -p "$logdir/tests"
stamp=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# Is there a GPU? Ask nvidia-smi, then the device nodes, then the loader.
gpu_line=""
if command -v nvidia-smi >/dev/null; then
  gpu_line=$(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 1)
  [[ $gpu_line == *NVIDIA-SMI* || $gpu_line == *Failed* || $gpu_line == *failed* ]] && gpu_line=""
fi
if [[ -z $gpu_line ]]; then
  smi=$(command -v nvidia-smi >/dev/null && echo "nvidia-smi lists no GPU" || echo "nvidia-smi: not found")
  nodes=$(ls /dev/nvidia[0-9]* 2>/dev/null | tr '\n' ' ')
  lib=$( (ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1') && echo "libcuda.so.1: found" || echo "libcuda.so.1: not found")
  say "NO GPU on this machine ($smi; /dev/nvidia*: ${nodes:-none}; $lib); nothing was measured"
  say "the workload's own diagnosis:"
  "$bundle/bin/cuda-workload" --quick >/dev/null
  rc=$?
  say "cuda-workload --quick exited $rc (3 = no usable GPU)"
  exit 3
fi
say "GPU: $gpu_line"

# libcublas / libcudart for the comparisons: the loader path, else known homes.
for lib in libcublas.so libcudart.so; do
  if ! ldconfig -p 2>/dev/null | grep -q "$lib\.1[0-9]"; then
    found=$(ls -d /usr/local/cuda*/lib64 /usr/local/cuda*/targets/*/lib \
      /usr/lib/python3*/dist-packages/nvidia/*/lib /usr/local/lib/python3*/dist-packages/nvidia/*/lib \
      /opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib /opt/*/lib/python3*/site-packages/nvidia/*/lib 2>/dev/null |
      while read -r d; do ls "$d/$lib".1[0-9]* >/dev/null 2>&1 && echo "$d"; done | head -n 1)
    [[ -n $found ]] && export LD_LIBRARY_PATH="$found${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" && say "$lib from $found"
  fi
done

# Test binaries look for sources and binaries where they were built.
build_root=$(manifest build_root)
if [[ -n $build_root && $build_root != "$repo" && ! -e $build_root ]]; then
  mkdir -p "$(dirname "$build_root")" 2>/dev/null && ln -s "$repo" "$build_root" 2>/dev/null &&
    say "linked $build_root -> $repo (tests find their fixtures there)" ||
    say "warning: could not link $build_root; tests that read fixtures may fail"
fi
mkdir -p "$repo/target/release"
for b in "$bundle"/bin/*; do
  [[ -e $repo/target/release/$(basename "$b") ]] || ln -s "$b" "$repo/target/release/$(basename "$b")"
done

summary=()
export CARGO_CUDA_TEST_GPU=1
tests_failed=0
for t in "$bundle"/tests/*; do
  name=$(basename "$t")
  # Bounded, so one hung test cannot spend the machine's time.
  (cd "$repo" && timeout 180 "$t") >"$logdir/tests/$name.log" 2>&1
  rc=$?
  result=$(grep -E '^test result:' "$logdir/tests/$name.log" | tail -n 1 | sed 's/^test result: //')
  ((rc != 0)) && tests_failed=$((tests_failed + 1))
  summary+=("$(printf '%-40s %s' "test $name" "${result:-exit $rc}")")
done

run_logged() {
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout "$limit" "$@" >"$logdir/$name.log" 2>&1
  local rc=$?
  summary+=("$(printf '%-40s exit %s (%ss)' "$name" "$rc" "$((SECONDS - start))")")
  return $rc
}
run_logged "cargo-cuda doctor" 120 "$bundle/bin/cargo-cuda" doctor
run_logged vector-add 60 "$bundle/bin/vector-add"
run_logged "cuda-workload --force-arch-mismatch" 60 "$bundle/bin/cuda-workload" --force-arch-mismatch --quick \
  --json-out "$logdir/workload-mismatch.json"
# shellcheck disable=SC2086
run_logged cuda-workload 300 "$bundle/bin/cuda-workload" --json-out "$logdir/workload.json" ${WORKLOAD_ARGS:-}
workload_rc=$?

table=$(awk '/^measure /{p=1} p&&/^$/{p=0} p' "$logdir/cuda-workload.log")
driver=$(echo "$gpu_line" | cut -d, -f2 | xargs)
toolkit=$(grep -o '"kernels_toolkit": "[^"]*"' "$logdir/workload.json" 2>/dev/null | cut -d'"' -f4)
entry=$(
  echo "## $stamp: $(echo "$gpu_line" | cut -d, -f1)"
  echo
  echo "- GPU: $gpu_line"
  echo "- driver: $driver; kernels built by CUDA ${toolkit:-?} for $(manifest cuda_archs); cudarc API $(manifest cudarc_cuda_version)"
  echo "- bundle: rev $(manifest rev), built $(manifest built)"
  echo "- test binaries failing: $tests_failed; workload exit $workload_rc"
  echo
  echo '```'
  printf '%s\n' "${summary[@]}"
  echo
  echo "${table:-(no results table: see cuda-workload.log)}"
  echo '```'
  echo
)
if [[ -n ${OUT:-} ]]; then
  echo "$entry" >"$OUT/gpu-results-entry.md"
  say "results entry written to $OUT/gpu-results-entry.md (copy it into GPU-RESULTS.md)"
else
  echo "$entry" >>"$repo/GPU-RESULTS.md"
  say "results entry appended to GPU-RESULTS.md"
fi

echo
echo "=== gpu-check summary ($stamp, logs in $logdir)"
printf '%s\n' "${summary[@]}"
echo
echo "${table:-(no results table: see $logdir/cuda-workload.log)}"
((tests_failed == 0 && workload_rc == 0))
