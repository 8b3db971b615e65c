//! A build killed for lack of host memory, in the words around it rather
//! than the compiler's own (`'cicc' died due to signal 9` has its rule in
//! rules.rs): `killed out of memory`, the kernel's `Out of memory: Killed
//! process 4242 (cicc)`, cargo's `(signal: 9, SIGKILL: kill)`, exit status
//! 137, gcc's `virtual memory exhausted`. The wording alone cannot tell a
//! compile from a program killed while running (a model loaded into RAM),
//! so each is a hint below 0.5 that becomes `compiler-killed` when the log
//! shows a build and no program running.

use super::codes::Code;
use super::scan::{Fact, Hit, LineCx};
use super::view::View;

/// Words that say the host ran out of memory or the process got SIGKILL.
const KILL_WORDS: &[&str] = &[
    "killed",
    "sigkill",
    "signal: 9",
    "signal 9",
    "exit code: 137",
    "exit status: 137",
    "exit status 137",
    "returned 137",
    "exited with code 137",
    "virtual memory exhausted",
    "out of memory allocating",
    "oom-kill",
    "oom_kill",
    "oom killer",
    "oom-killer",
];

/// Words that make a memory failure the GPU's (`out-of-memory`), not the host's.
const GPU_WORDS: &[&str] = &[
    "cuda", "gpu", "device", "vram", "cublas", "cudnn", "nvml", "hip",
];

/// Literals that trigger [`extract`] (the prefilter is case-sensitive).
pub(crate) const TRIGGERS: &[&str] = &[
    "killed",
    "SIGKILL",
    "signal: 9",
    "signal 9",
    "code: 137",
    "status: 137",
    "status 137",
    "returned 137",
    "code 137",
    "virtual memory exhausted",
    "out of memory allocating",
    "oom-kill",
    "oom_kill",
    "OOM killer",
    "oom killer",
    "oom-killer",
];

/// The host killed a process for memory (or with SIGKILL): a hint for
/// `compiler-killed`, raised in [`resolve`] when the log shows a build.
pub(crate) fn extract(cx: &mut LineCx) {
    if cx.gave(Code::CompilerKilled) || cx.line.contains("sccache") {
        return;
    }
    let lower = cx.line.to_ascii_lowercase();
    let Some(word) = KILL_WORDS.iter().find(|w| lower.contains(**w)) else {
        return;
    };
    // `killed` needs memory beside it: "killed by the user", "Killed
    // process" alone in a script's log are not this.
    let memory = lower.contains("out of memory") || lower.contains("oom");
    if *word == "killed" && !memory {
        return;
    }
    if GPU_WORDS.iter().any(|g| lower.contains(g)) {
        return;
    }
    cx.hit_as(
        Code::CompilerKilled,
        Fact::Note("A process was killed for lack of host memory (the kernel's out-of-memory killer, SIGKILL, exit status 137). In a build that is a compiler: nvcc's and cicc's memory grows with every architecture and template instance, and parallel jobs multiply it; in a running program it is the program's own RAM, not CUDA."),
        0.45,
    );
}

/// Context: lines that show a build running, and lines that show a built
/// program running (after which a kill is the program's).
pub(crate) fn context(cx: &mut LineCx) {
    let l = cx.line;
    let running = l.contains("Running `")
        || (l.contains("Finished ") && (l.contains("target(s)") || l.contains("profile")))
        || l.contains("Traceback (most recent call last)");
    if running {
        cx.scan.program_ran = true;
        return;
    }
    let nvcc_command = (l.contains("nvcc") || l.contains("NVCC"))
        && [
            " -c ",
            " -o ",
            "-gencode",
            "-arch",
            "--gpu-architecture",
            ".cu",
        ]
        .iter()
        .any(|p| l.contains(p));
    let build = [
        "cargo build",
        "cargo install",
        "cargo b ",
        "Building CUDA object",
        "Building CXX object",
        "Building NVCC",
        "cmake --build",
        "ninja: build stopped",
        "make: ***",
        "make[",
        "Building wheel",
        "setup.py build",
        "setup.py install",
        "setup.py bdist",
        "build_ext",
        "NVCC_THREADS",
        "MAX_JOBS",
    ]
    .iter()
    .any(|p| l.contains(p));
    // cargo's `   Compiling name v1.2.3` (the line arrives trimmed).
    let cargo_compiling = l.trim_start().starts_with("Compiling ") && l.contains(" v");
    if build || nvcc_command || cargo_compiling {
        cx.scan.building = true;
    }
}

/// Triggers for [`context`].
pub(crate) const CONTEXT_TRIGGERS: &[&str] = &[
    "Running `",
    "Finished ",
    "Traceback (most recent call last)",
    "nvcc",
    "NVCC",
    "cargo build",
    "cargo install",
    "cargo b ",
    "Compiling ",
    "Building CUDA object",
    "Building CXX object",
    "cmake --build",
    "ninja: build stopped",
    "make: ***",
    "make[",
    "Building wheel",
    "setup.py",
    "build_ext",
    "MAX_JOBS",
];

/// A kill hint in a log that shows a build and no program running is the
/// compiler; a hint anywhere else stays one.
pub(super) fn resolve(hit: &Hit, view: &View) -> Option<(Code, f32)> {
    let building = view.scan.building || view.scan.build_script.is_some();
    (hit.code == Code::CompilerKilled && hit.confidence < 0.5 && building && !view.scan.program_ran)
        .then_some((Code::CompilerKilled, 0.8))
}
