//! `cargo cuda doctor`: the driver, the toolkit, their compatibility, a real
//! compile and (with a GPU) a real run, checked layer by layer. Each check
//! says what it saw (evidence) and what to do (fix).
//!
//! The driver layer reports the root cause once: with no NVIDIA driver at all,
//! one check fails and the checks that depend on it are skipped, naming it.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cb::{self, ArchPlan, Discovery, Env, ProbeReport, Toolkit, Var};
use crate::info::source_name;
use crate::session::{Overrides, ProjectWants, Session};
use crate::style::{Style, Tone};
use crate::workspace::Workspace;

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

/// Runs every check.
pub fn run(session: &Session, opts: &Options) -> Report {
    let mut checks = Vec::new();
    let probe = session.probe();
    let project = session.project(opts.overrides.manifest_path.as_deref());
    let wants = project.wants;
    let toolkit_min = |tk: Option<&Toolkit>| {
        tk.and_then(|t| t.version.as_ref())
            .and_then(|v| cb::min_driver_for_toolkit(v).map(|d| (v.clone(), d)))
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

fn driver_fix(min: Option<(semver::Version, &'static str)>) -> String {
    match min {
        Some((v, d)) => format!(
            "install the NVIDIA driver ({d} or newer for CUDA {}.{}) on a machine with an NVIDIA GPU; in a container, start it with `--gpus all` (NVIDIA Container Toolkit)",
            v.major, v.minor
        ),
        None => "install the NVIDIA driver on a machine with an NVIDIA GPU; in a container, start it with `--gpus all` (NVIDIA Container Toolkit)".into(),
    }
}

fn driver_checks(
    env: &Env,
    probe: &ProbeReport,
    min: Option<(semver::Version, &'static str)>,
) -> Vec<Check> {
    let p = &probe.platform;
    let mut out = Vec::new();
    let version_file = env.sys_path("/proc/driver/nvidia/version");
    let any_node = p.device_nodes.iter().any(|n| n.exists);
    let no_driver = p.kernel_module_version.is_none()
        && p.libcuda.is_none()
        && !any_node
        && !p.wsl
        && probe.driver.is_none();

    // Kernel module (on WSL2 the Windows driver serves the GPU instead).
    out.push(match (&p.kernel_module_version, p.wsl) {
        (Some(v), _) => Check::new("driver.kernel-module", Status::Pass, format!("NVIDIA kernel module {v} is loaded"))
            .evidence(format!("{} reports {v}", version_file.display())),
        (None, true) => Check::new("driver.kernel-module", Status::Pass, "WSL2: the Windows NVIDIA driver serves the GPU (no Linux kernel module expected)"),
        (None, false) if no_driver => {
            let mut c = Check::new("driver.kernel-module", Status::Fail, "no NVIDIA driver: the kernel module is not loaded and libcuda.so.1 is not installed")
                .evidence(format!("{} does not exist", version_file.display()))
                .evidence("libcuda.so.1 was not found by the dynamic loader")
                .evidence("no /dev/nvidia* device nodes")
                .fix(format!("{}; building kernels works without a GPU, running them does not", driver_fix(min.clone())))
                .code("driver-not-loaded");
            if let Some(c_name) = &p.container {
                c = c.evidence(format!("running in a container ({c_name})"));
            }
            c
        }
        (None, false) => Check::new("driver.kernel-module", Status::Fail, "the NVIDIA kernel module is not loaded")
            .evidence(format!("{} does not exist", version_file.display()))
            .fix("load it with `sudo modprobe nvidia` (or reinstall the driver for the running kernel; check `dmesg | grep -i nvidia`)")
            .code("driver-not-loaded"),
    });
    let skip_reason = "skipped: no NVIDIA driver is installed (see driver.kernel-module)";

    // Device nodes.
    out.push(if no_driver {
        Check::new("driver.device-nodes", Status::Skip, skip_reason)
    } else if p.device_nodes.is_empty() {
        Check::new("driver.device-nodes", Status::Skip, "device nodes were not examined")
    } else {
        let missing: Vec<_> = p.device_nodes.iter().filter(|n| !n.exists).collect();
        let denied: Vec<_> = p.device_nodes.iter().filter(|n| n.exists && !(n.readable && n.writable)).collect();
        let mut c = if !denied.is_empty() {
            Check::new(
                "driver.device-nodes",
                Status::Fail,
                format!("no read/write permission on {}", denied.iter().map(|n| n.path.display().to_string()).collect::<Vec<_>>().join(", ")),
            )
            .fix("add your user to the group owning /dev/nvidia* (often `video`) and log in again, or fix the container's device mapping")
        } else if !any_node {
            Check::new("driver.device-nodes", Status::Fail, "no /dev/nvidia* device nodes exist")
                .fix("load the driver (`sudo modprobe nvidia`, `nvidia-modprobe -u -c=0`), or start the container with `--gpus all`")
        } else {
            Check::new("driver.device-nodes", Status::Pass, "device nodes present and accessible")
        };
        for n in &p.device_nodes {
            c = c.evidence(format!(
                "{}: {}",
                n.path.display(),
                if !n.exists { "missing" } else if n.readable && n.writable { "rw" } else { "no access" }
            ));
        }
        if !missing.is_empty() && c.status == Status::Pass {
            c.status = Status::Warn;
        }
        c
    });

    // libcuda.
    out.push(match (&p.libcuda, p.libcuda_stub) {
        _ if no_driver => Check::new("driver.libcuda", Status::Skip, skip_reason),
        (Some(path), true) => Check::new("driver.libcuda", Status::Fail, "libcuda.so.1 resolves to the toolkit's link-time stub, not the driver")
            .evidence(format!("loaded {}", path.display()))
            .fix("remove the toolkit's lib64/stubs directory from LD_LIBRARY_PATH (it exists only for linking)")
            .code("libcuda-stub"),
        (Some(path), false) => Check::new("driver.libcuda", Status::Pass, format!("libcuda.so.1 is {}", path.display())),
        (None, _) => Check::new("driver.libcuda", Status::Fail, "libcuda.so.1 was not found")
            .fix(if p.container.is_some() {
                "start the container with `--gpus all` so the NVIDIA Container Toolkit mounts the driver libraries".to_string()
            } else {
                "install the NVIDIA driver's user-space libraries (the package matching the kernel module)".to_string()
            })
            .code("libcuda-not-found"),
    });

    // NVML against the kernel module.
    out.push(match (&p.nvml_version, &p.kernel_module_version) {
        _ if no_driver => Check::new("driver.nvml", Status::Skip, skip_reason),
        (Some(n), Some(k)) if n == k => Check::new(
            "driver.nvml",
            Status::Pass,
            format!("NVML {n} matches the kernel module"),
        ),
        (Some(n), Some(k)) => Check::new(
            "driver.nvml",
            Status::Fail,
            format!("NVML {n} does not match the kernel module {k}"),
        )
        .evidence("a driver update without a reboot leaves the old kernel module loaded")
        .fix("reboot (or unload and reload the nvidia kernel modules)")
        .code("driver-library-mismatch"),
        (None, _) => Check::new(
            "driver.nvml",
            Status::Skip,
            "NVML is not available here (nvidia-smi / libnvidia-ml not found)",
        ),
        (Some(n), None) => Check::new("driver.nvml", Status::Pass, format!("NVML {n}")),
    });

    // GPUs visible.
    let visible = env.get(Var::CudaVisibleDevices);
    out.push(if no_driver {
        Check::new("driver.gpus", Status::Skip, skip_reason)
    } else if probe.gpus.is_empty() {
        let mut c = Check::new("driver.gpus", Status::Fail, "no GPU is visible to CUDA");
        if let Some(v) = visible {
            c = c
                .evidence(format!("CUDA_VISIBLE_DEVICES={v:?}"))
                .fix("unset CUDA_VISIBLE_DEVICES or list a GPU that exists (e.g. 0)");
        } else {
            c = c.fix("check `nvidia-smi`; in a container, start it with `--gpus all`");
        }
        for a in &probe.attempts {
            c = c.evidence(format!("{}: {}", a.method.name(), a.outcome));
        }
        c.code("no-device-visible")
    } else {
        let mut c = Check::new(
            "driver.gpus",
            Status::Pass,
            format!(
                "{} GPU(s) visible{}",
                probe.gpus.len(),
                probe
                    .method
                    .map_or(String::new(), |m| format!(" (via {})", m.name()))
            ),
        );
        for g in &probe.gpus {
            c = c.evidence(format!(
                "#{} {} (compute capability {}.{})",
                g.index, g.name, g.compute_capability.major, g.compute_capability.minor
            ));
        }
        if let Some(v) = visible {
            c = c.evidence(format!("CUDA_VISIBLE_DEVICES={v:?}"));
        }
        c
    });

    // Platform notes.
    let platform = if p.wsl {
        Check::new("driver.platform", Status::Pass, "WSL2").evidence(
            "libcuda comes from /usr/lib/wsl/lib; do not install a Linux display driver inside WSL",
        )
    } else if let Some(c) = &p.container {
        Check::new("driver.platform", Status::Pass, format!("container ({c})")).evidence(
            "the GPU and driver libraries come from the host via the NVIDIA Container Toolkit",
        )
    } else {
        Check::new("driver.platform", Status::Pass, "Linux, not in a container")
    };
    out.push(platform);
    out
}

fn toolkit_checks(discovery: &Result<Discovery, cb::Error>) -> Vec<Check> {
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
        .filter(|p| p.severity == cb::Severity::Error)
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
        .any(|p| p.severity == cb::Severity::Error)
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

fn verdict_check(id: &'static str, v: cb::Verdict) -> Check {
    let status = match v.status {
        cb::Status::Pass => Status::Pass,
        cb::Status::Warn => Status::Warn,
        cb::Status::Fail => Status::Fail,
    };
    let mut c = Check::new(id, status, v.reason);
    c.fix = v.fix;
    c
}

fn compat_checks(
    session: &Session,
    probe: &ProbeReport,
    toolkit: Option<&Toolkit>,
    plan: Option<&Result<ArchPlan, cb::Error>>,
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
        (Some(d), Some(v)) => verdict_check("compat.driver-sass", cb::driver_runs_sass(d, v)),
    });

    let isa = version.and_then(|v| cb::ptx_isa_for_cuda((v.major as u32, v.minor as u32)));
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
        (Some(d), Some(isa)) => verdict_check("compat.driver-ptx", cb::driver_jits_ptx(d, isa)),
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
            let targets = cb::targets_display(p).join(" ");
            let mut c = Check::new(
                "compat.arch",
                if p.warnings.is_empty() {
                    Status::Pass
                } else {
                    Status::Warn
                },
                format!(
                    "targets {targets} (from {}) are supported by this nvcc",
                    source_name(&p.source)
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
        Some(v) => match cb::detect_host_compiler(&session.env) {
            Ok(hc) => verdict_check("compat.host-compiler", cb::host_compiler_ok(&hc, v)),
            Err(e) => {
                let mut c = Check::new("compat.host-compiler", Status::Fail, e.message.clone())
                    .code(e.code);
                c.fix = e.help.first().cloned();
                c
            }
        },
    });
    out
}

/// The plan for the newest plain arch the toolkit's nvcc lists (e.g. `sm_120`).
fn newest_arch_plan(session: &Session, t: &Toolkit) -> Option<ArchPlan> {
    let support = cb::NvccArchSupport::query(&t.nvcc, t.version.as_ref(), &session.env);
    let newest = support
        .real
        .iter()
        .filter(|a| a.variant == cb::Variant::Plain)
        .max()?;
    let overrides = Overrides {
        arch: Some(newest.to_string()),
        ..Default::default()
    };
    session.plan(t, &overrides, &ProjectWants::default()).ok()
}

/// Compiles the embedded vectorAdd; returns the check and the image it built.
fn compile_check(
    env: &Env,
    toolkit: Option<&Toolkit>,
    plan: Option<&Result<ArchPlan, cb::Error>>,
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
    if let Err(e) = cuda_build::fsutil::write_atomic(&source, VECTOR_ADD_CU.as_bytes()) {
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
    match cb::compile_one(env, t, &source, &spec, &dir.path().join("out")) {
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
            let ctx = cb::Context {
                toolkits: vec![t.clone()],
                selected: Some(0),
                probe: None,
            };
            let log = format!("{}\n{}", e.message, e.detail.as_deref().unwrap_or(""));
            if let Some(d) = cb::diagnose(&log, &ctx).into_iter().next() {
                if !log.contains(&format!("[{}]", d.code)) {
                    c.evidence
                        .push(format!("diagnosis [{}]: {}", d.code, d.cause));
                }
                c.code = Some(d.code);
                if !d.fix.is_empty() {
                    c.fix = Some(d.fix.join("; "));
                }
            }
            (c, None)
        }
    }
}

fn run_checks(
    probe: &ProbeReport,
    image: Option<&[u8]>,
    opts: &Options,
    session: &Session,
    workload: Workload<'_>,
) -> Vec<Check> {
    let mut out = Vec::new();
    let gpu_usable =
        !probe.gpus.is_empty() && probe.platform.libcuda.is_some() && !probe.platform.libcuda_stub;
    if !gpu_usable {
        let why = if probe.gpus.is_empty() {
            "skipped: no GPU is visible (see driver.gpus)"
        } else {
            "skipped: no usable libcuda (see driver.libcuda)"
        };
        out.push(Check::new("run.devices", Status::Skip, why));
        out.push(Check::new("run.vector-add", Status::Skip, why));
        out.push(Check::new("run.workload", Status::Skip, why));
        return out;
    }
    out.push(match crate::gpu::query_devices() {
        Ok(devs) if devs.is_empty() => {
            Check::new("run.devices", Status::Fail, "the driver reports no devices")
                .code("no-device-visible")
        }
        Ok(devs) => {
            let mut c = Check::new(
                "run.devices",
                Status::Pass,
                format!("queried {} GPU(s) through the driver", devs.len()),
            );
            for d in devs {
                c = c.evidence(format!(
                    "#{} {}: compute capability {}.{}, {} MiB",
                    d.index,
                    d.name,
                    d.cc.0,
                    d.cc.1,
                    d.total_mem >> 20
                ));
            }
            c
        }
        Err(f) => Check::new("run.devices", Status::Fail, f.message)
            .fix("run `nvidia-smi`; see driver.* above"),
    });
    out.push(match image {
        None => Check::new("run.vector-add", Status::Skip, "skipped: nothing was compiled (see compile.vector-add)"),
        Some(bytes) => {
            let mut c = Check::new("run.vector-add", Status::Pass, String::new());
            for gpu in &probe.gpus {
                match crate::gpu::run_vector_add(bytes, gpu.index as usize) {
                    Ok(s) => c.evidence.push(format!("GPU #{}: {s}", gpu.index)),
                    Err(f) => {
                        c.status = Status::Fail;
                        c.evidence.push(format!("GPU #{}: {}", gpu.index, f.message));
                        if let Some(log) = f.jit_log {
                            c.evidence.extend(log.lines().map(|l| format!("JIT: {l}")));
                            c.code = Some("ptx-jit-failed");
                            c.fix = Some("the driver could not load the kernel for this GPU: include its arch in CUDA_ARCHS (or `--arch native`), or update the driver so it can JIT the embedded PTX".into());
                        }
                    }
                }
            }
            c.summary = if c.status == Status::Pass {
                format!("vectorAdd ran and verified on {} GPU(s)", probe.gpus.len())
            } else {
                "vectorAdd failed on at least one GPU".into()
            };
            c
        }
    });
    out.push(workload_check(opts, session, workload));
    out
}

/// What the workload run needs: the workspace, and the toolchain doctor validated.
pub struct Workload<'a> {
    workspace: Option<&'a Workspace>,
    toolkit: Option<&'a Toolkit>,
    plan: Option<&'a ArchPlan>,
}

/// Builds and runs `cuda-workload --quick` with the same environment `cargo cuda run` gives.
fn workload_check(opts: &Options, session: &Session, w: Workload<'_>) -> Check {
    if opts.no_workload {
        return Check::new("run.workload", Status::Skip, "skipped: --no-workload");
    }
    if !w.workspace.is_some_and(|ws| ws.has_member("cuda-workload")) {
        return Check::new(
            "run.workload",
            Status::Skip,
            "skipped: this workspace has no `cuda-workload` package",
        );
    }
    let Some(toolkit) = w.toolkit else {
        return Check::new("run.workload", Status::Skip, "skipped: no toolkit selected");
    };
    let cargo = match crate::workspace::find_cargo(&session.env) {
        Ok(c) => c,
        Err(e) => {
            return Check::new(
                "run.workload",
                Status::Skip,
                format!("skipped: {}", e.message),
            )
        }
    };
    let mut cmd = std::process::Command::new(&cargo);
    cmd.args(["run", "--release", "-p", "cuda-workload"]);
    if let Some(m) = &opts.overrides.manifest_path {
        cmd.arg("--manifest-path").arg(m);
    }
    cmd.args(["--", "--quick"]);
    for (k, v) in crate::wrap::child_env(toolkit, w.plan, &opts.overrides, &session.env, None, None)
    {
        cmd.env(k, v);
    }
    let timeout = cuda_build::process::timeout_from_env(&session.env, Duration::from_secs(900));
    match cuda_build::process::run_command(&mut cmd, timeout) {
        Ok(out) if out.status.success() => {
            let mut c = Check::new(
                "run.workload",
                Status::Pass,
                format!(
                    "cuda-workload --quick passed in {:.1} s",
                    out.elapsed.as_secs_f64()
                ),
            );
            c.evidence.extend(
                out.stdout
                    .lines()
                    .rev()
                    .take(12)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .map(str::to_string),
            );
            c
        }
        Ok(out) => {
            let text = out.combined();
            let mut c = Check::new(
                "run.workload",
                Status::Fail,
                format!("cuda-workload --quick failed ({})", out.status),
            );
            c.evidence.extend(
                text.lines()
                    .rev()
                    .take(20)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .map(str::to_string),
            );
            if let Some(d) = cb::diagnose(&text, &cb::Context::default()).first() {
                c.code = Some(d.code);
                c.fix = d.fix.first().cloned();
            }
            c
        }
        Err(e) => Check::new(
            "run.workload",
            Status::Fail,
            format!("cuda-workload could not run: {e}"),
        ),
    }
}

/// Prints the report like cargo: status words right-aligned, evidence and help indented.
pub fn print(report: &Report, style: &Style) {
    let mut layer = "";
    for c in &report.checks {
        if c.layer != layer {
            layer = c.layer;
            outln!("{}", style.bold(&format!("[{layer}]")));
        }
        let (tone, word) = match c.status {
            Status::Pass => (Tone::Good, "ok"),
            Status::Warn => (Tone::Warn, "warning"),
            Status::Fail => (Tone::Bad, "FAIL"),
            Status::Skip => (Tone::Dim, "skip"),
        };
        outln!(
            "{} {} {}",
            style.status(tone, word, &style.bold(c.id)),
            " ".repeat(22usize.saturating_sub(c.id.len())),
            c.summary
        );
        if c.status != Status::Skip {
            for e in &c.evidence {
                outln!("{:>12}   {}", "", e);
            }
        }
        let documented = c.code.filter(|code| cb::lookup_code(code).is_some());
        if let Some(code) = documented.filter(|_| matches!(c.status, Status::Fail | Status::Warn)) {
            outln!("{:>12}   = explain: cargo cuda explain {code}", "");
        }
        if let Some(fix) = c
            .fix
            .as_ref()
            .filter(|_| matches!(c.status, Status::Fail | Status::Warn))
        {
            outln!("{:>12}   = {}: {fix}", "", style.bold("help"));
        }
    }
    let count = |s| report.checks.iter().filter(|c| c.status == s).count();
    let (fail, warn, pass, skip) = (
        count(Status::Fail),
        count(Status::Warn),
        count(Status::Pass),
        count(Status::Skip),
    );
    let summary =
        format!("doctor: {pass} passed, {warn} warning(s), {fail} failed, {skip} skipped");
    if fail > 0 {
        outln!("{}", style.status(Tone::Bad, "Failed", &summary));
    } else {
        outln!("{}", style.status(Tone::Good, "Finished", &summary));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuda_build::probe::{DeviceNode, DriverInfo, GpuInfo, Platform, ProbeMethod};

    fn node(path: &str, exists: bool, rw: bool) -> DeviceNode {
        DeviceNode {
            path: path.into(),
            exists,
            readable: rw,
            writable: rw,
        }
    }

    fn machine() -> ProbeReport {
        ProbeReport {
            driver: Some(DriverInfo {
                version: Some("580.65.06".into()),
                cuda_version: Some((13, 0)),
                found_via: ProbeMethod::DriverApi,
            }),
            gpus: vec![GpuInfo {
                index: 0,
                name: "NVIDIA H200".into(),
                compute_capability: cb::ComputeCapability::new(9, 0),
                total_memory: Some(140 << 30),
            }],
            method: Some(ProbeMethod::DriverApi),
            attempts: vec![],
            platform: Platform {
                wsl: false,
                container: None,
                device_nodes: vec![
                    node("/dev/nvidiactl", true, true),
                    node("/dev/nvidia0", true, true),
                ],
                libcuda: Some("/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06".into()),
                libcuda_stub: false,
                kernel_module_version: Some("580.65.06".into()),
                nvml_version: Some("580.65.06".into()),
            },
        }
    }

    fn status_of(checks: &[Check], id: &str) -> Status {
        checks
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("no {id}"))
            .status
    }

    #[test]
    fn a_healthy_machine_passes_every_driver_check() {
        let checks = driver_checks(&Env::empty(), &machine(), None);
        assert!(
            checks.iter().all(|c| c.status == Status::Pass),
            "{checks:#?}"
        );
        let gpus = checks.iter().find(|c| c.id == "driver.gpus").unwrap();
        assert!(gpus.evidence[0].contains("NVIDIA H200 (compute capability 9.0)"));
    }

    #[test]
    fn no_driver_is_one_failure_with_the_fix_and_the_rest_skip() {
        let mut m = machine();
        m.driver = None;
        m.gpus.clear();
        m.platform = Platform::default();
        let min = Some((semver::Version::new(13, 0, 88), "580.65.06"));
        let checks = driver_checks(&Env::empty(), &m, min);
        let failed: Vec<_> = checks.iter().filter(|c| c.status == Status::Fail).collect();
        assert_eq!(failed.len(), 1, "{checks:#?}");
        assert_eq!(failed[0].id, "driver.kernel-module");
        assert!(failed[0]
            .fix
            .as_deref()
            .unwrap()
            .contains("580.65.06 or newer for CUDA 13.0"));
        for id in [
            "driver.device-nodes",
            "driver.libcuda",
            "driver.nvml",
            "driver.gpus",
        ] {
            assert_eq!(status_of(&checks, id), Status::Skip, "{id}");
        }
    }

    #[test]
    fn stub_libcuda_nvml_mismatch_and_denied_nodes_each_fail_with_their_code() {
        let mut m = machine();
        m.platform.libcuda = Some("/usr/local/cuda/lib64/stubs/libcuda.so".into());
        m.platform.libcuda_stub = true;
        m.platform.nvml_version = Some("580.82.07".into());
        m.platform.device_nodes[1] = node("/dev/nvidia0", true, false);
        let checks = driver_checks(&Env::empty(), &m, None);
        let get = |id: &str| checks.iter().find(|c| c.id == id).unwrap();
        assert_eq!(get("driver.libcuda").status, Status::Fail);
        assert_eq!(get("driver.libcuda").code, Some("libcuda-stub"));
        assert_eq!(get("driver.nvml").status, Status::Fail);
        assert_eq!(get("driver.nvml").code, Some("driver-library-mismatch"));
        assert_eq!(get("driver.device-nodes").status, Status::Fail);
        assert!(get("driver.device-nodes").summary.contains("/dev/nvidia0"));
    }

    #[test]
    fn hidden_gpus_name_cuda_visible_devices() {
        let mut m = machine();
        m.gpus.clear();
        let env = Env::empty().set(cb::Var::CudaVisibleDevices, "");
        let checks = driver_checks(&env, &m, None);
        let gpus = checks.iter().find(|c| c.id == "driver.gpus").unwrap();
        assert_eq!(gpus.status, Status::Fail);
        assert!(
            gpus.evidence
                .iter()
                .any(|e| e.contains("CUDA_VISIBLE_DEVICES=\"\"")),
            "{gpus:#?}"
        );
    }

    #[test]
    fn every_check_id_names_its_layer() {
        let checks = driver_checks(&Env::empty(), &machine(), None);
        for c in checks {
            assert!(c.id.starts_with("driver."));
            assert_eq!(c.layer, "driver");
        }
        assert_eq!(
            Check::new("compat.arch", Status::Pass, "").layer,
            "compatibility"
        );
    }
}
