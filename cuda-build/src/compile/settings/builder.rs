//! The `Build` builder: setters that write its [`Spec`], and the entry points
//! that hand it to the engine (preparing in `parity`, the build in `pool` and `run`).

use crate::compile::output::artifacts::{Artifacts, OutputKind};
use crate::compile::settings::spec::Spec;
use cuda_toolchain::env::Env;
use cuda_toolchain::toolkit::Toolkit;
use cuda_toolchain::Error;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Mutex;

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
    /// What the setters write; the engine reads it once prepared (`parity.rs`).
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
    /// `cargo cuda deps fetch` fills; build scripts never download.
    pub fn header_dep(&mut self, name: &str, source: crate::compile::HeaderSource) -> &mut Self {
        let env = self.spec.env.clone().unwrap_or_else(Env::from_process);
        match crate::compile::settings::header_deps::resolve(&env, name, &source) {
            Ok(dep) => crate::compile::settings::header_deps::apply(&mut self.spec, dep),
            Err(e) => self.spec.setup_errors.push(e),
        }
        self
    }

    /// CUTLASS and CuTe from NVIDIA's `nvidia-cutlass` wheel (`"4.2"`), in the
    /// store; also requires C++17 (set when `std` is not) and sm_80+ targets.
    pub fn cutlass(&mut self, version: &str) -> &mut Self {
        self.spec
            .header_needs
            .push(crate::compile::settings::header_deps::cutlass_needs(
                version,
            ));
        self.header_dep(
            "cutlass",
            crate::compile::HeaderSource::Index {
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
    ///
    /// A build that declares no header dependency gets the declared ones
    /// without this call, their requirements then advisory (a warning): call
    /// it on the builds that include them to make the requirements errors.
    pub fn header_deps_from_metadata(&mut self) -> &mut Self {
        let env = self.spec.env.clone().unwrap_or_else(Env::from_process);
        let deps = match crate::compile::settings::header_deps::declared(
            &crate::compile::run::context::package_dir(&env),
        ) {
            Ok(deps) => deps,
            Err(e) => {
                self.spec.setup_errors.push(e);
                return self;
            }
        };
        for (name, source) in deps {
            self.spec
                .header_needs
                .extend(crate::compile::settings::header_deps::needs_of(
                    &source, false,
                ));
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
        self.spec.toolkit = Some(toolkit);
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

    /// Builds everything; on failure panics with the full explained error,
    /// as `cc::Build::compile` does (cargo shows it; a test can catch it
    /// with `std::panic::catch_unwind`). Several builds in one script share
    /// one job pool with [`compile_all`].
    pub fn compile(&self) -> Artifacts {
        compile_all([self]).remove(0)
    }

    /// Builds everything, returning the error instead of exiting, so a crate
    /// can make CUDA optional.
    pub fn try_compile(&self) -> Result<Artifacts, Error> {
        try_compile_all([self]).map(|mut v| v.remove(0))
    }
}

/// Builds several [`Build`]s with one job pool, then prints their `cargo:`
/// lines once. On failure prints every error and panics with them, as
/// `cc::Build::compile` does (catchable with `std::panic::catch_unwind`).
///
/// ```no_run
/// use cuda_build::compile::{Build, OutputKind};
/// let mut ptx = Build::new();
/// ptx.dir("src/ptx").output(OutputKind::Ptx).module_name("ptx");
/// let mut lib = Build::new();
/// lib.dir("src/lib").output(OutputKind::StaticLib).module_name("lib");
/// let [ptx, lib]: [_; 2] = cuda_build::compile_all([&ptx, &lib]).try_into().unwrap();
/// ```
pub fn compile_all<'a>(builds: impl IntoIterator<Item = &'a Build>) -> Vec<Artifacts> {
    let builds: Vec<&Build> = builds.into_iter().collect();
    let outcomes = build_all(&builds);
    let mut ok = Vec::new();
    let mut failed: Vec<String> = Vec::new();
    for (b, (result, lines)) in builds.iter().zip(outcomes) {
        match result {
            Ok(a) => {
                print_cargo(b, &lines);
                ok.push(a);
            }
            Err(e) => {
                // Cargo reruns a failed build script whatever it printed, and
                // shows all of its stdout: hundreds of rerun-if-changed lines
                // would bury the error. Only the warnings are worth keeping.
                let warnings: Vec<String> = lines
                    .into_iter()
                    .filter(|l| l.starts_with("warning="))
                    .collect();
                print_cargo(b, &warnings);
                // As cc does: the message on stderr for cargo, then an unwind
                // that carries it (no panic-hook noise; catchable).
                let message = e.to_string();
                eprintln!("{message}");
                failed.push(message);
            }
        }
    }
    if !failed.is_empty() {
        std::panic::resume_unwind(Box::new(failed.join("\n\n")));
    }
    ok
}

/// [`compile_all`] returning the first error instead of exiting (every
/// build's `cargo:` lines are printed, so cargo still reruns the script
/// when an input changes).
pub fn try_compile_all<'a>(
    builds: impl IntoIterator<Item = &'a Build>,
) -> Result<Vec<Artifacts>, Error> {
    let builds: Vec<&Build> = builds.into_iter().collect();
    let outcomes = build_all(&builds);
    let mut out = Vec::new();
    let mut first_err = None;
    for (b, (result, lines)) in builds.iter().zip(outcomes) {
        print_cargo(b, &lines);
        match result {
            Ok(a) => out.push(a),
            Err(e) => first_err = first_err.or(Some(e)),
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// `cargo:` lines already printed by this process: several builds share
/// sources, headers and every `rerun-if-env-changed`.
static PRINTED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

fn print_cargo(b: &Build, lines: &[String]) {
    let b = &b.spec;
    if !b.emit_cargo {
        return;
    }
    use std::io::Write;
    let mut printed = PRINTED.lock().unwrap_or_else(|e| e.into_inner());
    let printed = printed.get_or_insert_with(HashSet::new);
    // One write: stdout is line-buffered, and a build prints ~1,500 lines.
    let mut text = String::new();
    for l in lines {
        if (!b.cargo_warnings && l.starts_with("warning="))
            || (!b.cargo_metadata && l.starts_with("rustc-link-"))
        {
            continue;
        }
        if printed.insert(l.clone()) {
            text.push_str("cargo:");
            text.push_str(l);
            text.push('\n');
        }
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Each build first resolves what its cc-style settings imply (toolkit,
/// host compiler, archiver, profile flags, arch flags given as flags; see
/// `parity.rs`); the engine then runs them all in one pool.
fn build_all(builds: &[&Build]) -> Vec<(Result<Artifacts, Error>, Vec<String>)> {
    let prepared = builds
        .iter()
        .map(|b| {
            let env = b.spec.env.clone().unwrap_or_else(Env::from_process);
            let p = b.prepared(&env);
            (env, p)
        })
        .collect();
    crate::compile::run::pool::build_all(prepared)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_module_name_and_missing_out_dir() {
        let e = Build::new()
            .env(Env::empty())
            .file("x.cu")
            .try_compile()
            .unwrap_err();
        assert_eq!(e.code, "out-dir-unset");
        let e = Build::new()
            .env(Env::empty())
            .out_dir("/tmp")
            .module_name("../x")
            .try_compile()
            .unwrap_err();
        assert_eq!(e.code, "invalid-module-name");
    }
}
