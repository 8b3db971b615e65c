# Sourced by run.sh and sccache.sh: fetches candle-kernels 0.11.1 (and
# cudaforge 0.1.6) from crates.io and prepares, under $work, two copies of
# the crate: `cudaforge` (as published) and `cuda-build` (build.rs swapped
# for benches/candle/build.rs), cut down to $subset's files when set.
# Expects: repo, work, subset.
rm -rf "$work"
mkdir -p "$work/fetch/src"
cat > "$work/fetch/Cargo.toml" <<TOML
[package]
name = "candle-bench-fetch"
version = "0.0.0"
edition = "2021"
publish = false
[dependencies]
candle-kernels = "=0.11.1"
cudaforge = "=0.1.6"
[workspace]
TOML
: > "$work/fetch/src/lib.rs"
(cd "$work/fetch" && cargo fetch -q)
reg=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/candle-kernels-0.11.1 | head -1)

# Two copies: as published (cudaforge), and with cuda-build's build.rs.
for v in cudaforge cuda-build; do
    cp -r "$reg" "$work/$v"
    chmod -R u+w "$work/$v"
    rm -f "$work/$v/Cargo.toml.orig" "$work/$v/Cargo.lock"
    printf '\n[workspace]\n' >> "$work/$v/Cargo.toml"
done
sed -i 's/^version = "0.1.2"/version = "=0.1.6"/' "$work/cudaforge/Cargo.toml"
cp "$repo/benches/candle/build.rs" "$work/cuda-build/build.rs"
sed -i "s|^\[build-dependencies.cudaforge\]|[build-dependencies.cuda-build]|; s|^version = \"0.1.2\"|path = \"$repo/cuda-build\"|" "$work/cuda-build/Cargo.toml"

if [ -n "$subset" ]; then
    # Keep only the named .cu files (by stem); the library needs the crate's
    # full lib.rs, so the crate gets a stub that only includes ptx.rs.
    for v in cudaforge cuda-build; do
        find "$work/$v/src" -name '*.cu' | while read -r f; do
            stem=$(basename "$f" .cu)
            case " $subset " in *" $stem "*) ;; *) rm "$f" ;; esac
        done
        printf 'pub mod ptx { include!(concat!(env!("OUT_DIR"), "/ptx.rs")); }\n' > "$work/$v/src/lib.rs"
    done
    # cudaforge's build.rs lists the library's files: drop the deleted ones.
    for f in $(grep -o '"src/[^"]*\.cu"' "$work/cudaforge/build.rs" | tr -d '"'); do
        [ -f "$work/cudaforge/$f" ] || sed -i "\|\"$f\",|d" "$work/cudaforge/build.rs"
    done
fi

