//! Compiles cu/vector_add.cu into a fatbin (SASS for each planned arch, PTX
//! for the highest) and generates `$OUT_DIR/kernels.rs`.
//!
//! Arch targets come from CUDA_ARCHS (or the other documented settings),
//! else the GPUs present; with neither (CI), the fallback list below.
//!
//! Needs libclang at build time for the typed launcher
//! (`apt-get install libclang-dev`, or set `LIBCLANG_PATH`).
fn main() {
    cuda_build::compile::Build::new()
        .file("cu/vector_add.cu")
        .fallback_arch("80;90")
        .module_name("kernels")
        // `kernels::vector_add::vector_add`: a launch function typed after
        // the kernel's C signature (reads it with libclang).
        .launchers(true)
        .compile();
}
