//! Will an image run on a GPU with a driver? Natively (SASS), through the
//! driver's JIT (PTX), or not at all, with the diagnosis code and the fix.
//!
//! The rules are the arch model's ([`Arch::sass_runs_on`],
//! [`Arch::ptx_jits_on`]) and the driver facts' ([`compat::driver_runs_sass`]
//! for the toolkit a cubin names, [`compat::driver_jits_ptx_on`] for the PTX
//! ISA), so the CLI, the build and programs at run time agree.

use serde::Serialize;

use super::{Code, Image, ImageEntry};
use crate::arch::{Arch, ComputeCapability};
use crate::compat::{self, Status};
use crate::probe::{DriverInfo, ProbeMethod};

/// A GPU (and, when known, its driver) to judge images against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    /// How the target was named: `sm_89`, `NVIDIA H200 (GPU 0)`, `RTX 4090`.
    pub label: String,
    /// Its compute capability.
    #[serde(serialize_with = "ser_cc")]
    pub compute_capability: ComputeCapability,
    /// Its driver version (`535.104.05`), when known.
    pub driver: Option<String>,
    /// The highest CUDA version that driver supports (`"12.2"`), when known.
    #[serde(serialize_with = "ser_cuda")]
    pub driver_cuda: Option<(u32, u32)>,
}

fn ser_cc<S: serde::Serializer>(cc: &ComputeCapability, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&cc.to_string())
}

fn ser_cuda<S: serde::Serializer>(v: &Option<(u32, u32)>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some((a, b)) => s.serialize_some(&format!("{a}.{b}")),
        None => s.serialize_none(),
    }
}

impl Target {
    /// A GPU without driver information (driver checks are skipped).
    pub fn gpu(label: impl Into<String>, cc: ComputeCapability) -> Target {
        Target {
            label: label.into(),
            compute_capability: cc,
            driver: None,
            driver_cuda: None,
        }
    }

    /// The same GPU with a driver: its version (`535.104.05`) and/or the
    /// CUDA version it supports (derived from the version when not given).
    pub fn with_driver(mut self, version: Option<&str>, cuda: Option<(u32, u32)>) -> Target {
        self.driver = version.map(str::to_string);
        self.driver_cuda = cuda.or_else(|| version.and_then(crate::facts::max_cuda_for_driver));
        self
    }

    fn driver_info(&self) -> Option<DriverInfo> {
        (self.driver.is_some() || self.driver_cuda.is_some()).then(|| DriverInfo {
            version: self.driver.clone(),
            cuda_version: self.driver_cuda,
            // Only the version fields are read by the compat rules.
            found_via: ProbeMethod::DriverApi,
        })
    }

    /// `sm_89 (driver 535.104)` for messages.
    pub fn describe(&self) -> String {
        let mut s = format!("{} (CC {}", self.label, self.compute_capability);
        match (&self.driver, self.driver_cuda) {
            (Some(d), _) => s.push_str(&format!(", driver {d}")),
            (None, Some((a, b))) => s.push_str(&format!(", driver for CUDA {a}.{b}")),
            _ => {}
        }
        s.push(')');
        s
    }
}

/// How an image fares on a target, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// SASS for the GPU is present.
    Native,
    /// No SASS fits, but the driver JIT-compiles the PTX.
    Jit,
    /// Nothing loads.
    WillNotRun,
}

impl Outcome {
    /// `runs natively`, `runs via JIT`, `will not run`.
    pub fn describe(self) -> &'static str {
        match self {
            Outcome::Native => "runs natively",
            Outcome::Jit => "runs via JIT",
            Outcome::WillNotRun => "will not run",
        }
    }
}

/// The verdict for one image (or a group of them) on one target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TargetVerdict {
    /// The target's label.
    pub target: String,
    /// Native, JIT or will not run.
    pub outcome: Outcome,
    /// The entry the driver will use (`sm_86`, `compute_90`).
    pub via: Option<String>,
    /// Why, in one sentence.
    pub reason: String,
    /// The diagnosis code (`no-kernel-image-for-device`,
    /// `ptx-too-new-for-driver`, `driver-too-old`) when it will not run.
    pub code: Option<&'static str>,
    /// What to do about it.
    pub fix: Option<String>,
}

impl TargetVerdict {
    /// The diagnosis as the CLI and programs print it:
    /// `error[code]: reason` and `= help: fix` lines (or one `ok:` line).
    pub fn render(&self, what: &str) -> String {
        match self.code {
            Some(code) => {
                let mut s = format!(
                    "error[{code}]: {what} will not run on {}: {}",
                    self.target, self.reason
                );
                if let Some(fix) = &self.fix {
                    s.push_str(&format!("\n  = help: {fix}"));
                }
                s.push_str(&format!(
                    "\n  = note: `cargo cuda explain {code}` explains this failure"
                ));
                s
            }
            None => format!(
                "ok: {what} {} on {}: {}",
                self.outcome.describe(),
                self.target,
                self.reason
            ),
        }
    }
}

/// Judges one image on one target.
pub fn judge(image: &Image, target: &Target) -> TargetVerdict {
    judge_entries(&image.entries, &image.targets_display(), target)
}

pub(crate) fn judge_entries(entries: &[ImageEntry], all: &str, target: &Target) -> TargetVerdict {
    let gpu = target.compute_capability;
    let driver = target.driver_info();
    let verdict = |outcome, via: Option<String>, reason: String, code, fix| TargetVerdict {
        target: target.label.clone(),
        outcome,
        via,
        reason,
        code,
        fix,
    };

    // SASS: the highest arch that runs on this GPU, if the driver runs code
    // from the toolkit that built it.
    let mut sass: Vec<&ImageEntry> = entries
        .iter()
        .filter(|e| e.code == Code::Sass && e.arch.sass_runs_on(gpu))
        .collect();
    sass.sort_by_key(|e| std::cmp::Reverse(e.arch.cc));
    let mut sass_blocked = None;
    for e in &sass {
        let check = match (&driver, &e.toolkit) {
            (Some(d), Some(tk)) => Some(compat::driver_runs_sass(d, tk)),
            _ => None,
        };
        match check {
            Some(v) if v.status == Status::Fail => {
                sass_blocked.get_or_insert(v);
            }
            other => {
                let mut reason = format!("{} SASS runs on compute capability {gpu}", e.target);
                if let Some(v) = other.filter(|v| v.status == Status::Warn) {
                    reason.push_str(&format!("; {}", v.reason));
                }
                return verdict(Outcome::Native, Some(e.target.clone()), reason, None, None);
            }
        }
    }

    // PTX: the highest arch the driver can JIT for this GPU, if it accepts
    // the ISA version.
    let mut ptx: Vec<&ImageEntry> = entries
        .iter()
        .filter(|e| e.code == Code::Ptx && e.arch.ptx_jits_on(gpu))
        .collect();
    ptx.sort_by_key(|e| std::cmp::Reverse(e.arch.cc));
    let mut ptx_blocked = None;
    for e in &ptx {
        let check = match (&driver, e.ptx_isa) {
            (Some(d), Some(isa)) => Some(compat::driver_jits_ptx_on(d, isa, Some(gpu))),
            _ => None,
        };
        match check {
            Some(v) if v.status == Status::Fail => {
                ptx_blocked.get_or_insert(v);
            }
            other => {
                let mut reason = format!(
                    "no SASS for compute capability {gpu}; the driver JIT-compiles {} at first load (slower start-up)",
                    e.target
                );
                match (other, e.ptx_isa) {
                    (Some(v), _) => reason.push_str(&format!("; {}", v.reason)),
                    (None, Some((a, b))) if driver.is_none() => {
                        reason.push_str(&format!("; PTX ISA {a}.{b} needs a driver for CUDA {} or newer (no driver given, not checked)",
                            crate::facts::cuda_for_ptx_isa((a, b)).map_or("?".into(), |(x, y)| format!("{x}.{y}"))))
                    }
                    _ => {}
                }
                return verdict(
                    Outcome::Jit,
                    Some(e.target.clone()),
                    reason,
                    None,
                    Some(format!(
                        "add {} to CUDA_ARCHS to ship SASS for it",
                        gpu.number()
                    )),
                );
            }
        }
    }

    // SASS for the GPU that only the driver blocks is the root cause even
    // when PTX is blocked too (by the same old driver).
    if let Some(v) = sass_blocked {
        return verdict(
            Outcome::WillNotRun,
            None,
            v.reason,
            Some("driver-too-old"),
            v.fix,
        );
    }
    if let Some(v) = ptx_blocked {
        return verdict(
            Outcome::WillNotRun,
            None,
            v.reason,
            Some("ptx-too-new-for-driver"),
            v.fix,
        );
    }
    let why = explain_mismatch(entries, gpu);
    verdict(
        Outcome::WillNotRun,
        None,
        format!(
            "nothing in [{all}] runs on compute capability {gpu}{why}: loading fails with `no kernel image is available for execution on the device` (CUDA_ERROR_NO_BINARY_FOR_GPU, 209)"
        ),
        Some("no-kernel-image-for-device"),
        Some(format!(
            "add {} to CUDA_ARCHS (SASS), or a plain PTX target at or below {} such as compute_{}",
            gpu.number(),
            gpu,
            gpu.number()
        )),
    )
}

/// A short reason for the most instructive mismatch (`sm_90a` runs only on
/// 9.0; `sm_89` needs 8.9 or a newer 8.x; SASS never crosses majors).
fn explain_mismatch(entries: &[ImageEntry], gpu: ComputeCapability) -> String {
    use crate::arch::Variant;
    let specific = entries.iter().find(|e| e.arch.variant == Variant::Specific);
    let same_major = entries
        .iter()
        .filter(|e| e.arch.cc.major == gpu.major)
        .min_by_key(|e| e.arch.cc);
    let Some(e) = specific.or(same_major).or(entries.first()) else {
        return String::new();
    };
    let a: Arch = e.arch;
    match (e.code, a.variant) {
        (_, Variant::Specific) => {
            format!(" ({} is arch-specific: it runs only on {})", e.target, a.cc)
        }
        (Code::Sass, _) if a.cc.major != gpu.major => {
            format!(" (SASS for {}.x does not run on another major)", a.cc.major)
        }
        (Code::Sass, _) => format!(
            " ({} needs compute capability {} or a newer {}.x)",
            e.target, a.cc, a.cc.major
        ),
        (Code::Ptx, Variant::Family) => {
            format!(" ({} JITs only for its family {}.x)", e.target, a.cc.major)
        }
        (Code::Ptx, _) => format!(" ({} cannot target the older {gpu})", e.target),
    }
}

/// The verdict of a set of images on a set of targets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The worst outcome over every target (what a deployment must expect).
    pub outcome: Outcome,
    /// One verdict per target.
    pub targets: Vec<TargetVerdict>,
}

impl Verdict {
    /// Whether every target can run it.
    pub fn runs(&self) -> bool {
        self.outcome != Outcome::WillNotRun
    }

    /// Every failing target's diagnosis, as [`TargetVerdict::render`] writes it.
    pub fn render_failures(&self, what: &str) -> String {
        self.targets
            .iter()
            .filter(|t| t.code.is_some())
            .map(|t| t.render(what))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The overall verdict of several images on several targets.
///
/// Images with the same kernel names are alternatives (one cubin per arch,
/// a program that picks at run time): such a group runs when any of its
/// images runs. Every group must run on a target for the target to pass.
/// No image at all fails with `invalid-kernel-image`.
pub fn overall(images: &[Image], targets: &[Target]) -> Verdict {
    let mut groups: Vec<(Vec<String>, Vec<&Image>)> = Vec::new();
    for img in images {
        let mut key = img.kernels.clone();
        key.sort();
        match groups.iter_mut().find(|(k, _)| !k.is_empty() && *k == key) {
            Some((_, g)) => g.push(img),
            None => groups.push((key, vec![img])),
        }
    }
    let per_target: Vec<TargetVerdict> = targets
        .iter()
        .map(|t| {
            if groups.is_empty() {
                return TargetVerdict {
                    target: t.label.clone(),
                    outcome: Outcome::WillNotRun,
                    via: None,
                    reason: "no kernel image (fatbin, cubin or PTX) was found".into(),
                    code: Some("invalid-kernel-image"),
                    fix: Some("point at a binary, library, .fatbin, .cubin, .ptx or OUT_DIR that holds device code".into()),
                };
            }
            groups
                .iter()
                .map(|(_, g)| {
                    g.iter()
                        .map(|i| judge(i, t))
                        .min_by_key(|v| v.outcome)
                        .expect("groups are never empty")
                })
                .max_by_key(|v| v.outcome)
                .expect("at least one group")
        })
        .collect();
    Verdict {
        outcome: per_target
            .iter()
            .map(|v| v.outcome)
            .max()
            .unwrap_or(Outcome::Native),
        targets: per_target,
    }
}

/// The targets a probe found: every visible GPU, with the driver.
pub fn targets_from_probe(report: &crate::probe::ProbeReport) -> Vec<Target> {
    let (version, cuda) = report
        .driver
        .as_ref()
        .map_or((None, None), |d| (d.version.clone(), d.cuda_version));
    report
        .gpus
        .iter()
        .map(|g| {
            Target::gpu(
                format!("GPU {} ({})", g.index, g.name),
                g.compute_capability,
            )
            .with_driver(version.as_deref(), cuda)
        })
        .collect()
}

/// Will `image` (a fatbin, cubin or PTX, as a program embeds it) run on the
/// current device(s)? Probes the GPUs and driver of this machine.
///
/// With no GPU visible the verdict is `will-not-run` with
/// `no-device-visible`.
pub fn check_image(image: &[u8]) -> Verdict {
    let env = crate::env::Env::from_process();
    let report = crate::probe::probe(&env, &crate::probe::ProbeOptions::default());
    let targets = targets_from_probe(&report);
    if targets.is_empty() {
        return Verdict {
            outcome: Outcome::WillNotRun,
            targets: vec![TargetVerdict {
                target: "this machine".into(),
                outcome: Outcome::WillNotRun,
                via: None,
                reason: "no CUDA GPU is visible".into(),
                code: Some("no-device-visible"),
                fix: Some("run `cargo cuda doctor` to see why no GPU is found".into()),
            }],
        };
    }
    check_image_on(image, &targets)
}

/// [`check_image`] against targets the program already knows (the device
/// it opened, the driver's CUDA version from `cuDriverGetVersion`).
///
/// ```
/// use cuda_toolchain::{arch::ComputeCapability, image::{check_image_on, Outcome, Target}};
/// let ptx = b".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n}\n";
/// let old = Target::gpu("sm_90", ComputeCapability::new(9, 0)).with_driver(Some("535.104.05"), None);
/// let v = check_image_on(ptx, &[old]);
/// assert_eq!(v.outcome, Outcome::WillNotRun);
/// assert_eq!(v.targets[0].code, Some("ptx-too-new-for-driver"));
/// ```
pub fn check_image_on(image: &[u8], targets: &[Target]) -> Verdict {
    overall(&super::scan(image).images, targets)
}
