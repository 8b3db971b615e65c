// mistralrs-paged-attn 0.8.1's build.rs (its CUDA part), ported from cudaforge
// to cuda-build with docs/migrating.md and `Build::like_cudaforge()` (swapped
// in by benches/paged-attn/run.sh and cargo-cuda/tests/real_crate.rs). The
// same sources and nvcc flags, one static library
// `libmistralrspagedattention.a` with shared cudart, linked unbundled, and
// `cfg(has_fp8)` when every target is sm_80 or newer.
use cuda_build::compile::{Build, Cudart, OutputKind};

fn main() {
    println!("cargo::rustc-check-cfg=cfg(has_fp8)");
    println!("cargo::rerun-if-changed=build.rs");
    let mut lib = Build::like_cudaforge();
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
        .flag("--verbose")
        // `.arg("--compiler-options").arg("-fPIC")`: kept as written (cuda-build adds `-Xcompiler -fPIC` too).
        .flag("--compiler-options")
        .flag("-fPIC")
        .output(OutputKind::StaticLib)
        .module_name("mistralrspagedattention")
        .generate_module(false)
        .cudart(Cudart::Shared)
        .link_lib_modifier("-bundle");
    // `CUDA_NVCC_FLAGS`, read when the build script itself was compiled.
    if let Some(flags) = option_env!("CUDA_NVCC_FLAGS") {
        lib.flag("--compiler-options").flag(flags);
    }
    // `get_compute_cap().unwrap_or(80) >= 80` → ENABLE_FP8: asked of the plan
    // instead, so every target must be sm_80 or newer.
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
