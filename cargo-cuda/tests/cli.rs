//! Command-line surface: subcommand form, help, unknown input, info, toolkits, env.

mod common;

use common::{cargo_cuda, json, text};

#[test]
fn works_as_cargo_subcommand_and_directly() {
    for args in [
        &["cuda", "explain", "--help"][..],
        &["explain", "--help"][..],
    ] {
        let out = cargo_cuda().args(args).output().unwrap();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert!(stdout.contains("Usage: cargo cuda explain"), "{stdout}");
        assert!(stdout.contains("--json"), "{stdout}");
    }
}

#[test]
fn every_subcommand_has_its_own_help() {
    for sub in [
        "doctor", "build", "run", "test", "check", "bench", "explain", "toolkits", "info", "env",
    ] {
        let out = cargo_cuda().args([sub, "--help"]).output().unwrap();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{sub}: {stderr}");
        assert!(
            stdout.contains(&format!("Usage: cargo cuda {sub}")),
            "{sub}: {stdout}"
        );
    }
}

#[test]
fn unknown_subcommand_gets_a_hint() {
    let out = cargo_cuda().arg("doctr").output().unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("unrecognized subcommand 'doctr'"),
        "{stderr}"
    );
    assert!(
        stderr.contains("similar subcommand exists: 'doctor'"),
        "{stderr}"
    );
}

#[test]
fn unknown_flag_gets_a_hint() {
    let out = cargo_cuda().args(["doctor", "--jsn"]).output().unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("unexpected argument '--jsn'"), "{stderr}");
    assert!(stderr.contains("--json"), "{stderr}");
}

#[test]
fn info_json_has_the_documented_schema() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let out = cargo_cuda()
        .args(["info", "--json"])
        .env("CUDA_HOME", &root)
        .env("CUDA_ARCHS", "80;90")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    let v = json(&out);
    let tk = &v["toolkit"];
    assert_eq!(tk["version"], "13.0.88", "{v:#}");
    assert_eq!(tk["found_via"], "CUDA_HOME");
    assert_eq!(tk["root"], root.to_str().unwrap());
    assert!(tk["nvcc"].as_str().unwrap().ends_with("bin/nvcc"));
    assert!(v["toolkits"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["selected"] == true));
    assert!(v["gpus"].is_array());
    for g in v["gpus"].as_array().unwrap() {
        assert!(
            g["index"].is_u64() && g["name"].is_string() && g["compute_capability"].is_string(),
            "{g:#}"
        );
    }
    assert!(
        v["driver"].is_null() || v["driver"]["found_via"].is_string(),
        "{v:#}"
    );
    if !common::has_driver() {
        assert!(v["driver"].is_null(), "no driver here: {v:#}");
    }
    assert_eq!(
        v["arch"]["targets"],
        serde_json::json!(["sm_80", "sm_90", "compute_90"]),
        "{v:#}"
    );
    assert_eq!(v["arch"]["ptx"], "compute_90");
    assert_eq!(
        v["arch"]["found_via"], "cuda-archs",
        "ArchSource's own name"
    );
    let gencode: Vec<&str> = v["gencode"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_str().unwrap())
        .collect();
    assert!(
        gencode
            .iter()
            .any(|g| g.contains("arch=compute_80") && g.contains("sm_80")),
        "{gencode:?}"
    );
    assert!(
        gencode.iter().any(
            |g| g.contains("arch=compute_90") && g.contains("compute_90]")
                || g.ends_with("code=compute_90")
        ),
        "{gencode:?}"
    );
}

#[test]
fn info_human_names_toolkit_and_arch() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let out = cargo_cuda()
        .arg("info")
        .env("CUDA_HOME", &root)
        .env("CUDA_ARCHS", "90")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("CUDA 13.0.88"), "{stdout}");
    assert!(
        stdout.contains("sm_90 compute_90 (from CUDA_ARCHS)"),
        "{stdout}"
    );
}

#[test]
fn toolkits_marks_the_selected_one_and_why() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let Some(mixed) = workspace_tests::mixed_root() else {
        return;
    };
    // The mixed toolkit on PATH, the good one in CUDA_HOME: both listed, CUDA_HOME selected.
    let out = cargo_cuda()
        .arg("toolkits")
        .env("CUDA_HOME", &root)
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", mixed.join("bin").display()),
        )
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let selected = stdout
        .lines()
        .find(|l| l.contains("Selected"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        selected.contains(root.to_str().unwrap()) && selected.contains("CUDA_HOME"),
        "{stdout}"
    );
    assert!(
        stdout.contains(mixed.to_str().unwrap()),
        "the other toolkit is listed: {stdout}"
    );
    assert!(
        stdout.contains("CUDA_HOME is set"),
        "the reason is given: {stdout}"
    );
    let out = cargo_cuda()
        .args(["toolkits", "--json"])
        .env("CUDA_HOME", &root)
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", mixed.join("bin").display()),
        )
        .output()
        .unwrap();
    let v = json(&out);
    assert_eq!(v["toolkits"].as_array().unwrap().len(), 2, "{v:#}");
    let mixed_entry = v["toolkits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["selected"] == false)
        .unwrap();
    assert!(
        !mixed_entry["problems"].as_array().unwrap().is_empty(),
        "{v:#}"
    );
}

#[test]
fn env_shell_exports_a_working_environment() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let out = cargo_cuda()
        .args(["env", "--shell"])
        .env("CUDA_HOME", &root)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    for var in ["CUDA_HOME", "PATH", "LD_LIBRARY_PATH"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!("export {var}="))),
            "{var}: {stdout}"
        );
    }
    // Sourcing the lines gives a shell where nvcc is the selected one.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("env.sh");
    std::fs::write(&script, &stdout).unwrap();
    let check = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(". \"$1\" && command -v nvcc && printf '%s\\n' \"$CUDA_HOME\" \"$LD_LIBRARY_PATH\"")
        .arg("sh")
        .arg(&script)
        .env("PATH", "/usr/bin:/bin")
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&check.stdout);
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(
        lines.first().copied(),
        Some(root.join("bin/nvcc").to_str().unwrap()),
        "{shown}"
    );
    assert_eq!(
        lines.get(1).copied(),
        Some(root.to_str().unwrap()),
        "{shown}"
    );
    assert!(
        lines
            .get(2)
            .is_some_and(|l| l.starts_with(root.to_str().unwrap())),
        "{shown}"
    );
}

/// Every child a test starts has the test process's private home: the
/// toolkit store and the kernel cache it sees are there, never the user's
/// (after the README's first command, the user's store holds a toolkit, and
/// tests that expect none must still pass).
#[test]
fn children_see_a_private_home_never_the_users() {
    let home = workspace_tests::private_home();
    let out = cargo_cuda().args(["toolkit", "list"]).output().unwrap();
    let (_, stderr) = text(&out);
    let store = home.join(".local/share/cargo-cuda");
    assert!(
        stderr.contains(&format!("no toolkits in `{}`", store.display())),
        "{stderr}"
    );
    let v = json(&cargo_cuda().args(["info", "--json"]).output().unwrap());
    assert_eq!(
        v["cache"]["dir"],
        home.join(".cache/cuda-build").to_str().unwrap(),
        "{v:#}"
    );
    for cmd in [cargo_cuda(), common::plain_cargo()] {
        let envs: Vec<_> = cmd.get_envs().collect();
        assert!(
            envs.contains(&(std::ffi::OsStr::new("HOME"), Some(home.as_os_str()))),
            "{envs:?}"
        );
    }
}

#[test]
fn env_without_a_toolkit_fails_clearly() {
    let empty = tempfile::tempdir().unwrap();
    let out = cargo_cuda()
        .args(["env", "--shell"])
        .env("PATH", empty.path())
        .env("CARGO_CUDA_SYSROOT", empty.path())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout.is_empty(), "no half-written exports: {stdout}");
    assert!(stderr.contains("error[nvcc-not-found]"), "{stderr}");
}

#[test]
fn info_lists_the_workspace_packages_that_use_cuda() {
    let out = cargo_cuda()
        .args(["info", "--json", "--manifest-path"])
        .arg(common::workspace_root().join("Cargo.toml"))
        .output()
        .unwrap();
    let v = json(&out);
    let ws = &v["workspace"];
    assert_eq!(
        ws["root"],
        common::workspace_root().to_str().unwrap(),
        "{v:#}"
    );
    let pkgs = ws["cuda_packages"].as_array().unwrap();
    let va = pkgs
        .iter()
        .find(|p| p["name"] == "vector-add")
        .unwrap_or_else(|| panic!("{ws:#}"));
    assert_eq!(va["uses"], serde_json::json!(["cuda-build", "cudarc"]));
    // A package without CUDA is not listed.
    let dir = tempfile::tempdir().unwrap();
    let manifest = common::plain_package(dir.path());
    let out = cargo_cuda()
        .args(["info", "--json", "--manifest-path"])
        .arg(&manifest)
        .output()
        .unwrap();
    assert_eq!(
        json(&out)["workspace"]["cuda_packages"],
        serde_json::json!([])
    );
}

#[test]
fn color_flag_overrides_the_environment() {
    let out = cargo_cuda()
        .args(["--color", "always", "explain", "no-such-code-here"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(text(&out).1.contains("\x1b[1;31m"), "{}", text(&out).1);
    let out = cargo_cuda()
        .args(["explain", "no-such-code-here"])
        .env("CARGO_TERM_COLOR", "always")
        .output()
        .unwrap();
    assert!(text(&out).1.contains("\x1b["));
    let out = cargo_cuda()
        .args(["explain", "no-such-code-here"])
        .output()
        .unwrap();
    assert!(!text(&out).1.contains('\x1b'), "stderr is not a tty here");
}

/// Commands that print `error[...]` exit nonzero and print it on stderr;
/// `--json` output carries the error too.
#[test]
fn info_errors_exit_nonzero_on_stderr_and_in_json() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    for (var, value, code) in [
        ("CUDA_ARCHS", "sm_80a", "arch-invalid"),
        ("CUDA_ARCHS", "90f", "arch-invalid"),
        ("CUDA_ARCHS", "banana", "arch-invalid"),
        ("CUDA_HOME", "/nonexistent/cuda", ""),
    ] {
        let out = cargo_cuda()
            .arg("info")
            .env("CUDA_HOME", &root)
            .env("CUDA_ARCHS", "90")
            .env(var, value)
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{var}={value}: {stdout}{stderr}"
        );
        assert!(
            stderr.contains(&format!("error[{code}")),
            "{var}={value}: {stderr}"
        );
        assert!(!stdout.contains("error["), "errors go to stderr: {stdout}");
        let out = cargo_cuda()
            .args(["info", "--json"])
            .env("CUDA_HOME", &root)
            .env("CUDA_ARCHS", "90")
            .env(var, value)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let v = json(&out);
        assert!(!v["errors"].as_array().unwrap().is_empty(), "{v:#}");
    }
    // A bad value of a variable that is not an error is a warning that names it.
    let out = cargo_cuda()
        .arg("info")
        .env("CUDA_HOME", &root)
        .env("CUDA_ARCHS", "90")
        .env("CUDA_BUILD_TIMEOUT", "10x")
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("warning: CUDA_BUILD_TIMEOUT=`10x` is not a duration"),
        "{stderr}"
    );
}

/// Misspelled `[package.metadata.cuda]` keys are named, with the nearest key.
#[test]
fn misspelled_metadata_keys_are_warned_about() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        format!(
            "[package]\nname = \"k\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n\n\
             [build-dependencies]\ncuda-build = {{ path = \"{}\" }}\n\n\
             [package.metadata.cuda]\narchs = \"80\"\ntoolkt = \">=12\"\n",
            common::workspace_root().join("cuda-build").display()
        ),
    )
    .unwrap();
    let out = cargo_cuda()
        .args(["info", "--manifest-path"])
        .arg(dir.path().join("Cargo.toml"))
        .env("CUDA_HOME", &root)
        .env("CUDA_ARCHS", "90")
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(
        stderr.contains("unknown key `archs`") && stderr.contains("did you mean `arch`?"),
        "{stderr}"
    );
    assert!(
        stderr.contains("unknown key `toolkt`") && stderr.contains("did you mean `toolkit`?"),
        "{stderr}"
    );
}

#[test]
fn info_lists_header_deps_and_says_how_a_cutlass_request_reads() {
    let dir = tempfile::tempdir().unwrap();
    // A store holding nvidia-cutlass 3.5.0.0 only (info reads its dep.json).
    let store = dir.path().join("store");
    let entry = store.join("deps/nvidia-cutlass/3.5.0.0");
    std::fs::create_dir_all(&entry).unwrap();
    std::fs::write(
        entry.join("dep.json"),
        r#"{"package":"nvidia-cutlass","version":"3.5.0.0","sha256":"","include_dirs":["include"]}"#,
    )
    .unwrap();
    let pkg = dir.path().join("pkg");
    std::fs::create_dir_all(pkg.join("src")).unwrap();
    std::fs::write(pkg.join("src/lib.rs"), "").unwrap();
    std::fs::copy(
        common::workspace_root().join("Cargo.lock"),
        pkg.join("Cargo.lock"),
    )
    .unwrap();
    let info = |cutlass: &str| {
        std::fs::write(
            pkg.join("Cargo.toml"),
            format!(
                "[package]\nname = \"pkg\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
                 [build-dependencies]\ncuda-build = {{ path = {:?} }}\n\n\
                 [package.metadata.cuda]\ncutlass = {cutlass}\n\n[workspace]\n",
                common::workspace_root().join("cuda-build")
            ),
        )
        .unwrap();
        let out = cargo_cuda()
            .args(["info", "--json", "--manifest-path"])
            .arg(pkg.join("Cargo.toml"))
            .env("CARGO_CUDA_HOME", &store)
            .env("CARGO_NET_OFFLINE", "true")
            .output()
            .unwrap();
        json(&out)["header_deps"][0].clone()
    };

    // "3.5": the newest 3.5.x; the store's newest match is 3.5.0.0.
    let d = info("\"3.5\"");
    assert_eq!(d["package"], "pkg", "{d:#}");
    assert_eq!(d["name"], "cutlass", "{d:#}");
    assert_eq!(d["source"], "index", "{d:#}");
    assert_eq!(d["from"], "nvidia-cutlass", "{d:#}");
    assert_eq!(d["requested"], "3.5", "{d:#}");
    assert_eq!(d["resolved"], "3.5.0.0", "{d:#}");
    assert_eq!(d["in_store"], true, "{d:#}");
    let meaning = d["meaning"].as_str().unwrap_or_default();
    assert!(
        meaning.contains(
            "means the newest 3.5.x release, 3.5.1.0 on the index (write \"3.5.0\" to pin 3.5.0)"
        ),
        "{d:#}"
    );
    // "3.5.0" pins; "3.6" is not in the store.
    let d = info("\"3.5.0\"");
    assert!(
        d["meaning"]
            .as_str()
            .unwrap_or_default()
            .contains("pins release 3.5.0"),
        "{d:#}"
    );
    assert_eq!(d["resolved"], "3.5.0.0", "{d:#}");
    let d = info("\"3.6\"");
    assert_eq!(d["in_store"], false, "{d:#}");
    assert_eq!(d["resolved"], serde_json::Value::Null, "{d:#}");
    // A commit: the release with its headers.
    let commit = "7d49e6c7e2f8896c47f586706e67e1fb215529dc";
    let d = info(&format!("{{ commit = \"{commit}\" }}"));
    assert_eq!(d["requested"], commit, "{d:#}");
    assert_eq!(d["resolved"], "3.5.0.0", "{d:#}");
    assert!(
        d["meaning"].as_str().unwrap_or_default().contains(&format!(
            "commit {commit} has the headers of nvidia-cutlass 3.5.0.0"
        )),
        "{d:#}"
    );
}
