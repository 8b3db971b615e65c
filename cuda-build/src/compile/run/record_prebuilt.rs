//! Under `cargo cuda prebuild` (`CUDA_BUILD_PREBUILT_RECORD` names a staging
//! folder for this package): the finish stage records every output of the
//! build, however it was settled (compiled, from the cache, up to date, or
//! from what an earlier run of the prebuild staged), as the manifest's
//! records, with the package-local files each was built from.

use crate::compile::incremental::hash::file_sha256;
use crate::compile::incremental::manifest::Manifest;
use crate::compile::prebuilt::manifest::Record;
use crate::compile::prebuilt::staging;
use crate::compile::run::context::{Run, Tools};
use crate::compile::run::job::Job;
use crate::compile::run::use_prebuilt::{role_targets, slash, KEY_PREFIX};
use cuda_toolchain::Error;
use std::path::PathBuf;
use std::time::Duration;

impl Run<'_> {
    /// Records the build's outputs into the staging folder, when there is one.
    pub(crate) fn record_prebuilt(
        &self,
        tools: &Tools,
        jobs: &[Job],
        manifest: &Manifest,
    ) -> Result<(), Error> {
        let Some(staging_dir) = &tools.prebuilt.record_into else {
            return Ok(());
        };
        let host = self.host_compiler_name();
        let nvcc = tools
            .tk
            .version
            .as_ref()
            .map(|v| v.to_string())
            .unwrap_or_default();
        let mut records = Vec::new();
        let mut images: Vec<(String, PathBuf)> = Vec::new();
        for job in jobs {
            let Some(entry) = manifest.sources.get(&job.source) else {
                continue;
            };
            // Settled from what the prebuild staged: the same records again.
            if let (Some(shas), Some(shipped)) =
                (entry.key.strip_prefix(KEY_PREFIX), &tools.prebuilt.shipped)
            {
                for sha in shas.split(',') {
                    if let Some(r) = shipped.records.iter().find(|r| r.sha256 == sha) {
                        records.push(r.clone());
                    }
                }
                continue;
            }
            let id = self.identity(tools, job);
            let Some(source) = id.source.clone() else {
                self.warn(format!(
                    "cuda-build: `{}` is outside the package, so no prebuilt image is recorded for it",
                    job.display
                ));
                continue;
            };
            // Package-local inputs, the source first; not what the build
            // generates (OUT_DIR) or what the prebuild itself stages.
            let inputs: Vec<(String, String)> = entry
                .deps
                .iter()
                .filter(|d| !d.path.starts_with(&self.out_dir) && !d.path.starts_with(staging_dir))
                .filter_map(|d| {
                    let rel = d.path.strip_prefix(&self.base).ok()?;
                    Some((slash(&rel.to_string_lossy()), d.sha.clone()))
                })
                .collect();
            for (role, path) in &job.outputs {
                let Some(sha) = file_sha256(path) else {
                    return Err(Error::new(
                        "write-failed",
                        format!(
                            "cannot read `{}` to record it as a prebuilt image",
                            path.display()
                        ),
                    ));
                };
                let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                let targets = match role.ends_with(".cubin") {
                    true => role_targets(job, role),
                    false => entry.archs.clone(),
                };
                records.push(Record {
                    module: self.spec.module_name.clone(),
                    source: source.clone(),
                    kind: self.spec.output.as_str().to_string(),
                    role: role.clone(),
                    targets,
                    target: id.target.clone(),
                    flags: id.flags.clone(),
                    defines: id.defines.clone(),
                    inputs: inputs.clone(),
                    sha256: sha.clone(),
                    size,
                    file: format!("{}/{sha}", staging::IMAGES),
                    nvcc: nvcc.clone(),
                    host_compiler: host.clone(),
                    entries: entry.entries.clone(),
                });
                images.push((sha, path.clone()));
            }
        }
        staging::add(staging_dir, &records, &images)
    }

    /// The host compiler nvcc used, as `gcc 13.3.0` (the prepared `-ccbin`,
    /// else nvcc's default, `g++` on PATH); None when it cannot be asked.
    fn host_compiler_name(&self) -> Option<String> {
        let path = self.spec.ccbin.clone().or_else(|| self.env.which("g++"))?;
        let timeout = cuda_toolchain::process::timeout_from_env(&self.env, Duration::from_secs(10));
        let hc = cuda_toolchain::compat::identify_host_compiler(&path, timeout).ok()?;
        let kind = format!("{:?}", hc.kind).to_ascii_lowercase();
        Some(format!("{kind} {}", hc.version))
    }
}
