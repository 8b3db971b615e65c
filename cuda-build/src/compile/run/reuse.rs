//! Settling a job without nvcc: up to date (its outputs and inputs
//! unchanged since the manifest recorded them), or restored from the kernel
//! cache. Reads no output's bytes: outputs are checked by size and mtime,
//! inputs by size and mtime first and by content only when touched.

use crate::compile::incremental::manifest::{Entry, Stamp};
use crate::compile::nvcc::runner::warnings;
use crate::compile::run::context::{JobDone, Outcome, Run, Tools};
use crate::compile::run::job::Job;
use cuda_toolchain::Error;
use std::path::PathBuf;

impl Run<'_> {
    /// Up to date, or restored from the cache; None when nvcc must run.
    /// `old`: what the manifest recorded for the job's source.
    pub(crate) fn reuse(
        &self,
        tools: &Tools,
        job: &Job,
        old: Option<&Entry>,
    ) -> Option<Result<JobDone, Error>> {
        let old =
            old.filter(|e| e.flags_key == job.flags_key && self.prebuilt_entry_allowed(tools, e));
        if let Some(done) = old.and_then(|e| self.up_to_date(job, e)) {
            return Some(Ok(done));
        }
        // The package's shipped images; what they do not settle may still
        // be in the cache, else it is compiled if that is allowed.
        let not_served = match self.serve_prebuilt(tools, job) {
            Ok(Ok(done)) => return Some(Ok(done)),
            Ok(Err(why)) => why,
            Err(e) => return Some(Err(e)),
        };
        let cached = self.restore_cached(tools, job, old);
        if cached.is_none() {
            if let Some(e) = self.prebuilt_forbids_compile(tools, job, not_served) {
                return Some(Err(e));
            }
        }
        cached
    }

    /// The recorded entry, when the job's outputs and inputs are as it says.
    fn up_to_date(&self, job: &Job, e: &Entry) -> Option<JobDone> {
        let outputs_ok = e.outputs.len() == job.outputs.len()
            && e.outputs
                .iter()
                .zip(&job.outputs)
                .all(|(s, (_, p))| s.path == *p && s.output_unchanged());
        if !outputs_ok {
            return None;
        }
        let mtimes: Vec<u64> = e
            .deps
            .iter()
            .map(|d| self.checks.check(d, &self.hashes))
            .collect::<Option<_>>()?;
        // Touched but unchanged inputs keep their hash, with the new mtime.
        let mut entry = e.clone();
        for (d, m) in entry.deps.iter_mut().zip(mtimes) {
            d.mtime_ns = m;
        }
        Some(JobDone {
            warnings: warnings(&entry.stderr),
            entry,
            outcome: Outcome::UpToDate,
            took: None,
            peak_memory: None,
            threads: 1,
        })
    }

    /// The job's outputs restored from the kernel cache, its inputs read from
    /// the recorded entry or the cache's dependency index. None: a miss.
    fn restore_cached(
        &self,
        tools: &Tools,
        job: &Job,
        old: Option<&Entry>,
    ) -> Option<Result<JobDone, Error>> {
        let tk = &tools.tk;
        let cache = tools.cache.as_ref()?;
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
            warnings: warnings(&entry.stderr),
            entry,
            outcome: Outcome::Cached,
            took: None,
            peak_memory: None,
            threads: 1,
        }))
    }
}
