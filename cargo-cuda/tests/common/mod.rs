//! Helpers for running the built `cargo-cuda` binary in a controlled environment.
#![allow(dead_code)]

pub mod candle;
pub mod fresh;
pub mod registry;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary under test, with every variable cuda-build reads removed
/// (except PATH and CARGO) and a private home, so neither the host's
/// settings nor the user's toolkit store, cache or config can leak in.
pub fn cargo_cuda() -> Command {
    let mut cmd = without_cuda_settings(Command::new(env!("CARGO_BIN_EXE_cargo-cuda")));
    cmd.env_remove("CARGO_TARGET_DIR");
    cmd
}

/// The cargo running these tests, with the same variables removed: a build
/// sees only the toolkit the test hands it (or a `.cargo/config.toml`).
pub fn plain_cargo() -> Command {
    without_cuda_settings(Command::new(real_cargo()))
}

/// `cmd` without any variable cuda-build reads (PATH and CARGO kept), in
/// the test process's private home ([`workspace_tests::use_private_home`]:
/// its own store, kernel cache and config; the user's cargo and rustup).
pub fn without_cuda_settings(mut cmd: Command) -> Command {
    for var in cuda_toolchain::env::Var::ALL {
        if !matches!(var.name(), "PATH" | "CARGO") {
            cmd.env_remove(var.name());
        }
    }
    workspace_tests::use_private_home(&mut cmd);
    cmd
}

/// One target directory for the tests that really build GPU crates
/// (examples/vector-add, the README's and the docs' crates): their shared
/// dependencies compile once. Not the workspace's own: the outer cargo holds
/// its build lock while tests run.
pub fn shared_target() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("cuda-crates")
}

/// The workspace root (the directory above cargo-cuda/).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The cargo running these tests (cargo sets CARGO for them), else `cargo`.
pub fn real_cargo() -> PathBuf {
    std::env::var_os("CARGO")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("cargo"))
}

/// stdout and stderr as text.
pub fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Parses stdout as JSON, with the whole output in the panic message if it is not.
pub fn json(out: &Output) -> serde_json::Value {
    let (stdout, stderr) = text(out);
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}\nstderr:\n{stderr}"))
}

/// Whether this machine has an NVIDIA driver loaded (then driver checks pass).
pub fn has_driver() -> bool {
    Path::new("/proc/driver/nvidia/version").exists()
}

/// A fake cargo: `cargo metadata` goes to the real cargo, anything else runs `body`.
pub fn fake_cargo(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("fake-cargo");
    let real = real_cargo();
    workspace_tests::write_script(
        &path,
        &format!(
            "if [ \"$1\" = metadata ]; then exec '{}' \"$@\"; fi\n{body}",
            real.display()
        ),
    );
    path
}

/// A minimal package with no CUDA dependency.
pub fn plain_package(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"plain\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    dir.join("Cargo.toml")
}

/// A package `name` in `dir/pkg` whose build script compiles `cu/k.cu` with
/// this checkout's cuda-build. The kernel holds `dir`'s name, so each new
/// `dir` compiles it (an unchanged source in a current OUT_DIR is rightly
/// never recompiled). Returns its manifest.
pub fn kernel_package(dir: &Path, name: &str) -> PathBuf {
    let pkg = dir.join("pkg");
    std::fs::create_dir_all(pkg.join("src")).unwrap();
    std::fs::create_dir_all(pkg.join("cu")).unwrap();
    std::fs::write(
        pkg.join("Cargo.toml"),
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [build-dependencies]\ncuda-build = {{ path = {:?} }}\n\n[workspace]\n",
            workspace_root().join("cuda-build")
        ),
    )
    .unwrap();
    std::fs::write(
        pkg.join("build.rs"),
        "fn main() { cuda_build::Build::new().file(\"cu/k.cu\").compile(); }\n",
    )
    .unwrap();
    std::fs::write(pkg.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        pkg.join("cu/k.cu"),
        format!(
            "// {}\nextern \"C\" __global__ void k(float* x) {{ x[threadIdx.x] = 1.0f; }}\n",
            dir.display()
        ),
    )
    .unwrap();
    pkg.join("Cargo.toml")
}
