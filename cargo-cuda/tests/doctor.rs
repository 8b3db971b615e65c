//! `cargo cuda doctor` against the real CUDA 13.0 toolkit and the mixed-release one.

mod common;

use common::{cargo_cuda, has_driver, json, text};
use serde_json::Value;

fn checks_of<'a>(report: &'a Value, layer: &str) -> Vec<&'a Value> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["layer"] == layer)
        .collect()
}

fn check<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id} in {report:#}"))
}

#[test]
fn doctor_json_on_ci_with_the_real_toolkit() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let out = cargo_cuda()
        .args(["doctor", "--json", "--no-workload"])
        .env("CUDA_HOME", &root)
        .env("CUDA_ARCHS", "90")
        .output()
        .unwrap();
    let report = json(&out);

    // Schema: {"ok": bool, "checks": [{"id","layer","status","summary","fix", ...}]}.
    assert!(report["ok"].is_boolean(), "{report:#}");
    let checks = report["checks"].as_array().unwrap();
    assert!(checks.len() >= 10, "{report:#}");
    for c in checks {
        assert!(c["id"].is_string() && c["summary"].is_string(), "{c:#}");
        assert!(c.get("fix").is_some(), "fix key missing: {c:#}");
        assert!(c["evidence"].is_array(), "{c:#}");
        assert!(
            ["pass", "warn", "fail", "skip"].contains(&c["status"].as_str().unwrap()),
            "{c:#}"
        );
        assert!(
            ["driver", "toolkit", "compatibility", "compile", "run"]
                .contains(&c["layer"].as_str().unwrap()),
            "{c:#}"
        );
    }

    // The toolkit, compatibility and compile layers pass (nothing fails, something passes).
    for layer in ["toolkit", "compatibility", "compile"] {
        let cs = checks_of(&report, layer);
        assert!(
            cs.iter().all(|c| c["status"] != "fail"),
            "{layer} failed: {cs:#?}"
        );
        assert!(
            cs.iter().any(|c| c["status"] == "pass"),
            "{layer} has no pass: {cs:#?}"
        );
    }
    let selected = check(&report, "toolkit.selected");
    assert!(
        selected["summary"].as_str().unwrap().contains("13.0.88"),
        "{selected:#}"
    );
    assert!(
        selected["evidence"].to_string().contains("CUDA_HOME"),
        "{selected:#}"
    );
    let compile = check(&report, "compile.vector-add");
    assert_eq!(compile["status"], "pass", "{compile:#}");
    assert!(
        compile["summary"].as_str().unwrap().contains("sm_90"),
        "{compile:#}"
    );
    assert_eq!(check(&report, "compat.arch")["status"], "pass");

    if has_driver() {
        eprintln!("note: this machine has an NVIDIA driver; the no-GPU assertions do not apply");
        return;
    }
    // No GPU here: the driver layer fails, once, with the cause and the fix.
    let km = check(&report, "driver.kernel-module");
    assert_eq!(km["status"], "fail", "{km:#}");
    assert_eq!(km["code"], "driver-not-loaded");
    assert!(
        km["summary"].as_str().unwrap().contains("no NVIDIA driver"),
        "{km:#}"
    );
    assert!(
        km["evidence"]
            .to_string()
            .contains("/proc/driver/nvidia/version does not exist"),
        "{km:#}"
    );
    let fix = km["fix"].as_str().unwrap();
    assert!(
        fix.contains("install the NVIDIA driver") && fix.contains("580.65.06"),
        "{fix}"
    );
    assert_eq!(check(&report, "driver.gpus")["status"], "skip");
    assert_eq!(check(&report, "run.vector-add")["status"], "skip");
    assert_eq!(report["ok"], false);
    assert!(
        !out.status.success(),
        "doctor must exit nonzero when a check fails"
    );
}

#[test]
fn doctor_human_output_is_plain_when_piped_and_coloured_on_request() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let run = |extra: &[(&str, &str)]| {
        let mut cmd = cargo_cuda();
        cmd.args(["doctor", "--no-workload"])
            .env("CUDA_HOME", &root)
            .env("CUDA_ARCHS", "90");
        for (k, v) in extra {
            cmd.env(k, v);
        }
        text(&cmd.output().unwrap()).0
    };
    let plain = run(&[]);
    assert!(
        !plain.contains('\x1b'),
        "piped output must not be coloured:\n{plain}"
    );
    assert!(
        plain.contains("toolkit.selected") && plain.contains("[compile]"),
        "{plain}"
    );
    assert!(plain.lines().last().unwrap().contains("doctor:"), "{plain}");
    let coloured = run(&[("CARGO_TERM_COLOR", "always")]);
    assert!(
        coloured.contains("\x1b[1;32m"),
        "CARGO_TERM_COLOR=always must colour:\n{coloured}"
    );
    let no_color = run(&[("NO_COLOR", "1")]);
    assert!(!no_color.contains('\x1b'));
}

#[test]
fn doctor_flags_the_mixed_release_toolkit() {
    let Some(root) = workspace_tests::mixed_root() else {
        return;
    };
    let out = cargo_cuda()
        .args(["doctor", "--json", "--no-workload"])
        .env("CUDA_HOME", &root)
        .env("CUDA_ARCHS", "90")
        .output()
        .unwrap();
    let report = json(&out);
    assert_eq!(report["ok"], false);
    assert!(!out.status.success());
    let integrity = check(&report, "toolkit.integrity");
    assert_eq!(integrity["status"], "fail", "{integrity:#}");
    let summary = integrity["summary"].as_str().unwrap();
    assert!(
        summary.contains("13.0.88") && summary.contains("13.5.37"),
        "{summary}"
    );
    assert!(
        integrity["fix"].as_str().unwrap().contains("nvidia-nvvm"),
        "{integrity:#}"
    );
    // The real compile fails too, in ptxas, and says so.
    let compile = check(&report, "compile.vector-add");
    assert_eq!(compile["status"], "fail", "{compile:#}");
    assert!(
        compile.to_string().contains("Unsupported .version"),
        "{compile:#}"
    );
}

#[test]
fn doctor_without_any_toolkit_fails_the_toolkit_layer_and_skips_what_needs_it() {
    let empty = tempfile::tempdir().unwrap();
    let out = cargo_cuda()
        .args(["doctor", "--json", "--no-workload"])
        .env("PATH", empty.path())
        .env("CARGO_CUDA_SYSROOT", empty.path())
        .output()
        .unwrap();
    let report = json(&out);
    let sel = check(&report, "toolkit.selected");
    assert_eq!(sel["status"], "fail", "{sel:#}");
    assert_eq!(check(&report, "compile.vector-add")["status"], "skip");
    assert!(!out.status.success());
}

/// On a GPU machine: the driver layer passes, and the run layer loads the
/// compiled vectorAdd through the driver, runs it and verifies it.
#[test]
fn doctor_runs_vector_add_on_the_gpu() {
    if !workspace_tests::gpu_required("doctor_runs_vector_add_on_the_gpu") {
        return;
    }
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let out = cargo_cuda()
        .args(["doctor", "--json", "--no-workload"])
        .env("CUDA_HOME", &root)
        .output()
        .unwrap();
    let report = json(&out);
    for id in [
        "driver.kernel-module",
        "driver.libcuda",
        "driver.gpus",
        "compat.driver-sass",
        "compile.vector-add",
    ] {
        assert_eq!(check(&report, id)["status"], "pass", "{id}: {report:#}");
    }
    let devices = check(&report, "run.devices");
    assert_eq!(devices["status"], "pass", "{devices:#}");
    assert!(
        devices["evidence"]
            .to_string()
            .contains("compute capability"),
        "{devices:#}"
    );
    let va = check(&report, "run.vector-add");
    assert_eq!(va["status"], "pass", "{va:#}");
    assert!(va["evidence"].to_string().contains("verified"), "{va:#}");
    assert_eq!(check(&report, "run.workload")["status"], "skip");
    assert_eq!(report["ok"], true, "{report:#}");
    assert!(out.status.success());
}

/// On a GPU machine, in this workspace: doctor builds and runs cuda-workload --quick.
#[test]
fn doctor_runs_the_sample_workload_on_the_gpu() {
    if !workspace_tests::gpu_required("doctor_runs_the_sample_workload_on_the_gpu") {
        return;
    }
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    // Own target dir: the cargo running this test holds the workspace's build lock.
    let target = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("doctor-workload");
    let out = cargo_cuda()
        .args(["doctor", "--json"])
        .current_dir(common::workspace_root())
        .env("CUDA_HOME", &root)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    let report = json(&out);
    let w = check(&report, "run.workload");
    assert_eq!(w["status"], "pass", "{w:#}");
}

/// The host-compiler check is the build engine's rule, rendered: the doctor
/// names the compiler and the variable a build would hand nvcc as `-ccbin`.
#[test]
fn doctor_host_compiler_is_the_one_the_build_engine_picks() {
    use cuda_toolchain::env::{Env, Var};
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let doctor = |var: &str, value: &std::ffi::OsStr| {
        let out = cargo_cuda()
            .args(["doctor", "--json", "--no-workload"])
            .env("CUDA_HOME", &root)
            .env("CUDA_ARCHS", "90")
            .env_remove("NVCC_CCBIN")
            .env_remove("CXX")
            .env(var, value)
            .output()
            .unwrap();
        check(&json(&out), "compat.host-compiler").clone()
    };
    let base = Env::from_process().unset(Var::NvccCcbin).unset(Var::Cxx);

    // A CXX that does not exist: the engine refuses it naming CXX, and so does the doctor.
    let c = doctor("CXX", "/nonexistent/g++".as_ref());
    let engine =
        cuda_build::compile::host_compiler(&base.clone().set(Var::Cxx, "/nonexistent/g++"))
            .unwrap_err();
    assert_eq!(c["status"], "fail", "{c:#}");
    assert_eq!(c["code"], engine.code, "{c:#}");
    assert_eq!(c["summary"], engine.message.as_str(), "{c:#}");
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .starts_with("CXX names `/nonexistent/g++`"),
        "{c:#}"
    );

    // NVCC_CCBIN naming the real C++ compiler: chosen by NVCC_CCBIN, and
    // within CUDA 13.0's limits (real compiles with it pass).
    let cxx = base.which("c++").expect("a C++ compiler on PATH");
    let c = doctor("NVCC_CCBIN", cxx.as_os_str());
    let tool = cuda_build::compile::host_compiler(&base.set(Var::NvccCcbin, &cxx))
        .unwrap()
        .unwrap();
    assert_eq!(tool.from, "NVCC_CCBIN");
    assert_eq!(c["status"], "pass", "{c:#}");
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!("`{}` (chosen by NVCC_CCBIN)", tool.path.display())),
        "{c:#}"
    );
    assert!(summary.contains("13.0"), "{c:#}");
}

#[test]
fn doctor_and_info_report_the_shared_kernel_cache() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("kernels");
    let run = |args: &[&str], redis: &str| {
        json(
            &cargo_cuda()
                .args(args)
                .env("CUDA_HOME", &root)
                .env("CUDA_ARCHS", "90")
                .env("CUDA_BUILD_CACHE_DIR", &cache)
                .env("CUDA_BUILD_CACHE_REDIS", redis)
                .output()
                .unwrap(),
        )
    };
    let doctor = ["doctor", "--json", "--no-workload"];

    // Nobody listens on that port: a warning naming the variable, the
    // address and what builds do instead.
    let down = format!("redis://127.0.0.1:{}", workspace_tests::redis::free_port());
    let report = run(&doctor, &down);
    let c = check(&report, "compile.cache");
    assert_eq!(c["status"], "warn", "{c:#}");
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!("CUDA_BUILD_CACHE_REDIS={down}/0"))
            && summary.contains("local cache only")
            && summary.contains(&cache.display().to_string()),
        "{summary}"
    );
    let info = run(&["info", "--json"], &down);
    assert_eq!(
        info["cache"]["dir"],
        cache.display().to_string(),
        "{info:#}"
    );
    assert!(info["cache"]["remote_problem"].is_string(), "{info:#}");

    // A malformed URL says what was expected.
    let report = run(&doctor, "http://127.0.0.1:1");
    let c = check(&report, "compile.cache");
    assert_eq!(c["status"], "warn", "{c:#}");
    assert!(
        c["summary"].as_str().unwrap().contains("redis://host:port"),
        "{c:#}"
    );

    // A real Redis started here: the tier answers.
    let Some(redis) = workspace_tests::redis::Redis::start(tmp.path()) else {
        return;
    };
    let report = run(&doctor, &redis.endpoint());
    let c = check(&report, "compile.cache");
    assert_eq!(c["status"], "pass", "{c:#}");
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .contains(&format!("shared through Redis at {}/0", redis.endpoint())),
        "{c:#}"
    );
    let info = run(&["info", "--json"], &redis.endpoint());
    assert_eq!(
        info["cache"]["remote"],
        format!("{}/0", redis.endpoint()),
        "{info:#}"
    );
    assert!(info["cache"]["remote_problem"].is_null(), "{info:#}");
}
