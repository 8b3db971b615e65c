//! The peak resident memory of a child's whole process tree (nvcc and the
//! cicc, ptxas and host-compiler steps it starts), as
//! [`run_command_measured`](super::run_command_measured) reports it.
//!
//! What is measured, and why this way:
//! - `wait4`'s `ru_maxrss` for the child is the largest peak RSS of *any
//!   single* process among the child and the descendants it waited for,
//!   not their sum (the kernel keeps a maximum over reaped children, as
//!   `getrusage(RUSAGE_CHILDREN)` does). Exact for a tree that runs one big
//!   step at a time, as nvcc does by default, but it misses concurrency:
//!   `--threads N` runs N cicc/ptxas at once.
//! - So a thread also samples the live tree every [`INTERVAL`]: the sum of
//!   each member's own high-water mark (`VmHWM` in `/proc/PID/status`),
//!   members found through `/proc/PID/task/TID/children`. A step that
//!   lives between two samples is still caught by `ru_maxrss` when it is
//!   the largest; summing high-water marks can only overstate concurrent
//!   use (two steps that peaked at different moments), never understate
//!   what was sampled, which is the safe side for a memory budget.
//! - The result is the larger of the two. Shared pages (the C library) are
//!   counted once per process, like RSS everywhere.
//! - A cgroup's `memory.peak` would be exact, but a build script can rarely
//!   create a cgroup (it needs a delegated cgroup v2 subtree; on a v1 or
//!   hybrid host only root can), and cgroup memory also charges the page
//!   cache of every file the compile writes. Processes that leave the tree
//!   (a double fork) are not counted.
//!
//! Outside Linux nothing is measured (None).
//!
//! A [`Watch`] shares the live measurement with a caller while the child
//! runs (its memory now and its peak so far), and lets the caller stop it:
//! a compile pool uses that to keep a memory budget when a prediction was
//! too low (see `cuda-build`'s `nvcc/schedule.rs`).

use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often the live tree is sampled.
pub const INTERVAL: Duration = Duration::from_millis(100);

/// A child's memory as it runs, shared with whoever started it, and a way
/// to stop it. One watch may follow several children one after another
/// (one compile's nvcc calls): its peak is theirs.
#[derive(Debug, Default)]
pub struct Watch {
    live: AtomicU64,
    peak: AtomicU64,
    stop: AtomicBool,
    stopped: AtomicBool,
}

impl Watch {
    /// A watch with nothing measured yet.
    pub fn new() -> Arc<Watch> {
        Arc::default()
    }

    /// The tree's resident memory at the last sample (summed `VmRSS`), in
    /// bytes; 0 when no child runs.
    pub fn live(&self) -> u64 {
        self.live.load(Ordering::Relaxed)
    }

    /// The largest summed high-water mark sampled so far, in bytes.
    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }

    /// Records a sample (the sampler; or a caller that runs no child).
    pub fn record(&self, live: u64, peak: u64) {
        self.live.store(live, Ordering::Relaxed);
        self.peak.fetch_max(peak.max(live), Ordering::Relaxed);
    }

    /// Asks the running child to be stopped (its whole tree, within
    /// [`INTERVAL`]); a child not started yet then does not start.
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Whether a stop was asked for.
    pub fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Whether a child was really ended (or not started) because of a
    /// stop, as opposed to one that finished before the request came.
    pub fn was_stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    /// Marks a child ended (or not started) because of the request.
    pub fn mark_stopped(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }
}

/// A thread sampling one process tree's summed high-water marks.
pub(crate) struct Sampler {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Sampler {
    /// Starts sampling the tree rooted at `pid`, reporting each sample to `watch`.
    pub(crate) fn start(pid: u32, watch: Option<Arc<Watch>>) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("tree-memory".into())
            .spawn(move || {
                let mut peak = 0u64;
                loop {
                    let (high, live) = tree_memory(pid);
                    peak = peak.max(high);
                    if let Some(w) = &watch {
                        w.record(live, peak);
                    }
                    // Parked, not slept: `stop` wakes it at once.
                    std::thread::park_timeout(INTERVAL);
                    if flag.load(Ordering::Relaxed) {
                        if let Some(w) = &watch {
                            w.record(0, peak);
                        }
                        return peak;
                    }
                }
            })
            .ok();
        Sampler { stop, thread }
    }

    /// Stops sampling; the largest sum seen, in bytes.
    pub(crate) fn stop(mut self) -> u64 {
        self.halt().unwrap_or(0)
    }

    fn halt(&mut self) -> Option<u64> {
        self.stop.store(true, Ordering::Relaxed);
        let t = self.thread.take()?;
        t.thread().unpark();
        t.join().ok()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        let _ = self.halt();
    }
}

/// The child's exit, if it has exited, and (when `measure`) the largest
/// peak RSS of any single process of its tree that was waited for, in bytes.
pub(crate) fn try_wait(
    child: &mut Child,
    measure: bool,
) -> std::io::Result<Option<(ExitStatus, Option<u64>)>> {
    #[cfg(target_os = "linux")]
    if measure {
        use std::os::unix::process::ExitStatusExt;
        let mut status: libc::c_int = 0;
        // SAFETY: a zeroed rusage is a valid out-parameter.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 only writes into `status` and `usage`. Reaping here
        // instead of `Child::try_wait` is what yields the rusage; the Child
        // is never waited for afterwards (its Drop does not wait).
        let r = unsafe {
            libc::wait4(
                child.id() as libc::pid_t,
                &mut status,
                libc::WNOHANG,
                &mut usage,
            )
        };
        return match r {
            0 => Ok(None),
            r if r < 0 => {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    Ok(None)
                } else {
                    Err(e)
                }
            }
            // ru_maxrss is in KiB on Linux.
            _ => Ok(Some((
                ExitStatus::from_raw(status),
                Some(u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024),
            ))),
        };
    }
    let _ = measure;
    Ok(child.try_wait()?.map(|s| (s, None)))
}

/// The sums of every live member's `VmHWM` and `VmRSS` in the tree rooted
/// at `root`, in bytes.
fn tree_memory(root: u32) -> (u64, u64) {
    #[cfg(target_os = "linux")]
    {
        let (mut high, mut live) = (0u64, 0u64);
        let mut stack = vec![root];
        let mut seen = std::collections::HashSet::new();
        while let Some(pid) = stack.pop() {
            if !seen.insert(pid) {
                continue;
            }
            let (h, l) = memory_of(pid).unwrap_or((0, 0));
            high += h;
            live += l;
            stack.extend(children(pid));
        }
        (high, live)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = root;
        (0, 0)
    }
}

/// A process's own peak RSS so far (`VmHWM`) and its RSS now (`VmRSS`), in bytes.
#[cfg(target_os = "linux")]
fn memory_of(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib = |key: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(key))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok()
    };
    Some((kib("VmHWM:")? * 1024, kib("VmRSS:").unwrap_or(0) * 1024))
}

/// A process's children, from every one of its threads (a child belongs
/// to the thread that forked it).
#[cfg(target_os = "linux")]
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for t in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
    }
    out
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::super::run_command_measured;
    use std::process::Command;
    use std::time::Duration;

    /// A child that starts two grandchildren holding memory at once: the
    /// measured peak is their sum, not the larger one alone.
    #[test]
    fn the_peak_counts_concurrent_grandchildren() {
        let Ok(py) = which_python() else {
            eprintln!("skipped: no python3 to allocate memory with");
            return;
        };
        let mb = 120;
        let hold = format!(
            "import time; b = bytearray({mb} * 1024 * 1024)\nfor i in range(0, len(b), 4096): b[i] = 1\ntime.sleep(1.0)"
        );
        let script = format!(
            "'{py}' -c '{hold}' & '{py}' -c '{hold}' & wait",
            py = py.display()
        );
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", &script]);
        let out = run_command_measured(&mut cmd, Duration::from_secs(60)).unwrap();
        assert!(out.status.success(), "{}", out.combined());
        let peak = out.peak_memory.unwrap();
        assert!(
            peak >= 2 * mb * 1024 * 1024,
            "peak {peak} below the two children's {} MiB",
            2 * mb
        );
        assert!(peak < 8 * mb * 1024 * 1024, "peak {peak}");
        // Unmeasured runs say nothing.
        let out = super::super::run("/bin/true", [""; 0], Duration::from_secs(5)).unwrap();
        assert_eq!(out.peak_memory, None);
    }

    /// A short-lived step between two samples is still counted, from wait4.
    #[test]
    fn a_step_shorter_than_the_interval_is_caught_by_rusage() {
        let Ok(py) = which_python() else {
            eprintln!("skipped: no python3 to allocate memory with");
            return;
        };
        let mut cmd = Command::new("/bin/sh");
        cmd.args([
            "-c",
            &format!(
                "sleep 0.15; '{}' -c 'b = bytearray(90 * 1024 * 1024)\nfor i in range(0, len(b), 4096): b[i] = 1'",
                py.display()
            ),
        ]);
        let out = run_command_measured(&mut cmd, Duration::from_secs(60)).unwrap();
        assert!(out.peak_memory.unwrap() >= 90 * 1024 * 1024);
    }

    /// A watched child's memory is seen while it runs, and a stop ends its
    /// whole tree (a grandchild included) at once, not at its deadline.
    #[test]
    fn a_watched_tree_is_measured_live_and_stopped() {
        let Ok(py) = which_python() else {
            eprintln!("skipped: no python3 to allocate memory with");
            return;
        };
        let mb = 80u64;
        let hold = format!(
            "import time; b = bytearray({mb} * 1024 * 1024)\nfor i in range(0, len(b), 4096): b[i] = 1\ntime.sleep(60)"
        );
        let pidfile = tempfile::NamedTempFile::new().unwrap();
        // The grandchild writes its pid, so the test can see it end.
        let script = format!(
            "'{py}' -c '{hold}' & echo $! > '{pid}'; wait",
            py = py.display(),
            pid = pidfile.path().display()
        );
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", &script]);
        let watch = super::Watch::new();
        let w = watch.clone();
        let stopper = std::thread::spawn(move || {
            let t = std::time::Instant::now();
            while w.live() < mb * 1024 * 1024 && t.elapsed() < Duration::from_secs(30) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let seen = w.live();
            w.request_stop();
            seen
        });
        let t = std::time::Instant::now();
        let r = super::super::run_command_watched(&mut cmd, Duration::from_secs(120), &watch);
        let seen = stopper.join().unwrap();
        assert!(seen >= mb * 1024 * 1024, "live {seen}");
        assert!(
            matches!(r, Err(super::super::RunError::Stopped(_))),
            "{r:?}"
        );
        assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
        assert!(watch.was_stopped() && watch.peak() >= mb * 1024 * 1024);
        // Ended: gone, or a zombie its new parent has not reaped yet.
        let pid = std::fs::read_to_string(pidfile.path()).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let state = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()))
            .ok()
            .and_then(|s| s.rsplit(')').next().map(|r| r.trim().chars().next()))
            .flatten();
        assert!(
            matches!(state, None | Some('Z') | Some('X')),
            "the grandchild {} outlived the stop (state {state:?})",
            pid.trim()
        );
        // A stop asked before the start starts nothing.
        let mut cmd = Command::new("/bin/true");
        let r = super::super::run_command_watched(&mut cmd, Duration::from_secs(5), &watch);
        assert!(
            matches!(r, Err(super::super::RunError::Stopped(_))),
            "{r:?}"
        );
        // An unstopped watched run finishes as a measured one does.
        let fresh = super::Watch::new();
        let mut cmd = Command::new("/bin/true");
        let out =
            super::super::run_command_watched(&mut cmd, Duration::from_secs(5), &fresh).unwrap();
        assert!(out.status.success() && !fresh.was_stopped() && fresh.live() == 0);
    }

    fn which_python() -> Result<std::path::PathBuf, ()> {
        ["/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"]
            .iter()
            .map(std::path::PathBuf::from)
            .find(|p| p.is_file())
            .ok_or(())
    }
}
