//! A build killed for lack of host memory, in the words around it rather
//! than the compiler's own (`'cicc' died due to signal 9` has its rule in
//! rules.rs): `killed out of memory`, the kernel's `Out of memory: Killed
//! process 4242 (cicc)`, cargo's `(signal: 9, SIGKILL: kill)`, exit status
//! 137 in any tool's words (make's `Error 137`, ninja's `[code=137]`, a
//! translated message), gcc's `virtual memory exhausted`. The wording alone
//! cannot tell a compile from a program killed while running (a model loaded into RAM),
//! so each is a hint below 0.5 that becomes `compiler-killed` when the log
//! shows a build and no program running.

use super::codes::Code;
use super::scan::{Builder, Fact, Hit, LineCx};
use super::view::View;

/// Words that say the host ran out of memory or the process got SIGKILL.
const KILL_WORDS: &[&str] = &[
    "killed",
    "sigkill",
    "signal: 9",
    "signal 9",
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
    "137",
    "virtual memory exhausted",
    "out of memory allocating",
    "oom-kill",
    "oom_kill",
    "OOM killer",
    "oom killer",
    "oom-killer",
];

const KILLED_NOTE: &str = "A process was killed for lack of host memory (the kernel's out-of-memory killer, SIGKILL, exit status 137). In a build that is a compiler: nvcc's and cicc's memory grows with every architecture and template instance, and parallel jobs multiply it; in a running program it is the program's own RAM, not CUDA.";

/// Exit status 137 (128 + SIGKILL) in whatever words the tool reports it:
/// make's `Error 137`, ninja's `FAILED: [code=137]`, `exit status: 137`,
/// `returned 137`, or a translated message that ends in it (`…退出代码为 137`).
/// The number must stand alone: not ninja's `[137/230]`, a line number
/// (`a.cu:137`, `a.cu(137)`) or part of another number; and it must follow
/// an exit word, or end a line written in another language, whose words
/// cannot be listed.
fn exit_status_137(line: &str) -> bool {
    let translated = line.chars().any(|c| c.is_alphabetic() && !c.is_ascii());
    line.match_indices("137").any(|(at, _)| {
        let (before, after) = (&line[..at], &line[at + 3..]);
        let prev = before.chars().next_back();
        let mut next = after.chars();
        let glued_before = prev.is_some_and(|c| c.is_alphanumeric() || "._-:/(".contains(c));
        let glued_after = match next.next() {
            Some('.') => next.next().is_some_and(|c| c.is_ascii_digit()),
            Some(c) => c.is_alphanumeric() || "/:_-".contains(c),
            None => false,
        };
        if glued_before || glued_after {
            return false;
        }
        let words = before
            .trim_end_matches(|c: char| c.is_whitespace() || "=:[#(".contains(c))
            .to_ascii_lowercase();
        // A whole word: `opcode 137` or `src 137` is not an exit status.
        let exit_word = ["code", "status", "error", "returned", "exit", "rc"]
            .iter()
            .any(|w| {
                words
                    .strip_suffix(w)
                    .is_some_and(|rest| !rest.ends_with(|c: char| c.is_alphanumeric() || c == '_'))
            });
        let ends_line = after
            .chars()
            .all(|c| c.is_whitespace() || !c.is_alphanumeric());
        exit_word || (translated && ends_line)
    })
}

/// The host killed a process for memory (or with SIGKILL): a hint for
/// `compiler-killed`, raised in [`resolve`] when the log shows a build.
pub(crate) fn extract(cx: &mut LineCx) {
    if cx.gave(Code::CompilerKilled) || cx.line.contains("sccache") {
        return;
    }
    // An exit status says nothing of the GPU, whatever path the line names.
    if exit_status_137(cx.line) {
        cx.hit_as(Code::CompilerKilled, Fact::Note(KILLED_NOTE), 0.45);
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
    cx.hit_as(Code::CompilerKilled, Fact::Note(KILLED_NOTE), 0.45);
}

impl Builder {
    /// The builder a line shows, if any.
    fn in_line(l: &str) -> Option<Builder> {
        let has = |ps: &[&str]| ps.iter().any(|p| l.contains(p));
        if has(&[
            "CompilationFailed {",
            "cudaforge",
            " threads for compilation",
        ]) || counts_kernels(l)
        {
            Some(Builder::Cudaforge)
        } else if has(&["bindgen_cuda", "nvcc error while executing compiling"]) {
            Some(Builder::BindgenCuda)
        } else if has(&[
            "cuda-build:",
            "nvcc was killed while it compiled",
            "CUDA_BUILD_",
        ]) {
            Some(Builder::CudaBuild)
        } else if has(&[
            "torch/utils/cpp_extension",
            "torch.utils.cpp_extension",
            "TORCH_EXTENSION_NAME",
            "Building wheel",
            "setup.py",
            "build_ext",
        ]) {
            Some(Builder::TorchExtension)
        } else if has(&[
            "Building CUDA object",
            "cmake --build",
            "ninja: build stopped",
            "CMakeFiles",
        ]) {
            Some(Builder::Cmake)
        } else if has(&[
            "cargo build",
            "cargo install",
            "cargo run",
            "failed to run custom build command",
            "build-script-build",
        ]) {
            Some(Builder::Cargo)
        } else {
            None
        }
    }

    /// How to run fewer of its compiles at once.
    fn fewer_jobs(self) -> &'static str {
        match self {
            Builder::Cudaforge => "cudaforge runs its own pool of nvcc processes (half the cores by default), which cargo's -j and CARGO_BUILD_JOBS do not bound: set CUDAFORGE_THREADS=1 (or 2) for the build (it also reads RAYON_NUM_THREADS)",
            Builder::BindgenCuda => "bindgen_cuda runs one nvcc per physical core on its own rayon pool, which cargo's -j does not bound: set RAYON_NUM_THREADS=1 (or 2) for the build",
            Builder::CudaBuild => "cuda-build keeps its compiles within a memory budget (80% of the free memory or the container's limit) and compiles a file killed beside others again, alone: set CUDA_BUILD_MEMORY_BUDGET lower (e.g. 8G) when other build scripts or programs take memory at the same time; a file killed alone needs more free memory",
            Builder::TorchExtension => "PyTorch's extension build runs ninja with a job per core: set MAX_JOBS=1 (or 2); setups that pass `--threads` to nvcc (flash-attention's NVCC_THREADS, 4 by default) multiply each job's memory: set NVCC_THREADS=1 too",
            Builder::Cmake => "run fewer compiles at once: `cmake --build <dir> -j 2` (or CMAKE_BUILD_PARALLEL_LEVEL=2; `ninja -j 2`, `make -j 2`)",
            Builder::Cargo => "cargo's -j (CARGO_BUILD_JOBS=2) bounds only build scripts that take its jobserver; the kernel builders of candle and mistral.rs (cudaforge, bindgen_cuda) run their own pools of nvcc: set RAYON_NUM_THREADS=1 for the build (both read it; cudaforge also CUDAFORGE_THREADS)",
        }
    }
}

/// cudaforge's `Compiling 4 of 26 kernels` (or `PTX kernels`), not cargo's
/// `Compiling candle-kernels v0.11.1`.
fn counts_kernels(l: &str) -> bool {
    let Some((_, rest)) = l.split_once("Compiling ") else {
        return false;
    };
    let mut words = rest.split_whitespace();
    let number = |w: Option<&str>| w.is_some_and(|w| w.bytes().all(|b| b.is_ascii_digit()));
    number(words.next())
        && words.next() == Some("of")
        && number(words.next())
        && matches!(
            (words.next(), words.next()),
            (Some("kernels"), _) | (Some("PTX"), Some("kernels"))
        )
}

/// Literals that show a [`Builder`] (for the prefilter).
pub(crate) const BUILDER_TRIGGERS: &[&str] = &[
    "CompilationFailed {",
    "cudaforge",
    " threads for compilation",
    " kernels",
    "bindgen_cuda",
    "nvcc error while executing compiling",
    "cuda-build:",
    "nvcc was killed while it compiled",
    "CUDA_BUILD_",
    "cpp_extension",
    "TORCH_EXTENSION_NAME",
    "Building wheel",
    "setup.py",
    "build_ext",
    "Building CUDA object",
    "cmake --build",
    "ninja: build stopped",
    "CMakeFiles",
    "cargo build",
    "cargo install",
    "cargo run",
    "failed to run custom build command",
    "build-script-build",
];

/// Records the kernel builder a line shows.
pub(crate) fn builder(cx: &mut LineCx) {
    if let Some(b) = Builder::in_line(cx.line) {
        if !cx.scan.builders.contains(&b) {
            cx.scan.builders.push(b);
        }
    }
}

/// The fixes of `compiler-killed`: fewer compiles at once, in the words of
/// each kernel builder the log shows (cargo's, when it names none), then
/// more memory.
pub(super) fn explain(view: &View, d: &mut super::Diagnosis) {
    let builders = &view.scan.builders;
    let named: Vec<Builder> = builders
        .iter()
        .copied()
        .filter(|b| *b != Builder::Cargo)
        .collect();
    for b in &named {
        d.fix.push(b.fewer_jobs().into());
    }
    if named.is_empty() && builders.contains(&Builder::Cargo) {
        d.fix.push(Builder::Cargo.fewer_jobs().into());
    } else if builders.is_empty() {
        d.fix.push("run fewer compiles at once (`make -j 2`, `ninja -j 2`, `cmake --build <dir> -j 2`; MAX_JOBS=2 for PyTorch extensions; CARGO_BUILD_JOBS=2 for cargo, RAYON_NUM_THREADS=1 for cudaforge or bindgen_cuda): each nvcc stage can need gigabytes, and each architecture more".into());
    }
    d.fix.push(
        "add RAM or swap (or raise the container's memory limit), or split the largest .cu files"
            .into(),
    );
}

/// Literals that trigger [`compiler_out_of_memory`].
pub(crate) const COMPILER_OOM_TRIGGERS: &[&str] = &[
    "catastrophic error",
    "Memory allocation failure",
    "out of heap space",
    "C1060",
];

/// A compiler's own words for running out of host memory, which need no
/// build context: the EDG front end of cudafe++ and cicc (`catastrophic
/// error: out of memory`, MSBuild writes `catastrophic error : out of
/// memory`), ptxas (`ptxas fatal   : Memory allocation failure`), MSVC's
/// C1060 (`compiler is out of heap space`). The same cause and fixes as a
/// kill: too many or too heavy compiles at once for the host's memory.
pub(crate) fn compiler_out_of_memory(cx: &mut LineCx) {
    if cx.gave(Code::CompilerKilled) {
        return;
    }
    let lower = cx.line.to_ascii_lowercase();
    let front_end = lower.contains("catastrophic error") && lower.contains("out of memory");
    let ptxas = lower.contains("ptxas") && lower.contains("memory allocation failure");
    let msvc = lower.contains("c1060") || lower.contains("compiler is out of heap space");
    if !(front_end || ptxas || msvc) {
        return;
    }
    cx.hit_as(
        Code::CompilerKilled,
        Fact::Note("The compiler itself ran out of host memory (cudafe++/cicc's `catastrophic error: out of memory`, ptxas's `Memory allocation failure`, MSVC's C1060) instead of being killed for it: the same cause, too many or too heavy compiles at once for the machine's RAM. Template libraries (CUTLASS, cute, CUB, PyTorch's c10) and every extra architecture multiply each compile's memory."),
        0.85,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_are_known_by_their_own_words() {
        let cases = [
            ("warning: kernels@0.5.6: Using 64 threads for compilation", Some(Builder::Cudaforge)),
            ("warning: kernels@0.5.6: Compiling 52 of 52 kernels", Some(Builder::Cudaforge)),
            ("  cargo:warning=Compiling 3 of 16 PTX kernels", Some(Builder::Cudaforge)),
            (r#"Error: CompilationFailed { path: "src\affine.cu", message: "nvcc error:\n\n" }"#, Some(Builder::Cudaforge)),
            ("   Compiling candle-kernels v0.11.1", None),
            ("Compiling 2 of the kernels by hand", None),
            ("thread '<unnamed>' panicked at bindgen_cuda-0.1.4/src/lib.rs:262:21:", Some(Builder::BindgenCuda)),
            ("cuda-build: `cu/k1.cu` was killed after 474 ms", Some(Builder::CudaBuild)),
            ("[1/12] /usr/local/cuda/bin/nvcc -DTORCH_EXTENSION_NAME=flash_attn_2_cuda -c a.cu", Some(Builder::TorchExtension)),
            ("[  6%] Building CUDA object ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/argmax.cu.o", Some(Builder::Cmake)),
            ("error: failed to run custom build command for `candle-flash-attn v0.8.0`", Some(Builder::Cargo)),
            ("export MAX_JOBS=1", None),
        ];
        for (line, want) in cases {
            assert_eq!(Builder::in_line(line), want, "{line}");
        }
    }

    #[test]
    fn exit_status_137_is_known_in_any_wording_and_only_standing_alone() {
        let killed = [
            "make[2]: *** [src/CMakeFiles/ops.dir/build.make:76: src/CMakeFiles/ops.dir/attn.cu.o] Error 137",
            "FAILED: [code=137] src/CMakeFiles/ops.dir/attn.cu.o",
            "error: command '/usr/local/cuda/bin/nvcc' failed with exit status 137",
            "Process finished with exit code: 137",
            "subprocess.CalledProcessError: Command '['ninja', '-v']' returned 137.",
            "[build] 生成已完成，退出代码为 137",
            "Der Befehl wurde beendet, Rückgabewert 137",
        ];
        for line in killed {
            assert!(exit_status_137(line), "{line}");
        }
        let not = [
            "[137/230] Building CUDA object ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/mmq.cu.o",
            "kernel.cu:137:5: error: expected a \";\"",
            "kernel.cu(137): error: identifier \"foo\" is undefined",
            "error: exit status 1370",
            "CUDA error 13 at line 137 of main.cu, exit code 1",
            "Befehl in Zeile 137 fehlgeschlagen: Fehler 2",
            "tensor of shape [137, 4]",
            "ptx opcode 137 is reserved",
            "copied src 137 times",
        ];
        for line in not {
            assert!(!exit_status_137(line), "{line}");
        }
    }
}
