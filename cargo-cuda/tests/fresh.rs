//! Builds stay fresh whichever command runs them: a second `cargo cuda
//! build` does nothing, and neither does switching between `cargo build` and
//! `cargo cuda build` (cudarc and the kernels included) in an environment
//! where every crate already finds the selected toolkit (here CUDA_HOME and
//! its nvcc on PATH, what `cargo cuda env --shell` exports; after `cargo
//! cuda env --write` no variable is needed: readme.rs). Real builds of
//! examples/vector-add with nvcc 13.0, in their own target directory (the
//! outer cargo holds the workspace's build lock while tests run).

mod common;

use common::fresh;
use common::{cargo_cuda, plain_cargo, workspace_root};
use std::path::Path;
use std::process::Command;

fn vector_add(mut cmd: Command, root: &Path, target: &Path) -> Command {
    cmd.arg("build")
        .arg("--manifest-path")
        .arg(workspace_root().join("examples/vector-add/Cargo.toml"))
        .env("CUDA_HOME", root)
        .env("PATH", path_with_nvcc(root))
        .env("CARGO_TARGET_DIR", target);
    cmd
}

/// PATH with the toolkit's bin first: cudarc's `nvcc --version` then names
/// the same release, so `cargo cuda build` has nothing to hand it.
fn path_with_nvcc(root: &Path) -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::iter::once(root.join("bin")).chain(std::env::split_paths(&path));
    std::env::join_paths(dirs).unwrap()
}

#[test]
fn vector_add_stays_fresh_whichever_command_builds_it() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let target = common::shared_target();
    let wrapped = || vector_add(cargo_cuda(), &root, &target);
    let plain = || vector_add(plain_cargo(), &root, &target);
    // The first build may compile anything.
    fresh::build(plain(), "cargo build");
    for (cmd, what) in [
        (wrapped(), "cargo cuda build after cargo build"),
        (wrapped(), "a second cargo cuda build"),
        (plain(), "cargo build after cargo cuda build"),
        (wrapped(), "cargo cuda build after cargo build, again"),
    ] {
        let dirty = fresh::build(cmd, what);
        assert!(
            dirty.is_empty(),
            "{what} rebuilt {dirty:#?}\ncargo says: {}",
            fresh::why_dirty(wrapped())
        );
    }
    // The build script's own record: build inputs only, no side channel.
    let outputs: Vec<String> = std::fs::read_dir(target.join("debug/build"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("vector-add-"))
        .filter_map(|e| std::fs::read_to_string(e.path().join("output")).ok())
        .collect();
    assert!(!outputs.is_empty(), "no build-script output of vector-add");
    for out in &outputs {
        assert!(
            out.contains("cargo:rerun-if-env-changed=CUDA_HOME"),
            "{out}"
        );
        assert!(
            out.contains("cargo:rerun-if-env-changed=CUDA_ARCHS"),
            "{out}"
        );
        for side in [
            "CARGO_CUDA_PROGRESS",
            "CARGO_CUDA_PROBE",
            "CARGO_CUDA_PLAN",
            "CARGO_TERM_COLOR",
            "NO_COLOR",
            "HOME",
            "CI",
        ] {
            assert!(
                !out.lines()
                    .any(|l| l == format!("cargo:rerun-if-env-changed={side}")),
                "{side} is not a build input:\n{out}"
            );
        }
    }
}
