//! Throughput of `diagnose::diagnose` on large logs: prints a table.
//!
//! `cargo bench -p cuda-build --bench diagnose` (add `-- 1000` for a 1 GB run).
//! Each shape is run at 1, 10 and 100 MB (or up to the size given); the time
//! per MB must stay flat as the size grows (linear time).

use cuda_toolchain::diagnose::{diagnose, Context};
use std::time::Instant;

const NOISE: &str = "   Compiling serde v1.0.210\n    Checking regex-automata v0.4.8\n  running: \"cc\" \"-O3\" \"-c\" \"src/lib.c\"\nwarning: unused variable: `x`\n  --> src/main.rs:3:9\n";
const TRIGGERS: &str = "nvcc fatal   : Unsupported gpu architecture 'compute_89'\nptxas /tmp/tmpxft_1_va.ptx, line 9; fatal   : Unsupported .version 9.5; current version is '9.0'\n\u{1b}[1mRuntimeError: CUDA error: no kernel image is available for execution on the device\u{1b}[0m\r\nDriverError(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, \"the provided PTX was compiled with an unsupported toolchain.\")\nCUDA error 999 unknown error\n";

/// Fills `mb` megabytes with `unit(i)` for i = 0, 1, ..., with one real error
/// in the middle.
fn build(unit: &dyn Fn(usize) -> String, mb: usize, newlines: bool) -> String {
    let target = mb << 20;
    let mut s = String::with_capacity(target + 4096);
    let mut i = 0;
    while s.len() < target / 2 {
        s.push_str(&unit(i));
        i += 1;
    }
    s.push_str(if newlines { "\n" } else { " " });
    s.push_str("nvcc fatal   : Value 'sm_35' is not defined for option 'gpu-architecture'");
    s.push_str(if newlines { "\n" } else { " " });
    while s.len() < target {
        s.push_str(&unit(i));
        i += 1;
    }
    s
}

/// Trigger lines that all differ (as in a real log: paths, line numbers), so
/// skipping repeated lines does not help.
fn distinct(i: usize) -> String {
    format!(
        "ptxas /tmp/tmpxft_{i:08x}_k.ptx, line {i}; error   : Feature 'cp.async.bulk' requires .target sm_90 or higher\n\
         kernel_{i}.cu(12): CUDA error 700 at cudaMemcpy: an illegal memory access was encountered\n"
    )
}

/// Name, line generator, whether lines end in newlines.
type Shape<'a> = (&'a str, &'a dyn Fn(usize) -> String, bool);

fn main() {
    let max_mb: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100);
    let ctx = Context::default();
    let one_line = "x".repeat(4096) + " CUDA_ERROR_ ";
    let noise = |_| NOISE.to_string();
    let triggers = |_| TRIGGERS.to_string();
    let long = |_| one_line.clone();
    // Bad input: trigger words back to back on one line (10^6 at 12 MB), and
    // binary garbage read lossily as the CLI does.
    let soup = |_| "CUDA_ERROR_ ".repeat(1024);
    let garbage = |i: usize| {
        let bytes: Vec<u8> = (0..4096usize)
            .map(|j| ((i * 4096 + j).wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let shapes: [Shape; 6] = [
        ("cargo noise, one error", &noise, true),
        ("repeated trigger lines", &triggers, true),
        ("distinct trigger lines", &distinct, true),
        ("one line, no newlines", &long, false),
        ("one line of trigger words", &soup, false),
        ("binary garbage", &garbage, false),
    ];
    println!(
        "{:<26} {:>8} {:>10} {:>10} {:>10}",
        "shape", "MB", "ms", "MB/s", "found"
    );
    for (name, unit, newlines) in &shapes {
        let mut mb = 1;
        while mb <= max_mb {
            let text = build(*unit, mb, *newlines);
            let start = Instant::now();
            let found = diagnose(&text, &ctx);
            let ms = start.elapsed().as_secs_f64() * 1e3;
            let size = text.len() as f64 / (1 << 20) as f64;
            println!(
                "{:<26} {:>8.0} {:>10.1} {:>10.0} {:>10}",
                name,
                size,
                ms,
                size / (ms / 1e3),
                found.len()
            );
            mb *= 10;
        }
    }
}
