// The cudaforge side of benches/flash/build.rs: candle-flash-attn 0.11.1's
// own build.rs, with CUTLASS from BENCH_CUTLASS instead of a git fetch and
// all cores (CUDAFORGE_THREADS) instead of half.
use cudaforge::{KernelBuilder, Result};
use std::path::PathBuf;

fn main() -> Result<()> {
    println!("cargo::rerun-if-changed=build.rs");
    let cutlass = PathBuf::from(std::env::var("BENCH_CUTLASS").expect("BENCH_CUTLASS"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR not set"));
    let builder = KernelBuilder::new()
        .source_glob("kernels/*.cu")
        .out_dir(&out_dir)
        .include_path(cutlass.join("include"))
        .include_path(cutlass.join("tools/util/include"))
        .arg("-std=c++17")
        .arg("-O3")
        .arg("-U__CUDA_NO_HALF_OPERATORS__")
        .arg("-U__CUDA_NO_HALF_CONVERSIONS__")
        .arg("-U__CUDA_NO_HALF2_OPERATORS__")
        .arg("-U__CUDA_NO_BFLOAT16_CONVERSIONS__")
        .arg("--expt-relaxed-constexpr")
        .arg("--expt-extended-lambda")
        .arg("--use_fast_math")
        .arg("-Xcompiler")
        .arg("-fPIC");
    builder.build_lib(out_dir.join("libflashattention.a"))?;
    println!("cargo::rustc-link-search={}", out_dir.display());
    println!("cargo::rustc-link-lib=flashattention");
    println!("cargo::rustc-link-lib=dylib=cudart");
    println!("cargo::rustc-link-lib=dylib=stdc++");
    Ok(())
}
