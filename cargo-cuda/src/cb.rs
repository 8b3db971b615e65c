//! The one place the CLI calls into `cuda-build`.
//!
//! Everything here is a direct call of the contract in docs/ARCHITECTURE.md.
//! Parts of cuda-build are still being written; where a contract item has not
//! landed yet, a `pending` stand-in with the contract's name and signature
//! answers "not available" so the CLI keeps compiling. Each is swapped for a
//! re-export as soon as the real item exists.

#[allow(unused_imports)] // used by tests
pub use cuda_build::arch::Arch;
pub use cuda_build::compat::{
    detect_host_compiler, driver_jits_ptx, driver_runs_sass, host_compiler_ok, Status, Verdict,
};
pub use cuda_build::env::{Env, Var};
pub use cuda_build::facts::{min_driver_for_toolkit, ptx_isa_for_cuda};
pub use cuda_build::metadata::read as read_metadata;
pub use cuda_build::plan::{plan_for_toolkit, ArchInputs, ArchPlan, ArchSource};
pub use cuda_build::probe::{probe, ProbeMethod, ProbeOptions, ProbeReport, DRIVER_PROBE_ARG};
pub use cuda_build::toolkit::{discover, DiscoverOptions, Discovery, FoundVia, Problem, Severity, Toolkit};
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

pub use pending::*;

/// Stand-ins for contract items not yet in cuda-build (same names and shapes).
#[allow(dead_code)]
mod pending {
    use super::*;
    use std::path::PathBuf;

    // ---- diagnose ----

    pub use cuda_build::diagnose::{Diagnosis, Layer};

    /// `diagnose::Context`.
    #[derive(Debug, Clone, Default)]
    pub struct Context {
        pub toolkits: Vec<Toolkit>,
        pub selected: Option<usize>,
        pub probe: Option<ProbeReport>,
    }

    /// `diagnose::diagnose`.
    pub fn diagnose(_text: &str, _ctx: &Context) -> Vec<Diagnosis> {
        Vec::new()
    }

    /// `diagnose::codes::CodeDoc`.
    #[derive(Debug, Clone)]
    pub struct CodeDoc {
        pub code: &'static str,
        pub title: &'static str,
        pub layer: Layer,
        pub explanation: &'static str,
    }

    /// `diagnose::codes::all`.
    pub fn all_codes() -> &'static [CodeDoc] {
        &[]
    }

    /// `diagnose::codes::lookup`.
    pub fn lookup_code(code: &str) -> Option<&'static CodeDoc> {
        all_codes().iter().find(|c| c.code == code)
    }

    /// `diagnose::render`.
    pub fn render(d: &Diagnosis) -> String {
        format!("{}: {}\n{}", d.code, d.title, d.cause)
    }

    // ---- compile ----

    /// What `compile_check` needs from `compile::Build` + `Artifacts`.
    #[derive(Debug, Clone)]
    pub struct CompiledKernel {
        pub image: PathBuf,
        pub archs: Vec<String>,
    }

    /// Compiles one `.cu` file with `compile::Build` (explicit out_dir, no cargo output).
    pub fn compile_one(
        _toolkit: &Toolkit,
        _source: &std::path::Path,
        _arch: &str,
        _out_dir: &std::path::Path,
    ) -> Result<CompiledKernel, Error> {
        Err(Error::new("compile-unavailable", "compile::Build is not available in this build of cuda-build yet"))
    }
}
