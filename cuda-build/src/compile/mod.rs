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
//! | `StaticLib` | `<stem>.o` and `lib<module>.a` | `IMAGE` empty |
//!
//! For a static library the build script prints the link lines:
//! `rustc-link-lib=static=<module>` (with [`Build::link_lib_modifier`]
//! `static:-bundle=<module>`: the archive stays out of the rlib and the
//! final link finds it in `OUT_DIR`), the CUDA runtime as chosen with
//! [`Build::cudart`] ([`Cudart::Static`], the default: `static=cudart_static`
//! plus `dl`, `rt`, `pthread`; [`Cudart::Shared`]: `dylib=cudart`, found at
//! run time through the loader path; [`Cudart::None`]), `stdc++`, and
//! `static=cudadevrt` with [`Build::rdc`], with the toolkit's lib
//! directories as search paths. With `rdc(true)` objects are compiled with
//! `-rdc=true` and an `nvcc -dlink` step adds the device-link object to the
//! archive. For `*-msvc` targets (cargo's `TARGET`, or [`Build::target`])
//! objects are `.obj`, nvcc gets no `-Xcompiler -fPIC`, and no GNU
//! libraries are linked.
//!
//! ## Keeping a crate's layout
//!
//! [`Build::output_dir`] (relative to `OUT_DIR`) and [`Build::output_names`]
//! reproduce layouts crates already use, e.g. candle's `$OUT_DIR/affine.ptx`:
//! `.output_dir(".").output_names(OutputNames::SourceStem).generate_module(false)`.
//! An output directory inside the package's sources, or two sources with
//! one output name, are refused. [`Build::plan`] gives the arch plan before
//! anything compiles (e.g. to add `-DNO_BF16_KERNEL` below sm_80).
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
//! # The host toolchain
//!
//! nvcc gets the host C++ compiler as `-ccbin`, chosen the way the `cc`
//! crate chooses (`cc::Build` does the choosing, reading the [`Env`](cuda_toolchain::env::Env) the
//! build was given): [`Build::ccbin`] first, then `NVCC_CCBIN_<target>`,
//! `TARGET_NVCC_CCBIN`/`HOST_NVCC_CCBIN`, `NVCC_CCBIN`, then cc's
//! `CXX_<target>`, `TARGET_CXX`/`HOST_CXX`, `CXX`, and cc's default for the
//! triple (`c++`; `aarch64-linux-gnu-g++` when cross-compiling; cl.exe from
//! Visual Studio on Windows). Static libraries are archived with cc's
//! archiver (`AR_<target>`, `TARGET_AR`, `AR`, the target's prefixed `ar`,
//! lib.exe), or [`Build::archiver`]. Before anything compiles, the
//! compiler's real version is checked against the toolkit's limits
//! ([`cuda_toolchain::compat::host_compiler_ok`]): one nvcc would refuse is an error
//! (`host-compiler-unsupported`) naming the setting that chose it, unless
//! `-allow-unsupported-compiler` is among the flags. This starts the
//! compiler a few times per build-script run (tens of milliseconds).
//!
//! **Cross-compiling.** Cargo sets `TARGET` for build scripts; a static
//! library's host objects are compiled for it (`aarch64-linux-gnu-g++` for
//! `aarch64-unknown-linux-gnu`). PTX, cubin and fatbin outputs do not depend
//! on the target: they are compiled with the build machine's compiler (the
//! HOST triple), give the same bytes for every `TARGET` and share cache
//! entries.
//!
//! # Cargo profiles
//!
//! `DEBUG=true` adds `-lineinfo`; device debug (`-G`, slow kernels) is
//! opt-in with [`Build::device_debug`] or `CUDA_BUILD_DEVICE_DEBUG=1`;
//! `OPT_LEVEL` becomes the host `-Xcompiler -O<n>` of static libraries.
//! [`Build::profile_flags(false)`](Build::profile_flags) or
//! `CUDA_BUILD_PROFILE_FLAGS=0` turns these off. They are part of the
//! command line, hence of every cache key.
//!
//! # cc's spelling
//!
//! [`Build::includes`], [`Build::flags`], [`Build::flag_if_supported`]
//! (asks nvcc once per flag, answer kept in `$OUT_DIR`),
//! [`Build::toolkit_root`], [`Build::archiver`], [`Build::cargo_warnings`],
//! [`Build::cargo_metadata`] work as their cc namesakes. An arch flag given
//! to [`Build::flag`] (`-arch=sm_80`, `--gpu-architecture sm_80`) becomes the
//! arch plan, with a `cargo:warning` note; `-gencode`/`-code` are refused
//! with a pointer to [`Build::arch`], so the plan is never silently doubled.
//!
//! # Incremental builds and the cache
//!
//! Each output's key is a SHA-256 over: the output kind, the nvcc version,
//! every argument (include dirs, defines, `-std`, `-ccbin`, flags, the
//! `-gencode` plan), `NVCC_PREPEND_FLAGS`/`NVCC_APPEND_FLAGS` (nvcc reads
//! them itself), the source, and every header the compile read (from the
//! line markers of the preprocessed files nvcc keeps with `--keep`, written
//! by the same nvcc call, so no extra pass). Paths inside the
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
//! - The cache also keeps what a clean build would otherwise work out again:
//!   each source's dependency list, the arch plan, the generated typed
//!   launchers and what the host-compiler probe found. A clean build whose
//!   sources are all in the cache starts no process but an optimised
//!   SHA-256 program (`openssl dgst` or `sha256sum`, for the headers it
//!   must hash, in one run, and for big cached files; sha2 in process when
//!   neither is installed) and, for a static library, `ar`.
//! - Known limit: a new header that shadows an already-found one (created
//!   earlier on the include path) is not noticed until a keyed input changes
//!   (the same trade-off as ccache's direct mode).
//!
//! `cargo:rerun-if-changed` is printed for every source, every header nvcc
//! reported and every directory or glob root given, and
//! `rerun-if-env-changed` for every variable in [`cuda_toolchain::env::Var`]; each
//! line once per build script, however many builds or sources share it. The
//! manifest stores each input once. A rerun that compiles nothing reads no
//! output: a static library's key comes from its objects' input keys.
//! nvcc's warnings are printed when a source compiles (or its cached copy is
//! restored), not again on a rerun that finds it current.
//!
//! # Parallelism, memory and the long poles
//!
//! Every nvcc thread holds one of cargo's job slots: the build script's
//! implicit token plus one jobserver token per extra thread, or `NUM_JOBS`
//! (else the CPU count) without a jobserver. Several builds of one build
//! script share one pool when given together to [`compile_all`]
//! (`cuda_build::compile_all([&ptx, &lib])`): a static library's objects
//! compile while PTX files still do. Two builds that would write the same
//! module are refused, naming both.
//!
//! - **Order.** Split jobs first (see below), then jobs never compiled here
//!   (biggest first: the source plus every header it reaches through the
//!   include dirs nvcc is given, header-only dependencies such as CUTLASS
//!   included, times the device passes of its targets: a cicc per virtual
//!   arch, a ptxas per SASS target), then the others by their last
//!   duration, longest first.
//! - **Cost.** Each compile's wall time and the peak resident memory of
//!   nvcc's whole process tree are recorded in the cache's `durations`
//!   records (see `cuda_toolchain::process::tree_memory` for how it is
//!   measured). A corrupt record is ignored with a warning.
//! - **Memory.** The pool never starts a job whose predicted peak (its
//!   recorded one; else what a finished job with the same headers and
//!   flags measured in this build; else one estimated from its size with
//!   headers) would take
//!   the sum of the running jobs' peaks past the budget:
//!   `CUDA_BUILD_MEMORY_BUDGET` (`8G`, `16GiB`, `unlimited`), else 80% of the
//!   smaller of `MemAvailable` and the cgroup's memory limit. Jobs start in
//!   order; one predicted above the whole budget runs alone, with a warning
//!   naming it. An estimate from size is an upper bound, often far above
//!   the truth: a job that has only one, and does not fit beside what runs
//!   (but would alone), starts anyway on a slot that would idle, on trial,
//!   one at a time. Running jobs are measured too: when together they hold
//!   more than the budget, the one started last (a trial, if one runs) is
//!   stopped and compiled again once it fits. One the system kills (SIGKILL: the out-of-memory killer,
//!   when memory the budget counted on was taken) while others run beside
//!   it compiles again, alone, and the budget drops to 80% of what the
//!   compiles held at the kill; killed alone, it is the build's
//!   `compiler-killed` error. Each case is named in a warning. The budget
//!   changes when compiles run, never what they produce: it is not a build
//!   input.
//! - **Long poles.** [`Build::split_compile`] / [`Build::file_split_compile`]
//!   give nvcc `--split-compile n` (cicc and ptxas work on `n` parts of one
//!   source at once), and the job takes `n` slots. The split count changes
//!   the output's bytes, so it is a setting (in the flags, hence every cache
//!   key and the manifest), never derived from the machine. nvcc's
//!   `--threads` (the virtual archs of one call at once) gives the same
//!   bytes, so a multi-target job started when nothing else waits takes the
//!   free slots as threads.
//! - **Timings.** With `CUDA_BUILD_TIMINGS=<dir>` (set by `cargo cuda build
//!   --timings`) the build script writes [`timings`]'s report of every
//!   source: arch targets, start and end, threads, peak memory, cache hit or
//!   miss, critical path; HTML with a timeline, and JSON.
//!
//! # Reproducible outputs
//!
//! nvcc runs in the package directory with package-relative source and
//! include paths, so `__FILE__` strings are the same wherever the checkout
//! lives. The names nvcc gives internal-linkage entities (anonymous
//! namespaces, `static` device functions) hash the source's absolute path,
//! so cudafe++ and cicc are also told its relative path
//! (`--orig_src_path_name`). Two checkouts produce byte-identical PTX,
//! cubins and fatbins, and the same host symbols, and a cache entry from
//! one is exactly what the other would compile. One exception is nvcc's:
//! a file that defines internal-linkage entities and only templates (no
//! ordinary external function or variable; FlashAttention's instance
//! files) gets a module id that ends in nvcc's process id, so its outputs
//! differ from run to run with any builder. [`Build::stable_module_ids`]
//! pre-includes an anchor definition named from the package and the
//! source's relative path, which makes them reproducible too (off by
//! default: it changes every source's internal names).
//!
//! # Outputs are checked
//!
//! Before an output is used or cached its structure is checked: the fatbin
//! header and sizes, a cubin's or object's ELF section table, a PTX file's
//! `.version`/`.target` and balanced braces, the archive's members. An nvcc
//! that exits 0 with a truncated or missing file fails as `nvcc-bad-output`,
//! naming the compiler and the output.
//!
//! # sccache (and other compiler caches)
//!
//! Set `CUDA_BUILD_WRAPPER=sccache` (or any wrapper program), or use
//! `RUSTC_WRAPPER=sccache` for the whole build: when `RUSTC_WRAPPER` names
//! sccache, nvcc runs as `sccache nvcc …` too. sccache caches nvcc's
//! compilations (and, with its distributed mode, spreads them over
//! machines); cuda-build's own cache still answers first, so sccache only
//! sees real compiles. An sccache that is missing, older than 0.9, or whose
//! server does not answer is not used (one warning; plain nvcc); under a
//! working one, nvcc gets `-Xcicc --gen_module_id_file` (see [`sccache`]),
//! and a failure or stall that is sccache's own is compiled again with plain
//! nvcc. See `docs/sccache.md` for a setup walk-through.
//!
//! # Progress
//!
//! When `CARGO_CUDA_PROGRESS` names a file, each event is appended as one
//! JSON line: `{"event":"start"|"done"|"cached"|"failed","file":"cu/a.cu",
//! "archs":"sm_80,sm_90,compute_90","done":3,"total":12}`.
//!
//! # Errors
//!
//! Bad input ends in an [`cuda_toolchain::Error`] with a stable code: `source-not-found`,
//! `no-cuda-sources`, `include-dir-missing`, `out-dir-not-writable`,
//! `disk-full` (ENOSPC while writing, also detected behind nvcc's "Could not
//! write file"), `nvcc-timeout` (`CUDA_BUILD_TIMEOUT`, default 3600 s),
//! `nvcc-not-found`/`nvcc-not-executable` (nvcc or its wrapper cannot start), `archive-failed`, `invalid-module-name`, `invalid-link-modifier`, `out-dir-unset`,
//! `nvcc-bad-output`, `module-name-collision`, `output-collision`,
//! `output-overwrites-source`, `invalid-glob`.
//! A failed nvcc becomes an [`cuda_toolchain::Error`] (`nvcc-failed`) with the exact
//! command line (quoted for display; it ran without a shell), nvcc's full
//! output and the diagnosis engine's explanation when one matches. nvcc's
//! warnings become deduplicated `cargo:warning` lines. [`Build::compile`]
//! prints the error and unwinds with it as its payload, like cc (a build
//! script exits 101; a test catches it with `std::panic::catch_unwind`);
//! [`Build::try_compile`] returns it so a crate can make CUDA optional, and
//! [`cuda_toolchain::Error::kind`] sorts it into an [`cuda_toolchain::ErrorKind`]. On docs.rs (`DOCS_RS` set) with no
//! toolkit, nothing is compiled and the module is generated with empty
//! images, so documentation builds succeed.

mod entry_points;
mod incremental;
mod nvcc;
mod output;
pub mod prebuilt;
mod run;
mod settings;

pub use entry_points::{compile_all, try_compile_all};
pub use incremental::cache_status::{cache_status, CacheStatus};
pub use nvcc::progress::{Event as ProgressKind, ProgressEvent};
pub use nvcc::sccache;
pub use output::artifacts::{Artifacts, BuildStats, KernelArtifact, OutputKind};
pub use output::inspect;
pub use output::timings;
pub use settings::builder::Build;
pub use settings::header_deps::HeaderSource;
pub use settings::host_toolchain::{check_host_compiler, host_compiler, HostTool};
pub use settings::spec::{Cudart, OutputNames, Preset};
