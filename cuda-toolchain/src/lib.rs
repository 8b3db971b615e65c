//! `cuda-toolchain`: what cuda-build and cargo-cuda know about CUDA, without the build engine.
//!
//! A program that only runs kernels depends on this crate, not on `cuda-build`,
//! to probe the GPUs and driver, check its targets and explain a CUDA error:
//!
//! ```no_run
//! use cuda_toolchain::{diagnose, env::Env, probe};
//!
//! let report = probe::probe(&Env::from_process(), &probe::ProbeOptions::default());
//! println!("{} GPU(s), driver {:?}", report.gpus.len(), report.driver.map(|d| d.version));
//! for d in diagnose::diagnose("CUDA_ERROR_NO_BINARY_FOR_GPU", &diagnose::Context::default()) {
//!     println!("{}", diagnose::render(&d));
//! }
//! ```
//!
//! Data flows one way:
//!
//! ```text
//! env ─► toolkit (discovery) ─┐
//!        probe (driver, GPUs) ─┼─► plan (arch targets, -gencode) ─► [cuda-build: compile]
//!        facts / compat ───────┘
//!                                  diagnose ◄── every failure
//! ```
//!
//! | module | job |
//! |---|---|
//! | [`env`](mod@env) | every environment variable read, in one list |
//! | [`toolkit`] | find CUDA toolkits, check their integrity, choose one |
//! | [`arch`] | compute capabilities and targets, parsed from any spelling |
//! | [`probe`] | the driver and GPUs, via libcuda, nvidia-smi or /proc |
//! | [`facts`] | sourced compatibility tables |
//! | [`compat`] | verdicts from the facts, with reasons and fixes |
//! | [`plan`] | where arch targets come from, and the `-gencode` plan |
//! | [`diagnose`] | logs in, stable-coded causes and fixes out |
//! | [`image`] | kernel images in any file (fatbin, cubin, PTX), and whether they run on a target |
//! | [`interop`] | other tools' conventions (PyTorch, CMake, cudarc, NVIDIA's crates): what they read, and what to hand them |
//! | [`metadata`] | `[package.metadata.cuda]` of a manifest |
//! | [`cutlass`] | CUTLASS releases on the index, and the git commits whose headers are theirs |
//! | `jit` (feature `cudarc`) | loading a kernel image with the driver JIT's logs |
//! | [`process`], [`fsutil`] | children under a deadline; atomic file writes |
#![warn(missing_docs)]

pub mod arch;
pub mod compat;
mod cuda_errors;
pub mod cutlass;
pub mod diagnose;
pub mod env;
mod env_check;
mod error;
pub mod facts;
pub mod fsutil;
pub mod image;
pub mod interop;
#[cfg(feature = "cudarc")]
pub mod jit;
pub mod metadata;
pub mod plan;
pub mod probe;
pub mod process;
pub mod redact;
mod tool_version;
pub mod toolkit;

pub use error::{Error, ErrorKind, Result};
