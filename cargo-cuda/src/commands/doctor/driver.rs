//! The driver layer: kernel module, device nodes, libcuda, NVML, visible GPUs.

use cuda_toolchain::env::Env;
use cuda_toolchain::env::Var;
use cuda_toolchain::probe::ProbeReport;

use super::{Check, Status};

pub(super) fn driver_fix(min: Option<(semver::Version, &'static str)>) -> String {
    match min {
        Some((v, d)) => format!(
            "install the NVIDIA driver ({d} or newer for CUDA {}.{}) on a machine with an NVIDIA GPU; in a container, start it with `--gpus all` (NVIDIA Container Toolkit)",
            v.major, v.minor
        ),
        None => "install the NVIDIA driver on a machine with an NVIDIA GPU; in a container, start it with `--gpus all` (NVIDIA Container Toolkit)".into(),
    }
}

pub(super) fn driver_checks(
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

    // NVML against the kernel module: driver version to driver version.
    out.push(match cuda_toolchain::probe::nvml_verdict(probe) {
        _ if no_driver => Check::new("driver.nvml", Status::Skip, skip_reason),
        cuda_toolchain::probe::NvmlVerdict::Match { driver } => Check::new(
            "driver.nvml",
            Status::Pass,
            format!("NVML {driver} matches the kernel module"),
        ),
        cuda_toolchain::probe::NvmlVerdict::Mismatch {
            libraries,
            kernel_module,
            message,
        } => {
            let summary = match (&libraries, &kernel_module) {
                (Some(n), Some(k)) => format!("NVML {n} does not match the kernel module {k}"),
                _ => "NVML reports a driver/library version mismatch".to_string(),
            };
            let mut c = Check::new("driver.nvml", Status::Fail, summary);
            if let Some(m) = message {
                c = c.evidence(m);
            }
            c.evidence("a driver update without a reboot leaves the old kernel module loaded")
                .fix("reboot (or unload and reload the nvidia kernel modules)")
                .code("driver-library-mismatch")
        }
        cuda_toolchain::probe::NvmlVerdict::Unavailable => Check::new(
            "driver.nvml",
            Status::Skip,
            "NVML is not available here (nvidia-smi / libnvidia-ml not found)",
        ),
        cuda_toolchain::probe::NvmlVerdict::Unchecked { libraries } => {
            Check::new("driver.nvml", Status::Pass, format!("NVML {libraries}"))
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use cuda_toolchain::probe::{DeviceNode, DriverInfo, GpuInfo, Platform, ProbeMethod};

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
                compute_capability: cuda_toolchain::arch::ComputeCapability::new(9, 0),
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
                // nvmlSystemGetNVMLVersion's real shape: the CUDA version first.
                nvml_version: Some("13.580.65.06".into()),
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

    /// NVML 580.65.06 against module 575.57.08, and NVML refusing to start,
    /// fail; the healthy "13.580.65.06" against "580.65.06" passed above.
    #[test]
    fn nvml_against_an_older_module_or_refusing_fails() {
        let mut m = machine();
        m.platform.kernel_module_version = Some("575.57.08".into());
        m.platform.nvml_version = Some("580.65.06".into());
        let checks = driver_checks(&Env::empty(), &m, None);
        let c = checks.iter().find(|c| c.id == "driver.nvml").unwrap();
        assert_eq!(c.status, Status::Fail, "{c:#?}");
        assert!(
            c.summary.contains("580.65.06") && c.summary.contains("575.57.08"),
            "{c:#?}"
        );
        let mut m = machine();
        m.platform.nvml_version = None;
        m.attempts.push(cuda_toolchain::probe::ProbeAttempt {
            method: cuda_toolchain::probe::ProbeMethod::NvidiaSmi,
            outcome: "Failed to initialize NVML: Driver/library version mismatch".into(),
            ok: false,
        });
        let checks = driver_checks(&Env::empty(), &m, None);
        let c = checks.iter().find(|c| c.id == "driver.nvml").unwrap();
        assert_eq!(c.status, Status::Fail, "{c:#?}");
        assert_eq!(c.code, Some("driver-library-mismatch"));
    }

    #[test]
    fn hidden_gpus_name_cuda_visible_devices() {
        let mut m = machine();
        m.gpus.clear();
        let env = Env::empty().set(cuda_toolchain::env::Var::CudaVisibleDevices, "");
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
