//! `cargo cuda toolkit install|list|which|remove` and the project pin
//! (`cargo cuda build` naming the install command; `--install`), against a
//! package index on 127.0.0.1 started by each test.

mod common;
#[path = "../../cuda-install/tests/common/mod.rs"]
mod index;

use common::{cargo_cuda, fake_cargo, text, workspace_root};
use std::path::Path;
use std::process::Command;

/// `cargo cuda` with only this store, this index and no toolkit elsewhere.
fn cmd(store: &Path, sys: &Path, index_url: &str) -> Command {
    let mut c = cargo_cuda();
    c.env("CARGO_CUDA_HOME", store)
        .env("CARGO_CUDA_SYSROOT", sys)
        .env("PIP_INDEX_URL", index_url)
        .env("PATH", "/usr/bin:/bin");
    c
}

#[test]
fn install_list_which_remove() {
    let server = index::Server::start();
    index::publish_release(&server, "13.0.88", 0);
    let (store, sys) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = cmd(store.path(), sys.path(), &server.url)
        .args(["toolkit", "install", "13.0"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let root = store.path().join("toolkits/13.0.88");
    assert_eq!(stdout.trim(), root.display().to_string());
    assert!(
        stderr.contains("nvidia-nvvm==13.0.88") && stderr.contains("sha256-verified"),
        "{stderr}"
    );
    // Again: a no-op, even with the index gone.
    drop(server);
    let out = cmd(store.path(), sys.path(), "http://127.0.0.1:9/simple")
        .args(["toolkit", "install", "13.0"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    assert!(text(&out).1.contains("already installed"));
    let out = cmd(store.path(), sys.path(), "x")
        .args(["toolkit", "list"])
        .output()
        .unwrap();
    assert!(
        text(&out).0.starts_with("13.0.88\t13.0.88\tchecked\t"),
        "{}",
        text(&out).0
    );
    let project = tempfile::tempdir().unwrap();
    let out = cmd(store.path(), sys.path(), "x")
        .args(["toolkit", "which"])
        .current_dir(project.path())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.trim(), root.display().to_string());
    assert!(
        stderr.contains("via cargo cuda toolkit install"),
        "{stderr}"
    );
    let out = cmd(store.path(), sys.path(), "x")
        .args(["toolkit", "remove", "13.0.88"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    assert!(!root.exists());
    let out = cmd(store.path(), sys.path(), "x")
        .args(["toolkit", "remove", "13.0.88"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out).1.contains("error[toolkit-not-installed]"),
        "{}",
        text(&out).1
    );
}

#[test]
fn bad_input_is_an_error_naming_the_argument() {
    let (store, sys) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (args, code) in [
        (vec!["toolkit", "install", "13.x"], "install-bad-version"),
        (
            vec!["toolkit", "install", "13.0", "--with", "cufft"],
            "install-bad-component",
        ),
        (
            vec![
                "toolkit",
                "install",
                "--unchecked",
                "--name",
                "x",
                "nvidia-nvvm",
            ],
            "install-bad-version",
        ),
        (
            vec![
                "toolkit",
                "install",
                "--unchecked",
                "--name",
                "../x",
                "a==1",
            ],
            "install-bad-name",
        ),
    ] {
        let server = index::Server::start();
        index::publish_release(&server, "13.0.88", 0);
        let out = cmd(store.path(), sys.path(), &server.url)
            .args(&args)
            .output()
            .unwrap();
        let stderr = text(&out).1;
        assert!(!out.status.success(), "{args:?}");
        assert!(
            stderr.contains(&format!("error[{code}]")),
            "{args:?}: {stderr}"
        );
    }
    // Unreachable index: the URL and the setting it came from.
    let out = cmd(store.path(), sys.path(), "http://127.0.0.1:9/simple")
        .args(["toolkit", "install", "13.0"])
        .output()
        .unwrap();
    let stderr = text(&out).1;
    assert!(
        stderr.contains("error[install-network]") && stderr.contains("PIP_INDEX_URL"),
        "{stderr}"
    );
    index::assert_clean(store.path());
}

/// A package that uses cuda-build and pins `toolkit = "13.0"`.
fn pinned_package(dir: &Path) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"pinned\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[build-dependencies]\ncuda-build = {{ path = \"{}\" }}\n\n[package.metadata.cuda]\ntoolkit = \"13.0\"\narch = \"80\"\n\n[workspace]\n",
            workspace_root().join("cuda-build").display()
        ),
    )
    .unwrap();
    // Reuse the workspace's lock file: no registry lookups for cargo metadata.
    std::fs::copy(workspace_root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    dir.join("Cargo.toml")
}

#[test]
fn project_pin_names_the_install_command_and_build_install_installs_it() {
    let server = index::Server::start();
    index::publish_release(&server, "13.0.88", 0);
    let (store, sys, work) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let manifest = pinned_package(&work.path().join("pinned"));
    let marker = work.path().join("cargo-ran");
    let cargo = fake_cargo(work.path(), &format!("touch '{}'", marker.display()));
    let build = |extra: &[&str]| {
        cmd(store.path(), sys.path(), &server.url)
            .arg("build")
            .args(extra)
            .arg("--manifest-path")
            .arg(&manifest)
            .env("CARGO", &cargo)
            .output()
            .unwrap()
    };
    let out = build(&[]);
    let stderr = text(&out).1;
    assert!(!out.status.success(), "{stderr}");
    assert!(!marker.exists(), "cargo must not start: {stderr}");
    assert!(
        stderr.contains("cargo cuda toolkit install 13.0"),
        "{stderr}"
    );
    let out = build(&["--install"]);
    let stderr = text(&out).1;
    assert!(
        stderr.contains("installed 13.0.88 for the project's `toolkit = \"^13.0\"`"),
        "{stderr}"
    );
    assert!(
        store.path().join("toolkits/13.0.88/bin/nvcc").is_file(),
        "{stderr}"
    );
}
