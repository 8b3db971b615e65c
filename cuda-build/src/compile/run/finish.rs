//! The finish stage of one build: the jobs' results in; the static library,
//! the typed launchers, the manifest and the generated module out.

use crate::compile::incremental::manifest::{Entry, Manifest};
use crate::compile::output::artifacts::{Artifacts, BuildStats, KernelArtifact, OutputKind};
use crate::compile::output::generated_module::{self, ModuleItem};
use crate::compile::output::write_error::write_error;
use crate::compile::run::context::{JobDone, Outcome, Planned, Run};
use crate::compile::run::job::Job;
use cuda_toolchain::Error;
use std::path::{Path, PathBuf};

/// The jobs' results, gathered in job order.
#[derive(Default)]
struct Gathered {
    stats: BuildStats,
    failures: Vec<Error>,
    kernels: Vec<KernelArtifact>,
    items: Vec<ModuleItem>,
    /// Each kernel's full key (a static library's key is made of them).
    keys: Vec<String>,
    /// Every arch any output holds, in first-seen order.
    archs: Vec<String>,
}

impl Run<'_> {
    /// The finish stage: results in, library, manifest and module out.
    pub(crate) fn finish(&self, p: Planned) -> Result<Artifacts, Error> {
        let Planned {
            tools,
            jobs,
            results,
            mut manifest,
            loaded,
            manifest_path,
            default_plan,
            sources,
            includes,
        } = p;
        let mut got = self.gather(&jobs, results, &mut manifest);
        self.rerun_on_inputs(&jobs, &manifest);
        // Sources no longer built are forgotten (a set: Path equality
        // compares component by component, slow in an unoptimised build).
        let built: std::collections::HashSet<&PathBuf> = jobs.iter().map(|j| &j.source).collect();
        manifest.sources.retain(|src, _| built.contains(src));
        // Keep what succeeded, so fixing one file recompiles only that one.
        if !got.failures.is_empty() {
            let _ = self.save_manifest(&manifest_path, &manifest, &loaded);
            self.print_warnings();
            return Err(combine(got.failures));
        }

        let library = if self.spec.output == OutputKind::StaticLib {
            Some(self.link_library(
                &tools,
                &default_plan,
                &got.kernels,
                &got.keys,
                &mut manifest,
            )?)
        } else {
            None
        };
        self.splice_launchers(
            &sources,
            &includes,
            &mut got.items,
            &mut manifest,
            tools.cache.as_ref(),
        )?;
        self.save_manifest(&manifest_path, &manifest, &loaded)?;
        self.report_prebuilt(&tools, &jobs, &manifest)?;
        self.record_prebuilt(&tools, &jobs, &manifest)?;
        let warnings = self.print_warnings();

        let version = tools.tk.version.as_ref().map(|v| v.to_string());
        let text =
            generated_module::render(version.as_deref().unwrap_or(""), &got.archs, &got.items);
        let module_path = self.write_module(&text)?;
        Ok(Artifacts {
            module: module_path,
            kernels: got.kernels,
            toolkit_version: version,
            plan: Some(default_plan),
            stats: got.stats,
            library,
            warnings,
        })
    }

    /// Each job's result: counted, its warnings queued (unless it was
    /// already up to date: a no-op run stays quiet), its kernel and module
    /// item made and its manifest entry kept; a failure forgets the entry.
    fn gather(
        &self,
        jobs: &[Job],
        results: Vec<Option<Result<JobDone, Error>>>,
        manifest: &mut Manifest,
    ) -> Gathered {
        let mut got = Gathered::default();
        for (job, r) in jobs.iter().zip(results) {
            let r = r.unwrap_or_else(|| {
                Err(Error::new(
                    "internal",
                    format!("`{}` was never compiled", job.display),
                ))
            });
            let done = match r {
                Ok(done) => done,
                Err(e) => {
                    manifest.sources.remove(&job.source);
                    got.failures.push(e);
                    continue;
                }
            };
            match done.outcome {
                Outcome::UpToDate => got.stats.up_to_date += 1,
                Outcome::Cached => got.stats.from_cache += 1,
                Outcome::Compiled => got.stats.compiled += 1,
                Outcome::Prebuilt => got.stats.prebuilt += 1,
            }
            // Warnings were shown when the source compiled (or its
            // cached copy was restored); a no-op run stays quiet.
            if done.outcome != Outcome::UpToDate {
                for w in done.warnings {
                    self.warn(w);
                }
            }
            for a in &done.entry.archs {
                if !got.archs.contains(a) {
                    got.archs.push(a.clone());
                }
            }
            let outputs: Vec<PathBuf> = job.outputs.iter().map(|(_, p)| p.clone()).collect();
            got.kernels.push(KernelArtifact {
                source: job.source.clone(),
                output: outputs.last().cloned().unwrap_or_default(),
                outputs: outputs.clone(),
                kind: self.spec.output,
                entries: done.entry.entries.clone(),
                archs: done.entry.archs.clone(),
                module: job.name.clone(),
            });
            got.keys.push(done.entry.key.clone());
            got.items.push(self.item(job, &done.entry));
            manifest.sources.insert(job.source.clone(), done.entry);
        }
        got
    }

    /// `rerun-if-changed` for every input of every built source. Sources
    /// share most headers: each path is printed once, in job order. A stamp
    /// loaded from the manifest knows its row in the shared input table, so
    /// repeats are caught by a flag per row; only a row's first sighting,
    /// and stamps made in this build, hash the path (as bytes: see
    /// `FileHashes`).
    fn rerun_on_inputs(&self, jobs: &[Job], manifest: &Manifest) {
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

    /// The warnings as `cargo:warning` lines; returns them.
    fn print_warnings(&self) -> Vec<String> {
        let warnings = self.warnings();
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

    /// No toolkit on docs.rs: a module with the right shape and empty images
    /// (the plan stage ends here instead of planning jobs).
    pub(crate) fn docs_rs_module(
        &self,
        sources: &[PathBuf],
        names: &[String],
        why: &Error,
    ) -> Result<Artifacts, Error> {
        self.cargo(&format!("warning=cuda-build: no CUDA toolkit on docs.rs ({}); generating an empty kernel module", why.message));
        if let Err(e) = std::fs::create_dir_all(&self.out_dir) {
            return Err(write_error(&self.out_dir, &e));
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
        let text = generated_module::render("", &[], &items);
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

    /// One source's `pub mod` in the generated module.
    fn item(&self, job: &Job, entry: &Entry) -> ModuleItem {
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
    fn several_failures_are_all_reported() {
        let e = combine(vec![
            Error::new("nvcc-failed", "a failed"),
            Error::new("nvcc-failed", "b failed"),
        ]);
        assert!(e.message.contains("and 1 more source failed"));
        assert!(e.to_string().contains("b failed"));
    }
}
