//! What the engine's stages share, below all of them: one build's [`Run`]
//! (its settings, directories and the memos its parallel jobs fill), the
//! [`Tools`] its jobs run with, what a job ends as ([`JobDone`],
//! [`Outcome`]), and a build between its stages ([`Planned`], [`Stage`]).

use crate::compile::incremental::cache::Cache;
use crate::compile::incremental::hash::FileHashes;
use crate::compile::incremental::manifest::{Entry, InputChecks, Manifest};
use crate::compile::nvcc::progress::Progress;
use crate::compile::nvcc::runner::Runner;
use crate::compile::output::artifacts::Artifacts;
use crate::compile::output::write_error::write_error;
use crate::compile::prebuilt::in_use::InUse;
use crate::compile::run::job::Job;
use crate::compile::settings::package::package_dir;
use crate::compile::settings::spec::Spec;
use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::metadata::CudaMetadata;
use cuda_toolchain::plan::ArchPlan;
use cuda_toolchain::toolkit::Toolkit;
use cuda_toolchain::Error;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Everything one build needs, shared by its parallel jobs.
pub(crate) struct Run<'b> {
    /// The prepared settings (see `settings/spec.rs`).
    pub(crate) spec: &'b Spec,
    pub(crate) env: Env,
    /// The package directory: nvcc runs there, with paths relative to it.
    pub(crate) base: PathBuf,
    pub(crate) out_dir: PathBuf,
    /// `$OUT_DIR/cuda-build/<module>`: the manifest, temporaries, the library.
    pub(crate) out_root: PathBuf,
    /// Where the kernel outputs go (`Build::output_dir`, else `out_root`).
    pub(crate) kernel_dir: PathBuf,
    /// The target is MSVC: no `-fPIC`, no GNU link libraries.
    pub(crate) msvc: bool,
    /// The package's `[package.metadata.cuda]`, as the prepare stage read it.
    pub(crate) metadata: CudaMetadata,
    pub(crate) hashes: FileHashes,
    pub(crate) checks: InputChecks,
    warnings: Mutex<Vec<String>>,
    /// `cargo:` lines, printed by the pool once the outcome is known.
    cargo_lines: Mutex<Vec<String>>,
}

/// What every job of one build runs with, once its toolkit is chosen.
pub(crate) struct Tools {
    pub(crate) tk: Toolkit,
    /// Other toolkits discovery found (named by failure explanations).
    pub(crate) other_toolkits: Vec<Toolkit>,
    pub(crate) runner: Runner,
    pub(crate) progress: Progress,
    pub(crate) cache: Option<Cache>,
    /// The package's shipped kernel images, the policy, and why there is no nvcc.
    pub(crate) prebuilt: InUse,
}

/// What one job ended as.
pub(crate) struct JobDone {
    pub(crate) entry: Entry,
    pub(crate) outcome: Outcome,
    pub(crate) warnings: Vec<String>,
    /// How long nvcc took (compiled jobs only), for the next build's ordering.
    pub(crate) took: Option<Duration>,
    /// The peak memory of nvcc's process tree, in bytes (compiled jobs, when measured).
    pub(crate) peak_memory: Option<u64>,
    /// nvcc's `--threads` (targets compiled at once; 1 without).
    pub(crate) threads: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    UpToDate,
    Cached,
    Compiled,
    /// Taken from a kernel image the package ships.
    Prebuilt,
}

/// A build between its stages: jobs planned, those already current or
/// cached settled; the pool compiles the rest, then the finish stage runs.
pub(crate) struct Planned {
    pub(crate) tools: Tools,
    pub(crate) jobs: Vec<Job>,
    /// None: the job must be compiled (by the pool).
    pub(crate) results: Vec<Option<Result<JobDone, Error>>>,
    pub(crate) manifest: Manifest,
    /// The manifest as loaded (a run that changed nothing writes none).
    pub(crate) loaded: Arc<Manifest>,
    pub(crate) manifest_path: PathBuf,
    /// The plan of sources without a `Build::file_arch`.
    pub(crate) default_plan: ArchPlan,
    pub(crate) sources: Vec<PathBuf>,
    /// The include directories, absolute.
    pub(crate) includes: Vec<PathBuf>,
}

/// How the plan stage ended.
pub(crate) enum Stage {
    /// Nothing to compile by design (docs.rs without a toolkit).
    Done(Box<Artifacts>),
    Ready(Box<Planned>),
}

fn is_plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl<'b> Run<'b> {
    pub(crate) fn new(spec: &'b Spec, env: Env, metadata: CudaMetadata) -> Result<Run<'b>, Error> {
        let out_dir = match (&spec.out_dir, env.get_os(Var::OutDir)) {
            (Some(d), _) => d.clone(),
            (None, Some(d)) if !d.is_empty() => PathBuf::from(d),
            _ => return Err(Error::new(
                "out-dir-unset",
                "OUT_DIR is not set, so there is nowhere to put the compiled kernels",
            )
            .with_help(
                "call cuda_build::Build from build.rs (cargo sets OUT_DIR), or set Build::out_dir",
            )),
        };
        if !is_plain_name(&spec.module_name) {
            return Err(Error::new(
                "invalid-module-name",
                format!(
                    "module name `{}` must be letters, digits, `_` or `-`",
                    spec.module_name.escape_debug()
                ),
            )
            .with_help("pass a plain name to Build::module_name, e.g. \"kernels\""));
        }
        // Checked before compiling, not at the link step minutes later.
        spec.layout.static_link_kind()?;
        let base = cuda_toolchain::fsutil::normalize(&package_dir(&env));
        let out_root = out_dir.join("cuda-build").join(&spec.module_name);
        let kernel_dir = match &spec.layout.output_dir {
            Some(d) => cuda_toolchain::fsutil::normalize(&out_dir.join(d)),
            None => out_root.clone(),
        };
        let msvc = spec.layout.msvc()
            || (spec.layout.target.is_none()
                && env.get(Var::Target).is_some_and(|t| t.ends_with("-msvc")));
        Ok(Run {
            spec,
            env,
            base,
            out_dir,
            out_root,
            kernel_dir,
            msvc,
            metadata,
            hashes: FileHashes::default(),
            checks: InputChecks::default(),
            warnings: Mutex::new(Vec::new()),
            cargo_lines: Mutex::new(Vec::new()),
        })
    }

    /// Queues a `cargo:` line (see [`Run::take_cargo_lines`]).
    pub(crate) fn cargo(&self, line: &str) {
        if let Ok(mut lines) = self.cargo_lines.lock() {
            lines.push(line.to_string());
        }
    }

    /// The queued `cargo:` lines, without the `cargo:` prefix.
    pub(crate) fn take_cargo_lines(&self) -> Vec<String> {
        self.cargo_lines
            .lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default()
    }

    /// Queues a warning, once however many jobs give it.
    pub(crate) fn warn(&self, w: String) {
        // A warning may quote a setting's value: never its password.
        let w = cuda_toolchain::redact::mask_credentials(&w).into_owned();
        if let Ok(mut ws) = self.warnings.lock() {
            if !ws.contains(&w) {
                ws.push(w);
            }
        }
    }

    /// The queued warnings, as they stand.
    pub(crate) fn warnings(&self) -> Vec<String> {
        self.warnings.lock().map(|w| w.clone()).unwrap_or_default()
    }

    /// The remote cache tier's one warning (bad URL, or the fault that turned it off).
    pub(crate) fn remote_note(&self, cache: &Cache) {
        if let Some(n) = cache.take_remote_note() {
            self.warn(n);
        }
    }

    /// The generated module's path (None when turned off).
    pub(crate) fn module_path(&self) -> Option<PathBuf> {
        self.spec
            .layout
            .module
            .then(|| self.out_dir.join(format!("{}.rs", self.spec.module_name)))
    }

    /// The injected write fault (`Build::simulate_write_error`, in `Spec::write_fault`), as the
    /// error a real one writing `path` would give.
    pub(crate) fn injected_fault(&self, path: &Path) -> Result<(), Error> {
        match self.spec.write_fault {
            Some(errno) => Err(write_error(path, &std::io::Error::from_raw_os_error(errno))),
            None => Ok(()),
        }
    }

    /// A write to OUT_DIR, honouring the injected fault. Atomic but not
    /// fsynced, like cargo's and rustc's own outputs there: a manifest that
    /// a crash left torn does not parse and counts as absent.
    pub(crate) fn write_out(&self, path: &Path, bytes: &[u8]) -> Result<(), Error> {
        self.injected_fault(path)?;
        cuda_toolchain::fsutil::write_atomic_unsynced(path, bytes)
            .map_err(|e| write_error(path, &e))
    }

    pub(crate) fn copy_out(&self, from: &Path, to: &Path) -> Result<(), Error> {
        self.injected_fault(to)?;
        cuda_toolchain::fsutil::copy_atomic(from, to).map_err(|e| write_error(to, &e))
    }

    pub(crate) fn display_path(&self, p: &Path) -> String {
        p.strip_prefix(&self.base)
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned()
    }
}
