//! The project as a Rust user gets it from crates.io: the packaged `.crate`
//! files in a local registry (common/registry.rs), no path dependency on this
//! checkout, no network. `cargo install cuda-build-cli` from there gives a
//! working `cargo cuda`; a fresh crate with `cuda-build = "0.1"` compiles a
//! kernel with the real nvcc under plain `cargo build` and under the installed
//! `cargo cuda build`, and builds as docs.rs builds it (no nvcc anywhere).

mod common;
#[path = "../../cuda-install/tests/common/mod.rs"]
mod index;

use common::registry::{registry, Registry};
use common::{fresh, plain_cargo, text};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const KERNEL: &str = "extern \"C\" __global__ void scale(float *x, float a, int n) {\n    \
    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) x[i] *= a;\n}\n";

/// `cargo install cuda-build-cli` from the local registry, once per run.
/// Returns the installed `cargo-cuda`.
fn installed_cli() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let reg = registry();
        let root = reg.root.join("install");
        let out = install(reg, &root, "cuda-build-cli", false);
        let (_, stderr) = text(&out);
        assert!(
            out.status.success(),
            "cargo install cuda-build-cli:\n{}",
            without_progress(&stderr)
        );
        root.join("bin/cargo-cuda")
    })
}

/// cargo's stderr less its progress lines (`Compiling …`), so the error
/// itself is what a failed assertion shows, not cut out of a long log.
fn without_progress(stderr: &str) -> String {
    const PROGRESS: &[&str] = &[
        "Compiling ",
        "Blocking ",
        "Locking ",
        "Adding ",
        "Downloaded ",
        "Installing ",
        "Updating ",
    ];
    stderr
        .lines()
        .filter(|l| !PROGRESS.iter().any(|p| l.trim_start().starts_with(p)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `cargo install NAME` as a user types it, resolved from the registry.
/// `cargo install` reads only `$CARGO_HOME`'s config, never the current
/// directory's, so the registry's is passed with `--config`. `--debug`: the
/// test needs a working binary, not a fast one.
///
/// One install at a time: cargo locks the target dir only while it builds,
/// and copies the binary out after, so a second install finishing its build
/// then could replace `target/debug/cargo-cuda` under the first one's copy.
/// The stand-in package builds in a target dir of its own: its binary has
/// our binary's name.
fn install(reg: &Registry, root: &Path, name: &str, force: bool) -> std::process::Output {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let target = if name == "cuda-build-cli" {
        shared_target(reg)
    } else {
        reg.root.join(format!("target-{name}"))
    };
    let mut cmd = plain_cargo();
    cmd.current_dir(&reg.root)
        .arg("--config")
        .arg(reg.root.join(".cargo/config.toml"))
        .args(["install", "--debug", "--root"])
        .arg(root)
        .arg(name)
        .env("CARGO_TARGET_DIR", target);
    if force {
        cmd.arg("--force");
    }
    cmd.output().unwrap()
}

/// One target dir for every build from the registry: the installed CLI and
/// the downstream crates share cuda-build's dependencies, compiled once.
fn shared_target(reg: &Registry) -> PathBuf {
    reg.root.join("target")
}

/// A crate that depends on cuda-build by version, as `cargo add --build` writes it.
fn downstream(reg: &Registry, name: &str) -> PathBuf {
    let dir = reg.work(name);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join("cu")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [build-dependencies]\ncuda-build = \"{}\"\n\n\
             [package.metadata.cuda]\nfallback-arch = \"80\"\n\n\
             # Its own workspace: the registry sits inside this checkout's target/.\n[workspace]\n",
            minor_requirement()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("build.rs"),
        "fn main() {\n    cuda_build::Build::new().dir(\"cu\").module_name(\"kernels\").compile();\n}\n",
    )
    .unwrap();
    std::fs::write(dir.join("cu/scale.cu"), KERNEL).unwrap();
    std::fs::write(
        dir.join("src/lib.rs"),
        "//! Kernels built by cuda-build.\n\n/// The generated module.\npub mod kernels {\n    \
         include!(concat!(env!(\"OUT_DIR\"), \"/kernels.rs\"));\n}\n\n\
         /// The kernel's entry names.\npub fn entries() -> &'static [&'static str] {\n    kernels::scale::ENTRIES\n}\n",
    )
    .unwrap();
    dir
}

/// `0.1` for version 0.1.x: what `cargo add` writes.
fn minor_requirement() -> String {
    let v: Vec<&str> = env!("CARGO_PKG_VERSION").split('.').collect();
    format!("{}.{}", v[0], v[1])
}

/// The `cuda-build` that a build resolved: from the registry, at its version.
fn resolved_cuda_build(dir: &Path) -> String {
    let lock = std::fs::read_to_string(dir.join("Cargo.lock")).unwrap();
    let at = lock
        .find("name = \"cuda-build\"")
        .unwrap_or_else(|| panic!("no cuda-build in Cargo.lock:\n{lock}"));
    lock[at..].lines().take(4).collect::<Vec<_>>().join("\n")
}

#[test]
fn the_cli_installs_from_its_package_and_its_doctor_and_build_work() {
    let Some(cuda) = workspace_tests::cu13_root() else {
        return;
    };
    let reg = registry();
    let bin = installed_cli();

    let out = Command::new(bin)
        .args(["cuda", "--version"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains(env!("CARGO_PKG_VERSION")) && stdout.contains("cuda-build-cli"),
        "`cargo cuda --version` names the package, so it is told apart from another `cargo-cuda`: {stdout}"
    );

    // The doctor of the installed binary: a real compile with the real nvcc.
    let empty_store = tempfile::tempdir().unwrap();
    let out = without_cuda(Command::new(bin))
        .args(["cuda", "doctor", "--json", "--no-workload"])
        .env("CUDA_HOME", &cuda)
        .env("CARGO_CUDA_HOME", empty_store.path())
        .output()
        .unwrap();
    let report = common::json(&out);
    let checks = report["checks"].as_array().unwrap();
    let compile = checks
        .iter()
        .find(|c| c["layer"] == "compile")
        .unwrap_or_else(|| panic!("no compile check: {report:#}"));
    assert_eq!(compile["status"], "pass", "{compile:#}");

    // `cargo cuda build` of a crate that pins cuda-build by version.
    let dir = downstream(reg, "wrapped");
    let out = without_cuda(Command::new(bin))
        .args(["cuda", "build"])
        .current_dir(&dir)
        .env("CUDA_HOME", &cuda)
        .env("CARGO_CUDA_HOME", empty_store.path())
        .env("CARGO", common::real_cargo())
        .env("CARGO_TARGET_DIR", shared_target(reg))
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "cargo cuda build:\n{stderr}");
    let resolved = resolved_cuda_build(&dir);
    assert!(
        resolved.contains(env!("CARGO_PKG_VERSION")) && !resolved.contains("path+"),
        "cuda-build came from the registry:\n{resolved}"
    );
}

#[test]
fn a_crate_with_cuda_build_by_version_builds_plainly_wrapped_and_as_docs_rs() {
    let Some(cuda) = workspace_tests::cu13_root() else {
        return;
    };
    let reg = registry();
    let dir = downstream(reg, "plain");
    let target = shared_target(reg);
    let empty_store = tempfile::tempdir().unwrap();
    let build = |wrapped: bool| {
        let mut cmd = if wrapped {
            let mut c = without_cuda(Command::new(installed_cli()));
            c.arg("cuda").env("CARGO", common::real_cargo());
            c
        } else {
            plain_cargo()
        };
        cmd.arg("build")
            .current_dir(&dir)
            .env("CUDA_HOME", &cuda)
            .env("CARGO_CUDA_HOME", empty_store.path())
            .env("CARGO_TARGET_DIR", &target);
        cmd
    };
    fresh::build(build(false), "plain cargo build");
    let out_dir = fresh::out_dir(build(false), "plain");
    let module = std::fs::read_to_string(out_dir.join("kernels.rs")).unwrap();
    assert!(module.contains("\"scale\""), "{module}");
    assert!(
        resolved_cuda_build(&dir).contains(env!("CARGO_PKG_VERSION")),
        "{}",
        resolved_cuda_build(&dir)
    );
    let dirty = fresh::build(build(true), "the installed cargo cuda build");
    assert!(
        dirty.is_empty(),
        "cargo cuda build after cargo build rebuilt {dirty:#?}"
    );

    // docs.rs: `cargo doc` with DOCS_RS set, no nvcc, no toolkit, no store.
    let out = plain_cargo()
        .arg("doc")
        .current_dir(&dir)
        .env("DOCS_RS", "1")
        .env("CARGO_CUDA_HOME", empty_store.path())
        .env("CARGO_TARGET_DIR", dir.join("target-docs"))
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "cargo doc as docs.rs:\n{stderr}");
    assert!(dir.join("target-docs/doc/plain/index.html").is_file());
}

/// Another project's `cargo-cuda` package (dimforge/khal's on crates.io)
/// installs a binary of the same name. As the README says: `cargo install`
/// refuses to replace it, names the other package and suggests `--force`;
/// with `--force` ours replaces it and `--version` tells which one is there.
#[test]
fn installing_over_another_packages_cargo_cuda_needs_force() {
    if workspace_tests::cu13_root().is_none() {
        return;
    }
    let reg = registry();
    // A stand-in: the real one builds the Rust-CUDA toolchain.
    reg.add_package(
        "cargo-cuda",
        "0.1.3",
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"cargo-cuda\"\nversion = \"0.1.3\"\nedition = \"2021\"\n",
            ),
            (
                "src/main.rs",
                "fn main() { println!(\"cargo-cuda 0.1.3\"); }\n",
            ),
        ],
    );
    let root = reg.root.join("install-over");
    let out = install(reg, &root, "cargo-cuda", false);
    assert!(out.status.success(), "{}", text(&out).1);

    let out = install(reg, &root, "cuda-build-cli", false);
    let (_, stderr) = text(&out);
    assert!(
        !out.status.success(),
        "installed over another package's binary:\n{stderr}"
    );
    assert!(
        stderr.contains("binary `cargo-cuda` already exists in destination")
            && stderr.contains("cargo-cuda v0.1.3")
            && stderr.contains("--force"),
        "{stderr}"
    );

    let out = install(reg, &root, "cuda-build-cli", true);
    assert!(out.status.success(), "{}", without_progress(&text(&out).1));
    let out = Command::new(root.join("bin/cargo-cuda"))
        .args(["cuda", "--version"])
        .output()
        .unwrap();
    assert!(text(&out).0.contains("cuda-build-cli"), "{}", text(&out).0);
}

/// A CLI that requires a cuda-build version the workspace does not have
/// cannot be packaged, and cargo says why in its own words.
#[test]
fn a_sibling_version_mismatch_stops_packaging_with_cargos_message() {
    let ws = common::workspace_root();
    let copy = tempfile::tempdir().unwrap();
    for entry in ["Cargo.toml", "Cargo.lock", "LICENSE-MIT", "LICENSE-APACHE"] {
        std::fs::copy(ws.join(entry), copy.path().join(entry)).unwrap();
    }
    for dir in [
        "cuda-toolchain",
        "cuda-build",
        "cuda-install",
        "cargo-cuda",
        "kernels",
        "examples",
        "tests",
    ] {
        workspace_tests::copy_dir(&ws.join(dir), &copy.path().join(dir));
    }
    let manifest = copy.path().join("cargo-cuda/Cargo.toml");
    let text_before = std::fs::read_to_string(&manifest).unwrap();
    let wanted = "cuda-build = { path = \"../cuda-build\", version = \"99.0\", features = [\"decompress\"] }";
    let edited = text_before.replace(
        "cuda-build = { workspace = true, features = [\"decompress\"] }",
        wanted,
    );
    assert_ne!(
        edited, text_before,
        "the CLI's cuda-build line moved: update this test"
    );
    std::fs::write(&manifest, edited).unwrap();
    let out = plain_cargo()
        .current_dir(copy.path())
        .args([
            "package",
            "--no-verify",
            "--allow-dirty",
            "--offline",
            "-p",
            "cuda-build-cli",
        ])
        .env("CARGO_TARGET_DIR", copy.path().join("target"))
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(
        !out.status.success(),
        "packaged with a mismatched sibling:\n{stderr}"
    );
    assert!(
        stderr.contains("cuda-build") && stderr.contains("99.0"),
        "cargo names the package and the requirement:\n{stderr}"
    );
}

/// The command as a user runs it: none of this machine's CUDA settings.
fn without_cuda(cmd: Command) -> Command {
    let mut cmd = common::without_cuda_settings(cmd);
    cmd.env_remove("CARGO_TARGET_DIR");
    cmd
}

/// A published crate that declares CUTLASS, used as a dependency by someone
/// who never heard of `cargo cuda`: a plain `cargo build` with an empty store
/// fetches CUTLASS 4.2 (the real wheel, served by a package index on
/// 127.0.0.1) through cuda-build's `fetch` feature, verified, into the store,
/// and compiles. Offline (`CARGO_NET_OFFLINE=true`) it stops with an error
/// that says so and names the command that fetches it.
#[test]
fn plain_cargo_builds_a_dependency_that_declares_cutlass() {
    let Some(cuda) = workspace_tests::cu13_root() else {
        return;
    };
    let Some(wheel) = workspace_tests::store_with_cutlass()
        .map(|s| s.join("wheels/nvidia_cutlass-4.2.0.0-py3-none-any.whl"))
    else {
        return;
    };
    let wheel = std::fs::read(&wheel).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (scripts/test.sh fetches CUTLASS 4.2 into the test store)",
            wheel.display()
        )
    });
    let server = index::Server::start();
    server.publish(&[("nvidia-cutlass", "4.2.0.0", wheel)]);

    let reg = registry();
    reg.add_package(
        "gemm-kernels",
        "0.1.0",
        &[
            (
                "Cargo.toml",
                &format!(
                    "[package]\nname = \"gemm-kernels\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
                     [build-dependencies]\ncuda-build = {{ version = \"{}\", features = [\"fetch\"] }}\n\n\
                     [package.metadata.cuda]\ncutlass = \"4.2\"\nfallback-arch = \"80\"\n",
                    minor_requirement()
                ),
            ),
            (
                "build.rs",
                "fn main() {\n    cuda_build::Build::new()\n        .dir(\"cu\")\n        \
                 .header_deps_from_metadata()\n        .module_name(\"kernels\")\n        .compile();\n}\n",
            ),
            (
                "cu/half_scale.cu",
                "#include <cutlass/numeric_types.h>\n\
                 extern \"C\" __global__ void half_scale(cutlass::half_t *x, int n) {\n    \
                 int i = blockIdx.x * blockDim.x + threadIdx.x;\n    \
                 if (i < n) x[i] = x[i] * cutlass::half_t(0.5f);\n}\n",
            ),
            (
                "src/lib.rs",
                "//! CUTLASS kernels.\n\n/// The generated module.\npub mod kernels {\n    \
                 include!(concat!(env!(\"OUT_DIR\"), \"/kernels.rs\"));\n}\n",
            ),
        ],
    );
    let app = reg.work("uses-gemm");
    std::fs::create_dir_all(app.join("src")).unwrap();
    std::fs::write(
        app.join("Cargo.toml"),
        "[package]\nname = \"uses-gemm\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [dependencies]\ngemm-kernels = \"0.1\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        app.join("src/main.rs"),
        "fn main() {\n    println!(\"{:?}\", gemm_kernels::kernels::half_scale::ENTRIES);\n}\n",
    )
    .unwrap();
    let build = |store: &Path, offline: bool| {
        let mut cmd = plain_cargo();
        cmd.arg("run")
            .current_dir(&app)
            .env("CUDA_HOME", &cuda)
            .env("CARGO_CUDA_HOME", store)
            .env("PIP_INDEX_URL", &server.url)
            .env("CARGO_TARGET_DIR", shared_target(reg));
        if offline {
            cmd.env("CARGO_NET_OFFLINE", "true");
        }
        cmd.output().unwrap()
    };

    let offline_store = tempfile::tempdir().unwrap();
    let out = build(offline_store.path(), true);
    let (_, stderr) = text(&out);
    assert!(
        !out.status.success(),
        "built offline without CUTLASS:\n{stderr}"
    );
    assert!(
        stderr.contains("error[header-dep-missing]")
            && stderr.contains("offline (CARGO_NET_OFFLINE)")
            && stderr.contains("cargo cuda deps fetch"),
        "{stderr}"
    );

    let store = tempfile::tempdir().unwrap();
    let out = build(store.path(), false);
    let (stdout, stderr) = text(&out);
    assert!(
        out.status.success(),
        "plain cargo downstream of a CUTLASS crate:\n{stderr}"
    );
    assert_eq!(stdout.trim(), "[\"half_scale\"]");
    assert!(
        store
            .path()
            .join("deps/nvidia-cutlass/4.2.0.0/cutlass_library/source/include/cutlass/numeric_types.h")
            .is_file(),
        "CUTLASS 4.2 is in the store"
    );
    // The store now has it: the next user of the store needs no network.
    server.clear();
    let out = build(store.path(), true);
    assert!(
        out.status.success(),
        "offline with CUTLASS in the store:\n{}",
        text(&out).1
    );
}
