//! Running child processes (nvcc, nvidia-smi, probes) without a shell and
//! never without a time limit.
//!
//! A hung nvcc or a wedged driver must not hang a build, so every child runs
//! under a deadline and is killed when it passes. Arguments are always a
//! vector; nothing here goes through `sh -c`.
//!
//! **Which processes are a child's.** Every child gets a mark of its own in
//! its environment ([`JOB_MARK`]), which everything it starts inherits. A
//! process that was double-forked (`( sleep 300 & )`) is reparented to init
//! and no /proc parent link leads to it any more, but it still carries the
//! mark. When the child times out, or exits with a failure, every process
//! that is below it or carries its mark is ended (`end_job`). Not ended: a
//! marked process that started a session of its own (`setsid`), which is
//! how a daemon such as sccache's server leaves the job on purpose.
//!
//! Children stay in the caller's process group, so a terminal's Ctrl-C (sent
//! to the foreground group: cargo, its build scripts and their nvcc alike)
//! still reaches every one of them directly.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub mod tree_memory;

/// What a finished child printed and how it ended.
#[derive(Debug, Clone)]
pub struct Output {
    /// The exit status.
    pub status: ExitStatus,
    /// Standard output, decoded lossily as UTF-8.
    pub stdout: String,
    /// Standard error, decoded lossily as UTF-8.
    pub stderr: String,
    /// How long the child ran.
    pub elapsed: Duration,
    /// The peak resident memory of the child's whole process tree, in bytes
    /// ([`run_command_measured`], Linux only; None otherwise).
    pub peak_memory: Option<u64>,
}

impl Output {
    /// Standard output followed by standard error.
    pub fn combined(&self) -> String {
        let mut s = self.stdout.clone();
        if !s.is_empty() && !s.ends_with('\n') {
            s.push('\n');
        }
        s.push_str(&self.stderr);
        s
    }
}

/// Why a child could not be run to completion.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunError {
    /// The program does not exist.
    NotFound(PathBuf),
    /// The program exists but may not be executed.
    PermissionDenied(PathBuf),
    /// Spawning failed for another reason (for example a bad ELF header).
    Spawn(PathBuf, String),
    /// The child ran past its deadline and was killed.
    TimedOut {
        /// The program.
        program: PathBuf,
        /// The deadline it passed.
        after: Duration,
        /// Whatever it had printed by then.
        partial_output: String,
    },
    /// Its [`tree_memory::Watch`] asked for a stop: the child's tree was
    /// ended, or the child was not started.
    Stopped(PathBuf),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::NotFound(p) => write!(f, "`{}` was not found", p.display()),
            RunError::PermissionDenied(p) => {
                write!(f, "`{}` is not executable (permission denied)", p.display())
            }
            RunError::Spawn(p, e) => write!(f, "`{}` could not be started: {e}", p.display()),
            RunError::TimedOut { program, after, .. } => write!(
                f,
                "`{}` did not finish within {} and was killed",
                program.display(),
                show_duration(*after)
            ),
            RunError::Stopped(p) => write!(f, "`{}` was stopped by its caller", p.display()),
        }
    }
}

impl std::error::Error for RunError {}

/// Runs `program args...` with no stdin, capturing output, killing it after `timeout`.
///
/// ```no_run
/// use std::time::Duration;
/// let out = cuda_toolchain::process::run("nvcc", ["--version"], Duration::from_secs(10)).unwrap();
/// assert!(out.status.success());
/// ```
pub fn run<I, S>(program: impl AsRef<Path>, args: I, timeout: Duration) -> Result<Output, RunError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut cmd = Command::new(program.as_ref());
    cmd.args(args);
    run_command(&mut cmd, timeout)
}

/// Runs a prepared [`Command`] under a deadline; stdin is closed, stdout and stderr captured.
///
/// When the child passes its deadline, or exits with a failure, every
/// process it started is ended too, double-forked ones included (see the
/// module docs); a successful child's daemons are left alone.
pub fn run_command(cmd: &mut Command, timeout: Duration) -> Result<Output, RunError> {
    run_inner(cmd, timeout, false, None)
}

/// [`run_command`], also measuring the peak resident memory of the child's
/// whole process tree ([`Output::peak_memory`]; how: [`tree_memory`]).
pub fn run_command_measured(cmd: &mut Command, timeout: Duration) -> Result<Output, RunError> {
    run_inner(cmd, timeout, true, None)
}

/// [`run_command_measured`], also sharing the live measurement through
/// `watch` while the child runs, and ending the child's whole tree soon
/// after [`Watch::request_stop`](tree_memory::Watch::request_stop)
/// ([`RunError::Stopped`]; a stop asked before the start starts nothing).
pub fn run_command_watched(
    cmd: &mut Command,
    timeout: Duration,
    watch: &std::sync::Arc<tree_memory::Watch>,
) -> Result<Output, RunError> {
    run_inner(cmd, timeout, true, Some(watch))
}

fn run_inner(
    cmd: &mut Command,
    timeout: Duration,
    measure: bool,
    watch: Option<&std::sync::Arc<tree_memory::Watch>>,
) -> Result<Output, RunError> {
    let program = PathBuf::from(cmd.get_program());
    if let Some(w) = watch.filter(|w| w.stop_requested()) {
        w.mark_stopped();
        return Err(RunError::Stopped(program));
    }
    let mark = new_mark();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env(JOB_MARK, &mark);
    let start = Instant::now();
    let mut child = spawn_retrying_busy(cmd).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => RunError::NotFound(program.clone()),
        std::io::ErrorKind::PermissionDenied => RunError::PermissionDenied(program.clone()),
        _ => RunError::Spawn(program.clone(), e.to_string()),
    })?;

    // Readers run on their own threads so a chatty child cannot fill a pipe and stall.
    let stdout_rx = spawn_reader(child.stdout.take());
    let stderr_rx = spawn_reader(child.stderr.take());

    let mut exited = exit_signal(child.id());
    let mut sampler = measure.then(|| tree_memory::Sampler::start(child.id(), watch.cloned()));
    // A watched child is checked for a stop at the sampling interval.
    let wake = match watch {
        Some(_) => tree_memory::INTERVAL,
        None => Duration::from_secs(1),
    };
    let mut sleep = Duration::from_millis(1);
    let (status, single_peak) = loop {
        match tree_memory::try_wait(&mut child, measure) {
            Ok(Some(done)) => break done,
            Ok(None) => {}
            Err(e) => return Err(RunError::Spawn(program, e.to_string())),
        }
        let left = timeout.saturating_sub(start.elapsed());
        // nvcc's cicc and ptxas are grandchildren: the whole job goes, not just nvcc.
        let mut end_tree = |child: &mut std::process::Child| {
            drop(sampler.take());
            end_job(Some(child.id()), &mark);
            let _ = child.kill();
            let _ = child.wait();
        };
        if let Some(w) = watch.filter(|w| w.stop_requested()) {
            end_tree(&mut child);
            w.mark_stopped();
            return Err(RunError::Stopped(program));
        }
        if left.is_zero() {
            end_tree(&mut child);
            // A grandchild may still hold the pipes open: collect what is there, briefly.
            let out = collect(&stdout_rx, Duration::from_millis(200));
            let err = collect(&stderr_rx, Duration::from_millis(200));
            return Err(RunError::TimedOut {
                program,
                after: timeout,
                partial_output: format!("{out}{err}"),
            });
        }
        match &exited {
            // Woken at the exit itself: a polling interval would add up to
            // its length to every compile. The cap bounds a lost wake-up.
            Some(rx) => match rx.recv_timeout(left.min(wake)) {
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                _ => exited = None,
            },
            None => {
                std::thread::sleep(sleep.min(left));
                sleep = (sleep * 2).min(Duration::from_millis(20));
            }
        }
    };
    let elapsed = start.elapsed();
    let peak_memory = sampler
        .map(|s| s.stop())
        .map(|tree| tree.max(single_peak.unwrap_or(0)));
    // The watch's peak is the run's, short steps between samples included.
    if let (Some(w), Some(peak)) = (watch, peak_memory) {
        w.record(0, peak);
    }
    if !status.success() {
        // A failed compile's leftovers (reparented, so found by the mark only).
        end_job(None, &mark);
    }
    // Grandchildren that outlive the child (and keep the pipe open) must not hang us.
    let grace = Duration::from_secs(2);
    Ok(Output {
        status,
        stdout: collect(&stdout_rx, grace),
        stderr: collect(&stderr_rx, grace),
        elapsed,
        peak_memory,
    })
}

/// A channel that is sent to when the child exits. The waiting thread uses
/// `waitid(WNOWAIT)`, which does not reap: the pid stays the child's until
/// `try_wait` reaps it, so a timeout's `kill_tree` can never hit a reused pid.
/// None where that call does not exist (the caller then polls).
fn exit_signal(pid: u32) -> Option<mpsc::Receiver<()>> {
    #[cfg(target_os = "linux")]
    {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            loop {
                // SAFETY: a zeroed siginfo_t is a valid out-parameter.
                let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
                // SAFETY: waitid only writes into `info`.
                let r = unsafe {
                    libc::waitid(
                        libc::P_PID,
                        pid as libc::id_t,
                        &mut info,
                        libc::WEXITED | libc::WNOWAIT,
                    )
                };
                let interrupted = r != 0
                    && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted;
                if !interrupted {
                    break;
                }
            }
            let _ = tx.send(());
        });
        Some(rx)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

/// Spawns, retrying briefly on ETXTBSY ("Text file busy").
///
/// A script written just before it is run (a wrapper, a generated helper) can
/// be busy for a moment: another thread's child, forked while the file was
/// still open for writing, holds that descriptor until it execs.
pub fn spawn_retrying_busy(cmd: &mut Command) -> std::io::Result<std::process::Child> {
    const ETXTBSY: i32 = 26;
    let mut attempt = 0;
    loop {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(ETXTBSY) && attempt < 8 => {
                attempt += 1;
                std::thread::sleep(Duration::from_millis(5 << attempt.min(5)));
            }
            other => return other,
        }
    }
}

/// Reads a pipe on its own thread, sending each chunk as it arrives, so what
/// the child printed is kept even when a grandchild holds the pipe open.
fn spawn_reader<R: Read + Send + 'static>(pipe: Option<R>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    if let Some(mut pipe) = pipe {
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        });
    }
    rx
}

/// Everything read until the pipe closes, or until `wait` has passed.
fn collect(rx: &mpsc::Receiver<Vec<u8>>, wait: Duration) -> String {
    let deadline = Instant::now() + wait;
    let mut bytes = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            // Closed (all read) or out of time: keep what came.
            Err(_) => break,
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The environment variable that marks every process one child started
/// (see the module docs); its value is unique to that child.
pub const JOB_MARK: &str = "CUDA_TOOLCHAIN_JOB";

/// A mark no other child of any process has: our pid, a counter, the time.
fn new_mark() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}-{}-{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Kills a process and every descendant it has started that /proc's parent
/// links still lead to; [`run_command`] also ends the double-forked ones.
///
/// Each process is stopped first (SIGSTOP), so nothing in the tree can fork a
/// new child between the listing and the kill; then all get SIGKILL. The tree
/// stays in the caller's process group, so a terminal's Ctrl-C still reaches
/// every member on its own. Outside Linux only `root` itself is killed.
pub fn kill_tree(root: u32) {
    stop_then_kill(|| descendants(root), Some(root));
}

/// Ends one child's job: `root` (while it is still running) and everything
/// below it, and every process of our session that carries `mark` in its
/// environment, however it was reparented. Stopped first, then killed, like
/// [`kill_tree`].
fn end_job(root: Option<u32>, mark: &str) {
    let entry = format!("{JOB_MARK}={mark}");
    stop_then_kill(
        || {
            let mut found = root.map(descendants).unwrap_or_default();
            for p in marked(entry.as_bytes()) {
                if !found.contains(&p) {
                    found.push(p);
                }
            }
            found
        },
        root,
    );
}

/// Every live descendant of `root` (Linux: from /proc; elsewhere none).
fn descendants(root: u32) -> Vec<u32> {
    #[cfg(target_os = "linux")]
    return linux::descendants(root);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = root;
        Vec::new()
    }
}

/// Every process of our session whose environment holds `entry` (Linux:
/// from /proc; elsewhere none).
fn marked(entry: &[u8]) -> Vec<u32> {
    #[cfg(target_os = "linux")]
    return linux::marked(entry);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = entry;
        Vec::new()
    }
}

/// SIGSTOPs `root` and whatever `members` lists, again until the listing
/// finds no one new, then SIGKILLs them all.
fn stop_then_kill(members: impl Fn() -> Vec<u32>, root: Option<u32>) {
    #[cfg(unix)]
    {
        let signal = |pid: u32, sig: libc::c_int| {
            if let Ok(pid) = libc::pid_t::try_from(pid) {
                // SAFETY: kill(2) with a positive pid read from /proc (or our
                // unreaped child's) and a constant signal.
                unsafe { libc::kill(pid, sig) };
            }
        };
        let mut stopped: Vec<u32> = Vec::new();
        if let Some(r) = root {
            signal(r, libc::SIGSTOP);
            stopped.push(r);
        }
        loop {
            let fresh: Vec<u32> = members()
                .into_iter()
                .filter(|p| !stopped.contains(p) && *p != std::process::id())
                .collect();
            if fresh.is_empty() {
                break;
            }
            for &pid in &fresh {
                signal(pid, libc::SIGSTOP);
            }
            stopped.extend(fresh);
        }
        for &pid in &stopped {
            signal(pid, libc::SIGKILL);
        }
    }
    #[cfg(not(unix))]
    let _ = (members, root);
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::HashMap;

    /// The pids listed in /proc.
    fn pids() -> Vec<u32> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
            .collect()
    }

    /// Every live descendant of `root`, from the parent links in /proc.
    pub(super) fn descendants(root: u32) -> Vec<u32> {
        let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
        for pid in pids() {
            if let Some((ppid, _)) = parent_and_session(pid) {
                children.entry(ppid).or_default().push(pid);
            }
        }
        let mut out = Vec::new();
        let mut queue = vec![root];
        while let Some(p) = queue.pop() {
            for &c in children.get(&p).map(Vec::as_slice).unwrap_or(&[]) {
                if !out.contains(&c) {
                    out.push(c);
                    queue.push(c);
                }
            }
        }
        out
    }

    /// Every process of our session whose environment holds `entry`
    /// (`NAME=value`, whole). A process in a session of its own has left
    /// the job on purpose (a daemon) and is not listed.
    pub(super) fn marked(entry: &[u8]) -> Vec<u32> {
        // SAFETY: getsid(0) only reads our own session id.
        let ours = unsafe { libc::getsid(0) };
        pids()
            .into_iter()
            .filter(|&pid| {
                parent_and_session(pid).is_some_and(|(_, sid)| sid == ours)
                    && std::fs::read(format!("/proc/{pid}/environ"))
                        .is_ok_and(|env| env.split(|&b| b == 0).any(|e| e == entry))
            })
            .collect()
    }

    /// The parent pid and session id from /proc/PID/stat (the fields after
    /// the `(comm)`, which may hold spaces: state, ppid, pgrp, session).
    fn parent_and_session(pid: u32) -> Option<(u32, i32)> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let rest = &stat[stat.rfind(')')? + 1..];
        let mut fields = rest.split_whitespace().skip(1);
        let ppid = fields.next()?.parse().ok()?;
        let session = fields.nth(1)?.parse().ok()?;
        Some((ppid, session))
    }
}

/// Quotes `s` as one word for bash and zsh alike, for commands people
/// paste: unchanged when it holds only characters neither shell treats
/// specially, otherwise in single quotes with each `'` written as `'\''`.
/// Glob characters (`[`, `]`, `*`, `?`), braces, `~`, `!` and a leading `=`
/// (zsh's `=cmd`) are quoted: a bare `code=[sm_90,compute_90]` is a glob
/// that zsh refuses with "no matches found".
///
/// ```
/// use cuda_toolchain::process::shell_quote;
/// assert_eq!(shell_quote("/usr/local/cuda-13.0/bin/nvcc"), "/usr/local/cuda-13.0/bin/nvcc");
/// assert_eq!(shell_quote("-gencode=arch=compute_90,code=[sm_90,compute_90]"),
///            "'-gencode=arch=compute_90,code=[sm_90,compute_90]'");
/// assert_eq!(shell_quote("it's"), r"'it'\''s'");
/// ```
pub fn shell_quote(s: &str) -> String {
    let safe = !s.is_empty()
        && !s.starts_with('=')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@%".contains(&b));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A duration as a message shows it: `300 ms`, `2.5 s`, `3600 s`. A limit
/// below a second never reads as `0 s`.
///
/// ```
/// use cuda_toolchain::process::show_duration;
/// use std::time::Duration;
/// assert_eq!(show_duration(Duration::from_millis(300)), "300 ms");
/// assert_eq!(show_duration(Duration::from_micros(499_990)), "500 ms");
/// assert_eq!(show_duration(Duration::from_millis(2500)), "2.5 s");
/// assert_eq!(show_duration(Duration::from_secs(2)), "2 s");
/// assert_eq!(show_duration(Duration::from_secs(3600)), "3600 s");
/// ```
pub fn show_duration(d: Duration) -> String {
    // Rounded, not truncated: a deadline computed a few microseconds after
    // its start (499.99 ms of a 500 ms limit) reads as the limit that was set.
    let ms = (d.as_secs_f64() * 1000.0).round() as u128;
    if ms < 1000 {
        // Under a millisecond (a `1us` limit) still reads as more than nothing.
        return format!("{} ms", ms.max(u128::from(!d.is_zero())));
    }
    let tenths = (d.as_secs_f64() * 10.0).round() / 10.0;
    if tenths >= 10.0 || tenths.fract() == 0.0 {
        format!("{} s", tenths.round())
    } else {
        format!("{tenths:.1} s")
    }
}

/// Reads a timeout override from `CUDA_BUILD_TIMEOUT` (seconds, or `90s`,
/// `10m`: [`crate::env::parse_seconds`]), else `default`. A value that does
/// not parse is reported by [`crate::env::Env::check`].
pub fn timeout_from_env(env: &crate::env::Env, default: Duration) -> Duration {
    env.get_nonempty(crate::env::Var::CudaBuildTimeout)
        .and_then(crate::env::parse_seconds)
        .unwrap_or(default)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn captures_output_and_status() {
        let out = run("/bin/echo", ["hello", "a b"], Duration::from_secs(5)).unwrap();
        assert!(out.status.success());
        assert_eq!(out.stdout, "hello a b\n");
    }

    #[test]
    fn times_out_a_hanging_child() {
        let start = Instant::now();
        let err = run("/bin/sleep", ["30"], Duration::from_millis(200)).unwrap_err();
        assert!(matches!(err, RunError::TimedOut { .. }), "{err:?}");
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(err.to_string().contains("did not finish within 200 ms"));
    }

    #[test]
    fn output_survives_a_grandchild_that_keeps_the_pipe_open() {
        let start = Instant::now();
        let out = run(
            "/bin/sh",
            ["-c", "echo before; sleep 30 & echo after"],
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(out.stdout, "before\nafter\n");
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    /// Each quoted word comes back unchanged from bash and from zsh (when
    /// installed), globs and all.
    #[test]
    fn shell_quote_round_trips_through_bash_and_zsh() {
        let words = [
            "-gencode=arch=compute_90,code=[sm_90,compute_90]",
            "a b'c\"d$e`f\\g\nh*",
            "x?y",
            "{a,b}",
            "~/cuda",
            "=ls",
            "!!",
            "",
            "plain/path-1.0_x+y:z,w@v%u",
        ];
        for sh in ["/bin/bash", "/bin/sh", "/usr/bin/zsh", "/bin/zsh"] {
            if !std::path::Path::new(sh).exists() {
                continue;
            }
            for w in words {
                let out = std::process::Command::new(sh)
                    .arg("-c")
                    .arg(format!("printf %s {}", shell_quote(w)))
                    .output()
                    .unwrap();
                assert_eq!(String::from_utf8_lossy(&out.stdout), w, "{sh}: {w:?}");
            }
        }
    }

    #[test]
    fn timeout_override_ignores_bad_values() {
        use crate::env::{Env, Var};
        let d = Duration::from_secs(7);
        let with = |v: &str| timeout_from_env(&Env::empty().set(Var::CudaBuildTimeout, v), d);
        assert_eq!(with("2.5"), Duration::from_millis(2500));
        for bad in ["1e30", "inf", "NaN", "-1", "0", "ten", ""] {
            assert_eq!(with(bad), d, "{bad}");
        }
    }

    #[test]
    fn a_script_still_open_for_writing_is_retried_not_failed() {
        use std::io::Write;
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tool");
        let mut f = std::fs::File::create(&p).unwrap();
        f.write_all(b"#!/bin/sh\necho ready\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        // While `f` is open for writing, exec fails with ETXTBSY; close it shortly.
        let closer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(40));
            drop(f);
        });
        let out = run(&p, std::iter::empty::<&str>(), Duration::from_secs(5)).unwrap();
        closer.join().unwrap();
        assert_eq!(out.stdout, "ready\n");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_timed_out_child_takes_its_whole_tree_with_it() {
        use std::os::unix::fs::PermissionsExt;
        // A fake nvcc that starts a child which starts a grandchild, like nvcc → cicc.
        let dir = tempfile::tempdir().unwrap();
        // A sleep length no other process uses marks every member of the tree.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        let token = format!("1000.{}{}", std::process::id(), nanos.subsec_nanos());
        let marker = dir.path().join("fake-cicc");
        std::fs::write(
            &marker,
            format!("#!/bin/sh\nsleep {token} &\nsleep {token}\n"),
        )
        .unwrap();
        let nvcc = dir.path().join("nvcc");
        let script = format!("#!/bin/sh\n{} &\nsleep {token}\n", marker.display());
        std::fs::write(&nvcc, script).unwrap();
        for p in [&marker, &nvcc] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let err = run(&nvcc, ["-c", "x.cu"], Duration::from_millis(500)).unwrap_err();
        assert!(matches!(err, RunError::TimedOut { .. }), "{err:?}");
        // Processes whose command line holds the token or the temp dir.
        let alive = || -> Vec<String> {
            let needle = dir.path().to_string_lossy().into_owned();
            std::fs::read_dir("/proc")
                .unwrap()
                .flatten()
                .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .filter(|c| c.contains(&needle) || c.contains(&token))
                .collect()
        };
        // SIGKILLed processes vanish once reaped by init; allow a moment.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !alive().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            alive(),
            Vec::<String>::new(),
            "processes of the tree survived"
        );
    }

    /// The pids and command lines of the running (not zombie: their
    /// command line is empty) processes that hold `token`.
    #[cfg(target_os = "linux")]
    fn running_with(token: &str) -> Vec<(i32, String)> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| {
                let pid = e.file_name().to_str()?.parse().ok()?;
                let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
                Some((pid, String::from_utf8_lossy(&cmdline).replace('\0', " ")))
            })
            .filter(|(_, c)| c.contains(token))
            .collect()
    }

    /// A `sleep` argument no other process uses.
    #[cfg(target_os = "linux")]
    fn unique_sleep() -> String {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        format!("1000.{}{nanos}", std::process::id())
    }

    /// Waits up to 5 s for the processes holding `token` to be gone.
    #[cfg(target_os = "linux")]
    fn survivors(token: &str) -> Vec<(i32, String)> {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !running_with(token).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        running_with(token)
    }

    /// `( sleep & )` is reparented to init at once: no parent link leads to
    /// it. It is ended all the same when its job fails or times out.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_failed_or_timed_out_child_leaves_no_double_forked_process() {
        for (ends, tail, limit) in [
            ("failed", "exit 3", Duration::from_secs(20)),
            ("timed out", "exec sleep 30", Duration::from_millis(500)),
        ] {
            let token = unique_sleep();
            let start = Instant::now();
            let r = run(
                "/bin/sh",
                ["-c", &format!("( sleep {token} & ); {tail}")],
                limit,
            );
            match ends {
                "failed" => assert_eq!(r.unwrap().status.code(), Some(3)),
                _ => assert!(matches!(r, Err(RunError::TimedOut { .. })), "{r:?}"),
            }
            // Not held up by the grandchild's copy of the pipes either.
            assert!(start.elapsed() < Duration::from_secs(5), "{ends}");
            assert_eq!(survivors(&token), [], "{ends}");
        }
    }

    /// A process that starts a session of its own has left the job on
    /// purpose, as sccache's server does: a failing client does not end it.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_daemon_in_its_own_session_outlives_its_failed_starter() {
        if !Path::new("/usr/bin/setsid").exists() {
            eprintln!("skipped: no /usr/bin/setsid");
            return;
        }
        let token = unique_sleep();
        let out = run(
            "/bin/sh",
            [
                "-c",
                &format!(
                    "/usr/bin/setsid sleep {token} </dev/null >/dev/null 2>&1 & sleep 0.2; exit 3"
                ),
            ],
            Duration::from_secs(20),
        )
        .unwrap();
        assert_eq!(out.status.code(), Some(3));
        std::thread::sleep(Duration::from_millis(200));
        let alive = running_with(&token);
        // Stop it before asserting, so a failure leaves nothing behind.
        for (pid, _) in &alive {
            // SAFETY: kill(2) of the daemon this test started.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        assert_eq!(alive.len(), 1, "the daemon was ended: {alive:?}");
    }

    #[test]
    fn missing_program_is_not_found() {
        let err = run("/nonexistent/nvcc", ["--version"], Duration::from_secs(1)).unwrap_err();
        assert_eq!(err, RunError::NotFound(PathBuf::from("/nonexistent/nvcc")));
    }

    #[test]
    fn non_executable_is_permission_denied() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("nvcc");
        std::fs::write(&p, "#!/bin/sh\necho hi\n").unwrap();
        let err = run(&p, ["--version"], Duration::from_secs(1)).unwrap_err();
        assert!(matches!(err, RunError::PermissionDenied(_)), "{err:?}");
    }
}
