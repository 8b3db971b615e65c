//! The `Build` builder: its settings and what a build returns (the build itself is in `run`).

use super::layout::Layout;
use crate::env::Env;
use crate::plan::ArchPlan;
use crate::toolkit::Toolkit;
use crate::Error;
use std::path::{Path, PathBuf};

/// What nvcc produces for each source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputKind {
    /// PTX text for the plan's PTX arch (or the highest SASS arch): `<stem>.ptx`.
    Ptx,
    /// One cubin per real arch: `<stem>.sm_80.cubin`, `<stem>.sm_90a.cubin`, ….
    Cubin,
    /// One fatbin with SASS for every target plus PTX for the highest: `<stem>.fatbin`.
    #[default]
    Fatbin,
    /// Host objects linked into `lib<module_name>.a`, with cudart linked statically.
    StaticLib,
}

impl OutputKind {
    /// `ptx`, `cubin`, `fatbin` or `staticlib` (the generated module's `KIND`).
    pub fn as_str(self) -> &'static str {
        match self {
            OutputKind::Ptx => "ptx",
            OutputKind::Cubin => "cubin",
            OutputKind::Fatbin => "fatbin",
            OutputKind::StaticLib => "staticlib",
        }
    }
}

/// One compiled source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelArtifact {
    /// The `.cu` file.
    pub source: PathBuf,
    /// The main output (for cubins: the highest arch's; for a static library: the object).
    pub output: PathBuf,
    /// Every output file (one per arch for cubins).
    pub outputs: Vec<PathBuf>,
    /// What was produced.
    pub kind: OutputKind,
    /// Kernel entry points.
    pub entries: Vec<String>,
    /// Targets in nvcc's words (`sm_80`, `compute_90`).
    pub archs: Vec<String>,
    /// The Rust module name in the generated file.
    pub module: String,
}

/// How the sources were satisfied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BuildStats {
    /// Sources nvcc compiled.
    pub compiled: usize,
    /// Sources copied from the persistent cache.
    pub from_cache: usize,
    /// Sources whose outputs in OUT_DIR were already current.
    pub up_to_date: usize,
}

/// What a build produced.
#[derive(Debug, Clone)]
pub struct Artifacts {
    /// The generated Rust module (`$OUT_DIR/<module_name>.rs`).
    pub module: PathBuf,
    /// One entry per source, in source order.
    pub kernels: Vec<KernelArtifact>,
    /// The toolkit version used (None when nothing was compiled, e.g. on docs.rs).
    pub toolkit_version: Option<String>,
    /// The arch plan used for sources without an override.
    pub plan: Option<ArchPlan>,
    /// Compiled / cached / up-to-date counts.
    pub stats: BuildStats,
    /// The static library, for [`OutputKind::StaticLib`].
    pub library: Option<PathBuf>,
    /// Deduplicated warnings (nvcc's and the plan's), as printed for cargo.
    pub warnings: Vec<String>,
}

/// Compiles CUDA sources from a build script. See the [module docs](super).
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
#[derive(Debug, Clone)]
pub struct Build {
    pub(super) env: Option<Env>,
    pub(super) files: Vec<PathBuf>,
    pub(super) dirs: Vec<PathBuf>,
    pub(super) globs: Vec<String>,
    pub(super) excludes: Vec<String>,
    pub(super) includes: Vec<PathBuf>,
    pub(super) defines: Vec<(String, Option<String>)>,
    pub(super) flags: Vec<String>,
    pub(super) std: Option<String>,
    pub(super) file_flags: Vec<(PathBuf, String)>,
    pub(super) file_archs: Vec<(PathBuf, String)>,
    pub(super) ccbin: Option<PathBuf>,
    pub(super) output: OutputKind,
    pub(super) arch: Option<String>,
    pub(super) fallback_arch: Option<String>,
    pub(super) module_name: String,
    pub(super) rdc: bool,
    pub(super) cache_dir: Option<PathBuf>,
    pub(super) no_cache: bool,
    pub(super) toolkit: Option<Toolkit>,
    pub(super) out_dir: Option<PathBuf>,
    pub(super) emit_cargo: bool,
    pub(super) launchers: bool,
    pub(super) write_fault: Option<i32>,
    // cc parity (see `parity.rs`).
    pub(super) flags_if_supported: Vec<String>,
    pub(super) toolkit_root: Option<PathBuf>,
    pub(super) archiver: Option<PathBuf>,
    pub(super) cargo_warnings: bool,
    pub(super) cargo_metadata: bool,
    pub(super) profile_flags: Option<bool>,
    pub(super) device_debug: Option<bool>,
    pub(super) layout: Layout,
    pub(super) header_deps: Vec<super::header_deps::Resolved>,
    pub(super) header_needs: Vec<super::header_deps::Needs>,
    pub(super) setup_errors: Vec<Error>,
}

impl Default for Build {
    fn default() -> Self {
        Build::new()
    }
}

impl Build {
    /// A builder with no sources, fatbin output and module name `kernels`.
    pub fn new() -> Build {
        Build {
            env: None,
            files: Vec::new(),
            dirs: Vec::new(),
            globs: Vec::new(),
            excludes: Vec::new(),
            includes: Vec::new(),
            defines: Vec::new(),
            flags: Vec::new(),
            std: None,
            file_flags: Vec::new(),
            file_archs: Vec::new(),
            ccbin: None,
            output: OutputKind::Fatbin,
            arch: None,
            fallback_arch: None,
            module_name: "kernels".into(),
            rdc: false,
            cache_dir: None,
            no_cache: false,
            toolkit: None,
            out_dir: None,
            emit_cargo: true,
            launchers: false,
            write_fault: None,
            flags_if_supported: Vec::new(),
            toolkit_root: None,
            archiver: None,
            cargo_warnings: true,
            cargo_metadata: true,
            profile_flags: None,
            device_debug: None,
            layout: Layout::default(),
            header_deps: Vec::new(),
            header_needs: Vec::new(),
            setup_errors: Vec::new(),
        }
    }

    /// Adds a source file (relative paths are from `CARGO_MANIFEST_DIR`).
    pub fn file(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.files.push(path.as_ref().to_path_buf());
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
        self.dirs.push(path.as_ref().to_path_buf());
        self
    }

    /// Adds the files matching a glob (`cu/*.cu`, `kernels/**/*.cu`).
    pub fn glob(&mut self, pattern: &str) -> &mut Self {
        self.globs.push(pattern.to_string());
        self
    }

    /// Leaves out sources matching a glob (against the package-relative path or the file name).
    pub fn exclude(&mut self, pattern: &str) -> &mut Self {
        self.excludes.push(pattern.to_string());
        self
    }

    /// Adds an include directory (`-I`); it must exist.
    pub fn include(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.includes.push(dir.as_ref().to_path_buf());
        self
    }

    /// Defines a macro: `define("BLOCK", "256")` or `define("FAST", None)`.
    pub fn define<'a>(&mut self, name: &str, value: impl Into<Option<&'a str>>) -> &mut Self {
        self.defines
            .push((name.to_string(), value.into().map(str::to_string)));
        self
    }

    /// Adds one nvcc argument for every source (e.g. `-lineinfo`, `--use_fast_math`).
    pub fn flag(&mut self, flag: &str) -> &mut Self {
        self.flags.push(flag.to_string());
        self
    }

    /// A header-only dependency: its include dirs are added and its version
    /// goes into the cache key. An index package is read from the store that
    /// `cargo cuda deps fetch` fills; build scripts never download.
    pub fn header_dep(&mut self, name: &str, source: super::HeaderSource) -> &mut Self {
        let env = self.env.clone().unwrap_or_else(Env::from_process);
        match super::header_deps::resolve(&env, name, &source) {
            Ok(dep) => {
                self.includes.extend(dep.includes.iter().cloned());
                let macro_name = format!(
                    "CUDA_BUILD_DEP_{}",
                    name.to_ascii_uppercase()
                        .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
                );
                self.defines
                    .push((macro_name, Some(format!("\"{}\"", dep.version))));
                self.header_deps.push(dep);
            }
            Err(e) => self.setup_errors.push(e),
        }
        self
    }

    /// CUTLASS and CuTe from NVIDIA's `nvidia-cutlass` wheel (`"4.2"`), in the
    /// store; also requires C++17 (set when `std` is not) and sm_80+ targets.
    pub fn cutlass(&mut self, version: &str) -> &mut Self {
        self.header_needs
            .push(super::header_deps::cutlass_needs(version));
        self.header_dep(
            "cutlass",
            super::HeaderSource::Index {
                package: "nvidia-cutlass".into(),
                version: version.into(),
            },
        )
    }

    /// Every header-only dependency the package's `[package.metadata.cuda]`
    /// declares (`cutlass = "4.2"` and `[package.metadata.cuda.header-deps]`),
    /// as [`Build::header_dep`] would add them: the same declaration
    /// `cargo cuda deps fetch` reads to fill the store. CUTLASS from
    /// `nvidia-cutlass` brings its checks, as with [`Build::cutlass`]. Call it
    /// after [`Build::env`] when setting one (it reads `CARGO_MANIFEST_DIR`).
    pub fn header_deps_from_metadata(&mut self) -> &mut Self {
        let env = self.env.clone().unwrap_or_else(Env::from_process);
        let deps = match super::header_deps::declared(&super::run::package_dir(&env)) {
            Ok(deps) => deps,
            Err(e) => {
                self.setup_errors.push(e);
                return self;
            }
        };
        for (name, source) in deps {
            if let super::HeaderSource::Index { package, version } = &source {
                if package == "nvidia-cutlass" {
                    self.header_needs
                        .push(super::header_deps::cutlass_needs(version));
                }
            }
            self.header_dep(&name, source);
        }
        self
    }

    /// The C++ standard: `17`, `c++17` or `c++20`.
    pub fn std(&mut self, std: &str) -> &mut Self {
        self.std = Some(std.to_string());
        self
    }

    /// Adds an nvcc argument for one source only.
    pub fn file_flag(&mut self, file: impl AsRef<Path>, flag: &str) -> &mut Self {
        self.file_flags
            .push((file.as_ref().to_path_buf(), flag.to_string()));
        self
    }

    /// Compiles one source for other archs than the rest (same spellings as [`Build::arch`]).
    pub fn file_arch(&mut self, file: impl AsRef<Path>, arch: &str) -> &mut Self {
        self.file_archs
            .push((file.as_ref().to_path_buf(), arch.to_string()));
        self
    }

    /// The host compiler for nvcc (`-ccbin`); it wins over `NVCC_CCBIN` and
    /// the `cc` crate's choice (`CXX`, `CXX_<target>`, …; see
    /// [`compile`](super#the-host-toolchain)).
    pub fn ccbin(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.ccbin = Some(path.as_ref().to_path_buf());
        self
    }

    /// What to produce (default [`OutputKind::Fatbin`]).
    pub fn output(&mut self, kind: OutputKind) -> &mut Self {
        self.output = kind;
        self
    }

    /// The arch list, e.g. `"80;90"` (see [`crate::arch`]); environment
    /// variables such as `CUDA_ARCHS` rank below it (see [`crate::plan`]).
    pub fn arch(&mut self, archs: &str) -> &mut Self {
        self.arch = Some(archs.to_string());
        self
    }

    /// Archs used only when nothing is set and no GPU is detected.
    pub fn fallback_arch(&mut self, archs: &str) -> &mut Self {
        self.fallback_arch = Some(archs.to_string());
        self
    }

    /// The generated module's file name without `.rs` (default `kernels`);
    /// also the static library's name.
    pub fn module_name(&mut self, name: &str) -> &mut Self {
        self.module_name = name.to_string();
        self
    }

    /// Relocatable device code (`-rdc=true` and a device-link step) for static libraries.
    pub fn rdc(&mut self, on: bool) -> &mut Self {
        self.rdc = on;
        self
    }

    /// The persistent cache directory (default: `CUDA_BUILD_CACHE_DIR`, else the user cache dir).
    pub fn cache_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.cache_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Turns the persistent cache off (as `CUDA_BUILD_NO_CACHE=1` does).
    pub fn no_cache(&mut self) -> &mut Self {
        self.no_cache = true;
        self
    }

    /// Uses this toolkit instead of discovering one.
    pub fn toolkit(&mut self, toolkit: Toolkit) -> &mut Self {
        self.toolkit = Some(toolkit);
        self
    }

    /// Where outputs and the module go (default: `OUT_DIR`).
    pub fn out_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Whether to print `cargo:` lines (default true; tests turn it off).
    pub fn emit_cargo(&mut self, on: bool) -> &mut Self {
        self.emit_cargo = on;
        self
    }

    /// Generates typed launchers into each source's module (needs the
    /// `launchers` feature and libclang; see `cuda_build::launchers`). Off by
    /// default: Cargo unifies features across build scripts, so a feature
    /// alone must not change another crate's generated module.
    pub fn launchers(&mut self, on: bool) -> &mut Self {
        self.launchers = on;
        self
    }

    /// Reads variables from this environment instead of the process's
    /// (tests; tools that build on behalf of another package).
    pub fn env(&mut self, env: Env) -> &mut Self {
        self.env = Some(env);
        self
    }

    /// Makes every write of an output or of the module fail with this OS
    /// error (e.g. 28, ENOSPC), to test error paths without filling a disk.
    #[doc(hidden)]
    pub fn simulate_write_error(&mut self, errno: i32) -> &mut Self {
        self.write_fault = Some(errno);
        self
    }

    /// Builds everything; on failure panics with the full explained error,
    /// as `cc::Build::compile` does (cargo shows it; a test can catch it
    /// with `std::panic::catch_unwind`). Several builds in one script share
    /// one job pool with [`super::compile_all`].
    pub fn compile(&self) -> Artifacts {
        super::pool::compile_all([self]).remove(0)
    }

    /// Builds everything, returning the error instead of exiting, so a crate
    /// can make CUDA optional.
    pub fn try_compile(&self) -> Result<Artifacts, Error> {
        super::pool::try_compile_all([self]).map(|mut v| v.remove(0))
    }
}
