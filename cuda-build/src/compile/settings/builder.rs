//! The `Build` builder and its setters, which write its [`Spec`]. The
//! setters for cc's spellings and for the output layout are beside it
//! (`cc_parity.rs`, `layout.rs`); `Build::compile` and `compile_all` hand
//! builds to the engine (`entry_points.rs`).

use crate::compile::output::artifacts::OutputKind;
use crate::compile::settings::header_deps::{self, HeaderSource};
use crate::compile::settings::package::package_dir;
use crate::compile::settings::spec::Preset;
use crate::compile::settings::spec::{Spec, ToolkitChoice};
use cuda_toolchain::env::Env;
use cuda_toolchain::toolkit::Toolkit;
use cuda_toolchain::Error;
use std::path::Path;

/// Compiles CUDA sources from a build script. See the [module docs](crate::compile).
///
/// ```no_run
/// // build.rs
/// let artifacts = cuda_build::compile::Build::new()
///     .dir("cu")
///     .include("cu/include")
///     .define("BLOCK", "256")
///     .compile();
/// assert!(artifacts.module.ends_with("kernels.rs"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Build {
    /// What the setters write; the engine reads it once prepared (`prepare.rs`).
    pub(crate) spec: Spec,
}

impl Build {
    /// A builder with no sources, fatbin output and module name `kernels`.
    pub fn new() -> Build {
        Build::default()
    }

    /// Adds a source file (relative paths are from `CARGO_MANIFEST_DIR`).
    pub fn file(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.spec.files.push(path.as_ref().to_path_buf());
        self
    }

    /// Adds several source files.
    pub fn files<P: AsRef<Path>>(&mut self, paths: impl IntoIterator<Item = P>) -> &mut Self {
        for p in paths {
            self.file(p);
        }
        self
    }

    /// Adds every `.cu` file under a directory, recursively (hidden files skipped).
    pub fn dir(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.spec.dirs.push(path.as_ref().to_path_buf());
        self
    }

    /// Adds the files matching a glob (`cu/*.cu`, `kernels/**/*.cu`).
    pub fn glob(&mut self, pattern: &str) -> &mut Self {
        self.spec.globs.push(pattern.to_string());
        self
    }

    /// Leaves out sources matching a glob (against the package-relative path or the file name).
    pub fn exclude(&mut self, pattern: &str) -> &mut Self {
        self.spec.excludes.push(pattern.to_string());
        self
    }

    /// Adds an include directory (`-I`); it must exist.
    pub fn include(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.spec.includes.push(dir.as_ref().to_path_buf());
        self
    }

    /// Defines a macro: `define("BLOCK", "256")` or `define("FAST", None)`.
    pub fn define<'a>(&mut self, name: &str, value: impl Into<Option<&'a str>>) -> &mut Self {
        self.spec
            .defines
            .push((name.to_string(), value.into().map(str::to_string)));
        self
    }

    /// Adds one nvcc argument for every source (e.g. `-lineinfo`, `--use_fast_math`).
    pub fn flag(&mut self, flag: &str) -> &mut Self {
        self.spec.flags.push(flag.to_string());
        self
    }

    /// A header-only dependency: its include dirs are added and its version
    /// goes into the cache key. An index package is read from the store that
    /// `cargo cuda deps fetch` fills, or that the build fetches into with
    /// the `fetch` feature (unless `CARGO_NET_OFFLINE`).
    pub fn header_dep(&mut self, name: &str, source: HeaderSource) -> &mut Self {
        let env = self.spec.env.clone().unwrap_or_else(Env::from_process);
        match header_deps::resolve(&env, name, &source) {
            Ok(dep) => self.spec.add_header_dep(dep),
            Err(e) => self.spec.setup_errors.push(e),
        }
        self
    }

    /// CUTLASS and CuTe from NVIDIA's `nvidia-cutlass` wheel (`"4.2"`), in the
    /// store; also requires C++17 (set when `std` is not) and sm_80+ targets.
    pub fn cutlass(&mut self, version: &str) -> &mut Self {
        self.spec
            .header_needs
            .push(header_deps::cutlass_needs(version));
        self.header_dep(
            "cutlass",
            HeaderSource::Index {
                package: "nvidia-cutlass".into(),
                version: version.into(),
            },
        )
    }

    /// CUTLASS at a git commit, as cudaforge's `with_cutlass(Some(commit))`
    /// pins it: a commit whose headers are identical to a release on the
    /// index (tags v3.4.0 to v4.2.0 and the commits around them; see
    /// [`cuda_toolchain::cutlass::COMMITS`]) uses that release, exactly, as
    /// [`Build::cutlass`] would. Another commit is an error that says so:
    /// it needs the git form, `.header_dep("cutlass",
    /// HeaderSource::Git { url, commit })` after `cargo cuda deps fetch
    /// --git cutlass=https://github.com/NVIDIA/cutlass@<commit>`.
    pub fn cutlass_commit(&mut self, commit: &str) -> &mut Self {
        match cuda_toolchain::cutlass::release_for_commit(commit) {
            Some(version) => self.cutlass(version),
            None => {
                self.spec
                    .setup_errors
                    .push(header_deps::unknown_cutlass_commit(commit));
                self
            }
        }
    }

    /// Reproduces what another build crate does on its own (see [`Preset`]):
    /// its stream mode, `-fPIC`, arch form, profile and thread flags, so a
    /// port builds the same code before it is improved on purpose.
    /// docs/migrating.md lists each flag with the line that reproduces it.
    pub fn preset(&mut self, preset: Preset) -> &mut Self {
        self.spec.preset = Some(preset);
        self
    }

    /// `Build::new()` with [`Preset::Cudaforge`]: a port of cudaforge's
    /// `KernelBuilder` in one line.
    pub fn like_cudaforge() -> Build {
        let mut b = Build::new();
        b.preset(Preset::Cudaforge);
        b
    }

    /// `Build::new()` with [`Preset::BindgenCuda`].
    pub fn like_bindgen_cuda() -> Build {
        let mut b = Build::new();
        b.preset(Preset::BindgenCuda);
        b
    }

    /// `Build::new()` with [`Preset::Cc`] and a static library, as cc's
    /// `.cuda(true)` builds.
    pub fn like_cc() -> Build {
        let mut b = Build::new();
        b.preset(Preset::Cc).output(OutputKind::StaticLib);
        b
    }

    /// Every header-only dependency the package's `[package.metadata.cuda]`
    /// declares (`cutlass = "4.2"` and `[package.metadata.cuda.header-deps]`),
    /// as [`Build::header_dep`] would add them: the same declaration
    /// `cargo cuda deps fetch` reads to fill the store. CUTLASS from
    /// `nvidia-cutlass` brings its checks, as with [`Build::cutlass`]. Call it
    /// after [`Build::env`] when setting one (it reads `CARGO_MANIFEST_DIR`).
    ///
    /// A build that declares no header dependency gets the declared ones
    /// without this call, their requirements then advisory (a warning): call
    /// it on the builds that include them to make the requirements errors.
    pub fn header_deps_from_metadata(&mut self) -> &mut Self {
        let env = self.spec.env.clone().unwrap_or_else(Env::from_process);
        let deps = match header_deps::declared(&package_dir(&env)) {
            Ok(deps) => deps,
            Err(e) => {
                self.spec.setup_errors.push(e);
                return self;
            }
        };
        for (name, source) in deps {
            self.spec
                .header_needs
                .extend(header_deps::needs_of(&source, false));
            self.header_dep(&name, source);
        }
        self
    }

    /// The C++ standard: `17`, `c++17` or `c++20`.
    pub fn std(&mut self, std: &str) -> &mut Self {
        self.spec.std = Some(std.to_string());
        self
    }

    /// Adds an nvcc argument for one source only.
    pub fn file_flag(&mut self, file: impl AsRef<Path>, flag: &str) -> &mut Self {
        self.spec
            .file_flags
            .push((file.as_ref().to_path_buf(), flag.to_string()));
        self
    }

    /// Compiles one source for other archs than the rest (same spellings as [`Build::arch`]).
    pub fn file_arch(&mut self, file: impl AsRef<Path>, arch: &str) -> &mut Self {
        self.spec
            .file_archs
            .push((file.as_ref().to_path_buf(), arch.to_string()));
        self
    }

    /// Compiles every source with nvcc's `--split-compile n`: cicc's
    /// optimizer and ptxas work on `n` parts of the source at once, so one
    /// long file takes less wall time, using `n` of cargo's job slots
    /// (taken from its jobserver; such jobs start first). The split count
    /// changes the output's bytes (the same `n` always gives the same
    /// bytes), so it is a setting and part of every cache key, never chosen
    /// from the machine's cores or load. `1` turns it off; `0` (nvcc's "as
    /// many as there are CPUs") is refused.
    pub fn split_compile(&mut self, n: u32) -> &mut Self {
        match split_count(n) {
            Ok(n) => self.spec.split_compile = Some(n),
            Err(e) => self.spec.setup_errors.push(e),
        }
        self
    }

    /// [`Build::split_compile`] for one source (it wins over the build's):
    /// for the few long files that end a build on one core.
    pub fn file_split_compile(&mut self, file: impl AsRef<Path>, n: u32) -> &mut Self {
        match split_count(n) {
            Ok(n) => self.spec.file_splits.push((file.as_ref().to_path_buf(), n)),
            Err(e) => self.spec.setup_errors.push(e),
        }
        self
    }

    /// The host compiler for nvcc (`-ccbin`); it wins over `NVCC_CCBIN` and
    /// the `cc` crate's choice (`CXX`, `CXX_<target>`, …; see
    /// [`compile`](crate::compile#the-host-toolchain)).
    pub fn ccbin(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.spec.ccbin = Some(path.as_ref().to_path_buf());
        self
    }

    /// What to produce (default [`OutputKind::Fatbin`]).
    pub fn output(&mut self, kind: OutputKind) -> &mut Self {
        self.spec.output = kind;
        self
    }

    /// The arch list, e.g. `"80;90"` (see [`cuda_toolchain::arch`]); environment
    /// variables such as `CUDA_ARCHS` rank below it (see [`cuda_toolchain::plan`]).
    pub fn arch(&mut self, archs: &str) -> &mut Self {
        self.spec.arch = Some(archs.to_string());
        self
    }

    /// Archs used only when nothing is set and no GPU is detected.
    pub fn fallback_arch(&mut self, archs: &str) -> &mut Self {
        self.spec.fallback_arch = Some(archs.to_string());
        self
    }

    /// The generated module's file name without `.rs` (default `kernels`);
    /// also the static library's name.
    pub fn module_name(&mut self, name: &str) -> &mut Self {
        self.spec.module_name = name.to_string();
        self
    }

    /// Relocatable device code (`-rdc=true` and a device-link step) for static libraries.
    pub fn rdc(&mut self, on: bool) -> &mut Self {
        self.spec.rdc = on;
        self
    }

    /// Outputs that are the same in every build, for sources that define
    /// only templates (off by default).
    ///
    /// nvcc names a source's internal-linkage entities (anonymous
    /// namespaces, `static` device functions, CUTLASS's `cute::_`) after its
    /// first ordinary external function or variable definition. A source
    /// with none, such as a FlashAttention instance file that only
    /// specializes a template, gets nvcc's **process id** in those names
    /// instead, so its PTX, cubins and objects differ on every compile and
    /// `cargo cuda prebuild --verify` cannot match them.
    ///
    /// With this on, each source is compiled with a pre-included anchor: one
    /// hidden, one-byte `extern "C"` constant named from the package, its
    /// version, the module name and the source's package-relative path.
    /// Every compile of the source then gives the same names, in every
    /// checkout. The names (and so the bytes) differ from a build without
    /// anchors, and each object holds one more (hidden) symbol, which is
    /// why it is not the default, nor part of any `like_*` preset.
    pub fn stable_module_ids(&mut self, on: bool) -> &mut Self {
        self.spec.stable_module_ids = on;
        self
    }

    /// The persistent cache directory (default: `CUDA_BUILD_CACHE_DIR`, else the user cache dir).
    pub fn cache_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.spec.cache_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Turns the persistent cache off (as `CUDA_BUILD_NO_CACHE=1` does).
    pub fn no_cache(&mut self) -> &mut Self {
        self.spec.no_cache = true;
        self
    }

    /// Uses this toolkit instead of discovering one.
    pub fn toolkit(&mut self, toolkit: Toolkit) -> &mut Self {
        self.spec.toolkit = ToolkitChoice::Given(toolkit);
        self
    }

    /// Where outputs and the module go (default: `OUT_DIR`).
    pub fn out_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.spec.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Whether to print `cargo:` lines (default true; tests turn it off).
    pub fn emit_cargo(&mut self, on: bool) -> &mut Self {
        self.spec.emit_cargo = on;
        self
    }

    /// Generates typed launchers into each source's module (needs the
    /// `launchers` feature and libclang; see `cuda_build::launchers`). Off by
    /// default: Cargo unifies features across build scripts, so a feature
    /// alone must not change another crate's generated module.
    pub fn launchers(&mut self, on: bool) -> &mut Self {
        self.spec.launchers = on;
        self
    }

    /// Reads variables from this environment instead of the process's
    /// (tests; tools that build on behalf of another package).
    pub fn env(&mut self, env: Env) -> &mut Self {
        self.spec.env = Some(env);
        self
    }

    /// Makes every write of an output or of the module fail with this OS
    /// error (e.g. 28, ENOSPC), to test error paths without filling a disk.
    #[doc(hidden)]
    pub fn simulate_write_error(&mut self, errno: i32) -> &mut Self {
        self.spec.write_fault = Some(errno);
        self
    }
}

/// A split count that makes outputs the same on every machine.
fn split_count(n: u32) -> Result<u32, Error> {
    if n == 0 {
        return Err(Error::new(
            "split-compile-invalid",
            "Build::split_compile(0) asks nvcc for one part per CPU of the machine that builds, and the split count changes the output's bytes",
        )
        .with_help("give a fixed count, e.g. .split_compile(4), so every machine produces the same kernels; 1 turns splitting off"));
    }
    Ok(n)
}
