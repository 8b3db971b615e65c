//! Crate boundaries that the architecture promises (docs/ARCHITECTURE.md):
//! a program that only runs kernels does not compile the build engine.

use std::process::Command;

/// The normal (run-time) dependency closure of a workspace package, as cargo resolves it.
fn runtime_deps(package: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "-p",
            package,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree -p {package} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn programs_that_run_kernels_do_not_link_the_build_engine() {
    for program in ["cuda-workload", "vector-add"] {
        let deps = runtime_deps(program);
        assert!(
            deps.iter().any(|d| d == "cuda-toolchain"),
            "{program} should use cuda-toolchain: {deps:?}"
        );
        for engine in ["cuda-build", "jobserver"] {
            assert!(
                !deps.iter().any(|d| d == engine),
                "{program} links {engine} at run time: {deps:?}"
            );
        }
    }
}

#[test]
fn cuda_toolchain_does_not_depend_on_cuda_build() {
    let deps = runtime_deps("cuda-toolchain");
    assert!(
        !deps.iter().any(|d| d == "cuda-build" || d == "jobserver"),
        "{deps:?}"
    );
}
