//! The output rule: every subcommand, with a reader that takes the first
//! line of stdout and closes the pipe (`cargo cuda inspect BINARY | head -1`),
//! or one gone before the command starts, 20 times each: no panic, no
//! "Broken pipe" message, and the exit code the command has with a full
//! reader, or its documented broken-pipe exit: under `build`, `check` and
//! `run`, stdout is cargo's own, and cargo may stop with `error: Broken
//! pipe` (exit 101) as plain cargo does; the driver-probe child exits 2
//! when it cannot deliver its answer (`driver_probe_child_main`).
//!
//! The cases cover every subcommand `cargo cuda --help` lists (and the
//! hidden driver-probe child): a new subcommand fails
//! [`every_subcommand_has_a_case`] until it gets one here. And no module
//! but `src/output.rs` may write to stdout or stderr directly.

mod common;
#[path = "../../cuda-install/tests/common/mod.rs"]
mod index;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{cargo_cuda, text};

/// Runs per case with a reader that closes after the first line.
const RUNS: usize = 20;

/// The subcommands each test below covers, by command path.
const OWN: &[&str] = &[
    "doctor",
    "explain",
    "toolkits",
    "info",
    "env",
    "inspect",
    "prebuild",
    cuda_toolchain::probe::DRIVER_PROBE_ARG,
];
const CARGO_WRAPPER: &[&str] = &["build", "check", "run", "test", "bench"];
const STORE: &[&str] = &[
    "toolkit install",
    "toolkit list",
    "toolkit which",
    "toolkit remove",
    "deps fetch",
];

/// What reads the command's stdout.
#[derive(Clone, Copy, Debug)]
enum Reader {
    /// Reads to the end.
    Full,
    /// Reads the first line, then closes the pipe.
    FirstLine,
    /// Closed before the command starts.
    Gone,
}

/// How a run ended.
struct Ended {
    code: Option<i32>,
    stdout_lines: usize,
    stderr: String,
}

/// Runs `cmd` with `reader` on its stdout, under a deadline (killed after it).
fn run(mut cmd: Command, reader: Reader) -> Ended {
    cmd.stdin(Stdio::null()).stderr(Stdio::piped());
    match reader {
        Reader::Gone => cmd.stdout(gone_stdout()),
        _ => cmd.stdout(Stdio::piped()),
    };
    let mut child = cmd.spawn().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let mut stdout_lines = 0;
    if let Some(out) = child.stdout.take() {
        let mut out = BufReader::new(out);
        let mut bytes = Vec::new();
        match reader {
            Reader::Full => {
                let _ = out.read_to_end(&mut bytes);
                stdout_lines = bytes.iter().filter(|&&b| b == b'\n').count();
            }
            _ => {
                let _ = out.read_until(b'\n', &mut bytes);
            }
        }
        // Dropping `out` closes our end: later writes find no reader.
    }
    let deadline = Instant::now() + Duration::from_secs(600);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} ran past its deadline");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Ended {
        code: status.code(),
        stdout_lines,
        stderr: errors.join().unwrap(),
    }
}

/// A stdout whose reader is already gone (`cargo cuda info | head -0`).
fn gone_stdout() -> Stdio {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills two fresh descriptors; each is owned exactly once below.
    unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        libc::close(fds[0]);
        Stdio::from(OwnedFd::from_raw_fd(fds[1]))
    }
}

/// One subcommand invocation.
struct Case<'a> {
    /// The command path it covers (`toolkit install`).
    covers: &'static str,
    /// The full command, ready to spawn.
    command: Box<dyn Fn() -> Command + 'a>,
    /// Lines it prints with a full reader, at least (more than one where the
    /// command can print more).
    min_lines: usize,
    /// The documented exit when the command finds stdout closed, where it
    /// has one instead of its own code.
    broken_pipe_exit: Option<i32>,
    /// Runs before each run (state the command consumes).
    before: Option<Box<dyn Fn() + 'a>>,
}

impl<'a> Case<'a> {
    fn new(covers: &'static str, min_lines: usize, command: impl Fn() -> Command + 'a) -> Self {
        Case {
            covers,
            command: Box::new(command),
            min_lines,
            broken_pipe_exit: None,
            before: None,
        }
    }

    fn check(&self) {
        let prepare = || {
            if let Some(b) = &self.before {
                b();
            }
        };
        prepare();
        let full = run((self.command)(), Reader::Full);
        let what = format!(
            "cargo cuda {}",
            (self.command)()
                .get_args()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" ")
        );
        assert!(!full.stderr.contains("panicked"), "{what}: {}", full.stderr);
        assert!(
            full.stdout_lines >= self.min_lines,
            "{what}: {} line(s), expected at least {}; stderr:\n{}",
            full.stdout_lines,
            self.min_lines,
            full.stderr
        );
        assert!(
            full.code.is_some_and(|c| c != 101),
            "{what}: {:?}\n{}",
            full.code,
            full.stderr
        );
        for i in 0..=RUNS {
            prepare();
            let reader = if i == 0 {
                Reader::Gone
            } else {
                Reader::FirstLine
            };
            let r = run((self.command)(), reader);
            assert!(
                !r.stderr.contains("panicked") && !r.stderr.contains("failed printing"),
                "{what} ({reader:?}, run {i}): {}",
                r.stderr
            );
            let documented = r.code.is_some() && r.code == self.broken_pipe_exit;
            if !documented {
                assert!(
                    !r.stderr.contains("Broken pipe"),
                    "{what} ({reader:?}, run {i}): {}",
                    r.stderr
                );
                assert_eq!(
                    r.code, full.code,
                    "{what} ({reader:?}, run {i}): exit code differs from a full reader's; stderr:\n{}",
                    r.stderr
                );
            }
        }
    }
}

/// Checks every case, and that they cover exactly `covers`.
fn check_all(cases: &[Case<'_>], covers: &[&str]) {
    let have: BTreeSet<&str> = cases.iter().map(|c| c.covers).collect();
    let want: BTreeSet<&str> = covers.iter().copied().collect();
    assert_eq!(have, want, "the cases must cover exactly their list");
    for c in cases {
        c.check();
    }
}

/// `cargo cuda` that sees only `tmp`'s store and cache, the test toolkit,
/// one arch, and runs in `tmp/work` (no cargo project around it).
fn hermetic(tmp: &Path, toolkit: &Path) -> Command {
    let mut c = cargo_cuda();
    c.env("CARGO_CUDA_HOME", tmp.join("store"))
        .env("CUDA_BUILD_CACHE_DIR", tmp.join("cache"))
        .env("XDG_DATA_HOME", tmp.join("xdg-data"))
        .env("XDG_CACHE_HOME", tmp.join("xdg-cache"))
        .env("CUDA_HOME", toolkit)
        .env("CUDA_ARCHS", "90")
        .current_dir(tmp.join("work"));
    c
}

/// A .fatbin from the real nvcc: sm_80 and sm_90 SASS, compute_90 PTX.
fn fatbin(nvcc: &Path, dir: &Path) -> PathBuf {
    let cu = dir.join("k.cu");
    std::fs::write(
        &cu,
        "extern \"C\" __global__ void k(float* p) { p[threadIdx.x] = 1.0f; }\n",
    )
    .unwrap();
    let out = dir.join("k.fatbin");
    let args = [
        "-fatbin".to_string(),
        "-gencode=arch=compute_80,code=sm_80".into(),
        "-gencode=arch=compute_90,code=[sm_90,compute_90]".into(),
        cu.display().to_string(),
        "-o".into(),
        out.display().to_string(),
    ];
    let r = cuda_toolchain::process::run(nvcc, &args, Duration::from_secs(300)).unwrap();
    assert!(r.status.success(), "{}", r.stderr);
    out
}

/// The commands that print through `outln!` themselves.
#[test]
fn own_commands_end_quietly_with_their_own_exit_code() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    std::fs::create_dir_all(t.join("work")).unwrap();
    let fat = fatbin(&root.join("bin/nvcc"), t);
    let log = t.join("build.log");
    std::fs::write(
        &log,
        "nvcc fatal   : Unsupported gpu architecture 'compute_35'\n\
         error: linking with `cc` failed: exit status: 1\n  = note: /usr/bin/ld: cannot find -lcudart\n",
    )
    .unwrap();
    let case = |covers: &'static str, min_lines: usize, args: Vec<String>| {
        let (t, root) = (t.to_path_buf(), root.clone());
        Case::new(covers, min_lines, move || {
            let mut c = hermetic(&t, &root);
            c.args(&args);
            c
        })
    };
    let s = |v: &[&str]| -> Vec<String> { v.iter().map(|a| a.to_string()).collect() };
    // A package that declares nothing to prebuild: the command stops with its error.
    let undeclared = common::plain_package(&t.join("plain"))
        .display()
        .to_string();
    let (fat, log) = (fat.display().to_string(), log.display().to_string());
    let cases = [
        case("doctor", 10, s(&["doctor", "--no-workload"])),
        case("doctor", 10, s(&["doctor", "--json", "--no-workload"])),
        case("explain", 3, s(&["explain", "nvcc-not-found"])),
        case("explain", 3, s(&["explain", &log])),
        case("explain", 3, s(&["explain", "--json", &log])),
        case("toolkits", 2, s(&["toolkits"])),
        case("toolkits", 2, s(&["toolkits", "--json"])),
        case("info", 4, s(&["info"])),
        case("info", 10, s(&["info", "--json"])),
        case("env", 4, s(&["env"])),
        case("inspect", 6, s(&["inspect", &fat, "--gpu", "sm_86,sm_90"])),
        case(
            "inspect",
            10,
            s(&["inspect", "--json", &fat, "--gpu", "sm_86,sm_90"]),
        ),
        case(
            "prebuild",
            0,
            s(&["prebuild", "--manifest-path", &undeclared]),
        ),
        Case {
            broken_pipe_exit: Some(2),
            ..case(
                cuda_toolchain::probe::DRIVER_PROBE_ARG,
                1,
                s(&[cuda_toolchain::probe::DRIVER_PROBE_ARG]),
            )
        },
    ];
    check_all(&cases, OWN);
}

/// `cargo cuda build|check|run|test|bench` on a package with no GPU code
/// whose program, tests and bench print many lines.
#[test]
fn cargo_wrapper_ends_quietly_with_cargos_exit_code() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let pkg = t.join("work");
    std::fs::create_dir_all(pkg.join("src")).unwrap();
    std::fs::create_dir_all(pkg.join("benches")).unwrap();
    std::fs::write(
        pkg.join("Cargo.toml"),
        "[package]\nname = \"closed-stdout-fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [[bench]]\nname = \"lines\"\nharness = false\n\n[workspace]\n",
    )
    .unwrap();
    // A program that stops quietly when its reader goes, as a well-behaved one does.
    let lines = "fn main() {\n    use std::io::Write;\n    let mut out = std::io::stdout().lock();\n    \
                 for i in 0..2000 {\n        if writeln!(out, \"line {i}\").is_err() {\n            return;\n        }\n    }\n}\n";
    std::fs::write(pkg.join("src/main.rs"), lines).unwrap();
    std::fs::write(pkg.join("benches/lines.rs"), lines).unwrap();
    let tests: String = (0..40)
        .map(|i| format!("#[test]\nfn t{i}() {{}}\n"))
        .collect();
    std::fs::write(pkg.join("src/lib.rs"), tests).unwrap();
    let target = t.join("target");
    let case = |covers: &'static str, args: &'static [&'static str]| {
        let (t, root, target) = (t.to_path_buf(), root.clone(), target.clone());
        let mut c = Case::new(covers, 3, move || {
            let mut c = hermetic(&t, &root);
            c.env("CARGO_TARGET_DIR", &target).args(args);
            c
        });
        if matches!(covers, "build" | "check" | "run") {
            c.broken_pipe_exit = Some(101);
        }
        c
    };
    let cases = [
        case("build", &["build", "--message-format=json"]),
        case("check", &["check", "--message-format=json"]),
        case("run", &["run", "--bin", "closed-stdout-fixture"]),
        case("test", &["test"]),
        case("bench", &["bench", "--bench", "lines"]),
    ];
    check_all(&cases, CARGO_WRAPPER);
}

/// `cargo cuda toolkit ...` against a package index on 127.0.0.1, and
/// `deps fetch` of two git dependencies from a local repository.
#[test]
fn store_commands_end_quietly_with_their_own_exit_code() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let (store, sys) = (t.join("store"), t.join("sys"));
    std::fs::create_dir_all(&sys).unwrap();
    std::fs::create_dir_all(t.join("work")).unwrap();
    let server = index::Server::start();
    index::publish_releases(&server, &["13.0.88", "13.1.80"], 0);
    index::install(&store, &server.url, "13.1").unwrap();
    let url = server.url.clone();
    // As tests/toolkit.rs: only this store, this index, no toolkit elsewhere.
    let cmd = |args: &[&str]| {
        let mut c = cargo_cuda();
        c.env("CARGO_CUDA_HOME", &store)
            .env("CARGO_CUDA_SYSROOT", &sys)
            .env("PIP_INDEX_URL", &url)
            .env("PATH", "/usr/bin:/bin")
            .current_dir(t.join("work"))
            .args(args);
        c
    };
    let (repo, commit) = bare_repo(t);
    let dep = |name: &str| format!("{name}={repo}@{commit}");
    let (dep_a, dep_b) = (dep("a"), dep("b"));
    let mut remove = Case::new("toolkit remove", 0, || {
        cmd(&["toolkit", "remove", "13.0.88"])
    });
    remove.before = Some(Box::new(|| {
        index::install(&store, &server.url, "13.0").unwrap();
    }));
    let cases = [
        Case::new("toolkit install", 1, || {
            cmd(&["toolkit", "install", "13.0"])
        }),
        Case::new("toolkit list", 2, || cmd(&["toolkit", "list"])),
        Case::new("toolkit list", 10, || cmd(&["toolkit", "list", "--json"])),
        Case::new("toolkit which", 1, || cmd(&["toolkit", "which"])),
        remove,
        Case::new("deps fetch", 2, || {
            let mut c = cmd(&["deps", "fetch", "--git", &dep_a, "--git", &dep_b]);
            c.env("PATH", std::env::var_os("PATH").unwrap_or_default());
            c
        }),
    ];
    check_all(&cases, STORE);
}

/// A bare repository with one header; returns its URL and commit.
fn bare_repo(tmp: &Path) -> (String, String) {
    use workspace_tests::git;
    let src = tmp.join("dep-src");
    std::fs::create_dir_all(src.join("include")).unwrap();
    git(&src, &["init", "-q"]);
    std::fs::write(src.join("include/dep.cuh"), "#pragma once\n").unwrap();
    git(&src, &["add", "."]);
    git(&src, &["commit", "-qm", "dep"]);
    let commit = git(&src, &["rev-parse", "HEAD"]);
    let bare = tmp.join("dep.git");
    git(
        tmp,
        &[
            "clone",
            "-q",
            "--bare",
            src.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    (format!("file://{}", bare.display()), commit)
}

/// The command paths a `--help` lists under `Commands:` (without `help`).
fn listed(args: &[&str]) -> Vec<String> {
    let out = cargo_cuda().args(args).arg("--help").output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    stdout
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(|c| {
            let mut path = args.to_vec();
            path.push(c);
            path.join(" ")
        })
        .collect()
}

/// Every subcommand (and subcommand of a subcommand) has a case above.
#[test]
fn every_subcommand_has_a_case() {
    let mut all: BTreeSet<String> = BTreeSet::new();
    for top in listed(&[]) {
        let nested = listed(&[top.as_str()]);
        if nested.is_empty() {
            all.insert(top);
        } else {
            all.extend(nested);
        }
    }
    all.insert(cuda_toolchain::probe::DRIVER_PROBE_ARG.to_string());
    assert!(
        all.contains("doctor") && all.contains("toolkit install"),
        "{all:?}"
    );
    let covered: BTreeSet<String> = OWN
        .iter()
        .chain(CARGO_WRAPPER)
        .chain(STORE)
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        all, covered,
        "add a case for each new subcommand to tests/closed_stdout.rs"
    );
}

/// Only `src/output.rs` writes to stdout or stderr: everything else prints
/// through its `outln!`/`errln!` (clippy's print lints, denied in main.rs,
/// say the same when clippy runs; this holds under a plain `cargo test`).
#[test]
fn only_output_rs_touches_stdout_and_stderr() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let forbidden = [
        "print!(",
        "println!(",
        "eprint!(",
        "eprintln!(",
        "dbg!(",
        "io::stdout(",
        "io::stderr(",
    ];
    let mut found = Vec::new();
    let mut files = 0;
    for entry in walkdir::WalkDir::new(&src) {
        let entry = entry.unwrap();
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "rs") || path.ends_with("src/output.rs") {
            continue;
        }
        files += 1;
        let text = std::fs::read_to_string(path).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if forbidden.iter().any(|f| code.contains(f)) {
                found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(files > 20, "{files} files under {}", src.display());
    assert!(
        found.is_empty(),
        "print through outln!/errln! (src/output.rs), so a closed pipe cannot panic:\n{}",
        found.join("\n")
    );
}
