# Sourced by run.sh and benches/pool/run.sh: fetches mistralrs-paged-attn
# 0.8.1 (and cudaforge 0.1.6) from crates.io and prepares, under $work, two
# copies of the crate: `cudaforge` (as published, without candle) and
# `cuda-build` (build.rs swapped for this directory's). Expects: here, work, repo.
rm -rf "$work"
mkdir -p "$work/fetch/src"
cat > "$work/fetch/Cargo.toml" <<TOML
[package]
name = "paged-attn-bench-fetch"
version = "0.0.0"
edition = "2021"
publish = false
[dependencies]
mistralrs-paged-attn = "=0.8.1"
cudaforge = "=0.1.6"
[workspace]
TOML
: > "$work/fetch/src/lib.rs"
(cd "$work/fetch" && cargo fetch -q)
reg=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/mistralrs-paged-attn-0.8.1 | head -1)
for v in cudaforge cuda-build; do
    cp -r "$reg" "$work/$v"
    chmod -R u+w "$work/$v"
    rm -f "$work/$v/Cargo.toml.orig" "$work/$v/Cargo.lock"
    python3 "$here/prepare.py" "$work/$v/Cargo.toml" "$v" "$repo"
    cp "$here/lib.rs" "$work/$v/src/lib.rs"
done
cp "$here/build.rs" "$work/cuda-build/build.rs"
