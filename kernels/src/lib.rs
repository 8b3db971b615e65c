//! The sample workload's CUDA kernels, compiled by `cuda-build` from `cu/`.
//!
//! [`kernels`] is the generated module: one submodule per source file with
//! its image (`IMAGE`), entry names (`ENTRIES`) and arch targets (`ARCHS`),
//! plus the toolkit version and the whole build's arch list. Load an image
//! with cudarc:
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use cuda_kernels::kernels::vector_add;
//! let ctx = cudarc::driver::CudaContext::new(0)?;
//! let module = ctx.load_module(cudarc::nvrtc::Ptx::from_binary(vector_add::IMAGE.to_vec()))?;
//! let f = module.load_function("vectorAdd")?;
//! # let _ = f; Ok(()) }
//! ```
//!
//! Entry points (all `extern "C"`):
//! - `vectorAdd(const float* a, const float* b, float* c, u64 n)`: c = a + b.
//! - `saxpy(float alpha, const float* x, float* y, u64 n)`: y = alpha*x + y.
//! - `reduceSumPartial(const float* x, u64 n, double* partial)` then
//!   `reduceSumFinal(const double* partial, u32 count, double* out)`: sum of x.
//! - `sgemm(int M, int N, int K, float alpha, const float* A, const float* B,
//!   float beta, float* C)`: row-major FP32 GEMM; M, N multiples of 128, K of 16.
//! - `sgemmTf32(...)`: the same contract on tensor cores with TF32 inputs
//!   (10-bit mantissa): not an FP32 result.
#![warn(missing_docs)]

/// The main module: every kernel in `cu/`, fatbins for the planned archs.
#[allow(missing_docs)]
pub mod kernels {
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}

/// vectorAdd built as `sm_75` SASS only, with no PTX: no GPU of compute
/// capability 8.0 or newer can run it. `cuda-workload --force-arch-mismatch`
/// loads it on purpose to show the diagnosis.
#[allow(missing_docs)]
pub mod mismatch {
    include!(concat!(env!("OUT_DIR"), "/mismatch.rs"));
}

/// The arch the [`mismatch`] module was built for.
pub const MISMATCH_ARCH: &str = "sm_75";

pub use kernels::*;
