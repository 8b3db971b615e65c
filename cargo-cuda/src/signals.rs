//! Ctrl-C and SIGTERM while cargo runs under us.
//!
//! cargo (and the rustc, build scripts and nvcc under it) stay in our
//! foreground process group, so a terminal Ctrl-C reaches all of them at
//! once. Our job is only to outlive them: the SIGINT handler records the
//! signal and returns, we keep waiting for cargo, and then exit 130.
//!
//! SIGTERM is sent to one process (us). The handler only records it; the
//! wait loop then sends SIGTERM to cargo *and every process under it*
//! (found through /proc before any of them dies, so none is reparented
//! away unseen), and exits 143 once cargo has gone.

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
