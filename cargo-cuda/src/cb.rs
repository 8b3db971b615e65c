//! The one place the CLI calls into `cuda-build`.
//!
//! Everything here is a re-export or a direct call of the contract in
//! docs/ARCHITECTURE.md, so the commands read as plain calls and any change
//! of the contract shows up in this one file.

use std::path::{Path, PathBuf};

#[allow(unused_imports)] // used by tests
pub use cuda_build::arch::{Arch, ComputeCapability, Variant};
pub use cuda_build::compat::{driver_jits_ptx, driver_runs_sass, Status, Verdict};
pub use cuda_build::compile::{check_host_compiler, host_compiler, Build};
pub use cuda_build::diagnose::codes::CodeDoc;
pub use cuda_build::diagnose::{diagnose, render, Context};
pub use cuda_build::env::{Env, Var};
pub use cuda_build::facts::{min_driver_for_toolkit, ptx_isa_for_cuda};
pub use cuda_build::image;
pub use cuda_build::metadata::read as read_metadata;
pub use cuda_build::plan::{
    plan_for_toolkit, ArchInputs, ArchPlan, ArchSource, HandedPlan, NvccArchSupport,
};
pub use cuda_build::probe::{probe, ProbeOptions, ProbeReport, DRIVER_PROBE_ARG};
#[cfg(test)]
pub use cuda_build::toolkit::FoundVia;
pub use cuda_build::toolkit::{discover, DiscoverOptions, Discovery, Problem, Severity, Toolkit};
pub use cuda_build::Error;

/// `Discovery::into_selected` (errors on none, or on a broken selection).
pub fn into_selected(d: Discovery) -> Result<Toolkit, Error> {
    d.into_selected()
}

/// `ArchPlan::gencode_flags`.
pub fn gencode_flags(plan: &ArchPlan) -> Vec<String> {
    plan.gencode_flags()
}

/// `ArchPlan::targets_display`.
pub fn targets_display(plan: &ArchPlan) -> Vec<String> {
    plan.targets_display()
}

/// The `__probe-driver` child's main.
pub fn driver_probe_child_main() -> i32 {
    cuda_build::probe::driver_probe_child_main(&Env::from_process())
}

/// The kernel the doctor compiled: its image and the archs inside.
#[derive(Debug, Clone)]
pub struct CompiledKernel {
    /// The fatbin.
    pub image: PathBuf,
    /// Its targets (`sm_90`, `compute_90`).
    pub archs: Vec<String>,
}

/// Compiles one `.cu` file with `compile::Build`: a real nvcc run (no cache),
/// into an explicit `out_dir`, printing nothing for cargo.
pub fn compile_one(
    env: &Env,
    toolkit: &Toolkit,
    source: &Path,
    arch: &str,
    out_dir: &Path,
) -> Result<CompiledKernel, Error> {
    let artifacts = Build::new()
        .env(env.clone())
        .toolkit(toolkit.clone())
        .file(source)
        .arch(arch)
        .module_name("doctor")
        .out_dir(out_dir)
        .no_cache()
        .emit_cargo(false)
        .try_compile()?;
    let kernel = artifacts.kernels.into_iter().next().ok_or_else(|| {
        Error::new(
            "compile-failed",
            format!("compiling `{}` produced no kernel", source.display()),
        )
    })?;
    Ok(CompiledKernel {
        image: kernel.output,
        archs: kernel.archs,
    })
}

/// `diagnose::codes::all`.
pub fn all_codes() -> &'static [CodeDoc] {
    cuda_build::diagnose::codes::all()
}

/// `diagnose::codes::lookup`.
pub fn lookup_code(code: &str) -> Option<&'static CodeDoc> {
    cuda_build::diagnose::codes::lookup(code)
}
