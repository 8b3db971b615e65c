//! Other tools' conventions, read as those tools read them: the variables
//! and values users already set for PyTorch, CMake, cudarc, NVIDIA's Rust
//! crates and mistral.rs, and what each of those reads to find CUDA.
//!
//! - [`torch`]: `TORCH_CUDA_ARCH_LIST` (`8.0;8.6+PTX`, `Ampere`);
//! - [`nvcc_flags`]: `CUDA_NVCC_FLAGS`, and its arch flags against the plan;
//! - [`msvc`]: what nvcc needs with cl.exe as its host compiler;
//! - [`consumers`]: the crates and tools of one build that find CUDA on
//!   their own, what each will see, and what to hand each so that all of
//!   them use the selected toolkit.

pub mod consumers;
pub mod msvc;
pub mod nvcc_flags;
pub mod torch;
