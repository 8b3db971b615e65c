//! Reading a probe report into verdicts: one reading, used by `cargo cuda
//! doctor` and by the diagnosis engine alike.
//!
//! NVML reports its own version, which carries a CUDA prefix when read
//! through `nvmlSystemGetNVMLVersion` ("13.580.65.06"), and nvidia-smi may
//! print a shortened driver version ("580.173"). The kernel module reports the
//! driver version ("580.65.06"). The NVML check compares driver version to
//! driver version, on the components both have.

use super::ProbeReport;
use crate::facts;

/// What the probe says about NVML (the driver's user-space libraries)
/// against the loaded kernel module.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum NvmlVerdict {
    /// The libraries and the kernel module are one driver release.
    Match {
        /// The driver version they share.
        driver: String,
    },
    /// They differ: the driver was upgraded without a reboot.
    Mismatch {
        /// The libraries' driver version, when NVML could say.
        libraries: Option<String>,
        /// The kernel module's version, when known.
        kernel_module: Option<String>,
        /// NVML's own words, when it refused to start.
        message: Option<String>,
    },
    /// NVML answered but there is no kernel module version to compare with.
    Unchecked {
        /// The libraries' driver version.
        libraries: String,
    },
    /// NVML is not available here (no nvidia-smi, no libnvidia-ml).
    Unavailable,
}

/// The driver part of an NVML version: "13.580.65.06" → "580.65.06";
/// a driver version ("580.65.06", "580.173") is returned as is.
pub fn nvml_driver_version(nvml: &str) -> &str {
    let nvml = nvml.trim();
    match nvml.split_once('.') {
        Some((_, rest)) if nvml.split('.').count() > 3 => rest,
        _ => nvml,
    }
}

/// What NVML's "Driver/library version mismatch" looks like in a probe.
const NVML_MISMATCH: &str = "Driver/library version mismatch";

/// The NVML verdict of a probe report.
pub fn nvml_verdict(report: &ProbeReport) -> NvmlVerdict {
    let p = &report.platform;
    let libraries = p.nvml_version.as_deref().map(nvml_driver_version);
    let refused = report
        .attempts
        .iter()
        .find(|a| a.outcome.contains(NVML_MISMATCH))
        .map(|a| {
            a.outcome
                .lines()
                .find(|l| l.contains(NVML_MISMATCH))
                .unwrap_or(NVML_MISMATCH)
                .trim()
                .to_string()
        });
    let kernel_module = p.kernel_module_version.clone();
    if refused.is_some() {
        return NvmlVerdict::Mismatch {
            libraries: libraries.map(str::to_string),
            kernel_module,
            message: refused,
        };
    }
    match (libraries, kernel_module) {
        (None, _) => NvmlVerdict::Unavailable,
        (Some(n), None) => NvmlVerdict::Unchecked {
            libraries: n.to_string(),
        },
        (Some(n), Some(k)) => {
            // Compare only the components both have ("580.173" vs "580.173.02").
            let differ = matches!(
                (facts::parse_driver_version(&k), facts::parse_driver_version(n)),
                (Some(a), Some(b)) if a.iter().zip(&b).any(|(x, y)| x != y)
            );
            if differ {
                NvmlVerdict::Mismatch {
                    libraries: Some(n.to_string()),
                    kernel_module: Some(k),
                    message: None,
                }
            } else {
                NvmlVerdict::Match { driver: k }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::{ProbeAttempt, ProbeMethod};

    /// The shape a healthy H200 machine's probe has (tests/probe.rs has the
    /// driver-probe JSON it comes from): NVML with its CUDA prefix.
    fn healthy() -> ProbeReport {
        let mut r = ProbeReport {
            driver: None,
            gpus: vec![],
            method: Some(ProbeMethod::DriverApi),
            attempts: vec![],
            platform: Default::default(),
        };
        r.platform.kernel_module_version = Some("580.65.06".into());
        r.platform.nvml_version = Some("13.580.65.06".into());
        r
    }

    #[test]
    fn a_healthy_report_matches() {
        assert_eq!(
            nvml_verdict(&healthy()),
            NvmlVerdict::Match {
                driver: "580.65.06".into()
            }
        );
        // nvidia-smi's shortened version against the full one.
        let mut r = healthy();
        r.platform.nvml_version = Some("580.65".into());
        assert!(matches!(nvml_verdict(&r), NvmlVerdict::Match { .. }));
    }

    #[test]
    fn a_real_mismatch_fails() {
        let mut r = healthy();
        r.platform.kernel_module_version = Some("575.57.08".into());
        r.platform.nvml_version = Some("580.65.06".into());
        assert_eq!(
            nvml_verdict(&r),
            NvmlVerdict::Mismatch {
                libraries: Some("580.65.06".into()),
                kernel_module: Some("575.57.08".into()),
                message: None
            }
        );
        let mut r = healthy();
        r.platform.kernel_module_version = Some("575.57.08".into());
        assert!(matches!(nvml_verdict(&r), NvmlVerdict::Mismatch { .. }));
    }

    #[test]
    fn nvml_refusing_to_start_is_a_mismatch() {
        let mut r = healthy();
        r.platform.nvml_version = None;
        r.attempts.push(ProbeAttempt {
            method: ProbeMethod::NvidiaSmi,
            outcome: "nvidia-smi failed (exit status: 18): Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.173".into(),
            ok: false,
        });
        match nvml_verdict(&r) {
            NvmlVerdict::Mismatch { message, .. } => assert_eq!(
                message.as_deref(),
                Some("nvidia-smi failed (exit status: 18): Failed to initialize NVML: Driver/library version mismatch")
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn no_nvml_or_no_module() {
        let mut r = healthy();
        r.platform.nvml_version = None;
        assert_eq!(nvml_verdict(&r), NvmlVerdict::Unavailable);
        let mut r = healthy();
        r.platform.kernel_module_version = None;
        assert_eq!(
            nvml_verdict(&r),
            NvmlVerdict::Unchecked {
                libraries: "580.65.06".into()
            }
        );
    }
}
