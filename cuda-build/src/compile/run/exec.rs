//! Settling one job: already current, restored from the cache, or compiled
//! by nvcc (outputs validated before they are used or cached).

use crate::compile::incremental::cache::{Cache, ObjectMeta};
use crate::compile::incremental::depfile;
use crate::compile::incremental::line_markers;
use crate::compile::incremental::manifest::{Entry, Stamp};
use crate::compile::nvcc::runner::{self as nvcc, Runner};
use crate::compile::output::artifacts::OutputKind;
use crate::compile::output::inspect;
use crate::compile::output::validate;
use crate::compile::run::context::{JobDone, Outcome, Run};
use crate::compile::run::job::Job;
use crate::compile::settings::glue;
use cuda_toolchain::fsutil;
use cuda_toolchain::toolkit::Toolkit;
use cuda_toolchain::Error;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
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

impl Run<'_> {
    /// Up to date, or restored from the cache; None when nvcc must run.
    /// Reads no output's bytes: outputs are checked by size and mtime,
    /// inputs by size and mtime first and by content only when touched.
    pub(crate) fn reuse(
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
            let mtimes: Option<Vec<u64>> = if outputs_ok {
                e.deps
                    .iter()
                    .map(|d| self.checks.check(d, &self.hashes))
                    .collect()
            } else {
                None
            };
            if let Some(mtimes) = mtimes {
                // Touched but unchanged inputs keep their hash, with the new mtime.
                let mut entry = e.clone();
                for (d, m) in entry.deps.iter_mut().zip(mtimes) {
                    d.mtime_ns = m;
                }
                return Some(Ok(JobDone {
                    warnings: nvcc::warnings(&entry.stderr),
                    entry,
                    outcome: Outcome::UpToDate,
                    took: None,
                }));
            }
        }
        let cache = cache?;
        self.remote_note(cache);
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
            took: None,
        }))
    }

    /// Compiles one job in its own temporary directory (created
    /// exclusively: a leftover of the same name is never reused).
    pub(crate) fn compile_job(
        &self,
        tk: &Toolkit,
        others: &[Toolkit],
        job: &Job,
        runner: &Runner,
        cache: Option<&Cache>,
        threads: usize,
    ) -> Result<JobDone, Error> {
        let tmp = loop {
            let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
            let tmp = self
                .out_root
                .join(format!(".tmp-{}-{}-{n}", job.name, std::process::id()));
            match std::fs::create_dir(&tmp) {
                Ok(()) => break tmp,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(nvcc::write_error(&tmp, &e)),
            }
        };
        let start = Instant::now();
        let r = self.compile_in(tk, others, job, runner, cache, threads, &tmp);
        let _ = std::fs::remove_dir_all(&tmp);
        r.map(|mut d| {
            d.took = Some(start.elapsed());
            d
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn compile_in(
        &self,
        tk: &Toolkit,
        others: &[Toolkit],
        job: &Job,
        runner: &Runner,
        cache: Option<&Cache>,
        threads: usize,
        tmp: &Path,
    ) -> Result<JobDone, Error> {
        let depfile = tmp.join("deps.d");
        let kept = tmp.join("kept");
        // nvcc keeps its preprocessed files, which name every header without
        // `-MD`'s extra host preprocessing pass. sccache (0.9+) keeps them
        // too, on hits as well, and would run that extra pass for `-MD` on
        // every hit; another wrapper (ccache, a script) gets `-MD`.
        let mut deps_by = if runner.wrapper.is_some() && !runner.sccache {
            DepsBy::Depfile
        } else {
            DepsBy::Kept
        };
        let mut kept_deps: Option<Vec<PathBuf>> = None;
        let mut stderr_all = String::new();
        let mut i = 0;
        while i < job.calls.len() {
            let (extra, role) = &job.calls[i];
            let mut args = job.args.clone();
            args.extend(extra.iter().cloned());
            let targets = job.plan.sass.len() + usize::from(job.plan.ptx.is_some());
            if threads > 1 && targets > 1 && job.calls.len() == 1 {
                args.push("--threads".into());
                args.push(threads.min(targets).to_string().into());
            }
            if i == 0 {
                match deps_by {
                    DepsBy::Depfile => {
                        args.push("-MD".into());
                        args.push("-MF".into());
                        args.push(depfile.clone().into());
                    }
                    DepsBy::Kept => {
                        if let Err(e) = std::fs::create_dir(&kept) {
                            return Err(nvcc::write_error(&kept, &e));
                        }
                        args.push("--keep".into());
                        args.push("--keep-dir".into());
                        args.push(kept.clone().into());
                    }
                }
            }
            args.push("-o".into());
            args.push(tmp.join(role).into());
            args.push(job.source_arg.clone().into());
            let shown = || self.shown_args(job, &args, tmp);
            // nvcc's own intermediates (tmpxft_*) go to the job's directory,
            // removed below whether nvcc finished, failed or was killed.
            let job_runner = nvcc::Runner {
                tmpdir: Some(tmp.to_path_buf()),
                ..runner.clone()
            };
            match job_runner.run(&args) {
                Ok(stderr) => stderr_all.push_str(&stderr),
                Err(mut f) => {
                    f.command = runner.display_failed(&f, &shown());
                    return Err(self.failure(tk, others, job, f));
                }
            }
            // nvcc exited 0: its output must still be whole before anything trusts it.
            let out = tmp.join(role);
            if let Err(why) = validate::output(self.spec.output, &out) {
                let real = self.real_output(job, role);
                return Err(Error::new(
                    "nvcc-bad-output",
                    format!(
                        "the compiler `{}` exited successfully but produced a bad output for `{}`: `{}` {why}",
                        runner.nvcc.display(),
                        job.display,
                        real.display()
                    ),
                )
                .with_detail(format!("command: {}", runner.display(&shown())))
                .with_help("nothing was kept or cached; check that NVCC (or CUDA_BUILD_WRAPPER) is the real nvcc, and the free space in OUT_DIR"));
            }
            if i == 0 && deps_by == DepsBy::Kept {
                kept_deps = line_markers::files_in(&kept)
                    .map(|files| self.dep_paths(job, files))
                    .and_then(|(deps, named_source)| named_source.then_some(deps));
            }
            if i == 0 && deps_by == DepsBy::Kept && kept_deps.is_none() {
                // No preprocessed file that names the source (an nvcc that
                // keeps nothing, or names its files otherwise): compile this
                // call again with `-MD` rather than guess the headers.
                self.warn(format!(
                    "cuda-build: nvcc kept no preprocessed file for `{}`; its headers were listed with -MD instead (one more compile)",
                    job.display
                ));
                deps_by = DepsBy::Depfile;
                let _ = std::fs::remove_dir_all(&kept);
                continue;
            }
            i += 1;
        }
        let deps = match (deps_by, kept_deps) {
            (DepsBy::Kept, Some(deps)) => deps,
            _ => {
                let text = std::fs::read_to_string(&depfile).unwrap_or_default();
                self.dep_paths(job, depfile::parse(&text)).0
            }
        };
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
            self.remote_note(cache);
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
            took: None,
        })
    }

    /// The job's inputs from the files nvcc listed: the source first, then
    /// each other file once, normalised (nvcc ran in the package directory,
    /// so relative paths are from there); and whether the list named the
    /// source itself.
    fn dep_paths(&self, job: &Job, listed: Vec<PathBuf>) -> (Vec<PathBuf>, bool) {
        let source = fsutil::normalize(&job.source);
        // A set of path bytes: `Path` equality is slow unoptimised, and a
        // source lists hundreds of headers.
        let mut seen = std::collections::HashSet::new();
        seen.insert(source.as_os_str().as_encoded_bytes().to_vec());
        let mut named_source = false;
        let mut deps = vec![job.source.clone()];
        for d in listed {
            let d = fsutil::normalize(&self.base.join(d));
            if seen.insert(d.as_os_str().as_encoded_bytes().to_vec()) {
                deps.push(d);
            } else if d == source {
                named_source = true;
            }
        }
        (deps, named_source)
    }

    /// The remote cache tier's one warning (bad URL, or the fault that turned it off).
    fn remote_note(&self, cache: &Cache) {
        if let Some(n) = cache.take_remote_note() {
            self.warn(n);
        }
    }

    fn real_output(&self, job: &Job, role: &str) -> PathBuf {
        job.outputs
            .iter()
            .find(|(r, _)| r == role)
            .map(|(_, p)| p.clone())
            .unwrap_or_else(|| self.kernel_dir.join(role))
    }

    /// The arguments as shown in messages: the temporary directory is gone
    /// by then, so outputs are named by their real paths (running the
    /// command by hand writes where the build would), the depfile next to them.
    /// The command as a user could run it again: the real output name, and
    /// without the dependency bookkeeping (`--keep`, `-MD`) into the job's
    /// temporary directory, which is gone by then.
    fn shown_args(&self, job: &Job, args: &[OsString], tmp: &Path) -> Vec<OsString> {
        let mut skip_next = false;
        args.iter()
            .filter(|a| {
                let bookkeeping = skip_next || matches!(a.to_str(), Some("--keep" | "-MD"));
                skip_next = matches!(a.to_str(), Some("--keep-dir" | "-MF"));
                !(bookkeeping || skip_next)
            })
            .map(|a| match Path::new(a).strip_prefix(tmp) {
                Ok(rel) => {
                    let role = rel.to_string_lossy();
                    if job.outputs.iter().any(|(r, _)| *r == role) {
                        self.real_output(job, &role).into_os_string()
                    } else {
                        self.out_root.join(rel).into_os_string()
                    }
                }
                Err(_) => a.clone(),
            })
            .collect()
    }

    /// Kernel names and the archs actually present in the outputs.
    fn inspect(&self, job: &Job, tmp: &Path) -> (Vec<String>, Vec<String>) {
        let read = |role: &str| std::fs::read(tmp.join(role)).unwrap_or_default();
        match self.spec.output {
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

    fn failure(&self, tk: &Toolkit, others: &[Toolkit], job: &Job, f: nvcc::Failure) -> Error {
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
        let explained = glue::explain(&f.stderr, tk, others);
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
        let probe = cuda_toolchain::fsutil::temp_path_for(&self.out_root.join("space-probe"));
        let r = cuda_toolchain::fsutil::write_atomic(&probe, &vec![0u8; 256 * 1024]);
        let _ = std::fs::remove_file(&probe);
        matches!(r, Err(e) if e.raw_os_error() == Some(28))
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
