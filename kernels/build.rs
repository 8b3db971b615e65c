//! Compiles the workload's kernels (cu/*.cu) with cuda-build.
//!
//! Arch targets: CUDA_ARCHS (or the other settings cuda-build documents),
//! else the GPUs present, else the fallback below, so CI without a GPU
//! builds sm_80 and sm_90 SASS plus compute_90 PTX.
//!
//! The main module also gets typed launchers (cuda-build's `launchers`
//! feature), which reads the kernels' signatures with libclang: building this
//! crate needs libclang (`apt-get install libclang-dev`, or `LIBCLANG_PATH`).
use cuda_build::compile::{Build, OutputKind};

fn main() {
    Build::new()
        .glob("cu/*.cu")
        .include("cu")
        .fallback_arch("80;90")
        .module_name("kernels")
        // A typed launch function per kernel, checked by rustc at every call.
        .launchers(true)
        .compile();

    // For `cuda-workload --force-arch-mismatch`: SASS for Turing only, no
    // PTX, so every Ampere-or-newer GPU lacks a usable image.
    Build::new()
        .file("cu/vector_add.cu")
        .include("cu")
        .arch("sm_75")
        .output(OutputKind::Cubin)
        .module_name("mismatch")
        .compile();
}
