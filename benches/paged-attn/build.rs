// mistralrs-paged-attn 0.8.1's build.rs (its CUDA part), ported from cudaforge
// to cuda-build (swapped in by benches/paged-attn/run.sh). Same sources and
// nvcc flags, one static library `libmistralrspagedattention.a` with shared
// cudart, and `cfg(has_fp8)` when every target is sm_80 or newer.
use cuda_build::compile::{Build, Cudart, OutputKind};

fn main() {
    println!("cargo::rustc-check-cfg=cfg(has_fp8)");
    println!("cargo::rerun-if-changed=build.rs");
    let mut lib = Build::new();
    lib.glob("src/cuda/*.cu")
        .std("17")
        .flag("-O3")
        .flag("-U__CUDA_NO_HALF_OPERATORS__")
        .flag("-U__CUDA_NO_HALF_CONVERSIONS__")
        .flag("-U__CUDA_NO_HALF2_OPERATORS__")
        .flag("-U__CUDA_NO_BFLOAT16_CONVERSIONS__")
        .flag("--expt-relaxed-constexpr")
        .flag("--expt-extended-lambda")
        .flag("--use_fast_math")
        // cudaforge adds no profile flags: the same work in both.
        .profile_flags(false)
        .output(OutputKind::StaticLib)
        .module_name("mistralrspagedattention")
        .generate_module(false)
        .cudart(Cudart::Shared);
    // FP8 needs sm_80 on every target: ask the plan before compiling
    // (cudaforge asked nvidia-smi for one GPU, defaulting to 80).
    let plan = lib.plan().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    if plan.sass.iter().chain(&plan.ptx).all(|a| a.cc.major >= 8) {
        lib.define("ENABLE_FP8", None);
        println!("cargo::rustc-cfg=has_fp8");
    }
    // Bench only (benches/pool/run.sh): `BENCH_SPLIT=n` compiles the files
    // named in `BENCH_SPLIT_FILES` with `--split-compile n`.
    println!("cargo::rerun-if-env-changed=BENCH_SPLIT");
    println!("cargo::rerun-if-env-changed=BENCH_SPLIT_FILES");
    if let Some(n) = std::env::var("BENCH_SPLIT").ok().and_then(|n| n.parse().ok()) {
        for f in std::env::var("BENCH_SPLIT_FILES").unwrap_or_default().split_whitespace() {
            lib.file_split_compile(f, n);
        }
    }
    lib.compile();
}
