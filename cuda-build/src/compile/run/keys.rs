//! A job's cache keys: the full key (flags plus every input's content), the
//! dependency index's key and the duration record's key. Paths enter keys
//! package- and toolkit-relative, so a second checkout or a moved toolkit
//! shares entries.

use crate::compile::incremental::hash::KeyHasher;
use crate::compile::run::context::Run;
use crate::compile::run::job::Job;
use cuda_toolchain::fsutil;
use cuda_toolchain::toolkit::Toolkit;
use std::path::{Path, PathBuf};

impl Run<'_> {
    /// A path as it enters a cache key: package- and toolkit-relative where
    /// possible, so a second checkout or a moved toolkit shares entries.
    pub(crate) fn key_path(&self, p: &Path, tk: &Toolkit) -> String {
        let p = fsutil::normalize(p);
        if let Ok(rel) = p.strip_prefix(&self.base) {
            format!("$ROOT/{}", rel.display())
        } else if let Ok(rel) = p.strip_prefix(fsutil::normalize(&tk.root)) {
            format!("$CUDA/{}", rel.display())
        } else {
            p.to_string_lossy().into_owned()
        }
    }

    /// The path a [`Run::key_path`] names in this checkout and toolkit.
    pub(crate) fn resolve_key_path(&self, s: &str, tk: &Toolkit) -> PathBuf {
        if let Some(rel) = s.strip_prefix("$ROOT/") {
            self.base.join(rel)
        } else if let Some(rel) = s.strip_prefix("$CUDA/") {
            tk.root.join(rel)
        } else {
            PathBuf::from(s)
        }
    }

    /// The full key: flags plus every input's content.
    pub(crate) fn full_key(&self, tk: &Toolkit, job: &Job, deps: &[PathBuf]) -> String {
        let mut k = KeyHasher::new("cuda-build object v1");
        k.str(&job.flags_key);
        self.hashes.prefetch(deps);
        for d in deps {
            k.str(&self.key_path(d, tk));
            k.str(self.hashes.get(d).as_deref().unwrap_or("missing"));
        }
        k.finish()
    }

    /// The key of the dependency index: flags, the source's place and content.
    pub(crate) fn deps_key(&self, tk: &Toolkit, job: &Job) -> Option<String> {
        let mut k = KeyHasher::new("cuda-build deps v1");
        k.str(&job.flags_key);
        k.str(&self.key_path(&job.source, tk));
        k.str(&self.hashes.get(&job.source)?);
        Some(k.finish())
    }

    /// The key of a job's duration record: its flags and the source's place.
    pub(crate) fn duration_key(&self, tk: &Toolkit, job: &Job) -> String {
        let mut k = KeyHasher::new("cuda-build duration v1");
        k.str(&job.flags_key);
        k.str(&self.key_path(&job.source, tk));
        k.finish()
    }
}
