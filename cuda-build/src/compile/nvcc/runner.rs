//! Running nvcc: the wrapper (sccache), the child's environment, errors that
//! carry the exact command and stderr, and warnings for cargo.

use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::process::tree_memory::Watch;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long one nvcc may run before its process tree is killed (`CUDA_BUILD_TIMEOUT` overrides).
pub(crate) const NVCC_TIMEOUT: Duration = Duration::from_secs(3600);

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
    /// The wrapper is a usable sccache: its nvcc fixes apply and its own
    /// failures fall back to plain nvcc (see [`super::sccache`]).
    pub sccache: bool,
    /// One-line notices for cargo (sccache skipped or bypassed), drained by the caller.
    pub notices: Arc<Mutex<Vec<String>>>,
    /// The deadline of one compile under sccache (see [`crate::compile::nvcc::sccache::stall_deadline`]).
    pub sccache_deadline: Duration,
    /// Set when sccache stalled once: the rest of this build runs plain nvcc.
    pub sccache_off: Arc<AtomicBool>,
    /// The directory nvcc runs in (the package root, so paths can be relative).
    pub cwd: PathBuf,
    /// nvcc's TMPDIR: a job's own temporary directory, removed with it, so the
    /// `tmpxft_*` files of a killed nvcc do not pile up in /tmp.
    pub tmpdir: Option<PathBuf>,
    /// The pool's view of this job's memory, and its way to stop it
    /// (`schedule.rs`); None outside the pool.
    pub watch: Option<Arc<Watch>>,
}

/// The variable that set the wrapper, for messages.
fn wrapper_var(env: &Env) -> &'static str {
    if env.get_nonempty(Var::CudaBuildWrapper).is_some() {
        Var::CudaBuildWrapper.name()
    } else {
        Var::RustcWrapper.name()
    }
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

/// A finished nvcc run.
#[derive(Debug, Clone)]
pub(crate) struct Ran {
    /// What it printed (stdout, then stderr).
    pub output: String,
    /// The peak resident memory of its process tree, in bytes
    /// (`cuda_toolchain::process::tree_memory`); None when it ran under
    /// sccache, whose server, not this tree, runs the compile.
    pub peak_memory: Option<u64>,
}

/// A failed nvcc run.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub command: String,
    pub status: String,
    pub stderr: String,
    pub timed_out: bool,
    /// nvcc, or a stage it ran (exit status 137, as its shell reports a
    /// SIGKILLed child), was killed by SIGKILL that no timeout sent: the
    /// out-of-memory killer, almost always.
    pub killed: bool,
    /// Why nvcc (or its wrapper) could not start: a diagnosis code and the reason.
    pub spawn_error: Option<(&'static str, String)>,
    /// It ran without the wrapper (sccache was skipped or bypassed).
    pub plain: bool,
}

impl Runner {
    pub(crate) fn new(env: &Env, nvcc: &Path, cwd: &Path) -> Runner {
        let child_env = [Var::NvccPrependFlags, Var::NvccAppendFlags]
            .iter()
            .map(|v| (v.name(), env.get_os(*v).map(|s| s.to_os_string())))
            .collect();
        // A backstop against a hung nvcc, not a budget: one real kernel can
        // compile for minutes alone (CUTLASS instances, flash-attention), and
        // a loaded CI runner multiplies that. 300 s killed candle-kernels'
        // mmq_instance_q2_k.cu on a busy 2-core machine.
        let timeout = cuda_toolchain::process::timeout_from_env(env, NVCC_TIMEOUT);
        // nvcc runs in `cwd`: a relative nvcc path must not change meaning.
        let nvcc = if nvcc.is_relative() && nvcc.components().count() > 1 {
            std::env::current_dir().unwrap_or_default().join(nvcc)
        } else {
            nvcc.to_path_buf()
        };
        let mut runner = Runner {
            nvcc,
            wrapper: wrapper(env),
            timeout,
            child_env,
            sccache: false,
            notices: Arc::default(),
            sccache_deadline: crate::compile::nvcc::sccache::stall_deadline(env, timeout),
            sccache_off: Arc::default(),
            cwd: cwd.to_path_buf(),
            tmpdir: None,
            watch: None,
        };
        runner.check_sccache(env);
        runner
    }

    /// An sccache that cannot run, or cannot cache nvcc, is dropped with one
    /// notice: the build goes on with plain nvcc rather than failing or
    /// passing every compile through a wrapper that only forwards it.
    fn check_sccache(&mut self, env: &Env) {
        let Some(w) = self
            .wrapper
            .clone()
            .filter(|w| crate::compile::nvcc::sccache::is_sccache(w))
        else {
            return;
        };
        let var = wrapper_var(env);
        let why = match crate::compile::nvcc::sccache::probe(&w, Duration::from_secs(30)) {
            Ok(p) if p.caches_nvcc() => match crate::compile::nvcc::sccache::server_answers(&w) {
                Ok(()) => {
                    crate::compile::nvcc::sccache::start_server(&w);
                    self.sccache = true;
                    return;
                }
                Err(e) => e,
            },
            Ok(p) => format!(
                "sccache {} is older than {} and cannot cache nvcc; upgrade it (e.g. `cargo install sccache`)",
                p.version,
                crate::compile::nvcc::sccache::MIN_VERSION_FOR_NVCC
            ),
            Err(e) => format!("{e}; install sccache or fix {var}"),
        };
        self.wrapper = None;
        self.notice(format!(
            "cuda-build: {var}={} is not used: {why}; compiling with plain nvcc (no sccache caching)",
            w.display()
        ));
    }

    fn notice(&self, n: String) {
        if let Ok(mut ns) = self.notices.lock() {
            if !ns.contains(&n) {
                ns.push(n);
            }
        }
    }

    /// The notices so far (each once).
    pub(crate) fn take_notices(&self) -> Vec<String> {
        self.notices
            .lock()
            .map(|mut n| std::mem::take(&mut *n))
            .unwrap_or_default()
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
        if self.sccache && self.wrapper.is_some() {
            cmd.args(crate::compile::nvcc::sccache::extra_args(args));
        }
        if !self.cwd.as_os_str().is_empty() {
            cmd.current_dir(&self.cwd);
        }
        if let Some(t) = &self.tmpdir {
            cmd.env("TMPDIR", t);
        }
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
        if !self.cwd.as_os_str().is_empty() {
            parts.push(format!("cd {} &&", quote(&self.cwd.to_string_lossy())));
        }
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
        if self.sccache && self.wrapper.is_some() {
            let extra = crate::compile::nvcc::sccache::extra_args(args);
            parts.extend(extra.iter().map(|a| quote(&a.to_string_lossy())));
        }
        parts.join(" ")
    }

    /// The command of a failure `f` with these arguments, as it really ran
    /// (without the wrapper when sccache was bypassed).
    pub(crate) fn display_failed(&self, f: &Failure, args: &[OsString]) -> String {
        if f.plain {
            Runner {
                wrapper: None,
                sccache: false,
                ..self.clone()
            }
            .display(args)
        } else {
            self.display(args)
        }
    }

    /// Runs nvcc; what it printed and its tree's peak memory on success.
    /// Under sccache, a failure that is sccache's own (not a compile error)
    /// is retried once with plain nvcc.
    pub(crate) fn run(&self, args: &[OsString]) -> Result<Ran, Failure> {
        if !self.sccache || self.wrapper.is_none() {
            // No wrapper, or another one (ccache, a script): run as set.
            return self.run_once(args);
        }
        let plain = Runner {
            wrapper: None,
            sccache: false,
            ..self.clone()
        };
        if self.sccache_off.load(Ordering::Relaxed) {
            return plain.run_once(args);
        }
        let under_sccache = Runner {
            timeout: self.sccache_deadline,
            ..self.clone()
        };
        let r = under_sccache.run_once(args);
        let Err(f) = &r else { return r };
        let source = args.last().map(|s| s.to_string_lossy()).unwrap_or_default();
        if f.timed_out {
            // A storage backend or scheduler that stopped answering makes
            // sccache wait (60 s per step for a dead Redis): stop using it.
            self.sccache_off.store(true, Ordering::Relaxed);
            self.notice(format!(
                "cuda-build: sccache did not finish `{source}` within {} (a cache backend or sccache-dist scheduler that stopped answering?); it was compiled with plain nvcc, and the rest of this build runs without sccache (CUDA_BUILD_TIMEOUT sets this limit)",
                cuda_toolchain::process::show_duration(self.sccache_deadline)
            ));
            return plain.run_once(args);
        }
        let cause = match &f.spawn_error {
            Some((_, why)) => why.clone(),
            None => match crate::compile::nvcc::sccache::own_failure(&f.stderr) {
                Some(line) => line,
                None => return r,
            },
        };
        let r = plain.run_once(args);
        if r.is_ok() {
            self.notice(format!(
                "cuda-build: sccache failed on `{source}` ({cause}); compiled with plain nvcc instead (not cached)"
            ));
        }
        r
    }

    fn run_once(&self, args: &[OsString]) -> Result<Ran, Failure> {
        let mut cmd = self.command(args);
        let fail = |status: String, stderr: String, timed_out, spawn_error| Failure {
            command: self.display(args),
            status,
            stderr,
            timed_out,
            killed: false,
            spawn_error,
            plain: self.wrapper.is_none(),
        };
        // Under sccache the compile runs in its server, outside this tree.
        let measured = !(self.sccache && self.wrapper.is_some());
        let ran = match &self.watch {
            Some(w) => cuda_toolchain::process::run_command_watched(&mut cmd, self.timeout, w),
            None => cuda_toolchain::process::run_command_measured(&mut cmd, self.timeout),
        };
        match ran {
            Ok(out) if out.status.success() => Ok(Ran {
                output: out.combined(),
                peak_memory: out.peak_memory.filter(|_| measured),
            }),
            Ok(out) => Err(Failure {
                killed: killed_by_sigkill(&out.status),
                ..fail(out.status.to_string(), out.combined(), false, None)
            }),
            Err(cuda_toolchain::process::RunError::TimedOut { partial_output, .. }) => Err(fail(
                format!(
                    "killed after {}",
                    cuda_toolchain::process::show_duration(self.timeout)
                ),
                partial_output,
                true,
                None,
            )),
            // The pool discards this attempt and compiles the job again later.
            Err(cuda_toolchain::process::RunError::Stopped(_)) => Err(fail(
                "stopped to keep the memory budget".into(),
                String::new(),
                false,
                None,
            )),
            Err(e) => {
                let code = match e {
                    cuda_toolchain::process::RunError::NotFound(_) => "nvcc-not-found",
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

/// Whether a finished nvcc died of SIGKILL, or reported that a stage did:
/// nvcc 13.0 then prints `Killed` and exits 128 + 9, as a shell reports a
/// killed child (seen when a cgroup's OOM killer stopped cicc).
fn killed_by_sigkill(status: &std::process::ExitStatus) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if status.signal() == Some(9) {
            return true;
        }
    }
    status.code() == Some(137)
}

/// Quotes an argument for a pasteable command line (bash and zsh).
pub(crate) fn quote(s: &str) -> String {
    cuda_toolchain::process::shell_quote(s)
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

    /// A limit under a second is reported as set, not as "0 s".
    #[cfg(unix)]
    #[test]
    fn a_sub_second_limit_is_reported_as_set() {
        let env = Env::empty().set(Var::CudaBuildTimeout, "300ms");
        let runner = Runner::new(&env, Path::new("/bin/sleep"), Path::new(""));
        let f = runner.run(&["30".into()]).unwrap_err();
        assert!(f.timed_out, "{f:?}");
        assert_eq!(f.status, "killed after 300 ms");
    }

    #[test]
    fn warning_lines() {
        let s = "a.cu(3): warning #177-D: variable \"x\" was declared but never referenced\n    int x;\n        ^\n\nRemark: something\n";
        assert_eq!(
            warnings(s),
            ["a.cu(3): warning #177-D: variable \"x\" was declared but never referenced"]
        );
    }
}
