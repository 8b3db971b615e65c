//! Ctrl-C and SIGTERM while cargo runs under us.
//!
//! cargo (and the rustc, build scripts and nvcc under it) stay in our
//! foreground process group, so a terminal Ctrl-C reaches all of them at
//! once. Our job is only to outlive them: the SIGINT handler records the
//! signal and returns, we keep waiting for cargo, and then exit 130.
//!
//! SIGTERM is sent to one process (us). The handler only records it; the
//! wait loop then sends SIGTERM to cargo *and every process under it*
//! (found through /proc). We are the child subreaper of that tree, so a
//! build script or nvcc that outlives cargo is reparented to us, not lost:
//! after either signal, and after a build that failed, we wait until no
//! process below us is left (SIGKILL after a grace period), and only then
//! exit. A process that started a session of its own (sccache's server,
//! started by the build's first compile) has left the build on purpose and
//! is not waited for.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static TERMINATED: AtomicBool = AtomicBool::new(false);
extern "C" fn on_sigint(_sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

extern "C" fn on_sigterm(_sig: libc::c_int) {
    TERMINATED.store(true, Ordering::SeqCst);
}

fn install(sig: libc::c_int, handler: extern "C" fn(libc::c_int)) {
    // SAFETY: a zeroed sigaction is valid; the handlers only store to atomics.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as libc::sighandler_t;
        // SA_RESTART: our blocking waitpid/read calls resume instead of failing with EINTR.
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(sig, &action, std::ptr::null_mut());
    }
}

/// Installs the SIGINT and SIGTERM handlers (before spawning cargo).
///
/// Exec resets caught signals to their default, so cargo still dies on Ctrl-C.
pub fn install_handlers() {
    install(libc::SIGINT, on_sigint);
    install(libc::SIGTERM, on_sigterm);
}

/// Makes processes orphaned below us reparent to us instead of to init
/// (Linux `PR_SET_CHILD_SUBREAPER`), so [`end_descendants`] can find and
/// wait for a build script or nvcc that outlives cargo.
pub fn become_subreaper() {
    // SAFETY: prctl with integer arguments only changes this process's reaper flag.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

/// Waits until no process below us is left: each one still running in our
/// session gets SIGTERM once, and SIGKILL after `grace`; orphans reparented
/// to us are reaped. Returns the number of processes that had to be killed.
pub fn end_descendants(grace: std::time::Duration) -> usize {
    let me = std::process::id();
    // SAFETY: getsid(0) only reads our own session id.
    let session = unsafe { libc::getsid(0) };
    let start = std::time::Instant::now();
    let mut termed: Vec<u32> = Vec::new();
    let mut killed = 0;
    loop {
        // SAFETY: waitpid with WNOHANG only reaps children that have exited.
        while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
        let live: Vec<u32> = process_tree(me)
            .into_iter()
            .skip(1)
            .filter(|&p| running_in_session(p, session))
            .collect();
        if live.is_empty() {
            return killed;
        }
        if start.elapsed() >= grace {
            signal_all(&live, libc::SIGKILL);
            killed = live.len();
            if start.elapsed() >= grace * 2 {
                return killed;
            }
        } else {
            let new: Vec<u32> = live
                .iter()
                .copied()
                .filter(|p| !termed.contains(p))
                .collect();
            signal_all(&new, libc::SIGTERM);
            termed.extend(new);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Alive, not a zombie, and in session `session` (fields after the
/// `(comm)` of /proc/PID/stat: state, ppid, pgrp, session).
fn running_in_session(pid: u32, session: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
            let state = fields.next()?;
            let sid: i32 = fields.nth(2)?.parse().ok()?;
            Some(state != "Z" && state != "X" && sid == session)
        })
        .unwrap_or(false)
}

/// Whether SIGTERM has arrived.
pub fn terminated() -> bool {
    TERMINATED.load(Ordering::SeqCst)
}

/// `pid` and every process below it (children before grandchildren), from /proc.
pub fn process_tree(pid: u32) -> Vec<u32> {
    let mut parent_of: Vec<(u32, u32)> = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(p) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(ppid) = std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .as_deref()
                .and_then(parent_pid)
            {
                parent_of.push((p, ppid));
            }
        }
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(
            parent_of
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    tree
}

/// The parent pid from a /proc/PID/stat line (`pid (comm) state ppid ...`;
/// comm may hold spaces and parentheses, so parse after the last `)`).
pub fn parent_pid(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Sends `sig` to every pid in `pids`.
pub fn signal_all(pids: &[u32], sig: libc::c_int) {
    for &p in pids {
        if let Ok(p) = i32::try_from(p) {
            // SAFETY: kill(2) with a positive pid signals that one process.
            unsafe {
                libc::kill(p, sig);
            }
        }
    }
}

/// The exit code for the signal received while cargo ran, if any (130 or 143).
pub fn exit_code() -> Option<i32> {
    if INTERRUPTED.load(Ordering::SeqCst) {
        Some(130)
    } else if TERMINATED.load(Ordering::SeqCst) {
        Some(143)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_pid_survives_odd_command_names() {
        assert_eq!(parent_pid("42 (cargo) S 7 42 42 0"), Some(7));
        assert_eq!(parent_pid("42 (a) b (c) R 9 1 1"), Some(9));
        assert_eq!(parent_pid("garbage"), None);
    }

    #[test]
    fn process_tree_finds_our_own_children() {
        let mut child = std::process::Command::new("/bin/sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let tree = process_tree(std::process::id());
        assert_eq!(tree[0], std::process::id());
        assert!(tree.contains(&child.id()), "{tree:?}");
        let _ = child.kill();
        let _ = child.wait();
    }
}
