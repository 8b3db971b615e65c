//! Integration tests: cuda-build's kernel cache with its Redis tier
//! (`CUDA_BUILD_CACHE_REDIS`), against a real `redis-server` started on a
//! free 127.0.0.1 port and the real nvcc 13.0.
//!
//! Two "machines" are two checkouts of one small kernel package at
//! different paths, each with its own OUT_DIR and its own (empty) local
//! cuda-build cache, sharing one Redis. nvcc is reached through a script
//! that logs every call and execs the real nvcc, so "machine B ran no nvcc"
//! is read from that log, not inferred.

use cuda_build::compile::{Artifacts, Build, OutputKind};
use cuda_toolchain::env::{Env, Var};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use workspace_tests::redis::{free_port, Redis};

/// The shared part of a test: the real toolkit, and the logging nvcc
/// (one script for both machines, as a CI image has one nvcc path).
struct Lab {
    dir: tempfile::TempDir,
    root: PathBuf,
}

impl Lab {
    fn new() -> Option<Lab> {
        let root = workspace_tests::cu13_root()?;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("nvcc.log");
        workspace_tests::write_script(
            &dir.path().join("bin/nvcc"),
            &format!(
                "echo \"$*\" >> '{}'\nexec '{}' \"$@\"",
                log.display(),
                root.join("bin/nvcc").display()
            ),
        );
        Some(Lab { dir, root })
    }

    /// nvcc calls since the last look (the log is emptied).
    fn nvcc_calls(&self) -> Vec<String> {
        let log = self.dir.path().join("nvcc.log");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&log);
        text.lines().map(str::to_string).collect()
    }

    /// A checkout of the package at `<lab>/<name>/pkg`: `vector_add.cu`
    /// (includes only `common.cuh`) and `scale.cu` / `shift.cu`, whose kernel
    /// names come from a macro in `include/names.cuh`.
    fn checkout(&self, name: &str) -> Machine {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/compile/kernels");
        let home = self.dir.path().join(name);
        let cu = home.join("pkg/cu");
        std::fs::create_dir_all(cu.join("include")).unwrap();
        for e in std::fs::read_dir(src.join("include")).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), cu.join("include").join(e.file_name())).unwrap();
        }
        std::fs::write(
            home.join("pkg/Cargo.toml"),
            "[package]\nname = \"fixture\"\nversion = \"0.1.0\"\n",
        )
        .unwrap();
        std::fs::copy(src.join("vector_add.cu"), cu.join("vector_add.cu")).unwrap();
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
        let m = Machine {
            home,
            nvcc: self.dir.path().join("bin/nvcc"),
            root: self.root.clone(),
        };
        m.rename("v1");
        m
    }
}

/// One "machine": a checkout, its OUT_DIRs and its own local cuda-build cache.
struct Machine {
    home: PathBuf,
    nvcc: PathBuf,
    root: PathBuf,
}

impl Machine {
    fn pkg(&self) -> PathBuf {
        self.home.join("pkg")
    }

    /// Every kernel's name gets this suffix (through the header macro).
    fn rename(&self, suffix: &str) {
        std::fs::write(
            self.pkg().join("cu/include/names.cuh"),
            format!("#define KNAME(n) n##_{suffix}\n"),
        )
        .unwrap();
    }

    fn env(&self, redis: Option<&str>) -> Env {
        let env = Env::empty().set(Var::CargoManifestDir, self.pkg());
        match redis {
            Some(url) => env.set(Var::CudaBuildCacheRedis, url),
            None => env,
        }
    }

    /// Builds `pkg/cu` for sm_80 + sm_90 as `kind`, into `out-<kind>` and
    /// the machine's local cache `cache`.
    fn build(&self, env: Env, kind: OutputKind, cache: &str) -> Artifacts {
        let tk = cuda_toolchain::toolkit::Toolkit {
            root: self.root.clone(),
            nvcc: self.nvcc.clone(),
            version: Some(semver::Version::new(13, 0, 88)),
            found_via: cuda_toolchain::toolkit::FoundVia::Explicit,
            include_dirs: vec![self.root.join("include")],
            lib_dirs: vec![self.root.join("lib")],
            problems: Vec::new(),
        };
        Build::new()
            .env(env)
            .toolkit(tk)
            .out_dir(self.home.join(format!("out-{}-{cache}", kind.as_str())))
            .cache_dir(self.home.join(cache))
            .emit_cargo(false)
            .output(kind)
            .arch("80;90")
            .dir("cu")
            .try_compile()
            .unwrap_or_else(|e| panic!("{e}"))
    }
}

/// Every output file of a build, by module and file name, with its bytes.
fn outputs(a: &Artifacts) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = a
        .kernels
        .iter()
        .flat_map(|k| {
            let mut files = vec![k.output.clone()];
            files.extend(k.outputs.iter().cloned());
            files.into_iter().map(move |p| {
                (
                    format!("{}/{}", k.module, p.file_name().unwrap().to_string_lossy()),
                    std::fs::read(&p).unwrap(),
                )
            })
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

fn entries(a: &Artifacts) -> Vec<String> {
    let mut v: Vec<String> = a.kernels.iter().flat_map(|k| k.entries.clone()).collect();
    v.sort();
    v
}

fn remote_notes(a: &Artifacts) -> Vec<&String> {
    a.warnings
        .iter()
        .filter(|w| w.contains("CUDA_BUILD_CACHE_REDIS"))
        .collect()
}

const KINDS: [OutputKind; 3] = [OutputKind::Fatbin, OutputKind::Ptx, OutputKind::Cubin];

/// Machine A fills Redis; machine B (other path, empty local cache) runs
/// no nvcc at all and gets byte-identical PTX, cubins and fatbins. A header
/// edit on B then recompiles exactly its includers (nothing stale comes
/// from Redis), and A, making the same edit, gets B's new kernels from
/// Redis without running nvcc.
#[test]
fn a_second_machine_runs_no_nvcc_and_gets_identical_kernels() {
    let Some(lab) = Lab::new() else { return };
    let Some(redis) = Redis::start(lab.dir.path()) else {
        return;
    };
    let url = redis.endpoint();
    let (a, b) = (lab.checkout("machine-a"), lab.checkout("machine-b"));

    let built_a: Vec<Artifacts> = KINDS
        .iter()
        .map(|k| a.build(a.env(Some(&url)), *k, "cache"))
        .collect();
    for x in &built_a {
        assert_eq!(x.stats.compiled, 3, "{:?}", x.warnings);
        assert!(remote_notes(x).is_empty(), "{:?}", x.warnings);
    }
    assert!(!lab.nvcc_calls().is_empty(), "the log records nvcc calls");
    assert!(!redis.keys("cuda-build:v1:objects:*").is_empty());
    assert!(!redis.keys("cuda-build:v1:deps:*").is_empty());

    for (k, from_a) in KINDS.iter().zip(&built_a) {
        let x = b.build(b.env(Some(&url)), *k, "cache");
        assert_eq!(
            (x.stats.compiled, x.stats.from_cache),
            (0, 3),
            "{:?}",
            x.warnings
        );
        assert!(remote_notes(&x).is_empty(), "{:?}", x.warnings);
        assert_eq!(
            outputs(&x),
            outputs(from_a),
            "machine B's {} outputs differ from A's",
            k.as_str()
        );
        assert_eq!(entries(&x), ["scale_v1", "shift_v1", "vectorAdd"]);
    }
    assert_eq!(lab.nvcc_calls(), Vec::<String>::new(), "machine B ran nvcc");

    // A header edit on B: exactly the two includers compile, with the new names.
    b.rename("v2");
    let edited = b.build(b.env(Some(&url)), OutputKind::Fatbin, "cache");
    assert_eq!(
        (edited.stats.compiled, edited.stats.up_to_date),
        (2, 1),
        "exactly the includers"
    );
    assert_eq!(entries(&edited), ["scale_v2", "shift_v2", "vectorAdd"]);
    let calls = lab.nvcc_calls();
    assert!(
        calls.iter().all(|c| !c.contains("vector_add.cu")) && calls.len() >= 2,
        "{calls:?}"
    );

    // A makes the same edit: B's kernels come from Redis, no nvcc.
    a.rename("v2");
    let again = a.build(a.env(Some(&url)), OutputKind::Fatbin, "cache");
    assert_eq!(
        (again.stats.compiled, again.stats.from_cache),
        (0, 2),
        "{:?}",
        again.warnings
    );
    assert_eq!(outputs(&again), outputs(&edited));
    assert_eq!(lab.nvcc_calls(), Vec::<String>::new());
}

/// A Redis entry damaged by someone else (one byte of a kernel flipped,
/// meta intact) is a miss: nvcc compiles, the artifact is the real one, and
/// the fresh compile overwrites the damaged entry.
#[test]
fn a_corrupted_redis_entry_is_recompiled_never_used() {
    let Some(lab) = Lab::new() else { return };
    let Some(redis) = Redis::start(lab.dir.path()) else {
        return;
    };
    let url = redis.endpoint();
    let (a, b) = (lab.checkout("machine-a"), lab.checkout("machine-b"));
    let first = a.build(a.env(Some(&url)), OutputKind::Fatbin, "cache");
    let keys = redis.keys("cuda-build:v1:objects:*");
    assert_eq!(keys.len(), 3);
    let mut good = Vec::new();
    for k in &keys {
        let v = redis.get(k).unwrap();
        let mut bad = v.clone();
        *bad.last_mut().unwrap() ^= 0x40;
        redis.set(k, &bad);
        good.push(v);
    }
    lab.nvcc_calls();

    let x = b.build(b.env(Some(&url)), OutputKind::Fatbin, "cache");
    assert_eq!(
        (x.stats.compiled, x.stats.from_cache),
        (3, 0),
        "{:?}",
        x.warnings
    );
    assert!(remote_notes(&x).is_empty(), "{:?}", x.warnings);
    assert_eq!(outputs(&x), outputs(&first));
    assert!(!lab.nvcc_calls().is_empty());
    let now: Vec<Vec<u8>> = keys.iter().map(|k| redis.get(k).unwrap()).collect();
    assert_eq!(now, good, "the fresh compile repaired the entries");

    // Garbage in place of a deps record is a miss too, not an error.
    for k in redis.keys("cuda-build:v1:deps:*") {
        redis.set(&k, b"\x00not json");
    }
    let c = lab.checkout("machine-c");
    let y = c.build(c.env(Some(&url)), OutputKind::Fatbin, "cache");
    assert_eq!(y.stats.compiled, 3, "{:?}", y.warnings);
    assert_eq!(outputs(&y), outputs(&first));
}

/// Redis that cannot be used: a malformed URL, nothing listening, a server
/// that answers something other than RESP, and Redis killed in the middle
/// of the build. Each time the build succeeds with the local cache, prints
/// exactly one warning naming CUDA_BUILD_CACHE_REDIS and why, and its
/// kernels are plain nvcc's.
#[test]
fn unusable_redis_builds_locally_with_one_warning() {
    let Some(lab) = Lab::new() else { return };
    let m = lab.checkout("m");
    let plain = m.build(m.env(None), OutputKind::Fatbin, "plain");
    let check = |env: Env, cache: &str, why: &[&str]| {
        let x = m.build(env, OutputKind::Fatbin, cache);
        assert_eq!(x.stats.compiled, 3);
        let notes = remote_notes(&x);
        assert_eq!(notes.len(), 1, "{:?}", x.warnings);
        for w in why {
            assert!(notes[0].contains(w), "{w:?} not in: {}", notes[0]);
        }
        assert_eq!(outputs(&x), outputs(&plain));
    };

    check(
        m.env(Some("127.0.0.1:6379")),
        "malformed",
        &[
            "CUDA_BUILD_CACHE_REDIS=`127.0.0.1:6379` is not used",
            "expected redis://host:port[/db]",
            "local cache only",
        ],
    );

    let closed = free_port();
    check(
        m.env(Some(&format!("redis://127.0.0.1:{closed}"))),
        "down",
        &[
            "remote kernel cache is off for this build",
            &format!("CUDA_BUILD_CACHE_REDIS=redis://127.0.0.1:{closed}/0"),
            "local cache only",
        ],
    );

    // An HTTP server where Redis should be.
    let http = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = http.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut s in http.incoming().flatten() {
            let mut buf = [0u8; 512];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    check(
        m.env(Some(&format!("redis://127.0.0.1:{port}"))),
        "garbage",
        &["remote kernel cache is off", "not a Redis reply"],
    );

    // Killed mid-build: the first compile kills it (a wrapper around nvcc).
    let Some(redis) = Redis::start(lab.dir.path()) else {
        return;
    };
    let killer = lab.dir.path().join("killer/wrap");
    workspace_tests::write_script(
        &killer,
        &format!("kill -9 {} 2>/dev/null\nexec \"$@\"", redis.pid()),
    );
    check(
        m.env(Some(&redis.endpoint()))
            .set(Var::CudaBuildWrapper, &killer),
        "killed",
        &[
            "remote kernel cache is off for this build",
            &redis.endpoint(),
        ],
    );
}
