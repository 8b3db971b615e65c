//! The built `cuda-workload` binary, run as users run it.
//!
//! Without a GPU (CI): it must stop within 2 s, nonzero, with a driver-layer
//! diagnosis and no panic. Bad input must be refused before any launch.
//! With a GPU (`CARGO_CUDA_TEST_GPU=1`, set by scripts/gpu-check.sh): the
//! quick run verifies, a missing device index is refused, and a module built
//! for another arch is diagnosed.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_cuda-workload");

/// Driver-layer codes the no-GPU path may end in, depending on the machine
/// (no libcuda at all, a stub libcuda, a driver without devices...).
const DRIVER_LAYER: &[&str] = &[
    "libcuda-not-found",
    "libcuda-stub",
    "driver-not-loaded",
    "no-device-visible",
    "cuda-init-failed",
    "driver-library-mismatch",
    "device-unavailable",
    "system-not-ready",
    "forward-compat-unsupported",
    "driver-too-old",
];

fn gpu_machine() -> bool {
    std::env::var("CARGO_CUDA_TEST_GPU").as_deref() == Ok("1")
}

fn run(args: &[&str], envs: &[(&str, &str)]) -> (Output, Duration) {
    let mut cmd = Command::new(BIN);
    cmd.args(args);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let start = Instant::now();
    let out = cmd.output().expect("cuda-workload starts");
    (out, start.elapsed())
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "--json printed invalid JSON ({e}):\n{}",
            String::from_utf8_lossy(&o.stdout)
        )
    })
}

fn assert_no_panic(o: &Output) {
    let err = stderr(o);
    assert!(!err.contains("panicked"), "panicked:\n{err}");
}

#[test]
fn without_a_gpu_exits_fast_with_the_driver_diagnosis() {
    if gpu_machine() {
        eprintln!("skipped: this machine has a GPU (CARGO_CUDA_TEST_GPU=1)");
        return;
    }
    for args in [&[][..], &["--quick"][..], &["--json"][..]] {
        let (out, took) = run(args, &[]);
        assert_no_panic(&out);
        assert!(took < Duration::from_secs(2), "{args:?} took {took:?}");
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            DRIVER_LAYER
                .iter()
                .any(|c| err.contains(&format!("error[{c}]"))),
            "{args:?}: no driver-layer diagnosis in:\n{err}"
        );
        if args == ["--json"] {
            let j = json(&out);
            assert_eq!(j["ok"], false);
            let code = j["error"]["code"].as_str().unwrap();
            assert!(DRIVER_LAYER.contains(&code), "{code}");
        }
    }
}

#[test]
fn empty_or_invalid_visible_devices_is_refused() {
    for (value, needle) in [
        ("", "set but empty"),
        ("abc", "first entry `abc`"),
        ("-1", "first entry `-1`"),
    ] {
        let (out, took) = run(&["--json"], &[("CUDA_VISIBLE_DEVICES", value)]);
        assert_no_panic(&out);
        assert!(took < Duration::from_secs(2), "{value:?} took {took:?}");
        assert_eq!(out.status.code(), Some(3), "{value:?}");
        let j = json(&out);
        assert_eq!(j["error"]["code"], "no-device-visible", "{value:?}");
        assert!(stderr(&out).contains(needle), "{value:?}: {}", stderr(&out));
        assert!(
            j["results"].as_array().unwrap().is_empty(),
            "nothing may run"
        );
    }
}

#[test]
fn bad_sizes_are_refused_before_the_driver() {
    let cases: &[(&[&str], &str)] = &[
        (&["--size", "0"], "nothing to compute"),
        (&["--size", "1"], "too small"),
        (&["--size", "1000003"], "not a multiple of 4"), // a prime
        (&["--size", "12MB"], "is not a size"),
        (&["--gemm-size", "8191"], "not a multiple of 128"), // a prime
        (&["--gemm-size", "0"], "smaller than one"),
        (&["--verify-gemm-size", "1"], "smaller than one"),
        (&["--verify-gemm-size", "1048576"], "checked in full"), // 4 TiB of host floats
        (&["--size", "2^62"], "needs"), // 2^64 bytes per array: no device holds it
        (&["--iters", "0"], "nothing would be timed"),
    ];
    for (args, needle) in cases {
        // An empty CUDA_VISIBLE_DEVICES would be refused next: sizes come first.
        let (out, took) = run(args, &[("CUDA_VISIBLE_DEVICES", "")]);
        assert_no_panic(&out);
        assert!(took < Duration::from_secs(2), "{args:?}");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(needle),
            "{args:?}: expected {needle:?} in:\n{err}"
        );
        assert!(err.contains("help:"), "{args:?}: no help line:\n{err}");
    }
}

#[test]
fn help_names_the_exit_statuses() {
    let (out, _) = run(&["--help"], &[]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in ["--quick", "--json", "--force-arch-mismatch", "Exit status"] {
        assert!(text.contains(needle), "{needle}");
    }
}

#[test]
fn gpu_quick_run_verifies_vector_add() {
    if !gpu_machine() {
        eprintln!("skipped gpu_quick_run_verifies_vector_add: needs a GPU (CARGO_CUDA_TEST_GPU=1)");
        return;
    }
    let (out, _) = run(&["--quick", "--json"], &[]);
    assert_no_panic(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let j = json(&out);
    assert_eq!(j["ok"], true);
    let dev = &j["devices"][0];
    assert!(dev["sm_count"].as_u64().unwrap() > 0);
    assert!(dev["module"]["chosen"].is_string(), "{dev}");
    let row = &j["results"][0];
    assert_eq!(row["check"]["compared"], 50_000);
    assert_eq!(row["check"]["failures"], 0);
}

#[test]
fn gpu_missing_device_index_is_refused() {
    if !gpu_machine() {
        eprintln!(
            "skipped gpu_missing_device_index_is_refused: needs a GPU (CARGO_CUDA_TEST_GPU=1)"
        );
        return;
    }
    let (out, _) = run(&["--quick", "--json", "--device", "99"], &[]);
    assert_no_panic(&out);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(json(&out)["error"]["code"], "invalid-device-ordinal");
}

#[test]
fn gpu_mismatched_module_is_diagnosed() {
    if !gpu_machine() {
        eprintln!(
            "skipped gpu_mismatched_module_is_diagnosed: needs a GPU (CARGO_CUDA_TEST_GPU=1)"
        );
        return;
    }
    let (out, _) = run(&["--force-arch-mismatch", "--json"], &[]);
    assert_no_panic(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let j = json(&out);
    if j["arch_mismatch"].is_null() {
        eprintln!("this GPU runs the mismatch module's arch itself; nothing to check");
        return;
    }
    assert_eq!(j["arch_mismatch"]["agreed"], true, "{}", j["arch_mismatch"]);
    assert_eq!(
        j["arch_mismatch"]["predicted"],
        "no-kernel-image-for-device"
    );
    assert!(stderr(&out).contains("no-kernel-image-for-device"));
}
