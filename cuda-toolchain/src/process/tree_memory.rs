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

use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often the live tree is sampled.
pub const INTERVAL: Duration = Duration::from_millis(100);

/// A thread sampling one process tree's summed high-water marks.
pub(crate) struct Sampler {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Sampler {
    /// Starts sampling the tree rooted at `pid`.
    pub(crate) fn start(pid: u32) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("tree-memory".into())
            .spawn(move || {
                let mut peak = 0u64;
                loop {
                    peak = peak.max(tree_high_water(pid));
                    // Parked, not slept: `stop` wakes it at once.
                    std::thread::park_timeout(INTERVAL);
                    if flag.load(Ordering::Relaxed) {
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

/// The sum of every live member's `VmHWM` in the tree rooted at `root`, in bytes.
fn tree_high_water(root: u32) -> u64 {
    #[cfg(target_os = "linux")]
    {
        let mut total = 0u64;
        let mut stack = vec![root];
        let mut seen = std::collections::HashSet::new();
        while let Some(pid) = stack.pop() {
            if !seen.insert(pid) {
                continue;
            }
            total += high_water(pid).unwrap_or(0);
            stack.extend(children(pid));
        }
        total
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = root;
        0
    }
}

/// A process's own peak RSS so far (`VmHWM`), in bytes.
#[cfg(target_os = "linux")]
fn high_water(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
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

    fn which_python() -> Result<std::path::PathBuf, ()> {
        ["/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"]
            .iter()
            .map(std::path::PathBuf::from)
            .find(|p| p.is_file())
            .ok_or(())
    }
}
