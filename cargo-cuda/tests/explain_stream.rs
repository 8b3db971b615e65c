//! `cargo cuda explain` reads a log of any size in bounded memory, and still
//! finds a failure buried in the middle of it. Alone in its test binary:
//! the peak memory is read with getrusage(RUSAGE_CHILDREN), the largest of
//! this process's children.

mod common;

use std::io::Write;
use std::process::Stdio;

use common::{cargo_cuda, json};

/// The log, about `mib` MiB: a build's ordinary output, with an nvcc
/// failure in the middle.
fn write_log(mut w: impl Write, mib: usize) -> std::io::Result<()> {
    let filler: String = (0..64)
        .map(|i| format!("   Compiling crate-{i} v0.{i}.0 (/home/ci/work/vendor/crate-{i}) ok\n"))
        .collect();
    let pieces = mib * 1024 * 1024 / filler.len();
    for i in 0..pieces {
        if i == pieces / 2 {
            w.write_all(b"nvcc fatal   : Unsupported gpu architecture 'compute_35'\n")?;
        }
        w.write_all(filler.as_bytes())?;
    }
    Ok(())
}

#[test]
fn a_huge_log_through_a_pipe_in_bounded_memory() {
    // Large enough that reading it whole would show: 128 MiB.
    let mib = 128;
    let mut child = cargo_cuda()
        .args(["explain", "-", "--json", "--no-detect"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || write_log(std::io::BufWriter::new(stdin), mib));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let v = json(&out);
    assert_eq!(
        v["diagnoses"][0]["code"], "arch-dropped-by-nvcc",
        "the failure in the middle: {v:#}"
    );
    // SAFETY: getrusage writes into the zeroed struct it is given.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_CHILDREN, &mut u), 0);
        u
    };
    let peak_mib = usage.ru_maxrss as usize / 1024; // kilobytes on Linux
    assert!(
        peak_mib < 64,
        "explain held {peak_mib} MiB for a {mib} MiB log: memory must not grow with the log"
    );
}
