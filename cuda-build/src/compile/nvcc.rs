//! Running nvcc: the wrapper (sccache), the child's environment, errors that
//! carry the exact command and stderr, and warnings for cargo.

use crate::env::{Env, Var};
use crate::Error;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// How nvcc is started: directly, or under a compiler cache.
#[derive(Debug, Clone)]
pub(crate) struct Runner {
    pub nvcc: PathBuf,
    /// `CUDA_BUILD_WRAPPER`, or `RUSTC_WRAPPER` when it names sccache.
    pub wrapper: Option<PathBuf>,
    pub timeout: Duration,
    /// NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS as the [`Env`] has them: the
    /// child sees exactly what went into the cache key.
    pub child_env: Vec<(&'static str, Option<OsString>)>,
}

/// The compiler cache to run nvcc under, if any.
pub(crate) fn wrapper(env: &Env) -> Option<PathBuf> {
    if let Some(w) = env.get_nonempty(Var::CudaBuildWrapper) {
        return Some(PathBuf::from(w.trim()));
    }
    let rustc = env.get_nonempty(Var::RustcWrapper)?;
    let p = PathBuf::from(rustc.trim());
    let stem = p.file_stem()?.to_string_lossy().to_ascii_lowercase();
    (stem == "sccache").then_some(p)
}

/// A failed nvcc run.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub command: String,
    pub status: String,
    pub stderr: String,
    pub timed_out: bool,
    /// Why nvcc (or its wrapper) could not start: a diagnosis code and the reason.
    pub spawn_error: Option<(&'static str, String)>,
}

impl Runner {
    pub(crate) fn new(env: &Env, nvcc: &Path) -> Runner {
        let child_env = [Var::NvccPrependFlags, Var::NvccAppendFlags]
            .iter()
            .map(|v| (v.name(), env.get_os(*v).map(|s| s.to_os_string())))
            .collect();
        Runner {
            nvcc: nvcc.to_path_buf(),
            wrapper: wrapper(env),
            timeout: crate::process::timeout_from_env(env, Duration::from_secs(300)),
            child_env,
        }
    }

    fn command(&self, args: &[OsString]) -> Command {
        let mut cmd = match &self.wrapper {
            Some(w) => {
                let mut c = Command::new(w);
                c.arg(&self.nvcc);
                c
            }
            None => Command::new(&self.nvcc),
        };
        cmd.args(args);
        for (name, value) in &self.child_env {
            match value {
                Some(v) => cmd.env(name, v),
                None => cmd.env_remove(name),
            };
        }
        cmd
    }

    /// The command as a shell would show it (for messages only; never run through a shell).
    pub(crate) fn display(&self, args: &[OsString]) -> String {
        let mut parts: Vec<String> = Vec::new();
        for (name, value) in &self.child_env {
            if let Some(v) = value {
                parts.push(format!("{name}={}", quote(&v.to_string_lossy())));
            }
        }
        if let Some(w) = &self.wrapper {
            parts.push(quote(&w.to_string_lossy()));
        }
        parts.push(quote(&self.nvcc.to_string_lossy()));
        parts.extend(args.iter().map(|a| quote(&a.to_string_lossy())));
        parts.join(" ")
    }

    /// Runs nvcc; Ok(stderr) on success.
    pub(crate) fn run(&self, args: &[OsString]) -> Result<String, Failure> {
        let mut cmd = self.command(args);
        let fail = |status: String, stderr: String, timed_out, spawn_error| Failure {
            command: self.display(args),
            status,
            stderr,
            timed_out,
            spawn_error,
        };
        match crate::process::run_command(&mut cmd, self.timeout) {
            Ok(out) if out.status.success() => Ok(out.combined()),
            Ok(out) => Err(fail(out.status.to_string(), out.combined(), false, None)),
            Err(crate::process::RunError::TimedOut { partial_output, .. }) => Err(fail(
                format!("killed after {:.0} s", self.timeout.as_secs_f64()),
                partial_output,
                true,
                None,
            )),
            Err(e) => {
                let code = match e {
                    crate::process::RunError::NotFound(_) => "nvcc-not-found",
                    _ => "nvcc-not-executable",
                };
                Err(fail(
                    "not started".into(),
                    String::new(),
                    false,
                    Some((code, e.to_string())),
                ))
            }
        }
    }
}

/// Quotes an argument for a pasteable command line (bash and zsh).
pub(crate) fn quote(s: &str) -> String {
    crate::process::shell_quote(s)
}

/// nvcc's warning lines (with the following context lines dropped), in order.
pub(crate) fn warnings(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .map(str::trim_end)
        .filter(|l| {
            let lower = l.to_ascii_lowercase();
            lower.contains("warning") && !lower.trim_start().starts_with("remark")
        })
        .map(str::to_string)
        .collect()
}

/// Maps an I/O error while writing `path` to an error with a fix.
pub(crate) fn write_error(path: &Path, e: &std::io::Error) -> Error {
    let shown = path.display();
    match e.raw_os_error() {
        Some(28) => Error::new(
            "disk-full",
            format!("no space left on device while writing `{shown}`"),
        )
        .with_detail(e.to_string())
        .with_help("free space on that file system (or point CARGO_TARGET_DIR / CUDA_BUILD_CACHE_DIR elsewhere), then build again; nothing partial was kept"),
        Some(13) | Some(1) | Some(30) => Error::new(
            "out-dir-not-writable",
            format!("cannot write `{shown}`: {e}"),
        )
        .with_help("make the directory writable (or choose another with CARGO_TARGET_DIR / Build::out_dir)"),
        _ => Error::new("write-failed", format!("cannot write `{shown}`: {e}"))
            .with_help("check the path, its permissions and the free space"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(
            quote("-gencode=arch=compute_90,code=[sm_90,compute_90]"),
            "'-gencode=arch=compute_90,code=[sm_90,compute_90]'"
        );
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn wrapper_rules() {
        let env = Env::empty().set(Var::RustcWrapper, "/usr/bin/sccache");
        assert_eq!(wrapper(&env), Some(PathBuf::from("/usr/bin/sccache")));
        let env = Env::empty().set(Var::RustcWrapper, "/usr/bin/clippy-driver");
        assert_eq!(wrapper(&env), None);
        let env = env.set(Var::CudaBuildWrapper, "ccache");
        assert_eq!(wrapper(&env), Some(PathBuf::from("ccache")));
    }

    #[test]
    fn warning_lines() {
        let s = "a.cu(3): warning #177-D: variable \"x\" was declared but never referenced\n    int x;\n        ^\n\nRemark: something\n";
        assert_eq!(
            warnings(s),
            ["a.cu(3): warning #177-D: variable \"x\" was declared but never referenced"]
        );
    }

    #[test]
    fn enospc_is_disk_full() {
        let e = write_error(
            Path::new("/o/k.fatbin"),
            &std::io::Error::from_raw_os_error(28),
        );
        assert_eq!(e.code, "disk-full");
        assert!(e.message.contains("/o/k.fatbin"));
    }
}
