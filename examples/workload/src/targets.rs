//! Which of a module's embedded targets will run on a GPU, decided before
//! loading so that a mismatch becomes a diagnosis, not a raw driver error.
//!
//! The rules (CUDA C Programming Guide, "Binary compatibility" and "PTX
//! compatibility"; cuda-facts.md §3–4):
//! - SASS `sm_XY` runs on compute capability X.Z with Z >= Y (same major);
//!   `sm_XYa` only on exactly X.Y; `sm_XYf` on the same family (X.Z, Z >= Y).
//! - PTX `compute_XY` is JIT-compiled by the driver for any CC >= X.Y (`a`:
//!   exactly X.Y; `f`: the family), provided the driver's JIT accepts the
//!   PTX ISA version, i.e. the driver supports a CUDA at least as new as
//!   the toolkit that wrote the PTX.
//! - SASS built by toolkit major N needs a driver for CUDA N.x or newer
//!   (minor-version compatibility covers newer minors of the same major).

use cuda_toolchain::arch::{Arch, ComputeCapability, Variant};
use cuda_toolchain::facts;
use serde::Serialize;

/// How one embedded target fares on the device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fit {
    /// Machine code the GPU runs as is.
    Sass,
    /// PTX the driver will JIT-compile for this GPU at load time.
    PtxJit,
    /// Unusable here; the reason says why.
    No,
}

/// One target's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TargetFit {
    /// As embedded, e.g. `sm_90` or `compute_90`.
    pub target: String,
    /// Verdict.
    pub fit: Fit,
    /// Why, in a few words.
    pub reason: String,
}

/// The module against one device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModuleFit {
    /// Every embedded target, in the module's order.
    pub targets: Vec<TargetFit>,
    /// What the driver will use: the best SASS, else the PTX it JITs.
    pub chosen: Option<String>,
    /// When nothing is usable: `no-kernel-image-for-device`,
    /// `ptx-too-new-for-driver` or `driver-too-old` (diagnosis codes).
    pub problem: Option<&'static str>,
}

/// Decides, for a module's `archs` (as the generated module lists them),
/// what a device of compute capability `cc` will run. `driver_cuda` is the
/// driver's CUDA version (`cuDriverGetVersion`), `toolkit` the CUDA that
/// built the module; either may be unknown.
pub fn check(
    archs: &[&str],
    cc: ComputeCapability,
    driver_cuda: Option<(u32, u32)>,
    toolkit: Option<(u32, u32)>,
) -> ModuleFit {
    let mut targets = Vec::new();
    let mut best_sass: Option<Arch> = None;
    let mut best_ptx: Option<Arch> = None;
    let mut ptx_blocked_by_isa = false;
    let mut sass_blocked_by_driver = false;
    for &name in archs {
        let (is_sass, arch) = match parse_target(name) {
            Some(t) => t,
            None => {
                targets.push(TargetFit {
                    target: name.to_string(),
                    fit: Fit::No,
                    reason: "not a target name this tool understands".into(),
                });
                continue;
            }
        };
        let (fit, reason) = if is_sass {
            if !sass_runs_on(arch, cc) {
                (Fit::No, sass_mismatch_reason(arch, cc))
            } else if let Some(why) = driver_too_old_for_sass(driver_cuda, toolkit) {
                sass_blocked_by_driver = true;
                (Fit::No, why)
            } else {
                if best_sass.is_none_or(|b| arch.cc > b.cc) {
                    best_sass = Some(arch);
                }
                (Fit::Sass, format!("machine code for CC {}", cc))
            }
        } else if !ptx_jits_on(arch, cc) {
            (Fit::No, ptx_mismatch_reason(arch, cc))
        } else if let Some(why) = ptx_too_new(driver_cuda, toolkit) {
            ptx_blocked_by_isa = true;
            (Fit::No, why)
        } else {
            if best_ptx.is_none_or(|b| arch.cc > b.cc) {
                best_ptx = Some(arch);
            }
            (
                Fit::PtxJit,
                format!("the driver JIT-compiles it for CC {cc}"),
            )
        };
        targets.push(TargetFit {
            target: name.to_string(),
            fit,
            reason,
        });
    }
    let chosen = best_sass
        .map(|a| a.sm_name())
        .or_else(|| best_ptx.map(|a| format!("{} (JIT)", a.compute_name())));
    let problem = match chosen {
        Some(_) => None,
        None if ptx_blocked_by_isa => Some("ptx-too-new-for-driver"),
        None if sass_blocked_by_driver => Some("driver-too-old"),
        None => Some("no-kernel-image-for-device"),
    };
    ModuleFit {
        targets,
        chosen,
        problem,
    }
}

/// `sm_90a` → (true, 90a); `compute_90` → (false, 90).
fn parse_target(name: &str) -> Option<(bool, Arch)> {
    let (is_sass, rest) = if let Some(r) = name.strip_prefix("sm_") {
        (true, r)
    } else if let Some(r) = name.strip_prefix("compute_") {
        (false, r)
    } else {
        return None;
    };
    Arch::parse(rest).ok().map(|a| (is_sass, a))
}

fn sass_runs_on(arch: Arch, cc: ComputeCapability) -> bool {
    arch.sass_runs_on(cc)
}

fn ptx_jits_on(arch: Arch, cc: ComputeCapability) -> bool {
    arch.ptx_jits_on(cc)
}

fn sass_mismatch_reason(arch: Arch, cc: ComputeCapability) -> String {
    match arch.variant {
        Variant::Specific => format!("arch-specific SASS runs only on CC {}", arch.cc),
        _ if arch.cc.major != cc.major => format!(
            "SASS for CC {}.x does not run on CC {cc} (another major)",
            arch.cc.major
        ),
        _ => format!(
            "SASS for CC {} needs CC {} or a newer {}.x",
            arch.cc, arch.cc, arch.cc.major
        ),
    }
}

fn ptx_mismatch_reason(arch: Arch, cc: ComputeCapability) -> String {
    match arch.variant {
        Variant::Specific => format!("arch-specific PTX JITs only for CC {}", arch.cc),
        Variant::Family => format!(
            "family PTX JITs only for CC {}.x >= {}",
            arch.cc.major, arch.cc
        ),
        Variant::Plain => format!("PTX for CC {} cannot target the older CC {cc}", arch.cc),
    }
}

fn ptx_too_new(driver: Option<(u32, u32)>, toolkit: Option<(u32, u32)>) -> Option<String> {
    let (driver, toolkit) = (driver?, toolkit?);
    let older = match (
        facts::ptx_isa_for_cuda(driver),
        facts::ptx_isa_for_cuda(toolkit),
    ) {
        (Some(d), Some(t)) => d < t,
        // A CUDA the table does not know: compare releases instead.
        _ => driver < toolkit,
    };
    older.then(|| {
        format!(
            "PTX from CUDA {}.{} is newer than this driver's JIT (CUDA {}.{})",
            toolkit.0, toolkit.1, driver.0, driver.1
        )
    })
}

fn driver_too_old_for_sass(
    driver: Option<(u32, u32)>,
    toolkit: Option<(u32, u32)>,
) -> Option<String> {
    let (driver, toolkit) = (driver?, toolkit?);
    (driver.0 < toolkit.0).then(|| {
        format!(
            "built by CUDA {}.{}; this driver supports only CUDA {}.{}",
            toolkit.0, toolkit.1, driver.0, driver.1
        )
    })
}

/// `"13.0.88"` → (13, 0).
pub fn cuda_of_version(v: &str) -> Option<(u32, u32)> {
    let mut it = v.trim().split('.');
    let major = it.next()?.parse().ok()?;
    let minor = it.next().unwrap_or("0").parse().ok()?;
    Some((major, minor))
}

/// `cuDriverGetVersion`'s 13000 → (13, 0).
pub fn cuda_of_driver_int(v: i32) -> Option<(u32, u32)> {
    (v > 0).then_some(((v / 1000) as u32, ((v % 1000) / 10) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CC90: ComputeCapability = ComputeCapability::new(9, 0);
    const MODULE: &[&str] = &["sm_80", "sm_90", "compute_90"];

    #[test]
    fn h200_runs_sm90_sass() {
        let fit = check(MODULE, CC90, Some((13, 0)), Some((13, 0)));
        assert_eq!(fit.chosen.as_deref(), Some("sm_90"));
        assert_eq!(fit.problem, None);
        let kinds: Vec<_> = fit.targets.iter().map(|t| t.fit.clone()).collect();
        assert_eq!(kinds, [Fit::No, Fit::Sass, Fit::PtxJit]);
        assert!(
            fit.targets[0].reason.contains("another major"),
            "{:?}",
            fit.targets[0]
        );
    }

    #[test]
    fn a100_and_rtx30_take_sm80_sass_within_the_major() {
        for cc in [
            ComputeCapability::new(8, 0),
            ComputeCapability::new(8, 6),
            ComputeCapability::new(8, 9),
        ] {
            let fit = check(MODULE, cc, Some((13, 0)), Some((13, 0)));
            assert_eq!(fit.chosen.as_deref(), Some("sm_80"), "{cc}");
        }
        // sm_86 SASS does not run on 8.0.
        let fit = check(&["sm_86"], ComputeCapability::new(8, 0), None, None);
        assert_eq!(fit.problem, Some("no-kernel-image-for-device"));
    }

    #[test]
    fn newer_gpu_jits_the_ptx() {
        let b200 = ComputeCapability::new(10, 0);
        let fit = check(MODULE, b200, Some((13, 0)), Some((13, 0)));
        assert_eq!(fit.chosen.as_deref(), Some("compute_90 (JIT)"));
        assert_eq!(fit.targets[2].fit, Fit::PtxJit);
    }

    #[test]
    fn ptx_too_new_for_the_driver() {
        // CUDA 13.0 PTX (ISA 9.0) on a CUDA 12.8 driver (ISA 8.7), on a GPU
        // only the PTX could serve.
        let fit = check(
            MODULE,
            ComputeCapability::new(12, 0),
            Some((12, 8)),
            Some((13, 0)),
        );
        assert_eq!(fit.problem, Some("ptx-too-new-for-driver"));
        assert!(
            fit.targets[2].reason.contains("CUDA 13.0"),
            "{:?}",
            fit.targets[2]
        );
    }

    #[test]
    fn turing_only_module_on_hopper_has_no_image() {
        let fit = check(&["sm_75"], CC90, Some((13, 0)), Some((13, 0)));
        assert_eq!(fit.problem, Some("no-kernel-image-for-device"));
        assert_eq!(fit.chosen, None);
        // ... and runs on Turing itself.
        let t4 = check(
            &["sm_75"],
            ComputeCapability::new(7, 5),
            Some((13, 0)),
            Some((13, 0)),
        );
        assert_eq!(t4.chosen.as_deref(), Some("sm_75"));
    }

    #[test]
    fn arch_specific_and_family_targets() {
        assert_eq!(
            check(&["sm_90a"], CC90, None, None).chosen.as_deref(),
            Some("sm_90a")
        );
        let cc100 = ComputeCapability::new(10, 0);
        let cc103 = ComputeCapability::new(10, 3);
        assert_eq!(
            check(&["sm_90a", "compute_90a"], cc100, None, None).problem,
            Some("no-kernel-image-for-device")
        );
        assert_eq!(
            check(&["sm_100f"], cc103, None, None).chosen.as_deref(),
            Some("sm_100f")
        );
        assert_eq!(
            check(&["sm_103f"], cc100, None, None).problem,
            Some("no-kernel-image-for-device")
        );
    }

    #[test]
    fn old_driver_cannot_load_new_major_sass() {
        let fit = check(&["sm_90"], CC90, Some((12, 4)), Some((13, 0)));
        assert_eq!(fit.problem, Some("driver-too-old"));
        // Minor-version compatibility: 13.2-built SASS on a 13.0 driver runs.
        assert_eq!(
            check(&["sm_90"], CC90, Some((13, 0)), Some((13, 2))).problem,
            None
        );
    }

    #[test]
    fn unknown_versions_do_not_block() {
        let fit = check(MODULE, CC90, None, None);
        assert_eq!(fit.chosen.as_deref(), Some("sm_90"));
        let garbage = check(&["bogus"], CC90, None, None);
        assert_eq!(garbage.problem, Some("no-kernel-image-for-device"));
    }

    #[test]
    fn versions_parse() {
        assert_eq!(cuda_of_version("13.0.88"), Some((13, 0)));
        assert_eq!(cuda_of_version("12"), Some((12, 0)));
        assert_eq!(cuda_of_version("x"), None);
        assert_eq!(cuda_of_driver_int(13000), Some((13, 0)));
        assert_eq!(cuda_of_driver_int(12080), Some((12, 8)));
        assert_eq!(cuda_of_driver_int(0), None);
    }
}
