//! From "which archs?" to nvcc flags: where the targets come from (in a
//! documented precedence), and the `-gencode` plan checked against the
//! selected nvcc and the driver.
//!
//! OWNER: arch helper. The types below are the shared contract.

use crate::arch::Arch;

/// Which rule supplied the arch targets.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArchSource {
    /// The build script's own setting (`Build::arch`).
    Explicit,
    /// `CUDA_ARCHS`.
    CudaArchs,
    /// CMake's `CUDAARCHS`.
    CmakeCudaArchs,
    /// `CUDA_COMPUTE_CAP`.
    CudaComputeCap,
    /// `[package.metadata.cuda] arch` in Cargo.toml.
    CargoMetadata,
    /// Detected from the GPUs present (`native`).
    Detected,
    /// The project's opted-in fallback list (nothing else answered).
    Fallback,
}

/// The compile plan: SASS for each distinct real arch, PTX for the highest.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ArchPlan {
    /// Archs to emit machine code (SASS) for, ascending, deduplicated.
    pub sass: Vec<Arch>,
    /// The arch to emit PTX for (normally the highest), so newer GPUs can JIT.
    pub ptx: Option<Arch>,
    /// Where the targets came from.
    pub source: ArchSource,
    /// Things the user should know (e.g. a GPU newer than nvcc: PTX will be JIT-compiled).
    pub warnings: Vec<String>,
}
