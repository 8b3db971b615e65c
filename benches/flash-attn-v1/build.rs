// candle-flash-attn-v1 0.0.1's build.rs, ported from its own nvcc calls to
// cuda-build with docs/migrating.md ("A build script that runs nvcc
// itself"), swapped in by benches/compare-ports.sh. The same four sources
// (kernels/*.cu), flags and vendored CUTLASS (3.9.0, under cutlass/), one
// static library `libflashattentionv1.a` linked with the shared cudart.
//
// What the published script did by hand and what took its place:
// - `--gpu-architecture=sm_{CUDA_COMPUTE_CAP}`: SASS and PTX for that arch,
//   which is cuda-build's own reading of CUDA_COMPUTE_CAP (or `--arch`);
// - rayon over `nvcc -c`, then `nvcc --lib`: OutputKind::StaticLib;
// - the timestamp check of kernels/ against the library: cuda-build's
//   dependency tracking (it also sees header edits, which that check missed
//   for kernels/fmha/*.h);
// - no `-fPIC`, no profile flags: `.pic(false)`, `.profile_flags(false)`.
use cuda_build::compile::{Build, Cudart, HeaderSource, OutputKind};

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let mut lib = Build::new();
    // The vendored CUTLASS as the published script passes it (`-I`, its CUDA
    // 13 deprecation warnings printed), or, the improvement after the port
    // (BENCH_VENDORED_HEADER_DEP=1), as a header dependency: `-isystem`.
    println!("cargo::rerun-if-env-changed=BENCH_VENDORED_HEADER_DEP");
    if std::env::var_os("BENCH_VENDORED_HEADER_DEP").is_some_and(|v| v == "1") {
        lib.header_dep("cutlass", HeaderSource::Path("cutlass/include".into()));
    } else {
        lib.include("cutlass/include");
    }
    lib.profile_flags(false)
        .pic(false)
        .glob("kernels/*.cu")
        .flag("-O3")
        .std("17")
        .flag("--default-stream")
        .flag("per-thread")
        .flag("-U__CUDA_NO_HALF_OPERATORS__")
        .flag("-U__CUDA_NO_HALF_CONVERSIONS__")
        .flag("-U__CUDA_NO_HALF2_OPERATORS__")
        .flag("-U__CUDA_NO_BFLOAT16_CONVERSIONS__")
        .flag("--expt-relaxed-constexpr")
        .flag("--expt-extended-lambda")
        .flag("--use_fast_math")
        .flag("--ptxas-options=-v")
        .flag("--verbose")
        .output(OutputKind::StaticLib)
        .module_name("flashattentionv1")
        .generate_module(false)
        .cudart(Cudart::Shared)
        // `rustc-link-lib=flashattentionv1`, no kind: not copied into the rlib.
        .link_lib_modifier("-bundle")
        .compile();
}
