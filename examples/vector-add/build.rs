//! Compiles cu/vector_add.cu into a fatbin (SASS for each planned arch, PTX
//! for the highest) and generates `$OUT_DIR/kernels.rs`.
//!
//! Arch targets come from CUDA_ARCHS (or the other documented settings),
//! else the GPUs present; with neither (CI), the fallback list below.
fn main() {
    cuda_build::compile::Build::new()
        .file("cu/vector_add.cu")
        .fallback_arch("80;90")
        .module_name("kernels")
        .compile();
}
