//! Kernel images a package ships, so a build without nvcc can use them.
//!
//! `cargo cuda prebuild` runs the package's own build (the same engine and
//! code path as any build) with `CUDA_BUILD_PREBUILT_RECORD` naming a
//! staging folder ([`staging`]); each build there records its outputs. The
//! CLI writes them into the package as `cuda-prebuilt/manifest.jsonl` (the
//! versioned schema in [`manifest`], docs/prebuilt.md) and
//! `cuda-prebuilt/images/<sha256>.zst`.
//!
//! A downstream build (`run/use_prebuilt.rs`) takes an output from there
//! instead of compiling it only when the manifest matches what it would
//! compile (`serve`): same package-local inputs by content, same flags and
//! defines, the requested arch plan served by the shipped images (the run
//! rules of `cargo cuda inspect`), the same target for static libraries.
//! Each image is checked against its recorded SHA-256 before it is used
//! ([`stored`]); one that fails is refused, never used or cached. The policy
//! is `CUDA_BUILD_PREBUILT` or `[package.metadata.cuda] prebuilt`
//! (`policy`). What a build took is recorded for `cargo cuda inspect`
//! ([`origin`]).
//!
//! Nothing here runs nvcc or reads a `Build`; the engine's stages call in.

pub(crate) mod in_use;
pub mod manifest;
pub mod origin;
pub(crate) mod policy;
pub(crate) mod serve;
pub(crate) mod shipped;
pub mod staging;
pub mod stored;
