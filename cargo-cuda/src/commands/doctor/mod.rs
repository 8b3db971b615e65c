//! `cargo cuda doctor`: the driver, the toolkit, their compatibility, a real
//! compile and (with a GPU) a real run, checked layer by layer. Each check
//! says what it saw (evidence) and what to do (fix).
//!
//! The driver layer reports the root cause once: with no NVIDIA driver at all,
//! one check fails and the checks that depend on it are skipped, naming it.
//!
//! One file per layer: [`driver`], [`toolkit`] (toolkit and compatibility;
//! [`consumers`]: the other crates of the build that look for CUDA),
//! [`compile`] (nvcc, sccache), [`run`] (the kernel and the workload, through
//! [`gpu`]); [`print`] renders. A new check is a function in its layer's
//! file, called from [`check_all`] in layer order.

use serde::Serialize;

use super::Context;
use crate::session::{Overrides, ProjectWants, Session};
use cuda_toolchain::toolkit::Toolkit;

mod compile;
mod consumers;
mod driver;
mod gpu;
mod print;
mod run;
mod toolkit;

use print::print;

use compile::{compile_check, newest_arch_plan};
use driver::driver_checks;
use run::{run_checks, Workload};
use toolkit::{compat_checks, toolkit_checks};

/// `cargo cuda doctor`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub selection: crate::cli::Selection,
    /// Print `{"ok": bool, "checks": [...]}` instead of the report.
    #[arg(long)]
    pub json: bool,
    /// Do not build and run the sample workload (package `cuda-workload`) even when a GPU exists.
    #[arg(long)]
    pub no_workload: bool,
}

/// `cargo cuda doctor`: prints the report (or JSON); exits 1 when a check failed.
pub fn exec(ctx: &Context, args: &Args) -> i32 {
    let opts = Options {
        overrides: args.selection.overrides(),
        no_workload: args.no_workload,
    };
    let report = check_all(ctx.session(), &opts);
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        print(&report, &ctx.out());
    }
    i32::from(!report.ok)
}

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// All good.
    Pass,
    /// Works, but worth knowing.
    Warn,
    /// Broken; the exit status will be nonzero.
    Fail,
    /// Not applicable or not possible here (the summary says why).
    Skip,
}

/// One check.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// Stable id, `layer.name`.
    pub id: &'static str,
    /// driver, toolkit, compatibility, compile or run.
    pub layer: &'static str,
    /// The outcome.
    pub status: Status,
    /// One line.
    pub summary: String,
    /// What was observed.
    pub evidence: Vec<String>,
    /// What to do, when not passing.
    pub fix: Option<String>,
    /// A diagnosis code (`cargo cuda explain CODE`), when one applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'static str>,
}

impl Check {
    fn new(id: &'static str, status: Status, summary: impl Into<String>) -> Check {
        let layer = match id.split('.').next().unwrap_or("") {
            "driver" => "driver",
            "toolkit" => "toolkit",
            "compat" => "compatibility",
            "compile" => "compile",
            _ => "run",
        };
        Check {
            id,
            layer,
            status,
            summary: summary.into(),
            evidence: Vec::new(),
            fix: None,
            code: None,
        }
    }
    fn evidence(mut self, e: impl Into<String>) -> Check {
        self.evidence.push(e.into());
        self
    }
    fn fix(mut self, f: impl Into<String>) -> Check {
        self.fix = Some(f.into());
        self
    }
    fn code(mut self, c: &'static str) -> Check {
        self.code = Some(c);
        self
    }
}

/// The whole report.
#[derive(Debug, Serialize)]
pub struct Report {
    /// No check failed.
    pub ok: bool,
    /// Every check, in layer order.
    pub checks: Vec<Check>,
}

/// Options for a doctor run.
pub struct Options {
    /// Command-line overrides.
    pub overrides: Overrides,
    /// Skip building and running the sample workload.
    pub no_workload: bool,
}

/// The embedded kernel the compile and run layers use.
pub const VECTOR_ADD_CU: &str = r#"// cargo cuda doctor: the smallest real kernel.
extern "C" __global__ void vectorAdd(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"#;

/// Runs every check, in layer order.
pub fn check_all(session: &Session, opts: &Options) -> Report {
    let mut checks = Vec::new();
    let probe = session.probe();
    let project = session.project(opts.overrides.manifest_path.as_deref());
    let wants = project.wants;
    let toolkit_min = |tk: Option<&Toolkit>| {
        tk.and_then(|t| t.version.as_ref())
            .and_then(|v| cuda_toolchain::facts::min_driver_for_toolkit(v).map(|d| (v.clone(), d)))
    };

    // Toolkit first (the driver's fix names the driver version this toolkit needs),
    // but reported after the driver, in layer order.
    let discovery = match &wants {
        Ok(w) => session.discover(&opts.overrides, w),
        Err(e) => Err(e.clone()),
    };
    let selected: Option<Toolkit> = discovery
        .as_ref()
        .ok()
        .and_then(|d| d.selected.and_then(|i| d.candidates.get(i).cloned()));

    checks.extend(driver_checks(
        &session.env,
        probe,
        toolkit_min(selected.as_ref()),
    ));
    checks.extend(toolkit_checks(&discovery));
    checks.push(settings_check(
        &session.env,
        wants.as_ref().map(|w| w.warnings.as_slice()).unwrap_or(&[]),
    ));
    checks.push(consumers::consumers_check(
        session,
        &opts.overrides,
        selected.as_ref(),
    ));

    let plan = selected.as_ref().map(|t| {
        session.plan(
            t,
            &opts.overrides,
            wants.as_ref().unwrap_or(&ProjectWants::default()),
        )
    });
    checks.extend(compat_checks(
        session,
        probe,
        selected.as_ref(),
        plan.as_ref(),
    ));

    // With no arch set and no GPU (CI), builds need CUDA_ARCHS (compat.arch
    // says so), but the toolkit can still be proven: compile for the newest
    // arch this nvcc supports.
    let probe_plan = match (&plan, selected.as_ref()) {
        (Some(Err(e)), Some(t)) if e.code == "arch-not-detected" => newest_arch_plan(session, t),
        _ => None,
    };
    let compile_plan = match &probe_plan {
        Some(p) => Some(Ok(p.clone())),
        None => plan.clone(),
    };
    let (mut compile, image) =
        compile_check(&session.env, selected.as_ref(), compile_plan.as_ref());
    if probe_plan.is_some() && compile.status == Status::Pass {
        compile = compile.evidence(
            "no arch is set and no GPU was found: compiled for the newest arch this nvcc supports",
        );
    }
    checks.push(compile);
    checks.push(compile::sccache_check(&crate::sccache::current_state(
        &session.env,
        project.workspace.as_ref(),
    )));
    checks.push(cache_check(&cuda_build::compile::cache_status(
        &session.env,
    )));
    let workload = Workload {
        workspace: project.workspace.as_ref(),
        toolkit: selected.as_ref(),
        plan: plan.as_ref().and_then(|p| p.as_ref().ok()),
    };
    checks.extend(run_checks(
        probe,
        image.as_ref().map(|(_, bytes)| bytes.as_slice()),
        opts,
        session,
        workload,
    ));

    let ok = !checks.iter().any(|c| c.status == Status::Fail);
    Report { ok, checks }
}

/// Variables and `[package.metadata.cuda]` keys whose values are ignored
/// (do not parse, or are unknown): a warning each, never silence.
fn settings_check(env: &cuda_toolchain::env::Env, metadata_warnings: &[String]) -> Check {
    let warnings: Vec<String> = env
        .check()
        .into_iter()
        .chain(metadata_warnings.iter().cloned())
        .collect();
    if warnings.is_empty() {
        return Check::new(
            "toolkit.settings",
            Status::Pass,
            "every CUDA variable and [package.metadata.cuda] key that is set is understood",
        );
    }
    let mut c = Check::new(
        "toolkit.settings",
        Status::Warn,
        format!("{} setting(s) are ignored", warnings.len()),
    );
    for w in warnings {
        c = c.evidence(w);
    }
    c.fix("fix or unset them (each line says what was expected)")
}

/// `compile.cache`: where compiled kernels are kept, and whether the shared
/// Redis tier (`CUDA_BUILD_CACHE_REDIS`) answers. An unreachable tier is a
/// warning: builds still work, from the local cache only.
fn cache_check(st: &cuda_build::compile::CacheStatus) -> Check {
    let mut c = Check {
        id: "compile.cache",
        layer: "compile",
        status: Status::Pass,
        summary: String::new(),
        evidence: Vec::new(),
        fix: None,
        code: None,
    };
    match (&st.dir, &st.disabled_by) {
        (_, Some(var)) => {
            c.summary = format!("the kernel cache is off ({var} is set): every build compiles")
        }
        (Some(d), None) => c.summary = format!("kernels are cached in {}", d.display()),
        (None, None) => {
            c.status = Status::Warn;
            c.summary = "no kernel cache directory (HOME and XDG_CACHE_HOME are unset)".into();
            c.fix = Some("set CUDA_BUILD_CACHE_DIR to a writable directory".into());
        }
    }
    match (&st.remote, &st.remote_problem) {
        (None, _) => {}
        (Some(r), None) => c
            .summary
            .push_str(&format!("; shared through Redis at {r}")),
        (Some(r), Some(why)) => {
            c.status = Status::Warn;
            c.summary.push_str(&format!(
                "; but the shared Redis tier CUDA_BUILD_CACHE_REDIS={r} is not usable ({why}): builds use the local cache only"
            ));
            c.fix = Some("start the Redis server or fix CUDA_BUILD_CACHE_REDIS (redis://host:port[/db]); unset it to silence this".into());
        }
    }
    c
}
