#!/usr/bin/env bash
# Checks the published crates with the toolchain that `rust-version` names
# (the workspace's [workspace.package] rust-version), as a user on that
# toolchain resolves them: cargo's MSRV-aware resolver picks the newest
# dependency versions that support it.
#
# Usage: scripts/msrv.sh   (installs the toolchain with rustup if missing)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' "$here/Cargo.toml" | head -n 1)
[[ -n $msrv ]] || { echo "msrv.sh: no rust-version in $here/Cargo.toml" >&2; exit 1; }
rustup toolchain list | grep -q "^$msrv" || rustup toolchain install "$msrv" --profile minimal
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$here" archive HEAD | tar -x -C "$work"
cd "$work"
CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS=fallback cargo update --quiet
cargo "+$msrv" check --quiet --all-features \
  -p cuda-toolchain -p cuda-build -p cuda-install -p cuda-build-cli
echo "msrv.sh: the published crates build with Rust $msrv"
