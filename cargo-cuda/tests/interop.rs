//! One toolkit for every crate of a build, proven with the real crates: a
//! crate outside the workspace depends on NVIDIA's `cuda-bindings` and
//! `cuda-core` 0.5.0 and on cudarc 0.19 (all from crates.io), and builds its
//! own kernel with cuda-build. The toolkit is the test store's CUDA 13.0.88
//! (`cargo cuda toolkit install 13.0.88 --with curand`: cuda-bindings'
//! bindgen reads `cuda.h` and `curand.h`), found through the store alone: no
//! CUDA variable is set and no nvcc is on PATH.
//!
//! - Under `cargo cuda build`, and under plain `cargo build` after `cargo
//!   cuda env --write`, every build script uses that toolkit (read from what
//!   each one told cargo: cuda-bindings' `CUTILE_RESOLVED_CUDA_TOOLKIT_PATH`,
//!   the `cuda.h` cuda-core watches, cudarc's `cuda-13000` cfg, the
//!   generated module's `TOOLKIT_VERSION`), and a second build is fresh.
//! - With a decoy CUDA 13.3 at `/usr/local/cuda-13.3`, the first entry of
//!   NVIDIA's fixed list, plain cargo builds cuda-bindings against the decoy,
//!   the doctor flags it, and `cargo cuda build` still makes every crate
//!   agree. The decoy lives in a private mount namespace of each command
//!   (an overlay on /usr/local), so nothing else on the machine sees it.

mod common;

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{cargo_cuda, fresh, plain_cargo, text, workspace_root};

/// The crate: NVIDIA's crates, cudarc, and a kernel built by cuda-build.
fn write_crate(dir: &Path) {
    let cuda_build = workspace_root().join("cuda-build");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join("cu")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            r#"[package]
name = "interop-app"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
cuda-bindings = "=0.5.0"
cuda-core = "=0.5.0"
cudarc = {{ version = "0.19", default-features = false, features = ["std", "driver", "dynamic-loading", "cuda-version-from-build-system", "fallback-latest"] }}

[build-dependencies]
cuda-build = {{ path = "{}" }}

[workspace]
"#,
            cuda_build.display()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("build.rs"),
        "fn main() {\n    cuda_build::compile::Build::new().file(\"cu/scale.cu\").arch(\"80\").module_name(\"kernels\").compile();\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("cu/scale.cu"),
        "extern \"C\" __global__ void scale(float *x, float a, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) x[i] *= a;\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("src/lib.rs"),
        "pub mod kernels { include!(concat!(env!(\"OUT_DIR\"), \"/kernels.rs\")); }\npub use cuda_bindings;\npub use cuda_core;\npub use cudarc;\n",
    )
    .unwrap();
    // The workspace's lock: the same versions of the shared dependencies.
    std::fs::copy(workspace_root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
}

/// PATH without any directory that holds an nvcc: cudarc and CMake would
/// otherwise find one there, and no CUDA setting may come from the machine.
fn path_without_nvcc() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|d| !d.join("nvcc").exists())
        .collect();
    std::env::join_paths(kept)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// Both tests build into one target directory (shared dependencies compile
/// once), so they take turns.
static TARGET_DIR: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A command with no CUDA variable: the toolkit comes from the store alone.
fn clean(mut cmd: Command, store: &Path, krate: &Path) -> Command {
    cmd.current_dir(krate)
        .env("PATH", path_without_nvcc())
        .env("CARGO_CUDA_HOME", store)
        .env("CARGO_TARGET_DIR", common::shared_target().join("interop"));
    cmd
}

/// What each build script of a build said about its toolkit, from cargo's
/// `build-script-executed` messages (replayed for fresh build scripts too).
#[derive(Debug, Default)]
struct Seen {
    /// cuda-bindings' `CUTILE_RESOLVED_CUDA_TOOLKIT_PATH`.
    bindings_root: Option<String>,
    /// The `cuda.h` cuda-core watches (`rerun-if-changed`).
    core_cuda_h: Option<String>,
    /// cudarc's version cfg (`cuda-13000`).
    cudarc_cfg: Option<String>,
    /// The `TOOLKIT_VERSION` of the module cuda-build generated.
    kernels_toolkit: Option<String>,
    /// The root whose `include/cuda_runtime.h` nvcc read for the kernel
    /// (cuda-build's manifest records every header a kernel includes).
    kernels_root: Option<String>,
}

fn seen(stdout: &str) -> Seen {
    let mut s = Seen::default();
    for v in stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["reason"] == "build-script-executed")
    {
        let id = v["package_id"].as_str().unwrap_or_default();
        let out_dir = PathBuf::from(v["out_dir"].as_str().unwrap_or_default());
        if id.contains("cuda-bindings@") {
            s.bindings_root = v["env"].as_array().and_then(|e| {
                e.iter()
                    .find(|kv| kv[0] == "CUTILE_RESOLVED_CUDA_TOOLKIT_PATH")
                    .and_then(|kv| kv[1].as_str().map(str::to_string))
            });
        } else if id.contains("cuda-core@") {
            let output = std::fs::read_to_string(out_dir.parent().unwrap().join("output")).unwrap();
            s.core_cuda_h = output
                .lines()
                .find_map(|l| l.strip_prefix("cargo:rerun-if-changed="))
                .map(str::to_string);
        } else if id.contains("cudarc@") {
            s.cudarc_cfg = v["cfgs"].as_array().and_then(|c| {
                c.iter()
                    .filter_map(|c| c.as_str())
                    .find(|c| c.starts_with("feature=\"cuda-"))
                    .map(str::to_string)
            });
        } else if id.contains("interop-app") {
            let module = std::fs::read_to_string(out_dir.join("kernels.rs")).unwrap();
            s.kernels_toolkit = module
                .lines()
                .find_map(|l| l.strip_prefix("pub const TOOLKIT_VERSION: &str = "))
                .map(|v| v.trim_end_matches(';').trim_matches('"').to_string());
            let manifest =
                std::fs::read_to_string(out_dir.join("cuda-build/kernels/manifest.json")).unwrap();
            s.kernels_root = manifest
                .split('"')
                .find_map(|p| p.strip_suffix("/include/cuda_runtime.h"))
                .map(str::to_string);
        }
    }
    s
}

/// Builds with `--message-format=json`; panics with the output unless it
/// succeeds. Returns what the build scripts saw, the units that were not
/// fresh, and stderr.
fn build(mut cmd: Command, what: &str) -> (Seen, Vec<String>, String) {
    let out = cmd.arg("--message-format=json").output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{what} failed:\n{stderr}");
    let dirty = fresh::units(&stdout)
        .into_iter()
        .filter(|(_, fresh)| !fresh)
        .map(|(n, _)| n)
        .collect();
    (seen(&stdout), dirty, stderr)
}

/// Every build script saw the toolkit at `root` (CUDA 13.0.88).
fn assert_all_see(s: &Seen, root: &Path, what: &str) {
    let root = root.display().to_string();
    assert_eq!(
        s.bindings_root.as_deref(),
        Some(root.as_str()),
        "{what}: cuda-bindings resolved another toolkit: {s:#?}"
    );
    assert_eq!(
        s.core_cuda_h,
        Some(format!("{root}/include/cuda.h")),
        "{what}: cuda-core read another cuda.h: {s:#?}"
    );
    assert_eq!(
        s.cudarc_cfg.as_deref(),
        Some("feature=\"cuda-13000\""),
        "{what}: cudarc built for another CUDA: {s:#?}"
    );
    assert_eq!(
        s.kernels_toolkit.as_deref(),
        Some("13.0.88"),
        "{what}: cuda-build compiled with another toolkit: {s:#?}"
    );
    assert_eq!(
        s.kernels_root.as_deref(),
        Some(root.as_str()),
        "{what}: nvcc read another toolkit's headers: {s:#?}"
    );
}

/// The test store's CUDA 13.0.88 root and the store holding it, or `None`
/// (skipped) outside scripts/test.sh. cuda-bindings needs `curand.h` there.
fn store_toolkit() -> Option<(PathBuf, PathBuf)> {
    let root = workspace_tests::cu13_root()?;
    assert!(
        root.join("include/curand.h").is_file(),
        "{} has no include/curand.h, which NVIDIA's cuda-bindings binds: rerun scripts/test.sh (it installs 13.0.88 --with curand)",
        root.display()
    );
    let store = root.parent().and_then(Path::parent).unwrap().to_path_buf();
    Some((root, store))
}

#[test]
fn every_crate_sees_the_store_toolkit_under_cargo_cuda_and_plain_cargo() {
    let Some((root, store)) = store_toolkit() else {
        return;
    };
    let _turn = TARGET_DIR.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let krate = dir.path().join("interop-app");
    write_crate(&krate);
    let run = |wrapped: bool| {
        let mut cmd = clean(
            if wrapped { cargo_cuda() } else { plain_cargo() },
            &store,
            &krate,
        );
        cmd.arg("build");
        cmd
    };

    // `cargo cuda build`: NVIDIA's crates and cudarc would find nothing
    // (no variable, no nvcc on PATH, no /usr/local/cuda): it hands them the toolkit.
    let (s, _, stderr) = build(run(true), "cargo cuda build");
    assert_all_see(&s, &root, "cargo cuda build");
    assert!(
        stderr.contains("cuda-bindings 0.5.0 would see no usable toolkit")
            && stderr.contains(&format!("CUDA_TOOLKIT_PATH={}", root.display()))
            && stderr.contains("CUDARC_CUDA_VERSION=13000"),
        "the wrapper says what it hands to whom:\n{stderr}"
    );
    let (s, dirty, _) = build(run(true), "the second cargo cuda build");
    assert_all_see(&s, &root, "the second cargo cuda build");
    assert!(
        dirty.is_empty(),
        "the second cargo cuda build rebuilt {dirty:#?}"
    );

    // Plain cargo after `cargo cuda env --write`: the same toolkit for every crate.
    let out = clean(cargo_cuda(), &store, &krate)
        .args(["env", "--write"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let config = std::fs::read_to_string(krate.join(".cargo/config.toml")).unwrap();
    for (name, value) in [
        ("CUDA_HOME", root.display().to_string()),
        ("CUDA_TOOLKIT_PATH", root.display().to_string()),
        ("CUDACXX", root.join("bin/nvcc").display().to_string()),
        ("CUDARC_CUDA_VERSION", "13000".into()),
    ] {
        assert!(
            config.contains(&format!("{name} = \"{value}\"")),
            "{name} in:\n{config}"
        );
    }
    let (s, _, _) = build(run(false), "cargo build after env --write");
    assert_all_see(&s, &root, "cargo build after env --write");
    let (_, dirty, _) = build(run(false), "the second cargo build");
    assert!(
        dirty.is_empty(),
        "the second cargo build rebuilt {dirty:#?}"
    );
    // Every crate agrees now, so the wrapper hands nothing and rebuilds nothing.
    let (s, dirty, stderr) = build(run(true), "cargo cuda build after env --write");
    assert_all_see(&s, &root, "cargo cuda build after env --write");
    assert!(
        dirty.is_empty(),
        "switching back to cargo cuda build rebuilt {dirty:#?}\n{stderr}"
    );
    assert!(!stderr.contains("would see"), "{stderr}");
}

/// Runs `cmd` in a private mount namespace whose /usr/local is an overlay
/// with `upper` on top (the decoy): no other process sees it, and it goes
/// away with the command. `work` must be a fresh empty directory.
fn in_decoy_namespace(mut cmd: Command, upper: &Path, work: &Path) -> Command {
    let opts = CString::new(format!(
        "lowerdir=/usr/local,upperdir={},workdir={}",
        upper.display(),
        work.display()
    ))
    .unwrap();
    // SAFETY: only async-signal-safe system calls between fork and exec,
    // on strings made before the fork.
    unsafe {
        cmd.pre_exec(move || {
            if libc::unshare(libc::CLONE_NEWNS) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let none = std::ptr::null();
            if libc::mount(
                c"none".as_ptr(),
                c"/".as_ptr(),
                none,
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            if libc::mount(
                c"overlay".as_ptr(),
                c"/usr/local".as_ptr(),
                c"overlay".as_ptr(),
                0,
                opts.as_ptr().cast(),
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd
}

/// A decoy CUDA 13.3 under `upper/cuda-13.3`: the real 13.0 headers with
/// `CUDA_VERSION 13030` (what NVIDIA's crates read), and an nvcc that
/// answers with 13.0.88's real banner made 13.3.
fn write_decoy(upper: &Path, real: &Path) {
    let decoy = upper.join("cuda-13.3");
    std::fs::create_dir_all(decoy.join("include")).unwrap();
    let cuda_h = std::fs::read_to_string(real.join("include/cuda.h")).unwrap();
    assert!(cuda_h.contains("#define CUDA_VERSION 13000"));
    std::fs::write(
        decoy.join("include/cuda.h"),
        cuda_h.replace("#define CUDA_VERSION 13000", "#define CUDA_VERSION 13030"),
    )
    .unwrap();
    // Everything else is the real toolkit's, linked.
    for e in std::fs::read_dir(real.join("include")).unwrap().flatten() {
        if e.file_name() != "cuda.h" {
            std::os::unix::fs::symlink(e.path(), decoy.join("include").join(e.file_name()))
                .unwrap();
        }
    }
    let banner = std::fs::read_to_string(
        workspace_root().join("tests/fixtures/toolkit/nvcc-version-13.0.88.txt"),
    )
    .unwrap()
    .replace("release 13.0, V13.0.88", "release 13.3, V13.3.73")
    .replace("cuda_13.0.", "cuda_13.3.");
    workspace_tests::write_script(
        &decoy.join("bin/nvcc"),
        &format!("cat <<'EOF'\n{banner}EOF"),
    );
}

/// Whether this process may make mount namespaces (root, or CAP_SYS_ADMIN).
fn can_mount() -> bool {
    Command::new("unshare")
        .args(["--mount", "--", "true"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn a_decoy_where_nvidias_fixed_list_looks_first_is_flagged_and_overruled() {
    let Some((root, store)) = store_toolkit() else {
        return;
    };
    if !can_mount() {
        eprintln!("skipped: making a private mount namespace for the decoy /usr/local/cuda-13.3 needs root (CAP_SYS_ADMIN)");
        return;
    }
    assert!(
        !Path::new("/usr/local/cuda-13.3").exists(),
        "/usr/local/cuda-13.3 exists on this machine: the decoy would not be the only one there"
    );
    let _turn = TARGET_DIR.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let upper = dir.path().join("upper");
    write_decoy(&upper, &root);
    let krate = dir.path().join("interop-app");
    write_crate(&krate);
    let mut works = 0;
    let mut ns = |cmd: Command| {
        works += 1;
        let work = dir.path().join(format!("work{works}"));
        std::fs::create_dir_all(&work).unwrap();
        in_decoy_namespace(clean(cmd, &store, &krate), &upper, &work)
    };

    // The doctor names the crates that would build against the decoy.
    let mut doctor = ns(cargo_cuda());
    doctor.args(["doctor", "--json", "--no-workload"]);
    let report = common::json(&doctor.output().unwrap());
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "toolkit.consumers")
        .expect("toolkit.consumers");
    assert_eq!(check["status"], "warn", "{check:#}");
    let evidence = check["evidence"].to_string();
    for who in ["cuda-bindings 0.5.0", "cuda-core 0.5.0"] {
        assert!(
            evidence.contains(&format!("{who} (NVIDIA"))
                && evidence.contains("CUDA 13.3 at /usr/local/cuda-13.3"),
            "{evidence}"
        );
    }
    assert!(evidence.contains("[differs]"), "{evidence}");
    assert!(
        check["fix"]
            .as_str()
            .unwrap()
            .contains(&format!("CUDA_TOOLKIT_PATH={}", root.display())),
        "{check:#}"
    );

    // Without cargo cuda, NVIDIA's crates really take the decoy.
    let mut plain = ns(plain_cargo());
    plain.args(["build", "-p", "cuda-core"]);
    let (s, _, _) = build(plain, "plain cargo build with the decoy");
    assert_eq!(
        s.bindings_root.as_deref(),
        Some("/usr/local/cuda-13.3"),
        "the decoy is what NVIDIA's fixed list finds: {s:#?}"
    );

    // `cargo cuda build` overrules it for every crate.
    let mut wrapped = ns(cargo_cuda());
    wrapped.arg("build");
    let (s, _, stderr) = build(wrapped, "cargo cuda build with the decoy");
    assert_all_see(&s, &root, "cargo cuda build with the decoy");
    assert!(
        stderr.contains("would see CUDA 13.3 at /usr/local/cuda-13.3"),
        "{stderr}"
    );
    let mut again = ns(cargo_cuda());
    again.arg("build");
    let (_, dirty, _) = build(again, "the second cargo cuda build with the decoy");
    assert!(dirty.is_empty(), "the second build rebuilt {dirty:#?}");
}

/// `cargo cuda env --target`: a toolkit with the cross target's headers
/// (`targets/sbsa-linux`) gets CUDA_TOOLKIT_TARGET_DIR, the variable NVIDIA's
/// crates read for it; one without them gets a warning naming the fix.
#[test]
fn env_target_names_the_cross_header_tree_or_warns() {
    let Some((root, _)) = store_toolkit() else {
        return;
    };
    // A toolkit root of our own: bin/ hard-linked or copied (nvcc's path decides the root),
    // the rest linked to the store's; plus the cross target's header tree.
    std::fs::create_dir_all(common::shared_target()).unwrap();
    let dir = tempfile::Builder::new()
        .prefix("env-target")
        .tempdir_in(common::shared_target())
        .unwrap();
    let cross = dir.path().join("cuda");
    std::fs::create_dir_all(cross.join("bin")).unwrap();
    for e in std::fs::read_dir(root.join("bin")).unwrap() {
        let e = e.unwrap();
        let to = cross.join("bin").join(e.file_name());
        if e.path().is_dir() {
            std::os::unix::fs::symlink(e.path(), &to).unwrap();
        } else if std::fs::hard_link(e.path(), &to).is_err() {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
    for d in ["include", "lib", "lib64", "nvvm", "version.json"] {
        if root.join(d).exists() {
            std::os::unix::fs::symlink(root.join(d), cross.join(d)).unwrap();
        }
    }
    let env = |toolkit: &Path, triple: &str| {
        let out = common::without_cuda_settings(cargo_cuda())
            .args(["env", "--toolkit"])
            .arg(toolkit)
            .args(["--target", triple])
            .output()
            .unwrap();
        let (stdout, stderr) = common::text(&out);
        assert!(out.status.success(), "env --target {triple}:\n{stderr}");
        (stdout, stderr)
    };

    std::fs::create_dir_all(cross.join("targets/sbsa-linux/include")).unwrap();
    std::fs::write(cross.join("targets/sbsa-linux/include/cuda.h"), "").unwrap();
    let (stdout, stderr) = env(&cross, "aarch64-unknown-linux-gnu");
    assert!(
        stdout.contains("export CUDA_TOOLKIT_TARGET_DIR=sbsa-linux"),
        "the cross header tree is handed on:\n{stdout}\n{stderr}"
    );
    assert!(!stderr.contains("warning"), "{stderr}");

    let (stdout, stderr) = env(&root, "aarch64-unknown-linux-gnu");
    assert!(!stdout.contains("CUDA_TOOLKIT_TARGET_DIR"), "{stdout}");
    assert!(
        stderr.contains("warning: --target aarch64-unknown-linux-gnu")
            && stderr.contains("sbsa-linux"),
        "a toolkit without the target's headers is named, with the fix:\n{stderr}"
    );
}
