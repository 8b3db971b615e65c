//! Probing the machine: the driver, every visible GPU, and the platform
//! (WSL2, containers, device nodes, stub libcuda), without needing a toolkit
//! or nvidia-smi.
//!
//! [`probe`] tries, in order, until one answers:
//!
//! 1. the CUDA driver API (`libcuda.so.1`, loaded by soname or from the WSL
//!    path), in a `__probe-driver` child process when one is configured
//!    ([`ProbeOptions::child_exe`] or `CARGO_CUDA_PROBE`), else in a guarded
//!    worker thread; both under a timeout. The child gets the `Env`'s
//!    `CUDA_VISIBLE_DEVICES`; in a thread libcuda applies the process's own,
//!    so an `Env` value that differs is applied to the answer where it can
//!    be (the process has none) and reported where it cannot;
//! 2. `nvidia-smi --query-gpu=...` (retrying without `compute_cap` on old
//!    drivers, and applying `CUDA_VISIBLE_DEVICES` itself), plus its banner
//!    for the CUDA version;
//! 3. the kernel module's `/proc/driver/nvidia/version` (driver only).
//!
//! Every attempt is recorded in [`ProbeReport::attempts`] with its exact
//! outcome, so `diagnose` and `cargo cuda doctor` can explain a failure.
//!
//! ```no_run
//! use cuda_toolchain::{env::Env, probe};
//! let report = probe::probe(&Env::from_process(), &probe::ProbeOptions::default());
//! for gpu in &report.gpus {
//!     println!("{} {} (sm_{})", gpu.index, gpu.name, gpu.compute_capability.number());
//! }
//! ```

mod driver_api;
mod nvidia_smi;
mod platform;
mod procfs;
mod verdict;
pub mod visible;
pub use verdict::{nvml_driver_version, nvml_verdict, NvmlVerdict};

pub use driver_api::{
    cu_result_name, DriverProbe, DRIVER_PROBE_SCHEMA, LIBCUDA_SONAME, WSL_LIBCUDA,
};

use crate::arch::ComputeCapability;
use crate::env::{Env, Var};
use std::path::PathBuf;
use std::time::Duration;

/// Which method answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeMethod {
    /// The CUDA driver API (libcuda.so.1), in a child process or guarded thread.
    DriverApi,
    /// `nvidia-smi --query-gpu=...`.
    NvidiaSmi,
    /// The kernel module's /proc/driver/nvidia/version (driver only, no GPUs).
    ProcFs,
}

/// One visible GPU.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GpuInfo {
    /// Index as the driver numbers it (after CUDA_VISIBLE_DEVICES).
    pub index: u32,
    /// Product name, e.g. "NVIDIA H200".
    pub name: String,
    /// Its compute capability.
    pub compute_capability: ComputeCapability,
    /// Total memory in bytes, when known.
    pub total_memory: Option<u64>,
}

/// The installed driver.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DriverInfo {
    /// Kernel-module / display-driver version, e.g. "580.65.06".
    pub version: Option<String>,
    /// Highest CUDA version the driver supports, e.g. (13, 0).
    pub cuda_version: Option<(u32, u32)>,
    /// Which method answered.
    pub found_via: ProbeMethod,
}

impl ProbeMethod {
    /// The kebab-case name used in JSON and reports (`driver-api`, `nvidia-smi`, `proc-fs`).
    pub fn name(self) -> &'static str {
        match self {
            ProbeMethod::DriverApi => "driver-api",
            ProbeMethod::NvidiaSmi => "nvidia-smi",
            ProbeMethod::ProcFs => "proc-fs",
        }
    }
}

impl std::fmt::Display for ProbeMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The argument that makes `cargo-cuda` answer the driver probe: `cargo-cuda
/// __probe-driver` calls [`driver_probe_child_main`].
pub const DRIVER_PROBE_ARG: &str = "__probe-driver";

/// Default time limit of each probe method (`CUDA_BUILD_TIMEOUT` overrides it).
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// How to probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeOptions {
    /// Time limit for each method (driver child or thread, nvidia-smi).
    /// `CUDA_BUILD_TIMEOUT`, when set, wins.
    pub timeout: Duration,
    /// An executable that answers `DRIVER_PROBE_ARG` (usually `cargo-cuda`):
    /// the driver API then runs in that child. Else `CARGO_CUDA_PROBE`, else a thread.
    pub child_exe: Option<PathBuf>,
    /// Do not load libcuda at all.
    pub skip_driver_api: bool,
    /// Do not run nvidia-smi.
    pub skip_nvidia_smi: bool,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            timeout: DEFAULT_PROBE_TIMEOUT,
            child_exe: None,
            skip_driver_api: false,
            skip_nvidia_smi: false,
        }
    }
}

/// One method tried, and how it went.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProbeAttempt {
    /// The method.
    pub method: ProbeMethod,
    /// What it found, or the exact failure (e.g. nvidia-smi's own message).
    pub outcome: String,
    /// Whether it answered.
    pub ok: bool,
}

/// A `/dev` node the driver needs, and this user's access to it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DeviceNode {
    /// The path as the system names it (`/dev/nvidiactl`), not under a test root.
    pub path: PathBuf,
    /// Whether it exists.
    pub exists: bool,
    /// Whether this user may read it.
    pub readable: bool,
    /// Whether this user may write it (the driver opens nodes read-write).
    pub writable: bool,
}

/// What kind of machine this is, as far as the driver is concerned.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Platform {
    /// Running under WSL2 (the GPU comes through /dev/dxg and /usr/lib/wsl/lib).
    pub wsl: bool,
    /// The container runtime, when inside one (`docker`, `podman`, `kubernetes`, `lxc`, `containerd`).
    pub container: Option<String>,
    /// `/dev/nvidiactl`, `/dev/nvidia-uvm`, `/dev/nvidia0`.. (and `/dev/dxg` on WSL).
    pub device_nodes: Vec<DeviceNode>,
    /// The libcuda file the driver probe loaded (symlinks resolved).
    pub libcuda: Option<PathBuf>,
    /// That libcuda is the toolkit's link-time stub (`CUDA_ERROR_STUB_LIBRARY`, or under `stubs/`).
    pub libcuda_stub: bool,
    /// The kernel module's version from /proc/driver/nvidia/version.
    pub kernel_module_version: Option<String>,
    /// NVML's version (libnvidia-ml, or nvidia-smi's output).
    pub nvml_version: Option<String>,
}

/// Everything [`probe`] found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProbeReport {
    /// The driver, when any method found it.
    pub driver: Option<DriverInfo>,
    /// Visible GPUs (empty when none, or none could be listed).
    pub gpus: Vec<GpuInfo>,
    /// The method whose answer this is.
    pub method: Option<ProbeMethod>,
    /// Every method tried, in order.
    pub attempts: Vec<ProbeAttempt>,
    /// The platform.
    pub platform: Platform,
}

impl ProbeReport {
    /// The distinct compute capabilities of the visible GPUs, lowest first.
    pub fn compute_capabilities(&self) -> Vec<ComputeCapability> {
        let mut ccs: Vec<ComputeCapability> =
            self.gpus.iter().map(|g| g.compute_capability).collect();
        ccs.sort();
        ccs.dedup();
        ccs
    }
}

/// Probes the driver, every visible GPU and the platform. Never panics, and
/// never waits much longer than the timeout per method.
pub fn probe(env: &Env, options: &ProbeOptions) -> ProbeReport {
    let timeout = crate::process::timeout_from_env(env, options.timeout);
    let wsl = platform::is_wsl(env);
    let kernel_module = procfs::read(env);
    let mut report = ProbeReport {
        driver: None,
        gpus: Vec::new(),
        method: None,
        attempts: Vec::new(),
        platform: Platform {
            wsl,
            container: platform::container(env),
            device_nodes: platform::device_nodes(env, wsl),
            kernel_module_version: kernel_module.as_ref().ok().map(|k| k.version.clone()),
            ..Platform::default()
        },
    };

    if options.skip_driver_api {
        report
            .attempts
            .push(skipped(ProbeMethod::DriverApi, "skip_driver_api"));
    } else {
        driver_api_attempt(env, options, timeout, &mut report);
    }

    if report.method.is_none() {
        if options.skip_nvidia_smi {
            report
                .attempts
                .push(skipped(ProbeMethod::NvidiaSmi, "skip_nvidia_smi"));
        } else {
            nvidia_smi_attempt(env, timeout, &mut report);
        }
    }

    if report.method.is_none() {
        let (ok, outcome) = match &kernel_module {
            Ok(k) => {
                report.driver = Some(DriverInfo {
                    version: Some(k.version.clone()),
                    cuda_version: None,
                    found_via: ProbeMethod::ProcFs,
                });
                report.method = Some(ProbeMethod::ProcFs);
                (
                    true,
                    format!(
                        "{} kernel module {} (driver only: this method lists no GPUs)",
                        if k.open { "open" } else { "proprietary" },
                        k.version
                    ),
                )
            }
            Err(e) => (false, e.clone()),
        };
        report.attempts.push(ProbeAttempt {
            method: ProbeMethod::ProcFs,
            outcome,
            ok,
        });
    }

    // A method that found no driver version borrows the kernel module's.
    if let (Some(driver), Ok(k)) = (report.driver.as_mut(), &kernel_module) {
        if driver.version.is_none() {
            driver.version = Some(k.version.clone());
        }
    }
    // No CUDA version (the /proc answer, a failed banner): the branch table knows it.
    if let Some(driver) = report.driver.as_mut() {
        if driver.cuda_version.is_none() {
            let inferred = driver
                .version
                .as_deref()
                .and_then(crate::facts::max_cuda_for_driver);
            if let (Some((major, minor)), Some(last)) = (inferred, report.attempts.last_mut()) {
                driver.cuda_version = inferred;
                last.outcome.push_str(&format!(
                    "; CUDA {major}.{minor} from the driver-branch table"
                ));
            }
        }
    }
    report
}

fn skipped(method: ProbeMethod, option: &str) -> ProbeAttempt {
    ProbeAttempt {
        method,
        outcome: format!("skipped (ProbeOptions::{option})"),
        ok: false,
    }
}

fn driver_api_attempt(
    env: &Env,
    options: &ProbeOptions,
    timeout: Duration,
    report: &mut ProbeReport,
) {
    let child = options.child_exe.clone().or_else(|| {
        env.get_nonempty(Var::CargoCudaProbe)
            .map(|s| PathBuf::from(s.trim()))
    });
    let (how, result) = match &child {
        Some(exe) if !exe.is_absolute() => (
            format!("child `{}`", exe.display()),
            Err(format!(
                "the driver probe executable `{}` (CARGO_CUDA_PROBE or ProbeOptions::child_exe) must be an absolute path",
                exe.display()
            )),
        ),
        Some(exe) => (format!("child `{}`", exe.display()), driver_api::run_child(exe, env, timeout)),
        None => ("in-process".to_string(), driver_api::run_in_thread(env, timeout)),
    };
    let requested = env.get_os(Var::CudaVisibleDevices);
    let mut notes = Vec::new();
    if let (Some(value), Some(_)) = (requested, &child) {
        // The child was started with exactly this value; its driver applies it.
        let value = value.to_string_lossy();
        notes.push(format!(
            "CUDA_VISIBLE_DEVICES=`{}` applied by the driver",
            procfs::shorten(&value)
        ));
        notes.extend(visible::parse(&value).problem);
    }
    let (ok, outcome) = match result {
        Err(e) => (false, e),
        Ok(mut p) => {
            if child.is_none() {
                let own = Env::from_process();
                let (gpus, note) = visible_in_thread(
                    requested,
                    own.get_os(Var::CudaVisibleDevices),
                    std::mem::take(&mut p.gpus),
                );
                p.gpus = gpus;
                notes.extend(note);
            }
            report.platform.libcuda = p.libcuda.clone();
            report.platform.libcuda_stub = p.libcuda_stub;
            if p.nvml_version.is_some() {
                report.platform.nvml_version = p.nvml_version.clone();
            }
            notes.extend(p.notes.iter().cloned());
            match (p.error, p.driver) {
                (Some(e), _) => (false, e),
                (None, None) => (
                    false,
                    "the driver probe returned neither a driver nor an error".into(),
                ),
                (None, Some(driver)) => {
                    let summary = format!(
                        "libcuda {}: driver {}, CUDA {}, {}",
                        p.libcuda
                            .as_ref()
                            .map(|l| l.display().to_string())
                            .unwrap_or_else(|| "(path unknown)".into()),
                        driver.version.as_deref().unwrap_or("(version unknown)"),
                        driver
                            .cuda_version
                            .map(|(a, b)| format!("{a}.{b}"))
                            .unwrap_or_else(|| "?".into()),
                        gpu_list(&p.gpus)
                    );
                    report.driver = Some(driver);
                    report.gpus = p.gpus;
                    report.method = Some(ProbeMethod::DriverApi);
                    (true, summary)
                }
            }
        }
    };
    report.attempts.push(ProbeAttempt {
        method: ProbeMethod::DriverApi,
        outcome: with_notes(format!("{how}: {outcome}"), &notes),
        ok,
    });
}

/// In a thread, libcuda applies this *process's* `CUDA_VISIBLE_DEVICES`,
/// which can differ from the one `env` asks for (an `Env` built in code).
/// Narrows the driver's GPUs to the requested list where that is possible
/// (the process has none set), and says what was applied either way.
fn visible_in_thread(
    requested: Option<&std::ffi::OsStr>,
    process: Option<&std::ffi::OsStr>,
    gpus: Vec<GpuInfo>,
) -> (Vec<GpuInfo>, Option<String>) {
    let show = |v: &std::ffi::OsStr| format!("`{}`", procfs::shorten(&v.to_string_lossy()));
    match (requested, process) {
        (None, None) => (gpus, None),
        (Some(r), Some(p)) if r == p => {
            let mut note = format!("CUDA_VISIBLE_DEVICES={} applied by the driver", show(r));
            if let Some(problem) = visible::parse(&r.to_string_lossy()).problem {
                note.push_str(&format!("; {problem}"));
            }
            (gpus, Some(note))
        }
        (Some(r), None) => {
            // The driver saw every GPU, numbered as CUDA_VISIBLE_DEVICES indices
            // count them; pick and renumber as the driver would have.
            let all: Vec<(u32, Option<String>)> = gpus.iter().map(|g| (g.index, None)).collect();
            let (chosen, problem) = visible::select(&r.to_string_lossy(), &all);
            let picked = chosen
                .iter()
                .zip(0u32..)
                .filter_map(|(&pos, index)| {
                    let mut g = gpus.get(pos)?.clone();
                    g.index = index;
                    Some(g)
                })
                .collect();
            let mut note = format!(
                "CUDA_VISIBLE_DEVICES={} applied by cuda-build (the in-process driver saw every GPU)",
                show(r)
            );
            if let Some(problem) = problem {
                note.push_str(&format!("; {problem}"));
            }
            (picked, Some(note))
        }
        (r, Some(p)) => (
            gpus,
            Some(format!(
                "this process's CUDA_VISIBLE_DEVICES={} was applied by the in-process driver, not the requested {}; set CARGO_CUDA_PROBE to the cargo-cuda executable to probe in a child with the requested value",
                show(p),
                r.map_or("(unset)".to_string(), show)
            )),
        ),
    }
}

fn nvidia_smi_attempt(env: &Env, timeout: Duration, report: &mut ProbeReport) {
    let smi = nvidia_smi::probe(env, timeout);
    if report.platform.nvml_version.is_none() {
        report.platform.nvml_version = smi.nvml_version.clone();
    }
    let (ok, outcome) = match smi.result {
        Err(e) => (false, e),
        Ok(answer) => {
            let summary = with_notes(
                format!(
                    "driver {}, CUDA {}, {}",
                    answer
                        .driver_version
                        .as_deref()
                        .unwrap_or("(version unknown)"),
                    answer
                        .cuda_version
                        .map(|(a, b)| format!("{a}.{b}"))
                        .unwrap_or_else(|| "?".into()),
                    gpu_list(&answer.gpus)
                ),
                &answer.notes,
            );
            report.driver = Some(DriverInfo {
                version: answer.driver_version,
                cuda_version: answer.cuda_version,
                found_via: ProbeMethod::NvidiaSmi,
            });
            report.gpus = answer.gpus;
            report.method = Some(ProbeMethod::NvidiaSmi);
            (true, summary)
        }
    };
    report.attempts.push(ProbeAttempt {
        method: ProbeMethod::NvidiaSmi,
        outcome,
        ok,
    });
}

fn gpu_list(gpus: &[GpuInfo]) -> String {
    if gpus.is_empty() {
        return "no GPU visible".into();
    }
    let items: Vec<String> = gpus
        .iter()
        .map(|g| format!("{} {} ({})", g.index, g.name, g.compute_capability))
        .collect();
    format!(
        "{} GPU{}: {}",
        gpus.len(),
        if gpus.len() == 1 { "" } else { "s" },
        items.join(", ")
    )
}

fn with_notes(text: String, notes: &[String]) -> String {
    if notes.is_empty() {
        text
    } else {
        format!("{text}; {}", notes.join("; "))
    }
}

/// The driver API, in this process: the driver and the GPUs it shows, or the
/// exact failure (`libcuda.so.1 not found (...)`, `cuInit failed: CUDA_ERROR_... (N): ...`).
///
/// It loads libcuda into the calling process; [`probe`] runs it in a child or
/// a guarded thread instead. The driver itself applies this process's
/// `CUDA_VISIBLE_DEVICES`.
pub fn driver_api_in_process(env: &Env) -> Result<(DriverInfo, Vec<GpuInfo>), String> {
    let p = driver_api::probe_in_process(env);
    match (p.error, p.driver) {
        (Some(e), _) => Err(e),
        (None, Some(driver)) => Ok((driver, p.gpus)),
        (None, None) => Err("the driver probe returned neither a driver nor an error".into()),
    }
}

/// The full in-process driver probe (libcuda path, stub flag, NVML version too).
pub fn driver_probe_in_process(env: &Env) -> DriverProbe {
    driver_api::probe_in_process(env)
}

/// The driver probe against a libcuda at an absolute path (for tests with a
/// fake libcuda; relative paths are refused).
pub fn driver_probe_library_at(path: &std::path::Path, env: &Env) -> DriverProbe {
    driver_api::probe_library_at(path, env)
}

/// The body of `cargo-cuda __probe-driver`: prints one [`DriverProbe`] JSON
/// line on stdout and returns the exit code (0: the driver answered; 1: the
/// JSON carries an error; 2: stdout could not be written).
///
/// ```no_run
/// # let args: Vec<String> = std::env::args().collect();
/// if args.get(1).map(String::as_str) == Some(cuda_toolchain::probe::DRIVER_PROBE_ARG) {
///     std::process::exit(cuda_toolchain::probe::driver_probe_child_main(&cuda_toolchain::env::Env::from_process()));
/// }
/// ```
pub fn driver_probe_child_main(env: &Env) -> i32 {
    use std::io::Write;
    let p = driver_api::probe_in_process(env);
    let code = if p.error.is_none() { 0 } else { 1 };
    let mut stdout = std::io::stdout().lock();
    match writeln!(stdout, "{}", p.to_json()).and_then(|_| stdout.flush()) {
        Ok(()) => code,
        Err(_) => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    fn gpus(n: u32) -> Vec<GpuInfo> {
        (0..n)
            .map(|i| GpuInfo {
                index: i,
                name: format!("GPU {i}"),
                compute_capability: ComputeCapability::new(8 + i, 0),
                total_memory: None,
            })
            .collect()
    }

    #[test]
    fn thread_probe_applies_the_requested_visible_devices_when_the_process_has_none() {
        let (picked, note) = visible_in_thread(Some(OsStr::new("2,0")), None, gpus(3));
        let names: Vec<(u32, &str)> = picked.iter().map(|g| (g.index, g.name.as_str())).collect();
        assert_eq!(names, vec![(0, "GPU 2"), (1, "GPU 0")]);
        assert!(note.unwrap().contains("applied by cuda-build"));
        // An entry naming no GPU ends the list, as in the driver.
        let (picked, note) = visible_in_thread(Some(OsStr::new("1,7,0")), None, gpus(2));
        assert_eq!(picked.len(), 1);
        assert_eq!(picked[0].name, "GPU 1");
        assert!(note.unwrap().contains("`7` names no GPU"));
        // Empty hides every GPU.
        assert!(visible_in_thread(Some(OsStr::new("")), None, gpus(2))
            .0
            .is_empty());
    }

    #[test]
    fn thread_probe_reports_a_process_value_it_cannot_undo() {
        let (kept, note) = visible_in_thread(Some(OsStr::new("1")), Some(OsStr::new("0")), gpus(1));
        assert_eq!(kept.len(), 1);
        let note = note.unwrap();
        assert!(
            note.contains("`0` was applied") && note.contains("requested `1`"),
            "{note}"
        );
        assert!(note.contains("CARGO_CUDA_PROBE"), "{note}");
        let (_, note) = visible_in_thread(None, Some(OsStr::new("0")), gpus(1));
        assert!(note.unwrap().contains("requested (unset)"));
        let (kept, note) = visible_in_thread(Some(OsStr::new("0")), Some(OsStr::new("0")), gpus(1));
        assert_eq!(kept.len(), 1);
        assert!(note.unwrap().contains("applied by the driver"));
        assert_eq!(visible_in_thread(None, None, gpus(2)), (gpus(2), None));
    }
}
