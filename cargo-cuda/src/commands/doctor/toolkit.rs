//! The toolkit layer and the compatibility layer (toolkit against driver and host compiler).

use crate::session::Session;
use cuda_toolchain::plan::ArchPlan;
use cuda_toolchain::probe::ProbeReport;
use cuda_toolchain::toolkit::Discovery;
use cuda_toolchain::toolkit::Toolkit;

use super::{Check, Status};

pub(super) fn toolkit_checks(discovery: &Result<Discovery, cuda_toolchain::Error>) -> Vec<Check> {
    let d = match discovery {
        Ok(d) => d,
        Err(e) => {
            let mut c =
                Check::new("toolkit.selected", Status::Fail, e.message.clone()).code(e.code);
            c.fix = e.help.first().cloned();
            if let Some(detail) = &e.detail {
                c.evidence.extend(detail.lines().map(str::to_string));
            }
            return vec![c];
        }
    };
    let mut out = Vec::new();
    let Some(t) = d.selected.and_then(|i| d.candidates.get(i)) else {
        let mut c = Check::new(
            "toolkit.selected",
            Status::Fail,
            "no usable CUDA toolkit was found",
        )
        .evidence(d.reason.clone())
        .code("nvcc-not-found");
        // cuda-build's own error carries the fixes (with pinned wheels: an
        // unpinned `pip install nvidia-cuda-nvcc` mixes releases).
        c.fix = d.clone().into_selected().err().map(|e| e.help.join("; "));
        for cand in &d.candidates {
            c = c.evidence(format!(
                "candidate {} ({})",
                cand.root.display(),
                cand.found_via
            ));
        }
        return vec![c];
    };
    let version = t
        .version
        .as_ref()
        .map_or("unknown version".into(), |v| v.to_string());
    out.push(
        Check::new(
            "toolkit.selected",
            Status::Pass,
            format!("CUDA {version} at {}", t.root.display()),
        )
        .evidence(format!("found via {}", t.found_via))
        .evidence(d.reason.clone())
        .evidence(format!("nvcc: {}", t.nvcc.display())),
    );

    let errors: Vec<_> = t
        .problems
        .iter()
        .filter(|p| p.severity == cuda_toolchain::toolkit::Severity::Error)
        .collect();
    let mut integrity = if let Some(first) = errors.first() {
        Check::new("toolkit.integrity", Status::Fail, first.message.clone()).code(first.code)
    } else if let Some(first) = t.problems.first() {
        Check::new("toolkit.integrity", Status::Warn, first.message.clone()).code(first.code)
    } else {
        Check::new(
            "toolkit.integrity",
            Status::Pass,
            "no integrity problems found",
        )
    };
    // The first problem is the summary; the rest are evidence.
    let first_shown = errors.first().copied().or(t.problems.first());
    for p in t.problems.iter().filter(|p| Some(*p) != first_shown) {
        integrity = integrity.evidence(format!("also [{}] {}", p.code, p.message));
    }
    integrity.fix = errors
        .first()
        .copied()
        .or(t.problems.first())
        .and_then(|p| p.fix.clone());
    out.push(integrity);

    let others: Vec<_> = d
        .candidates
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != d.selected)
        .map(|(_, c)| c)
        .collect();
    let mut other = if others.is_empty() {
        Check::new("toolkit.others", Status::Pass, "no other toolkit found")
    } else {
        Check::new(
            "toolkit.others",
            Status::Pass,
            format!("{} other toolkit(s) found, not selected", others.len()),
        )
    };
    for o in others {
        other = other.evidence(format!(
            "{} at {} ({}){}",
            o.version.as_ref().map_or("?".into(), |v| v.to_string()),
            o.root.display(),
            o.found_via,
            if o.is_broken() { " [broken]" } else { "" }
        ));
    }
    out.push(other);

    let mut conflicts = if d
        .conflicts
        .iter()
        .any(|p| p.severity == cuda_toolchain::toolkit::Severity::Error)
    {
        Check::new(
            "toolkit.conflicts",
            Status::Fail,
            d.conflicts[0].message.clone(),
        )
        .code(d.conflicts[0].code)
    } else if let Some(first) = d.conflicts.first() {
        Check::new("toolkit.conflicts", Status::Warn, first.message.clone()).code(first.code)
    } else {
        Check::new(
            "toolkit.conflicts",
            Status::Pass,
            "CUDA_HOME, CUDA_PATH and PATH agree",
        )
    };
    for p in d.conflicts.iter().skip(1) {
        conflicts = conflicts.evidence(format!("also [{}] {}", p.code, p.message));
    }
    conflicts.fix = d.conflicts.first().and_then(|p| p.fix.clone());
    out.push(conflicts);
    out
}

pub(super) fn verdict_check(id: &'static str, v: cuda_toolchain::compat::Verdict) -> Check {
    let status = match v.status {
        cuda_toolchain::compat::Status::Pass => Status::Pass,
        cuda_toolchain::compat::Status::Warn => Status::Warn,
        cuda_toolchain::compat::Status::Fail => Status::Fail,
    };
    let mut c = Check::new(id, status, v.reason);
    c.fix = v.fix;
    c
}

pub(super) fn compat_checks(
    session: &Session,
    probe: &ProbeReport,
    toolkit: Option<&Toolkit>,
    plan: Option<&Result<ArchPlan, cuda_toolchain::Error>>,
) -> Vec<Check> {
    let mut out = Vec::new();
    let version = toolkit.and_then(|t| t.version.as_ref());
    let no_toolkit = "skipped: no toolkit selected (see toolkit.selected)";

    out.push(match (&probe.driver, version) {
        (_, None) => Check::new("compat.driver-sass", Status::Skip, no_toolkit),
        (None, _) => Check::new(
            "compat.driver-sass",
            Status::Skip,
            "skipped: no driver to check the toolkit against",
        ),
        (Some(d), Some(v)) => verdict_check(
            "compat.driver-sass",
            cuda_toolchain::compat::driver_runs_sass(d, v),
        ),
    });

    let isa = version
        .and_then(|v| cuda_toolchain::facts::ptx_isa_for_cuda((v.major as u32, v.minor as u32)));
    let emits_ptx = matches!(plan, Some(Ok(p)) if p.ptx.is_some());
    out.push(match (&probe.driver, isa) {
        (_, _) if version.is_none() => Check::new("compat.driver-ptx", Status::Skip, no_toolkit),
        (None, _) => Check::new(
            "compat.driver-ptx",
            Status::Skip,
            "skipped: no driver to JIT PTX",
        ),
        (_, _) if !emits_ptx => Check::new(
            "compat.driver-ptx",
            Status::Skip,
            "skipped: the plan embeds no PTX",
        ),
        (Some(_), None) => Check::new(
            "compat.driver-ptx",
            Status::Warn,
            "the PTX ISA of this toolkit is not in the facts table",
        ),
        (Some(d), Some(isa)) => verdict_check(
            "compat.driver-ptx",
            cuda_toolchain::compat::driver_jits_ptx(d, isa),
        ),
    });

    out.push(match plan {
        None => Check::new("compat.arch", Status::Skip, no_toolkit),
        Some(Err(e)) => {
            // Nothing set and nothing detected is a warning here: builds on this
            // machine need a setting, but nothing is incompatible.
            let status = if e.code == "arch-not-detected" {
                Status::Warn
            } else {
                Status::Fail
            };
            let mut c = Check::new("compat.arch", status, e.message.clone()).code(e.code);
            c.fix = e.help.first().cloned();
            c
        }
        Some(Ok(p)) => {
            let targets = p.targets_display().join(" ");
            let mut c = Check::new(
                "compat.arch",
                if p.warnings.is_empty() {
                    Status::Pass
                } else {
                    Status::Warn
                },
                format!(
                    "targets {targets} (from {}) are supported by this nvcc",
                    crate::session::arch_source_name(&p.source)
                ),
            );
            for w in &p.warnings {
                c = c.evidence(w.clone());
            }
            c
        }
    });

    out.push(match version {
        None => Check::new("compat.host-compiler", Status::Skip, no_toolkit),
        Some(v) => host_compiler_check(&session.env, v),
    });
    out
}

/// The compiler a build would hand nvcc as `-ccbin`, chosen and checked by
/// the build engine's own rule, rendered: which one, which setting chose it,
/// and whether CUDA `toolkit` accepts its version.
fn host_compiler_check(env: &cuda_toolchain::env::Env, toolkit: &semver::Version) -> Check {
    const ID: &str = "compat.host-compiler";
    let fail = |e: cuda_toolchain::Error| {
        let mut c = Check::new(ID, Status::Fail, e.message.clone()).code(e.code);
        c.fix = e.help.first().cloned();
        c
    };
    let tool = match cuda_build::compile::host_compiler(env) {
        Ok(Some(tool)) => tool,
        Ok(None) => {
            return Check::new(
                ID,
                Status::Fail,
                "no host C++ compiler: nothing names one (NVCC_CCBIN, CXX) and cc's default is not on PATH; nvcc needs one",
            )
            .code("host-compiler-not-found")
            .fix("install g++ (e.g. `apt install g++`), or set NVCC_CCBIN or CXX to a supported compiler")
        }
        Err(e) => return fail(e),
    };
    let chosen = format!("`{}` (chosen by {})", tool.path.display(), tool.from);
    match cuda_build::compile::check_host_compiler(env, &tool, toolkit) {
        Ok(notes) if notes.is_empty() => Check::new(
            ID,
            Status::Pass,
            format!("host compiler {chosen} is within CUDA {toolkit}'s limits"),
        ),
        Ok(notes) => notes.into_iter().fold(
            Check::new(ID, Status::Warn, format!("host compiler {chosen}")),
            |c, n| c.evidence(n.trim_start_matches("cuda-build: ").to_string()),
        ),
        Err(e) => fail(e).evidence(format!("host compiler {chosen}")),
    }
}
