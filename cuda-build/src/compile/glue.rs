//! The calls `compile` makes into the other modules (toolkit discovery, the
//! arch plan, GPU detection, diagnosis), in one place.

use crate::env::{Env, Var};
use crate::plan::{ArchInputs, ArchPlan};
use crate::toolkit::Toolkit;
use crate::Error;
use std::path::{Path, PathBuf};

/// The toolkit the environment selects.
pub(crate) fn find_toolkit(env: &Env) -> Result<Toolkit, Error> {
    fallback_find_toolkit(env)
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
pub(crate) fn explain(stderr: &str, tk: &Toolkit) -> Vec<String> {
    let ctx = crate::diagnose::Context {
        toolkits: vec![tk.clone()],
        selected: Some(0),
        probe: None,
    };
    crate::diagnose::diagnose(stderr, &ctx)
        .iter()
        .map(|d| crate::diagnose::render(d).trim_end().to_string())
        .collect()
}

// Until toolkit::find lands: NVCC, CUDA_HOME/CUDA_PATH, then PATH.
fn fallback_find_toolkit(env: &Env) -> Result<Toolkit, Error> {
    let nvcc = if let Some(n) = env.get_nonempty(Var::Nvcc) {
        PathBuf::from(n)
    } else if let Some(h) = [Var::CudaHome, Var::CudaPath, Var::CudaRoot]
        .iter()
        .find_map(|v| env.get_nonempty(*v))
    {
        PathBuf::from(h).join("bin/nvcc")
    } else if let Some(p) = env.get_os(Var::Path).and_then(|p| {
        std::env::split_paths(p)
            .map(|d| d.join("nvcc"))
            .find(|c| c.is_file())
    }) {
        p
    } else {
        return Err(
            Error::new("nvcc-not-found", "no CUDA toolkit was found").with_help(
                "set CUDA_HOME to the toolkit's root directory (the one holding bin/nvcc)",
            ),
        );
    };
    if !nvcc.is_file() {
        return Err(Error::new(
            "nvcc-not-found",
            format!("nvcc `{}` does not exist", nvcc.display()),
        )
        .with_help("set CUDA_HOME to the toolkit's root directory (the one holding bin/nvcc)"));
    }
    let out = crate::process::run(&nvcc, ["--version"], std::time::Duration::from_secs(30))
        .map_err(|e| Error::new("nvcc-not-runnable", e.to_string()))?;
    let version = out
        .stdout
        .split(", V")
        .nth(1)
        .and_then(|v| semver::Version::parse(v.split_whitespace().next().unwrap_or("")).ok());
    let root = nvcc
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    Ok(Toolkit {
        include_dirs: vec![root.join("include")],
        lib_dirs: vec![root.join("lib64"), root.join("lib")]
            .into_iter()
            .filter(|d| d.is_dir())
            .collect(),
        root,
        nvcc,
        version,
        found_via: crate::toolkit::FoundVia::Explicit,
        problems: Vec::new(),
    })
}
