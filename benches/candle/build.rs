// candle-kernels 0.11.1's build.rs, ported from cudaforge to cuda-build with
// docs/migrating.md and `Build::like_cudaforge()` (swapped in by
// benches/candle/run.sh and cargo-cuda/tests/real_crate.rs). The same
// sources, flags and layout: `$OUT_DIR/<stem>.ptx` with `$OUT_DIR/ptx.rs`,
// and `libmoe.a` with shared cudart, linked unbundled as candle links it.
// The preset adds what cudaforge adds on its own (`--default-stream
// per-thread`, SASS-only targets, no profile flags, `-Xcompiler -fPIC`).
use cuda_build::compile::{Build, Cudart, OutputKind, OutputNames};
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    // candle's own flags: `.arg("--expt-relaxed-constexpr").arg("-std=c++17").arg("-O3")`.
    let candle_flags = |b: &mut Build| {
        b.flag("--expt-relaxed-constexpr").std("17").flag("-O3");
    };

    // `.source_dir("src").exclude(&["moe_*.cu", "mmvq_gguf.cu", "mmq_*.cu"]).build_ptx()`
    let mut ptx = Build::like_cudaforge();
    ptx.dir("src")
        .exclude("moe_*.cu")
        .exclude("mmvq_gguf.cu")
        .exclude("mmq_*.cu")
        .output(OutputKind::Ptx)
        .output_dir(".")
        .output_names(OutputNames::SourceStem)
        .generate_module(false)
        .module_name("ptx");
    candle_flags(&mut ptx);

    let mut moe_sources = vec![
        "src/moe/moe_gguf.cu",
        "src/moe/moe_wmma.cu",
        "src/moe/moe_wmma_gguf.cu",
        "src/mmvq_gguf.cu",
        "src/mmq_gguf/mmq_quantize.cu",
        "src/mmq_gguf/mmq_instance_q4_0.cu",
        "src/mmq_gguf/mmq_instance_q4_1.cu",
        "src/mmq_gguf/mmq_instance_q5_0.cu",
        "src/mmq_gguf/mmq_instance_q5_1.cu",
        "src/mmq_gguf/mmq_instance_q8_0.cu",
        "src/mmq_gguf/mmq_instance_q2_k.cu",
        "src/mmq_gguf/mmq_instance_q3_k.cu",
        "src/mmq_gguf/mmq_instance_q4_k.cu",
        "src/mmq_gguf/mmq_instance_q5_k.cu",
        "src/mmq_gguf/mmq_instance_q6_k.cu",
    ];
    if std::env::var_os("CARGO_FEATURE_CUTILE").is_some() {
        moe_sources.push("src/moe/moe_align.cu");
    }
    // The bench's subset mode and the test delete sources; the full bench keeps all.
    moe_sources.retain(|s| Path::new(s).is_file());
    // `.source_files(moe_sources)...build_lib(out_dir.join("libmoe.a"))`, then
    // `rustc-link-lib=moe` (no kind: not bundled) and `dylib=cudart`.
    let mut lib = Build::like_cudaforge();
    lib.files(&moe_sources)
        .output(OutputKind::StaticLib)
        .module_name("moe")
        .generate_module(false)
        .cudart(Cudart::Shared)
        .link_lib_modifier("-bundle");
    candle_flags(&mut lib);
    // `detect_compute_cap() < 80` → -DNO_BF16_KERNEL: asked of the plan instead.
    let plan = lib.plan().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    if plan.sass.iter().chain(&plan.ptx).any(|a| a.cc.major < 8) {
        lib.define("NO_BF16_KERNEL", None);
    }
    // candle's own `-D_USE_MATH_DEFINES` (MSVC) and `-Xcompiler -fPIC` (else):
    // the preset adds both, as cudaforge does.

    bench_split(&mut ptx, &|f| !moe_sources.contains(&f) && Path::new(f).is_file());
    bench_split(&mut lib, &|f| moe_sources.contains(&f));
    let [ptx, _lib]: [_; 2] = cuda_build::compile_all([&ptx, &lib])
        .try_into()
        .expect("two builds");
    // candle's `ptx.rs`, as cudaforge's `PtxOutput::write` writes it.
    let mut text = String::new();
    for k in &ptx.kernels {
        let stem = k.output.file_stem().unwrap().to_string_lossy();
        text.push_str(&format!(
            "pub const {}: &str = include_str!(concat!(env!(\"OUT_DIR\"), \"/{stem}.ptx\"));\n",
            stem.to_uppercase().replace(['.', '-'], "_")
        ));
    }
    let path = out_dir.join("ptx.rs");
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
        std::fs::write(&path, text).unwrap();
    }
}

/// Bench only (benches/pool/run.sh): `BENCH_SPLIT=n` compiles the files
/// named in `BENCH_SPLIT_FILES` that are sources of `b` with `--split-compile n`.
fn bench_split(b: &mut Build, of_this_build: &dyn Fn(&str) -> bool) {
    println!("cargo::rerun-if-env-changed=BENCH_SPLIT");
    println!("cargo::rerun-if-env-changed=BENCH_SPLIT_FILES");
    let Some(n) = std::env::var("BENCH_SPLIT").ok().and_then(|n| n.parse().ok()) else {
        return;
    };
    let named = std::env::var("BENCH_SPLIT_FILES").unwrap_or_default();
    for f in named.split_whitespace().filter(|f| of_this_build(f)) {
        b.file_split_compile(f, n);
    }
}
