//! Compiling .cu kernels: the [`Build`] builder for build.rs, parallel under
//! cargo's jobserver, incremental, cached, with a generated Rust module.
//!
//! ```no_run
//! // build.rs (in `fn main`)
//! cuda_build::compile::Build::new().dir("cu").std("17").compile();
//! ```
//! ```ignore
//! // src/lib.rs
//! include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
//! // kernels::vector_add::IMAGE, ::ENTRIES, ::ARCHS; TOOLKIT_VERSION; ARCHS
//! let module = ctx.load_module(cudarc::nvrtc::Ptx::from_binary(vector_add::IMAGE.to_vec()))?;
//! ```
//!
//! # Outputs
//!
//! | [`OutputKind`] | files in `$OUT_DIR/cuda-build/<module>/` | module constants |
//! |---|---|---|
//! | `Fatbin` (default) | `<stem>.fatbin`: SASS for every planned arch, PTX for the highest | `IMAGE` |
//! | `Ptx` | `<stem>.ptx` for the plan's PTX arch (else the highest SASS arch) | `IMAGE`, `PTX` |
//! | `Cubin` | `<stem>.sm_80.cubin`, `<stem>.sm_90.cubin`, … one per real arch | `IMAGE` (highest), `CUBINS` |
//! | `StaticLib` | `<stem>.o` and `lib<module>.a`; cudart linked statically | `IMAGE` empty |
//!
//! For a static library the build script prints the link lines:
//! `rustc-link-lib=static=<module>`, `static=cudart_static` (plus
//! `static=cudadevrt` with [`Build::rdc`]) and `dl`, `rt`, `pthread`,
//! `stdc++`, with the toolkit's lib directories as search paths. With
//! `rdc(true)` objects are compiled with `-rdc=true` and an `nvcc -dlink`
//! step adds the device-link object to the archive.
//!
//! With `Build::launchers(true)` (cuda-build's `launchers` feature, libclang
//! at build time) each source's module also gets typed launch functions
//! from `cuda_build::launchers`. It is opt-in per build rather than implied by
//! the feature, because Cargo unifies features across all build scripts
//! that use cuda-build.
//!
//! Module names come from file stems (`vector-add.cu` → `vector_add`); when
//! two sources share a stem, parent directories are prefixed (`a_k`, `b_k`).
//!
//! # Incremental builds and the cache
//!
//! Each output's key is a SHA-256 over: the output kind, the nvcc version,
//! every argument (include dirs, defines, `-std`, `-ccbin`, flags, the
//! `-gencode` plan), `NVCC_PREPEND_FLAGS`/`NVCC_APPEND_FLAGS` (nvcc reads
//! them itself), the source, and every header nvcc's own `-MD` depfile lists
//! (produced by the same nvcc call, so no extra pass). Paths inside the
//! package are keyed relative to it and toolkit headers relative to the
//! toolkit, so a second checkout shares entries.
//!
//! - `$OUT_DIR/cuda-build/<module>/manifest.json` records each source's
//!   inputs with size, mtime and hash: a run with nothing changed only stats
//!   files and starts no nvcc (the arch plan is remembered there too, unless
//!   it came from GPU detection). A touched but unchanged header costs one
//!   hash; a changed header recompiles only the sources that include it.
//! - The persistent cache lives in `CUDA_BUILD_CACHE_DIR`, else
//!   `$XDG_CACHE_HOME/cuda-build`, else `~/.cache/cuda-build`; turn it off
//!   with `CUDA_BUILD_NO_CACHE=1` or [`Build::no_cache`]. After
//!   `cargo clean`, in another profile or another checkout, identical
//!   sources are copied from it instead of compiled. Entries are written to
//!   a temporary directory and renamed into place; every file's size and
//!   hash are checked on read, so an interrupted build is a miss, not a
//!   corrupt kernel. Concurrent build scripts may compile the same source at
//!   once: both succeed and one entry is kept. Nothing prunes the cache yet;
//!   deleting the directory is always safe.
//! - Known limit: a new header that shadows an already-found one (created
//!   earlier on the include path) is not noticed until a keyed input changes
//!   (the same trade-off as ccache's direct mode).
//!
//! `cargo:rerun-if-changed` is printed for every source, every header nvcc
//! reported and every directory or glob root given, and
//! `rerun-if-env-changed` for every variable in [`crate::env::Var`].
//!
//! # Parallelism
//!
//! One nvcc per source runs at once, bounded by cargo's jobserver (the build
//! script's implicit token plus one token per extra nvcc), or by `NUM_JOBS`
//! (else the CPU count) when there is no jobserver. When there are fewer
//! sources than free slots, multi-arch sources get nvcc's `--threads N`.
//!
//! # sccache (and other compiler caches)
//!
//! Set `CUDA_BUILD_WRAPPER=sccache` (or any wrapper program), or use
//! `RUSTC_WRAPPER=sccache` for the whole build: when `RUSTC_WRAPPER` names
//! sccache, nvcc runs as `sccache nvcc …` too. sccache caches nvcc's
//! compilations (and, with its distributed mode, spreads them over
//! machines); cuda-build's own cache still answers first, so sccache only
//! sees real compiles. See `docs/sccache.md` for a setup walk-through.
//!
//! # Progress
//!
//! When `CARGO_CUDA_PROGRESS` names a file, each event is appended as one
//! JSON line: `{"event":"start"|"done"|"cached"|"failed","file":"cu/a.cu",
//! "archs":"sm_80,sm_90,compute_90","done":3,"total":12}`.
//!
//! # Errors
//!
//! Bad input ends in an [`crate::Error`] with a stable code: `source-not-found`,
//! `no-cuda-sources`, `include-dir-missing`, `out-dir-not-writable`,
//! `disk-full` (ENOSPC while writing, also detected behind nvcc's "Could not
//! write file"), `nvcc-timeout` (`CUDA_BUILD_TIMEOUT`, default 300 s),
//! `nvcc-not-found`/`nvcc-not-executable` (nvcc or its wrapper cannot start), `archive-failed`, `invalid-module-name`, `out-dir-unset`.
//! A failed nvcc becomes an [`crate::Error`] (`nvcc-failed`) with the exact
//! command line (quoted for display; it ran without a shell), nvcc's full
//! output and the diagnosis engine's explanation when one matches. nvcc's
//! warnings become deduplicated `cargo:warning` lines. [`Build::compile`]
//! prints the error and exits with status 1; [`Build::try_compile`] returns
//! it so a crate can make CUDA optional. On docs.rs (`DOCS_RS` set) with no
//! toolkit, nothing is compiled and the module is generated with empty
//! images, so documentation builds succeed.

mod builder;
mod cache;
mod depfile;
mod glue;
mod hash;
pub mod inspect;
mod jobs;
mod library;
mod manifest;
mod module;
mod nvcc;
mod progress;
pub use progress::{Event as ProgressKind, ProgressEvent};
mod run;
mod sources;

pub use builder::{Artifacts, Build, BuildStats, KernelArtifact, OutputKind};
