//! A static library built by cuda-build links into a Rust binary through a
//! real cargo: bundled into the rlib (the default), or left in OUT_DIR with
//! `Build::link_lib_modifier("-bundle")` and found at the final link through
//! the search path cargo propagates to dependents.

mod common;

use common::{shared_target, text, workspace_root};
use std::path::{Path, PathBuf};
use std::process::Command;

const CU: &str = r#"
__global__ void scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
// Host code in the same object as a kernel: its registration needs cudart.
extern "C" int kern_add(int a, int b) { return a + b; }
"#;

/// `kern` (a library whose build.rs makes `libkern.a`) and `app` (a binary
/// in another package that calls into it), in one workspace.
fn workspace(dir: &Path) {
    let write = |rel: &str, text: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "Cargo.toml",
        "[workspace]\nmembers = [\"kern\", \"app\"]\nresolver = \"2\"\n",
    );
    write(
        "kern/Cargo.toml",
        &format!(
            "[package]\nname = \"kern\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [build-dependencies]\ncuda-build = {{ path = {:?} }}\n",
            workspace_root().join("cuda-build")
        ),
    );
    write(
        "kern/src/lib.rs",
        "extern \"C\" {\n    fn kern_add(a: i32, b: i32) -> i32;\n}\n\n\
         pub fn add(a: i32, b: i32) -> i32 {\n    unsafe { kern_add(a, b) }\n}\n",
    );
    write("kern/cu/add.cu", CU);
    write(
        "app/Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [dependencies]\nkern = { path = \"../kern\" }\n",
    );
    write(
        "app/src/main.rs",
        "fn main() {\n    println!(\"sum={}\", kern::add(2, 40));\n}\n",
    );
    // The workspace's lock file: cuda-build's dependencies resolve offline.
    std::fs::copy(workspace_root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
}

/// Writes kern's build.rs with the given extra builder calls.
fn build_script(dir: &Path, extra: &str) {
    std::fs::write(
        dir.join("kern/build.rs"),
        format!(
            "use cuda_build::compile::{{Build, OutputKind}};\n\n\
             fn main() {{\n    Build::new()\n        .file(\"cu/add.cu\")\n        \
             .output(OutputKind::StaticLib)\n        .module_name(\"kern\")\n        \
             .generate_module(false){extra}\n        .compile();\n}}\n"
        ),
    )
    .unwrap();
}

/// cargo in the workspace, with the real nvcc and nothing from the host's
/// CUDA settings.
fn cargo_in(dir: &Path, root: &Path, cache: &Path) -> Command {
    let mut cmd = common::plain_cargo();
    cmd.current_dir(dir)
        .env("CUDA_HOME", root)
        .env("CUDA_ARCHS", "80")
        .env("CARGO_TARGET_DIR", shared_target())
        .env("CUDA_BUILD_CACHE_DIR", cache);
    cmd
}

/// Writes kern's build.rs with `extra`, runs `app` (`cargo run -vv`: the
/// build script's lines are shown), checks that it printed `sum=42` and
/// that the build script printed `link_line`; returns kern's rlib members.
fn run_app(dir: &Path, root: &Path, cache: &Path, extra: &str, link_line: &str) -> Vec<String> {
    build_script(dir, extra);
    let out = cargo_in(dir, root, cache)
        .args(["run", "--offline", "-p", "app", "-vv"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "cargo run failed:\n{stderr}");
    assert_eq!(stdout.lines().last(), Some("sum=42"), "{stdout}\n{stderr}");
    let all = format!("{stdout}\n{stderr}");
    assert!(all.contains(link_line), "{link_line}:\n{all}");
    members(&kern_rlib())
}

/// The newest `libkern-*.rlib` in the shared target dir.
fn kern_rlib() -> PathBuf {
    let deps = shared_target().join("debug/deps");
    std::fs::read_dir(&deps)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with("libkern-") && n.ends_with(".rlib")
        })
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .expect("kern's rlib")
}

/// The members of an archive (`ar t`).
fn members(archive: &Path) -> Vec<String> {
    let out = Command::new("ar").arg("t").arg(archive).output().unwrap();
    assert!(out.status.success(), "ar t {}", archive.display());
    text(&out).0.lines().map(str::to_string).collect()
}

#[test]
fn static_library_links_bundled_or_from_out_dir_with_minus_bundle() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ws");
    workspace(&dir);
    let cache = tmp.path().join("cache");

    // cc's default: the archive's objects are copied into kern's rlib.
    let bundled = run_app(&dir, &root, &cache, "", "cargo:rustc-link-lib=static=kern");
    assert!(bundled.iter().any(|m| m == "add.o"), "{bundled:?}");

    // -bundle: the rlib holds no object of the archive, and the binary still
    // links (the final link takes libkern.a from kern's OUT_DIR) and runs.
    let unbundled = run_app(
        &dir,
        &root,
        &cache,
        "\n        .link_lib_modifier(\"-bundle\")",
        "cargo:rustc-link-lib=static:-bundle=kern",
    );
    assert!(!unbundled.iter().any(|m| m == "add.o"), "{unbundled:?}");

    // A modifier rustc would reject, or that renames the file: refused
    // before anything compiles, naming the builder method.
    build_script(&dir, "\n        .link_lib_modifier(\"+verbatim\")");
    let out = cargo_in(&dir, &root, &cache)
        .args(["build", "--offline", "-p", "kern"])
        .output()
        .unwrap();
    let stderr = text(&out).1;
    assert!(!out.status.success());
    assert!(
        stderr.contains("error[invalid-link-modifier]")
            && stderr.contains("Build::link_lib_modifier(\"+verbatim\")"),
        "{stderr}"
    );
}
