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
#![doc = include_str!("env_vars.md")]
#![warn(missing_docs)]

// Everything but the build engine lives in `cuda-core`, so programs that only
// run kernels need not compile this crate; it is re-exported under the same paths.
pub use cuda_core::{
    arch, compat, diagnose, env, facts, fsutil, image, metadata, plan, probe, process, toolkit,
    Error, ErrorKind, Result,
};

pub mod compile;
#[cfg(feature = "launchers")]
pub mod launchers;

pub use compile::{compile_all, try_compile_all, Artifacts, Build, OutputKind};
