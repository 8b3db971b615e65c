//! One build: sources to jobs, the up-to-date check, the cache, parallel
//! nvcc runs, the static library and the generated module.

use super::builder::{Artifacts, Build, BuildStats, KernelArtifact, OutputKind};
use super::cache::{self, Cache, ObjectMeta};
use super::hash::{FileHashes, KeyHasher};
use super::jobs::{self, Limiter, Task};
use super::manifest::{Entry, Manifest, PlanStamp, Stamp};
use super::module::{self, ModuleItem};
use super::nvcc::{self, Runner};
use super::progress::{Event, Progress};
use super::{depfile, glue, inspect, sources};
use crate::arch::Arch;
use crate::env::{Env, Var};
use crate::fsutil;
use crate::plan::{ArchInputs, ArchPlan, ArchSource};
use crate::toolkit::Toolkit;
use crate::Error;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Everything one build needs, shared by the parallel jobs.
pub(super) struct Run<'b> {
    pub(super) b: &'b Build,
    pub(super) env: Env,
    pub(super) base: PathBuf,
    pub(super) out_dir: PathBuf,
    pub(super) out_root: PathBuf,
    pub(super) hashes: FileHashes,
    pub(super) warnings: std::sync::Mutex<Vec<String>>,
    /// `cargo:` lines, printed by the builder once the outcome is known.
    pub(super) cargo_lines: std::sync::Mutex<Vec<String>>,
}

/// Extra arguments of one nvcc call, and its output's role (file name in the cache).
type Call = (Vec<OsString>, String);

/// One source to build.
struct Job {
    source: PathBuf,
    display: String,
    name: String,
    plan: ArchPlan,
    archs: Vec<String>,
    /// Arguments shared by every nvcc call for this source (no output, no arch for cubins).
    args: Vec<OsString>,
    /// Per-call extra arguments and the output role (file name in the cache).
    calls: Vec<Call>,
    /// Final output path for each role.
    outputs: Vec<(String, PathBuf)>,
    flags_key: String,
}

struct JobDone {
    entry: Entry,
    outcome: Outcome,
    warnings: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    UpToDate,
    Cached,
    Compiled,
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

fn is_plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl<'b> Run<'b> {
    pub(super) fn new(b: &'b Build, env: Env) -> Result<Run<'b>, Error> {
        let out_dir = match (&b.out_dir, env.get_os(Var::OutDir)) {
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
        if !is_plain_name(&b.module_name) {
            return Err(Error::new(
                "invalid-module-name",
                format!(
                    "module name `{}` must be letters, digits, `_` or `-`",
                    b.module_name.escape_debug()
                ),
            )
            .with_help("pass a plain name to Build::module_name, e.g. \"kernels\""));
        }
        let base = env
            .get_os(Var::CargoManifestDir)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        let out_root = out_dir.join("cuda-build").join(&b.module_name);
        Ok(Run {
            b,
            env,
            base,
            out_dir,
            out_root,
            hashes: FileHashes::default(),
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

    fn warn(&self, w: String) {
        if let Ok(mut ws) = self.warnings.lock() {
            if !ws.contains(&w) {
                ws.push(w);
            }
        }
    }

    /// The injected write fault ([`Build::simulate_write_error`]), as the
    /// error a real one writing `path` would give.
    pub(super) fn injected_fault(&self, path: &Path) -> Result<(), Error> {
        match self.b.write_fault {
            Some(errno) => Err(nvcc::write_error(
                path,
                &std::io::Error::from_raw_os_error(errno),
            )),
            None => Ok(()),
        }
    }

    /// A write to OUT_DIR, honouring the injected fault.
    fn write_out(&self, path: &Path, bytes: &[u8]) -> Result<(), Error> {
        self.injected_fault(path)?;
        crate::fsutil::write_atomic(path, bytes).map_err(|e| nvcc::write_error(path, &e))
    }

    fn copy_out(&self, from: &Path, to: &Path) -> Result<(), Error> {
        self.injected_fault(to)?;
        crate::fsutil::copy_atomic(from, to).map_err(|e| nvcc::write_error(to, &e))
    }

    fn display_path(&self, p: &Path) -> String {
        p.strip_prefix(&self.base)
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned()
    }

    /// A path as it enters a cache key: package- and toolkit-relative where
    /// possible, so a second checkout or a moved toolkit shares entries.
    fn key_path(&self, p: &Path, tk: &Toolkit) -> String {
        let p = fsutil::normalize(p);
        if let Ok(rel) = p.strip_prefix(&self.base) {
            format!("$ROOT/{}", rel.display())
        } else if let Ok(rel) = p.strip_prefix(fsutil::normalize(&tk.root)) {
            format!("$CUDA/{}", rel.display())
        } else {
            p.to_string_lossy().into_owned()
        }
    }

    fn resolve_key_path(&self, s: &str, tk: &Toolkit) -> PathBuf {
        if let Some(rel) = s.strip_prefix("$ROOT/") {
            self.base.join(rel)
        } else if let Some(rel) = s.strip_prefix("$CUDA/") {
            tk.root.join(rel)
        } else {
            PathBuf::from(s)
        }
    }

    fn key_arg(&self, a: &str) -> String {
        let base = self.base.to_string_lossy();
        if base.len() > 1 {
            a.replace(base.as_ref(), "$ROOT")
        } else {
            a.to_string()
        }
    }

    pub(super) fn run(&self) -> Result<Artifacts, Error> {
        let b = self.b;
        let srcs = sources::collect(&self.base, &b.files, &b.dirs, &b.globs, &b.excludes)?;
        for s in &srcs.files {
            self.cargo(&format!("rerun-if-changed={}", s.display()));
        }
        for d in &srcs.watch_dirs {
            self.cargo(&format!("rerun-if-changed={}", d.display()));
        }
        let includes: Vec<PathBuf> = b.includes.iter().map(|i| self.base.join(i)).collect();
        for inc in &includes {
            if !inc.is_dir() {
                return Err(Error::new(
                    "include-dir-missing",
                    format!("include directory `{}` does not exist", inc.display()),
                )
                .with_help("fix the path given to Build::include (relative paths are from the package directory)"));
            }
        }
        for (f, _) in b.file_flags.iter().chain(&b.file_archs) {
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

        let tk = match &b.toolkit {
            Some(tk) => tk.clone(),
            None => match glue::find_toolkit(&self.env) {
                Ok(tk) => tk,
                Err(e) if self.env.get_os(Var::DocsRs).is_some() => {
                    return self.docs_rs_module(&srcs.files, &names, &e);
                }
                Err(e) => return Err(e),
            },
        };
        if let Err(e) = std::fs::create_dir_all(&self.out_root) {
            return Err(nvcc::write_error(&self.out_root, &e));
        }
        let manifest_path = self.out_root.join("manifest.json");
        let mut manifest = Manifest::load(&manifest_path);
        let loaded = manifest.clone();
        let (meta_arch, meta_fallback) = glue::metadata_arch(&self.base)?;
        let default_inputs = ArchInputs {
            explicit: b.arch.clone(),
            metadata: meta_arch.clone(),
            fallback: b.fallback_arch.clone().or(meta_fallback.clone()),
        };
        let cache = if b.no_cache || self.env.flag(Var::CudaBuildNoCache) {
            None
        } else {
            b.cache_dir
                .clone()
                .or_else(|| cache::default_dir(&self.env))
                .map(|d| Cache::new(&d))
        };
        let default_plan = self.plan(&tk, &default_inputs, &mut manifest, cache.as_ref())?;
        for w in &default_plan.warnings {
            self.warn(w.clone());
        }

        // `[package.metadata.cuda] deploy`: fail before compiling anything a
        // declared target could not run.
        let deploy = crate::image::deploy::read_deploy(&self.base)?;
        let mut jobs = Vec::new();
        for (source, name) in srcs.files.iter().zip(&names) {
            let plan = match b
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
            crate::image::deploy::check_plan_on(&deploy, &plan, tk.version.as_ref())?;
            jobs.push(self.job(&tk, source, name, plan, &includes)?);
        }

        let progress = Progress::new(&self.env, jobs.len());
        let limiter = Limiter::from_env(&self.env);
        let runner = Runner::new(&self.env, &tk.nvcc);

        // First pass (serial, cheap): what is up to date or in the cache.
        let mut results: Vec<Option<Result<JobDone, Error>>> = Vec::with_capacity(jobs.len());
        let mut pending = Vec::new();
        for (i, job) in jobs.iter().enumerate() {
            let old = manifest.sources.get(&job.source);
            match self.reuse(&tk, job, old, cache.as_ref()) {
                Some(Ok(done)) => {
                    progress.event(Event::Cached, &job.display, &job.archs.join(","));
                    results.push(Some(Ok(done)));
                }
                Some(Err(e)) => results.push(Some(Err(e))),
                None => {
                    results.push(None);
                    pending.push(i);
                }
            }
        }

        // nvcc's --threads for multi-arch sources when there are fewer sources than slots.
        let capacity = limiter.capacity().max(1);
        let threads = if pending.is_empty() {
            1
        } else {
            (capacity / pending.len()).max(1)
        };
        let tasks: Vec<Task<'_, Result<JobDone, Error>>> = pending
            .iter()
            .map(|&i| {
                let job = &jobs[i];
                let (this, tk, runner, progress, cache) =
                    (&self, &tk, &runner, &progress, cache.as_ref());
                Box::new(move || {
                    progress.event(Event::Start, &job.display, &job.archs.join(","));
                    let r = this.compile_job(tk, job, runner, cache, threads);
                    let ev = if r.is_ok() {
                        Event::Done
                    } else {
                        Event::Failed
                    };
                    progress.event(ev, &job.display, &job.archs.join(","));
                    r
                }) as Task<'_, Result<JobDone, Error>>
            })
            .collect();
        let compiled = jobs::run_all(tasks, &limiter);
        for (i, r) in pending.into_iter().zip(compiled) {
            results[i] = Some(r);
        }

        let mut stats = BuildStats::default();
        let mut failures = Vec::new();
        let mut kernels = Vec::new();
        let mut items = Vec::new();
        let mut all_archs: Vec<String> = Vec::new();
        for (job, r) in jobs.iter().zip(results) {
            match r.expect("every job has a result") {
                Ok(done) => {
                    match done.outcome {
                        Outcome::UpToDate => stats.up_to_date += 1,
                        Outcome::Cached => stats.from_cache += 1,
                        Outcome::Compiled => stats.compiled += 1,
                    }
                    for w in done.warnings {
                        self.warn(w);
                    }
                    for d in &done.entry.deps {
                        self.cargo(&format!("rerun-if-changed={}", d.path.display()));
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
                        kind: b.output,
                        entries: done.entry.entries.clone(),
                        archs: done.entry.archs.clone(),
                        module: job.name.clone(),
                    });
                    items.push(self.item(job, &done.entry));
                    manifest.sources.insert(job.source.clone(), done.entry);
                }
                Err(e) => {
                    manifest.sources.remove(&job.source);
                    failures.push(e);
                }
            }
        }
        // Sources no longer built are forgotten.
        manifest
            .sources
            .retain(|src, _| jobs.iter().any(|j| j.source == *src));
        // Keep what succeeded, so fixing one file recompiles only that one.
        if !failures.is_empty() {
            let _ = self.save_manifest(&manifest_path, &manifest, &loaded);
            self.print_warnings();
            return Err(combine(failures));
        }

        let library = if b.output == OutputKind::StaticLib {
            Some(self.link_library(&tk, &default_plan, &kernels, &runner, &mut manifest)?)
        } else {
            None
        };
        self.splice_launchers(&srcs.files, &includes, &mut items, &mut manifest)?;
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
        if manifest == loaded && path.is_file() && self.b.write_fault.is_none() {
            return Ok(());
        }
        self.write_out(path, &manifest.to_json())
    }

    fn print_warnings(&self) -> Vec<String> {
        let warnings = self.warnings.lock().map(|w| w.clone()).unwrap_or_default();
        for w in &warnings {
            self.cargo(&format!("warning={w}"));
        }
        warnings
    }

    fn write_module(&self, text: &str) -> Result<PathBuf, Error> {
        let path = self.out_dir.join(format!("{}.rs", self.b.module_name));
        // Rewriting identical text would still bump the mtime and make rustc rebuild the crate.
        if std::fs::read(&path).ok().as_deref() != Some(text.as_bytes())
            || self.b.write_fault.is_some()
        {
            self.write_out(&path, text.as_bytes())?;
        }
        Ok(path)
    }

    /// Typed launchers (feature `launchers`): generated from the sources by
    /// [`crate::launchers::generate`] and spliced into each source's module;
    /// remembered in the manifest so a no-op run does not parse again.
    #[cfg(feature = "launchers")]
    fn splice_launchers(
        &self,
        sources: &[PathBuf],
        includes: &[PathBuf],
        items: &mut [ModuleItem],
        manifest: &mut Manifest,
    ) -> Result<(), Error> {
        use super::manifest::LaunchersStamp;
        if !self.b.launchers {
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
        // The version: a new cuda-build may generate different code from the same sources.
        let mut k = KeyHasher::new(concat!("cuda-build launchers ", env!("CARGO_PKG_VERSION")));
        for s in sources {
            k.str(&s.to_string_lossy());
            k.str(
                manifest
                    .sources
                    .get(s)
                    .map(|e| e.key.as_str())
                    .unwrap_or(""),
            );
        }
        for i in includes {
            k.str(&i.to_string_lossy());
        }
        for (n, v) in &self.b.defines {
            k.str(n);
            k.str(v.as_deref().unwrap_or("\u{0}none"));
        }
        let key = k.finish();
        let stamp = match manifest.launchers.as_ref().filter(|l| l.key == key) {
            Some(l) => l.clone(),
            None => {
                let g = crate::launchers::generate_in(
                    &self.env,
                    Some(&self.base),
                    sources,
                    includes,
                    &self.b.defines,
                )?;
                let l = LaunchersStamp {
                    key,
                    code_per_source: g.code_per_source,
                    notes: g.notes,
                };
                manifest.launchers = Some(l.clone());
                l
            }
        };
        for n in stamp.notes {
            self.warn(n);
        }
        for (path, code) in stamp.code_per_source {
            if let Some(i) = sources.iter().position(|s| *s == path) {
                if !code.trim().is_empty() {
                    items[i].extra = Some(code);
                }
            }
        }
        Ok(())
    }

    #[cfg(not(feature = "launchers"))]
    fn splice_launchers(
        &self,
        _sources: &[PathBuf],
        _includes: &[PathBuf],
        _items: &mut [ModuleItem],
        _manifest: &mut Manifest,
    ) -> Result<(), Error> {
        if self.b.launchers {
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
                kind: self.b.output.as_str(),
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
        for v in [Var::CudaArchs, Var::CmakeCudaArchs, Var::CudaComputeCap] {
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

    fn job(
        &self,
        tk: &Toolkit,
        source: &Path,
        name: &str,
        plan: ArchPlan,
        includes: &[PathBuf],
    ) -> Result<Job, Error> {
        let b = self.b;
        let stem = name;
        let mut args: Vec<OsString> = Vec::new();
        let ccbin = b
            .ccbin
            .clone()
            .or_else(|| self.env.get_nonempty(Var::NvccCcbin).map(PathBuf::from));
        if let Some(c) = ccbin {
            args.push("-ccbin".into());
            args.push(c.into());
        }
        if let Some(std) = &b.std {
            let std = std.trim();
            let std = if std.starts_with("c++") || std.starts_with("gnu++") {
                std.to_string()
            } else {
                format!("c++{std}")
            };
            args.push(format!("-std={std}").into());
        }
        for inc in includes {
            args.push("-I".into());
            args.push(inc.into());
        }
        for (k, v) in &b.defines {
            args.push(match v {
                Some(v) => format!("-D{k}={v}").into(),
                None => format!("-D{k}").into(),
            });
        }
        args.extend(b.flags.iter().map(OsString::from));
        args.extend(
            b.file_flags
                .iter()
                .filter(|(f, _)| self.base.join(f) == source)
                .map(|(_, fl)| OsString::from(fl)),
        );
        let top = plan
            .ptx
            .or_else(|| plan.sass.last().copied())
            .ok_or_else(|| {
                Error::new("arch-invalid", "the arch plan has no targets")
                    .with_help("set Build::arch, e.g. \"90\"")
            })?;
        let dir = &self.out_root;
        let (calls, outputs, archs): (Vec<Call>, Vec<(String, PathBuf)>, Vec<String>) = match b
            .output
        {
            OutputKind::Ptx => (
                vec![(
                    vec![
                        "-ptx".into(),
                        format!("-arch={}", top.compute_name()).into(),
                    ],
                    "out.ptx".into(),
                )],
                vec![("out.ptx".into(), dir.join(format!("{stem}.ptx")))],
                vec![top.compute_name()],
            ),
            OutputKind::Cubin => {
                let sass: Vec<Arch> = if plan.sass.is_empty() {
                    vec![top]
                } else {
                    plan.sass.clone()
                };
                let calls = sass
                    .iter()
                    .map(|a| {
                        (
                            vec!["-cubin".into(), format!("-arch={}", a.sm_name()).into()],
                            format!("{}.cubin", a.sm_name()),
                        )
                    })
                    .collect();
                let outputs = sass
                    .iter()
                    .map(|a| {
                        (
                            format!("{}.cubin", a.sm_name()),
                            dir.join(format!("{stem}.{}.cubin", a.sm_name())),
                        )
                    })
                    .collect();
                (calls, outputs, sass.iter().map(Arch::sm_name).collect())
            }
            OutputKind::Fatbin => {
                let mut a: Vec<OsString> = vec!["-fatbin".into()];
                a.extend(plan.gencode_flags().into_iter().map(OsString::from));
                if plan.sass.is_empty() {
                    // PTX only: keep it uncompressed so the kernel names can be read from it.
                    a.push("-Xfatbin=-compress=false".into());
                }
                (
                    vec![(a, "out.fatbin".into())],
                    vec![("out.fatbin".into(), dir.join(format!("{stem}.fatbin")))],
                    plan.targets_display(),
                )
            }
            OutputKind::StaticLib => {
                let mut a: Vec<OsString> = vec!["-c".into(), "-Xcompiler".into(), "-fPIC".into()];
                if b.rdc {
                    a.push("-rdc=true".into());
                }
                a.extend(plan.gencode_flags().into_iter().map(OsString::from));
                (
                    vec![(a, "out.o".into())],
                    vec![("out.o".into(), dir.join(format!("{stem}.o")))],
                    plan.targets_display(),
                )
            }
        };
        let mut k = KeyHasher::new("cuda-build flags v1");
        k.str(b.output.as_str());
        match &tk.version {
            Some(v) => k.str(&v.to_string()),
            None => k.str(&tk.nvcc.to_string_lossy()),
        };
        for a in &args {
            k.str(&self.key_arg(&a.to_string_lossy()));
        }
        for (extra, role) in &calls {
            k.str(role);
            for a in extra {
                k.str(&a.to_string_lossy());
            }
        }
        // nvcc reads these itself: they change the output as much as flags do.
        for v in [Var::NvccPrependFlags, Var::NvccAppendFlags] {
            k.str(self.env.get(v).unwrap_or("\u{0}unset"));
        }
        Ok(Job {
            source: source.to_path_buf(),
            display: self.display_path(source),
            name: name.to_string(),
            plan,
            archs,
            args,
            calls,
            outputs,
            flags_key: k.finish(),
        })
    }

    /// The full key: flags plus every input's content.
    fn full_key(&self, tk: &Toolkit, job: &Job, deps: &[PathBuf]) -> String {
        let mut k = KeyHasher::new("cuda-build object v1");
        k.str(&job.flags_key);
        for d in deps {
            k.str(&self.key_path(d, tk));
            k.str(self.hashes.get(d).as_deref().unwrap_or("missing"));
        }
        k.finish()
    }

    /// The key of the dependency index: flags, the source's place and content.
    fn deps_key(&self, tk: &Toolkit, job: &Job) -> Option<String> {
        let mut k = KeyHasher::new("cuda-build deps v1");
        k.str(&job.flags_key);
        k.str(&self.key_path(&job.source, tk));
        k.str(&self.hashes.get(&job.source)?);
        Some(k.finish())
    }

    /// Up to date, or restored from the cache; None when nvcc must run.
    fn reuse(
        &self,
        tk: &Toolkit,
        job: &Job,
        old: Option<&Entry>,
        cache: Option<&Cache>,
    ) -> Option<Result<JobDone, Error>> {
        let old = old.filter(|e| e.flags_key == job.flags_key);
        if let Some(e) = old {
            let outputs_ok = e.outputs.len() == job.outputs.len()
                && e.outputs
                    .iter()
                    .zip(&job.outputs)
                    .all(|(s, (_, p))| s.path == *p && s.output_unchanged());
            let deps: Option<Vec<Stamp>> = if outputs_ok {
                e.deps.iter().map(|d| d.check_input(&self.hashes)).collect()
            } else {
                None
            };
            if let Some(deps) = deps {
                let mut entry = e.clone();
                entry.deps = deps;
                return Some(Ok(JobDone {
                    warnings: nvcc::warnings(&entry.stderr),
                    entry,
                    outcome: Outcome::UpToDate,
                }));
            }
        }
        let cache = cache?;
        let deps: Vec<PathBuf> = match old {
            Some(e) => e.deps.iter().map(|d| d.path.clone()).collect(),
            None => {
                let k1 = self.deps_key(tk, job)?;
                cache
                    .deps_index(&k1)?
                    .iter()
                    .map(|s| self.resolve_key_path(s, tk))
                    .collect()
            }
        };
        if deps.first() != Some(&job.source) {
            return None;
        }
        let key = self.full_key(tk, job, &deps);
        let hit = cache.get(&key)?;
        for (role, path) in &job.outputs {
            if !hit.meta.files.iter().any(|f| &f.name == role) {
                return None;
            }
            if let Err(e) = self.copy_out(&hit.dir.join(role), path) {
                return Some(Err(e));
            }
        }
        let entry = Entry {
            flags_key: job.flags_key.clone(),
            key,
            deps: deps.iter().map(|d| Stamp::input(d, &self.hashes)).collect(),
            outputs: job.outputs.iter().map(|(_, p)| Stamp::output(p)).collect(),
            entries: hit.meta.entries.clone(),
            archs: hit.meta.archs.clone(),
            stderr: hit.meta.stderr.clone(),
        };
        Some(Ok(JobDone {
            warnings: nvcc::warnings(&entry.stderr),
            entry,
            outcome: Outcome::Cached,
        }))
    }

    fn compile_job(
        &self,
        tk: &Toolkit,
        job: &Job,
        runner: &Runner,
        cache: Option<&Cache>,
        threads: usize,
    ) -> Result<JobDone, Error> {
        let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = self
            .out_root
            .join(format!(".tmp-{}-{}-{n}", job.name, std::process::id()));
        std::fs::create_dir_all(&tmp).map_err(|e| nvcc::write_error(&tmp, &e))?;
        let r = self.compile_in(tk, job, runner, cache, threads, &tmp);
        let _ = std::fs::remove_dir_all(&tmp);
        r
    }

    #[allow(clippy::too_many_arguments)]
    fn compile_in(
        &self,
        tk: &Toolkit,
        job: &Job,
        runner: &Runner,
        cache: Option<&Cache>,
        threads: usize,
        tmp: &Path,
    ) -> Result<JobDone, Error> {
        let depfile = tmp.join("deps.d");
        let mut stderr_all = String::new();
        for (i, (extra, role)) in job.calls.iter().enumerate() {
            let mut args = job.args.clone();
            args.extend(extra.iter().cloned());
            let targets = job.plan.sass.len() + usize::from(job.plan.ptx.is_some());
            if threads > 1 && targets > 1 && job.calls.len() == 1 {
                args.push("--threads".into());
                args.push(threads.min(targets).to_string().into());
            }
            if i == 0 {
                args.push("-MD".into());
                args.push("-MF".into());
                args.push(depfile.clone().into());
            }
            args.push("-o".into());
            args.push(tmp.join(role).into());
            args.push(job.source.clone().into());
            match runner.run(&args) {
                Ok(stderr) => stderr_all.push_str(&stderr),
                Err(mut f) => {
                    // The temporary directory is removed below: show the
                    // command writing into OUT_DIR's directory instead, so
                    // that running it by hand reproduces the failure.
                    let shown: Vec<OsString> = args
                        .iter()
                        .map(|a| match Path::new(a).strip_prefix(tmp) {
                            Ok(rel) => self.out_root.join(rel).into_os_string(),
                            Err(_) => a.clone(),
                        })
                        .collect();
                    f.command = runner.display(&shown);
                    return Err(self.failure(tk, job, f));
                }
            }
        }
        let dep_text = std::fs::read_to_string(&depfile).unwrap_or_default();
        let cwd = std::env::current_dir().unwrap_or_default();
        let mut deps: Vec<PathBuf> = vec![job.source.clone()];
        for d in depfile::parse(&dep_text) {
            let d = fsutil::normalize(&cwd.join(d));
            if !deps.contains(&d) && d != fsutil::normalize(&job.source) {
                deps.push(d);
            }
        }
        let (entries, archs) = self.inspect(job, tmp);
        let key = self.full_key(tk, job, &deps);
        if let Some(cache) = cache {
            let files: Vec<(String, PathBuf)> = job
                .outputs
                .iter()
                .map(|(r, _)| (r.clone(), tmp.join(r)))
                .collect();
            let meta = ObjectMeta {
                files: Vec::new(),
                entries: entries.clone(),
                archs: archs.clone(),
                stderr: stderr_all.clone(),
            };
            let stored =
                cache
                    .put(&key, &files, meta)
                    .and_then(|()| match self.deps_key(tk, job) {
                        Some(k1) => {
                            let list: Vec<String> =
                                deps.iter().map(|d| self.key_path(d, tk)).collect();
                            cache.put_deps_index(&k1, &list)
                        }
                        None => Ok(()),
                    });
            if let Err(e) = stored {
                self.warn(format!("cuda-build: could not store `{}` in the kernel cache ({e}); the build goes on without it", job.display));
            }
        }
        for (role, path) in &job.outputs {
            self.injected_fault(path)?;
            std::fs::rename(tmp.join(role), path).map_err(|e| nvcc::write_error(path, &e))?;
        }
        let entry = Entry {
            flags_key: job.flags_key.clone(),
            key,
            deps: deps.iter().map(|d| Stamp::input(d, &self.hashes)).collect(),
            outputs: job.outputs.iter().map(|(_, p)| Stamp::output(p)).collect(),
            entries,
            archs,
            stderr: stderr_all.clone(),
        };
        Ok(JobDone {
            warnings: nvcc::warnings(&stderr_all),
            entry,
            outcome: Outcome::Compiled,
        })
    }

    /// Kernel names and the archs actually present in the outputs.
    fn inspect(&self, job: &Job, tmp: &Path) -> (Vec<String>, Vec<String>) {
        let read = |role: &str| std::fs::read(tmp.join(role)).unwrap_or_default();
        match self.b.output {
            OutputKind::Ptx => {
                let info = inspect::read_ptx(&String::from_utf8_lossy(&read("out.ptx")));
                (info.entries, job.archs.clone())
            }
            OutputKind::Cubin => {
                let mut entries = Vec::new();
                for (role, _) in &job.outputs {
                    if let Ok(c) = inspect::read_cubin(&read(role)) {
                        for e in c.entries {
                            if !entries.contains(&e) {
                                entries.push(e);
                            }
                        }
                    }
                }
                (entries, job.archs.clone())
            }
            OutputKind::Fatbin => (
                inspect::fatbin_kernels(&read("out.fatbin")),
                job.archs.clone(),
            ),
            OutputKind::StaticLib => {
                let obj = read("out.o");
                let entries = inspect::elf_section(&obj, ".nv_fatbin")
                    .map(inspect::fatbin_kernels)
                    .unwrap_or_default();
                (entries, job.archs.clone())
            }
        }
    }

    fn failure(&self, tk: &Toolkit, job: &Job, f: nvcc::Failure) -> Error {
        let (code, message) = if f.timed_out {
            (
                "nvcc-timeout",
                format!(
                    "nvcc did not finish compiling `{}` ({})",
                    job.display, f.status
                ),
            )
        } else if let Some((code, e)) = &f.spawn_error {
            (
                *code,
                format!("nvcc could not be started for `{}`: {e}", job.display),
            )
        } else {
            (
                "nvcc-failed",
                format!("nvcc failed to compile `{}` ({})", job.display, f.status),
            )
        };
        // nvcc's tools say "Could not write file" without the reason; find out whether it is space.
        if !f.timed_out
            && f.spawn_error.is_none()
            && looks_like_write_failure(&f.stderr)
            && self.out_of_space()
        {
            return Error::new(
                "disk-full",
                format!("no space left on device while nvcc compiled `{}` into `{}`", job.display, self.out_root.display()),
            )
            .with_detail(format!("command: {}", f.command))
            .with_detail(f.stderr.trim_end().to_string())
            .with_help("free space on that file system (or point CARGO_TARGET_DIR elsewhere), then build again; nothing partial was kept");
        }
        let mut err = Error::new(code, message).with_detail(format!("command: {}", f.command));
        if !f.stderr.trim().is_empty() {
            err = err.with_detail(f.stderr.trim_end().to_string());
        }
        let explained = glue::explain(&self.env, &f.stderr, tk);
        if !explained.is_empty() {
            err = err.with_detail(String::new());
            for e in explained {
                err = err.with_detail(e);
            }
        }
        if f.timed_out {
            err.with_help("raise CUDA_BUILD_TIMEOUT (seconds) if the kernel is that big, or look for a hung host compiler")
        } else {
            err.with_help("the command above reproduces the failure when run by hand")
        }
    }

    /// Whether OUT_DIR's file system is full: a 256 KiB probe write fails with ENOSPC.
    fn out_of_space(&self) -> bool {
        let probe = crate::fsutil::temp_path_for(&self.out_root.join("space-probe"));
        let r = crate::fsutil::write_atomic(&probe, &vec![0u8; 256 * 1024]);
        let _ = std::fs::remove_file(&probe);
        matches!(r, Err(e) if e.raw_os_error() == Some(28))
    }

    fn item(&self, job: &Job, entry: &Entry) -> ModuleItem {
        let kind = self.b.output;
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

fn looks_like_write_failure(stderr: &str) -> bool {
    let s = stderr.to_ascii_lowercase();
    [
        "could not write",
        "cannot write",
        "no space left",
        "write error",
        "error writing",
    ]
    .iter()
    .any(|p| s.contains(p))
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
    let source = [
        ArchSource::Explicit,
        ArchSource::CudaArchs,
        ArchSource::CmakeCudaArchs,
        ArchSource::CudaComputeCap,
        ArchSource::CargoMetadata,
    ]
    .into_iter()
    .find(|x| x.as_str() == s.source)?;
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
fn combine(mut failures: Vec<Error>) -> Error {
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
