//! Compile times of a real CUTLASS device GEMM (tests/cutlass/gemm.cu, sm_80)
//! through cuda-build, with CUTLASS from the store: cold, cached, no-op,
//! after a CUTLASS version change, and back; plus the bytes each stored
//! version takes. Run by `scripts/bench-cutlass.sh`, which fills the store.
//!
//! Arguments: `<store> <new version> <old version>`; CUDA_HOME names the toolkit.

use std::path::{Path, PathBuf};
use std::time::Instant;

use cuda_build::Build;
use cuda_toolchain::env::{Env, Var};

/// One timed compile; returns seconds and whether nvcc ran (a cache or OUT_DIR hit does not).
fn compile(store: &Path, version: &str, out: &Path, cache: &Path) -> (f64, usize) {
    let env = Env::from_process().set(Var::CargoCudaHome, store);
    let gemm = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cutlass/gemm.cu");
    let start = Instant::now();
    let a = Build::new()
        .env(env)
        .cutlass(version)
        .file(gemm)
        .arch("80")
        .out_dir(out)
        .cache_dir(cache)
        .emit_cargo(false)
        .try_compile()
        .unwrap_or_else(|e| {
            eprintln!("bench-cutlass: CUTLASS {version} failed to compile:\n{e}");
            std::process::exit(1)
        });
    let secs = start.elapsed().as_secs_f64();
    (secs, a.stats.compiled)
}

/// Total bytes of the regular files under `dir`.
fn bytes(dir: &Path) -> (u64, u64) {
    let (mut total, mut files) = (0, 0);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
                continue;
            };
            if meta.is_dir() {
                stack.push(e.path());
            } else if meta.is_file() {
                total += meta.len();
                files += 1;
            }
        }
    }
    (total, files)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [store, new, old] = args.as_slice() else {
        eprintln!("usage: bench_cutlass <store> <new version> <old version> (scripts/bench-cutlass.sh passes them)");
        std::process::exit(2);
    };
    let store = PathBuf::from(store);
    let scratch = tempfile::tempdir().expect("a temp dir");
    let cache = scratch.path().join("cache");
    let out = |n: &str| scratch.path().join(n);

    let mut rows: Vec<(String, f64, usize)> = Vec::new();
    let mut run = |what: &str, version: &str, dir: &str| {
        let (s, n) = compile(&store, version, &out(dir), &cache);
        eprintln!("bench-cutlass: {what}: {s:.1} s");
        rows.push((what.to_string(), s, n));
    };
    run(
        &format!("cold (CUTLASS {new}, empty cuda-build cache)"),
        new,
        "a",
    );
    run(
        &format!("cached (CUTLASS {new}, fresh OUT_DIR, warm cache)"),
        new,
        "b",
    );
    run(&format!("no-op (CUTLASS {new}, same OUT_DIR)"), new, "b");
    run(
        &format!("version change {new} -> {old} (same OUT_DIR)"),
        old,
        "b",
    );
    run(
        &format!("version change {old} -> {new} (same OUT_DIR, cached)"),
        new,
        "b",
    );

    println!("| build | time (s) | nvcc runs |");
    println!("|---|---:|---:|");
    for (what, s, n) in &rows {
        println!("| {what} | {s:.1} | {n} |");
    }
    println!();
    println!("| stored version | bytes unpacked | files | wheel (download) |");
    println!("|---|---:|---:|---:|");
    let deps = cuda_toolchain::toolkit::store::deps_dir(&store).join("nvidia-cutlass");
    for version in [new, old] {
        let Some(dep) =
            cuda_toolchain::toolkit::store::find_header_dep(&store, "nvidia-cutlass", version)
        else {
            continue;
        };
        let (total, files) = bytes(&deps.join(&dep.version));
        let wheel = std::fs::read_dir(store.join("wheels"))
            .into_iter()
            .flatten()
            .flatten()
            .find(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.starts_with(&format!("nvidia_cutlass-{}-", dep.version))
            })
            .and_then(|e| e.metadata().ok())
            .map_or("-".to_string(), |m| m.len().to_string());
        println!("| {} | {total} | {files} | {wheel} |", dep.version);
    }
}
