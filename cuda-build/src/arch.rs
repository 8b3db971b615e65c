//! The GPU architecture model: compute capabilities, `a`/`f` variants, real
//! (SASS) and virtual (PTX) targets, and a parser for every common spelling.
//!
//! OWNER: arch helper. Types below are the shared contract; keep their names
//! and public fields stable (other modules use them).

use std::fmt;

/// A compute capability such as 8.6 or 10.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct ComputeCapability {
    /// Major version (the generation).
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl ComputeCapability {
    /// A compute capability from its parts.
    pub const fn new(major: u32, minor: u32) -> Self {
        ComputeCapability { major, minor }
    }

    /// nvcc's number for it: 8.6 is 86, 10.0 is 100.
    pub const fn number(self) -> u32 {
        self.major * 10 + self.minor
    }
}

impl fmt::Display for ComputeCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Plain, arch-specific (`a`, e.g. sm_90a) or family (`f`, e.g. sm_100f) target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, serde::Serialize, serde::Deserialize)]
pub enum Variant {
    /// No suffix: forward-compatible PTX, SASS for the same major.
    #[default]
    Plain,
    /// `f`: family-specific features; runs on the same family.
    Family,
    /// `a`: arch-specific features (wgmma, setmaxnreg); runs only on that exact CC.
    Specific,
}

/// One architecture: a compute capability plus its variant, e.g. `90a`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Arch {
    /// The compute capability.
    pub cc: ComputeCapability,
    /// The variant suffix.
    pub variant: Variant,
}

/// Whether a target asks for SASS, PTX or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum CodeKind {
    /// Machine code only (`sm_86`, `86-real`).
    Real,
    /// PTX only (`compute_86`, `86-virtual`).
    Virtual,
    /// Both (`86`, `8.6+PTX`, CMake's plain number).
    Both,
}

/// One requested target: an arch and what code to emit for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct ArchTarget {
    /// The architecture.
    pub arch: Arch,
    /// SASS, PTX or both.
    pub kind: CodeKind,
}
