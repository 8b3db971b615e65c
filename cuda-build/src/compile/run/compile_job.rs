//! The compile stage of one job: nvcc in the job's own temporary directory,
//! each output validated before anything trusts it, the headers it read
//! listed, the result stored in the kernel cache and moved into place.

use crate::compile::incremental::cache::ObjectMeta;
use crate::compile::incremental::depfile;
use crate::compile::incremental::line_markers;
use crate::compile::incremental::manifest::{Entry, Stamp};
use crate::compile::nvcc::runner::{self, Ran, Runner};
use crate::compile::output::artifacts::OutputKind;
use crate::compile::output::write_error::write_error;
use crate::compile::output::{inspect, validate};
use crate::compile::run::context::{JobDone, Outcome, Run, Tools};
use crate::compile::run::job::Job;
use crate::compile::run::module_anchor;
use crate::compile::run::work_estimate::device_chains;
use cuda_toolchain::fsutil;
use cuda_toolchain::process::tree_memory::Watch;
use cuda_toolchain::Error;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Where a compiled job's header list comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DepsBy {
    /// nvcc's kept preprocessed files (`--keep`): no extra pass.
    Kept,
    /// A Make depfile (`-MD -MF`): under a wrapper other than sccache, or
    /// when nothing was kept.
    Depfile,
}

/// One job being compiled: the build, what its jobs run with, the job, the
/// nvcc `--threads` it may use, and its temporary directory.
struct Compiling<'a, 'b> {
    run: &'a Run<'b>,
    tools: &'a Tools,
    job: &'a Job,
    threads: usize,
    tmp: &'a Path,
    watch: &'a Arc<Watch>,
}

impl Run<'_> {
    /// Compiles one job in its own temporary directory (created
    /// exclusively: a leftover of the same name is never reused), removed
    /// afterwards whether nvcc finished, failed or was killed. Its name
    /// carries our pid, so what a killed build script left is removed by the
    /// next build (`plan_jobs.rs`, `fsutil::remove_abandoned`). Each nvcc
    /// call reports its memory to `watch`, which can stop it (`schedule.rs`).
    pub(crate) fn compile_job(
        &self,
        tools: &Tools,
        job: &Job,
        threads: usize,
        watch: &Arc<Watch>,
    ) -> Result<JobDone, Error> {
        let tmp = loop {
            let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
            let tmp = self
                .out_root
                .join(format!(".tmp-{}-{n}-{}", std::process::id(), job.name));
            match std::fs::create_dir(&tmp) {
                Ok(()) => break tmp,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(write_error(&tmp, &e)),
            }
        };
        let start = Instant::now();
        let compiling = Compiling {
            run: self,
            tools,
            job,
            threads,
            tmp: &tmp,
            watch,
        };
        let r = compiling.compile();
        let _ = std::fs::remove_dir_all(&tmp);
        r.map(|mut d| {
            d.took = Some(start.elapsed());
            d
        })
    }
}

impl Compiling<'_, '_> {
    /// Every nvcc call of the job, then its header list, its cache entry and
    /// its outputs moved into place.
    fn compile(&self) -> Result<JobDone, Error> {
        let (job, tmp) = (self.job, self.tmp);
        let depfile = tmp.join("deps.d");
        let kept = tmp.join("kept");
        // nvcc keeps its preprocessed files, which name every header without
        // `-MD`'s extra host preprocessing pass. sccache (0.9+) keeps them
        // too, on hits as well, and would run that extra pass for `-MD` on
        // every hit; another wrapper (ccache, a script) gets `-MD`.
        let runner = &self.tools.runner;
        let mut deps_by = if runner.wrapper.is_some() && !runner.sccache {
            DepsBy::Depfile
        } else {
            DepsBy::Kept
        };
        let mut kept_deps: Option<Vec<PathBuf>> = None;
        self.write_anchor()?;
        let mut stderr_all = String::new();
        // The job's calls run one after another: its peak is theirs.
        let mut peak: Option<u64> = None;
        let mut i = 0;
        while i < job.calls.len() {
            let (extra, role) = &job.calls[i];
            let mut args = self.call_args(extra);
            if i == 0 {
                self.list_headers_with(deps_by, &mut args, &depfile, &kept)?;
            }
            args.push("-o".into());
            args.push(tmp.join(role).into());
            args.push(job.source_arg.clone().into());
            let ran = self.run_nvcc(&args)?;
            stderr_all.push_str(&ran.output);
            peak = peak.max(ran.peak_memory);
            self.validate_output(role, &args)?;
            if i == 0 && deps_by == DepsBy::Kept {
                kept_deps = line_markers::files_in(&kept)
                    .map(|files| self.dep_paths(files))
                    .and_then(|(deps, named_source)| named_source.then_some(deps));
                if kept_deps.is_none() {
                    // No preprocessed file that names the source (an nvcc that
                    // keeps nothing, or names its files otherwise): compile this
                    // call again with `-MD` rather than guess the headers.
                    self.run.warn(format!(
                        "cuda-build: nvcc kept no preprocessed file for `{}`; its headers were listed with -MD instead (one more compile)",
                        job.display
                    ));
                    deps_by = DepsBy::Depfile;
                    let _ = std::fs::remove_dir_all(&kept);
                    continue;
                }
            }
            i += 1;
        }
        let deps = match (deps_by, kept_deps) {
            (DepsBy::Kept, Some(deps)) => deps,
            _ => {
                let text = std::fs::read_to_string(&depfile).unwrap_or_default();
                self.dep_paths(depfile::parse(&text)).0
            }
        };
        self.finish_compiled(deps, stderr_all).map(|mut d| {
            d.peak_memory = peak;
            d.threads = self.nvcc_threads().unwrap_or(1);
            d
        })
    }

    /// One call's arguments before the bookkeeping and the output: the
    /// job's shared ones, the call's own, and `--threads` for a multi-arch
    /// source when there are fewer sources than free slots.
    fn call_args(&self, extra: &[OsString]) -> Vec<OsString> {
        let mut args = self.job.args.clone();
        if let Some(header) = self.anchor_header() {
            args.push("-include".into());
            args.push(header.into());
        }
        args.extend(extra.iter().cloned());
        if let Some(n) = self.nvcc_threads() {
            args.push("--threads".into());
            args.push(n.to_string().into());
        }
        args
    }

    /// The job's module anchor header (`Build::stable_module_ids`), in the
    /// build's own directory: it is named by the flags key, not an input.
    fn anchor_header(&self) -> Option<PathBuf> {
        let symbol = self.job.anchor.as_deref()?;
        Some(
            self.run
                .out_root
                .join("module-anchors")
                .join(module_anchor::file_name(symbol)),
        )
    }

    /// Writes the anchor header nvcc pre-includes, whole (temp and rename).
    fn write_anchor(&self) -> Result<(), Error> {
        let (Some(symbol), Some(path)) = (self.job.anchor.as_deref(), self.anchor_header()) else {
            return Ok(());
        };
        let text = module_anchor::header(symbol);
        if std::fs::read_to_string(&path).is_ok_and(|t| t == text) {
            return Ok(());
        }
        let written = match path.parent() {
            Some(dir) => std::fs::create_dir_all(dir),
            None => Ok(()),
        }
        .and_then(|()| fsutil::write_atomic_unsynced(&path, text.as_bytes()));
        written.map_err(|e| write_error(&path, &e))
    }

    /// nvcc's `--threads` for this job: its device chains run at once
    /// ([`device_chains`]), when the pool lent it more than one slot and it
    /// has several chains in one call. It does not change the output
    /// (checked with nvcc 13.0 on fatbins and objects), so it may follow
    /// what is free.
    fn nvcc_threads(&self) -> Option<u32> {
        let job = self.job;
        let chains = device_chains(&job.archs);
        (self.threads > 1 && chains > 1 && job.calls.len() == 1)
            .then(|| self.threads.min(chains) as u32)
    }

    /// The first call also lists the headers it reads: with `--keep` into
    /// `kept`, or with `-MD -MF depfile`.
    fn list_headers_with(
        &self,
        deps_by: DepsBy,
        args: &mut Vec<OsString>,
        depfile: &Path,
        kept: &Path,
    ) -> Result<(), Error> {
        match deps_by {
            DepsBy::Depfile => {
                args.push("-MD".into());
                args.push("-MF".into());
                args.push(depfile.into());
            }
            DepsBy::Kept => {
                if let Err(e) = std::fs::create_dir(kept) {
                    return Err(write_error(kept, &e));
                }
                args.push("--keep".into());
                args.push("--keep-dir".into());
                args.push(kept.into());
            }
        }
        Ok(())
    }

    /// Runs one nvcc call; what it printed and its peak memory, or the explained failure.
    fn run_nvcc(&self, args: &[OsString]) -> Result<Ran, Error> {
        let runner = &self.tools.runner;
        // nvcc's own intermediates (tmpxft_*) go to the job's directory,
        // removed with it whether nvcc finished, failed or was killed.
        let job_runner = Runner {
            tmpdir: Some(self.tmp.to_path_buf()),
            watch: Some(self.watch.clone()),
            ..runner.clone()
        };
        job_runner.run(args).map_err(|mut f| {
            f.command = runner.display_failed(&f, &self.shown_args(args));
            self.run.failure(self.tools, self.job, f)
        })
    }

    /// nvcc exited 0: its output must still be whole before anything trusts it.
    fn validate_output(&self, role: &str, args: &[OsString]) -> Result<(), Error> {
        let Err(why) = validate::output(self.run.spec.output, &self.tmp.join(role)) else {
            return Ok(());
        };
        let runner = &self.tools.runner;
        Err(Error::new(
            "nvcc-bad-output",
            format!(
                "the compiler `{}` exited successfully but produced a bad output for `{}`: `{}` {why}",
                runner.nvcc.display(),
                self.job.display,
                self.real_output(role).display()
            ),
        )
        .with_detail(format!("command: {}", runner.display(&self.shown_args(args))))
        .with_help("nothing was kept or cached; check that NVCC (or CUDA_BUILD_WRAPPER) is the real nvcc, and the free space in OUT_DIR"))
    }

    /// The compiled job's key and entry: stored in the kernel cache (with
    /// its dependency index), its outputs moved into place.
    fn finish_compiled(&self, deps: Vec<PathBuf>, stderr: String) -> Result<JobDone, Error> {
        let (run, job, tmp) = (self.run, self.job, self.tmp);
        let tk = &self.tools.tk;
        let (entries, archs) = self.contents();
        let key = run.full_key(tk, job, &deps);
        if let Some(cache) = &self.tools.cache {
            let files: Vec<(String, PathBuf)> = job
                .outputs
                .iter()
                .map(|(r, _)| (r.clone(), tmp.join(r)))
                .collect();
            let meta = ObjectMeta {
                files: Vec::new(),
                entries: entries.clone(),
                archs: archs.clone(),
                stderr: stderr.clone(),
            };
            let stored = cache
                .put(&key, &files, meta)
                .and_then(|()| match run.deps_key(tk, job) {
                    Some(k1) => {
                        let list: Vec<String> = deps.iter().map(|d| run.key_path(d, tk)).collect();
                        cache.put_deps_index(&k1, &list)
                    }
                    None => Ok(()),
                });
            if let Err(e) = stored {
                run.warn(format!("cuda-build: could not store `{}` in the kernel cache ({e}); the build goes on without it", job.display));
            }
            run.remote_note(cache);
        }
        for (role, path) in &job.outputs {
            run.injected_fault(path)?;
            std::fs::rename(tmp.join(role), path).map_err(|e| write_error(path, &e))?;
        }
        let entry = Entry {
            flags_key: job.flags_key.clone(),
            key,
            deps: deps.iter().map(|d| Stamp::input(d, &run.hashes)).collect(),
            outputs: job.outputs.iter().map(|(_, p)| Stamp::output(p)).collect(),
            entries,
            archs,
            stderr: stderr.clone(),
        };
        Ok(JobDone {
            warnings: runner::warnings(&stderr),
            entry,
            outcome: Outcome::Compiled,
            took: None,
            peak_memory: None,
            threads: 1,
        })
    }

    /// The job's inputs from the files nvcc listed: the source first, then
    /// each other file once, normalised (nvcc ran in the package directory,
    /// so relative paths are from there); and whether the list named the
    /// source itself.
    fn dep_paths(&self, listed: Vec<PathBuf>) -> (Vec<PathBuf>, bool) {
        let source = fsutil::normalize(&self.job.source);
        // A set of path bytes: `Path` equality is slow unoptimised, and a
        // source lists hundreds of headers.
        let mut seen = std::collections::HashSet::new();
        seen.insert(source.as_os_str().as_encoded_bytes().to_vec());
        let mut named_source = false;
        let mut deps = vec![self.job.source.clone()];
        let anchor = self.anchor_header().map(|a| fsutil::normalize(&a));
        for d in listed {
            let d = fsutil::normalize(&self.run.base.join(d));
            // The anchor is the build's own file, keyed by its symbol.
            if anchor.as_ref().is_some_and(|a| *a == d) {
                continue;
            }
            if seen.insert(d.as_os_str().as_encoded_bytes().to_vec()) {
                deps.push(d);
            } else if d == source {
                named_source = true;
            }
        }
        (deps, named_source)
    }

    /// Where the output of `role` goes.
    fn real_output(&self, role: &str) -> PathBuf {
        self.job
            .outputs
            .iter()
            .find(|(r, _)| r == role)
            .map(|(_, p)| p.clone())
            .unwrap_or_else(|| self.run.kernel_dir.join(role))
    }

    /// The command as a user could run it again: the real output name, and
    /// without the dependency bookkeeping (`--keep`, `-MD`) into the job's
    /// temporary directory, which is gone by then.
    fn shown_args(&self, args: &[OsString]) -> Vec<OsString> {
        let mut skip_next = false;
        args.iter()
            .filter(|a| {
                let bookkeeping = skip_next || matches!(a.to_str(), Some("--keep" | "-MD"));
                skip_next = matches!(a.to_str(), Some("--keep-dir" | "-MF"));
                !(bookkeeping || skip_next)
            })
            .map(|a| match Path::new(a).strip_prefix(self.tmp) {
                Ok(rel) => {
                    let role = rel.to_string_lossy();
                    if self.job.outputs.iter().any(|(r, _)| *r == role) {
                        self.real_output(&role).into_os_string()
                    } else {
                        self.run.out_root.join(rel).into_os_string()
                    }
                }
                Err(_) => a.clone(),
            })
            .collect()
    }

    /// Kernel names and the archs actually present in the outputs.
    fn contents(&self) -> (Vec<String>, Vec<String>) {
        let job = self.job;
        let read = |role: &str| std::fs::read(self.tmp.join(role)).unwrap_or_default();
        match self.run.spec.output {
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
                let obj = job
                    .outputs
                    .first()
                    .map(|(r, _)| read(r))
                    .unwrap_or_default();
                let entries = inspect::elf_section(&obj, ".nv_fatbin")
                    .map(inspect::fatbin_kernels)
                    .unwrap_or_default();
                (entries, job.archs.clone())
            }
        }
    }
}
