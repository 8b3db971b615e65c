//! Outputs that would overwrite each other or what they are built from:
//! within one build (two sources with one output name, an output on a
//! source, a header or the module, an output directory among the sources)
//! and across the builds of one script (one module or manifest, one output
//! file). All are refused before anything compiles.

use crate::compile::incremental::manifest::Manifest;
use crate::compile::run::context::{Run, Stage};
use crate::compile::run::job::Job;
use cuda_toolchain::Error;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

impl Run<'_> {
    /// Refuses outputs that collide with each other, or with a source or a
    /// header (an output layout must never overwrite what it compiles).
    pub(crate) fn check_layout(
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
}

/// Two builds writing the same module (or the same manifest, or, as
/// `same_output` says, the same output file) would overwrite each other:
/// both get an error naming both.
pub(crate) fn collisions(
    runs: &[Result<Run, Error>],
    same_output: &dyn Fn(usize, usize) -> bool,
) -> Vec<Option<Error>> {
    // Only called for builds whose run started.
    let describe = |i: usize| {
        let Ok(run) = &runs[i] else {
            return format!("build #{}", i + 1);
        };
        let spec = run.spec;
        let first = spec
            .files
            .first()
            .or(spec.dirs.first())
            .map(|p| p.display().to_string())
            .or_else(|| spec.globs.first().cloned())
            .unwrap_or_default();
        format!(
            "build #{} ({}, module `{}`, sources from `{first}`)",
            i + 1,
            spec.output.as_str(),
            spec.module_name
        )
    };
    let mut errors: Vec<Option<Error>> = vec![None; runs.len()];
    for i in 0..runs.len() {
        for j in i + 1..runs.len() {
            let (Ok(a), Ok(b)) = (&runs[i], &runs[j]) else {
                continue;
            };
            let same_module = a.module_path().is_some() && a.module_path() == b.module_path();
            let same_root = a.out_root == b.out_root;
            if !(same_module || same_root || same_output(i, j)) {
                continue;
            }
            let what = if same_module || same_root {
                format!("the module name `{}`", a.spec.module_name)
            } else {
                "an output file".to_string()
            };
            let e = Error::new(
                "module-name-collision",
                format!(
                    "{} and {} both write {what} in `{}`",
                    describe(i),
                    describe(j),
                    a.out_dir.display()
                ),
            )
            .with_help("give each Build its own Build::module_name (and output_dir)");
            errors[i].get_or_insert(e.clone());
            errors[j].get_or_insert(e);
        }
    }
    errors
}

pub(crate) fn shared_output(a: &Result<Stage, Error>, b: &Result<Stage, Error>) -> bool {
    let (Ok(Stage::Ready(a)), Ok(Stage::Ready(b))) = (a, b) else {
        return false;
    };
    let outs: HashSet<_> = a
        .jobs
        .iter()
        .flat_map(|j| j.outputs.iter().map(|(_, p)| p))
        .collect();
    b.jobs
        .iter()
        .flat_map(|j| j.outputs.iter().map(|(_, p)| p))
        .any(|p| outs.contains(p))
}
