#!/usr/bin/env bash
# Benchmark (not a test): `cargo cuda toolkit install` against pip, one run each.
#
#   1. cold install of CUDA 13.0 from the index into a fresh store: wall time, bytes;
#   2. pip installing the same pinned wheels into a fresh directory (no pip cache);
#   3. a second install of the same version (no network);
#   4. discovery (`cargo cuda toolkit which`) with 1 and 4 installed toolkits.
#
# Usage: scripts/bench-install.sh [path/to/cargo-cuda]   (default: target/release, else target/debug)
# Needs network to the index (PIP_INDEX_URL / UV_INDEX_URL / HTTPS_PROXY are honoured).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-}
if [[ -z "$bin" ]]; then
  for b in "$here/target/release/cargo-cuda" "$here/target/debug/cargo-cuda"; do
    [[ -x "$b" ]] && bin=$b && break
  done
fi
[[ -x "$bin" ]] || { echo "bench-install.sh: build cargo-cuda first (cargo build -p cuda-build-cli)" >&2; exit 1; }
python=${PYTHON:-python3}
pins="nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

printf '%-44s %10s %12s\n' "step" "wall (s)" "downloaded"

t0=$(now)
CARGO_CUDA_HOME="$work/store" "$bin" toolkit install 13.0 >"$work/root" 2>"$work/log"
t1=$(now)
mb=$(grep -o '([0-9.]* MB downloaded' "$work/log" | tr -dc '0-9.')
printf '%-44s %10s %12s\n' "cargo cuda toolkit install 13.0 (cold)" "$(secs "$t0" "$t1")" "${mb} MB"

if "$python" -m pip --version >/dev/null 2>&1; then
  t0=$(now)
  # shellcheck disable=SC2086
  "$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-cache-dir --no-deps --no-compile \
    --only-binary=:all: --target "$work/pip" $pins
  t1=$(now)
  printf '%-44s %10s %12s\n' "pip install --target (same 5 pins)" "$(secs "$t0" "$t1")" "${mb} MB (same files)"
else
  printf '%-44s %10s\n' "pip install (no pip here)" "-"
fi

t0=$(now)
CARGO_CUDA_HOME="$work/store" "$bin" toolkit install 13.0 >/dev/null 2>&1
t1=$(now)
printf '%-44s %10s %12s\n' "second install of 13.0 (no network)" "$(secs "$t0" "$t1")" "0 MB"

root=$(cat "$work/root")
which_time() {
  local best=999
  for _ in 1 2 3 4 5; do
    t0=$(now)
    (cd "$work" && env -u CUDA_HOME -u CUDA_PATH -u NVCC CARGO_CUDA_HOME="$work/store" "$bin" toolkit which >/dev/null 2>&1)
    t1=$(now)
    best=$(awk -v a="$best" -v b="$(secs "$t0" "$t1")" 'BEGIN { print (b < a) ? b : a }')
  done
  echo "$best"
}
printf '%-44s %10s\n' "toolkit which, 1 installed (best of 5)" "$(which_time)"
# Three more toolkits: hard-linked copies under other names (discovery reads each).
for n in 1 2 3; do
  cp -al "$root" "$work/store/toolkits/13.0.88-copy$n"
done
printf '%-44s %10s\n' "toolkit which, 4 installed (best of 5)" "$(which_time)"
du -sh "$work/store/wheels" "$root" | awk '{ printf "%-44s %10s\n", "size of " $2, $1 }'
