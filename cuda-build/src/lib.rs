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
//! | [`image`] | kernel images in any file (fatbin, cubin, PTX), and whether they run on a GPU and driver |
//! | [`compile`] | the `Build` builder: nvcc in parallel, cached, incremental |
//! | [`diagnose`] | logs in, stable-coded causes and fixes out |
#![warn(missing_docs)]

pub mod arch;
pub mod compat;
pub mod compile;
pub mod diagnose;
pub mod env;
mod error;
pub mod facts;
pub mod fsutil;
pub mod image;
#[cfg(feature = "launchers")]
pub mod launchers;
pub mod metadata;
pub mod plan;
pub mod probe;
pub mod process;
pub mod toolkit;

pub use compile::{Artifacts, Build, OutputKind};
pub use error::{Error, Result};
