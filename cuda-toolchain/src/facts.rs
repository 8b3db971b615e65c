//! Sourced compatibility facts: toolkit → minimum driver, driver → CUDA,
//! CUDA → PTX ISA, arch → first/last CUDA, CUDA → host compiler limits,
//! product name → compute capability, CUDA → CCCL's MSVC preprocessor check.
//!
//! Every row cites its source key (`S1`…`S29`) from `shared/cuda-facts.md`
//! in a trailing comment; `[U]` marks a row the sources leave uncertain.
//! Tests in `tests/arch.rs` check the rows a real tool can confirm (nvcc
//! 13.0's arch lists and PTX `.version`, the `.version` gates of ptxas 11.8,
//! 12.9 and 13.0, and the sm_101 → sm_110 rename between 12.9 and 13.0).
//!
//! All driver numbers are Linux x86_64. Driver versions compare numerically,
//! component by component ([`compare_driver_versions`]): `535.104.05` is newer
//! than `535.54.03`.
//!
//! ```
//! use cuda_toolchain::facts;
//! assert_eq!(facts::max_cuda_for_driver("535.104.05"), Some((12, 2)));
//! assert_eq!(facts::ptx_isa_for_cuda((12, 8)), Some((8, 7)));
//! assert_eq!(facts::mvc_floor(12), Some("525.60.13"));
//! ```

use std::cmp::Ordering;

use crate::arch::{Arch, ComputeCapability, Variant};

/// A CUDA version `(major, minor)`.
pub type CudaVersion = (u32, u32);

const fn cc(major: u32, minor: u32) -> ComputeCapability {
    ComputeCapability::new(major, minor)
}

// ---------------------------------------------------------------------------
// 1. Toolkit → minimum Linux driver (cuda-facts.md §1a, §1b)
// ---------------------------------------------------------------------------

/// Minimum Linux x86_64 driver of each toolkit's GA release (the updates of
/// a minor can list a newer one, but minor-version compatibility covers them).
pub const TOOLKIT_MIN_DRIVER: &[(CudaVersion, &str)] = &[
    ((10, 2), "440.33"),    // S1, S2 Table 2, S4
    ((11, 0), "450.51.05"), // S1, S4 (11.0.2 GA; the 11.0.1 RC listed 450.36.06)
    ((11, 1), "455.23"),    // S1, S4
    ((11, 2), "460.27.03"), // S1, S4
    ((11, 3), "465.19.01"), // S1, S4
    ((11, 4), "470.42.01"), // S1, S4
    ((11, 5), "495.29.05"), // S1, S4
    ((11, 6), "510.39.01"), // S1, S4
    ((11, 7), "515.43.04"), // S1, S4
    ((11, 8), "520.61.05"), // S1, S4
    ((12, 0), "525.60.13"), // S1, S4
    ((12, 1), "530.30.02"), // S1, S4
    ((12, 2), "535.54.03"), // S1, S4
    ((12, 3), "545.23.06"), // S1, S4
    ((12, 4), "550.54.14"), // S1, S4
    ((12, 5), "555.42.02"), // S1, S4
    ((12, 6), "560.28.03"), // S1, S4
    ((12, 8), "570.26"),    // S1 (the GA runfile bundles 570.86.10, S4)
    ((12, 9), "575.51.03"), // S1, S4
    ((13, 0), "580.65.06"), // S1, S4
    ((13, 1), "590.44.01"), // S1, S4
    ((13, 2), "595.45.04"), // S1, S4
                            // 13.3+: minimum not published in the captured tables (S4/S19 show 13.3 bundles 610.43.02) [U]
];

/// Minor-version-compatibility floors: the oldest driver that runs SASS from
/// any toolkit of that major.
pub const MVC_FLOOR: &[(u32, &str)] = &[
    (11, "450.80.02"), // S1 footnote, S2 Table 1, S24
    (12, "525.60.13"), // S1, S2, S24
    (13, "580"),       // S1, S2 (">= 580"); S10 "13.x … r580 and newer"
];

/// Minimum Linux driver for a toolkit release, e.g. 13.0 → `"580.65.06"`.
///
/// Only major.minor is used (nvcc's patch number is a build number, not the
/// update). `None` for versions not in the table (12.7 never shipped; 13.3+
/// unpublished).
pub fn min_driver_for_toolkit(toolkit: &semver::Version) -> Option<&'static str> {
    let key = (toolkit.major as u32, toolkit.minor as u32);
    TOOLKIT_MIN_DRIVER
        .iter()
        .find(|(v, _)| *v == key)
        .map(|(_, d)| *d)
}

/// The minor-version-compatibility floor of a CUDA major (11 → `450.80.02`,
/// 12 → `525.60.13`, 13 → `580`). CUDA 10 and older have none (S2 Table 2).
pub fn mvc_floor(major: u32) -> Option<&'static str> {
    MVC_FLOOR.iter().find(|(m, _)| *m == major).map(|(_, d)| *d)
}

// ---------------------------------------------------------------------------
// 2. Driver branch → highest CUDA (cuda-facts.md §2)
// ---------------------------------------------------------------------------

/// Driver branch (the first number of the version) → highest CUDA it supports
/// (what `cuDriverGetVersion` and nvidia-smi's "CUDA Version" report).
pub const DRIVER_BRANCH_CUDA: &[(u32, CudaVersion)] = &[
    (410, (10, 0)), // S1/S2
    (418, (10, 1)), // S1/S2
    (440, (10, 2)), // S1
    (450, (11, 0)), // S1
    (455, (11, 1)), // S1
    (460, (11, 2)), // S1
    (465, (11, 3)), // S1
    (470, (11, 4)), // S1
    (495, (11, 5)), // S1
    (510, (11, 6)), // S1
    (515, (11, 7)), // S1
    (520, (11, 8)), // S1
    (525, (12, 0)), // S1
    (530, (12, 1)), // S1
    (535, (12, 2)), // S1
    (545, (12, 3)), // S1
    (550, (12, 4)), // S1
    (555, (12, 5)), // S1
    (560, (12, 6)), // S1
    (565, (12, 7)), // S20 (no 12.7 toolkit exists; the driver reports 12.7)
    (570, (12, 8)), // S1
    (575, (12, 9)), // S1
    (580, (13, 0)), // S1, S20, S26
    (590, (13, 1)), // S1, S20
    (595, (13, 2)), // S1, S20
    (610, (13, 3)), // S4, S19, S20
    (615, (13, 4)), // S20 (one log) [U]
];

/// Parses a driver version into its numeric components (`"535.104.05"` →
/// `[535, 104, 5]`). `None` when a component is not a number.
pub fn parse_driver_version(v: &str) -> Option<Vec<u32>> {
    let v = v.trim();
    if v.is_empty() {
        return None;
    }
    v.split('.').map(|c| c.parse::<u32>().ok()).collect()
}

/// Compares driver versions numerically, component by component; missing
/// components count as 0 (`"580"` ≤ `"580.65.06"`). `None` if either is not
/// a version.
///
/// ```
/// use std::cmp::Ordering;
/// use cuda_toolchain::facts::compare_driver_versions;
/// assert_eq!(compare_driver_versions("535.104.05", "535.54.03"), Some(Ordering::Greater));
/// ```
pub fn compare_driver_versions(a: &str, b: &str) -> Option<Ordering> {
    let (a, b) = (parse_driver_version(a)?, parse_driver_version(b)?);
    let n = a.len().max(b.len());
    let get = |v: &Vec<u32>, i: usize| v.get(i).copied().unwrap_or(0);
    Some(
        (0..n)
            .map(|i| get(&a, i).cmp(&get(&b, i)))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal),
    )
}

/// Highest CUDA version a driver supports, from its branch: `"535.104.05"` →
/// 12.2. A branch newer than the table answers with the newest known CUDA
/// (a lower bound). `None` for unparsable or pre-R410 versions. Jetson
/// (Tegra) drivers do not follow this numbering.
pub fn max_cuda_for_driver(driver_version: &str) -> Option<CudaVersion> {
    let branch = *parse_driver_version(driver_version)?.first()?;
    DRIVER_BRANCH_CUDA
        .iter()
        .rev()
        .find(|(b, _)| *b <= branch)
        .map(|(_, v)| *v)
}

/// The oldest driver branch that supports a CUDA version (13.0 → 580).
pub fn min_driver_branch_for_cuda(cuda: CudaVersion) -> Option<u32> {
    DRIVER_BRANCH_CUDA
        .iter()
        .find(|(_, v)| *v >= cuda)
        .map(|(b, _)| *b)
}

// ---------------------------------------------------------------------------
// 3. CUDA → PTX ISA (cuda-facts.md §4)
// ---------------------------------------------------------------------------

/// The PTX ISA (`.version`) each CUDA release's nvcc emits and its ptxas and
/// driver JIT accept at most.
pub const CUDA_PTX_ISA: &[(CudaVersion, (u32, u32))] = &[
    ((10, 0), (6, 3)), // S7
    ((10, 1), (6, 4)), // S7
    ((10, 2), (6, 5)), // S7
    ((11, 0), (7, 0)), // S7
    ((11, 1), (7, 1)), // S7
    ((11, 2), (7, 2)), // S7
    ((11, 3), (7, 3)), // S7
    ((11, 4), (7, 4)), // S7
    ((11, 5), (7, 5)), // S7
    ((11, 6), (7, 6)), // S7
    ((11, 7), (7, 7)), // S7
    ((11, 8), (7, 8)), // S7; ptxas 11.8 checked in tests/arch.rs
    ((12, 0), (8, 0)), // S7
    ((12, 1), (8, 1)), // S7
    ((12, 2), (8, 2)), // S7
    ((12, 3), (8, 3)), // S7
    ((12, 4), (8, 4)), // S7
    ((12, 5), (8, 5)), // S7
    ((12, 6), (8, 5)), // S7 (no 12.6 entry: 8.5 → 12.5, 8.6 → 12.7) [U]
    ((12, 7), (8, 6)), // S7 (R565 drivers; no toolkit)
    ((12, 8), (8, 7)), // S7
    ((12, 9), (8, 8)), // S7; ptxas 12.9 checked in tests/arch.rs
    ((13, 0), (9, 0)), // S7; nvcc/ptxas 13.0 checked in tests/arch.rs
    ((13, 1), (9, 1)), // S7, cuda-facts §11
    ((13, 2), (9, 2)), // S1 §2.3, cuda-facts §11
    ((13, 3), (9, 3)), // cuda-facts §11 (nvcc 13.3.73)
    ((13, 4), (9, 4)), // cuda-facts §11 (nvcc 13.4.92), S18
    ((13, 5), (9, 5)), // cuda-facts §11 (nvcc 13.5.37)
];

/// The PTX ISA a CUDA release emits (and the highest its ptxas/driver JIT
/// accepts): 12.8 → 8.7, 13.0 → 9.0.
pub fn ptx_isa_for_cuda(cuda: CudaVersion) -> Option<(u32, u32)> {
    CUDA_PTX_ISA
        .iter()
        .find(|(v, _)| *v == cuda)
        .map(|(_, isa)| *isa)
}

/// The first CUDA release whose ptxas/driver accepts a PTX ISA (8.7 → 12.8).
pub fn cuda_for_ptx_isa(isa: (u32, u32)) -> Option<CudaVersion> {
    CUDA_PTX_ISA
        .iter()
        .find(|(_, i)| *i >= isa)
        .map(|(v, _)| *v)
}

// ---------------------------------------------------------------------------
// 4. Arch → first / last CUDA (cuda-facts.md §3a, §3b)
// ---------------------------------------------------------------------------

/// One architecture's span of toolkit support.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchSpan {
    /// The compute capability.
    pub cc: ComputeCapability,
    /// First CUDA whose nvcc targets it.
    pub first: CudaVersion,
    /// Last CUDA that still targets it (`None`: still supported).
    pub last: Option<CudaVersion>,
    /// First CUDA with the `a` variant, if one exists.
    pub specific_first: Option<CudaVersion>,
    /// First CUDA with the `f` variant, if one exists.
    pub family_first: Option<CudaVersion>,
    /// Marketing generation / example product.
    pub name: &'static str,
}

const fn span(
    cc: ComputeCapability,
    first: CudaVersion,
    last: Option<CudaVersion>,
    specific_first: Option<CudaVersion>,
    family_first: Option<CudaVersion>,
    name: &'static str,
) -> ArchSpan {
    ArchSpan {
        cc,
        first,
        last,
        specific_first,
        family_first,
        name,
    }
}

/// Every architecture nvcc has targeted since CUDA 10, with its support span.
pub const ARCH_SPANS: &[ArchSpan] = &[
    span(cc(3, 0), (5, 0), Some((10, 2)), None, None, "Kepler"), // S5 cuda@5.0:10.2, S6, S9
    span(
        cc(3, 2),
        (5, 0),
        Some((10, 2)),
        None,
        None,
        "Kepler (Tegra K1)",
    ), // S5, S6
    span(cc(3, 5), (5, 0), Some((11, 8)), None, None, "Kepler (K40)"), // S5, S6, S8, S9
    span(cc(3, 7), (6, 5), Some((11, 8)), None, None, "Kepler (K80)"), // S5, S6, S9
    span(cc(5, 0), (6, 0), Some((12, 9)), None, None, "Maxwell"), // S5, S6, S11
    span(
        cc(5, 2),
        (6, 5),
        Some((12, 9)),
        None,
        None,
        "Maxwell (M40, GTX 9xx)",
    ), // S5, S6, S11
    span(
        cc(5, 3),
        (6, 5),
        Some((12, 9)),
        None,
        None,
        "Maxwell (Jetson Nano)",
    ), // S5, S6, S11
    span(cc(6, 0), (8, 0), Some((12, 9)), None, None, "Pascal (P100)"), // S5, S6, S9, S11
    span(
        cc(6, 1),
        (8, 0),
        Some((12, 9)),
        None,
        None,
        "Pascal (P40, GTX 10xx)",
    ), // S5, S6, S9, S11
    span(
        cc(6, 2),
        (8, 0),
        Some((12, 9)),
        None,
        None,
        "Pascal (Jetson TX2)",
    ), // S5, S6, S9, S11
    span(cc(7, 0), (9, 0), Some((12, 9)), None, None, "Volta (V100)"), // S5, S6, S9, S11
    span(
        cc(7, 2),
        (9, 0),
        Some((12, 9)),
        None,
        None,
        "Volta (Jetson Xavier)",
    ), // S5, S6 (S9 says 9.1 [U]); S6/S10 drop it in 13.0
    span(cc(7, 5), (10, 0), None, None, None, "Turing (T4, RTX 20xx)"), // S5, S6, S9, S10
    span(cc(8, 0), (11, 0), None, None, None, "Ampere (A100)"),  // S5, S6, S8, S9
    span(
        cc(8, 6),
        (11, 1),
        None,
        None,
        None,
        "Ampere (RTX 30xx, A10, A40)",
    ), // S5, S6, S8, S9
    span(cc(8, 7), (11, 4), None, None, None, "Ampere (Jetson Orin)"), // S5, S6, S8, S9, S10
    span(cc(8, 8), (13, 0), None, None, None, "unknown product"), // S6 only [U]; nvcc 13.0 lists it (tests/arch.rs)
    span(
        cc(8, 9),
        (11, 8),
        None,
        None,
        None,
        "Ada (L4, L40S, RTX 40xx)",
    ), // S5, S6, S8, S9
    span(
        cc(9, 0),
        (11, 8),
        None,
        Some((12, 0)),
        None,
        "Hopper (H100, H200)",
    ), // S6, S8, S9; 90a: S5, S9
    span(
        cc(10, 0),
        (12, 8),
        None,
        Some((12, 8)),
        Some((12, 9)),
        "Blackwell (B200)",
    ), // S5, S6, S9; 100f: S5, S10
    span(
        cc(10, 1),
        (12, 8),
        Some((12, 9)),
        Some((12, 8)),
        Some((12, 9)),
        "Blackwell (Jetson Thor, renamed sm_110 in 13.0)",
    ), // S5, S10, S29
    span(
        cc(10, 3),
        (12, 9),
        None,
        Some((12, 9)),
        Some((12, 9)),
        "Blackwell Ultra (B300)",
    ), // S5, S6, S10, S28
    span(
        cc(10, 7),
        (13, 4),
        None,
        Some((13, 4)),
        Some((13, 4)),
        "Rubin",
    ), // S18, cuda-facts §11 (nvcc 13.4.92) [U]
    span(
        cc(11, 0),
        (13, 0),
        None,
        Some((13, 0)),
        Some((13, 0)),
        "Blackwell (Jetson Thor)",
    ), // S5, S6, S10, S18, S29
    span(
        cc(12, 0),
        (12, 8),
        None,
        Some((12, 8)),
        Some((12, 9)),
        "Blackwell (RTX 50xx)",
    ), // S5, S6, S8
    span(
        cc(12, 1),
        (12, 9),
        None,
        Some((12, 9)),
        Some((12, 9)),
        "Blackwell (GB10, DGX Spark)",
    ), // S5, S6, S10, S28
];

/// Compute capabilities of Jetson / Tegra SoCs (S12; S29 for Thor). Their
/// SASS is binary-compatible by the same-major rule, but nobody wants it
/// picked for a discrete GPU, so planning skips them as stand-ins.
pub const TEGRA: &[ComputeCapability] = &[
    cc(3, 2),  // Tegra K1, S12 legacy
    cc(5, 3),  // Jetson Nano, S12 legacy
    cc(6, 2),  // Jetson TX2, S12 legacy
    cc(7, 2),  // Jetson Xavier, S12 legacy
    cc(8, 7),  // Jetson Orin, S12
    cc(10, 1), // Jetson Thor before CUDA 13, S29
    cc(11, 0), // Jetson Thor, S12, S29
];

/// Whether a compute capability is a Jetson/Tegra SoC's.
pub fn is_tegra(c: ComputeCapability) -> bool {
    TEGRA.contains(&c)
}

/// The support span of a compute capability, if known.
pub fn arch_span(cc: ComputeCapability) -> Option<&'static ArchSpan> {
    ARCH_SPANS.iter().find(|s| s.cc == cc)
}

/// First CUDA that targets `cc`, and the last one (`None`: still supported).
///
/// ```
/// use cuda_toolchain::{arch::ComputeCapability, facts};
/// assert_eq!(facts::arch_first_last(ComputeCapability::new(7, 0)), Some(((9, 0), Some((12, 9)))));
/// ```
pub fn arch_first_last(cc: ComputeCapability) -> Option<(CudaVersion, Option<CudaVersion>)> {
    arch_span(cc).map(|s| (s.first, s.last))
}

/// First and last CUDA for an arch including its variant (`90a` starts at 12.0).
/// `None` when the variant never existed for that compute capability.
pub fn arch_variant_first_last(arch: Arch) -> Option<(CudaVersion, Option<CudaVersion>)> {
    let s = arch_span(arch.cc)?;
    let first = match arch.variant {
        Variant::Plain => s.first,
        Variant::Specific => s.specific_first?,
        Variant::Family => s.family_first?,
    };
    Some((first, s.last))
}

/// Whether a toolkit release targets an arch (variant included).
pub fn toolkit_supports(cuda: CudaVersion, arch: Arch) -> bool {
    matches!(arch_variant_first_last(arch), Some((first, last)) if first <= cuda && last.is_none_or(|l| cuda <= l))
}

/// Every compute capability a toolkit's nvcc targets, ascending (13.0 →
/// 7.5 … 12.1, as `nvcc --list-gpu-code` prints, minus its order).
pub fn archs_for_toolkit(cuda: CudaVersion) -> Vec<ComputeCapability> {
    ARCH_SPANS
        .iter()
        .filter(|s| toolkit_supports(cuda, s.cc.arch()))
        .map(|s| s.cc)
        .collect()
}

// The generation names (`hopper` → 9.0) are part of the arch spelling, so the
// table lives with the parser; re-exported here, where readers of the facts look.
pub use crate::arch::generation;

/// The first nvcc that accepts `-arch=native`: 11.6. NVIDIA's CUDA 11.6
/// Features Archive says "11.5 update 1", but the real nvcc of 11.5 update 1
/// (V11.5.119, built 18 Nov 2021, Ubuntu 22.04's) rejects it with `Value
/// 'native' is not defined for option 'gpu-architecture'` (whisper.cpp#876);
/// CMake's support for it (MR 7050) also says 11.6.
pub const NVCC_ARCH_NATIVE_FIRST: CudaVersion = (11, 6);

/// Every option name nvcc 13.0.88 lists in `nvcc --help` (long names without
/// `--`, short ones without `-`), read off the real tool. An nvcc that calls
/// one of these unknown is older than the release that added it
/// (`Unknown option 'std'` from CUDA 6.5, which predates `-std`).
pub const NVCC_13_0_OPTIONS: &[&str] = &[
    "E",
    "G",
    "M",
    "MD",
    "MF",
    "MM",
    "MMD",
    "MP",
    "Ofast-compile",
    "V",
    "Wdefault-stream-launch",
    "Werror",
    "Wext-lambda-captures-this",
    "Wmissing-launch-bounds",
    "Wno-deprecated-declarations",
    "Wno-deprecated-gpu-targets",
    "Wreorder",
    "allow-unsupported-compiler",
    "arch-ls",
    "archive-options",
    "archiver-binary",
    "astoolspatch",
    "aug-hls",
    "augment-host-linker-script",
    "brief-diagnostics",
    "c",
    "clean",
    "clean-targets",
    "code-ls",
    "compile",
    "compile-as-tools-patch",
    "compiler-bindir",
    "compiler-options",
    "compress-mode",
    "cubin",
    "cuda",
    "cudadevrt",
    "cudart",
    "dc",
    "debug",
    "default-stream",
    "define-macro",
    "dependency-drive-prefix",
    "dependency-output",
    "dependency-target-name",
    "device-c",
    "device-debug",
    "device-entity-has-hidden-visibility",
    "device-link",
    "device-stack-protector",
    "device-w",
    "diag-error",
    "diag-suppress",
    "diag-warn",
    "disable-warnings",
    "display-error-number",
    "dlink",
    "dlink-time-opt",
    "dlto",
    "dont-use-profile",
    "dopt",
    "drive-prefix",
    "dryrun",
    "dw",
    "entries",
    "err-no",
    "ewp",
    "expt-extended-lambda",
    "expt-relaxed-constexpr",
    "extended-lambda",
    "extensible-whole-program",
    "extra-device-vectorization",
    "fatbin",
    "fdevice-syntax-only",
    "fdevice-time-trace",
    "fmad",
    "force-cl-env-setup",
    "forward-unknown-opts",
    "forward-unknown-to-host-compiler",
    "forward-unknown-to-host-linker",
    "frandom-seed",
    "ftemplate-backtrace-limit",
    "ftemplate-depth",
    "ftz",
    "g",
    "gen-opt-lto",
    "generate-code",
    "generate-dependencies",
    "generate-dependencies-with-compile",
    "generate-dependency-targets",
    "generate-line-info",
    "generate-nonsystem-dependencies",
    "generate-nonsystem-dependencies-with-compile",
    "gpu-architecture",
    "gpu-code",
    "h",
    "help",
    "host-linker-script",
    "include-path",
    "input-drive-prefix",
    "jobserver",
    "jump-table-density",
    "keep",
    "keep-device-functions",
    "keep-dir",
    "lib",
    "libdevice-directory",
    "library",
    "library-path",
    "lineinfo",
    "link",
    "linker-options",
    "list-gpu-arch",
    "list-gpu-code",
    "lto",
    "ltoir",
    "m64",
    "machine",
    "maxrregcount",
    "no-align-double",
    "no-compress",
    "no-device-link",
    "no-display-error-number",
    "no-err-no",
    "no-exceptions",
    "no-host-device-initializer-list",
    "no-host-device-move-forward",
    "nodlink",
    "noeh",
    "nohdinitlist",
    "nohdmoveforward",
    "noprof",
    "nvlink-options",
    "objdir-as-tempdir",
    "objtemp",
    "optimization-info",
    "optimize",
    "options-file",
    "optix-ir",
    "output-directory",
    "output-file",
    "pg",
    "pre-include",
    "prec-div",
    "prec-sqrt",
    "preprocess",
    "profile",
    "ptx",
    "ptxas-options",
    "qpp-config",
    "r",
    "reloc-ptx",
    "relocatable-device-code",
    "relocatable-link",
    "relocatable-ptx",
    "res-usage",
    "resource-usage",
    "restrict",
    "run",
    "run-args",
    "sanitize",
    "save-temps",
    "shared",
    "source-in-ptx",
    "split-compile",
    "split-compile-extended",
    "src-in-ptx",
    "static-global-template-stub",
    "std",
    "system-include",
    "target-directory",
    "threads",
    "time",
    "undefine-macro",
    "use-local-env",
    "use_fast_math",
    "v",
    "verbose",
    "version",
    "w",
    "x",
];

/// Whether nvcc 13.0 knows an option, as nvcc names it in `Unknown option
/// '...'` (`std`, `-std=c++17`, `--threads`): dashes and any `=value` aside.
pub fn nvcc_knows_option(option: &str) -> bool {
    let name = option.trim().trim_start_matches('-');
    let name = name.split(['=', ' ']).next().unwrap_or(name);
    !name.is_empty() && NVCC_13_0_OPTIONS.contains(&name)
}

// ---------------------------------------------------------------------------
// 5. CUDA → host compiler limits (cuda-facts.md §5)
// ---------------------------------------------------------------------------

/// The newest host compilers a CUDA release's `host_config.h` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct HostLimits {
    /// Newest accepted GCC major.
    pub gcc_max: u32,
    /// Newest accepted Clang major.
    pub clang_max: u32,
    /// Accepted `_MSC_VER` range (inclusive), where known.
    pub msvc: Option<(u32, u32)>,
}

const fn limits(gcc_max: u32, clang_max: u32, msvc: Option<(u32, u32)>) -> HostLimits {
    HostLimits {
        gcc_max,
        clang_max,
        msvc,
    }
}

/// CUDA release → host compiler limits.
pub const HOST_LIMITS: &[(CudaVersion, HostLimits)] = &[
    ((10, 2), limits(8, 8, None)),                 // S5
    ((11, 0), limits(9, 9, None)),                 // S5, S16
    ((11, 1), limits(10, 10, None)),               // S16, S5
    ((11, 2), limits(10, 11, None)),               // S16
    ((11, 3), limits(10, 11, None)),               // S16
    ((11, 4), limits(11, 12, None)), // S5, S16 (11.4.1+; 11.4.0 was gcc 10 / clang 11)
    ((11, 5), limits(11, 12, None)), // S5, S16
    ((11, 6), limits(11, 13, None)), // S16, S5
    ((11, 7), limits(11, 13, None)), // S16, S5
    ((11, 8), limits(11, 14, Some((1910, 1939)))), // S5; host_config lines [L]
    ((12, 0), limits(12, 14, None)), // S5
    ((12, 1), limits(12, 15, None)), // S5
    ((12, 2), limits(12, 16, None)), // S5
    ((12, 3), limits(12, 16, None)), // S5
    ((12, 4), limits(13, 17, None)), // S5
    ((12, 5), limits(13, 17, None)), // S5
    ((12, 6), limits(13, 18, Some((1910, 1949)))), // S13 host_config.h, S5
    ((12, 8), limits(14, 19, Some((1910, 1949)))), // S5; host_config lines [L]
    ((12, 9), limits(14, 19, None)), // S5
    // MSVC: cuda-facts.md says 1920–1950 (from S15, `>= 1951` rejected, a
    // 13.x copy of unknown minor); the real 13.0.88 host_config.h rejects
    // `_MSC_VER < 1920 || _MSC_VER >= 1950`, so 1949 is the last accepted.
    // tests/arch.rs real_host_config_h_of_13_0_matches_the_host_compiler_table.
    ((13, 0), limits(15, 20, Some((1920, 1949)))), // S15, S5, real host_config.h
    ((13, 1), limits(15, 21, None)),               // S5 (spack contradicted itself earlier) [U]
    ((13, 2), limits(15, 21, None)),               // S5
    ((13, 3), limits(15, 21, Some((1920, 1959)))), // S5; log and host_config lines [L]
];

/// Host compiler limits of a CUDA release, e.g. 13.0 → gcc 15, clang 20.
pub fn host_compiler_limits(cuda: CudaVersion) -> Option<HostLimits> {
    HOST_LIMITS
        .iter()
        .find(|(v, _)| *v == cuda)
        .map(|(_, l)| *l)
}

// ---------------------------------------------------------------------------
// 6. Product name → compute capability (cuda-facts.md §6)
// ---------------------------------------------------------------------------

/// Exact name tokens (lower-case) → compute capability.
const PRODUCT_TOKENS: &[(&str, ComputeCapability)] = &[
    ("gb10", cc(12, 1)),  // S12
    ("b300", cc(10, 3)),  // S12
    ("gb300", cc(10, 3)), // S12
    ("b200", cc(10, 0)),  // S12; logs "NVIDIA B200, 10.0"
    ("gb200", cc(10, 0)), // S12
    ("h100", cc(9, 0)),   // S12; S26
    ("h200", cc(9, 0)),   // S12
    ("gh200", cc(9, 0)),  // S12
    ("l4", cc(8, 9)),     // S12
    ("l40", cc(8, 9)),    // S12
    ("l40s", cc(8, 9)),   // S12
    ("a100", cc(8, 0)),   // S12 (older page copy)
    ("a30", cc(8, 0)),    // S12 (older page copy)
    ("a40", cc(8, 6)),    // S12
    ("a10", cc(8, 6)),    // S12
    ("a10g", cc(8, 6)),   // logs "NVIDIA A10G, 8.6" [U]
    ("a16", cc(8, 6)),    // S12
    ("a2", cc(8, 6)),     // S12
    ("a6000", cc(8, 6)),  // S12 (RTX A6000)
    ("a5000", cc(8, 6)),  // S12
    ("a4000", cc(8, 6)),  // S12
    ("a3000", cc(8, 6)),  // S12
    ("a2000", cc(8, 6)),  // S12
    ("t4", cc(7, 5)),     // S12; logs "Tesla T4, 7.5"
    ("t1000", cc(7, 5)),  // S12
    ("t600", cc(7, 5)),   // S12
    ("t400", cc(7, 5)),   // S12
    ("v100", cc(7, 0)),   // S12 legacy
    ("gv100", cc(7, 0)),  // S12 legacy
    ("p100", cc(6, 0)),   // S12 legacy
    ("gp100", cc(6, 0)),  // S12 legacy
    ("p40", cc(6, 1)),    // S12 legacy
    ("p4", cc(6, 1)),     // S12 legacy
    ("m60", cc(5, 2)),    // S12 legacy
    ("m40", cc(5, 2)),    // S12 legacy
    ("k80", cc(3, 7)),    // S12 older copy
    ("k40", cc(3, 5)),    // S12 older copy
];

/// Maps a product name (as nvidia-smi prints it) to its compute capability,
/// for drivers too old to answer `--query-gpu=compute_cap`. Case-insensitive;
/// vendor prefixes (`NVIDIA`, `Tesla`, `GeForce`, `Quadro`) are ignored.
///
/// ```
/// use cuda_toolchain::facts::cc_for_product;
/// assert_eq!(cc_for_product("NVIDIA H100 80GB HBM3").unwrap().to_string(), "9.0");
/// assert_eq!(cc_for_product("NVIDIA GeForce RTX 4060 Laptop GPU").unwrap().to_string(), "8.9");
/// assert_eq!(cc_for_product("NVIDIA A100-SXM4-40GB").unwrap().to_string(), "8.0");
/// assert_eq!(cc_for_product("Some Other GPU"), None);
/// ```
pub fn cc_for_product(name: &str) -> Option<ComputeCapability> {
    let lower = name.to_ascii_lowercase();
    let tokens: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .collect();
    let has = |t: &str| tokens.contains(&t);
    // Jetson modules first: "Orin Nano" must not read as Jetson Nano.
    if has("orin") {
        return Some(cc(8, 7)); // S12; logs "Orin (nvgpu), 8.7"
    }
    if has("thor") || (has("jetson") && (has("t5000") || has("t4000"))) {
        return Some(cc(11, 0)); // S12, S29
    }
    if has("xavier") {
        return Some(cc(7, 2)); // S12 legacy
    }
    if has("tx2") {
        return Some(cc(6, 2)); // S12 legacy
    }
    if has("jetson") && has("nano") {
        return Some(cc(5, 3)); // S12 legacy
    }
    // Workstation names that reuse numbers across generations.
    if has("rtx") && has("blackwell") {
        return Some(cc(12, 0)); // S12 (RTX PRO … Blackwell)
    }
    if has("rtx") && has("ada") {
        return Some(cc(8, 9)); // S12 (RTX 6000 Ada …)
    }
    if has("quadro") && has("rtx") && ["4000", "5000", "6000", "8000"].iter().any(|n| has(n)) {
        return Some(cc(7, 5)); // S12 (Quadro RTX 4000–8000)
    }
    if has("titan") && has("rtx") {
        return Some(cc(7, 5)); // S12
    }
    if has("titan") && has("v") {
        return Some(cc(7, 0)); // S12 legacy
    }
    if let Some((_, c)) = PRODUCT_TOKENS.iter().find(|(t, _)| has(t)) {
        return Some(*c);
    }
    // GeForce numbering: RTX 50xx/40xx/30xx/20xx, GTX 16xx/10xx/9xx.
    let model = tokens.iter().find_map(|t| {
        let digits: String = t.chars().take_while(|c| c.is_ascii_digit()).collect();
        (digits.len() >= 3 && digits.len() == t.len() || t.ends_with("ti") && digits.len() >= 3)
            .then(|| digits.parse::<u32>().ok())
            .flatten()
    })?;
    if has("rtx") {
        return match model / 1000 {
            5 if model < 5100 => Some(cc(12, 0)), // S12: RTX 50xx
            4 if model < 4100 => Some(cc(8, 9)),  // S12: RTX 40xx
            3 if model < 3100 => Some(cc(8, 6)),  // S12: RTX 30xx
            2 if model < 2100 => Some(cc(7, 5)), // S12: RTX 20xx (the laptop 2050 is reportedly 8.6 [U])
            _ => None,
        };
    }
    if has("gtx") {
        return match model {
            1600..=1699 => Some(cc(7, 5)), // S12: GTX 16xx
            1000..=1099 => Some(cc(6, 1)), // S12 legacy: GTX 10xx
            900..=999 => Some(cc(5, 2)),   // S12 legacy: GTX 9xx
            _ => None,
        };
    }
    None
}

// ---------------------------------------------------------------------------
// 7. CUDA → what CCCL does with MSVC's traditional preprocessor
// ---------------------------------------------------------------------------

/// What the CCCL headers a CUDA release ships do when cl.exe compiles them
/// with its traditional (non-conforming) preprocessor, as it does unless
/// given `/Zc:preprocessor`. nvcc does not pass that flag on by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum CcclMsvcPreprocessor {
    /// No check: the traditional preprocessor is accepted.
    Accepted,
    /// A `#pragma message` asks for `/Zc:preprocessor`.
    Warns,
    /// An `#error` stops the compile unless `/Zc:preprocessor` is given
    /// (or `CCCL_IGNORE_MSVC_TRADITIONAL_PREPROCESSOR_WARNING` is defined).
    Fails,
}

/// [`CcclMsvcPreprocessor`] for a CUDA release. Read from
/// `include/cccl/cuda/std/__cccl/preprocessor.h` of NVIDIA's
/// `nvidia-cuda-cccl` wheels: 12.9.27 (CCCL 2.8.2) and 13.0.85 (CCCL 3.0.1)
/// have no check, 13.1.115 (CCCL 3.1.4) a `#pragma message`, 13.2.27 and
/// 13.2.86 (CCCL 3.2.0) and 13.3.5.0.6 (CCCL 3.5.0) an `#error`. Reported
/// builds: huggingface/candle #3686 (CUDA 13.2), mistral.rs #2310 (13.3).
///
/// ```
/// use cuda_toolchain::facts::{cccl_msvc_preprocessor, CcclMsvcPreprocessor::*};
/// assert_eq!(cccl_msvc_preprocessor((13, 0)), Accepted);
/// assert_eq!(cccl_msvc_preprocessor((13, 1)), Warns);
/// assert_eq!(cccl_msvc_preprocessor((13, 4)), Fails);
/// ```
pub fn cccl_msvc_preprocessor(cuda: CudaVersion) -> CcclMsvcPreprocessor {
    match cuda {
        c if c >= (13, 2) => CcclMsvcPreprocessor::Fails,
        (13, 1) => CcclMsvcPreprocessor::Warns,
        _ => CcclMsvcPreprocessor::Accepted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> semver::Version {
        semver::Version::parse(s).unwrap()
    }

    #[test]
    fn min_driver_and_floors() {
        assert_eq!(min_driver_for_toolkit(&v("13.0.88")), Some("580.65.06"));
        assert_eq!(min_driver_for_toolkit(&v("12.2.140")), Some("535.54.03"));
        assert_eq!(min_driver_for_toolkit(&v("11.8.89")), Some("520.61.05"));
        assert_eq!(min_driver_for_toolkit(&v("12.7.0")), None);
        assert_eq!(mvc_floor(11), Some("450.80.02"));
        assert_eq!(mvc_floor(13), Some("580"));
        assert_eq!(mvc_floor(10), None);
        // Every toolkit's own minimum satisfies its major's MVC floor, except
        // 11.0/11.1 which predate MVC (11.1 introduced it; the floor is 450.80.02).
        for ((maj, min), d) in TOOLKIT_MIN_DRIVER {
            if let Some(floor) = mvc_floor(*maj) {
                if (*maj, *min) >= (11, 1) {
                    assert_ne!(
                        compare_driver_versions(d, floor),
                        Some(Ordering::Less),
                        "{maj}.{min}"
                    );
                }
            }
        }
    }

    #[test]
    fn driver_versions_compare_numerically() {
        assert_eq!(
            compare_driver_versions("535.104.05", "535.54.03"),
            Some(Ordering::Greater)
        );
        assert_eq!(
            compare_driver_versions("580", "580.65.06"),
            Some(Ordering::Less)
        );
        assert_eq!(
            compare_driver_versions("580.0", "580"),
            Some(Ordering::Equal)
        );
        assert_eq!(compare_driver_versions("abc", "580"), None);
        assert_eq!(parse_driver_version("535.104.05"), Some(vec![535, 104, 5]));
        assert_eq!(parse_driver_version(""), None);
        assert_eq!(parse_driver_version("535..1"), None);
    }

    #[test]
    fn driver_branches() {
        assert_eq!(max_cuda_for_driver("535.104.05"), Some((12, 2)));
        assert_eq!(max_cuda_for_driver("565.57.01"), Some((12, 7)));
        assert_eq!(max_cuda_for_driver("580.126.09"), Some((13, 0)));
        assert_eq!(max_cuda_for_driver("610.43.02"), Some((13, 3)));
        assert_eq!(max_cuda_for_driver("470.182.03"), Some((11, 4)));
        assert_eq!(max_cuda_for_driver("400.1"), None);
        assert_eq!(max_cuda_for_driver("not a version"), None);
        assert_eq!(min_driver_branch_for_cuda((12, 8)), Some(570));
        assert_eq!(min_driver_branch_for_cuda((12, 6)), Some(560));
        // Every branch's CUDA has a PTX ISA row, so the JIT verdict always has an answer.
        for (b, cuda) in DRIVER_BRANCH_CUDA {
            assert!(ptx_isa_for_cuda(*cuda).is_some(), "R{b}");
        }
        // Branches and CUDA versions both increase.
        for w in DRIVER_BRANCH_CUDA.windows(2) {
            assert!(w[0].0 < w[1].0 && w[0].1 < w[1].1);
        }
    }

    #[test]
    fn ptx_isa() {
        assert_eq!(ptx_isa_for_cuda((12, 8)), Some((8, 7)));
        assert_eq!(ptx_isa_for_cuda((13, 0)), Some((9, 0)));
        assert_eq!(cuda_for_ptx_isa((8, 7)), Some((12, 8)));
        assert_eq!(cuda_for_ptx_isa((8, 6)), Some((12, 7)));
        for w in CUDA_PTX_ISA.windows(2) {
            assert!(w[0].0 < w[1].0 && w[0].1 <= w[1].1);
        }
    }

    #[test]
    fn arch_spans() {
        let c = ComputeCapability::new;
        assert_eq!(arch_first_last(c(7, 0)), Some(((9, 0), Some((12, 9)))));
        assert_eq!(arch_first_last(c(9, 0)), Some(((11, 8), None)));
        assert_eq!(arch_first_last(c(10, 1)), Some(((12, 8), Some((12, 9)))));
        assert_eq!(arch_first_last(c(11, 0)), Some(((13, 0), None)));
        assert!(toolkit_supports(
            (12, 0),
            Arch::new(9, 0).with_variant(Variant::Specific)
        ));
        assert!(!toolkit_supports(
            (11, 8),
            Arch::new(9, 0).with_variant(Variant::Specific)
        ));
        assert!(!toolkit_supports(
            (12, 8),
            Arch::new(10, 0).with_variant(Variant::Family)
        ));
        assert!(!toolkit_supports(
            (13, 0),
            Arch::new(8, 9).with_variant(Variant::Family)
        ));
        let n = |v: CudaVersion| {
            archs_for_toolkit(v)
                .iter()
                .map(|c| c.number())
                .collect::<Vec<_>>()
        };
        // CMake's "all" lists (S6) per toolkit.
        assert_eq!(n((11, 0)), [35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80]);
        assert_eq!(
            n((11, 8)),
            [35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90]
        );
        assert_eq!(
            n((12, 0)),
            [50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90]
        );
        assert_eq!(
            n((12, 8)),
            [50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 120]
        );
        assert_eq!(
            n((12, 9)),
            [50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 120, 121]
        );
        assert_eq!(
            n((13, 0)),
            [75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121]
        );
        assert_eq!(
            n((13, 4)),
            [75, 80, 86, 87, 88, 89, 90, 100, 103, 107, 110, 120, 121]
        );
    }

    #[test]
    fn generations() {
        assert_eq!(
            generation("Hopper"),
            Some(&[ComputeCapability::new(9, 0)][..])
        );
        assert_eq!(generation("ampere").unwrap().len(), 2);
        assert_eq!(generation("kepler"), None);
        for name in [
            "maxwell",
            "pascal",
            "volta",
            "turing",
            "ampere",
            "ada",
            "hopper",
            "blackwell",
        ] {
            for c in generation(name).unwrap() {
                assert!(arch_span(*c).is_some(), "{name} {c}");
            }
        }
    }

    #[test]
    fn host_limits() {
        let l = host_compiler_limits((13, 0)).unwrap();
        assert_eq!(
            (l.gcc_max, l.clang_max, l.msvc),
            (15, 20, Some((1920, 1949)))
        );
        assert_eq!(host_compiler_limits((12, 6)).unwrap().gcc_max, 13);
        assert_eq!(host_compiler_limits((12, 7)), None);
    }

    #[test]
    fn products() {
        let n = |s: &str| cc_for_product(s).map(|c| c.to_string());
        let cases = [
            ("NVIDIA H100 80GB HBM3", "9.0"),
            ("NVIDIA H200", "9.0"),
            ("NVIDIA GH200 480GB", "9.0"),
            ("NVIDIA B200", "10.0"),
            ("NVIDIA GB300", "10.3"),
            ("NVIDIA A100-SXM4-40GB", "8.0"),
            ("NVIDIA A10G", "8.6"),
            ("NVIDIA A10", "8.6"),
            ("NVIDIA RTX A5000", "8.6"),
            ("NVIDIA L4", "8.9"),
            ("NVIDIA L40S", "8.9"),
            ("Tesla T4", "7.5"),
            ("Tesla V100-SXM2-16GB", "7.0"),
            ("Tesla P100-PCIE-16GB", "6.0"),
            ("Tesla K80", "3.7"),
            ("NVIDIA GeForce RTX 5060 Ti", "12.0"),
            ("NVIDIA GeForce RTX 4060 Laptop GPU", "8.9"),
            ("NVIDIA GeForce RTX 3090", "8.6"),
            ("NVIDIA GeForce RTX 2080 Ti", "7.5"),
            ("NVIDIA GeForce GTX 1660 SUPER", "7.5"),
            ("NVIDIA GeForce GTX 1080 Ti", "6.1"),
            ("NVIDIA GeForce GTX 970", "5.2"),
            ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "12.0"),
            ("NVIDIA RTX 6000 Ada Generation", "8.9"),
            ("Quadro RTX 8000", "7.5"),
            ("NVIDIA TITAN RTX", "7.5"),
            ("Orin (nvgpu)", "8.7"),
            ("NVIDIA Jetson Orin Nano", "8.7"),
        ];
        for (name, want) in cases {
            assert_eq!(n(name).as_deref(), Some(want), "{name}");
        }
        for unknown in [
            "",
            "Matrox G200",
            "NVIDIA GeForce RTX 9999",
            "AMD Radeon RX 7900 XTX",
        ] {
            assert_eq!(n(unknown), None, "{unknown}");
        }
    }
}
