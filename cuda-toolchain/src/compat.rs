//! Verdicts computed from the facts: can this driver run this toolkit's SASS,
//! JIT its PTX; is this host compiler within nvcc's limits. Each verdict says
//! why, with the numbers, and how to fix it.
//!
//! ```
//! use cuda_toolchain::compat::{driver_jits_ptx, Status};
//! use cuda_toolchain::probe::{DriverInfo, ProbeMethod};
//! let driver = DriverInfo { version: Some("535.104.05".into()), cuda_version: Some((12, 2)), found_via: ProbeMethod::NvidiaSmi };
//! let v = driver_jits_ptx(&driver, (8, 7));
//! assert_eq!(v.status, Status::Fail);
//! assert!(v.reason.contains("JITs PTX up to ISA 8.2; this PTX is 8.7"));
//! assert!(v.fix.unwrap().contains(">= 570"));
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::arch::ComputeCapability;
use crate::facts::{self, CudaVersion};
use crate::probe::DriverInfo;
use crate::Error;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Works.
    Pass,
    /// Works with a caveat, or could not be decided.
    Warn,
    /// Will fail.
    Fail,
}

/// A verdict: the outcome, why, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Verdict {
    /// The outcome.
    pub status: Status,
    /// Why, with the numbers that decided it.
    pub reason: String,
    /// What to do about it (for `Warn`/`Fail`).
    pub fix: Option<String>,
}

impl Verdict {
    pub(crate) fn pass(reason: impl Into<String>) -> Verdict {
        Verdict {
            status: Status::Pass,
            reason: reason.into(),
            fix: None,
        }
    }

    pub(crate) fn warn(reason: impl Into<String>, fix: Option<String>) -> Verdict {
        Verdict {
            status: Status::Warn,
            reason: reason.into(),
            fix,
        }
    }

    pub(crate) fn fail(reason: impl Into<String>, fix: impl Into<String>) -> Verdict {
        Verdict {
            status: Status::Fail,
            reason: reason.into(),
            fix: Some(fix.into()),
        }
    }
}

fn ver((a, b): (u32, u32)) -> String {
    format!("{a}.{b}")
}

/// The driver's version for messages (`driver 535.104.05`, or `the driver`).
fn driver_label(driver: &DriverInfo) -> String {
    match &driver.version {
        Some(v) => format!("driver {v}"),
        None => "the driver".to_string(),
    }
}

/// Highest CUDA the driver supports: what it reported, else from its branch.
pub fn driver_cuda(driver: &DriverInfo) -> Option<CudaVersion> {
    driver.cuda_version.or_else(|| {
        driver
            .version
            .as_deref()
            .and_then(facts::max_cuda_for_driver)
    })
}

/// Does this driver run SASS (cubins) built by this toolkit?
///
/// Yes when it supports the toolkit's CUDA version, and within one major
/// through minor-version compatibility (CUDA 11.1+) when the driver is at
/// least the major's floor (450.80.02, 525.60.13, 580). Never across majors.
pub fn driver_runs_sass(driver: &DriverInfo, toolkit: &semver::Version) -> Verdict {
    let tk = (toolkit.major as u32, toolkit.minor as u32);
    let label = driver_label(driver);
    let tk_min = facts::min_driver_for_toolkit(toolkit);
    let need = tk_min.map(|d| format!(">= {d}")).unwrap_or_else(|| {
        facts::min_driver_branch_for_cuda(tk).map_or("a newer driver".into(), |b| format!(">= {b}"))
    });
    let Some(dc) = driver_cuda(driver) else {
        return Verdict::warn(
            format!(
                "{label} did not say which CUDA version it supports, so CUDA {} cannot be checked",
                ver(tk)
            ),
            Some(format!(
                "CUDA {} needs driver {need}; check `nvidia-smi`",
                ver(tk)
            )),
        );
    };
    if dc >= tk {
        return Verdict::pass(format!(
            "{label} supports CUDA {} and runs code from CUDA {}",
            ver(dc),
            ver(tk)
        ));
    }
    if dc.0 < tk.0 {
        return Verdict::fail(
            format!(
                "{label} supports CUDA {} at most; CUDA {} needs driver {need} (minor-version compatibility does not cross major versions)",
                ver(dc),
                ver(tk)
            ),
            format!(
                "upgrade the driver to {need}, or build with a CUDA {}.x toolkit (this driver runs them; {} or older also lets it JIT their PTX)",
                dc.0,
                ver(dc)
            ),
        );
    }
    // Same major, older minor: minor-version compatibility (CUDA 11.1+).
    let floor = facts::mvc_floor(tk.0).filter(|_| tk >= (11, 1));
    let Some(floor) = floor else {
        return Verdict::fail(
            format!(
                "{label} supports CUDA {}; CUDA {} needs driver {need} (CUDA {}.x has no minor-version compatibility)",
                ver(dc),
                ver(tk),
                tk.0
            ),
            format!("upgrade the driver to {need}, or build with CUDA {}", ver(dc)),
        );
    };
    let caveat = format!(
        "runtime APIs added after CUDA {} fail with cudaErrorCallRequiresNewerDriver (36), and PTX from CUDA {} cannot be JIT-compiled by this driver",
        ver(dc),
        ver(tk)
    );
    match driver
        .version
        .as_deref()
        .and_then(|v| facts::compare_driver_versions(v, floor))
    {
        Some(std::cmp::Ordering::Less) => Verdict::fail(
            format!(
                "{label} supports CUDA {}, and is below the CUDA {}.x minor-version-compatibility floor {floor}, so it cannot run code from CUDA {}",
                ver(dc),
                tk.0,
                ver(tk)
            ),
            format!("upgrade the driver to >= {floor} (or {need} for full CUDA {} support)", ver(tk)),
        ),
        Some(_) => Verdict::pass(format!(
            "{label} supports CUDA {}; SASS from CUDA {} runs on it through minor-version compatibility (driver >= {floor} for CUDA {}.x). Caveat: {caveat}",
            ver(dc),
            ver(tk),
            tk.0
        )),
        None => Verdict::warn(
            format!(
                "{label} supports CUDA {}; SASS from CUDA {} runs through minor-version compatibility if the driver is >= {floor}, which could not be checked",
                ver(dc),
                ver(tk)
            ),
            Some(format!("make sure the driver is >= {floor}; {need} removes every caveat")),
        ),
    }
}

/// Can this driver JIT-compile PTX of this ISA version (what `.version` says)?
///
/// The driver's JIT accepts PTX up to the ISA of its own CUDA version; newer
/// PTX fails to load with `CUDA_ERROR_UNSUPPORTED_PTX_VERSION` (222).
pub fn driver_jits_ptx(driver: &DriverInfo, ptx_isa: (u32, u32)) -> Verdict {
    driver_jits_ptx_on(driver, ptx_isa, None)
}

/// [`driver_jits_ptx`], naming the GPU's arch in the fix when it is known.
pub fn driver_jits_ptx_on(
    driver: &DriverInfo,
    ptx_isa: (u32, u32),
    gpu: Option<ComputeCapability>,
) -> Verdict {
    let label = driver_label(driver);
    let ptx_cuda = facts::cuda_for_ptx_isa(ptx_isa);
    let ptx_from = ptx_cuda
        .map(|c| format!(" (CUDA {})", ver(c)))
        .unwrap_or_default();
    let Some(dc) = driver_cuda(driver) else {
        return Verdict::warn(
            format!("{label} did not say which CUDA version it supports, so PTX ISA {} cannot be checked", ver(ptx_isa)),
            None,
        );
    };
    let Some(max_isa) = facts::ptx_isa_for_cuda(dc) else {
        return Verdict::warn(
            format!(
                "{label} supports CUDA {}, whose PTX ISA is not in the facts table",
                ver(dc)
            ),
            None,
        );
    };
    let head = format!(
        "{label} supports CUDA {} and JITs PTX up to ISA {}; this PTX is {}{ptx_from}",
        ver(dc),
        ver(max_isa),
        ver(ptx_isa)
    );
    if ptx_isa <= max_isa {
        return Verdict::pass(head);
    }
    let sass = match gpu {
        Some(cc) => format!(
            "build SASS for sm_{} (add {} to CUDA_ARCHS) so the driver need not JIT",
            cc.number(),
            cc.number()
        ),
        None => "build SASS for the GPU's arch (add it to CUDA_ARCHS, e.g. CUDA_ARCHS=89) so the driver need not JIT".to_string(),
    };
    let upgrade = match ptx_cuda.and_then(facts::min_driver_branch_for_cuda) {
        Some(b) => format!("upgrade the driver to >= {b}"),
        None => "upgrade the driver".to_string(),
    };
    let older = facts::CUDA_PTX_ISA
        .iter()
        .filter(|(c, isa)| {
            *isa <= max_isa
                && facts::min_driver_for_toolkit(&semver::Version::new(c.0 as u64, c.1 as u64, 0))
                    .is_some()
        })
        .map(|(c, _)| *c)
        .max()
        .map(|c| format!(", or build with CUDA {} or older", ver(c)))
        .unwrap_or_default();
    Verdict::fail(
        format!("{head}: loading it fails with CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222)"),
        format!("{sass}, or {upgrade}{older}"),
    )
}

/// The kind of host compiler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostCompilerKind {
    /// GNU gcc/g++.
    Gcc,
    /// LLVM clang/clang++.
    Clang,
    /// Microsoft cl.exe.
    Msvc,
}

/// The host C++ compiler nvcc will use.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HostCompiler {
    /// Which compiler.
    pub kind: HostCompilerKind,
    /// Its version (for MSVC, cl.exe's `19.38.33130`).
    pub version: semver::Version,
    /// The executable.
    pub path: PathBuf,
}

impl HostCompiler {
    fn describe(&self) -> String {
        let name = match self.kind {
            HostCompilerKind::Gcc => "gcc",
            HostCompilerKind::Clang => "clang",
            HostCompilerKind::Msvc => "MSVC cl.exe",
        };
        format!("{name} {} ({})", self.version, self.path.display())
    }
}

/// Runs this compiler (`--version`, and gcc's `-dumpfullversion`) to learn
/// its kind and real version, e.g. for the one `cc` chose.
pub fn identify_host_compiler(path: &Path, timeout: Duration) -> Result<HostCompiler, Error> {
    identify(path, timeout)
}

/// Runs the compiler to learn its kind and version.
fn identify(path: &Path, timeout: Duration) -> Result<HostCompiler, Error> {
    let run_err = |e: crate::process::RunError| {
        Error::new(
            "host-compiler-not-found",
            format!(
                "the host compiler `{}` could not be run: {e}",
                path.display()
            ),
        )
    };
    let out = crate::process::run(path, ["--version"], timeout).map_err(run_err)?;
    let text = out.combined();
    let (kind, version) = parse_compiler_version(&text).ok_or_else(|| {
        Error::new(
            "host-compiler-unsupported",
            format!(
                "`{} --version` did not identify gcc, clang or MSVC",
                path.display()
            ),
        )
        .with_detail(text.lines().take(3).collect::<Vec<_>>().join("\n"))
        .with_help("set NVCC_CCBIN to gcc/g++ or clang++")
    })?;
    // gcc's --version line carries distro text; -dumpfullversion is exact.
    let version = if kind == HostCompilerKind::Gcc {
        crate::process::run(path, ["-dumpfullversion"], timeout)
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| lenient_version(o.stdout.trim()))
            .unwrap_or(version)
    } else {
        version
    };
    Ok(HostCompiler {
        kind,
        version,
        path: path.to_path_buf(),
    })
}

/// Identifies a compiler from its `--version` (or cl.exe banner) output.
///
/// ```
/// use cuda_toolchain::compat::{parse_compiler_version, HostCompilerKind};
/// let (k, v) = parse_compiler_version("c++ (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright (C) 2022 Free Software Foundation, Inc.").unwrap();
/// assert_eq!((k, v.to_string()), (HostCompilerKind::Gcc, "12.2.0".to_string()));
/// ```
pub fn parse_compiler_version(text: &str) -> Option<(HostCompilerKind, semver::Version)> {
    let first = text.lines().find(|l| !l.trim().is_empty())?;
    if let Some(pos) = text.find("clang version ") {
        let rest = &text[pos + "clang version ".len()..];
        return Some((
            HostCompilerKind::Clang,
            lenient_version(rest.split_whitespace().next()?)?,
        ));
    }
    if text.contains("Microsoft") && text.contains("Compiler Version") {
        let rest = &text[text.find("Compiler Version ")? + "Compiler Version ".len()..];
        return Some((
            HostCompilerKind::Msvc,
            lenient_version(rest.split_whitespace().next()?)?,
        ));
    }
    if text.contains("Free Software Foundation")
        || first.starts_with("gcc")
        || first.starts_with("g++")
    {
        // `g++ (Ubuntu 13.2.0-23ubuntu4) 13.2.0`: the version is the last token.
        return Some((
            HostCompilerKind::Gcc,
            lenient_version(first.split_whitespace().last()?)?,
        ));
    }
    None
}

/// `13.2.0`, `13.2`, `13`, `18.1.3-1ubuntu1` → a semver version.
fn lenient_version(s: &str) -> Option<semver::Version> {
    let core: String = s
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let mut parts = core
        .split('.')
        .filter(|p| !p.is_empty())
        .map(|p| p.parse::<u64>().ok());
    let major = parts.next()??;
    let minor = parts.next().flatten().unwrap_or(0);
    let patch = parts.next().flatten().unwrap_or(0);
    Some(semver::Version::new(major, minor, patch))
}

/// Is this host compiler within this nvcc's `host_config.h` limits?
pub fn host_compiler_ok(hc: &HostCompiler, toolkit: &semver::Version) -> Verdict {
    let tk = (toolkit.major as u32, toolkit.minor as u32);
    let who = hc.describe();
    let (limits, row) = match facts::host_compiler_limits(tk) {
        Some(l) => (l, tk),
        None => {
            // Newest known row at or below this release, as a hint.
            let Some((row, l)) = facts::HOST_LIMITS
                .iter()
                .filter(|(v, _)| *v <= tk)
                .max_by_key(|(v, _)| *v)
                .copied()
            else {
                return Verdict::warn(
                    format!("no host-compiler limits are known for CUDA {}", ver(tk)),
                    None,
                );
            };
            (l, row)
        }
    };
    let exact = row == tk;
    let major = hc.version.major as u32;
    let override_note = "(`-allow-unsupported-compiler` skips nvcc's check at your own risk)";
    let newer_toolkit = |ok: &dyn Fn(&facts::HostLimits) -> bool| {
        facts::HOST_LIMITS
            .iter()
            .find(|(v, l)| *v > tk && ok(l))
            .map(|(v, _)| format!(", or use CUDA {} or newer", ver(*v)))
            .unwrap_or_default()
    };
    let verdict = match hc.kind {
        HostCompilerKind::Gcc => {
            let min = if tk >= (11, 4) { 6 } else { 0 }; // S5, S16
            if major > limits.gcc_max {
                Verdict::fail(
                    format!("{who} is newer than CUDA {} allows (gcc <= {}): nvcc stops with `unsupported GNU version! gcc versions later than {} are not supported!`", ver(row), limits.gcc_max, limits.gcc_max),
                    format!("install gcc {} and set NVCC_CCBIN=g++-{}{} {override_note}", limits.gcc_max, limits.gcc_max, newer_toolkit(&|l| l.gcc_max >= major)),
                )
            } else if major < min {
                Verdict::fail(
                    format!(
                        "{who} is older than CUDA {} supports (gcc >= {min})",
                        ver(tk)
                    ),
                    format!("install gcc {min} to {} and set NVCC_CCBIN", limits.gcc_max),
                )
            } else {
                Verdict::pass(format!(
                    "{who} is within CUDA {}'s limit (gcc <= {})",
                    ver(row),
                    limits.gcc_max
                ))
            }
        }
        HostCompilerKind::Clang => {
            let min = if tk >= (12, 2) { 7 } else { 4 }; // S5: clang 3.3+ (7+ from 12.2)
            if major > limits.clang_max {
                Verdict::fail(
                    format!("{who} is newer than CUDA {} allows (clang <= {}): nvcc stops with `unsupported clang version! clang version must be less than {}`", ver(row), limits.clang_max, limits.clang_max + 1),
                    format!("install clang {} and set NVCC_CCBIN=clang++-{}{} {override_note}", limits.clang_max, limits.clang_max, newer_toolkit(&|l| l.clang_max >= major)),
                )
            } else if major < min {
                Verdict::fail(
                    format!(
                        "{who} is older than CUDA {} supports (clang >= {min})",
                        ver(tk)
                    ),
                    format!(
                        "install clang {min} to {} and set NVCC_CCBIN",
                        limits.clang_max
                    ),
                )
            } else {
                Verdict::pass(format!(
                    "{who} is within CUDA {}'s limit (clang <= {})",
                    ver(row),
                    limits.clang_max
                ))
            }
        }
        HostCompilerKind::Msvc => {
            let msc_ver = (hc.version.major * 100 + hc.version.minor) as u32;
            match limits.msvc {
                Some((lo, hi)) if msc_ver < lo || msc_ver > hi => Verdict::fail(
                    format!(
                        "{who} (_MSC_VER {msc_ver}) is outside CUDA {}'s range {lo}..={hi}",
                        ver(row)
                    ),
                    format!("use a Visual Studio whose _MSC_VER is in {lo}..={hi} {override_note}"),
                ),
                Some((lo, hi)) => Verdict::pass(format!(
                    "{who} (_MSC_VER {msc_ver}) is within CUDA {}'s range {lo}..={hi}",
                    ver(row)
                )),
                None => Verdict::warn(
                    format!(
                        "the MSVC range of CUDA {} is not in the facts table; {who} is not checked",
                        ver(tk)
                    ),
                    None,
                ),
            }
        }
    };
    if !exact && verdict.status == Status::Pass {
        return Verdict::warn(
            format!(
                "{} (CUDA {} is not in the table; checked against CUDA {}'s limits)",
                verdict.reason,
                ver(tk),
                ver(row)
            ),
            None,
        );
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::ProbeMethod;

    fn drv(version: &str, cuda: Option<(u32, u32)>) -> DriverInfo {
        DriverInfo {
            version: Some(version.into()),
            cuda_version: cuda,
            found_via: ProbeMethod::NvidiaSmi,
        }
    }

    fn v(s: &str) -> semver::Version {
        semver::Version::parse(s).unwrap()
    }

    #[test]
    fn sass_same_or_newer_driver() {
        let r = driver_runs_sass(&drv("580.65.06", Some((13, 0))), &v("13.0.88"));
        assert_eq!(r.status, Status::Pass, "{r:?}");
        let r = driver_runs_sass(&drv("610.43.02", None), &v("11.8.89"));
        assert_eq!(r.status, Status::Pass, "{r:?}");
        assert!(r.reason.contains("supports CUDA 13.3"), "{r:?}");
    }

    #[test]
    fn sass_minor_version_compat() {
        let r = driver_runs_sass(&drv("535.104.05", Some((12, 2))), &v("12.8.93"));
        assert_eq!(r.status, Status::Pass, "{r:?}");
        assert!(
            r.reason
                .contains("minor-version compatibility (driver >= 525.60.13"),
            "{r:?}"
        );
        let r = driver_runs_sass(&drv("450.51.06", None), &v("11.4.48"));
        assert_eq!(r.status, Status::Fail, "{r:?}");
        assert!(r.fix.as_deref().unwrap().contains(">= 450.80.02"), "{r:?}");
        // 10.x has no MVC.
        let r = driver_runs_sass(&drv("418.87.01", None), &v("10.2.89"));
        assert_eq!(r.status, Status::Fail, "{r:?}");
        assert!(r.reason.contains("needs driver >= 440.33"), "{r:?}");
    }

    #[test]
    fn sass_across_majors_fails() {
        let r = driver_runs_sass(&drv("575.57.08", Some((12, 9))), &v("13.0.88"));
        assert_eq!(r.status, Status::Fail);
        assert!(
            r.reason.contains(
                "driver 575.57.08 supports CUDA 12.9 at most; CUDA 13.0 needs driver >= 580.65.06"
            ),
            "{r:?}"
        );
        assert!(r.fix.unwrap().contains("CUDA 12.x toolkit"));
        let unknown = DriverInfo {
            version: None,
            cuda_version: None,
            found_via: ProbeMethod::ProcFs,
        };
        assert_eq!(
            driver_runs_sass(&unknown, &v("13.0.0")).status,
            Status::Warn
        );
    }

    #[test]
    fn ptx_jit() {
        let d = drv("535.104.05", Some((12, 2)));
        let r = driver_jits_ptx_on(&d, (8, 7), Some(ComputeCapability::new(8, 9)));
        assert_eq!(r.status, Status::Fail);
        assert_eq!(
            r.reason,
            "driver 535.104.05 supports CUDA 12.2 and JITs PTX up to ISA 8.2; this PTX is 8.7 (CUDA 12.8): loading it fails with CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222)"
        );
        assert_eq!(
            r.fix.as_deref(),
            Some("build SASS for sm_89 (add 89 to CUDA_ARCHS) so the driver need not JIT, or upgrade the driver to >= 570, or build with CUDA 12.2 or older")
        );
        assert_eq!(driver_jits_ptx(&d, (8, 2)).status, Status::Pass);
        // S26: a CUDA 13.2 build on 580.126.09 fails; 13.0's PTX loads.
        let d = drv("580.126.09", None);
        assert_eq!(driver_jits_ptx(&d, (9, 2)).status, Status::Fail);
        assert_eq!(driver_jits_ptx(&d, (9, 0)).status, Status::Pass);
        // R565 reports 12.7 and JITs 8.6.
        assert_eq!(
            driver_jits_ptx(&drv("565.57.01", Some((12, 7))), (8, 6)).status,
            Status::Pass
        );
    }

    #[test]
    fn compiler_versions() {
        let p = |s: &str| parse_compiler_version(s).map(|(k, v)| (k, v.to_string()));
        assert_eq!(
            p("g++ (Ubuntu 13.2.0-23ubuntu4) 13.2.0\n"),
            Some((HostCompilerKind::Gcc, "13.2.0".into()))
        );
        assert_eq!(
            p("Ubuntu clang version 18.1.3 (1ubuntu1)\nTarget: x86_64-pc-linux-gnu"),
            Some((HostCompilerKind::Clang, "18.1.3".into()))
        );
        assert_eq!(
            p("Apple clang version 15.0.0 (clang-1500.3.9.4)"),
            Some((HostCompilerKind::Clang, "15.0.0".into()))
        );
        assert_eq!(
            p("Microsoft (R) C/C++ Optimizing Compiler Version 19.38.33130 for x64\nCopyright (C) Microsoft Corporation."),
            Some((HostCompilerKind::Msvc, "19.38.33130".into()))
        );
        assert_eq!(p("icx (ICX) 2024.0.0"), None);
        assert_eq!(p(""), None);
    }

    fn hc(kind: HostCompilerKind, version: &str) -> HostCompiler {
        HostCompiler {
            kind,
            version: v(version),
            path: "/usr/bin/cc".into(),
        }
    }

    #[test]
    fn host_limits() {
        let r = host_compiler_ok(&hc(HostCompilerKind::Gcc, "16.1.0"), &v("13.0.88"));
        assert_eq!(r.status, Status::Fail);
        assert!(
            r.reason
                .contains("gcc versions later than 15 are not supported"),
            "{r:?}"
        );
        assert!(
            r.fix.as_deref().unwrap().contains("NVCC_CCBIN=g++-15"),
            "{r:?}"
        );
        assert_eq!(
            host_compiler_ok(&hc(HostCompilerKind::Gcc, "15.2.0"), &v("13.0.88")).status,
            Status::Pass
        );
        let r = host_compiler_ok(&hc(HostCompilerKind::Gcc, "14.1.0"), &v("12.6.77"));
        assert_eq!(r.status, Status::Fail);
        assert!(
            r.fix
                .as_deref()
                .unwrap()
                .contains("or use CUDA 12.8 or newer"),
            "{r:?}"
        );
        assert_eq!(
            host_compiler_ok(&hc(HostCompilerKind::Clang, "21.0.0"), &v("13.0.88")).status,
            Status::Fail
        );
        assert_eq!(
            host_compiler_ok(&hc(HostCompilerKind::Clang, "20.1.0"), &v("13.0.88")).status,
            Status::Pass
        );
        assert_eq!(
            host_compiler_ok(&hc(HostCompilerKind::Msvc, "19.16.0"), &v("13.0.88")).status,
            Status::Fail
        );
        assert_eq!(
            host_compiler_ok(&hc(HostCompilerKind::Msvc, "19.38.33130"), &v("13.0.88")).status,
            Status::Pass
        );
        // An unknown future release is checked against the newest known row, as a warning.
        let r = host_compiler_ok(&hc(HostCompilerKind::Gcc, "15.1.0"), &v("13.5.37"));
        assert_eq!(r.status, Status::Warn, "{r:?}");
        assert!(r.reason.contains("CUDA 13.3's limits"), "{r:?}");
    }

    #[cfg(unix)]
    #[test]
    fn identify_via_fake_compilers() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, body: &str| {
            use std::os::unix::fs::PermissionsExt;
            let p = dir.path().join(name);
            std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            p
        };
        write(
            "gcc",
            "case \"$1\" in -dumpfullversion) echo 16.1.0;; *) echo 'gcc (GCC) 16.1.0'; echo 'Copyright (C) 2026 Free Software Foundation, Inc.';; esac",
        );
        let clang = write(
            "clang++-19",
            "echo 'clang version 19.1.7'; echo 'Target: x86_64-unknown-linux-gnu'",
        );
        // Which compiler is chosen (NVCC_CCBIN, CXX, cc's default) is the build
        // engine's rule (cuda_build::compile::host_compiler); here: what it is.
        let t = Duration::from_secs(10);
        let found = identify_host_compiler(&dir.path().join("gcc"), t).unwrap();
        assert_eq!(
            (found.kind, found.version.to_string()),
            (HostCompilerKind::Gcc, "16.1.0".to_string())
        );
        assert_eq!(found.path, dir.path().join("gcc"));
        let found = identify_host_compiler(&clang, t).unwrap();
        assert_eq!((found.kind, found.path), (HostCompilerKind::Clang, clang));
        let e = identify_host_compiler(Path::new("/nonexistent/g++"), t).unwrap_err();
        assert_eq!(e.code, "host-compiler-not-found");
        assert!(e.message.contains("`/nonexistent/g++`"), "{e}");
        write("weird", "echo 'hello'");
        let e = identify_host_compiler(&dir.path().join("weird"), t).unwrap_err();
        assert_eq!(e.code, "host-compiler-unsupported");
    }
}
