//! The run layer: the compiled kernel on the GPU, and the sample workload.

use std::time::Duration;

use crate::session::Session;
use crate::workspace::Workspace;
use cuda_toolchain::plan::ArchPlan;
use cuda_toolchain::probe::ProbeReport;
use cuda_toolchain::toolkit::Toolkit;

use super::{Check, Options, Status};

pub(super) fn run_checks(
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
    out.push(match super::gpu::query_devices() {
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
                match super::gpu::run_vector_add(bytes, gpu.index as usize) {
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
pub(super) struct Workload<'a> {
    pub(super) workspace: Option<&'a Workspace>,
    pub(super) toolkit: Option<&'a Toolkit>,
    pub(super) plan: Option<&'a ArchPlan>,
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
    for (k, v) in
        crate::toolchain::child_env(toolkit, w.plan, &opts.overrides, &session.env, None, None)
    {
        cmd.env(k, v);
    }
    let timeout = cuda_toolchain::process::timeout_from_env(&session.env, Duration::from_secs(900));
    match cuda_toolchain::process::run_command(&mut cmd, timeout) {
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
            if let Some(d) = cuda_toolchain::diagnose::diagnose(
                &text,
                &cuda_toolchain::diagnose::Context::default(),
            )
            .first()
            {
                c.code = Some(d.code.as_str());
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
