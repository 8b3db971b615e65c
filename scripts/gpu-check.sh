#!/usr/bin/env bash
# GPU check: every GPU test, `cargo cuda doctor`, vector-add and the workload,
# in one call, with a short table printed last and a dated record.
#
# Two modes, because the GPU machine has no Rust toolchain:
#
#   scripts/gpu-check.sh --bundle
#       (where cargo exists) builds release binaries -- cargo-cuda,
#       cuda-workload, vector-add, and every test binary of the workspace
#       that holds a GPU test -- strips them and copies them, kernels
#       embedded, into target/gpu-bundle/ (well under the device tool's
#       64 MiB carry limit), with a stand-in `cargo` (see below).
#
#   scripts/gpu-check.sh [--no-build]
#       (on the GPU machine) runs the bundle: the GPU tests of each test
#       binary with CARGO_CUDA_TEST_GPU=1, `cargo-cuda doctor`, vector-add,
#       `cuda-workload --force-arch-mismatch` and `cuda-workload` (the full
#       run). Where cargo exists it rebuilds the bundle first (unless
#       --no-build). Without a GPU it says so, shows the workload's driver
#       diagnosis, and exits 3.
#
# GPU tests are the tests whose name contains `gpu` (libtest's filter): each
# calls workspace_tests::gpu_required or checks CARGO_CUDA_TEST_GPU, and
# --bundle refuses a gpu_required("name") whose name lacks `gpu`.
#
# Results: with $OUT set (the device tool), at most 6 flat files there:
# tests.log, programs.log, workload.log, workload.json,
# workload-mismatch.json and gpu-results-entry.md (the dated entry to copy
# into GPU-RESULTS.md). Without $OUT, logs go to target/gpu-check/ and the
# entry is appended to GPU-RESULTS.md.
#
# On the GPU machine: CUDA_HOME defaults to /usr/local/cuda (its nvcc builds
# the doctor's and the tests' probe kernels; CARGO_CUDA_TEST_CU13 points the
# tests at it). Test binaries find their fixtures and the program binaries
# at the paths they were built under (the manifest's build_root); when the
# checkout lives elsewhere, build_root is linked to it. The stand-in `cargo`
# (bundle/shim/cargo, first on PATH when no cargo exists) answers only
# `cargo metadata` (saved at bundle time) and `cargo run -p|--bin <bundled
# program>`, so doctor's workload step runs the prebuilt cuda-workload and
# the launchers GPU test its prebuilt fixture program `good`; anything else
# fails with a message saying so.
#
# Environment: OUT (results folder), GPU_BUNDLE (bundle folder, default
# target/gpu-bundle), WORKLOAD_ARGS (extra cuda-workload arguments),
# CUDA_ARCHS (bundle: arch list, default `80;90`), CUDARC_CUDA_VERSION
# (bundle: the CUDA API cudarc binds, default 13000 = the H200 machines'
# driver 580), CUDA_HOME (run: the machine's toolkit).
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bundle=${GPU_BUNDLE:-$repo/target/gpu-bundle}
mode=run
build=auto
for arg in "$@"; do
  case $arg in
    --bundle) mode=bundle ;;
    --no-build) build=no ;;
    -h|--help) sed -n '2,/^set /p' "$0" | sed '$d'; exit 0 ;;
    *) echo "gpu-check: unknown argument \`$arg\` (expected --bundle, --no-build or --help)" >&2; exit 2 ;;
  esac
done

say() { echo "gpu-check: $*" >&2; }

# ---------------------------------------------------------------- bundle mode
make_bundle() {
  command -v cargo >/dev/null || { say "cargo not found: --bundle needs a Rust toolchain"; return 2; }
  cd "$repo" || return 2
  # Every gpu_required("name") must match the run mode's `gpu` filter.
  local unnamed
  unnamed=$(grep -rhoE --include='*.rs' 'gpu_required\("[^"]*"\)' cuda-toolchain cuda-build cargo-cuda kernels examples tests 2>/dev/null |
    grep -v 'gpu_required("[^"]*gpu[^"]*")' | grep -v 'gpu_required("name")')
  if [[ -n $unnamed ]]; then
    say "GPU tests whose names lack \`gpu\` would not run on the GPU machine: $unnamed"
    return 1
  fi
  # The kernels need nvcc: use the test command's toolkit when nothing else is set.
  local cache=${CARGO_CUDA_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cargo-cuda-test}
  if [[ -z ${NVCC:-} && -z ${CUDA_HOME:-} && -z ${CUDA_PATH:-} ]] && ! command -v nvcc >/dev/null; then
    # scripts/test.sh installs it with `cargo cuda toolkit install` into this store.
    if [[ -x $cache/store/toolkits/13.0.88/bin/nvcc ]]; then
      export CUDA_HOME=$cache/store/toolkits/13.0.88
      say "using nvcc from $CUDA_HOME (run scripts/test.sh once to install it)"
    fi
  fi
  export CUDA_ARCHS=${CUDA_ARCHS:-80;90}
  export CUDARC_CUDA_VERSION=${CUDARC_CUDA_VERSION:-13000}
  export CARGO_PROFILE_RELEASE_STRIP=symbols
  say "building release binaries (CUDA_ARCHS=$CUDA_ARCHS, CUDARC_CUDA_VERSION=$CUDARC_CUDA_VERSION)"
  local list
  list=$(mktemp)
  # Tests first: the program binaries the tests run (CARGO_BIN_EXE_*) are
  # then the ones copied below.
  cargo test --release --workspace --no-run --message-format=json >"$list" || { rm -f "$list"; return 1; }
  cargo build --release -p cuda-build-cli -p cuda-workload -p vector-add || { rm -f "$list"; return 1; }
  rm -rf "$bundle.tmp"
  mkdir -p "$bundle.tmp/bin" "$bundle.tmp/tests" "$bundle.tmp/shim"
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
  # Only the binaries that hold a GPU test travel (the rest cannot fit).
  local name exe kept=0
  while read -r name exe; do
    [[ -x $exe ]] || continue
    if "$exe" --list 2>/dev/null | grep -E ': test$' | grep -q gpu; then
      cp "$exe" "$bundle.tmp/tests/$name" && kept=$((kept + 1))
    fi
  done <"$bundle.tmp/tests.list"
  # The launchers GPU test builds and runs a fixture program (`good`) with
  # cargo: run it here once so cargo builds that program (its run then
  # fails for want of a GPU, as expected), and bundle it for the stand-in.
  local launchers good=target/tmp/launchers-target/release/good
  launchers=$(awk '$1 == "workspace-tests.launchers" {print $2}' "$bundle.tmp/tests.list")
  if [[ -n $launchers && -n ${CUDA_HOME:-} ]]; then
    rm -f "$good"
    CARGO_CUDA_TEST_GPU=1 CARGO_CUDA_TEST_CU13=$CUDA_HOME timeout 900 "$launchers" \
      typed_vector_add_runs_and_verifies_on_a_gpu --exact >/dev/null 2>&1
    if [[ -x $good ]]; then
      cp "$good" "$bundle.tmp/bin/good"
    else
      say "warning: the launchers test's fixture program was not built; that GPU test will fail there"
    fi
  fi
  strip "$bundle.tmp"/bin/* "$bundle.tmp"/tests/* 2>/dev/null || true
  # What doctor asks cargo on the GPU machine (paths as built: build_root).
  cargo metadata --no-deps --format-version 1 >"$bundle.tmp/cargo-metadata.json" || return 1
  cat >"$bundle.tmp/shim/cargo" <<'SH'
#!/bin/sh
# gpu-check's stand-in for cargo on a machine with no Rust toolchain: serves
# `cargo metadata` (saved when the bundle was built) and `cargo run` of a
# bundled program; refuses everything else, saying so.
bundle=$(cd "$(dirname "$0")/.." && pwd)
asked="$*"
case $1 in
  metadata) exec cat "$bundle/cargo-metadata.json" ;;
  run)
    shift
    pkg=
    while [ $# -gt 0 ]; do
      case $1 in
        --) shift; break ;;
        -p|--package|--bin) pkg=$2; shift 2 ;;
        --manifest-path|--target-dir|--profile) shift 2 ;;
        *) shift ;;
      esac
    done
    if [ -n "$pkg" ] && [ -x "$bundle/bin/$pkg" ]; then
      exec "$bundle/bin/$pkg" "$@"
    fi ;;
esac
echo "cargo (gpu-check stand-in, no Rust toolchain here): cannot do \`cargo $asked\`; only \`cargo metadata\` and \`cargo run -p <$(ls "$bundle/bin" | tr '\n' ' ')>\` from the prebuilt bundle" >&2
exit 101
SH
  chmod +x "$bundle.tmp/shim/cargo"
  {
    echo "build_root=$repo"
    echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "rev=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet HEAD 2>/dev/null || echo '+changes')"
    echo "cuda_archs=$CUDA_ARCHS"
    echo "cudarc_cuda_version=$CUDARC_CUDA_VERSION"
    echo "nvcc=$("${NVCC:-${CUDA_HOME:+$CUDA_HOME/bin/}nvcc}" --version 2>/dev/null | tail -n 1)"
  } >"$bundle.tmp/manifest"
  rm -rf "$bundle"
  mv "$bundle.tmp" "$bundle"
  local size
  size=$(du -sm "$bundle" | cut -f1)
  say "bundle ready: $bundle ($size MiB, $kept test binaries with GPU tests)"
  if ((size > 60)); then
    say "warning: the bundle is over 60 MiB; the device tool carries 64 MiB in all"
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
# A copy may have lost the executable bits.
chmod u+x "$bundle"/bin/* "$bundle"/tests/* "$bundle"/shim/* 2>/dev/null
if [[ ! -x $bundle/bin/cuda-workload ]]; then
  say "no bundle at $bundle: run \`scripts/gpu-check.sh --bundle\` where cargo exists and carry target/gpu-bundle"
  exit 2
fi
manifest() { sed -n "s/^$1=//p" "$bundle/manifest" 2>/dev/null; }

logdir=${OUT:-$repo/target/gpu-check}
mkdir -p "$logdir"
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
  say "NO GPU on this machine ($smi; /dev/nvidia*: ${nodes:-none}; $lib); nothing was measured, no results entry written"
  say "the workload's own diagnosis:"
  "$bundle/bin/cuda-workload" --quick >/dev/null
  rc=$?
  say "cuda-workload --quick exited $rc (3 = no usable GPU)"
  exit 3
fi
say "GPU: $gpu_line"

# The machine's toolkit: nvcc for doctor's and the tests' probe kernels.
if [[ -z ${CUDA_HOME:-} && -x /usr/local/cuda/bin/nvcc ]]; then
  export CUDA_HOME=/usr/local/cuda
elif [[ -z ${CUDA_HOME:-} ]] && command -v nvcc >/dev/null; then
  CUDA_HOME=$(cd "$(dirname "$(command -v nvcc)")/.." && pwd) && export CUDA_HOME
fi
if [[ -n ${CUDA_HOME:-} ]]; then
  export CARGO_CUDA_TEST_CU13=$CUDA_HOME
  say "toolkit: $CUDA_HOME ($("$CUDA_HOME/bin/nvcc" --version 2>/dev/null | tail -n 1))"
fi
# libcublas / libcudart for the comparisons: the loader path, else known homes.
for lib in libcublas.so libcudart.so; do
  if ! ldconfig -p 2>/dev/null | grep -q "$lib\.1[0-9]"; then
    found=$(ls -d ${CUDA_HOME:+$CUDA_HOME/lib64} /usr/local/cuda*/lib64 /usr/local/cuda*/targets/*/lib \
      /usr/lib/python3*/dist-packages/nvidia/*/lib /usr/local/lib/python3*/dist-packages/nvidia/*/lib \
      /opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib /opt/*/lib/python3*/site-packages/nvidia/*/lib 2>/dev/null |
      while read -r d; do ls "$d/$lib".1[0-9]* >/dev/null 2>&1 && echo "$d"; done | head -n 1)
    if [[ -n $found ]]; then
      export LD_LIBRARY_PATH="$found${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      say "$lib from $found"
    else
      say "$lib not found: the workload says which comparison it skipped"
    fi
  fi
done
# No cargo here: the stand-in serves doctor's workload step.
command -v cargo >/dev/null || export PATH="$bundle/shim:$PATH"

# Test binaries look for sources and binaries where they were built.
build_root=$(manifest build_root)
if [[ -n $build_root && $build_root != "$repo" && ! -e $build_root ]]; then
  if mkdir -p "$(dirname "$build_root")" 2>/dev/null && ln -s "$repo" "$build_root" 2>/dev/null; then
    say "linked $build_root -> $repo (tests find their fixtures there)"
  else
    say "warning: could not link $build_root; tests that read fixtures may fail"
  fi
fi
mkdir -p "$repo/target/release" "$repo/target/tmp"
for b in "$bundle"/bin/*; do
  # Only where nothing is (a machine with cargo keeps its own builds).
  [[ -e $repo/target/release/$(basename "$b") ]] || ln -s "$b" "$repo/target/release/$(basename "$b")"
done

cd "$repo" || exit 2
summary=()
export CARGO_CUDA_TEST_GPU=1
tests_failed=0
: >"$logdir/tests.log"
# Worst case 7 minutes in all: tests 120 s together, then doctor 60,
# vector-add 20, the mismatch 20, the workload 200 (a normal run: ~2 min).
tests_end=$((SECONDS + 120))
for t in "$bundle"/tests/*; do
  name=$(basename "$t")
  limit=$((tests_end - SECONDS))
  if ((limit < 5)); then
    tests_failed=$((tests_failed + 1))
    summary+=("$(printf '%-40s %s' "test $name" "NOT RUN: the tests' 120 s were spent")")
    continue
  fi
  # Only the GPU tests; one at a time (two workloads at once would skew
  # each other); bounded, so one hung test cannot spend the machine's time.
  start=$SECONDS
  log=$(timeout "$limit" "$t" gpu --test-threads 1 --nocapture 2>&1)
  rc=$?
  { echo "===== $name (exit $rc, $((SECONDS - start)) s)"; echo "$log"; } >>"$logdir/tests.log"
  result=$(echo "$log" | grep -E '^test result:' | tail -n 1 | sed 's/^test result: //; s/; finished in.*//')
  skipped=$(echo "$log" | grep -cE '(^|\.\.\. )skipped')
  ((rc != 0)) && tests_failed=$((tests_failed + 1))
  summary+=("$(printf '%-40s %s%s' "test $name" "${result:-exit $rc}" "$( ((skipped > 0)) && echo "; $skipped skipped inside (see tests.log)")")")
done

: >"$logdir/programs.log"
run_logged() {
  local name=$1 limit=$2 log=$3
  shift 3
  local start=$SECONDS
  echo "===== $name: $*" >>"$log"
  timeout "$limit" "$@" >>"$log" 2>&1
  local rc=$?
  summary+=("$(printf '%-40s exit %s (%ss)' "$name" "$rc" "$((SECONDS - start))")")
  return $rc
}
clocks() {
  { echo "===== nvidia-smi ($1)"; timeout 20 nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,pstate --format=csv 2>&1; } >>"$logdir/programs.log"
}
clocks "before"
run_logged "cargo-cuda doctor" 60 "$logdir/programs.log" "$bundle/bin/cargo-cuda" doctor
run_logged vector-add 20 "$logdir/programs.log" "$bundle/bin/vector-add"
run_logged "cuda-workload --force-arch-mismatch" 20 "$logdir/programs.log" "$bundle/bin/cuda-workload" \
  --force-arch-mismatch --quick --json-out "$logdir/workload-mismatch.json"
: >"$logdir/workload.log"
# shellcheck disable=SC2086
run_logged cuda-workload 200 "$logdir/workload.log" "$bundle/bin/cuda-workload" --json-out "$logdir/workload.json" ${WORKLOAD_ARGS:-}
workload_rc=$?
clocks "after"

table=$(awk '/^measure /{p=1} p&&/^$/{p=0} p' "$logdir/workload.log")
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
  echo "${table:-(no results table: see workload.log)}"
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
grep '^note: ' "$logdir/workload.log" 2>/dev/null
printf '%s\n' "${summary[@]}"
echo
echo "${table:-(no results table: see $logdir/workload.log)}"
((tests_failed == 0 && workload_rc == 0))
