//! Shared helpers for the workspace tests: where the real CUDA compilers are,
//! and whether the test command promised them.
//!
//! `scripts/test.sh` installs the compilers and sets `CARGO_CUDA_TEST_REQUIRE_NVCC=1`.
//! Under it, a test that needs nvcc **fails** when nvcc is missing. Under a
//! plain `cargo test` (nothing promised) such a test prints one line saying
//! why it skipped and returns.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub mod imports;
pub mod redis;

/// Whether the test command promised the real compilers.
pub fn nvcc_promised() -> bool {
    std::env::var("CARGO_CUDA_TEST_REQUIRE_NVCC").as_deref() == Ok("1")
}

fn promised_path(var: &str, what: &str) -> Option<PathBuf> {
    match std::env::var_os(var).map(PathBuf::from) {
        Some(p) if p.exists() => Some(p),
        Some(p) if nvcc_promised() => panic!(
            "{var}={} does not exist, but the test command promised {what}; rerun scripts/test.sh",
            p.display()
        ),
        _ if nvcc_promised() => {
            panic!("{var} is not set, but the test command promised {what}; run scripts/test.sh")
        }
        _ => {
            eprintln!("skipped: {what} not available ({var} unset; run scripts/test.sh)");
            None
        }
    }
}

/// Root of the real CUDA 13.0 toolkit (wheel layout `.../nvidia/cu13`).
pub fn cu13_root() -> Option<PathBuf> {
    promised_path("CARGO_CUDA_TEST_CU13", "the CUDA 13.0 toolkit")
}

/// The site-packages-like folder that holds the CUDA 13.0 wheels (`nvidia/cu13` inside).
pub fn cu13_site() -> Option<PathBuf> {
    promised_path("CARGO_CUDA_TEST_CU13_SITE", "the CUDA 13.0 wheel site dir")
}

/// The real nvcc 13.0.
pub fn nvcc13() -> Option<PathBuf> {
    cu13_root().map(|r| r.join("bin/nvcc"))
}

/// Root of the mixed-release toolkit: nvcc 13.0.88 with nvvm 13.5.37.
pub fn mixed_root() -> Option<PathBuf> {
    promised_path(
        "CARGO_CUDA_TEST_MIXED",
        "the mixed-release (nvcc 13.0 + nvvm 13.5) toolkit",
    )
}

/// ptxas 12.9 (from nvidia-cuda-nvcc-cu12).
pub fn ptxas12() -> Option<PathBuf> {
    promised_path("CARGO_CUDA_TEST_PTXAS12", "ptxas 12.9")
}

/// ptxas 11.8 (from nvidia-cuda-nvcc-cu11).
pub fn ptxas11() -> Option<PathBuf> {
    promised_path("CARGO_CUDA_TEST_PTXAS11", "ptxas 11.8")
}

/// Whether a GPU test must run. GPU tests call this first; on CI it prints
/// one line saying why the test skipped and returns false. `scripts/gpu-check.sh`
/// sets `CARGO_CUDA_TEST_GPU=1`, and then a missing GPU is a failure.
pub fn gpu_required(test: &str) -> bool {
    if std::env::var("CARGO_CUDA_TEST_GPU").as_deref() == Ok("1") {
        true
    } else {
        eprintln!("skipped {test}: needs a GPU (runs under scripts/gpu-check.sh with CARGO_CUDA_TEST_GPU=1)");
        false
    }
}

/// Writes an executable shell script (for fake nvcc / nvidia-smi fixtures).
///
/// The fixture *is* a script; the code under test still runs it without a shell.
pub fn write_script(path: &std::path::Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The test command's `cargo cuda` store, with CUTLASS 4.2 fetched (`cargo cuda deps fetch --cutlass 4.2`).
pub fn store_with_cutlass() -> Option<PathBuf> {
    promised_path("CARGO_CUDA_TEST_STORE", "the store with CUTLASS 4.2")
}

/// Runs git (test setup), panicking with its output on failure.
pub fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Copies a directory tree (files and folders; what a package checkout has).
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// A home directory of this test process's own, empty at its first use, for
/// every child a test starts: a toolkit in the user's store, a kernel cache
/// in `~/.cache` or a `~/.config` must never change what a test sees.
///
/// It lives in the temp dir as `cargo-cuda-test-homes/<pid>`; the homes of
/// test processes that have ended are removed when the next one starts.
pub fn private_home() -> &'static Path {
    static HOME: OnceLock<PathBuf> = OnceLock::new();
    HOME.get_or_init(|| {
        let all = std::env::temp_dir().join("cargo-cuda-test-homes");
        if let Ok(entries) = std::fs::read_dir(&all) {
            for e in entries.flatten() {
                let owner = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok());
                if owner.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let home = all.join(std::process::id().to_string());
        let _ = std::fs::remove_dir_all(&home);
        std::fs::create_dir_all(&home).unwrap();
        home
    })
}

/// Gives `cmd` the [`private_home`]: `HOME` and the XDG data, cache and
/// config dirs point into it, and `CARGO_CUDA_HOME` and
/// `CUDA_BUILD_CACHE_DIR` are unset, so the toolkit store and the kernel
/// cache are the private home's (a test that wants its own sets them after
/// this). cargo's and rustup's homes stay the user's, so cargo still finds
/// its toolchain and the crates it has downloaded.
pub fn use_private_home(cmd: &mut Command) -> &mut Command {
    let real_home = std::env::var_os("HOME").map(PathBuf::from);
    let tool_home = |var: &str, dir: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .or_else(|| real_home.as_ref().map(|h| h.join(dir)))
            .filter(|p| p.exists())
    };
    let (cargo_home, rustup_home) = (
        tool_home("CARGO_HOME", ".cargo"),
        tool_home("RUSTUP_HOME", ".rustup"),
    );
    let home = private_home();
    cmd.env("HOME", home)
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env_remove("CARGO_CUDA_HOME")
        .env_remove("CUDA_BUILD_CACHE_DIR");
    if let Some(h) = cargo_home {
        cmd.env("CARGO_HOME", h);
    }
    if let Some(h) = rustup_home {
        cmd.env("RUSTUP_HOME", h);
    }
    cmd
}

/// The sample kernels of `tests/fixtures/compile/kernels` (real workloads:
/// they share headers under `include/`).
pub const FIXTURE_KERNELS: &[&str] = &[
    "vector_add.cu",
    "saxpy.cu",
    "reduction.cu",
    "sgemm.cu",
    "transpose.cu",
    "histogram.cu",
    "scan.cu",
    "softmax.cu",
    "layernorm.cu",
    "nbody.cu",
    "bitonic.cu",
    "stencil.cu",
    "conv2d.cu",
];

/// A package at `<dir>/pkg` holding `kernels` (names from
/// [`FIXTURE_KERNELS`]) under `cu/`, with the fixture's headers in
/// `cu/include`; returns its directory.
pub fn fixture_package(dir: &Path, kernels: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/compile/kernels");
    let pkg = dir.join("pkg");
    copy_dir(&src.join("include"), &pkg.join("cu/include"));
    std::fs::write(
        pkg.join("Cargo.toml"),
        "[package]\nname = \"fixture\"\nversion = \"0.1.0\"\n",
    )
    .unwrap();
    for k in kernels {
        std::fs::copy(src.join(k), pkg.join("cu").join(k)).unwrap();
    }
    pkg
}
