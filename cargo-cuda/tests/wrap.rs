//! `cargo cuda build|run|test|check|bench`: validation before cargo, the
//! environment cargo gets, bad input, and a real build of examples/vector-add.

mod common;

use common::{cargo_cuda, fake_cargo, plain_package, text, workspace_root};
use std::path::Path;
use std::process::Output;

#[test]
fn unsupported_arch_fails_before_cargo_starts_and_names_the_cause() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("cargo-ran");
    let cargo = fake_cargo(dir.path(), &format!("touch '{}'", marker.display()));
    let out = wrap_vector_add(&["build", "--arch", "70"], &cargo, &root);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(!marker.exists(), "cargo must not start: {stderr}");
    assert!(stderr.contains("error[arch-dropped-by-nvcc]"), "{stderr}");
    assert!(stderr.contains("70"), "names the arch: {stderr}");
    assert!(stderr.contains("13.0"), "names the toolkit: {stderr}");
}

#[test]
fn cargo_gets_one_environment_and_every_argument() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("env.txt");
    let cargo = fake_cargo(
        dir.path(),
        &format!(
            "{{ printf 'ARGS='; printf '%s|' \"$@\"; echo; env; }} > '{}'\necho 'cargo stderr line' >&2\nexit 0",
            dump.display()
        ),
    );
    let manifest = workspace_root().join("examples/vector-add/Cargo.toml");
    let out = cargo_cuda()
        .args(["build", "--release", "--arch=80;90", "--manifest-path"])
        .arg(&manifest)
        .args(["--", "--arch", "x y"])
        .env("CARGO", &cargo)
        .env("CUDA_HOME", &root)
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("cargo stderr line"),
        "cargo's stderr is streamed: {stderr}"
    );
    let env = std::fs::read_to_string(&dump).unwrap();
    let get = |k: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("{k} missing:\n{env}"))
    };
    assert_eq!(
        get("ARGS"),
        format!(
            "build|--release|--manifest-path|{}|--|--arch|x y|",
            manifest.display()
        )
    );
    // Without --toolkit the toolkit variables are cargo's own (here the
    // CUDA_HOME the test set), plus what a crate of the graph would get
    // wrong without them: cudarc asks the nvcc on PATH (there is none) and
    // would fall back to its newest bindings, so it gets CUDARC_CUDA_VERSION.
    let root_s = root.to_str().unwrap();
    assert_eq!(get("CUDA_HOME"), root_s);
    for var in ["NVCC", "CUDA_PATH", "CUDA_TOOLKIT_PATH", "CUDACXX"] {
        assert!(
            !env.lines().any(|l| l.starts_with(&format!("{var}="))),
            "{var} is set only with --toolkit:\n{env}"
        );
    }
    assert_eq!(get("CUDARC_CUDA_VERSION"), "13000");
    assert!(
        stderr.contains("cudarc 0.19.10 would see CUDA 13.4 (via fallback-latest")
            && stderr.contains("this build hands it CUDARC_CUDA_VERSION=13000"),
        "{stderr}"
    );
    // --arch is CUDA_ARCHS as written (what `CUDA_ARCHS=… cargo build` gives).
    assert_eq!(get("CUDA_ARCHS"), "80;90");
    assert_eq!(get("CUDA_COMPUTE_CAP"), "90");
    assert!(get("CARGO_CUDA_PROGRESS").ends_with("progress.jsonl"));
    assert_eq!(get("CARGO_CUDA_PROBE"), env!("CARGO_BIN_EXE_cargo-cuda"));
    let plan: serde_json::Value = serde_json::from_str(get("CARGO_CUDA_PLAN")).unwrap();
    assert_eq!(plan["version"], 1);
    assert_eq!(plan["plan"]["source"], "cuda-archs", "{plan:#}");

    // --toolkit sets exactly what `cargo cuda env --shell --toolkit` exports.
    let out = cargo_cuda()
        .args(["build", "--toolkit"])
        .arg(&root)
        .arg("--manifest-path")
        .arg(&manifest)
        .env("CARGO", &cargo)
        .env("CUDA_ARCHS", "90")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    let env = std::fs::read_to_string(&dump).unwrap();
    let shell = cargo_cuda()
        .args(["env", "--shell", "--toolkit"])
        .arg(&root)
        .output()
        .unwrap();
    let (exports, _) = text(&shell);
    let exported: Vec<&str> = exports
        .lines()
        .filter_map(|l| l.strip_prefix("export "))
        .map(|l| l.split('=').next().unwrap())
        .collect();
    assert!(
        exported.contains(&"NVCC") && exported.contains(&"CUDARC_CUDA_VERSION"),
        "{exports}"
    );
    for var in &exported {
        assert!(
            env.lines().any(|l| l.starts_with(&format!("{var}="))),
            "{var} is exported by env --shell but not set by build --toolkit:\n{env}"
        );
    }
    let get = |k: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("{k} missing:\n{env}"))
    };
    assert_eq!(get("NVCC"), root.join("bin/nvcc").to_str().unwrap());
    assert!(
        get("PATH").starts_with(&format!("{root_s}/bin:")),
        "{}",
        get("PATH")
    );
    assert_eq!(get("CUDARC_CUDA_VERSION"), "13000");
}

#[test]
fn cargo_failure_is_explained_after_cargos_error() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cargo = fake_cargo(
        dir.path(),
        "echo 'error: failed to run custom build command for `k v0.1.0`' >&2\n\
         echo '--- stderr' >&2\n\
         echo \"ptxas fatal   : Unsupported .version 9.5; current version is '9.0'\" >&2\n\
         exit 101",
    );
    let out = wrap_vector_add(&["build", "--arch", "90"], &cargo, &root);
    let (_, stderr) = text(&out);
    assert_eq!(
        out.status.code(),
        Some(101),
        "cargo's exit code is kept: {stderr}"
    );
    let cargo_err = stderr
        .find("failed to run custom build command")
        .expect(&stderr);
    let diagnosis = stderr
        .find("ptxas-too-old")
        .or_else(|| stderr.find("toolkit-incomplete"))
        .expect(&stderr);
    assert!(
        diagnosis > cargo_err,
        "the explanation comes after cargo's error:\n{stderr}"
    );
}

/// libtest prints a failing test's panic on stdout: `cargo cuda test` passes
/// stdout through unchanged and still explains what it says.
#[test]
fn test_failure_printed_on_stdout_is_explained() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cargo = fake_cargo(
        dir.path(),
        r#"echo 'running 1 test'
echo "thread 'loads' panicked at src/lib.rs:9:5:"
echo 'called `Result::unwrap()` on an `Err` value: DriverError(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported toolchain.")'
echo 'test result: FAILED. 0 passed; 1 failed'
echo 'error: test failed, to rerun pass `--lib`' >&2
exit 101"#,
    );
    let out = wrap_vector_add(&["test", "--arch", "90"], &cargo, &root);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(101), "{stderr}");
    assert!(
        stdout.contains("running 1 test") && stdout.contains("test result: FAILED"),
        "the test output stays on stdout: {stdout}"
    );
    assert!(
        stderr.contains("ptx-too-new-for-driver"),
        "the panic on stdout is diagnosed:\n{stderr}"
    );
}

#[test]
fn broken_toolkit_fails_before_cargo_with_the_fix() {
    let Some(mixed) = workspace_tests::mixed_root() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("cargo-ran");
    let cargo = fake_cargo(dir.path(), &format!("touch '{}'", marker.display()));
    let out = wrap_vector_add(&["build", "--arch", "90"], &cargo, &mixed);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!marker.exists(), "cargo must not start: {stderr}");
    assert!(stderr.contains("mixes CUDA releases"), "{stderr}");
    assert!(
        stderr.contains("nvidia-nvvm==13.0"),
        "the fix is shown: {stderr}"
    );
}

#[test]
fn missing_manifest_is_a_clear_error() {
    let out = cargo_cuda()
        .args(["build", "--manifest-path", "/nonexistent/Cargo.toml"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains(
            "error[manifest-not-found]: --manifest-path `/nonexistent/Cargo.toml` does not exist"
        ),
        "{stderr}"
    );
}

#[test]
fn cargo_missing_from_path_is_a_clear_error() {
    let empty = tempfile::tempdir().unwrap();
    let out = cargo_cuda()
        .arg("build")
        .env_remove("CARGO")
        .env("PATH", empty.path())
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr.contains("error[cargo-not-found]"), "{stderr}");
    assert!(stderr.contains("no `cargo` is on PATH"), "{stderr}");
    assert!(stderr.contains("rustup"), "{stderr}");
}

#[test]
fn no_toolkit_for_a_cuda_workspace_fails_before_cargo() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("cargo-ran");
    let cargo = fake_cargo(dir.path(), &format!("touch '{}'", marker.display()));
    let out = cargo_cuda()
        .args(["check", "--manifest-path"])
        .arg(workspace_root().join("examples/vector-add/Cargo.toml"))
        .env("CARGO", &cargo)
        .env("PATH", "/usr/bin:/bin")
        .env("CARGO_CUDA_SYSROOT", dir.path())
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!marker.exists(), "cargo must not start: {stderr}");
    assert!(stderr.contains("error[nvcc-not-found]"), "{stderr}");
}

#[test]
fn a_workspace_without_cuda_runs_cargo_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = plain_package(&dir.path().join("plain"));
    let marker = dir.path().join("cargo-ran");
    let cargo = fake_cargo(dir.path(), &format!("touch '{}'", marker.display()));
    let out = cargo_cuda()
        .args(["check", "--manifest-path"])
        .arg(&manifest)
        .env("CARGO", &cargo)
        .env("PATH", "/usr/bin:/bin")
        .env("CARGO_CUDA_SYSROOT", dir.path())
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(marker.exists());
    assert!(
        stderr.contains("no package in this workspace uses cuda-build or cudarc"),
        "{stderr}"
    );
}

/// The real thing: examples/vector-add's build.rs compiles its kernel with
/// nvcc 13.0 under `cargo cuda build` (own target dir: the outer cargo holds
/// the workspace's build lock while tests run).
#[test]
fn cargo_cuda_build_builds_examples_vector_add() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let target = common::shared_target();
    let out = cargo_cuda()
        .args(["build", "--arch", "80;90", "--manifest-path"])
        .arg(workspace_root().join("examples/vector-add/Cargo.toml"))
        .env("CUDA_HOME", &root)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("13.0.88"),
        "the toolkit is announced: {stderr}"
    );
    assert!(target.join("debug/vector-add").exists(), "{stderr}");
}

/// A kernel build slower than 2 s shows files done/total and the current
/// file with its archs on stderr, from cuda-build's progress side channel.
#[test]
fn slow_kernel_builds_show_progress() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = plain_package(&dir.path().join("pkg"));
    let ev = |e: &str, f: &str, done: u32| {
        format!(
            "echo '{{\"event\":\"{e}\",\"file\":\"{f}\",\"archs\":\"sm_80,sm_90\",\"done\":{done},\"total\":2}}' >> \"$CARGO_CUDA_PROGRESS\""
        )
    };
    let body = [
        ev("start", "cu/a.cu", 0),
        "sleep 1".into(),
        ev("done", "cu/a.cu", 1),
        ev("start", "cu/sgemm.cu", 1),
        "sleep 2".into(),
        ev("done", "cu/sgemm.cu", 2),
        "sleep 0.3".into(),
    ]
    .join("\n");
    let cargo = fake_cargo(dir.path(), &body);
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let out = cargo_cuda()
        .args(["build", "--arch", "90", "--manifest-path"])
        .arg(&manifest)
        .env("CARGO", &cargo)
        .env("CUDA_HOME", &root)
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("Kernels 1/2 cu/sgemm.cu (sm_80,sm_90)"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("cu/a.cu"),
        "the first second stays quiet: {stderr}"
    );
}

/// When the output already carries cuda-build's explanation, it is not repeated.
#[test]
fn an_explanation_already_in_the_output_is_not_repeated() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cargo = fake_cargo(
        dir.path(),
        "echo 'libcuda.so.1: cannot open shared object file: No such file or directory' >&2\n\
         echo 'error[libcuda-not-found]: libcuda (the driver library) could not be loaded' >&2\n\
         exit 1",
    );
    let out = wrap_vector_add(&["run", "--arch", "90"], &cargo, &root);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr.matches("error[libcuda-not-found]").count(),
        1,
        "{stderr}"
    );
}

/// No arch set and no GPU (CI) is not a certain failure: build scripts may
/// have their own fallback (examples/vector-add does), so cargo runs and no
/// CUDA_ARCHS is imposed.
#[test]
fn no_arch_and_no_gpu_leaves_archs_to_each_build_script() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    if common::has_driver() {
        eprintln!("skipped: this machine has a GPU driver, so archs are detected");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("env.txt");
    let cargo = fake_cargo(dir.path(), &format!("env > '{}'", dump.display()));
    let out = wrap_vector_add(&["check"], &cargo, &root);
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let env = std::fs::read_to_string(&dump).unwrap();
    assert!(
        env.contains(&format!("CUDA_HOME={}", root.display())),
        "{env}"
    );
    assert!(!env.lines().any(|l| l.starts_with("CUDA_ARCHS=")), "{env}");
    assert!(
        !env.lines().any(|l| l.starts_with("CUDA_COMPUTE_CAP=")),
        "{env}"
    );
    assert!(stderr.contains("each build script's own"), "{stderr}");
}

/// `cargo cuda ARGS --manifest-path examples/vector-add/Cargo.toml` with a
/// fake cargo and the given toolkit: the shape most wrapper tests share.
fn wrap_vector_add(args: &[&str], cargo: &Path, cuda_home: &Path) -> Output {
    cargo_cuda()
        .args(args)
        .arg("--manifest-path")
        .arg(workspace_root().join("examples/vector-add/Cargo.toml"))
        .env("CARGO", cargo)
        .env("CUDA_HOME", cuda_home)
        .output()
        .unwrap()
}
