//! The plan stage of one build: sources, toolkit, arch plans and jobs, with
//! every job that is up to date or in the cache settled. What is left is
//! for the pool to compile.

use crate::compile::incremental::cache::{self, Cache};
use crate::compile::incremental::manifest::Manifest;
use crate::compile::nvcc::progress::{Event, Progress};
use crate::compile::nvcc::runner::Runner;
use crate::compile::output::generated_module;
use crate::compile::output::write_error::write_error;
use crate::compile::run::context::{JobDone, Planned, Run, Stage, Tools};
use crate::compile::run::job::Job;
use crate::compile::run::job_args::IncludeDirs;
use crate::compile::settings::sources;
use crate::compile::settings::spec::{OutputNames, ToolkitChoice};
use crate::compile::settings::toolchain;
use cuda_toolchain::arch::Arch;
use cuda_toolchain::env::Var;
use cuda_toolchain::plan::{ArchInputs, ArchPlan};
use cuda_toolchain::toolkit::Toolkit;
use cuda_toolchain::Error;
use std::path::PathBuf;
use std::sync::Arc;

/// What a build compiles: its sources, their Rust module names, and its
/// include directories (absolute).
struct Inputs {
    files: Vec<PathBuf>,
    names: Vec<String>,
    includes: Vec<PathBuf>,
    /// The header dependencies' include dirs (`-isystem`), absolute.
    system_includes: Vec<PathBuf>,
}

impl Run<'_> {
    /// The plan stage: jobs made, and those already current or cached
    /// settled (their results filled in).
    pub(crate) fn plan_jobs(&self) -> Result<Stage, Error> {
        let inputs = self.inputs()?;
        let mut prebuilt = self.prebuilt_in_use()?;
        let (tk, other_toolkits) = match &self.spec.toolkit {
            ToolkitChoice::Found(tk, others) => (tk.clone(), others.clone()),
            ToolkitChoice::Given(tk) => (tk.clone(), Vec::new()),
            ToolkitChoice::Missing(e) if self.env.get_os(Var::DocsRs).is_some() => {
                return self
                    .docs_rs_module(&inputs.files, &inputs.names, e)
                    .map(|a| Stage::Done(Box::new(a)));
            }
            // Without nvcc a build may still run on the images its package ships.
            ToolkitChoice::Missing(e) => match self.toolkit_for_prebuilt(&mut prebuilt, e) {
                Some(tk) => (tk, Vec::new()),
                None => return Err(e.clone()),
            },
            // Preparing settles the others; searching here keeps this total.
            ToolkitChoice::Search | ToolkitChoice::Root(_) => {
                toolchain::find_toolkit(&self.env, &self.metadata)?
            }
        };
        let (mut manifest, loaded, manifest_path) = self.open_manifest()?;
        let cache = cache::dir_for(
            &self.env,
            self.spec.cache_dir.as_deref(),
            self.spec.no_cache,
        )
        .and_then(|d| {
            cache::usable_dir(d, self.spec.cache_dir.is_some())
                .map_err(|w| self.warn(w))
                .ok()
        })
        .map(|d| Cache::new(&d).with_remote(&self.env));
        let shipped_arch = prebuilt
            .shipped
            .as_ref()
            .and_then(|s| s.declared_arch().map(str::to_string));
        let default_plan = self.default_plan(&tk, shipped_arch, &mut manifest, cache.as_ref())?;
        let jobs = self.make_jobs(&tk, &inputs, &default_plan, &mut manifest, cache.as_ref())?;
        self.check_layout(&jobs, &inputs.files, &manifest)?;

        let tools = Tools {
            progress: Progress::new(&self.env, jobs.len()),
            runner: Runner::new(&self.env, &tk.nvcc, &self.base),
            tk,
            other_toolkits,
            cache,
            prebuilt,
        };
        let results = self.settle_current(&tools, &jobs, &manifest);
        Ok(Stage::Ready(Box::new(Planned {
            tools,
            jobs,
            results,
            manifest,
            loaded,
            manifest_path,
            default_plan,
            sources: inputs.files,
            includes: inputs
                .includes
                .into_iter()
                .chain(inputs.system_includes)
                .collect(),
        })))
    }

    /// The sources (each, and each directory walked, a rerun trigger), their
    /// module names, and the include directories, which must exist; a
    /// `Build::file_flag`/`file_arch` must name one of the sources.
    fn inputs(&self) -> Result<Inputs, Error> {
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
        let split_files = spec.file_splits.iter().map(|(f, _)| f);
        for f in spec
            .file_flags
            .iter()
            .chain(&spec.file_archs)
            .map(|(f, _)| f)
            .chain(split_files)
        {
            let p = self.base.join(f);
            if !srcs.files.contains(&p) {
                return Err(Error::new(
                    "source-not-found",
                    format!(
                        "Build::file_flag/file_arch/file_split_compile names `{}`, which is not one of the sources",
                        p.display()
                    ),
                )
                .with_help("use the same path as in Build::file / dir / glob"));
            }
        }
        let names = generated_module::names(&self.base, &srcs.files);
        let system_includes = spec
            .system_includes
            .iter()
            .map(|i| self.base.join(i))
            .collect();
        Ok(Inputs {
            files: srcs.files,
            names,
            includes,
            system_includes,
        })
    }

    /// Creates the output directories, removes what a killed build left in
    /// them (job directories, half-written files: their owner's pid is in
    /// their name, and cargo builds one OUT_DIR at a time), and loads the
    /// last build's manifest (its hashes seed this build's): the manifest
    /// to update, the one loaded, and its path.
    fn open_manifest(&self) -> Result<(Manifest, Arc<Manifest>, PathBuf), Error> {
        for dir in [&self.out_root, &self.kernel_dir] {
            if let Err(e) = std::fs::create_dir_all(dir) {
                return Err(write_error(dir, &e));
            }
            cuda_toolchain::fsutil::remove_abandoned(dir, ".tmp-");
        }
        let manifest_path = self.out_root.join("manifest.json");
        let manifest = Manifest::load(&manifest_path, &self.base);
        let loaded = Arc::new(manifest.clone());
        self.hashes.seed(loaded.clone());
        self.checks.size_for(&loaded);
        Ok((manifest, loaded, manifest_path))
    }

    /// The plan of every source without a `Build::file_arch`, checked
    /// against what the header-only dependencies need; its warnings queued.
    /// With nothing else to go by (no setting, no GPU, no fallback), the
    /// arch set the package's shipped images were built for (`shipped_arch`).
    fn default_plan(
        &self,
        tk: &Toolkit,
        shipped_arch: Option<String>,
        manifest: &mut Manifest,
        cache: Option<&Cache>,
    ) -> Result<ArchPlan, Error> {
        let md = &self.metadata;
        let inputs = ArchInputs {
            explicit: self.spec.arch.clone(),
            metadata: md.arch.clone(),
            fallback: (self.spec.fallback_arch.clone())
                .or(md.fallback_arch.clone())
                .or(shipped_arch),
        };
        let plan = self.arch_plan(tk, &inputs, manifest, cache)?;
        self.check_header_needs(&plan)?;
        for w in &plan.warnings {
            self.warn(w.clone());
        }
        Ok(plan)
    }

    /// CUTLASS 3.x/4.x and the like: the plan's archs checked before any
    /// compile (an error, or a warning when the requirement is advisory).
    fn check_header_needs(&self, plan: &ArchPlan) -> Result<(), Error> {
        for needs in &self.spec.header_needs {
            let below = |a: &&Arch| (a.cc.major, a.cc.minor) < needs.min_cc;
            let low: Vec<String> = (plan.sass.iter().filter(below))
                .map(|a| format!("sm_{a}"))
                .chain(
                    plan.ptx
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
        Ok(())
    }

    /// One job per source, each with its plan (the default one, or its
    /// `Build::file_arch`), checked against `[package.metadata.cuda] deploy`
    /// before anything compiles: a declared target that could not run it fails.
    fn make_jobs(
        &self,
        tk: &Toolkit,
        inputs: &Inputs,
        default_plan: &ArchPlan,
        manifest: &mut Manifest,
        cache: Option<&Cache>,
    ) -> Result<Vec<Job>, Error> {
        let spec = self.spec;
        let deploy = cuda_toolchain::image::deploy::read_deploy(&self.base)?;
        let mut jobs = Vec::new();
        for (source, name) in inputs.files.iter().zip(&inputs.names) {
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
                    self.arch_plan(tk, &inputs, manifest, cache)?
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
            jobs.push(self.job(
                tk,
                source,
                name,
                &file_name,
                plan,
                IncludeDirs {
                    user: &inputs.includes,
                    system: &inputs.system_includes,
                },
            )?);
        }
        Ok(jobs)
    }

    /// Each job that is up to date or in the cache, settled (a progress
    /// event each); None for the jobs the pool must compile.
    fn settle_current(
        &self,
        tools: &Tools,
        jobs: &[Job],
        manifest: &Manifest,
    ) -> Vec<Option<Result<JobDone, Error>>> {
        let mut results = Vec::with_capacity(jobs.len());
        for job in jobs {
            let old = manifest.sources.get(&job.source);
            let r = self.reuse(tools, job, old);
            if matches!(r, Some(Ok(_))) {
                tools
                    .progress
                    .event(Event::Cached, &job.display, &job.archs.join(","));
            }
            results.push(r);
        }
        results
    }
}
