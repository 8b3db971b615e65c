//! A credential is never printed, in any form of URL: a password planted in
//! every malformed and well-formed shape of `CUDA_BUILD_CACHE_REDIS` (and of
//! the other URL settings) appears in no output of `info`, `doctor`,
//! `cargo cuda build -vv` and `cargo build -vv`, and in no file the build
//! writes under target/ or into the kernel cache. A real build with the
//! real nvcc 13.0; the Redis addresses answer nothing (port 1).

mod common;

use common::{cargo_cuda, plain_cargo, shared_target, text};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The planted password, and a piece of it (a partial leak counts too).
const SECRET: &str = "PassWORD9";
const PIECES: [&str; 3] = [SECRET, "WORD9", "PassWO"];

/// Each shape a URL with a password takes, malformed ones first.
fn forms() -> Vec<String> {
    [
        "redis://:{}",
        "redis://user:{}",
        "redis://:{}@",
        "redis://user:{}/0",
        "redis://:{}@127.0.0.1:1",
        "redis://user:{}@127.0.0.1:1/0",
        "redis://127.0.0.1:1/0?password={}",
        "rediss://:{}@127.0.0.1:1",
        "redis://:Pass@{}@127.0.0.1:1",
    ]
    .iter()
    .map(|f| f.replace("{}", SECRET))
    .collect()
}

/// `cmd` with the password planted in every URL setting (cargo itself kept
/// off the network: its proxy variables hold the planted URL too).
fn planted(mut cmd: Command, form: &str) -> Command {
    cmd.env("CARGO_NET_OFFLINE", "true");
    for var in [
        "CUDA_BUILD_CACHE_REDIS",
        "SCCACHE_REDIS_ENDPOINT",
        "PIP_INDEX_URL",
        "UV_INDEX_URL",
        "HTTPS_PROXY",
        "http_proxy",
    ] {
        cmd.env(var, form);
    }
    cmd
}

fn assert_hidden(what: &str, form: &str, text: &str) {
    for piece in PIECES {
        assert!(
            !text.contains(piece),
            "{what} with `{}` shows `{piece}`:\n{text}",
            form.replace(SECRET, "<password>")
        );
    }
}

/// Every file below `dir` (links not followed).
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(t) if t.is_file() => out.push(e.path()),
                _ => {}
            }
        }
    }
    out
}

#[test]
fn no_output_and_no_file_shows_a_password() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let forms = forms();
    for form in &forms {
        for args in [
            &["info", "--json"][..],
            &["info"],
            &["doctor", "--json", "--no-workload"],
            &["doctor", "--no-workload"],
        ] {
            let out = planted(cargo_cuda(), form)
                .args(args)
                .env("CUDA_HOME", &root)
                .output()
                .unwrap();
            let (stdout, stderr) = text(&out);
            assert_hidden(&format!("cargo cuda {}", args.join(" ")), form, &stdout);
            assert_hidden(&format!("cargo cuda {}", args.join(" ")), form, &stderr);
        }
    }

    // Real builds (a new kernel each time, so the Redis tier is really
    // asked, and fails): the malformed forms, one with `@host`, one with
    // a query string and one with `@` inside the password under `cargo
    // cuda build -vv`; the first under `cargo build -vv` too.
    let cache = tempfile::tempdir().unwrap();
    let mut builds: Vec<(&str, &String)> = [0, 1, 2, 3, 5, 6, 8]
        .iter()
        .map(|&i| ("cargo cuda build", &forms[i]))
        .collect();
    builds.push(("cargo build", &forms[0]));
    let mut packages = Vec::new();
    for (i, (name, form)) in builds.into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = common::kernel_package(dir.path(), &format!("secrets-{i}"));
        let cmd = if name == "cargo build" {
            plain_cargo()
        } else {
            cargo_cuda()
        };
        let out = planted(cmd, form)
            .args(["build", "-vv", "--manifest-path"])
            .arg(&manifest)
            .env("CARGO_TARGET_DIR", shared_target())
            .env("CUDA_HOME", &root)
            .env("CUDA_ARCHS", "80")
            .env("CUDA_BUILD_CACHE_DIR", cache.path())
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{name}: {stderr}");
        assert!(
            stderr.contains("CUDA_BUILD_CACHE_REDIS"),
            "{name} says the Redis tier is off:\n{stderr}"
        );
        assert_hidden(&format!("{name} -vv"), form, &stdout);
        assert_hidden(&format!("{name} -vv"), form, &stderr);
        packages.push((format!("secrets-{i}"), form.clone(), dir));
    }

    // Every file the builds wrote: their build-script dirs and
    // fingerprints, the kernel cache, the private home.
    let target = shared_target().join("debug");
    let mut written: Vec<PathBuf> = files(cache.path());
    written.extend(files(workspace_tests::private_home()));
    for sub in ["build", ".fingerprint"] {
        for e in std::fs::read_dir(target.join(sub)).unwrap().flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if packages
                .iter()
                .any(|(p, _, _)| n.starts_with(&format!("{p}-")))
            {
                written.extend(files(&e.path()));
            }
        }
    }
    assert!(written.len() > 10, "{written:?}");
    for f in written {
        let bytes = std::fs::read(&f).unwrap_or_default();
        for piece in PIECES {
            assert!(
                !bytes.windows(piece.len()).any(|w| w == piece.as_bytes()),
                "{} holds `{piece}`",
                f.display()
            );
        }
    }
}

/// A `CUDA_BUILD_CACHE_REDIS` that is not UTF-8 was silently ignored by the
/// build, `info` and `doctor`: each names it now.
#[test]
fn a_redis_url_that_is_not_utf8_is_named_by_info_doctor_and_the_build() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let bad = OsStr::from_bytes(b"redis://caf\xe9:6379");
    let says = "CUDA_BUILD_CACHE_REDIS is not valid UTF-8";
    for args in [
        &["info", "--json"][..],
        &["doctor", "--json", "--no-workload"],
    ] {
        let out = cargo_cuda()
            .args(args)
            .env("CUDA_HOME", &root)
            .env("CUDA_BUILD_CACHE_REDIS", bad)
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        assert!(stdout.contains(says), "{args:?}:\n{stdout}\n{stderr}");
    }
    let dir = tempfile::tempdir().unwrap();
    let manifest = common::kernel_package(dir.path(), "secrets-not-utf8");
    let cache = tempfile::tempdir().unwrap();
    let out = plain_cargo()
        .args(["build", "--manifest-path"])
        .arg(&manifest)
        .env("CARGO_TARGET_DIR", shared_target())
        .env("CUDA_HOME", &root)
        .env("CUDA_ARCHS", "80")
        .env("CUDA_BUILD_CACHE_DIR", cache.path())
        .env("CUDA_BUILD_CACHE_REDIS", bad)
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains(says), "{stderr}");
}
