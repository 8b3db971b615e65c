//! `cuda-build`: the CUDA toolchain, found, checked and explained, for `build.rs`.
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
//! | module | job |
//! |---|---|
//! | [`env`](mod@env) | every environment variable read, in one list |
//! | [`toolkit`] | find CUDA toolkits, check their integrity, choose one |
//! | [`arch`] | compute capabilities and targets, parsed from any spelling |
//! | [`probe`] | the driver and GPUs, via libcuda, nvidia-smi or /proc |
//! | [`facts`] | sourced compatibility tables |
//! | [`compat`] | verdicts from the facts, with reasons and fixes |
//! | [`plan`] | where arch targets come from, and the `-gencode` plan |
//! | [`compile`] | the `Build` builder: nvcc in parallel, cached, incremental |
//! | [`diagnose`] | logs in, stable-coded causes and fixes out |
#![warn(missing_docs)]

// Everything but the build engine lives in `cuda-core`, so programs that only
// run kernels need not compile this crate; it is re-exported under the same paths.
pub use cuda_core::{
    arch, compat, diagnose, env, facts, fsutil, metadata, plan, probe, process, toolkit, Error,
    Result,
};

pub mod compile;
#[cfg(feature = "launchers")]
pub mod launchers;

pub use compile::{Artifacts, Build, OutputKind};
