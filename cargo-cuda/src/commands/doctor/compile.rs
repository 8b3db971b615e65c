//! The compile layer: a real nvcc compile of the embedded kernel.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::sccache;
use crate::session::{Overrides, ProjectWants, Session};
use cuda_toolchain::env::Env;
use cuda_toolchain::plan::ArchPlan;
use cuda_toolchain::toolkit::Toolkit;
use cuda_toolchain::Error;

use super::{Check, Status, VECTOR_ADD_CU};

/// The plan for the newest plain arch the toolkit's nvcc lists (e.g. `sm_120`).
pub(super) fn newest_arch_plan(session: &Session, t: &Toolkit) -> Option<ArchPlan> {
    let support =
        cuda_toolchain::plan::NvccArchSupport::query(&t.nvcc, t.version.as_ref(), &session.env);
    let newest = support
        .real
        .iter()
        .filter(|a| a.variant == cuda_toolchain::arch::Variant::Plain)
        .max()?;
    let overrides = Overrides {
        arch: Some(newest.to_string()),
        ..Default::default()
    };
    session.plan(t, &overrides, &ProjectWants::default()).ok()
}

/// Compiles the embedded vectorAdd; returns the check and the image it built.
pub(super) fn compile_check(
    env: &Env,
    toolkit: Option<&Toolkit>,
    plan: Option<&Result<ArchPlan, cuda_toolchain::Error>>,
) -> (Check, Option<(PathBuf, Vec<u8>)>) {
    let Some(t) = toolkit else {
        return (
            Check::new(
                "compile.vector-add",
                Status::Skip,
                "skipped: no toolkit selected (see toolkit.selected)",
            ),
            None,
        );
    };
    let Some(Ok(plan)) = plan else {
        return (
            Check::new(
                "compile.vector-add",
                Status::Skip,
                "skipped: no arch plan (see compat.arch)",
            ),
            None,
        );
    };
    let dir = match tempfile::Builder::new()
        .prefix("cargo-cuda-doctor-")
        .tempdir()
    {
        Ok(d) => d,
        Err(e) => {
            return (
                Check::new(
                    "compile.vector-add",
                    Status::Fail,
                    format!("could not create a temporary directory: {e}"),
                )
                .fix("check that TMPDIR points at a writable directory"),
                None,
            )
        }
    };
    let source = dir.path().join("vector_add.cu");
    if let Err(e) = cuda_toolchain::fsutil::write_atomic(&source, VECTOR_ADD_CU.as_bytes()) {
        return (
            Check::new(
                "compile.vector-add",
                Status::Fail,
                format!("could not write {}: {e}", source.display()),
            ),
            None,
        );
    }
    let spec = plan.to_arch_list();
    let start = Instant::now();
    match compile_one(env, t, &source, &spec, &dir.path().join("out")) {
        Ok(k) => {
            let secs = start.elapsed().as_secs_f64();
            let image = std::fs::read(&k.image).ok();
            let c = Check::new(
                "compile.vector-add",
                Status::Pass,
                format!(
                    "nvcc compiled vectorAdd for {} in {secs:.2} s",
                    k.archs.join(", ")
                ),
            )
            .evidence(format!("nvcc: {}", t.nvcc.display()));
            (c, image.map(|b| (k.image, b)))
        }
        Err(e) => {
            let mut c =
                Check::new("compile.vector-add", Status::Fail, e.message.clone()).code(e.code);
            if let Some(detail) = &e.detail {
                c.evidence.extend(
                    detail
                        .lines()
                        .filter(|l| !l.trim().is_empty())
                        .take(20)
                        .map(str::to_string),
                );
            }
            c.fix = (!e.help.is_empty()).then(|| e.help.join("; "));
            // nvcc's own words, explained: the diagnosis names the cause and a concrete fix.
            let ctx = cuda_toolchain::diagnose::Context {
                toolkits: vec![t.clone()],
                selected: Some(0),
                probe: None,
            };
            let log = format!("{}\n{}", e.message, e.detail.as_deref().unwrap_or(""));
            if let Some(d) = cuda_toolchain::diagnose::diagnose(&log, &ctx)
                .into_iter()
                .next()
            {
                if !log.contains(&format!("[{}]", d.code)) {
                    c.evidence
                        .push(format!("diagnosis [{}]: {}", d.code, d.cause));
                }
                c.code = Some(d.code.as_str());
                if !d.fix.is_empty() {
                    c.fix = Some(d.fix.join("; "));
                }
            }
            (c, None)
        }
    }
}

/// The kernel the doctor compiled: its image and the archs inside.
#[derive(Debug, Clone)]
pub struct CompiledKernel {
    /// The fatbin.
    pub image: PathBuf,
    /// Its targets (`sm_90`, `compute_90`).
    pub archs: Vec<String>,
}

/// Compiles one `.cu` file with `compile::Build`: a real nvcc run (no cache),
/// into an explicit `out_dir`, printing nothing for cargo.
pub fn compile_one(
    env: &Env,
    toolkit: &Toolkit,
    source: &Path,
    arch: &str,
    out_dir: &Path,
) -> Result<CompiledKernel, Error> {
    let artifacts = cuda_build::compile::Build::new()
        .env(env.clone())
        .toolkit(toolkit.clone())
        .file(source)
        .arch(arch)
        .module_name("doctor")
        .out_dir(out_dir)
        .no_cache()
        .emit_cargo(false)
        .try_compile()?;
    let kernel = artifacts.kernels.into_iter().next().ok_or_else(|| {
        Error::new(
            "compile-failed",
            format!("compiling `{}` produced no kernel", source.display()),
        )
    })?;
    Ok(CompiledKernel {
        image: kernel.output,
        archs: kernel.archs,
    })
}

/// The doctor's `compile.sccache` check. A problem is a warning: cuda-build
/// then compiles with plain nvcc, so builds still work.
pub(super) fn sccache_check(st: &sccache::State) -> Check {
    let mut c = Check {
        id: "compile.sccache",
        layer: "compile",
        status: Status::Skip,
        summary: "sccache is not in use (pass --sccache to `cargo cuda build`, or set `wrapper = \"sccache\"` under [package.metadata.cuda])".into(),
        evidence: Vec::new(),
        fix: None,
        code: None,
    };
    let Some(s) = &st.setting else { return c };
    c.evidence
        .push(format!("requested by {}: `{}`", s.via, s.program.display()));
    if let Some(p) = &st.path {
        c.evidence.push(format!("sccache: {}", p.display()));
    }
    match (&st.problem, &st.version) {
        (None, Some(v)) => {
            c.status = Status::Pass;
            c.summary = format!("sccache {v} is in use and caches nvcc (cicc and ptxas steps)");
            if let Some(d) = &st.dist {
                c.evidence.push(format!("sccache --dist-status: {d}"));
            }
            if let Some((url, why)) = sccache::dist_unreachable(st) {
                c.status = Status::Warn;
                c.summary = format!("sccache {v} caches nvcc, but the sccache-dist scheduler {url} is not reachable ({why}): compiles run locally");
                c.fix = Some("check the scheduler (`sccache --dist-status`), its URL and the token under [dist] in the sccache config (SCCACHE_CONF)".into());
            }
        }
        (problem, _) => {
            c.status = Status::Warn;
            c.summary = format!(
                "sccache is requested but cannot cache nvcc: {}; builds compile with plain nvcc",
                problem.as_deref().unwrap_or("unknown version")
            );
            c.fix = Some(sccache::FIX.into());
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuda_toolchain::env::Var;

    #[test]
    fn a_missing_sccache_is_a_warning_with_the_fix() {
        let env = Env::empty()
            .set(Var::Path, "/nonexistent")
            .set(Var::CudaBuildWrapper, "sccache");
        let c = sccache_check(&sccache::current_state(&env, None));
        assert_eq!(c.status, Status::Warn, "{c:?}");
        assert!(c.fix.unwrap().contains("0.9"));
    }
}
