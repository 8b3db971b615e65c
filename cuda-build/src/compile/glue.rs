//! The calls `compile` makes into the other modules (toolkit discovery, the
//! arch plan, GPU detection, diagnosis), in one place.

use crate::env::Env;
use crate::plan::{ArchInputs, ArchPlan};
use crate::toolkit::Toolkit;
use crate::Error;
use std::path::Path;

/// The toolkit the environment selects.
pub(crate) fn find_toolkit(env: &Env) -> Result<Toolkit, Error> {
    crate::toolkit::find(env)
}

/// The arch plan for this toolkit and these inputs (explicit, metadata,
/// fallback); the GPUs are probed only when the plan needs them.
pub(crate) fn plan(env: &Env, tk: &Toolkit, inputs: &ArchInputs) -> Result<ArchPlan, Error> {
    let detect = || crate::probe::probe(env, &crate::probe::ProbeOptions::default()).gpus;
    crate::plan::plan_for_toolkit(env, tk, inputs, &detect)
}

/// `[package.metadata.cuda]` arch and fallback_arch of the package being
/// built; a directory without Cargo.toml (a test, a tool) has none.
pub(crate) fn metadata_arch(
    manifest_dir: &Path,
) -> Result<(Option<String>, Option<String>), Error> {
    if !manifest_dir.join("Cargo.toml").is_file() {
        return Ok((None, None));
    }
    let md = crate::metadata::read(manifest_dir)?;
    Ok((md.arch, md.fallback_arch))
}

/// Rendered explanations for a failed compile's output, most likely first.
pub(crate) fn explain(env: &Env, stderr: &str, tk: &Toolkit) -> Vec<String> {
    // Every installed toolkit, so a fix can name one that would work
    // ("CUDA 12.4 is installed at ...: set CUDA_HOME=...").
    let mut toolkits = vec![tk.clone()];
    if let Ok(found) = crate::toolkit::discover(env, &Default::default()) {
        toolkits.extend(found.candidates.into_iter().filter(|c| c.nvcc != tk.nvcc));
    }
    let ctx = crate::diagnose::Context {
        toolkits,
        selected: Some(0),
        probe: None,
    };
    crate::diagnose::diagnose(stderr, &ctx)
        .iter()
        .map(|d| crate::diagnose::render(d).trim_end().to_string())
        .collect()
}
