//! `cuda-build`: the CUDA toolchain, found, checked and explained, for `build.rs`.
//!
//! ```no_run
//! // build.rs (in fn main): every .cu file under cu/, for sm_80 and sm_90
//! cuda_build::Build::new().dir("cu").arch("80;90").compile();
//!
//! // src/lib.rs: one module per .cu file, each with its IMAGE and ENTRIES
//! // include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
//! ```
//!
//! It reads like `cc::Build` (`file`, `include(s)`, `define`, `flag(s)`,
//! `flag_if_supported`, `compile`/`try_compile`), takes the host compiler and
//! archiver from the `cc` crate (`CXX`, `AR`, per `TARGET`), and honours
//! cargo's profile. Moving from cc, bindgen_cuda or cudaforge:
//! `docs/migrating.md`.
//!
//! Data flows one way:
//!
//! ```text
//! env ─► toolkit (discovery) ─┐
//!        probe (driver, GPUs) ─┼─► plan (arch targets, -gencode) ─► compile ─► generated module
//!        facts / compat ───────┘                                       │
//!                                            diagnose ◄── every failure ┘
//! ```
//!
//! This crate is the build engine ([`compile`], and `launchers` with the
//! `launchers` feature). Everything before it (environment, toolkit discovery,
//! the GPU probe, facts, the arch plan, diagnosis) lives in
//! [`cuda-toolchain`](cuda_toolchain), re-exported here as
//! [`cuda_build::cuda_toolchain`](cuda_toolchain) so a build script that needs an
//! [`Env`](cuda_toolchain::env::Env) for [`Build::env`] or wants to print the
//! [`ArchPlan`](cuda_toolchain::plan::ArchPlan) needs no second dependency.
//! Programs that only run kernels depend on `cuda-toolchain` alone.
#![doc = include_str!("env_vars.md")]
#![warn(missing_docs)]

// Everything but the build engine lives in `cuda-toolchain`, so programs that
// only run kernels need not compile this crate. Build scripts reach it through
// `cuda_build::cuda_toolchain` (an `Env` for `Build::env`, a plan to print)
// without a second dependency; the error types are this crate's API.
pub use cuda_toolchain;
pub use cuda_toolchain::{Error, ErrorKind, Result};

pub mod compile;
#[cfg(feature = "launchers")]
pub mod launchers;

pub use compile::{compile_all, try_compile_all, Artifacts, Build, OutputKind};
