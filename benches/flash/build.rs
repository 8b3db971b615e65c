// A few FlashAttention-2 instances from candle-flash-attn 0.11.1 (CUTLASS
// from the store: `cargo cuda deps fetch`), built with cuda-build as
// candle-flash-attn builds them with cudaforge: same flags, one static
// library `libflashattention.a` with shared cudart. benches/pool/run.sh
// copies it in; BENCH_CUTLASS names CUTLASS's source root.
use cuda_build::compile::{Build, Cudart, OutputKind};

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=BENCH_CUTLASS");
    println!("cargo::rerun-if-env-changed=BENCH_SPLIT");
    let cutlass = std::path::PathBuf::from(std::env::var("BENCH_CUTLASS").expect("BENCH_CUTLASS"));
    // cudaforge's own shape: SASS only for `80` (CUDA_COMPUTE_CAP), with
    // `--default-stream per-thread`, and no profile flags. (`Build::new()`
    // made `80` SASS and PTX: a second device compile of every file, which
    // cudaforge does not do.)
    let mut lib = Build::like_cudaforge();
    lib.glob("kernels/*.cu")
        .include("kernels")
        .include(cutlass.join("include"))
        .include(cutlass.join("tools/util/include"))
        .std("17")
        .flags([
            "-O3",
            "-U__CUDA_NO_HALF_OPERATORS__",
            "-U__CUDA_NO_HALF_CONVERSIONS__",
            "-U__CUDA_NO_HALF2_OPERATORS__",
            "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
            "--expt-relaxed-constexpr",
            "--expt-extended-lambda",
            "--use_fast_math",
        ])
        .output(OutputKind::StaticLib)
        .module_name("flashattention")
        .generate_module(false)
        .cudart(Cudart::Shared);
    // Every instance is a long pole: BENCH_SPLIT=n splits them all.
    if let Some(n) = std::env::var("BENCH_SPLIT")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        lib.split_compile(n);
    }
    lib.compile();
}
