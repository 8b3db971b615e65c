//! From "which archs?" to nvcc flags: where the targets come from, and the
//! `-gencode` plan checked against the selected nvcc.
//!
//! # Where the targets come from
//!
//! The first rule that gives an answer wins ([`resolve_spec`]):
//!
//! 1. the build script's explicit setting (`Build::arch("80;90")`) — [`ArchSource::Explicit`];
//! 2. `CUDA_ARCHS`, this project's variable — [`ArchSource::CudaArchs`];
//! 3. `CMAKE_CUDA_ARCHITECTURES`, as -sys crates forward it to CMake
//!    (`-DCMAKE_CUDA_ARCHITECTURES` outranks `CUDAARCHS` in CMake too) —
//!    [`ArchSource::CmakeCudaArchitectures`];
//! 4. `CUDAARCHS`, CMake's variable — [`ArchSource::CmakeCudaArchs`];
//! 5. `TORCH_CUDA_ARCH_LIST`, PyTorch's (`8.0;8.6+PTX`:
//!    [`crate::interop::torch`]) — [`ArchSource::TorchCudaArchList`];
//! 6. `CUDA_COMPUTE_CAP`, read by candle-style crates — [`ArchSource::CudaComputeCap`];
//! 7. `[package.metadata.cuda] arch` in Cargo.toml — [`ArchSource::CargoMetadata`];
//! 8. detection: the GPUs in this machine (`native`) — [`ArchSource::Detected`];
//! 9. the project's opted-in fallback list (`Build::fallback_arch`,
//!    `[package.metadata.cuda] fallback-arch`) — [`ArchSource::Fallback`], with a warning.
//!
//! Variables set to an empty string are ignored. Another tool's variable
//! (`CMAKE_CUDA_ARCHITECTURES`, `TORCH_CUDA_ARCH_LIST`) whose value does not
//! parse is skipped ([`crate::env::Env::check`] warns about it); one of this
//! project's is an error. When nothing answers (no
//! GPU, a docker build, CI) and there is no fallback, planning fails with
//! `arch-not-detected`, which says how to set one.
//!
//! # The plan
//!
//! [`make_plan`] emits SASS for every distinct real arch and PTX for the
//! highest plain arch that asked for PTX, so newer GPUs can JIT it. `a`
//! (arch-specific) and `f` (family) targets get SASS only: their PTX does not
//! run on later architectures, so it gives no forward compatibility (ask for
//! `compute_90a` explicitly if you want it). Several GPUs give the union.
//! Each target is checked against the nvcc's own `--list-gpu-code` (or the
//! facts tables when that cannot run): an arch the nvcc dropped fails with
//! `arch-dropped-by-nvcc` (naming the last toolkit that has it), one it does
//! not know yet with `arch-too-new-for-nvcc`, and an arch it lists but
//! cuda-build's tables do not (a future `sm_130`) is used with a warning.
//! Detected GPUs are gentler: a GPU newer than the nvcc gets SASS of an older
//! minor of its major when there is one (sm_100 for 10.3), else the highest
//! PTX the nvcc emits, plus a warning that the driver will JIT it; a dropped
//! GPU next to newer ones is skipped with a warning. `all` and `all-major`
//! expand exactly as nvcc's own `-arch=all`/`-arch=all-major` do.
//!
//! ```
//! use cuda_toolchain::arch::Arch;
//! use cuda_toolchain::plan::{ArchPlan, ArchSource};
//! let plan = ArchPlan {
//!     sass: vec![Arch::new(8, 0), Arch::new(9, 0)],
//!     ptx: Some(Arch::new(9, 0)),
//!     source: ArchSource::CudaArchs,
//!     warnings: vec![],
//! };
//! assert_eq!(plan.gencode_flags(), [
//!     "-gencode=arch=compute_80,code=sm_80",
//!     "-gencode=arch=compute_90,code=[sm_90,compute_90]",
//! ]);
//! assert_eq!(plan.targets_display(), ["sm_80", "sm_90", "compute_90"]);
//! ```

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

use crate::arch::{Arch, ArchRequest, ArchSpec, ArchTarget, CodeKind, ComputeCapability, Variant};
use crate::compat::Verdict;
use crate::env::{Env, Var};
use crate::probe::GpuInfo;
use crate::toolkit::Toolkit;
use crate::{facts, Error};

mod handed;
pub use handed::{HandedPlan, PlanInputs, HANDED_PLAN_VERSION};

/// Which rule supplied the arch targets.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArchSource {
    /// The build script's own setting (`Build::arch`).
    Explicit,
    /// `CUDA_ARCHS`.
    CudaArchs,
    /// `CMAKE_CUDA_ARCHITECTURES` in the environment.
    CmakeCudaArchitectures,
    /// CMake's `CUDAARCHS`.
    CmakeCudaArchs,
    /// PyTorch's `TORCH_CUDA_ARCH_LIST`.
    TorchCudaArchList,
    /// `CUDA_COMPUTE_CAP`.
    CudaComputeCap,
    /// `[package.metadata.cuda] arch` in Cargo.toml.
    CargoMetadata,
    /// Detected from the GPUs present (`native`).
    Detected,
    /// The project's opted-in fallback list (nothing else answered).
    Fallback,
}

impl ArchSource {
    /// Where the setting lives, for messages: `CUDA_ARCHS`, `Build::arch`, …
    pub fn describe(&self) -> &'static str {
        match self {
            ArchSource::Explicit => "Build::arch in build.rs",
            ArchSource::CudaArchs => "CUDA_ARCHS",
            ArchSource::CmakeCudaArchitectures => "CMAKE_CUDA_ARCHITECTURES",
            ArchSource::CmakeCudaArchs => "CUDAARCHS",
            ArchSource::TorchCudaArchList => "TORCH_CUDA_ARCH_LIST",
            ArchSource::CudaComputeCap => "CUDA_COMPUTE_CAP",
            ArchSource::CargoMetadata => "[package.metadata.cuda] arch in Cargo.toml",
            ArchSource::Detected => "the GPUs detected on this machine",
            ArchSource::Fallback => "the fallback arch list (no GPU was detected)",
        }
    }

    /// The kebab-case name (as serialized): `cuda-archs`, `detected`, …
    pub fn as_str(&self) -> &'static str {
        match self {
            ArchSource::Explicit => "explicit",
            ArchSource::CudaArchs => "cuda-archs",
            ArchSource::CmakeCudaArchitectures => "cmake-cuda-architectures",
            ArchSource::CmakeCudaArchs => "cmake-cuda-archs",
            ArchSource::TorchCudaArchList => "torch-cuda-arch-list",
            ArchSource::CudaComputeCap => "cuda-compute-cap",
            ArchSource::CargoMetadata => "cargo-metadata",
            ArchSource::Detected => "detected",
            ArchSource::Fallback => "fallback",
        }
    }
}

impl ArchSource {
    /// Every source, in precedence order.
    pub const ALL: [ArchSource; 9] = [
        ArchSource::Explicit,
        ArchSource::CudaArchs,
        ArchSource::CmakeCudaArchitectures,
        ArchSource::CmakeCudaArchs,
        ArchSource::TorchCudaArchList,
        ArchSource::CudaComputeCap,
        ArchSource::CargoMetadata,
        ArchSource::Detected,
        ArchSource::Fallback,
    ];

    /// The source named by [`ArchSource::as_str`].
    pub fn from_name(name: &str) -> Option<ArchSource> {
        ArchSource::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// The environment variable behind this source, if it is one.
    pub fn var(&self) -> Option<Var> {
        ARCH_VARS.iter().find(|(_, s)| s == self).map(|(v, _)| *v)
    }
}

/// The arch variables in precedence order, with the source each one is.
pub const ARCH_VARS: [(Var, ArchSource); 5] = [
    (Var::CudaArchs, ArchSource::CudaArchs),
    (
        Var::CmakeCudaArchitectures,
        ArchSource::CmakeCudaArchitectures,
    ),
    (Var::CmakeCudaArchs, ArchSource::CmakeCudaArchs),
    (Var::TorchCudaArchList, ArchSource::TorchCudaArchList),
    (Var::CudaComputeCap, ArchSource::CudaComputeCap),
];

/// Every variable a plan depends on besides the GPUs: the arch variables,
/// `CUDA_NVCC_FLAGS` (its arch flags are checked against the plan),
/// `CUDA_VISIBLE_DEVICES` and `CARGO_CUDA_SYSROOT` (detection). A plan
/// remembered under these is the plan.
pub const INPUT_VARS: [Var; 8] = [
    Var::CudaArchs,
    Var::CmakeCudaArchitectures,
    Var::CmakeCudaArchs,
    Var::TorchCudaArchList,
    Var::CudaComputeCap,
    Var::CudaNvccFlags,
    Var::CudaVisibleDevices,
    Var::CargoCudaSysroot,
];

/// Whether the variable is another tool's convention: a value that does not
/// parse is skipped with a warning instead of failing the build.
pub fn is_foreign(var: Var) -> bool {
    matches!(var, Var::CmakeCudaArchitectures | Var::TorchCudaArchList)
}

/// Parses an arch variable's value with the syntax of its owner
/// (`TORCH_CUDA_ARCH_LIST` PyTorch's, the others CMake-style).
pub fn parse_arch_var(var: Var, value: &str) -> Result<ArchSpec, Error> {
    match var {
        Var::TorchCudaArchList => crate::interop::torch::parse(value),
        _ => value.parse::<ArchSpec>(),
    }
}

/// The arch variable that decides, with its value: the first set and not
/// blank, skipping another tool's variable whose value does not parse.
pub fn arch_var_in_use(env: &Env) -> Option<(Var, &str)> {
    ARCH_VARS.iter().find_map(|(var, _)| {
        let value = env.get_nonempty(*var)?;
        if is_foreign(*var) && parse_arch_var(*var, value).is_err() {
            return None;
        }
        Some((*var, value))
    })
}

impl fmt::Display for ArchSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The compile plan: SASS for each distinct real arch, PTX for the highest.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

impl ArchPlan {
    /// Will a build with this plan load on a GPU of this compute capability?
    ///
    /// SASS `sm_XY` runs on X.Z with Z >= Y (same major); `sm_XYa` only on X.Y;
    /// `sm_XYf` on the same major from X.Y up. Otherwise PTX `compute_XY` is
    /// JIT-compiled by the driver when X.Y <= the GPU (plain PTX; `a`/`f` PTX as
    /// their SASS). Nothing matching means `no kernel image is available` (209).
    ///
    /// ```
    /// use cuda_toolchain::{arch::{Arch, ComputeCapability}, compat::Status, plan::{ArchPlan, ArchSource}};
    /// let plan = ArchPlan { sass: vec![Arch::new(9, 0)], ptx: None, source: ArchSource::CudaArchs, warnings: vec![] };
    /// assert_eq!(plan.covers_gpu(ComputeCapability::new(12, 0)).status, Status::Fail);
    /// ```
    pub fn covers_gpu(&self, gpu: ComputeCapability) -> Verdict {
        let targets = self.targets_display().join(", ");
        if let Some(s) = self.sass.iter().filter(|a| a.sass_runs_on(gpu)).max() {
            return Verdict::pass(format!(
                "{} SASS runs natively on compute capability {gpu}",
                s.sm_name()
            ));
        }
        let jit = self.ptx.filter(|p| p.ptx_jits_on(gpu));
        if let Some(p) = jit {
            return Verdict::warn(
                format!("no SASS in [{targets}] runs on compute capability {gpu}; the driver JIT-compiles {} at first load (slower start-up; fails with CUDA_ERROR_UNSUPPORTED_PTX_VERSION if the driver is older than the toolkit)", p.compute_name()),
                Some(format!("add {} to CUDA_ARCHS to ship SASS for it", gpu.number())),
            );
        }
        Verdict::fail(
            format!("nothing in [{targets}] runs on compute capability {gpu}: loading fails with `no kernel image is available for execution on the device` (CUDA_ERROR_NO_BINARY_FOR_GPU, 209)"),
            format!("add {} to CUDA_ARCHS (or build for `native` on that machine)", gpu.number()),
        )
    }

    /// nvcc flags, one argument each: `-gencode=arch=compute_80,code=sm_80`,
    /// `-gencode=arch=compute_90,code=[sm_90,compute_90]`; a PTX-only arch
    /// gives `-gencode=arch=compute_90,code=compute_90`.
    pub fn gencode_flags(&self) -> Vec<String> {
        let mut flags: Vec<String> = self
            .sass
            .iter()
            .map(|a| {
                if self.ptx == Some(*a) {
                    format!(
                        "-gencode=arch={},code=[{},{}]",
                        a.compute_name(),
                        a.sm_name(),
                        a.compute_name()
                    )
                } else {
                    format!("-gencode=arch={},code={}", a.compute_name(), a.sm_name())
                }
            })
            .collect();
        if let Some(p) = self.ptx.filter(|p| !self.sass.contains(p)) {
            flags.push(format!(
                "-gencode=arch={},code={}",
                p.compute_name(),
                p.compute_name()
            ));
        }
        flags
    }

    /// The `"arch"` object of `cargo cuda info --json`:
    /// `{"targets": ["sm_80", "sm_90", "compute_90"], "ptx": "compute_90", "found_via": "cuda-archs", "warnings": []}`
    /// (`ptx` is null when no PTX is embedded). `"gencode"` is [`ArchPlan::gencode_flags`].
    pub fn summary(&self) -> PlanSummary {
        PlanSummary {
            targets: self.targets_display(),
            ptx: self.ptx.map(|a| a.compute_name()),
            found_via: self.source.clone(),
            warnings: self.warnings.clone(),
        }
    }

    /// The plan as an arch list (`CUDA_ARCHS` syntax) that plans back to
    /// exactly this plan: SASS-only archs as `NN-real`, the PTX arch as `NN`
    /// (or `NN-virtual` when it has no SASS).
    ///
    /// ```
    /// use cuda_toolchain::arch::Arch;
    /// use cuda_toolchain::plan::{ArchPlan, ArchSource};
    /// let plan = ArchPlan { sass: vec![Arch::new(8, 0), Arch::new(9, 0)], ptx: Some(Arch::new(9, 0)),
    ///     source: ArchSource::CudaArchs, warnings: vec![] };
    /// assert_eq!(plan.to_arch_list(), "80-real;90");
    /// ```
    pub fn to_arch_list(&self) -> String {
        let mut items: Vec<String> = Vec::new();
        for a in &self.sass {
            if self.ptx.as_ref() == Some(a) {
                items.push(a.to_string());
            } else {
                items.push(format!("{a}-real"));
            }
        }
        if let Some(p) = &self.ptx {
            if !self.sass.contains(p) {
                items.push(format!("{p}-virtual"));
            }
        }
        items.join(";")
    }

    /// The targets in nvcc's words: `sm_80`, `sm_90`, `compute_90`.
    pub fn targets_display(&self) -> Vec<String> {
        let mut out: Vec<String> = self.sass.iter().map(Arch::sm_name).collect();
        out.extend(self.ptx.iter().map(Arch::compute_name));
        out
    }
}

/// A plan as reports show it ([`ArchPlan::summary`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PlanSummary {
    /// The targets in nvcc's words: `sm_80`, `sm_90`, `compute_90`.
    pub targets: Vec<String>,
    /// The PTX target (`compute_90`), if any.
    pub ptx: Option<String>,
    /// Where the targets came from (`cuda-archs`, `detected`, …).
    pub found_via: ArchSource,
    /// Things the user should know.
    pub warnings: Vec<String>,
}

/// The arch settings that do not come from environment variables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArchInputs {
    /// The build script's explicit setting (`Build::arch`).
    pub explicit: Option<String>,
    /// `[package.metadata.cuda] arch`.
    pub metadata: Option<String>,
    /// The opted-in fallback list, used only when nothing else answers.
    pub fallback: Option<String>,
}

/// Applies the precedence rules (module doc) and parses the winning setting.
///
/// `Ok(None)` means nothing was set: detect the GPUs. A setting that does not
/// parse is an error naming where it came from; lower rules are not tried.
///
/// ```
/// use cuda_toolchain::env::{Env, Var};
/// use cuda_toolchain::plan::{resolve_spec, ArchInputs, ArchSource};
/// let env = Env::empty().set(Var::CmakeCudaArchs, "86").set(Var::CudaArchs, "90");
/// let (spec, source) = resolve_spec(&env, &ArchInputs::default()).unwrap().unwrap();
/// assert_eq!((spec.to_string().as_str(), source), ("90", ArchSource::CudaArchs));
/// ```
pub fn resolve_spec(
    env: &Env,
    inputs: &ArchInputs,
) -> Result<Option<(ArchSpec, ArchSource)>, Error> {
    let nonempty = |s: &Option<String>| s.clone().filter(|s| !s.trim().is_empty());
    if let Some(value) = nonempty(&inputs.explicit) {
        let source = ArchSource::Explicit;
        return parse_from(&value, &source).map(|spec| Some((spec, source)));
    }
    if let Some((var, value)) = arch_var_in_use(env) {
        let source = ArchSource::ALL
            .into_iter()
            .find(|s| s.var() == Some(var))
            .unwrap_or(ArchSource::CudaArchs);
        return match var {
            Var::TorchCudaArchList => crate::interop::torch::parse(value),
            _ => parse_from(value, &source),
        }
        .map(|spec| Some((spec, source)));
    }
    if let Some(value) = nonempty(&inputs.metadata) {
        let source = ArchSource::CargoMetadata;
        return parse_from(&value, &source).map(|spec| Some((spec, source)));
    }
    // A variable set to something that is not UTF-8 must not be skipped silently.
    for (var, _) in ARCH_VARS.iter().filter(|(v, _)| !is_foreign(*v)) {
        if env.get_os(*var).is_some() && env.get(*var).is_none() {
            return Err(Error::new(
                "arch-invalid",
                format!(
                    "{} is not valid UTF-8, so it cannot be an arch list",
                    var.name()
                ),
            )
            .with_help(format!("set {} to a list such as `80;90`", var.name())));
        }
    }
    Ok(None)
}

fn parse_from(value: &str, source: &ArchSource) -> Result<ArchSpec, Error> {
    value.parse::<ArchSpec>().map_err(|mut e| {
        let (what, example) = match source {
            ArchSource::Explicit => ("Build::arch".to_string(), "Build::new().arch(\"80;90\")"),
            ArchSource::CargoMetadata => (
                "[package.metadata.cuda] arch in Cargo.toml".to_string(),
                "arch = \"80;90\"",
            ),
            ArchSource::Fallback => (
                "the fallback arch list".to_string(),
                "Build::new().fallback_arch(\"80;90\")",
            ),
            other => (other.describe().to_string(), "CUDA_ARCHS=\"80;90\""),
        };
        e.message = format!("{what} is {}: {}", crate::env::show_value(value), e.message);
        e.help.insert(0, format!("for example {example}"));
        e
    })
}

/// The archs the selected nvcc can target.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct NvccArchSupport {
    /// Real archs (`--list-gpu-code`), ascending.
    pub real: Vec<Arch>,
    /// Virtual archs (`--list-gpu-arch`), ascending.
    pub virtual_archs: Vec<Arch>,
    /// Whether the lists came from nvcc itself (else from the facts tables).
    pub from_nvcc: bool,
    /// The toolkit version these lists belong to, when known.
    pub version: Option<(u32, u32)>,
}

/// The highest plain (not `a`/`f`) arch in `list` that `keep` accepts.
fn highest_plain(list: &[Arch], keep: impl Fn(&Arch) -> bool) -> Option<Arch> {
    list.iter()
        .filter(|a| a.variant == Variant::Plain && keep(a))
        .max()
        .copied()
}

impl NvccArchSupport {
    /// Asks nvcc for `--list-gpu-arch` and `--list-gpu-code` (under
    /// `CUDA_BUILD_TIMEOUT`, default 30 s); when that fails, answers from
    /// [`facts::archs_for_toolkit`] for `version`; when that is unknown too,
    /// answers with empty lists (nothing can be validated).
    pub fn query(nvcc: &Path, version: Option<&semver::Version>, env: &Env) -> NvccArchSupport {
        let version = version.map(|v| (v.major as u32, v.minor as u32));
        // Cached per nvcc binary (path, size, mtime), so a build asks nvcc once.
        let list = |flag: &str| -> Option<Vec<Arch>> {
            let out = crate::toolkit::version::cached_output(env, nvcc, &[flag]).ok()?;
            let archs = parse_nvcc_list(&out);
            (!archs.is_empty()).then_some(archs)
        };
        if let (Some(real), Some(virtual_archs)) =
            (list("--list-gpu-code"), list("--list-gpu-arch"))
        {
            return NvccArchSupport {
                real,
                virtual_archs,
                from_nvcc: true,
                version,
            };
        }
        match version {
            Some(v) => Self::from_facts(v),
            None => NvccArchSupport::default(),
        }
    }

    /// The lists the facts tables give for a toolkit release.
    pub fn from_facts(version: (u32, u32)) -> NvccArchSupport {
        let archs: Vec<Arch> = facts::archs_for_toolkit(version)
            .into_iter()
            .map(ComputeCapability::arch)
            .collect();
        NvccArchSupport {
            real: archs.clone(),
            virtual_archs: archs,
            from_nvcc: false,
            version: Some(version),
        }
    }

    /// Parses nvcc's list output (one `sm_XX`/`compute_XX` per line).
    pub fn from_lists(
        real: &str,
        virtual_archs: &str,
        version: Option<(u32, u32)>,
    ) -> NvccArchSupport {
        NvccArchSupport {
            real: parse_nvcc_list(real),
            virtual_archs: parse_nvcc_list(virtual_archs),
            from_nvcc: true,
            version,
        }
    }

    /// Whether anything is known (else planning cannot validate).
    pub fn is_known(&self) -> bool {
        !self.real.is_empty()
    }

    fn lists_real(&self, cc: ComputeCapability) -> bool {
        self.real.iter().any(|a| a.cc == cc)
    }

    fn lists_virtual(&self, cc: ComputeCapability) -> bool {
        self.virtual_archs.iter().any(|a| a.cc == cc)
    }

    fn highest_real(&self) -> Option<Arch> {
        highest_plain(&self.real, |_| true)
    }

    fn highest_real_same_major_upto(&self, cc: ComputeCapability) -> Option<Arch> {
        highest_plain(&self.real, |a| {
            a.sass_runs_on(cc) && (!facts::is_tegra(a.cc) || facts::is_tegra(cc))
        })
    }

    fn highest_virtual_upto(&self, cc: ComputeCapability) -> Option<Arch> {
        highest_plain(&self.virtual_archs, |a| a.ptx_jits_on(cc))
    }

    fn describe(&self) -> String {
        let what = if self.from_nvcc {
            "nvcc --list-gpu-code"
        } else {
            "the facts table"
        };
        let list: Vec<String> = self.real.iter().map(Arch::sm_name).collect();
        format!("{what}: {}", list.join(" "))
    }
}

fn parse_nvcc_list(text: &str) -> Vec<Arch> {
    let set: BTreeSet<Arch> = text
        .lines()
        .filter_map(|l| l.trim().parse::<Arch>().ok())
        .collect();
    set.into_iter().collect()
}

fn nvcc_name(version: Option<(u32, u32)>) -> String {
    match version {
        Some((a, b)) => format!("nvcc {a}.{b}"),
        None => "this nvcc".to_string(),
    }
}

/// A target and whether it came from a detected GPU (those may be newer than nvcc).
struct Wanted {
    target: ArchTarget,
    gpu: Option<String>,
}

/// Turns a spec into the plan, validated against `support`.
///
/// `gpus` answers `native`; `toolkit` (when known) names the release in
/// messages and checks `a`/`f` variants against the facts tables.
pub fn make_plan(
    spec: &ArchSpec,
    source: ArchSource,
    gpus: &[GpuInfo],
    support: &NvccArchSupport,
    toolkit: Option<&semver::Version>,
) -> Result<ArchPlan, Error> {
    let version = toolkit
        .map(|v| (v.major as u32, v.minor as u32))
        .or(support.version);
    let nvcc = nvcc_name(version);
    let mut warnings = Vec::new();
    let mut wanted: Vec<Wanted> = Vec::new();
    for req in &spec.0 {
        match req {
            ArchRequest::Target(t) => wanted.push(Wanted {
                target: *t,
                gpu: None,
            }),
            ArchRequest::Native => {
                if gpus.is_empty() {
                    return Err(not_detected(Some(&source)));
                }
                for g in gpus {
                    wanted.push(Wanted {
                        target: ArchTarget {
                            arch: g.compute_capability.arch(),
                            kind: CodeKind::Both,
                        },
                        gpu: Some(format!(
                            "GPU {} ({}, compute capability {})",
                            g.index, g.name, g.compute_capability
                        )),
                    });
                }
            }
            ArchRequest::All | ArchRequest::AllMajor => {
                if !support.is_known() {
                    return Err(Error::new(
                        "arch-invalid",
                        format!("`{req}` (from {}) needs nvcc's arch list, and {nvcc} could not be asked for it", source.describe()),
                    )
                    .with_help("list the archs instead, e.g. CUDA_ARCHS=\"75;80;86;89;90\""));
                }
                // As nvcc's own `-arch=all`/`all-major`: SASS for every arch
                // (or the lowest of each major), PTX for the lowest arch of
                // the highest major (compute_120 with CUDA 13.0).
                let plain: Vec<Arch> = support
                    .real
                    .iter()
                    .copied()
                    .filter(|a| a.variant == Variant::Plain)
                    .collect();
                let lowest_of_major = |a: &Arch| {
                    !plain
                        .iter()
                        .any(|b| b.cc.major == a.cc.major && b.cc < a.cc)
                };
                let ptx_arch = plain.iter().copied().filter(|a| lowest_of_major(a)).max();
                let major_only = matches!(req, ArchRequest::AllMajor);
                for a in plain.iter().filter(|a| !major_only || lowest_of_major(a)) {
                    let kind = if Some(*a) == ptx_arch {
                        CodeKind::Both
                    } else {
                        CodeKind::Real
                    };
                    wanted.push(Wanted {
                        target: ArchTarget { arch: *a, kind },
                        gpu: None,
                    });
                }
            }
        }
    }

    let mut sass = BTreeSet::new();
    let mut ptx_candidates = BTreeSet::new();
    let mut skipped: Option<Error> = None;
    for w in &wanted {
        let t = w.target;
        let checked = match check_target(t, w.gpu.as_deref(), support, version, &nvcc, &source) {
            // A machine with one old GPU among newer ones still builds for
            // the others (checked below: if nothing is left, this is the error).
            Err(e) if w.gpu.is_some() && e.code == "arch-dropped-by-nvcc" => {
                warnings.push(format!("{}; kernels will not run on that GPU", e.message));
                skipped.get_or_insert(e);
                continue;
            }
            other => other?,
        };
        match checked {
            Check::Ok => {}
            Check::OkWarn(msg) => warnings.push(msg),
            Check::GpuTooNew(msg) => {
                // SASS for an older minor of the same major runs on it (sm_100
                // on 10.3); otherwise ship the highest PTX this nvcc emits.
                if let Some(s) = support.highest_real_same_major_upto(t.arch.cc) {
                    sass.insert(s);
                    ptx_candidates.insert(s);
                    warnings.push(format!(
                        "{msg}; building {}, whose SASS runs on compute capability {} (same major). To use that GPU's own features, install a CUDA toolkit whose `nvcc --list-gpu-code` lists {}",
                        s.sm_name(),
                        t.arch.cc,
                        t.arch.sm_name()
                    ));
                    continue;
                }
                match support.highest_virtual_upto(t.arch.cc) {
                    Some(p) => {
                        ptx_candidates.insert(p);
                        warnings.push(format!(
                            "{msg}; building PTX for {} instead, which the driver JIT-compiles at first load (slower start-up; the driver must support this toolkit's PTX ISA). To avoid the JIT, install a CUDA toolkit whose `nvcc --list-gpu-code` lists {}",
                            p.compute_name(),
                            t.arch.sm_name()
                        ));
                    }
                    None => return Err(too_new(t.arch, support, version, &nvcc, &source)),
                }
                continue;
            }
        }
        if t.kind.wants_sass() {
            sass.insert(t.arch);
        }
        let ptx_ok = match t.kind {
            CodeKind::Virtual => true,
            CodeKind::Both => t.arch.is_forward_compatible(),
            CodeKind::Real => false,
        };
        if ptx_ok {
            ptx_candidates.insert(t.arch);
        }
    }
    if sass.is_empty() && ptx_candidates.is_empty() {
        if let Some(e) = skipped {
            return Err(e);
        }
        return Err(Error::new(
            "arch-invalid",
            format!("the arch list from {} selects no target", source.describe()),
        ));
    }
    let mut seen = BTreeSet::new();
    warnings.retain(|w| seen.insert(w.clone()));
    let ptx = ptx_candidates
        .into_iter()
        .max_by_key(|a| (a.cc, std::cmp::Reverse(a.variant)));
    // One PTX is embedded; say so when the user asked for more by name.
    let dropped: BTreeSet<String> = wanted
        .iter()
        .filter(|w| w.target.kind == CodeKind::Virtual && Some(w.target.arch) != ptx)
        .map(|w| w.target.arch.compute_name())
        .collect();
    if let (Some(p), false) = (ptx, dropped.is_empty()) {
        warnings.push(format!(
            "PTX is embedded for the highest target only ({}); {} left out: the PTX of {} also JIT-compiles for those GPUs' successors",
            p.compute_name(),
            dropped.into_iter().collect::<Vec<_>>().join(", "),
            p.compute_name()
        ));
    }
    Ok(ArchPlan {
        sass: sass.into_iter().collect(),
        ptx,
        source,
        warnings,
    })
}

enum Check {
    Ok,
    OkWarn(String),
    GpuTooNew(String),
}

fn check_target(
    t: ArchTarget,
    gpu: Option<&str>,
    support: &NvccArchSupport,
    version: Option<(u32, u32)>,
    nvcc: &str,
    source: &ArchSource,
) -> Result<Check, Error> {
    let arch = t.arch;
    if !support.is_known() {
        return Ok(Check::OkWarn(format!(
            "the arch list is not checked against {nvcc}: its `--list-gpu-code` could not be read and its version is unknown"
        )));
    }
    let listed = match t.kind {
        CodeKind::Virtual => support.lists_virtual(arch.cc),
        _ => support.lists_real(arch.cc),
    };
    let span = facts::arch_span(arch.cc);
    if listed {
        // nvcc prints plain archs only; the `a`/`f` variants come from the facts.
        if arch.variant != Variant::Plain {
            if let (Some(v), Some(_)) = (version, span) {
                if !facts::toolkit_supports(v, arch) {
                    let first = facts::arch_variant_first_last(arch).map(|(f, _)| f);
                    let e = match first {
                        Some((a, b)) => Error::new(
                            "arch-too-new-for-nvcc",
                            format!(
                                "{} (from {}) is not supported by {nvcc}",
                                arch.sm_name(),
                                source.describe()
                            ),
                        )
                        .with_help(format!("{} needs CUDA {a}.{b} or newer: upgrade the toolkit, or use the plain {}", arch.sm_name(), arch.cc.arch().sm_name())),
                        // No toolkit has it: a spelling that does not exist, not a toolkit too old.
                        None => Error::new(
                            "arch-invalid",
                            format!(
                                "{} (from {}) is not a GPU architecture: {} has no `{}` variant",
                                arch.sm_name(),
                                source.describe(),
                                arch.cc.arch().sm_name(),
                                arch.variant.suffix()
                            ),
                        )
                        .with_help(format!("use {}", arch.cc.arch().sm_name())),
                    };
                    return Err(e);
                }
            }
        }
        if span.is_none() {
            return Ok(Check::OkWarn(format!(
                "{} is not in cuda-build's tables (newer than this cuda-build); {nvcc} lists it, so it is used as is",
                arch.sm_name()
            )));
        }
        return Ok(Check::Ok);
    }
    // Not listed: dropped, renamed, too new, or never existed.
    if let (Some(s), Some(v)) = (span, version) {
        if let Some(last) = s.last.filter(|l| *l < v) {
            let mut e = Error::new(
                "arch-dropped-by-nvcc",
                format!(
                    "{}{} (from {}) is not supported by {nvcc}: CUDA {}.{} is the last toolkit that supports it",
                    arch.sm_name(),
                    gpu.map(|g| format!(" for {g}")).unwrap_or_default(),
                    source.describe(),
                    last.0,
                    last.1
                ),
            );
            if arch.cc == ComputeCapability::new(10, 1) {
                e = e.with_help("CUDA 13.0 renamed sm_101 (Jetson Thor) to sm_110: use 110");
            }
            e = e
                .with_help(format!(
                    "build with CUDA {}.{} (its minimum driver is {})",
                    last.0,
                    last.1,
                    facts::TOOLKIT_MIN_DRIVER
                        .iter()
                        .find(|(k, _)| *k == last)
                        .map(|(_, d)| *d)
                        .unwrap_or("in its release notes")
                ))
                .with_help(format!(
                    "or drop {} from the arch list ({})",
                    arch,
                    support.describe()
                ));
            return Err(e);
        }
    }
    let newer_than_all = support.highest_real().is_some_and(|h| arch.cc > h.cc);
    let too_new_by_facts = matches!((span, version), (Some(s), Some(v)) if s.first > v);
    if newer_than_all || too_new_by_facts {
        if let Some(g) = gpu {
            return Ok(Check::GpuTooNew(format!(
                "{g} is newer than {nvcc} supports"
            )));
        }
        return Err(too_new(arch, support, version, nvcc, source));
    }
    Err(Error::new(
        "arch-invalid",
        format!(
            "{} (from {}) is not an architecture {nvcc} supports",
            arch.sm_name(),
            source.describe()
        ),
    )
    .with_help(format!("choose from {}", support.describe())))
}

fn too_new(
    arch: Arch,
    support: &NvccArchSupport,
    version: Option<(u32, u32)>,
    nvcc: &str,
    source: &ArchSource,
) -> Error {
    let first = facts::arch_variant_first_last(arch).map(|(f, _)| f);
    let mut e = Error::new(
        "arch-too-new-for-nvcc",
        format!(
            "{} (from {}) is newer than {nvcc} supports",
            arch.sm_name(),
            source.describe()
        ),
    );
    e = match (first, version) {
        (Some((a, b)), _) => e.with_help(format!(
            "{} needs CUDA {a}.{b} or newer: install it and point CUDA_HOME (or NVCC) at it",
            arch.sm_name()
        )),
        _ => e.with_help(format!(
            "install a CUDA toolkit whose `nvcc --list-gpu-code` lists {}",
            arch.sm_name()
        )),
    };
    if let Some(h) = support.highest_real() {
        e = e.with_help(format!("or build PTX for {} (e.g. CUDA_ARCHS={}), which the driver JIT-compiles for newer GPUs", h.compute_name(), h.compute_name()));
    }
    e
}

/// The `arch-not-detected` error: nothing set the archs and no GPU answered.
fn not_detected(source: Option<&ArchSource>) -> Error {
    let message = match source {
        Some(s) => format!("`native` was requested by {}, but no GPU was detected", s.describe()),
        None => "no GPU architecture is set and no GPU was detected (no GPU, a docker build, or CI), so cuda-build cannot choose what to compile for".to_string(),
    };
    Error::new("arch-not-detected", message)
        .with_help("set CUDA_ARCHS to the GPUs you run on, e.g. `CUDA_ARCHS=90` (H100/H200) or `CUDA_ARCHS=\"80;86;89;90\"`")
        .with_help("or add `arch = \"90\"` under `[package.metadata.cuda]` in Cargo.toml")
        .with_help("or call `.arch(\"90\")` on the cuda_build::Build in build.rs, or `.fallback_arch(\"80;90\")` to use a list only when no GPU is found")
        .with_help("run `cargo cuda doctor` to see why detection found no GPU")
}

/// The one call most build scripts need: precedence, detection, fallback,
/// the nvcc's own arch list, and the plan.
///
/// `detect` is called only when the GPUs are needed (nothing set, or
/// `native`), so a build with `CUDA_ARCHS` set never touches the driver.
pub fn plan_for_toolkit(
    env: &Env,
    toolkit: &Toolkit,
    inputs: &ArchInputs,
    detect: &dyn Fn() -> Vec<GpuInfo>,
) -> Result<ArchPlan, Error> {
    // `cargo cuda` already planned from these very inputs: use its plan.
    if let Some(plan) = HandedPlan::take(env, toolkit, inputs) {
        return Ok(plan);
    }
    let mut plan = plan_without_handoff(env, toolkit, inputs, detect)?;
    // An arch variable set to an empty string is ignored: say so.
    for (var, _) in ARCH_VARS {
        if env.get(var).is_some_and(|v| v.trim().is_empty()) {
            plan.warnings.push(format!(
                "{} is set but empty, so it is ignored; unset it, or set it to an arch list such as `80;90`",
                var.name()
            ));
        }
    }
    let planned: Vec<_> = plan.sass.iter().chain(plan.ptx.iter()).copied().collect();
    plan.warnings
        .extend(crate::interop::nvcc_flags::contradiction(
            env,
            &planned,
            plan.source.describe(),
            &plan.targets_display(),
        ));
    Ok(plan)
}

fn plan_without_handoff(
    env: &Env,
    toolkit: &Toolkit,
    inputs: &ArchInputs,
    detect: &dyn Fn() -> Vec<GpuInfo>,
) -> Result<ArchPlan, Error> {
    let support = || NvccArchSupport::query(&toolkit.nvcc, toolkit.version.as_ref(), env);
    let version = toolkit.version.as_ref();
    let fallback = || -> Result<Option<ArchSpec>, Error> {
        match inputs.fallback.as_deref().filter(|f| !f.trim().is_empty()) {
            Some(f) => parse_from(f, &ArchSource::Fallback).map(Some),
            None => Ok(None),
        }
    };
    let with_fallback = |why: String| -> Result<ArchPlan, Error> {
        let Some(spec) = fallback()? else {
            return Err(not_detected(None));
        };
        if spec.0.contains(&ArchRequest::Native) {
            return Err(Error::new("arch-invalid", "the fallback arch list may not contain `native`: it is used when no GPU was detected")
                .with_help("list archs instead, e.g. fallback_arch(\"80;90\")"));
        }
        let mut plan = make_plan(&spec, ArchSource::Fallback, &[], &support(), version)?;
        plan.warnings.insert(
            0,
            format!(
                "{why}; using the fallback arch list `{spec}` ({})",
                plan.targets_display().join(", ")
            ),
        );
        Ok(plan)
    };
    match resolve_spec(env, inputs)? {
        Some((spec, source)) => {
            let gpus = if spec.0.contains(&ArchRequest::Native) {
                detect()
            } else {
                Vec::new()
            };
            if spec.0.contains(&ArchRequest::Native) && gpus.is_empty() {
                if inputs.fallback.is_some() {
                    return with_fallback(format!(
                        "`native` was requested by {} but no GPU was detected",
                        source.describe()
                    ));
                }
                return Err(not_detected(Some(&source)));
            }
            make_plan(&spec, source, &gpus, &support(), version)
        }
        None => {
            let gpus = detect();
            if gpus.is_empty() {
                return with_fallback("no GPU architecture is set and no GPU was detected".into());
            }
            make_plan(
                &ArchSpec(vec![ArchRequest::Native]),
                ArchSource::Detected,
                &gpus,
                &support(),
                version,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Arch {
        s.parse().unwrap()
    }

    fn cu13() -> NvccArchSupport {
        // The facts table for 13.0; tests/arch.rs checks it equals nvcc 13.0's own lists.
        NvccArchSupport::from_facts((13, 0))
    }

    fn v(s: &str) -> semver::Version {
        semver::Version::parse(s).unwrap()
    }

    fn gpu(index: u32, name: &str, major: u32, minor: u32) -> GpuInfo {
        GpuInfo {
            index,
            name: name.into(),
            compute_capability: ComputeCapability::new(major, minor),
            total_memory: None,
        }
    }

    fn plan(spec: &str) -> Result<ArchPlan, Error> {
        make_plan(
            &spec.parse().unwrap(),
            ArchSource::CudaArchs,
            &[],
            &cu13(),
            Some(&v("13.0.88")),
        )
    }

    /// `90f` and `sm_80a` exist in no toolkit: the spelling is wrong, and
    /// "upgrade nvcc" would be bad advice.
    #[test]
    fn variants_that_do_not_exist_are_invalid_not_too_new() {
        for spec in ["90f", "sm_80a"] {
            let e = plan(spec).unwrap_err();
            assert_eq!(e.code, "arch-invalid", "{spec}: {e}");
            assert!(e.message.contains("is not a GPU architecture"), "{e}");
            assert!(!e.to_string().contains("upgrade"), "{e}");
        }
        assert_eq!(plan("90a").unwrap().sass[0].sm_name(), "sm_90a");
    }

    /// `cargo cuda` hands its plan over in CARGO_CUDA_PLAN; a build script
    /// uses it only when it was made from the same inputs.
    #[test]
    fn a_handed_plan_is_used_only_for_the_same_inputs() {
        let tk = fake_toolkit();
        let env = Env::empty().set(Var::CudaArchs, "80;90");
        let inputs = ArchInputs::default();
        // A plan no rule would make from these inputs, to see which one wins.
        let mut handed = plan("75").unwrap();
        handed.source = ArchSource::CudaArchs;
        let value = HandedPlan::new(&env, &tk, &inputs, &handed).encode();
        let with = env.clone().set(Var::CargoCudaPlan, &value);
        let got = plan_for_toolkit(&with, &tk, &inputs, &Vec::new).unwrap();
        assert_eq!(got, handed, "same inputs: the handed plan");
        let other = with.clone().set(Var::CudaArchs, "86");
        let got = plan_for_toolkit(&other, &tk, &inputs, &Vec::new).unwrap();
        assert_eq!(got.to_arch_list(), "86", "other inputs: planned here");
        let explicit = ArchInputs {
            explicit: Some("90".into()),
            ..ArchInputs::default()
        };
        let got = plan_for_toolkit(&with, &tk, &explicit, &Vec::new).unwrap();
        assert_eq!(got.source, ArchSource::Explicit);
        for garbage in [
            "",
            "{",
            "{\"version\":99}",
            &value.replace("\"version\":1", "\"version\":2"),
        ] {
            let env = env.clone().set(Var::CargoCudaPlan, garbage);
            let got = plan_for_toolkit(&env, &tk, &inputs, &Vec::new).unwrap();
            assert_eq!(got.to_arch_list(), "80-real;90", "{garbage}");
        }
    }

    /// `10s`, `-1`, unicode and 10 kB of text: an error naming the variable,
    /// short enough to read.
    #[test]
    fn bad_arch_variables_are_named_and_kept_short() {
        let long = "x".repeat(10_000);
        for var in [Var::CudaArchs, Var::CmakeCudaArchs, Var::CudaComputeCap] {
            for value in ["10s", "-1", "８０", "sm_", long.as_str()] {
                let env = Env::empty().set(var, value);
                let e = resolve_spec(&env, &ArchInputs::default()).unwrap_err();
                assert_eq!(e.code, "arch-invalid");
                assert!(e.message.starts_with(var.name()), "{e}");
                assert!(e.message.len() < 400, "{} bytes: {e}", e.message.len());
            }
        }
    }

    #[test]
    fn an_empty_arch_variable_is_ignored_with_a_warning() {
        let tk = fake_toolkit();
        let env = Env::empty()
            .set(Var::CudaArchs, " ")
            .set(Var::CudaComputeCap, "86");
        let p = plan_for_toolkit(&env, &tk, &ArchInputs::default(), &Vec::new).unwrap();
        assert_eq!(p.source, ArchSource::CudaComputeCap);
        assert!(
            p.warnings
                .iter()
                .any(|w| w.contains("CUDA_ARCHS is set but empty")),
            "{:?}",
            p.warnings
        );
    }

    #[test]
    fn sass_for_each_ptx_for_highest() {
        let p = plan("90;80;86;80;sm_90").unwrap();
        assert_eq!(
            p.targets_display(),
            ["sm_80", "sm_86", "sm_90", "compute_90"]
        );
        assert_eq!(
            p.gencode_flags(),
            [
                "-gencode=arch=compute_80,code=sm_80",
                "-gencode=arch=compute_86,code=sm_86",
                "-gencode=arch=compute_90,code=[sm_90,compute_90]",
            ]
        );
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    }

    #[test]
    fn info_json_shape() {
        let p = plan("80;90").unwrap();
        assert_eq!(
            serde_json::to_value(p.summary()).unwrap(),
            serde_json::json!({"targets": ["sm_80", "sm_90", "compute_90"], "ptx": "compute_90", "found_via": "cuda-archs", "warnings": []})
        );
        assert_eq!(
            serde_json::to_value(plan("90a").unwrap().summary()).unwrap()["ptx"],
            serde_json::Value::Null
        );
    }

    proptest::proptest! {
        #[test]
        fn plans_are_sorted_deduplicated_and_valid(
            items in proptest::collection::vec((50u32..=140, proptest::sample::select(vec!["", "a", "f"]), proptest::sample::select(vec!["", "-real", "-virtual"])), 1..6)
        ) {
            let text: Vec<String> = items.iter().map(|(n, v, k)| format!("{n}{v}{k}")).collect();
            let spec: ArchSpec = text.join(";").parse().unwrap();
            let support = cu13();
            match make_plan(&spec, ArchSource::CudaArchs, &[], &support, Some(&v("13.0.88"))) {
                Ok(p) => {
                    proptest::prop_assert!(p.sass.windows(2).all(|w| w[0] < w[1]));
                    for a in p.sass.iter().chain(p.ptx.iter()) {
                        proptest::prop_assert!(facts::toolkit_supports((13, 0), *a), "{a}");
                    }
                    proptest::prop_assert_eq!(p.gencode_flags().len(), p.sass.len() + usize::from(p.ptx.is_some_and(|x| !p.sass.contains(&x))));
                }
                Err(e) => proptest::prop_assert!(e.code.starts_with("arch-"), "{}", e),
            }
        }
    }

    #[test]
    fn kinds() {
        let p = plan("compute_80;compute_90;86").unwrap();
        assert_eq!(p.targets_display(), ["sm_86", "compute_90"]);
        assert!(
            p.warnings[0].contains("compute_80 left out"),
            "{:?}",
            p.warnings
        );
        let p = plan("sm_80;compute_90").unwrap();
        assert_eq!(
            p.gencode_flags(),
            [
                "-gencode=arch=compute_80,code=sm_80",
                "-gencode=arch=compute_90,code=compute_90"
            ]
        );
        let p = plan("80-real;86-real").unwrap();
        assert_eq!(p.ptx, None);
        let p = plan("80;90-real").unwrap();
        assert_eq!(p.targets_display(), ["sm_80", "sm_90", "compute_80"]);
    }

    #[test]
    fn specific_variants_get_sass_only() {
        let p = plan("90a").unwrap();
        assert_eq!(p.gencode_flags(), ["-gencode=arch=compute_90a,code=sm_90a"]);
        let p = plan("80;90a;100f").unwrap();
        assert_eq!(
            p.targets_display(),
            ["sm_80", "sm_90a", "sm_100f", "compute_80"]
        );
        let p = plan("90;90a").unwrap();
        assert_eq!(p.targets_display(), ["sm_90", "sm_90a", "compute_90"]);
        // Asking for the `a` PTX explicitly is honoured.
        let p = plan("compute_90a").unwrap();
        assert_eq!(
            p.gencode_flags(),
            ["-gencode=arch=compute_90a,code=compute_90a"]
        );
    }

    #[test]
    fn union_of_gpus() {
        let gpus = [
            gpu(0, "NVIDIA H200", 9, 0),
            gpu(1, "NVIDIA L4", 8, 9),
            gpu(2, "NVIDIA H200", 9, 0),
        ];
        let p = make_plan(
            &"native".parse().unwrap(),
            ArchSource::Detected,
            &gpus,
            &cu13(),
            None,
        )
        .unwrap();
        assert_eq!(p.targets_display(), ["sm_89", "sm_90", "compute_90"]);
    }

    #[test]
    fn dropped_arch_names_last_toolkit() {
        let e = plan("70").unwrap_err();
        assert_eq!(e.code, "arch-dropped-by-nvcc");
        assert!(
            e.message.contains("sm_70") && e.message.contains("CUDA 12.9 is the last"),
            "{e}"
        );
        assert!(e.to_string().contains("575.51.03"), "{e}");
        let e = plan("101").unwrap_err();
        assert_eq!(e.code, "arch-dropped-by-nvcc");
        assert!(
            e.to_string()
                .contains("renamed sm_101 (Jetson Thor) to sm_110"),
            "{e}"
        );
        // A detected V100 with CUDA 13 is an error too: nothing can be built for it.
        let e = make_plan(
            &"native".parse().unwrap(),
            ArchSource::Detected,
            &[gpu(0, "Tesla V100", 7, 0)],
            &cu13(),
            None,
        )
        .unwrap_err();
        assert_eq!(e.code, "arch-dropped-by-nvcc");
        assert!(e.message.contains("GPU 0 (Tesla V100"), "{e}");
        // Next to a newer GPU it is skipped with a warning instead.
        let gpus = [gpu(0, "Tesla V100", 7, 0), gpu(1, "NVIDIA L4", 8, 9)];
        let p = make_plan(
            &"native".parse().unwrap(),
            ArchSource::Detected,
            &gpus,
            &cu13(),
            None,
        )
        .unwrap();
        assert_eq!(p.targets_display(), ["sm_89", "compute_89"]);
        assert!(
            p.warnings[0].contains("GPU 0 (Tesla V100")
                && p.warnings[0].contains("will not run on that GPU"),
            "{:?}",
            p.warnings
        );
    }

    #[test]
    fn too_new_arch() {
        let old = NvccArchSupport::from_facts((12, 4));
        let e = make_plan(
            &"120".parse().unwrap(),
            ArchSource::CudaArchs,
            &[],
            &old,
            Some(&v("12.4.131")),
        )
        .unwrap_err();
        assert_eq!(e.code, "arch-too-new-for-nvcc");
        assert!(
            e.to_string().contains("sm_120 needs CUDA 12.8 or newer"),
            "{e}"
        );
        let e = plan("sm_130").unwrap_err();
        assert_eq!(e.code, "arch-too-new-for-nvcc");
        assert!(e.to_string().contains("compute_121"), "{e}");
        // Variants the release lacks: 100f came with 12.9.
        let e = make_plan(
            &"100f".parse().unwrap(),
            ArchSource::CudaArchs,
            &[],
            &NvccArchSupport::from_facts((12, 8)),
            None,
        )
        .unwrap_err();
        assert_eq!(e.code, "arch-too-new-for-nvcc");
        assert!(e.to_string().contains("CUDA 12.9"), "{e}");
        let e = plan("85").unwrap_err();
        assert_eq!(e.code, "arch-invalid");
    }

    #[test]
    fn gpu_newer_than_nvcc_gets_highest_ptx() {
        let gpus = [gpu(0, "NVIDIA Future", 13, 0), gpu(1, "NVIDIA H200", 9, 0)];
        let p = make_plan(
            &"native".parse().unwrap(),
            ArchSource::Detected,
            &gpus,
            &cu13(),
            Some(&v("13.0.88")),
        )
        .unwrap();
        assert_eq!(p.targets_display(), ["sm_90", "compute_121"]);
        assert_eq!(p.warnings.len(), 1);
        assert!(
            p.warnings[0]
                .contains("GPU 0 (NVIDIA Future, compute capability 13.0) is newer than nvcc 13.0"),
            "{:?}",
            p.warnings
        );
        assert!(p.warnings[0].contains("JIT"), "{:?}", p.warnings);
        // An older nvcc and an RTX 5090: PTX for the highest it has.
        let p = make_plan(
            &"native".parse().unwrap(),
            ArchSource::Detected,
            &[gpu(0, "RTX 5090", 12, 0)],
            &NvccArchSupport::from_facts((12, 6)),
            None,
        )
        .unwrap();
        assert_eq!(p.targets_display(), ["compute_90"]);
        // A B300 (10.3) with nvcc 12.8: sm_100 SASS runs on it, no JIT needed.
        let p = make_plan(
            &"native".parse().unwrap(),
            ArchSource::Detected,
            &[gpu(0, "NVIDIA B300", 10, 3)],
            &NvccArchSupport::from_facts((12, 8)),
            None,
        )
        .unwrap();
        assert_eq!(p.targets_display(), ["sm_100", "compute_100"]);
        assert!(p.warnings[0].contains("lists sm_103"), "{:?}", p.warnings);
    }

    #[test]
    fn unknown_future_arch_listed_by_nvcc_is_accepted_with_warning() {
        let future = NvccArchSupport::from_lists(
            "sm_90\nsm_130\n",
            "compute_90\ncompute_130\n",
            Some((14, 0)),
        );
        let p = make_plan(
            &"sm_130;90".parse().unwrap(),
            ArchSource::CudaArchs,
            &[],
            &future,
            None,
        )
        .unwrap();
        assert_eq!(p.targets_display(), ["sm_90", "sm_130", "compute_90"]);
        assert!(
            p.warnings[0].contains("sm_130 is not in cuda-build's tables"),
            "{:?}",
            p.warnings
        );
    }

    #[test]
    fn all_and_all_major_expand_from_nvcc() {
        let p = plan("all-major").unwrap();
        assert_eq!(
            p.targets_display(),
            [
                "sm_75",
                "sm_80",
                "sm_90",
                "sm_100",
                "sm_110",
                "sm_120",
                "compute_120"
            ]
        );
        let p = plan("all").unwrap();
        assert_eq!(p.sass.len(), 12);
        assert_eq!(p.ptx, Some(a("120")));
        let e = make_plan(
            &"all".parse().unwrap(),
            ArchSource::CudaArchs,
            &[],
            &NvccArchSupport::default(),
            None,
        )
        .unwrap_err();
        assert!(e.message.contains("`all`"), "{e}");
    }

    #[test]
    fn unknown_support_accepts_with_warning() {
        let p = make_plan(
            &"86".parse().unwrap(),
            ArchSource::CudaArchs,
            &[],
            &NvccArchSupport::default(),
            None,
        )
        .unwrap();
        assert_eq!(p.targets_display(), ["sm_86", "compute_86"]);
        assert!(p.warnings[0].contains("not checked"), "{:?}", p.warnings);
        let p = make_plan(
            &"80;86;90".parse().unwrap(),
            ArchSource::CudaArchs,
            &[],
            &NvccArchSupport::default(),
            None,
        )
        .unwrap();
        assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
    }

    #[test]
    fn precedence() {
        let full = Env::empty()
            .set(Var::CudaArchs, "80")
            .set(Var::CmakeCudaArchs, "86")
            .set(Var::CudaComputeCap, "89");
        let inputs = ArchInputs {
            explicit: Some("90".into()),
            metadata: Some("75".into()),
            fallback: Some("70".into()),
        };
        let r = |env: &Env, i: &ArchInputs| {
            resolve_spec(env, i)
                .unwrap()
                .map(|(s, src)| (s.to_string(), src))
        };
        assert_eq!(r(&full, &inputs), Some(("90".into(), ArchSource::Explicit)));
        let no_explicit = ArchInputs {
            explicit: Some("  ".into()),
            ..inputs.clone()
        };
        assert_eq!(
            r(&full, &no_explicit),
            Some(("80".into(), ArchSource::CudaArchs))
        );
        let env = full.clone().set(Var::CudaArchs, "");
        assert_eq!(
            r(&env, &no_explicit),
            Some(("86".into(), ArchSource::CmakeCudaArchs))
        );
        let env = env.unset(Var::CmakeCudaArchs);
        assert_eq!(
            r(&env, &no_explicit),
            Some(("89".into(), ArchSource::CudaComputeCap))
        );
        let env = env.unset(Var::CudaComputeCap);
        assert_eq!(
            r(&env, &no_explicit),
            Some(("75".into(), ArchSource::CargoMetadata))
        );
        let only_fallback = ArchInputs {
            fallback: Some("70".into()),
            ..Default::default()
        };
        assert_eq!(r(&env, &only_fallback), None);
    }

    #[test]
    fn bad_setting_names_its_source() {
        let env = Env::empty().set(Var::CudaArchs, "sm_");
        let e = resolve_spec(&env, &ArchInputs::default()).unwrap_err();
        assert_eq!(e.code, "arch-invalid");
        assert!(e.message.starts_with("CUDA_ARCHS is `sm_`"), "{e}");
        let e = resolve_spec(
            &Env::empty(),
            &ArchInputs {
                metadata: Some("999".into()),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(
            e.message
                .contains("[package.metadata.cuda] arch in Cargo.toml is `999`"),
            "{e}"
        );
    }

    fn fake_toolkit() -> Toolkit {
        Toolkit {
            root: "/nonexistent/cuda".into(),
            nvcc: "/nonexistent/cuda/bin/nvcc".into(),
            version: Some(v("13.0.88")),
            found_via: crate::toolkit::FoundVia::Explicit,
            include_dirs: vec![],
            lib_dirs: vec![],
            problems: vec![],
        }
    }

    #[test]
    fn nothing_set_no_gpu_is_arch_not_detected() {
        let tk = fake_toolkit();
        let e =
            plan_for_toolkit(&Env::empty(), &tk, &ArchInputs::default(), &Vec::new).unwrap_err();
        assert_eq!(e.code, "arch-not-detected");
        let text = e.to_string();
        assert!(
            text.contains("CUDA_ARCHS=90")
                && text.contains("[package.metadata.cuda]")
                && text.contains(".arch(\"90\")"),
            "{text}"
        );
        let e = plan_for_toolkit(
            &Env::empty().set(Var::CudaArchs, "native"),
            &tk,
            &ArchInputs::default(),
            &Vec::new,
        )
        .unwrap_err();
        assert_eq!(e.code, "arch-not-detected");
        assert!(
            e.message.contains("`native` was requested by CUDA_ARCHS"),
            "{e}"
        );
    }

    #[test]
    fn fallback_and_detection() {
        let tk = fake_toolkit();
        let inputs = ArchInputs {
            fallback: Some("80;90".into()),
            ..Default::default()
        };
        let p = plan_for_toolkit(&Env::empty(), &tk, &inputs, &Vec::new).unwrap();
        assert_eq!(p.source, ArchSource::Fallback);
        assert_eq!(p.targets_display(), ["sm_80", "sm_90", "compute_90"]);
        assert!(
            p.warnings[0].contains("using the fallback arch list `80;90`"),
            "{:?}",
            p.warnings
        );
        let detect = || vec![gpu(0, "NVIDIA H200", 9, 0)];
        let p = plan_for_toolkit(&Env::empty(), &tk, &inputs, &detect).unwrap();
        assert_eq!(p.source, ArchSource::Detected);
        assert_eq!(p.targets_display(), ["sm_90", "compute_90"]);
        // A set variable never calls detection.
        let never = || -> Vec<GpuInfo> { panic!("detect called") };
        let p = plan_for_toolkit(
            &Env::empty().set(Var::CudaComputeCap, "86"),
            &tk,
            &inputs,
            &never,
        )
        .unwrap();
        assert_eq!(p.source, ArchSource::CudaComputeCap);
    }

    #[test]
    fn plan_coverage() {
        use crate::compat::Status;
        let c = ComputeCapability::new;
        let plan = |sass: &[&str], ptx: Option<&str>| ArchPlan {
            sass: sass.iter().map(|s| s.parse::<Arch>().unwrap()).collect(),
            ptx: ptx.map(|p| p.parse().unwrap()),
            source: ArchSource::CudaArchs,
            warnings: vec![],
        };
        let p = plan(&["80", "90"], Some("90"));
        assert_eq!(p.covers_gpu(c(8, 6)).status, Status::Pass); // sm_80 on 8.6
        assert!(p.covers_gpu(c(8, 6)).reason.starts_with("sm_80 SASS"));
        assert_eq!(p.covers_gpu(c(12, 0)).status, Status::Warn); // JIT compute_90
        assert_eq!(p.covers_gpu(c(7, 5)).status, Status::Fail);
        let p = plan(&["90a"], None);
        assert_eq!(p.covers_gpu(c(9, 0)).status, Status::Pass);
        let v = p.covers_gpu(c(10, 0));
        assert_eq!(v.status, Status::Fail);
        assert!(
            v.reason.contains("(CUDA_ERROR_NO_BINARY_FOR_GPU, 209)")
                && v.fix.unwrap().contains("add 100"),
            "{}",
            v.reason
        );
        let p = plan(&["100f"], None);
        assert_eq!(p.covers_gpu(c(10, 3)).status, Status::Pass);
        assert_eq!(p.covers_gpu(c(12, 0)).status, Status::Fail);
    }
}
