//! The calls into cuda-toolchain that settle a build's toolkit and arch
//! plan: discovery (honouring the package's toolkit requirement) and the
//! plan, with the GPUs probed only when the plan needs them.

use cuda_toolchain::env::Env;
use cuda_toolchain::metadata::CudaMetadata;
use cuda_toolchain::plan::{ArchInputs, ArchPlan};
use cuda_toolchain::toolkit::Toolkit;
use cuda_toolchain::Error;

/// The toolkit the environment selects (honouring the package's
/// `[package.metadata.cuda] toolkit`), and the other toolkits found, kept so
/// that a failure can name one that would work without searching again.
pub(crate) fn find_toolkit(env: &Env, md: &CudaMetadata) -> Result<(Toolkit, Vec<Toolkit>), Error> {
    let opts = cuda_toolchain::toolkit::DiscoverOptions {
        requirement: md.toolkit.clone(),
        ..Default::default()
    };
    let found = cuda_toolchain::toolkit::discover(env, &opts)?;
    let others = found.candidates.clone();
    let tk = found.into_selected()?;
    let others = others.into_iter().filter(|c| c.nvcc != tk.nvcc).collect();
    Ok((tk, others))
}

/// The arch plan for this toolkit and these inputs (explicit, metadata,
/// fallback); the GPUs are probed only when the plan needs them.
pub(crate) fn arch_plan(env: &Env, tk: &Toolkit, inputs: &ArchInputs) -> Result<ArchPlan, Error> {
    let detect =
        || cuda_toolchain::probe::probe(env, &cuda_toolchain::probe::ProbeOptions::default()).gpus;
    cuda_toolchain::plan::plan_for_toolkit(env, tk, inputs, &detect)
}
