//! A failed nvcc as an error that explains itself: the exact command, nvcc's
//! output, and what the diagnosis engine makes of it.

use crate::compile::nvcc::runner::Failure;
use crate::compile::run::context::{Run, Tools};
use crate::compile::run::job::Job;
use cuda_toolchain::diagnose::Code;
use cuda_toolchain::toolkit::Toolkit;
use cuda_toolchain::Error;

impl Run<'_> {
    /// A failed nvcc call as an error: timed out, not started, or failed
    /// (a full disk behind "Could not write file" gets its own code), with
    /// the command, nvcc's output and the diagnosis engine's explanations.
    pub(crate) fn failure(&self, tools: &Tools, job: &Job, f: Failure) -> Error {
        let (code, message) = if f.timed_out {
            (
                "nvcc-timeout",
                format!(
                    "nvcc did not finish compiling `{}` ({})",
                    job.display, f.status
                ),
            )
        } else if let Some((code, e)) = &f.spawn_error {
            (
                *code,
                format!("nvcc could not be started for `{}`: {e}", job.display),
            )
        } else if f.killed {
            (
                Code::CompilerKilled.as_str(),
                format!(
                    "nvcc was killed while it compiled `{}` ({}): SIGKILL, which during a compile is almost always the kernel's out-of-memory killer",
                    job.display, f.status
                ),
            )
        } else {
            (
                "nvcc-failed",
                format!("nvcc failed to compile `{}` ({})", job.display, f.status),
            )
        };
        // nvcc's tools say "Could not write file" without the reason; find out whether it is space.
        if !f.timed_out
            && f.spawn_error.is_none()
            && looks_like_write_failure(&f.stderr)
            && self.out_of_space()
        {
            return Error::new(
                "disk-full",
                format!("no space left on device while nvcc compiled `{}` into `{}`", job.display, self.out_root.display()),
            )
            .with_detail(format!("command: {}", f.command))
            .with_detail(f.stderr.trim_end().to_string())
            .with_help("free space on that file system (or point CARGO_TARGET_DIR elsewhere), then build again; nothing partial was kept");
        }
        let mut err = Error::new(code, message).with_detail(format!("command: {}", f.command));
        if !f.stderr.trim().is_empty() {
            err = err.with_detail(f.stderr.trim_end().to_string());
        }
        // The message already says what a kill means; the log's `Killed`
        // would only say it again.
        let said = f.killed.then_some(Code::CompilerKilled);
        let explained = explain(&f.stderr, &tools.tk, &tools.other_toolkits, said);
        if !explained.is_empty() {
            err = err.with_detail(String::new());
            for e in explained {
                err = err.with_detail(e);
            }
        }
        if f.timed_out {
            err.with_help("raise CUDA_BUILD_TIMEOUT (seconds) if the kernel is that big, or look for a hung host compiler")
        } else if f.killed {
            // The pool adds what it tried (`run/pool.rs`): it ran the file alone.
            err.with_help("check with `dmesg | grep -i -E 'killed process|out of memory'` (or the container's OOM events)")
        } else {
            err.with_help("the command above reproduces the failure when run by hand")
        }
    }

    /// Whether OUT_DIR's file system is full: a 256 KiB probe write fails with ENOSPC.
    fn out_of_space(&self) -> bool {
        let probe = cuda_toolchain::fsutil::temp_path_for(&self.out_root.join("space-probe"));
        let r = cuda_toolchain::fsutil::write_atomic(&probe, &vec![0u8; 256 * 1024]);
        let _ = std::fs::remove_file(&probe);
        matches!(r, Err(e) if e.raw_os_error() == Some(28))
    }
}

fn looks_like_write_failure(stderr: &str) -> bool {
    let s = stderr.to_ascii_lowercase();
    [
        "could not write",
        "cannot write",
        "no space left",
        "write error",
        "error writing",
    ]
    .iter()
    .any(|p| s.contains(p))
}

/// Rendered explanations for a failed compile's output, most likely first,
/// without `said` (what the error itself already says). `others`: the
/// other installed toolkits, so a fix can name one that would work ("CUDA
/// 12.4 is installed at ...: set CUDA_HOME=...").
fn explain(stderr: &str, tk: &Toolkit, others: &[Toolkit], said: Option<Code>) -> Vec<String> {
    let mut toolkits = vec![tk.clone()];
    toolkits.extend(others.iter().cloned());
    let ctx = cuda_toolchain::diagnose::Context {
        toolkits,
        selected: Some(0),
        probe: None,
    };
    cuda_toolchain::diagnose::diagnose(stderr, &ctx)
        .iter()
        .filter(|d| Some(d.code) != said)
        .map(|d| cuda_toolchain::diagnose::render(d).trim_end().to_string())
        .collect()
}
