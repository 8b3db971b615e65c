//! No process and no temporary directory of a failed, timed-out, interrupted
//! or killed build outlives it, under `cargo build` and `cargo cuda build`
//! alike. Real builds of a package whose build script uses cuda-build with
//! the real nvcc 13.0; the compiler goes through a stand-in wrapper
//! (`CUDA_BUILD_WRAPPER`) that double-forks a `sleep` first, as
//! `( sleep 300 & )` would: that process is reparented to init at once, so
//! no parent link leads to it.

mod common;

use common::{cargo_cuda, plain_cargo, shared_target};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A `sleep` argument no other process uses.
fn token() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("1000.{}{nanos}", std::process::id())
}

/// The running (not zombie: empty command line) processes that hold `token`.
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

/// The processes holding `token` a moment after the build (a SIGKILLed
/// orphan is gone once init reaps it); ended here, so none is left behind.
fn survivors(token: &str) -> Vec<(i32, String)> {
    let deadline = Instant::now() + Duration::from_secs(3);
    while !running_with(token).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = running_with(token);
    for (pid, _) in &left {
        // SAFETY: kill(2) of a process this test's build started.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    left
}

/// The build of `manifest` with `cmd` (`cargo build` or `cargo cuda
/// build`), the real toolkit, no kernel cache, and `wrapper` as the compiler wrapper.
fn build(mut cmd: Command, manifest: &Path, root: &Path, wrapper: &Path) -> Command {
    cmd.args(["build", "--manifest-path"])
        .arg(manifest)
        .env("CARGO_TARGET_DIR", shared_target())
        .env("CUDA_HOME", root)
        .env("CUDA_ARCHS", "80")
        .env("CUDA_BUILD_NO_CACHE", "1")
        .env("CUDA_BUILD_WRAPPER", wrapper);
    cmd
}

/// A compiler wrapper that double-forks `sleep <token>`, then runs `tail`.
fn double_forking_wrapper(dir: &Path, token: &str, tail: &str) -> PathBuf {
    let path = dir.join(format!("wrap-{}", token.replace('.', "-")));
    workspace_tests::write_script(&path, &format!("( sleep {token} & )\n{tail}"));
    path
}

/// A compile that fails, and one that hangs past `CUDA_BUILD_TIMEOUT`:
/// the build fails, and the double-forked process is gone with it, under
/// both commands.
#[test]
fn a_failed_or_timed_out_compile_leaves_no_process() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let manifest = common::kernel_package(dir.path(), "leftovers-failed");
    for (ends, tail, timeout) in [
        (
            "failed",
            "echo 'k.cu(1): error: stand-in failure' >&2; exit 2",
            "600",
        ),
        ("timed out", "exec sleep 300", "2"),
    ] {
        for (name, cmd) in [
            ("cargo build", plain_cargo()),
            ("cargo cuda build", cargo_cuda()),
        ] {
            let token = token();
            let wrapper = double_forking_wrapper(dir.path(), &token, tail);
            let out = build(cmd, &manifest, &root, &wrapper)
                .env("CUDA_BUILD_TIMEOUT", timeout)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            let left = survivors(&token);
            assert!(!out.status.success(), "{name}, {ends}: {stderr}");
            let code = if ends == "failed" {
                "nvcc-failed"
            } else {
                "nvcc-timeout"
            };
            assert!(
                stderr.contains(&format!("error[{code}]")),
                "{name}, {ends}: {stderr}"
            );
            assert_eq!(left, [], "{name}, {ends}: a process outlived the build");
        }
    }
}

/// Ctrl-C (SIGINT to the foreground process group, as a terminal sends it)
/// during a plain `cargo build` still reaches nvcc: its children stay in
/// cargo's group, so cargo ends at once and nvcc is gone with it.
#[test]
fn ctrl_c_of_cargo_build_still_ends_nvcc() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let manifest = common::kernel_package(dir.path(), "leftovers-ctrl-c");
    let pid_file = dir.path().join("nvcc.pid");
    let wrapper = dir.path().join("slow-wrapper");
    workspace_tests::write_script(
        &wrapper,
        &format!("echo $$ > '{}'\nexec sleep 300", pid_file.display()),
    );
    let mut cmd = build(plain_cargo(), &manifest, &root, &wrapper);
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    // A terminal's foreground job takes SIGINT's default action. A test run
    // started in the background of a non-interactive shell (`cmd &`)
    // inherits SIGINT ignored, and cargo would then never see the Ctrl-C.
    // SAFETY: signal(2) only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut cargo = cmd.spawn().unwrap();
    // cuda-build itself may compile first (a cold target dir).
    let nvcc = wait_for_pid(&pid_file, Duration::from_secs(600));
    // SAFETY: SIGINT to the process group this test made for cargo.
    unsafe { libc::kill(-(cargo.id() as i32), libc::SIGINT) };
    let start = Instant::now();
    let status = loop {
        if let Some(s) = cargo.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = cargo.kill();
            // SAFETY: kill(2) of the stand-in this test started.
            unsafe { libc::kill(nvcc, libc::SIGKILL) };
            panic!("cargo build did not end within 20 s of Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!status.success());
    let start = Instant::now();
    while alive(nvcc) && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = alive(nvcc);
    if left {
        // SAFETY: as above.
        unsafe { libc::kill(nvcc, libc::SIGKILL) };
    }
    assert!(!left, "nvcc (pid {nvcc}) outlived Ctrl-C");
}

/// A build script SIGKILLed in the middle of a compile leaves its job's
/// temporary directory in OUT_DIR; the next build removes it.
#[test]
fn a_killed_build_leaves_a_job_directory_the_next_build_removes() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let manifest = common::kernel_package(dir.path(), "leftovers-killed");
    let seen = dir.path().join("nvcc.seen");
    let wrapper = dir.path().join("hanging-wrapper");
    // Its pid, then the job directory it runs in (its TMPDIR).
    workspace_tests::write_script(
        &wrapper,
        &format!("echo \"$$ $TMPDIR\" > '{}'\nexec sleep 300", seen.display()),
    );
    let mut cargo = build(plain_cargo(), &manifest, &root, &wrapper)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let nvcc = wait_for_pid(&seen, Duration::from_secs(600));
    let line = std::fs::read_to_string(&seen).unwrap();
    let job_dir = PathBuf::from(line.split_once(' ').unwrap().1.trim());
    let script = parent_of(nvcc).unwrap();
    // SAFETY: SIGKILL to the build script and the stand-in this test started.
    unsafe {
        libc::kill(script, libc::SIGKILL);
        libc::kill(nvcc, libc::SIGKILL);
    }
    assert!(!cargo.wait().unwrap().success());
    assert!(
        job_dir.is_dir(),
        "the killed job's {} is there",
        job_dir.display()
    );
    // The next build (a working compiler: no wrapper) removes it.
    let out = build(plain_cargo(), &manifest, &root, Path::new(""))
        .env_remove("CUDA_BUILD_WRAPPER")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left: Vec<_> = std::fs::read_dir(job_dir.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().starts_with(".tmp-"))
        .collect();
    assert_eq!(left, Vec::<std::ffi::OsString>::new(), "left in OUT_DIR");
}

/// The pid at the start of `path`, once a script has written it.
fn wait_for_pid(path: &Path, limit: Duration) -> i32 {
    let start = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok())
        {
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
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .next();
        !matches!(state, Some("Z" | "X") | None)
    })
}

/// The parent pid, from /proc.
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
