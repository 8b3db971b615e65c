#!/usr/bin/env bash
# Measures `cargo cuda explain -` on generated logs of growing size (a
# build's ordinary output with one nvcc failure in the middle), read through
# a pipe, and prints a table: size, wall time, peak memory (max RSS, from
# /usr/bin/time), and whether the buried failure was found.
#
# Usage: scripts/bench-explain.sh [MiB ...]   (default: 200 1024)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cargo build --quiet --release --manifest-path "$here/Cargo.toml" -p cuda-build-cli
bin="$here/target/release/cargo-cuda"
[[ -x /usr/bin/time ]] || { echo "bench-explain.sh: needs /usr/bin/time (GNU time)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One 4 KiB block of ordinary output, repeated; the failure in the middle.
gen() {
  python3 - "$1" <<'PY'
import sys
mib = int(sys.argv[1])
block = "".join(f"   Compiling crate-{i} v0.{i}.0 (/home/ci/work/vendor/crate-{i}) ok\n" for i in range(64)).encode()
n = mib * 1024 * 1024 // len(block)
out = sys.stdout.buffer
for i in range(n):
    if i == n // 2:
        out.write(b"nvcc fatal   : Unsupported gpu architecture 'compute_35'\n")
    out.write(block)
PY
}

printf '| log | wall | max RSS | failure found |\n|---|---|---|---|\n'
for mib in "${@:-200 1024}"; do
  gen "$mib" | /usr/bin/time -f '%e %M' -o "$tmp/time" "$bin" cuda explain - --json --no-detect > "$tmp/out" || true
  read -r wall kib < <(tail -1 "$tmp/time")
  found=$(grep -c '"arch-dropped-by-nvcc"' "$tmp/out" || true)
  printf '| %s MiB | %s s | %s MiB | %s |\n' "$mib" "$wall" "$((kib / 1024))" "$([[ $found -gt 0 ]] && echo yes || echo NO)"
done
