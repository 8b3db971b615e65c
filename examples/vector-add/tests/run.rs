//! The built `vector-add` binary: without a GPU it explains why and exits 1
//! within 2 s, without panicking; with one (`CARGO_CUDA_TEST_GPU=1`, set by
//! scripts/gpu-check.sh) it verifies all 50,000 sums.

use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_vector-add");

fn gpu_machine() -> bool {
    std::env::var("CARGO_CUDA_TEST_GPU").as_deref() == Ok("1")
}

#[test]
fn without_a_gpu_it_explains_and_exits_nonzero() {
    // An empty CUDA_VISIBLE_DEVICES hides every GPU, so this also holds on a
    // GPU machine; elsewhere the driver library itself is missing.
    let start = Instant::now();
    let out = Command::new(BIN)
        .env("CUDA_VISIBLE_DEVICES", "")
        .output()
        .expect("vector-add starts");
    let took = start.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    // The 2 s promise is for machines without a GPU; with one, loading the
    // real driver and asking nvidia-smi (for the diagnosis) take longer.
    let limit = Duration::from_secs(if gpu_machine() { 15 } else { 2 });
    assert!(took < limit, "took {took:?}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("error: no usable CUDA GPU"), "{err}");
    // The diagnosis engine's rendering: `error[<code>]: …` with a fix.
    assert!(err.contains("error[") && err.contains("help:"), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Test PASSED"));
}

#[test]
fn gpu_vector_add_passes() {
    if !gpu_machine() {
        eprintln!("skipped gpu_vector_add_passes: needs a GPU (CARGO_CUDA_TEST_GPU=1)");
        return;
    }
    let out = Command::new(BIN).output().expect("vector-add starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{}",
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("verified 50000 elements") && stdout.contains("Test PASSED"),
        "{stdout}"
    );
}
