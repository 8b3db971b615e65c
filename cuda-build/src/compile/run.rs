//! One build from start to end, in two halves around the shared job pool
//! (`pool`): [`Run::prepare`] turns sources into jobs and settles what is
//! already current or cached; [`Run::finish`] takes the compiled results and
//! writes the library, the manifest and the generated module.

use super::artifacts::{Artifacts, BuildStats, KernelArtifact, OutputKind};
use super::cache::{self, Cache};
use super::hash::{FileHashes, KeyHasher};
use super::job::Job;
use super::manifest::{InputChecks, Manifest, PlanStamp};
use super::module::{self, ModuleItem};
use super::nvcc::{self, Runner};
use super::progress::{Event, Progress};
use super::spec::{Found, OutputNames, Spec};
use super::{glue, sources};
use cuda_toolchain::arch::Arch;
use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::plan::{ArchInputs, ArchPlan, ArchSource};
use cuda_toolchain::toolkit::Toolkit;
use cuda_toolchain::Error;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Everything one build needs, shared by its parallel jobs.
pub(super) struct Run<'b> {
    /// The prepared settings (see `spec.rs`).
    pub(super) spec: &'b Spec,
    pub(super) env: Env,
    /// The package directory: nvcc runs there, with paths relative to it.
    pub(super) base: PathBuf,
    pub(super) out_dir: PathBuf,
    /// `$OUT_DIR/cuda-build/<module>`: the manifest, temporaries, the library.
    pub(super) out_root: PathBuf,
    /// Where the kernel outputs go (`Build::output_dir`, else `out_root`).
    pub(super) kernel_dir: PathBuf,
    /// The target is MSVC: no `-fPIC`, no GNU link libraries.
    pub(super) msvc: bool,
    /// The metadata and toolkits the preparing step found.
    found: Found,
    pub(super) hashes: FileHashes,
    pub(super) checks: InputChecks,
    warnings: std::sync::Mutex<Vec<String>>,
    /// `cargo:` lines, printed by the pool once the outcome is known.
    cargo_lines: std::sync::Mutex<Vec<String>>,
}

/// What one job ended as.
pub(super) struct JobDone {
    pub(super) entry: super::manifest::Entry,
    pub(super) outcome: Outcome,
    pub(super) warnings: Vec<String>,
    /// How long nvcc took (compiled jobs only), for the next build's ordering.
    pub(super) took: Option<Duration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    UpToDate,
    Cached,
    Compiled,
}

/// A build between its two halves.
pub(super) struct Prepared {
    pub(super) tk: Toolkit,
    /// Other toolkits discovery found (named by failure explanations).
    pub(super) other_toolkits: Vec<Toolkit>,
    pub(super) runner: Runner,
    pub(super) progress: Progress,
    pub(super) cache: Option<Cache>,
    pub(super) jobs: Vec<Job>,
    /// None: the job must be compiled (by the pool).
    pub(super) results: Vec<Option<Result<JobDone, Error>>>,
    manifest: Manifest,
    loaded: std::sync::Arc<Manifest>,
    manifest_path: PathBuf,
    default_plan: ArchPlan,
    sources: Vec<PathBuf>,
    includes: Vec<PathBuf>,
}

/// How [`Run::prepare`] ended.
pub(super) enum Stage {
    /// Nothing to compile by design (docs.rs without a toolkit).
    Done(Artifacts),
    Ready(Box<Prepared>),
}

fn is_plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `CARGO_MANIFEST_DIR`, else the current directory.
pub(super) fn package_dir(env: &Env) -> PathBuf {
    env.get_os(Var::CargoManifestDir)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default()
}

impl<'b> Run<'b> {
    pub(super) fn new(spec: &'b Spec, env: Env, found: Found) -> Result<Run<'b>, Error> {
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
            found,
            hashes: FileHashes::default(),
            checks: InputChecks::default(),
            warnings: std::sync::Mutex::new(Vec::new()),
            cargo_lines: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// Queues a `cargo:` line (see [`Run::take_cargo_lines`]).
    pub(super) fn cargo(&self, line: &str) {
        if let Ok(mut lines) = self.cargo_lines.lock() {
            lines.push(line.to_string());
        }
    }

    /// The queued `cargo:` lines, without the `cargo:` prefix.
    pub(super) fn take_cargo_lines(&self) -> Vec<String> {
        self.cargo_lines
            .lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default()
    }

    pub(super) fn warn(&self, w: String) {
        if let Ok(mut ws) = self.warnings.lock() {
            if !ws.contains(&w) {
                ws.push(w);
            }
        }
    }

    /// The generated module's path (None when turned off).
    pub(super) fn module_path(&self) -> Option<PathBuf> {
        self.spec
            .layout
            .module
            .then(|| self.out_dir.join(format!("{}.rs", self.spec.module_name)))
    }

    /// The injected write fault (`Build::simulate_write_error`, in `Spec::write_fault`), as the
    /// error a real one writing `path` would give.
    pub(super) fn injected_fault(&self, path: &Path) -> Result<(), Error> {
        match self.spec.write_fault {
            Some(errno) => Err(nvcc::write_error(
                path,
                &std::io::Error::from_raw_os_error(errno),
            )),
            None => Ok(()),
        }
    }

    /// A write to OUT_DIR, honouring the injected fault. Atomic but not
    /// fsynced, like cargo's and rustc's own outputs there: a manifest that
    /// a crash left torn does not parse and counts as absent.
    fn write_out(&self, path: &Path, bytes: &[u8]) -> Result<(), Error> {
        self.injected_fault(path)?;
        cuda_toolchain::fsutil::write_atomic_unsynced(path, bytes)
            .map_err(|e| nvcc::write_error(path, &e))
    }

    pub(super) fn copy_out(&self, from: &Path, to: &Path) -> Result<(), Error> {
        self.injected_fault(to)?;
        cuda_toolchain::fsutil::copy_atomic(from, to).map_err(|e| nvcc::write_error(to, &e))
    }

    pub(super) fn display_path(&self, p: &Path) -> String {
        p.strip_prefix(&self.base)
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned()
    }

    /// The first half: sources, toolkit, plan, jobs, and every job that is
    /// up to date or in the cache settled. What is left is for the pool.
    pub(super) fn prepare(&self) -> Result<Stage, Error> {
        let spec = self.spec;
        let srcs = sources::collect(
            &self.base,
            &spec.files,
            &spec.dirs,
            &spec.globs,
            &spec.excludes,
        )?;
        for n in &srcs.notes {
            self.warn(n.clone());
        }
        for s in &srcs.files {
            self.cargo(&format!("rerun-if-changed={}", s.display()));
        }
        for d in &srcs.watch_dirs {
            self.cargo(&format!("rerun-if-changed={}", d.display()));
        }
        let includes: Vec<PathBuf> = spec.includes.iter().map(|i| self.base.join(i)).collect();
        for inc in &includes {
            if !inc.is_dir() {
                return Err(Error::new(
                    "include-dir-missing",
                    format!("include directory `{}` does not exist", inc.display()),
                )
                .with_help("fix the path given to Build::include (relative paths are from the package directory)"));
            }
        }
        for (f, _) in spec.file_flags.iter().chain(&spec.file_archs) {
            let p = self.base.join(f);
            if !srcs.files.contains(&p) {
                return Err(Error::new(
                    "source-not-found",
                    format!(
                        "Build::file_flag/file_arch names `{}`, which is not one of the sources",
                        p.display()
                    ),
                )
                .with_help("use the same path as in Build::file / dir / glob"));
            }
        }
        let names = module::names(&self.base, &srcs.files);
        let md = &self.found.metadata;
        let (tk, other_toolkits) = match (&self.found.toolkits, &spec.toolkit) {
            (Some(Ok(found)), _) => found.clone(),
            (_, Some(tk)) => (tk.clone(), Vec::new()),
            (Some(Err(e)), None) if self.env.get_os(Var::DocsRs).is_some() => {
                return self.docs_rs_module(&srcs.files, &names, e).map(Stage::Done);
            }
            (Some(Err(e)), None) => return Err(e.clone()),
            // Preparing always names or searches; searching here keeps it total.
            (None, None) => glue::find_toolkit(&self.env, md)?,
        };
        for dir in [&self.out_root, &self.kernel_dir] {
            if let Err(e) = std::fs::create_dir_all(dir) {
                return Err(nvcc::write_error(dir, &e));
            }
        }
        let manifest_path = self.out_root.join("manifest.json");
        let mut manifest = Manifest::load(&manifest_path, &self.base);
        let loaded = std::sync::Arc::new(manifest.clone());
        self.hashes.seed(loaded.clone());
        self.checks.size_for(&loaded);
        let default_inputs = ArchInputs {
            explicit: spec.arch.clone(),
            metadata: md.arch.clone(),
            fallback: spec.fallback_arch.clone().or(md.fallback_arch.clone()),
        };
        let cache = cache::dir_for(&self.env, spec.cache_dir.as_deref(), spec.no_cache)
            .map(|d| Cache::new(&d).with_remote(&self.env));
        let default_plan = self.plan(&tk, &default_inputs, &mut manifest, cache.as_ref())?;
        // CUTLASS 3.x/4.x and the like: checked against the plan before any compile.
        for needs in &spec.header_needs {
            let below = |a: &&cuda_toolchain::arch::Arch| (a.cc.major, a.cc.minor) < needs.min_cc;
            let low: Vec<String> = (default_plan.sass.iter().filter(below))
                .map(|a| format!("sm_{a}"))
                .chain(
                    default_plan
                        .ptx
                        .iter()
                        .filter(below)
                        .map(|a| format!("compute_{a}")),
                )
                .collect();
            if !low.is_empty() {
                let e = Error::new(
                    "header-dep-requirement",
                    format!(
                        "{} needs sm_{}{} or newer, but the arch plan includes {}",
                        needs.who,
                        needs.min_cc.0,
                        needs.min_cc.1,
                        low.join(", ")
                    ),
                )
                .with_help(format!(
                    "target sm_{0}{1}+ only, e.g. CUDA_ARCHS=\"80;90\" or `.arch(\"80;90\")`; or compile the older archs from other sources without this dependency",
                    needs.min_cc.0, needs.min_cc.1
                ));
                if let Some(w) = needs.verdict(e)? {
                    self.warn(w);
                }
            }
        }
        for w in &default_plan.warnings {
            self.warn(w.clone());
        }

        // `[package.metadata.cuda] deploy`: fail before compiling anything a
        // declared target could not run.
        let deploy = cuda_toolchain::image::deploy::read_deploy(&self.base)?;
        let mut jobs = Vec::new();
        for (source, name) in srcs.files.iter().zip(&names) {
            let plan = match spec
                .file_archs
                .iter()
                .rev()
                .find(|(f, _)| self.base.join(f) == *source)
            {
                Some((_, arch)) => {
                    let inputs = ArchInputs {
                        explicit: Some(arch.clone()),
                        ..ArchInputs::default()
                    };
                    self.plan(&tk, &inputs, &mut manifest, cache.as_ref())?
                }
                None => default_plan.clone(),
            };
            let file_name = match spec.layout.names {
                OutputNames::Module => name.clone(),
                OutputNames::SourceStem => source
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| name.clone()),
            };
            cuda_toolchain::image::deploy::check_plan_on(&deploy, &plan, tk.version.as_ref())?;
            jobs.push(self.job(&tk, source, name, &file_name, plan, &includes)?);
        }
        self.check_layout(&jobs, &srcs.files, &manifest)?;

        let progress = Progress::new(&self.env, jobs.len());
        let runner = Runner::new(&self.env, &tk.nvcc, &self.base);
        let mut results = Vec::with_capacity(jobs.len());
        for job in &jobs {
            let old = manifest.sources.get(&job.source);
            let r = self.reuse(&tk, job, old, cache.as_ref());
            if matches!(r, Some(Ok(_))) {
                progress.event(Event::Cached, &job.display, &job.archs.join(","));
            }
            results.push(r);
        }
        Ok(Stage::Ready(Box::new(Prepared {
            tk,
            other_toolkits,
            runner,
            progress,
            cache,
            jobs,
            results,
            manifest,
            loaded,
            manifest_path,
            default_plan,
            sources: srcs.files,
            includes,
        })))
    }

    /// Refuses outputs that collide with each other, or with a source or a
    /// header (an output layout must never overwrite what it compiles).
    fn check_layout(
        &self,
        jobs: &[Job],
        sources: &[PathBuf],
        manifest: &Manifest,
    ) -> Result<(), Error> {
        let mut seen: std::collections::HashMap<PathBuf, &Job> = Default::default();
        // Outputs live in a few directories; inputs (every header of every
        // source, thousands on a real crate) almost never do. So only
        // inputs under those are normalised and compared: a rerun then
        // costs a byte-prefix test per input, not an allocation and a hash.
        let out_dirs: Vec<PathBuf> = jobs
            .iter()
            .flat_map(|j| j.outputs.iter().filter_map(|(_, o)| o.parent()))
            .map(cuda_toolchain::fsutil::normalize)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let under_outputs = |p: &Path| {
            let b = p.as_os_str().as_encoded_bytes();
            out_dirs
                .iter()
                .any(|d| b.starts_with(d.as_os_str().as_encoded_bytes()))
        };
        // Sources as given may hold `..`: normalised first. The manifest's
        // inputs were normalised when recorded.
        let inputs: std::collections::HashSet<PathBuf> = sources
            .iter()
            .map(|p| cuda_toolchain::fsutil::normalize(p))
            .filter(|p| under_outputs(p))
            .chain(
                manifest
                    .input_paths()
                    .filter(|p| under_outputs(p))
                    .map(|p| cuda_toolchain::fsutil::normalize(p)),
            )
            .collect();
        let module = self
            .module_path()
            .map(|p| cuda_toolchain::fsutil::normalize(&p));
        // Cargo's rule: a build script writes only under OUT_DIR. A kernel
        // directory in the package's own tree would mix outputs with sources.
        let out_dir = cuda_toolchain::fsutil::normalize(&self.out_dir);
        if self.kernel_dir.starts_with(&self.base) && !self.kernel_dir.starts_with(&out_dir) {
            return Err(Error::new(
                "output-overwrites-source",
                format!(
                    "Build::output_dir `{}` is inside the package's sources (`{}`): outputs there could overwrite source files",
                    self.kernel_dir.display(),
                    self.base.display()
                ),
            )
            .with_help("give Build::output_dir a path relative to OUT_DIR, e.g. \".\" for `$OUT_DIR/<stem>.ptx`"));
        }
        for job in jobs {
            for (_, out) in &job.outputs {
                let out = cuda_toolchain::fsutil::normalize(out);
                if inputs.contains(&out) || module.as_ref() == Some(&out) {
                    let what = if module.as_ref() == Some(&out) {
                        "the generated module".to_string()
                    } else {
                        format!("the input `{}`", self.display_path(&out))
                    };
                    return Err(Error::new(
                        "output-overwrites-source",
                        format!(
                            "the output of `{}` would be written to `{}`, overwriting {what}",
                            job.display,
                            out.display()
                        ),
                    )
                    .with_help("choose another Build::output_dir (relative paths are from OUT_DIR), or OutputNames::Module"));
                }
                if let Some(other) = seen.insert(out.clone(), job) {
                    return Err(Error::new(
                        "output-collision",
                        format!(
                            "`{}` and `{}` would both be compiled to `{}`",
                            other.display,
                            job.display,
                            out.display()
                        ),
                    )
                    .with_help("rename one source, or use OutputNames::Module (parent directories are then prefixed)"));
                }
            }
        }
        Ok(())
    }

    /// The second half: results in, library, manifest and module out.
    pub(super) fn finish(&self, p: Prepared) -> Result<Artifacts, Error> {
        let spec = self.spec;
        let Prepared {
            tk,
            runner,
            jobs,
            results,
            mut manifest,
            loaded,
            manifest_path,
            default_plan,
            sources,
            includes,
            cache,
            ..
        } = p;
        let mut stats = BuildStats::default();
        let mut failures = Vec::new();
        let mut kernels = Vec::new();
        let mut items = Vec::new();
        let mut keys = Vec::new();
        let mut all_archs: Vec<String> = Vec::new();
        for (job, r) in jobs.iter().zip(results) {
            let r = r.unwrap_or_else(|| {
                Err(Error::new(
                    "internal",
                    format!("`{}` was never compiled", job.display),
                ))
            });
            match r {
                Ok(done) => {
                    match done.outcome {
                        Outcome::UpToDate => stats.up_to_date += 1,
                        Outcome::Cached => stats.from_cache += 1,
                        Outcome::Compiled => stats.compiled += 1,
                    }
                    // Warnings were shown when the source compiled (or its
                    // cached copy was restored); a no-op run stays quiet.
                    if done.outcome != Outcome::UpToDate {
                        for w in done.warnings {
                            self.warn(w);
                        }
                    }
                    for a in &done.entry.archs {
                        if !all_archs.contains(a) {
                            all_archs.push(a.clone());
                        }
                    }
                    let outputs: Vec<PathBuf> =
                        job.outputs.iter().map(|(_, p)| p.clone()).collect();
                    kernels.push(KernelArtifact {
                        source: job.source.clone(),
                        output: outputs.last().cloned().unwrap_or_default(),
                        outputs: outputs.clone(),
                        kind: spec.output,
                        entries: done.entry.entries.clone(),
                        archs: done.entry.archs.clone(),
                        module: job.name.clone(),
                    });
                    keys.push(done.entry.key.clone());
                    items.push(self.item(job, &done.entry));
                    manifest.sources.insert(job.source.clone(), done.entry);
                }
                Err(e) => {
                    manifest.sources.remove(&job.source);
                    failures.push(e);
                }
            }
        }
        {
            // Sources share most headers: each path is printed once, in job
            // order. A stamp loaded from the manifest knows its row in the
            // shared input table, so repeats are caught by a flag per row;
            // only a row's first sighting, and stamps made in this build,
            // hash the path (as bytes: see `FileHashes`).
            let mut row_seen: Vec<bool> = Vec::new();
            let mut seen: std::collections::HashSet<&std::ffi::OsStr> = Default::default();
            for entry in jobs.iter().filter_map(|j| manifest.sources.get(&j.source)) {
                for d in &entry.deps {
                    if let Some(r) = d.row.map(|r| r as usize) {
                        if r >= row_seen.len() {
                            row_seen.resize(r + 1, false);
                        }
                        if std::mem::replace(&mut row_seen[r], true) {
                            continue;
                        }
                    }
                    if seen.insert(d.path.as_os_str()) {
                        self.cargo(&format!("rerun-if-changed={}", d.path.display()));
                    }
                }
            }
        }
        // Sources no longer built are forgotten (a set: Path equality
        // compares component by component, slow in an unoptimised build).
        let built: std::collections::HashSet<&PathBuf> = jobs.iter().map(|j| &j.source).collect();
        manifest.sources.retain(|src, _| built.contains(src));
        // Keep what succeeded, so fixing one file recompiles only that one.
        if !failures.is_empty() {
            let _ = self.save_manifest(&manifest_path, &manifest, &loaded);
            self.print_warnings();
            return Err(combine(failures));
        }

        let library = if spec.output == OutputKind::StaticLib {
            Some(self.link_library(&tk, &default_plan, &kernels, &keys, &runner, &mut manifest)?)
        } else {
            None
        };
        self.splice_launchers(
            &sources,
            &includes,
            &mut items,
            &mut manifest,
            cache.as_ref(),
        )?;
        self.save_manifest(&manifest_path, &manifest, &loaded)?;
        let warnings = self.print_warnings();

        let version = tk.version.as_ref().map(|v| v.to_string());
        let text = module::render(version.as_deref().unwrap_or(""), &all_archs, &items);
        let module_path = self.write_module(&text)?;
        Ok(Artifacts {
            module: module_path,
            kernels,
            toolkit_version: version,
            plan: Some(default_plan),
            stats,
            library,
            warnings,
        })
    }

    /// Writes the manifest unless nothing changed (a no-op run writes nothing).
    fn save_manifest(
        &self,
        path: &Path,
        manifest: &Manifest,
        loaded: &Manifest,
    ) -> Result<(), Error> {
        if manifest == loaded && path.is_file() && self.spec.write_fault.is_none() {
            return Ok(());
        }
        self.write_out(path, &manifest.to_json(&self.base))
    }

    fn print_warnings(&self) -> Vec<String> {
        let warnings = self.warnings.lock().map(|w| w.clone()).unwrap_or_default();
        for w in &warnings {
            self.cargo(&format!("warning={w}"));
        }
        warnings
    }

    /// Writes the module (when on); returns its path, or where it would be.
    fn write_module(&self, text: &str) -> Result<PathBuf, Error> {
        let Some(path) = self.module_path() else {
            return Ok(self.out_dir.join(format!("{}.rs", self.spec.module_name)));
        };
        // Rewriting identical text would still bump the mtime and make rustc rebuild the crate.
        if std::fs::read(&path).ok().as_deref() != Some(text.as_bytes())
            || self.spec.write_fault.is_some()
        {
            self.write_out(&path, text.as_bytes())?;
        }
        Ok(path)
    }

    /// Typed launchers (feature `launchers`): generated from the sources by
    /// [`crate::launchers::generate`] and spliced into each source's module.
    /// Remembered in the manifest, so a no-op run does not parse again, and
    /// in the cache (shared through its Redis tier), so a clean build or
    /// another machine does not load libclang for sources already seen.
    #[cfg(feature = "launchers")]
    fn splice_launchers(
        &self,
        sources: &[PathBuf],
        includes: &[PathBuf],
        items: &mut [ModuleItem],
        manifest: &mut Manifest,
        cache: Option<&Cache>,
    ) -> Result<(), Error> {
        use super::manifest::LaunchersStamp;
        if !self.spec.launchers {
            manifest.launchers = None;
            if glue::launchers_feature_unused(&self.base) {
                self.warn(
                    "cuda-build: the `launchers` feature is on in Cargo.toml, but no typed \
                     launchers are generated without `Build::launchers(true)` in the build script"
                        .into(),
                );
            }
            return Ok(());
        }
        // The version: a new cuda-build may generate different code from the
        // same sources. Paths as shown (package-relative), like the code and
        // notes themselves, so checkouts at other paths share the record.
        let mut k = KeyHasher::new(concat!("cuda-build launchers ", env!("CARGO_PKG_VERSION")));
        for s in sources {
            k.str(&self.display_path(s));
            k.str(
                manifest
                    .sources
                    .get(s)
                    .map(|e| e.key.as_str())
                    .unwrap_or(""),
            );
        }
        for i in includes {
            k.str(&self.display_path(i));
        }
        for (n, v) in &self.spec.defines {
            k.str(n);
            k.str(v.as_deref().unwrap_or("\u{0}none"));
        }
        let key = k.finish();
        // A record with another key or length is not this build's (a
        // foreign file): parse again.
        let fits = |l: &LaunchersStamp| l.key == key && l.code.len() == sources.len();
        let stamp = match manifest.launchers.take().filter(fits) {
            Some(l) => l,
            None => match cache.and_then(|c| c.get_json::<LaunchersStamp>("launchers", &key)) {
                Some(l) if fits(&l) => l,
                _ => {
                    let g = crate::launchers::generate_in(
                        &self.env,
                        Some(&self.base),
                        sources,
                        includes,
                        &self.spec.defines,
                    )?;
                    let l = LaunchersStamp {
                        key,
                        code: g.code_per_source.into_iter().map(|(_, c)| c).collect(),
                        notes: g.notes,
                    };
                    if let Some(c) = cache {
                        // Best effort: a record not written is parsed again next time.
                        let _ = c.put_json("launchers", &l.key, &l);
                    }
                    l
                }
            },
        };
        for n in &stamp.notes {
            self.warn(n.clone());
        }
        for (item, code) in items.iter_mut().zip(&stamp.code) {
            if !code.trim().is_empty() {
                item.extra = Some(code.clone());
            }
        }
        manifest.launchers = Some(stamp);
        Ok(())
    }

    #[cfg(not(feature = "launchers"))]
    fn splice_launchers(
        &self,
        _sources: &[PathBuf],
        _includes: &[PathBuf],
        _items: &mut [ModuleItem],
        _manifest: &mut Manifest,
        _cache: Option<&Cache>,
    ) -> Result<(), Error> {
        if self.spec.launchers {
            return Err(Error::new(
                "launchers-feature-off",
                "Build::launchers(true) needs cuda-build's `launchers` feature, which is off",
            )
            .with_help(
                "depend on cuda-build with `features = [\"launchers\"]` in [build-dependencies]",
            ));
        }
        Ok(())
    }

    /// No toolkit on docs.rs: a module with the right shape and empty images.
    fn docs_rs_module(
        &self,
        sources: &[PathBuf],
        names: &[String],
        why: &Error,
    ) -> Result<Artifacts, Error> {
        self.cargo(&format!("warning=cuda-build: no CUDA toolkit on docs.rs ({}); generating an empty kernel module", why.message));
        if let Err(e) = std::fs::create_dir_all(&self.out_dir) {
            return Err(nvcc::write_error(&self.out_dir, &e));
        }
        let items: Vec<ModuleItem> = sources
            .iter()
            .zip(names)
            .map(|(s, n)| ModuleItem {
                name: n.clone(),
                source: self.display_path(s),
                kind: self.spec.output.as_str(),
                ..Default::default()
            })
            .collect();
        let text = module::render("", &[], &items);
        let module = self.write_module(&text)?;
        Ok(Artifacts {
            module,
            kernels: Vec::new(),
            toolkit_version: None,
            plan: None,
            stats: BuildStats::default(),
            library: None,
            warnings: Vec::new(),
        })
    }

    /// The arch plan, remembered in the manifest when it depends only on
    /// settings (not on detected GPUs), so a no-op run starts no nvcc.
    fn plan(
        &self,
        tk: &Toolkit,
        inputs: &ArchInputs,
        manifest: &mut Manifest,
        cache: Option<&Cache>,
    ) -> Result<ArchPlan, Error> {
        let mut k = KeyHasher::new("plan");
        k.str(&tk.nvcc.to_string_lossy());
        if let Ok(m) = std::fs::metadata(&tk.nvcc) {
            k.str(&m.len().to_string());
            k.str(&format!("{:?}", m.modified().ok()));
        }
        k.str(&format!("{:?}", tk.version));
        k.str(&format!("{inputs:?}"));
        for v in cuda_toolchain::plan::INPUT_VARS {
            k.str(self.env.get(v).unwrap_or("\u{0}unset"));
        }
        let key = k.finish();
        if let Some(p) = manifest.plans.get(&key).and_then(plan_from_stamp) {
            return Ok(p);
        }
        if let Some(stamp) = cache.and_then(|c| c.get_json::<PlanStamp>("plans", &key)) {
            if let Some(p) = plan_from_stamp(&stamp) {
                manifest.plans.insert(key, stamp);
                return Ok(p);
            }
        }
        let plan = glue::plan(&self.env, tk, inputs)?;
        if !matches!(plan.source, ArchSource::Detected | ArchSource::Fallback) {
            let stamp = stamp_plan(&plan);
            if let Some(c) = cache {
                let _ = c.put_json("plans", &key, &stamp);
            }
            manifest.plans.insert(key, stamp);
        }
        Ok(plan)
    }

    fn item(&self, job: &Job, entry: &super::manifest::Entry) -> ModuleItem {
        let kind = self.spec.output;
        ModuleItem {
            name: job.name.clone(),
            source: job.display.clone(),
            kind: kind.as_str(),
            image: match kind {
                OutputKind::StaticLib => None,
                _ => job.outputs.last().map(|(_, p)| p.clone()),
            },
            cubins: if kind == OutputKind::Cubin {
                job.outputs
                    .iter()
                    .map(|(role, p)| (role.trim_end_matches(".cubin").to_string(), p.clone()))
                    .collect()
            } else {
                Vec::new()
            },
            entries: entry.entries.clone(),
            archs: entry.archs.clone(),
            extra: None,
        }
    }
}

fn stamp_plan(p: &ArchPlan) -> PlanStamp {
    PlanStamp {
        sass: p.sass.iter().map(|a| a.to_string()).collect(),
        ptx: p.ptx.map(|a| a.to_string()),
        source: p.source.as_str().to_string(),
        warnings: p.warnings.clone(),
    }
}

fn plan_from_stamp(s: &PlanStamp) -> Option<ArchPlan> {
    let source = ArchSource::from_name(&s.source)
        .filter(|x| !matches!(x, ArchSource::Detected | ArchSource::Fallback))?;
    Some(ArchPlan {
        sass: s
            .sass
            .iter()
            .map(|a| Arch::parse(a).ok())
            .collect::<Option<_>>()?,
        ptx: match &s.ptx {
            Some(a) => Some(Arch::parse(a).ok()?),
            None => None,
        },
        source,
        warnings: s.warnings.clone(),
    })
}

/// One error for several failed sources: the first in full, the others after it.
pub(super) fn combine(mut failures: Vec<Error>) -> Error {
    if failures.len() == 1 {
        return failures.remove(0);
    }
    let n = failures.len();
    let mut first = failures.remove(0);
    first.message = format!(
        "{} (and {} more source{} failed)",
        first.message,
        n - 1,
        if n > 2 { "s" } else { "" }
    );
    for e in failures {
        first = first.with_detail(String::new()).with_detail(e.to_string());
    }
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_stamp_round_trip() {
        let p = ArchPlan {
            sass: vec![Arch::new(8, 0), Arch::parse("90a").unwrap()],
            ptx: Some(Arch::parse("90a").unwrap()),
            source: ArchSource::CudaArchs,
            warnings: vec!["w".into()],
        };
        assert_eq!(plan_from_stamp(&stamp_plan(&p)), Some(p));
    }

    #[test]
    fn several_failures_are_all_reported() {
        let e = combine(vec![
            Error::new("nvcc-failed", "a failed"),
            Error::new("nvcc-failed", "b failed"),
        ]);
        assert!(e.message.contains("and 1 more source failed"));
        assert!(e.to_string().contains("b failed"));
    }
}
