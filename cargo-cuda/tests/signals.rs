//! Ctrl-C and SIGTERM during a wrapped build: cargo and everything under it
//! ends, `cargo cuda` waits for it and exits 130 / 143, and no process is left.

mod common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{cargo_cuda, fake_cargo, plain_package};

fn read_pid(path: &Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The pid a script wrote to `path`. The shell creates the file before
/// `echo` fills it, so an empty or partial file means "not yet".
fn wait_for_pid(path: &Path, limit: Duration) -> i32 {
    let start = Instant::now();
    loop {
        if let Some(pid) = read_pid(path) {
            return pid;
        }
        assert!(
            start.elapsed() < limit,
            "{} never held a pid",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Alive and not a zombie.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .next()
                .unwrap_or("");
            state != "Z" && state != "X"
        }
        Err(_) => false,
    }
}

fn wait_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("cargo-cuda did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A slow "cargo" with a child ("nvcc"), started under `cargo cuda build`
/// as its own process group (as a shell starts a foreground job).
fn start(dir: &Path, cargo_body: &str) -> Child {
    let manifest = plain_package(&dir.join("pkg"));
    let cargo = fake_cargo(dir, cargo_body);
    cargo_cuda()
        .args(["build", "--manifest-path"])
        .arg(manifest)
        .env("CARGO", cargo)
        .env("PATH", "/usr/bin:/bin")
        .env("CARGO_CUDA_SYSROOT", dir)
        .env("D", dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap()
}

#[test]
fn ctrl_c_ends_cargo_and_its_children_and_we_wait_for_them() {
    let dir = tempfile::tempdir().unwrap();
    // cargo traps INT to clean up slowly: we must still be waiting when it finishes.
    let mut child = start(
        dir.path(),
        "echo $$ > \"$D/cargo.pid\"\n\
         trap 'sleep 0.5; echo done > \"$D/cargo.cleaned\"; exit 130' INT\n\
         sh -c 'echo $$ > \"$D/nvcc.pid\"; exec sleep 300'\n\
         wait",
    );
    let nvcc = wait_for_pid(&dir.path().join("nvcc.pid"), Duration::from_secs(20));
    let cargo = wait_for_pid(&dir.path().join("cargo.pid"), Duration::from_secs(20));
    // What the terminal does on Ctrl-C: SIGINT to the whole foreground group.
    unsafe {
        libc::kill(-(child.id() as i32), libc::SIGINT);
    }
    let status = wait_exit(&mut child, Duration::from_secs(20));
    assert_eq!(status.code(), Some(130));
    assert!(
        dir.path().join("cargo.cleaned").exists(),
        "cargo-cuda exited before cargo finished"
    );
    let start = Instant::now();
    while (alive(cargo) || alive(nvcc)) && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(cargo), "cargo (pid {cargo}) was left running");
    assert!(!alive(nvcc), "cargo's child (pid {nvcc}) was left running");
}

/// The processes below `pid` that are still running, from /proc.
fn running_below(pids: &[i32]) -> Vec<i32> {
    pids.iter().copied().filter(|&p| alive(p)).collect()
}

/// SIGTERM while a build script runs nvcc, which runs cicc: cargo dies at
/// once (as real cargo does), the build script takes a moment to clean up
/// (it traps TERM), and cicc ignores TERM. When `cargo cuda` exits 143, none
/// of them is left: counted right at exit, without waiting.
#[test]
fn sigterm_waits_for_or_ends_the_whole_tree_before_exiting() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let script = |name: &str, body: &str| {
        workspace_tests::write_script(
            &d.join(name),
            &format!("echo $$ > \"$D/{name}.pid\"\n{body}"),
        );
    };
    script("cicc", "trap '' TERM\nwhile :; do sleep 0.1; done");
    script("nvcc", "\"$D/cicc\" &\nwait");
    script(
        "script",
        "trap 'sleep 0.5; exit 1' TERM\n\"$D/nvcc\" &\nwait",
    );
    let mut child = start(d, "echo $$ > \"$D/cargo.pid\"\n\"$D/script\" &\nwait");
    let files = ["cargo.pid", "script.pid", "nvcc.pid", "cicc.pid"];
    let pids: Vec<i32> = files
        .iter()
        .map(|f| wait_for_pid(&d.join(f), Duration::from_secs(20)))
        .collect();
    assert_eq!(running_below(&pids).len(), 4, "the tree is up: {pids:?}");
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let status = wait_exit(&mut child, Duration::from_secs(30));
    assert_eq!(status.code(), Some(143));
    assert_eq!(
        running_below(&pids),
        Vec::<i32>::new(),
        "processes of the build outlived cargo cuda (cargo, build script, nvcc, cicc: {pids:?})"
    );
}

#[test]
fn sigterm_is_passed_to_cargo_and_everything_under_it() {
    let dir = tempfile::tempdir().unwrap();
    // Plain sh: on SIGTERM it dies without touching its child, so only our
    // forwarding to the whole tree can end the "nvcc" below it.
    let mut child = start(
        dir.path(),
        "echo $$ > \"$D/cargo.pid\"\n\
         sh -c 'echo $$ > \"$D/nvcc.pid\"; exec sleep 300'",
    );
    let nvcc = wait_for_pid(&dir.path().join("nvcc.pid"), Duration::from_secs(20));
    let cargo = wait_for_pid(&dir.path().join("cargo.pid"), Duration::from_secs(20));
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let status = wait_exit(&mut child, Duration::from_secs(20));
    assert_eq!(status.code(), Some(143));
    let start = Instant::now();
    while (alive(cargo) || alive(nvcc)) && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(cargo), "cargo (pid {cargo}) was left running");
    assert!(!alive(nvcc), "cargo's child (pid {nvcc}) was left running");
}

/// A build that fails with no signal at all: what it double-forked
/// (`( sleep & )`, reparented to us as the subreaper) is ended before we
/// exit with cargo's code; a daemon that started its own session (as
/// sccache's server does) is left running.
#[test]
fn a_failed_build_leaves_no_double_forked_process_but_keeps_daemons() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut child = start(
        d,
        "( sleep 1000.1 & echo $! > \"$D/orphan.pid\" )\n\
         setsid sleep 1000.2 </dev/null >/dev/null 2>&1 &\n\
         echo $! > \"$D/daemon.pid\"\n\
         sleep 0.2\n\
         exit 101",
    );
    let status = wait_exit(&mut child, Duration::from_secs(20));
    let orphan = wait_for_pid(&d.join("orphan.pid"), Duration::from_secs(5));
    let daemon = wait_for_pid(&d.join("daemon.pid"), Duration::from_secs(5));
    let (orphan_left, daemon_left) = (alive(orphan), alive(daemon));
    for pid in [orphan, daemon] {
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
    assert_eq!(status.code(), Some(101));
    assert!(
        !orphan_left,
        "the double-forked sleep (pid {orphan}) outlived the build"
    );
    assert!(
        daemon_left,
        "the daemon (pid {daemon}) in its own session was ended"
    );
}
