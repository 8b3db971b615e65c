//! The diagnosis engine: from a log (and optionally the probed machine) to
//! causes and fixes, each with a stable code.
//!
//! OWNER: diagnose helper. The types below are the shared contract.

/// The layer of the stack a diagnosis is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    /// Kernel module, libcuda, device nodes.
    Driver,
    /// nvcc and its components.
    Toolkit,
    /// gcc / clang / MSVC under nvcc.
    HostCompiler,
    /// Arch flags, build settings.
    BuildConfig,
    /// Loading and launching kernels.
    Runtime,
    /// Containers, WSL, variables.
    Environment,
}

/// One explained failure.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Diagnosis {
    /// Stable kebab-case code.
    pub code: &'static str,
    /// Short title.
    pub title: String,
    /// The line(s) of input that matched.
    pub evidence: Vec<String>,
    /// The cause in one or two sentences.
    pub cause: String,
    /// Fixes, using what was detected where possible.
    pub fix: Vec<String>,
    /// The layer.
    pub layer: Layer,
    /// 0.0..=1.0; lower when the evidence is ambiguous.
    pub confidence: f32,
    /// What else it could be, and how to tell apart.
    pub alternatives: Vec<String>,
}
