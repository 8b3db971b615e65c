//! The sample workload's CUDA kernels, compiled by `cuda-build` from `cu/`.
//!
//! [`kernels`] is the generated module: one submodule per source file with
//! its image (`IMAGE`), entry names (`ENTRIES`) and arch targets (`ARCHS`),
//! plus the toolkit version and the whole build's arch list. Each submodule
//! also has a typed launcher per kernel (cuda-build's `launchers` feature),
//! whose parameters are the kernel's C parameters, so rustc checks every
//! launch. Load an image with cudarc and launch through it:
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use cuda_kernels::kernels::vector_add;
//! use cudarc::driver::LaunchConfig;
//! let ctx = cudarc::driver::CudaContext::new(0)?;
//! let module = ctx.load_module(cudarc::nvrtc::Ptx::from_binary(vector_add::IMAGE.to_vec()))?;
//! let f = module.load_function("vectorAdd")?;
//! let stream = ctx.default_stream();
//! let n = 1 << 20;
//! let a = stream.alloc_zeros::<f32>(n)?;
//! let b = stream.alloc_zeros::<f32>(n)?;
//! let mut c = stream.alloc_zeros::<f32>(n)?;
//! // SAFETY: `f` is vectorAdd; a, b and c hold n floats, and the kernel
//! // touches only indices below n (a grid-stride loop).
//! unsafe {
//!     vector_add::vector_add(&stream, &f, LaunchConfig::for_num_elems(n as u32), &a, &b, &mut c, n as u64)?
//! };
//! # Ok(()) }
//! ```
//!
//! Building needs libclang (the launchers read the kernels' signatures with
//! it): `apt-get install libclang-dev`, or `LIBCLANG_PATH` set to the
//! directory holding `libclang.so`.
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

/// vectorAdd built as `sm_75` SASS only (no typed launcher: it is only
/// loaded, never launched), with no PTX: no GPU of compute
/// capability 8.0 or newer can run it. `cuda-workload --force-arch-mismatch`
/// loads it on purpose to show the diagnosis.
#[allow(missing_docs)]
pub mod mismatch {
    include!(concat!(env!("OUT_DIR"), "/mismatch.rs"));
}

/// The typed launchers of `sgemm` and `sgemmTf32`, which share one C
/// signature `(int M, int N, int K, float alpha, const float* A, const float*
/// B, float beta, float* C)`: one type, so a caller can pick either kernel
/// (and `tests/launchers.rs` checks both launchers coerce to it).
pub type GemmLauncher = unsafe fn(
    &cudarc::driver::CudaStream,
    &cudarc::driver::CudaFunction,
    cudarc::driver::LaunchConfig,
    i32,
    i32,
    i32,
    f32,
    &cudarc::driver::CudaSlice<f32>,
    &cudarc::driver::CudaSlice<f32>,
    f32,
    &mut cudarc::driver::CudaSlice<f32>,
) -> Result<(), cudarc::driver::DriverError>;

/// The arch the [`mismatch`] module was built for.
pub const MISMATCH_ARCH: &str = "sm_75";

pub use kernels::*;
