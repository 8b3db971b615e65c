//! A crate nobody here wrote: candle-kernels 0.11.1 from crates.io, cut to
//! three of its kernels to keep the test short (two PTX files and one
//! object of its static library), built by `cargo cuda build --arch 89`:
//!
//! - as published, its build.rs running cudaforge 0.1.6 with what `cargo
//!   cuda` hands every build script (CUDA_COMPUTE_CAP, nvcc on PATH);
//! - with its build.rs ported to cuda-build (benches/candle/build.rs).
//!
//! Both build, and build again with every unit fresh; the port's PTX is the
//! published build's byte for byte. The port, copied to another checkout
//! path and built by plain `cargo` with the toolkit `cargo cuda env --write`
//! records, runs no nvcc (every source comes from the cache) and gives the
//! same bytes again.

mod common;

use std::path::Path;
use std::process::Command;

use common::candle::{self, KEPT};
use common::{cargo_cuda, fresh, plain_cargo, text, workspace_root};

/// [`candle::trimmed_copy`] of the published crate at `to`, in its own
/// workspace, with cudaforge pinned to 0.1.6 (the crate asks for ^0.1.2).
fn prepare(published: &Path, to: &Path) {
    candle::trimmed_copy(published, to);
    let manifest = to.join("Cargo.toml");
    let toml = std::fs::read_to_string(&manifest).unwrap();
    let pin = "[build-dependencies.cudaforge]\nversion = \"0.1.2\"";
    assert!(
        toml.contains(pin),
        "candle-kernels' Cargo.toml changed:\n{toml}"
    );
    let toml = toml.replace(pin, "[build-dependencies.cudaforge]\nversion = \"=0.1.6\"");
    std::fs::write(&manifest, format!("{toml}\n[workspace]\n")).unwrap();
    // The published build.rs names each library file: drop the removed ones.
    let build_rs = to.join("build.rs");
    let kept: String = std::fs::read_to_string(&build_rs)
        .unwrap()
        .lines()
        .filter(|l| {
            let t = l.trim();
            !(t.starts_with("\"src/")
                && t.ends_with(".cu\",")
                && !KEPT.iter().any(|k| t.contains(k)))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&build_rs, kept).unwrap();
}

/// The published crate with benches/candle/build.rs instead of cudaforge's.
fn port(published_copy: &Path, to: &Path) {
    workspace_tests::copy_dir(published_copy, to);
    let _ = std::fs::remove_dir_all(to.join("target"));
    std::fs::copy(
        workspace_root().join("benches/candle/build.rs"),
        to.join("build.rs"),
    )
    .unwrap();
    let manifest = to.join("Cargo.toml");
    let toml = std::fs::read_to_string(&manifest).unwrap().replace(
        "[build-dependencies.cudaforge]\nversion = \"=0.1.6\"",
        &format!(
            "[build-dependencies.cuda-build]\npath = \"{}\"",
            workspace_root().join("cuda-build").display()
        ),
    );
    std::fs::write(&manifest, toml).unwrap();
}

/// The PTX files in candle-kernels' OUT_DIR, by name, as the build `cmd`
/// (already run, so fresh now) reports it.
fn ptx(cmd: Command) -> Vec<(String, Vec<u8>)> {
    let out_dir = fresh::out_dir(cmd, "candle-kernels");
    ["affine.ptx", "fill.ptx"]
        .iter()
        .map(|n| {
            let path = out_dir.join(n);
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (n.to_string(), bytes)
        })
        .collect()
}

/// Builds twice; the second build must find every unit fresh.
fn build_twice(build: impl Fn() -> Command, what: &str) {
    fresh::build(build(), what);
    let dirty = fresh::build(build(), &format!("{what}, again"));
    assert!(dirty.is_empty(), "{what}, again, rebuilt: {dirty:#?}");
}

fn wrapped_build(krate: &Path, target: &Path, root: &Path, cache: &Path) -> Command {
    let mut cmd = cargo_cuda();
    cmd.args(["build", "--arch", "89"])
        .current_dir(krate)
        .env("CUDA_HOME", root)
        .env("CUDA_BUILD_CACHE_DIR", cache)
        .env("CARGO_TARGET_DIR", target);
    cmd
}

#[test]
fn candle_kernels_from_crates_io_builds_both_ways_and_the_port_matches_byte_for_byte() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let published = candle::published(scratch.path(), "cudaforge = \"=0.1.6\"\n");
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("real-crate");
    let cache = scratch.path().join("kernel-cache");

    // As published: cudaforge, under `cargo cuda build`.
    let original = scratch.path().join("a/candle-kernels");
    prepare(&published, &original);
    build_twice(
        || wrapped_build(&original, &target, &root, &cache),
        "cargo cuda build of the published crate",
    );
    let published_ptx = ptx(wrapped_build(&original, &target, &root, &cache));

    // Ported to cuda-build.
    let ported = scratch.path().join("b/candle-kernels");
    port(&original, &ported);
    build_twice(
        || wrapped_build(&ported, &target, &root, &cache),
        "cargo cuda build of the port",
    );
    let ported_ptx = ptx(wrapped_build(&ported, &target, &root, &cache));
    for ((name, a), (_, b)) in published_ptx.iter().zip(&ported_ptx) {
        assert!(
            String::from_utf8_lossy(a).contains(".target sm_89"),
            "{name} is not for sm_89"
        );
        assert!(a == b, "{name}: the port's PTX differs from cudaforge's");
    }

    // The port at another path, built by plain cargo with the toolkit
    // recorded in its .cargo/config.toml: every source from the cache.
    let moved = scratch.path().join("c/d/candle-kernels");
    workspace_tests::copy_dir(&ported, &moved);
    let out = cargo_cuda()
        .args(["env", "--write", "--arch", "89"])
        .current_dir(&moved)
        .env("CUDA_HOME", &root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    let progress = scratch.path().join("progress.jsonl");
    let plain = || {
        let mut cmd = plain_cargo();
        cmd.arg("build")
            .current_dir(&moved)
            .env("CUDA_BUILD_CACHE_DIR", &cache)
            .env("CARGO_TARGET_DIR", &target)
            .env("CARGO_CUDA_PROGRESS", &progress);
        cmd
    };
    fresh::build(plain(), "plain cargo build at another path");
    let kinds = fresh::progress_events(&progress);
    assert_eq!(kinds.len(), KEPT.len(), "one event per source: {kinds:#?}");
    assert!(
        kinds.iter().all(|k| k.starts_with("cached ")),
        "nvcc ran at another checkout path: {kinds:#?}"
    );
    assert!(
        ptx(plain()) == ported_ptx,
        "the PTX depends on the checkout path"
    );
}
