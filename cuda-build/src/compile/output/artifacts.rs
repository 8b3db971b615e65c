//! What a build returns: the public result types, shared by the builder
//! (`builder.rs`) and the compile engine, which fills them in.

use cuda_toolchain::plan::ArchPlan;
use std::path::PathBuf;

/// What nvcc produces for each source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputKind {
    /// PTX text for the plan's PTX arch (or the highest SASS arch): `<stem>.ptx`.
    Ptx,
    /// One cubin per real arch: `<stem>.sm_80.cubin`, `<stem>.sm_90a.cubin`, ….
    Cubin,
    /// One fatbin with SASS for every target plus PTX for the highest: `<stem>.fatbin`.
    #[default]
    Fatbin,
    /// Host objects linked into `lib<module_name>.a`, with cudart linked statically.
    StaticLib,
}

impl OutputKind {
    /// `ptx`, `cubin`, `fatbin` or `staticlib` (the generated module's `KIND`).
    pub fn as_str(self) -> &'static str {
        match self {
            OutputKind::Ptx => "ptx",
            OutputKind::Cubin => "cubin",
            OutputKind::Fatbin => "fatbin",
            OutputKind::StaticLib => "staticlib",
        }
    }
}

/// One compiled source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelArtifact {
    /// The `.cu` file.
    pub source: PathBuf,
    /// The main output (for cubins: the highest arch's; for a static library: the object).
    pub output: PathBuf,
    /// Every output file (one per arch for cubins).
    pub outputs: Vec<PathBuf>,
    /// What was produced.
    pub kind: OutputKind,
    /// Kernel entry points.
    pub entries: Vec<String>,
    /// Targets in nvcc's words (`sm_80`, `compute_90`).
    pub archs: Vec<String>,
    /// The Rust module name in the generated file.
    pub module: String,
}

/// How the sources were satisfied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BuildStats {
    /// Sources nvcc compiled.
    pub compiled: usize,
    /// Sources copied from the persistent cache.
    pub from_cache: usize,
    /// Sources whose outputs in OUT_DIR were already current.
    pub up_to_date: usize,
    /// Sources taken from kernel images the package ships (`cargo cuda prebuild`).
    pub prebuilt: usize,
}

/// What a build produced.
#[derive(Debug, Clone)]
pub struct Artifacts {
    /// The generated Rust module (`$OUT_DIR/<module_name>.rs`).
    pub module: PathBuf,
    /// One entry per source, in source order.
    pub kernels: Vec<KernelArtifact>,
    /// The toolkit version used (None when nothing was compiled, e.g. on docs.rs).
    pub toolkit_version: Option<String>,
    /// The arch plan used for sources without an override.
    pub plan: Option<ArchPlan>,
    /// Compiled / cached / up-to-date counts.
    pub stats: BuildStats,
    /// The static library, for [`OutputKind::StaticLib`].
    pub library: Option<PathBuf>,
    /// Deduplicated warnings (nvcc's and the plan's), as printed for cargo.
    pub warnings: Vec<String>,
}
