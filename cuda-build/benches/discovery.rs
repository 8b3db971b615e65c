//! Discovery time with one toolkit present, as a build script sees it.
//!
//! `cargo bench -p cuda-build --bench discovery` prints a table. Each "cold"
//! and "warm" sample is a fresh child process (so the in-process memo is
//! empty, as in a new build script): cold has an empty on-disk cache (runs
//! `nvcc --version`; the wheels' RECORDs answer for ptxas and cicc, which an
//! install without them runs and scans), warm reuses it. The toolkit is the
//! real CUDA 13.0 wheel install named by `CARGO_CUDA_TEST_CU13`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::toolkit::{self, DiscoverOptions};

const SAMPLES: usize = 15;

fn env_for(rule: &str, root: &Path, cache: &Path) -> Env {
    let system_path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&system_path).collect();
    let env = Env::empty().set(Var::CudaBuildCacheDir, cache);
    match rule {
        "CUDA_HOME" => env.set(Var::CudaHome, root).set(Var::Path, system_path),
        "PATH" => {
            dirs.insert(0, root.join("bin"));
            env.set(Var::Path, std::env::join_paths(dirs).unwrap())
        }
        "VIRTUAL_ENV" => {
            // root is <site>/nvidia/cu13; make a venv whose site-packages is <site>.
            let venv = cache.join("venv");
            let lib = venv.join("lib/python3.11");
            std::fs::create_dir_all(&lib).unwrap();
            let site = root.parent().unwrap().parent().unwrap();
            let _ = std::os::unix::fs::symlink(site, lib.join("site-packages"));
            env.set(Var::VirtualEnv, venv).set(Var::Path, system_path)
        }
        other => panic!("unknown rule {other}"),
    }
}

/// Child mode: one discovery, prints its time in microseconds.
fn once(rule: &str, root: &Path, cache: &Path) {
    let env = env_for(rule, root, cache);
    let start = Instant::now();
    let d = toolkit::discover(&env, &DiscoverOptions::default()).expect("discover");
    let took = start.elapsed();
    let tk = d.selected_toolkit().expect("a toolkit");
    assert!(!tk.is_broken(), "{:?}", tk.problems);
    println!("{}", took.as_micros());
}

fn child(rule: &str, root: &Path, cache: &Path) -> Duration {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--once", rule])
        .arg(root)
        .arg(cache)
        .output()
        .expect("run child");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let micros: u64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("micros");
    Duration::from_micros(micros)
}

fn stats(mut v: Vec<Duration>) -> String {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    format!(
        "{:>8.2} {:>8.2} {:>8.2}",
        ms(v[0]),
        ms(v[v.len() / 2]),
        ms(v[v.len() - 1])
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--once") {
        once(&args[2], Path::new(&args[3]), Path::new(&args[4]));
        return;
    }
    let root = match std::env::var_os("CARGO_CUDA_TEST_CU13") {
        Some(r) => PathBuf::from(r),
        None => {
            eprintln!("skipped: CARGO_CUDA_TEST_CU13 is not set (run scripts/test.sh first)");
            return;
        }
    };
    println!(
        "discovery with one toolkit ({}), {SAMPLES} samples each, ms",
        root.display()
    );
    println!(
        "{:<12} {:<6} {:>8} {:>8} {:>8}",
        "found via", "cache", "min", "median", "max"
    );
    for rule in ["CUDA_HOME", "PATH", "VIRTUAL_ENV"] {
        let mut cold = Vec::new();
        let mut warm = Vec::new();
        let warm_dir = tempfile::tempdir().unwrap();
        child(rule, &root, warm_dir.path()); // fills the on-disk cache
        for _ in 0..SAMPLES {
            let fresh = tempfile::tempdir().unwrap();
            cold.push(child(rule, &root, fresh.path()));
            warm.push(child(rule, &root, warm_dir.path()));
        }
        // In-process repeats: the memo answers, nothing is run or read.
        let env = env_for(rule, &root, warm_dir.path());
        let memo: Vec<Duration> = (0..SAMPLES)
            .map(|_| {
                let start = Instant::now();
                toolkit::discover(&env, &DiscoverOptions::default()).unwrap();
                start.elapsed()
            })
            .collect();
        println!("{rule:<12} {:<6} {}", "cold", stats(cold));
        println!("{rule:<12} {:<6} {}", "warm", stats(warm));
        println!("{rule:<12} {:<6} {}", "memo", stats(memo));
    }
}
