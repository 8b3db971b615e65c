//! The settings of one build as plain data: what `Build`'s setters write,
//! and, once the prepare stage (`prepare.rs`) has settled the toolkit, host
//! compiler, archiver and flags, what the compile engine reads. The engine
//! (`run/`) sees a build only through [`Spec`] and [`Prepared`], never
//! through the builder.

use crate::compile::output::artifacts::OutputKind;
use crate::compile::settings::header_deps::{Needs, Resolved};
use cuda_toolchain::env::Env;
use cuda_toolchain::toolkit::Toolkit;
use cuda_toolchain::Error;
use std::path::PathBuf;

/// Every setting of a build (see the `Build` methods of the same names).
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    /// Where variables are read (None: the process's environment).
    pub(crate) env: Option<Env>,
    /// Sources: single files, directories walked for `.cu`, globs, and what to leave out.
    pub(crate) files: Vec<PathBuf>,
    pub(crate) dirs: Vec<PathBuf>,
    pub(crate) globs: Vec<String>,
    pub(crate) excludes: Vec<String>,
    /// `-I` directories (package-relative or absolute).
    pub(crate) includes: Vec<PathBuf>,
    /// `-isystem` directories: the header dependencies' (their warnings are
    /// not the crate's; the toolkit's are added by the engine).
    pub(crate) system_includes: Vec<PathBuf>,
    /// `-D` macros, with an optional value.
    pub(crate) defines: Vec<(String, Option<String>)>,
    /// nvcc arguments for every source; after preparing, without arch
    /// flags and with the profile's and the supported `flags_if_supported`.
    pub(crate) flags: Vec<String>,
    /// The C++ standard as given (`17`, `c++17`).
    pub(crate) std: Option<String>,
    /// nvcc arguments and arch lists for single sources.
    pub(crate) file_flags: Vec<(PathBuf, String)>,
    /// An nvcc argument for every source whose package-relative path
    /// contains the text (a preset's, e.g. cudaforge's `--threads=2`).
    pub(crate) path_flags: Vec<(String, String)>,
    pub(crate) file_archs: Vec<(PathBuf, String)>,
    /// nvcc's `--split-compile` count for every source, and for single
    /// sources (it changes the output, so it is a setting, never a guess
    /// from the machine; see `Build::split_compile`).
    pub(crate) split_compile: Option<u32>,
    pub(crate) file_splits: Vec<(PathBuf, u32)>,
    /// The host compiler; after preparing, the one chosen (None: nvcc's default).
    pub(crate) ccbin: Option<PathBuf>,
    pub(crate) output: OutputKind,
    /// The arch list (`Build::arch`, or an `-arch=` flag after preparing).
    pub(crate) arch: Option<String>,
    pub(crate) fallback_arch: Option<String>,
    /// The generated module's and static library's name.
    pub(crate) module_name: String,
    /// Relocatable device code for static libraries.
    pub(crate) rdc: bool,
    /// A module anchor per source, so nvcc never names internal entities
    /// after its process id (`Build::stable_module_ids`).
    pub(crate) stable_module_ids: bool,
    pub(crate) cache_dir: Option<PathBuf>,
    pub(crate) no_cache: bool,
    /// Which toolkit: searched for, named by root, or given; after preparing, the one found.
    pub(crate) toolkit: ToolkitChoice,
    /// Where outputs and the module go (None: `OUT_DIR`).
    pub(crate) out_dir: Option<PathBuf>,
    /// Whether `cargo:` lines are printed at all.
    pub(crate) emit_cargo: bool,
    /// Typed launchers in the generated module.
    pub(crate) launchers: bool,
    /// An OS error every output write fails with (tests).
    pub(crate) write_fault: Option<i32>,
    // cc parity (see `cc_parity.rs`, settled in `prepare.rs`).
    /// Flags kept only if nvcc accepts them; empty after preparing.
    pub(crate) flags_if_supported: Vec<String>,
    /// The archiver; after preparing, the one chosen for a static library.
    pub(crate) archiver: Option<PathBuf>,
    pub(crate) cargo_warnings: bool,
    pub(crate) cargo_metadata: bool,
    pub(crate) profile_flags: Option<bool>,
    pub(crate) device_debug: Option<bool>,
    /// `-Xcompiler -fPIC` for static libraries (None: yes, except on MSVC).
    pub(crate) pic: Option<bool>,
    /// The builder whose implicit behaviour this build reproduces.
    pub(crate) preset: Option<Preset>,
    /// Output directory, names, module, cudart, target (see `layout.rs`).
    pub(crate) layout: Layout,
    /// Header-only dependencies, resolved when declared, and what they need.
    pub(crate) header_deps: Vec<Resolved>,
    pub(crate) header_needs: Vec<Needs>,
    /// Errors from setters (a header dependency not in the store), reported
    /// when the build runs.
    pub(crate) setup_errors: Vec<Error>,
}

impl Default for Spec {
    /// No sources, fatbin output, module name `kernels`, `cargo:` lines on.
    fn default() -> Self {
        Spec {
            env: None,
            files: Vec::new(),
            dirs: Vec::new(),
            globs: Vec::new(),
            excludes: Vec::new(),
            includes: Vec::new(),
            system_includes: Vec::new(),
            defines: Vec::new(),
            flags: Vec::new(),
            std: None,
            file_flags: Vec::new(),
            path_flags: Vec::new(),
            file_archs: Vec::new(),
            split_compile: None,
            file_splits: Vec::new(),
            ccbin: None,
            output: OutputKind::Fatbin,
            arch: None,
            fallback_arch: None,
            module_name: "kernels".into(),
            rdc: false,
            stable_module_ids: false,
            cache_dir: None,
            no_cache: false,
            toolkit: ToolkitChoice::Search,
            out_dir: None,
            emit_cargo: true,
            launchers: false,
            write_fault: None,
            flags_if_supported: Vec::new(),
            archiver: None,
            cargo_warnings: true,
            cargo_metadata: true,
            profile_flags: None,
            device_debug: None,
            pic: None,
            preset: None,
            layout: Layout::default(),
            header_deps: Vec::new(),
            header_needs: Vec::new(),
            setup_errors: Vec::new(),
        }
    }
}

/// How output files are named inside the output directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputNames {
    /// The source's Rust module name: `vector-add.cu` → `vector_add.fatbin`,
    /// with parent directories prefixed when two sources share a stem.
    #[default]
    Module,
    /// The source's file stem as it is: `affine.cu` → `affine.ptx` (two
    /// sources with the same stem are an error).
    SourceStem,
}

/// How a static library links the CUDA runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Cudart {
    /// `cudart_static`: the binary runs without libcudart.so, but every
    /// rlib that links it carries a copy (tens of MB).
    #[default]
    Static,
    /// `dylib=cudart`: small outputs; libcudart.so must be found at run time
    /// (LD_LIBRARY_PATH, or the toolkit's lib directory in the loader path).
    Shared,
    /// No cudart link line: the crate links the runtime itself (or uses the
    /// driver API only).
    None,
}

/// The layout settings (see the methods below).
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub output_dir: Option<PathBuf>,
    pub names: OutputNames,
    pub module: bool,
    pub cudart: Cudart,
    pub target: Option<String>,
    /// rustc link modifiers for the static library (`-bundle`, `+whole-archive`).
    pub link_modifiers: Vec<String>,
}

impl Default for Layout {
    fn default() -> Layout {
        Layout {
            output_dir: None,
            names: OutputNames::Module,
            module: true,
            cudart: Cudart::Static,
            target: None,
            link_modifiers: Vec::new(),
        }
    }
}

impl Layout {
    /// Whether the target uses MSVC (no `-fPIC`, no GNU link libraries).
    pub(crate) fn msvc(&self) -> bool {
        self.target.as_deref().is_some_and(|t| t.ends_with("-msvc"))
    }

    /// The library's `rustc-link-lib` kind: `static`, or `static:<modifiers>`.
    /// Only `bundle` and `whole-archive` are accepted, each once and signed:
    /// `verbatim` would change the file name cuda-build itself chose.
    pub(crate) fn static_link_kind(&self) -> Result<String, cuda_toolchain::Error> {
        let mut seen: Vec<&str> = Vec::new();
        for m in &self.link_modifiers {
            let name = m.strip_prefix(['+', '-']).unwrap_or("");
            if !matches!(name, "bundle" | "whole-archive") || seen.contains(&name) {
                let why = if seen.contains(&name) {
                    format!("`{name}` is given twice")
                } else {
                    "expected `+` or `-` followed by `bundle` or `whole-archive`".to_string()
                };
                return Err(cuda_toolchain::Error::new(
                    "invalid-link-modifier",
                    format!("Build::link_lib_modifier(\"{}\"): {why}", m.escape_debug()),
                )
                .with_help("use \"-bundle\" (link the archive at the final link, not copied into the rlib) or \"+whole-archive\""));
            }
            seen.push(name);
        }
        Ok(if self.link_modifiers.is_empty() {
            "static".to_string()
        } else {
            format!("static:{}", self.link_modifiers.join(","))
        })
    }
}

impl Spec {
    /// Adds a resolved header-only dependency: its include dirs (as system
    /// include dirs, so their warnings are not the crate's), a
    /// `CUDA_BUILD_DEP_<NAME>` macro with its version (so it is in the cache
    /// key), and the record the crate's `rustc-env` line comes from.
    pub(crate) fn add_header_dep(&mut self, dep: Resolved) {
        self.system_includes.extend(dep.includes.iter().cloned());
        self.defines
            .push((dep.env_name(), Some(format!("\"{}\"", dep.version))));
        self.header_deps.push(dep);
    }
}

/// Which toolkit a build compiles with: what the builder asked for and,
/// once the prepare stage has run, what it found.
#[derive(Debug, Clone, Default)]
pub(crate) enum ToolkitChoice {
    /// Discovery's rules (the default), honouring the package's
    /// `[package.metadata.cuda] toolkit` requirement.
    #[default]
    Search,
    /// `Build::toolkit_root`: the toolkit at this root, over every rule.
    Root(PathBuf),
    /// `Build::toolkit`, or the toolkit at `Build::toolkit_root` once read.
    Given(Toolkit),
    /// Prepared: discovery's pick, and the other toolkits it found (a
    /// failure's explanation can name one that would work).
    Found(Toolkit, Vec<Toolkit>),
    /// Prepared: discovery found none. The engine reports it, or on docs.rs
    /// writes a module with empty images.
    Missing(Error),
}

impl ToolkitChoice {
    /// The toolkit to compile with, once known.
    pub(crate) fn toolkit(&self) -> Option<&Toolkit> {
        match self {
            ToolkitChoice::Given(tk) | ToolkitChoice::Found(tk, _) => Some(tk),
            _ => None,
        }
    }
}

/// A build's settings as the engine runs them (toolkit, host compiler,
/// archiver and flags settled by the prepare stage), and what to tell cargo.
pub(crate) struct Prepared {
    pub spec: Spec,
    /// `cargo:warning` notes from preparing.
    pub notes: Vec<String>,
    /// Extra `cargo:` lines (per-target variables to rerun on, `rustc-env`).
    pub rerun: Vec<String>,
    /// The package's `[package.metadata.cuda]`, read once per build.
    pub metadata: cuda_toolchain::metadata::CudaMetadata,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msvc_targets() {
        let mut l = Layout::default();
        assert!(!l.msvc());
        l.target = Some("x86_64-pc-windows-msvc".into());
        assert!(l.msvc());
        l.target = Some("x86_64-pc-windows-gnu".into());
        assert!(!l.msvc());
    }

    #[test]
    fn link_modifiers_are_checked_and_joined() {
        let mut l = Layout::default();
        assert_eq!(l.static_link_kind().unwrap(), "static");
        l.link_modifiers = vec!["-bundle".into(), "+whole-archive".into()];
        assert_eq!(
            l.static_link_kind().unwrap(),
            "static:-bundle,+whole-archive"
        );
        for (bad, says) in [
            (vec!["bundle"], "expected `+` or `-`"),
            (vec!["+verbatim"], "expected `+` or `-`"),
            (vec![""], "expected `+` or `-`"),
            (vec!["-bundle", "+bundle"], "`bundle` is given twice"),
        ] {
            l.link_modifiers = bad.iter().map(|s| s.to_string()).collect();
            let e = l.static_link_kind().unwrap_err();
            assert_eq!(e.code, "invalid-link-modifier");
            assert!(
                e.message.contains("Build::link_lib_modifier") && e.message.contains(says),
                "{}",
                e.message
            );
        }
    }
}

/// A build crate whose implicit behaviour a `Build` reproduces (see
/// [`Build::preset`](crate::compile::Build::preset)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// cudaforge 0.1.x's `KernelBuilder` (`build_lib`, `build_ptx`):
    /// `--default-stream per-thread`; SASS only, with the `a` suffix from
    /// sm_90 on (`f` above sm_120); no profile flags; static libraries get
    /// `-Xcompiler -fPIC` (MSVC: `-D_USE_MATH_DEFINES`) and, with CUTLASS,
    /// `-DUSE_CUTLASS`; `--threads=2` for sources whose path contains
    /// `flash_api` or `cutlass`; sources `src/**/*.cu` when none are given.
    Cudaforge,
    /// bindgen_cuda 0.1's `Builder` (`build_ptx`, `build_lib`):
    /// `--default-stream per-thread`; SASS and PTX (`-arch=sm_XX`); no
    /// profile flags; static libraries without `-fPIC`; PTX builds get `-I`
    /// for each directory holding a `src/**/*.cuh` header (its default
    /// `include_paths`); sources `src/**/*.cu` when none are given.
    BindgenCuda,
    /// cc 1.11's `Build::cuda(true)`: the host flags cc adds through
    /// `-Xcompiler` (`-O<OPT_LEVEL>`, `-ffunction-sections`,
    /// `-fdata-sections`, `-fPIC`, `-march=x86-64`, `-Wall`, `-Wextra`,
    /// and in debug builds `-g -gdwarf-4 -fno-omit-frame-pointer`), `-m64`,
    /// device debug `-G` when cargo's DEBUG is on, and relocatable device
    /// code (`--device-c`) when more than one file is compiled.
    Cc,
}
