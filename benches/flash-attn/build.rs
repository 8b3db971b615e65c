// candle-flash-attn 0.11.1's build.rs, ported from cudaforge to cuda-build
// with docs/migrating.md and `Build::like_cudaforge()` (swapped in by
// benches/compare-ports.sh and cargo-cuda/tests/real_crate.rs). The same 53
// sources, flags, header hash and CUTLASS: cudaforge's
// `.with_cutlass(Some("7d49e6c7…"))` becomes `.cutlass_commit(…)`, which uses
// nvidia-cutlass 3.5.0.0 from the store (the v3.5.0 tag's headers, file for
// file; `cargo cuda deps fetch` fetches it from `[package.metadata.cuda]
// cutlass = { commit = "…" }`, which run.sh adds to Cargo.toml).
use cuda_build::compile::{Build, Cudart, OutputKind};
use std::path::Path;

const CUTLASS_COMMIT: &str = "7d49e6c7e2f8896c47f586706e67e1fb215529dc";

// candle-flash-attn's KERNEL_FILES and HEADER_FILES, as published.
const KERNEL_FILES: [&str; 53] = [
    "kernels/flash_api.cu",
    "kernels/flash_fwd_splitkv_hdim512_fp16_sm80.cu",
    "kernels/flash_fwd_splitkv_hdim512_bf16_sm80.cu",
    "kernels/flash_fwd_splitkv_hdim512_fp16_causal_sm80.cu",
    "kernels/flash_fwd_splitkv_hdim512_bf16_causal_sm80.cu",
    "kernels/flash_fwd_splitkv_hdim64_fp16_sm80.cu",
    "kernels/flash_fwd_splitkv_hdim128_fp16_sm80.cu",
    "kernels/flash_fwd_splitkv_hdim256_fp16_sm80.cu",
    "kernels/flash_fwd_splitkv_hdim64_bf16_sm80.cu",
    "kernels/flash_fwd_splitkv_hdim128_bf16_sm80.cu",
    "kernels/flash_fwd_splitkv_hdim256_bf16_sm80.cu",
    "kernels/flash_fwd_splitkv_hdim64_fp16_causal_sm80.cu",
    "kernels/flash_fwd_splitkv_hdim128_fp16_causal_sm80.cu",
    "kernels/flash_fwd_splitkv_hdim256_fp16_causal_sm80.cu",
    "kernels/flash_fwd_splitkv_hdim64_bf16_causal_sm80.cu",
    "kernels/flash_fwd_splitkv_hdim128_bf16_causal_sm80.cu",
    "kernels/flash_fwd_splitkv_hdim256_bf16_causal_sm80.cu",
    "kernels/flash_fwd_hdim128_fp16_sm80.cu",
    "kernels/flash_fwd_hdim160_fp16_sm80.cu",
    "kernels/flash_fwd_hdim192_fp16_sm80.cu",
    "kernels/flash_fwd_hdim224_fp16_sm80.cu",
    "kernels/flash_fwd_hdim256_fp16_sm80.cu",
    "kernels/flash_fwd_hdim512_fp16_sm80.cu",
    "kernels/flash_fwd_hdim32_fp16_sm80.cu",
    "kernels/flash_fwd_hdim64_fp16_sm80.cu",
    "kernels/flash_fwd_hdim96_fp16_sm80.cu",
    "kernels/flash_fwd_hdim128_bf16_sm80.cu",
    "kernels/flash_fwd_hdim160_bf16_sm80.cu",
    "kernels/flash_fwd_hdim192_bf16_sm80.cu",
    "kernels/flash_fwd_hdim224_bf16_sm80.cu",
    "kernels/flash_fwd_hdim256_bf16_sm80.cu",
    "kernels/flash_fwd_hdim512_bf16_sm80.cu",
    "kernels/flash_fwd_hdim32_bf16_sm80.cu",
    "kernels/flash_fwd_hdim64_bf16_sm80.cu",
    "kernels/flash_fwd_hdim96_bf16_sm80.cu",
    "kernels/flash_fwd_hdim128_fp16_causal_sm80.cu",
    "kernels/flash_fwd_hdim160_fp16_causal_sm80.cu",
    "kernels/flash_fwd_hdim192_fp16_causal_sm80.cu",
    "kernels/flash_fwd_hdim224_fp16_causal_sm80.cu",
    "kernels/flash_fwd_hdim256_fp16_causal_sm80.cu",
    "kernels/flash_fwd_hdim512_fp16_causal_sm80.cu",
    "kernels/flash_fwd_hdim32_fp16_causal_sm80.cu",
    "kernels/flash_fwd_hdim64_fp16_causal_sm80.cu",
    "kernels/flash_fwd_hdim96_fp16_causal_sm80.cu",
    "kernels/flash_fwd_hdim128_bf16_causal_sm80.cu",
    "kernels/flash_fwd_hdim160_bf16_causal_sm80.cu",
    "kernels/flash_fwd_hdim192_bf16_causal_sm80.cu",
    "kernels/flash_fwd_hdim224_bf16_causal_sm80.cu",
    "kernels/flash_fwd_hdim256_bf16_causal_sm80.cu",
    "kernels/flash_fwd_hdim512_bf16_causal_sm80.cu",
    "kernels/flash_fwd_hdim32_bf16_causal_sm80.cu",
    "kernels/flash_fwd_hdim64_bf16_causal_sm80.cu",
    "kernels/flash_fwd_hdim96_bf16_causal_sm80.cu",
];

const HEADER_FILES: [&str; 18] = [
    "kernels/alibi.h",
    "kernels/block_info.h",
    "kernels/dropout.h",
    "kernels/error.h",
    "kernels/flash.h",
    "kernels/flash_fwd_kernel.h",
    "kernels/flash_fwd_launch_template.h",
    "kernels/hardware_info.h",
    "kernels/kernel_helpers.h",
    "kernels/kernel_traits.h",
    "kernels/kernel_traits_sm90.h",
    "kernels/kernels.h",
    "kernels/mask.h",
    "kernels/philox.cuh",
    "kernels/rotary.h",
    "kernels/softmax.h",
    "kernels/static_switch.h",
    "kernels/utils.h",
];

/// The published build's FNV-1a hash of the headers' names and contents,
/// passed as `-DCANDLE_FLASH_ATTN_HEADER_HASH` (the crate's own define).
fn header_hash() -> u64 {
    let mut hash: u64 = 14695981039346656037;
    let mut update = |bytes: &[u8]| {
        for &b in bytes {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(1099511628211);
        }
    };
    for file in HEADER_FILES {
        update(file.as_bytes());
        update(&std::fs::read(file).unwrap_or_else(|e| panic!("{file}: {e}")));
    }
    hash
}

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let hash = format!("0x{:016x}", header_hash());
    // The test and the bench's subset mode delete kernels; the full run keeps all.
    let kernels: Vec<&str> = KERNEL_FILES
        .iter()
        .copied()
        .filter(|f| Path::new(f).is_file())
        .collect();
    let mut lib = Build::like_cudaforge();
    lib.files(&kernels)
        .cutlass_commit(CUTLASS_COMMIT)
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
        .define("CANDLE_FLASH_ATTN_HEADER_HASH", hash.as_str())
        // `builder.build_lib(build_dir.join("libflashattention.a"))`, linked as
        // `rustc-link-lib=flashattention` (unbundled), `dylib=cudart`, `dylib=stdc++`.
        .output(OutputKind::StaticLib)
        .module_name("flashattention")
        .generate_module(false)
        .cudart(Cudart::Shared)
        .link_lib_modifier("-bundle");
    // candle's `-Xcompiler -fPIC` (MSVC: `-D_USE_MATH_DEFINES`): the preset adds it.
    // CANDLE_FLASH_ATTN_BUILD_DIR (a directory shared between builds): the kernel cache does that job.
    // The improvement after the port, for benches/stable-ids.sh: every build
    // of the template-only instance files gives the same bytes.
    println!("cargo::rerun-if-env-changed=BENCH_STABLE_MODULE_IDS");
    if std::env::var_os("BENCH_STABLE_MODULE_IDS").is_some_and(|v| v == "1") {
        lib.stable_module_ids(true);
    }
    lib.compile();
}
