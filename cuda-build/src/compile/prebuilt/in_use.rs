//! What one build knows about shipped images while it runs: the set it may
//! use (None when the package ships none or the policy is `never`), the
//! policy, the staging folder it records into (under `cargo cuda
//! prebuild`), and why there is no nvcc when it has none.

use crate::compile::prebuilt::shipped::Shipped;
use cuda_toolchain::metadata::prebuilt::Policy;
use cuda_toolchain::Error;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Shipped images, as one build uses them.
#[derive(Debug, Default)]
pub(crate) struct InUse {
    /// The images this build may use.
    pub shipped: Option<Shipped>,
    pub policy: Policy,
    /// Where the policy came from (`CUDA_BUILD_PREBUILT`, the metadata, the default).
    pub policy_from: &'static str,
    /// The staging folder this build records its outputs into.
    pub record_into: Option<PathBuf>,
    /// Why no toolkit was found, when the build runs on shipped images alone.
    pub no_nvcc: Option<Error>,
    /// A manifest that could not be read (the build goes on without it).
    pub load_error: Option<Error>,
    /// Outputs taken from shipped images in this run.
    served: AtomicUsize,
}

impl InUse {
    /// No shipped images (yet), under `policy` from `policy_from`.
    pub(crate) fn new(
        policy: Policy,
        policy_from: &'static str,
        record_into: Option<PathBuf>,
    ) -> InUse {
        InUse {
            policy,
            policy_from,
            record_into,
            ..InUse::default()
        }
    }

    /// Counts one output taken from a shipped image.
    pub(crate) fn note_served(&self, n: usize) {
        self.served.fetch_add(n, Ordering::Relaxed);
    }

    /// Outputs taken from shipped images in this run.
    pub(crate) fn served(&self) -> usize {
        self.served.load(Ordering::Relaxed)
    }
}
