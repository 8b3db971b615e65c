//! Integration tests: probe.
//!
//! nvidia-smi, the driver-probe child and /proc are faked where this machine
//! has none (scripts that print the real tools' text, a fake root); the real
//! driver-API path runs as-is (here: no libcuda, so it must fail cleanly and
//! fast). GPU tests run under scripts/gpu-check.sh.

use cuda_toolchain::arch::ComputeCapability;
use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::probe::{self, ProbeMethod, ProbeOptions, ProbeReport};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use workspace_tests::write_script;

const OLD_BANNER: &str = r#"Sun Nov 29 16:20:01 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.65.06              Driver Version: 580.65.06      CUDA Version: 13.0     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
|=========================================+========================+======================|
|   0  NVIDIA H200                    On  |   00000000:19:00.0 Off |                    0 |
+-----------------------------------------+------------------------+----------------------+"#;

const R610_BANNER: &str = r#"+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 610.43.02              KMD Version: 610.43.02      CUDA UMD Version: 13.3     |
+-----------------------------------------+------------------------+----------------------+"#;

/// Three GPUs of three generations, in `index,uuid,name,compute_cap,memory.total,driver_version`.
const THREE_GPUS: &str =
    "0, GPU-1a2b3c4d-0000-1111-2222-333344445555, NVIDIA H200, 9.0, 143771, 580.65.06
1, GPU-9f8e7d6c-0000-1111-2222-333344445555, NVIDIA L4, 8.9, 23034, 580.65.06
2, GPU-9f00aa11-0000-1111-2222-333344445555, Tesla T4, 7.5, 15360, 580.65.06";

/// A fake machine: a root for /proc and /dev, and a bin dir on PATH.
struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    fn new() -> Fake {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("root/dev")).unwrap();
        std::fs::create_dir_all(dir.path().join("root/proc")).unwrap();
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        Fake { dir }
    }
    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }
    fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }
    fn file(&self, path: &str, text: &str) {
        let p = self.root().join(path.trim_start_matches('/'));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    /// A fake nvidia-smi: `query` answers `--query-gpu=...`, `banner` the bare call.
    fn smi(&self, body: &str) {
        write_script(&self.bin().join("nvidia-smi"), body);
    }
    fn smi_printing(&self, query: &str, banner: &str) {
        self.smi(&format!(
            "case \"$1\" in\n--query-gpu=*) cat <<'EOF'\n{query}\nEOF\n;;\n*) cat <<'EOF'\n{banner}\nEOF\n;;\nesac"
        ));
    }
    fn env(&self) -> Env {
        Env::empty()
            .with_root(self.root())
            .set(Var::Path, self.bin())
    }
}

/// nvidia-smi and /proc only: the real driver API would answer first on a GPU machine.
fn no_driver_api() -> ProbeOptions {
    ProbeOptions {
        skip_driver_api: true,
        timeout: Duration::from_secs(5),
        ..ProbeOptions::default()
    }
}

fn cc(major: u32, minor: u32) -> ComputeCapability {
    ComputeCapability::new(major, minor)
}

fn attempt(report: &ProbeReport, method: ProbeMethod) -> &probe::ProbeAttempt {
    report
        .attempts
        .iter()
        .find(|a| a.method == method)
        .unwrap_or_else(|| panic!("no {method} attempt in {:#?}", report.attempts))
}

#[test]
fn nvidia_smi_old_banner_with_three_generations() {
    let fake = Fake::new();
    fake.smi_printing(THREE_GPUS, OLD_BANNER);
    let report = probe::probe(&fake.env(), &no_driver_api());
    assert_eq!(report.method, Some(ProbeMethod::NvidiaSmi), "{report:#?}");
    let driver = report.driver.as_ref().unwrap();
    assert_eq!(driver.version.as_deref(), Some("580.65.06"));
    assert_eq!(driver.cuda_version, Some((13, 0)));
    assert_eq!(driver.found_via, ProbeMethod::NvidiaSmi);
    let got: Vec<(u32, &str, ComputeCapability, Option<u64>)> = report
        .gpus
        .iter()
        .map(|g| {
            (
                g.index,
                g.name.as_str(),
                g.compute_capability,
                g.total_memory,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (0, "NVIDIA H200", cc(9, 0), Some(143771 * 1024 * 1024)),
            (1, "NVIDIA L4", cc(8, 9), Some(23034 * 1024 * 1024)),
            (2, "Tesla T4", cc(7, 5), Some(15360 * 1024 * 1024)),
        ]
    );
    assert_eq!(
        report.compute_capabilities(),
        vec![cc(7, 5), cc(8, 9), cc(9, 0)]
    );
    assert_eq!(report.platform.nvml_version.as_deref(), Some("580.65.06"));
    let a = attempt(&report, ProbeMethod::NvidiaSmi);
    assert!(a.ok && a.outcome.contains("3 GPUs"), "{}", a.outcome);
    assert!(!attempt(&report, ProbeMethod::DriverApi).ok);
    // The answer came from nvidia-smi, so /proc was not needed.
    assert!(report
        .attempts
        .iter()
        .all(|a| a.method != ProbeMethod::ProcFs));
}

#[test]
fn nvidia_smi_r610_banner_spelling() {
    let fake = Fake::new();
    fake.smi_printing(
        "0, GPU-1a2b3c4d-0000-1111-2222-333344445555, NVIDIA B200, 10.0, 183359, 610.43.02",
        R610_BANNER,
    );
    let report = probe::probe(&fake.env(), &no_driver_api());
    let driver = report.driver.unwrap();
    assert_eq!(driver.version.as_deref(), Some("610.43.02"));
    assert_eq!(driver.cuda_version, Some((13, 3)));
    assert_eq!(report.gpus[0].compute_capability, cc(10, 0));
}

#[test]
fn compute_cap_rejected_by_an_old_driver_falls_back_to_the_name_table() {
    let fake = Fake::new();
    // R470's real behaviour: the whole query fails when it names compute_cap.
    fake.smi(
        r#"case "$1" in
*compute_cap*) echo 'Field "compute_cap" is not a valid field to query.'; echo; echo "Run 'nvidia-smi --help' for usage."; exit 2;;
--query-gpu=*) echo "0, GPU-aaaa, Tesla T4, 15109, 470.82.01"; echo "1, GPU-bbbb, NVIDIA A100-SXM4-40GB, 40536, 470.82.01"; echo "2, GPU-cccc, Mystery GPU 9000, 1024, 470.82.01";;
*) echo "| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4     |";;
esac"#,
    );
    let report = probe::probe(&fake.env(), &no_driver_api());
    assert_eq!(report.method, Some(ProbeMethod::NvidiaSmi), "{report:#?}");
    let ccs: Vec<(&str, ComputeCapability)> = report
        .gpus
        .iter()
        .map(|g| (g.name.as_str(), g.compute_capability))
        .collect();
    assert_eq!(
        ccs,
        vec![("Tesla T4", cc(7, 5)), ("NVIDIA A100-SXM4-40GB", cc(8, 0))]
    );
    assert_eq!(report.driver.as_ref().unwrap().cuda_version, Some((11, 4)));
    let outcome = &attempt(&report, ProbeMethod::NvidiaSmi).outcome;
    assert!(
        outcome.contains("rejected the compute_cap field"),
        "{outcome}"
    );
    assert!(outcome.contains("`Mystery GPU 9000` left out"), "{outcome}");
}

#[test]
fn hanging_nvidia_smi_is_killed_and_proc_answers() {
    let fake = Fake::new();
    fake.smi("sleep 30");
    fake.file(
        "/proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  (dvs-builder@U16-I3-B03-4-3)  Sun Jul 27 06:54:38 UTC 2025\nGCC version:  gcc version 13.3.0\n",
    );
    let start = Instant::now();
    let report = probe::probe(
        &fake.env(),
        &ProbeOptions {
            timeout: Duration::from_millis(500),
            ..no_driver_api()
        },
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    let smi = attempt(&report, ProbeMethod::NvidiaSmi);
    assert!(!smi.ok);
    assert!(
        smi.outcome.contains("did not finish within 500 ms"),
        "{}",
        smi.outcome
    );
    assert_eq!(report.method, Some(ProbeMethod::ProcFs));
    let driver = report.driver.clone().unwrap();
    assert_eq!(driver.version.as_deref(), Some("580.65.06"));
    assert_eq!(driver.found_via, ProbeMethod::ProcFs);
    assert!(report.gpus.is_empty());
    assert_eq!(driver.cuda_version, Some((13, 0)));
    let outcome = &attempt(&report, ProbeMethod::ProcFs).outcome;
    assert!(
        outcome.contains("open kernel module 580.65.06"),
        "{outcome}"
    );
    assert!(
        outcome.contains("CUDA 13.0 from the driver-branch table"),
        "{outcome}"
    );
    assert_eq!(
        report.platform.kernel_module_version.as_deref(),
        Some("580.65.06")
    );
}

#[test]
fn cuda_build_timeout_overrides_the_option() {
    let fake = Fake::new();
    fake.smi("sleep 30");
    let start = Instant::now();
    let report = probe::probe(
        &fake.env().set(Var::CudaBuildTimeout, "0.3"),
        &no_driver_api(),
    );
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "took {:?}",
        start.elapsed()
    );
    let outcome = &attempt(&report, ProbeMethod::NvidiaSmi).outcome;
    assert!(outcome.contains("300 ms"), "{outcome}");
}

#[test]
fn nvidia_smi_failures_keep_their_exact_message() {
    let cases = [
        (
            "echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\"; exit 9",
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
            "exit status 9",
            None,
        ),
        (
            "echo 'Failed to initialize NVML: Driver/library version mismatch'; echo 'NVML library version: 580.173'; exit 18",
            "Failed to initialize NVML: Driver/library version mismatch",
            "exit status 18",
            Some("580.173"),
        ),
        (
            "echo 'NVIDIA-SMI couldn'\"'\"'t find libnvidia-ml.so library in your system.' >&2; exit 12",
            "couldn't find libnvidia-ml.so",
            "exit status 12",
            None,
        ),
    ];
    for (body, message, status, nvml) in cases {
        let fake = Fake::new();
        fake.smi(body);
        let report = probe::probe(&fake.env(), &no_driver_api());
        let smi = attempt(&report, ProbeMethod::NvidiaSmi);
        assert!(!smi.ok);
        assert!(smi.outcome.contains(message), "{}", smi.outcome);
        assert!(smi.outcome.contains(status), "{}", smi.outcome);
        assert_eq!(report.platform.nvml_version.as_deref(), nvml);
        // No /proc file in this fake root: nothing answered, and that is said.
        assert_eq!(report.method, None);
        assert!(attempt(&report, ProbeMethod::ProcFs)
            .outcome
            .contains("does not exist"));
    }
}

#[test]
fn garbage_from_nvidia_smi_is_an_attempt_outcome() {
    for (query, expect) in [
        (
            "hello, world",
            "2 fields where 6 were expected: `hello, world`",
        ),
        ("\u{1F600} \u{0} \u{fffd}", "fields where 6 were expected"),
        ("", "no GPU lines"),
        (
            "0, GPU-1, NVIDIA H200, nine.oh, 1, 580.65.06",
            "not `major.minor`",
        ),
    ] {
        let fake = Fake::new();
        fake.smi_printing(query, "unexpected banner");
        let report = probe::probe(&fake.env(), &no_driver_api());
        let smi = attempt(&report, ProbeMethod::NvidiaSmi);
        assert!(!smi.ok);
        assert!(smi.outcome.contains(expect), "{query:?}: {}", smi.outcome);
    }
    // A good query with a banner nobody expected: the GPUs stand, and the CUDA
    // version comes from the driver-branch table instead of the banner.
    let fake = Fake::new();
    fake.smi_printing(THREE_GPUS, "Welcome to the machine\n\u{fffd}\u{fffd}");
    let report = probe::probe(&fake.env(), &no_driver_api());
    assert_eq!(report.gpus.len(), 3);
    assert_eq!(report.driver.as_ref().unwrap().cuda_version, Some((13, 0)));
    let outcome = &attempt(&report, ProbeMethod::NvidiaSmi).outcome;
    assert!(outcome.contains("driver 580.65.06, CUDA ?"), "{outcome}");
    assert!(
        outcome.contains("CUDA 13.0 from the driver-branch table"),
        "{outcome}"
    );
    // A driver number the table cannot place leaves the CUDA version unknown.
    let fake = Fake::new();
    fake.smi_printing("0, GPU-1, NVIDIA H200, 9.0, 143771, 99.1.2", "no banner");
    let report = probe::probe(&fake.env(), &no_driver_api());
    assert_eq!(report.driver.unwrap().cuda_version, None);
}

#[test]
fn cuda_visible_devices_is_applied_to_nvidia_smi_output() {
    let fake = Fake::new();
    fake.smi_printing(THREE_GPUS, OLD_BANNER);
    let names = |value: &str| -> (Vec<(u32, String)>, String) {
        let env = fake.env().set(Var::CudaVisibleDevices, value);
        let report = probe::probe(&env, &no_driver_api());
        assert_eq!(report.method, Some(ProbeMethod::NvidiaSmi));
        (
            report
                .gpus
                .iter()
                .map(|g| (g.index, g.name.clone()))
                .collect(),
            attempt(&report, ProbeMethod::NvidiaSmi).outcome.clone(),
        )
    };
    let (gpus, _) = names("2,0");
    assert_eq!(
        gpus,
        vec![(0, "Tesla T4".to_string()), (1, "NVIDIA H200".to_string())]
    );
    let (gpus, _) = names("GPU-9f8e");
    assert_eq!(gpus, vec![(0, "NVIDIA L4".to_string())]);
    let (gpus, outcome) = names("");
    assert!(gpus.is_empty());
    assert!(outcome.contains("0 of 3 GPUs visible"), "{outcome}");
    let (gpus, outcome) = names("1,bogus,0");
    assert_eq!(gpus, vec![(0, "NVIDIA L4".to_string())]);
    assert!(outcome.contains("entry `bogus` is not usable"), "{outcome}");
    let (gpus, outcome) = names("GPU-9f");
    assert!(gpus.is_empty());
    assert!(outcome.contains("matches 2 GPUs"), "{outcome}");
    let (gpus, outcome) = names("5");
    assert!(gpus.is_empty());
    assert!(outcome.contains("`5` names no GPU"), "{outcome}");
}

#[test]
fn nvidia_smi_found_at_known_paths_under_the_root_but_never_via_relative_path() {
    let fake = Fake::new();
    write_script(
        &fake.root().join("usr/local/nvidia/bin/nvidia-smi"),
        &format!(
            "case \"$1\" in\n--query-gpu=*) echo '{}';;\n*) echo 'CUDA Version: 13.0';;\nesac",
            THREE_GPUS.lines().next().unwrap()
        ),
    );
    // PATH holds only a relative entry that does hold an nvidia-smi: it must be ignored.
    let cwd_bin = Path::new("relative-bin");
    let env = Env::empty().with_root(fake.root()).set(Var::Path, cwd_bin);
    let report = probe::probe(&env, &no_driver_api());
    assert_eq!(report.method, Some(ProbeMethod::NvidiaSmi), "{report:#?}");
    assert_eq!(report.gpus[0].name, "NVIDIA H200");

    let empty = Fake::new();
    let report = probe::probe(&empty.env(), &no_driver_api());
    let smi = attempt(&report, ProbeMethod::NvidiaSmi);
    assert!(
        smi.outcome.contains("nvidia-smi was not found"),
        "{}",
        smi.outcome
    );
}

#[test]
fn fake_proc_root_platform_docker_and_device_nodes() {
    let fake = Fake::new();
    fake.file("/.dockerenv", "");
    fake.file(
        "/proc/version",
        "Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075) #45-Ubuntu SMP\n",
    );
    fake.file("/proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 18:56:32 UTC 2023\n");
    for node in ["nvidiactl", "nvidia0", "nvidia1", "nvidia-uvm"] {
        fake.file(&format!("/dev/{node}"), "");
    }
    let report = probe::probe(
        &fake.env(),
        &ProbeOptions {
            skip_nvidia_smi: true,
            ..no_driver_api()
        },
    );
    let p = &report.platform;
    assert!(!p.wsl);
    assert_eq!(p.container.as_deref(), Some("docker"));
    let nodes: Vec<(String, bool)> = p
        .device_nodes
        .iter()
        .map(|n| (n.path.display().to_string(), n.exists && n.readable))
        .collect();
    assert_eq!(
        nodes,
        vec![
            ("/dev/nvidiactl".to_string(), true),
            ("/dev/nvidia-uvm".to_string(), true),
            ("/dev/nvidia0".to_string(), true),
            ("/dev/nvidia1".to_string(), true),
        ]
    );
    assert_eq!(p.kernel_module_version.as_deref(), Some("535.129.03"));
    assert_eq!(report.method, Some(ProbeMethod::ProcFs));
    assert_eq!(
        report
            .attempts
            .iter()
            .map(|a| (a.method, a.ok))
            .collect::<Vec<_>>(),
        vec![
            (ProbeMethod::DriverApi, false),
            (ProbeMethod::NvidiaSmi, false),
            (ProbeMethod::ProcFs, true)
        ]
    );
    assert!(attempt(&report, ProbeMethod::DriverApi)
        .outcome
        .contains("skipped"));
}

#[test]
fn fake_proc_root_wsl_and_cgroup_container() {
    let fake = Fake::new();
    fake.file(
        "/proc/version",
        "Linux version 5.15.167.4-microsoft-standard-WSL2 (root@f9c826d3017f)\n",
    );
    fake.file(
        "/proc/1/cgroup",
        "0::/kubepods.slice/kubepods-besteffort.slice/cri-containerd-0123.scope\n",
    );
    let report = probe::probe(
        &fake.env(),
        &ProbeOptions {
            skip_nvidia_smi: true,
            ..no_driver_api()
        },
    );
    assert!(report.platform.wsl);
    assert_eq!(report.platform.container.as_deref(), Some("kubernetes"));
    assert!(report
        .platform
        .device_nodes
        .iter()
        .any(|n| n.path == Path::new("/dev/dxg") && !n.exists));
    // No driver anywhere: every method said why, nothing panicked.
    assert_eq!(report.method, None);
    assert_eq!(report.driver, None);
}

#[test]
fn odd_proc_files_do_not_panic() {
    for text in [
        "",
        "\u{0}\u{0}\u{fffd}",
        "NVRM version: nothing here",
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  banana  Sun",
    ] {
        let fake = Fake::new();
        fake.file("/proc/driver/nvidia/version", text);
        fake.file("/proc/version", text);
        fake.file("/proc/1/cgroup", text);
        let report = probe::probe(
            &fake.env(),
            &ProbeOptions {
                skip_nvidia_smi: true,
                ..no_driver_api()
            },
        );
        let procfs = attempt(&report, ProbeMethod::ProcFs);
        assert!(!procfs.ok);
        assert!(
            procfs.outcome.contains("/proc/driver/nvidia/version"),
            "{}",
            procfs.outcome
        );
        assert_eq!(report.platform.kernel_module_version, None);
    }
}

/// A fake `__probe-driver` child printing `json` (after some driver chatter).
fn fake_child(fake: &Fake, body: &str) -> PathBuf {
    let exe = fake.bin().join("cargo-cuda");
    write_script(&exe, body);
    exe
}

const H200_JSON: &str = r#"{"schema":1,"libcuda":"/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06","libcuda_stub":false,"driver":{"version":"580.65.06","cuda_version":[13,0],"found_via":"driver-api"},"gpus":[{"index":0,"name":"NVIDIA H200","compute_capability":{"major":9,"minor":0},"total_memory":150754820096}],"nvml_version":"13.580.65.06","error":null,"notes":[]}"#;

#[test]
fn driver_probe_child_json_is_read() {
    let fake = Fake::new();
    let exe = fake_child(
        &fake,
        &format!("[ \"$1\" = __probe-driver ] || exit 64\necho 'chatter from the driver'\necho '{H200_JSON}'"),
    );
    let report = probe::probe(
        &fake.env(),
        &ProbeOptions {
            child_exe: Some(exe),
            ..ProbeOptions::default()
        },
    );
    assert_eq!(report.method, Some(ProbeMethod::DriverApi), "{report:#?}");
    assert_eq!(report.gpus[0].compute_capability, cc(9, 0));
    assert_eq!(report.gpus[0].total_memory, Some(150_754_820_096));
    assert_eq!(report.driver.as_ref().unwrap().cuda_version, Some((13, 0)));
    assert_eq!(
        report.platform.libcuda.as_deref(),
        Some(Path::new("/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06"))
    );
    assert_eq!(
        report.platform.nvml_version.as_deref(),
        Some("13.580.65.06")
    );
    // The driver answered: no fallback ran.
    assert_eq!(report.attempts.len(), 1);
}

#[test]
fn driver_probe_child_via_cargo_cuda_probe_gets_cuda_visible_devices() {
    let fake = Fake::new();
    // The child echoes what it was given, so the test sees the variable arrive.
    let exe = fake_child(
        &fake,
        r#"printf '{"schema":1,"driver":{"version":null,"cuda_version":[13,0],"found_via":"driver-api"},"gpus":[{"index":0,"name":"cvd=%s sysroot=%s probe=%s","compute_capability":{"major":9,"minor":0}}]}\n' "${CUDA_VISIBLE_DEVICES-unset}" "${CARGO_CUDA_SYSROOT-unset}" "${CARGO_CUDA_PROBE-unset}""#,
    );
    let env = fake
        .env()
        .set(Var::CargoCudaProbe, &exe)
        .set(Var::CudaVisibleDevices, "1,0");
    let report = probe::probe(&env, &ProbeOptions::default());
    let name = &report.gpus[0].name;
    assert_eq!(
        name,
        &format!("cvd=1,0 sysroot={} probe=unset", fake.root().display())
    );
    assert!(attempt(&report, ProbeMethod::DriverApi)
        .outcome
        .contains("CUDA_VISIBLE_DEVICES=`1,0` applied by the driver"));
    // The kernel module's version fills a driver version the child could not find.
    fake.file(
        "/proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 07:09:38 UTC 2025\n",
    );
    let report = probe::probe(
        &env.unset(Var::CudaVisibleDevices),
        &ProbeOptions::default(),
    );
    assert!(
        report.gpus[0].name.starts_with("cvd=unset "),
        "{}",
        report.gpus[0].name
    );
    assert_eq!(report.driver.unwrap().version.as_deref(), Some("580.65.06"));
}

#[test]
fn driver_probe_child_failures_fall_back() {
    let fake = Fake::new();
    fake.smi_printing(THREE_GPUS, OLD_BANNER);
    let cases = [
        ("sleep 30", "did not finish within 500 ms"),
        (
            "echo 'not json at all'; exit 3",
            "exited with status 3, and it printed no JSON line (stdout: `not json at all`)",
        ),
        ("kill -SEGV $$", "was killed"),
        (
            r#"echo '{"schema":1,"libcuda":"/usr/local/cuda/lib64/stubs/libcuda.so","libcuda_stub":true,"error":"cuInit failed: CUDA_ERROR_STUB_LIBRARY (34): CUDA driver is a stub library"}'; exit 1"#,
            "cuInit failed: CUDA_ERROR_STUB_LIBRARY (34)",
        ),
    ];
    for (body, expect) in cases {
        let exe = fake_child(&fake, body);
        let start = Instant::now();
        let report = probe::probe(
            &fake.env(),
            &ProbeOptions {
                child_exe: Some(exe),
                timeout: Duration::from_millis(500),
                ..ProbeOptions::default()
            },
        );
        assert!(
            start.elapsed() < Duration::from_secs(6),
            "{body}: took {:?}",
            start.elapsed()
        );
        let api = attempt(&report, ProbeMethod::DriverApi);
        assert!(!api.ok);
        assert!(api.outcome.contains(expect), "{body}: {}", api.outcome);
        assert_eq!(report.method, Some(ProbeMethod::NvidiaSmi), "{body}");
        assert_eq!(report.gpus.len(), 3);
        if expect.contains("STUB") {
            assert!(report.platform.libcuda_stub);
        }
    }
    let report = probe::probe(
        &fake.env().set(Var::CargoCudaProbe, "cargo-cuda"),
        &ProbeOptions::default(),
    );
    assert!(attempt(&report, ProbeMethod::DriverApi)
        .outcome
        .contains("must be an absolute path"));
}

/// Not a test on its own: the body of the real `__probe-driver` child when
/// the test binary is re-run as one (see `real_driver_probe_child_protocol`).
#[test]
fn probe_child_entry() {
    if std::env::var_os("CUDA_BUILD_TEST_AS_PROBE_CHILD").is_some() {
        std::process::exit(probe::driver_probe_child_main(&Env::from_process()));
    }
}

/// Whether this machine shows any sign of an NVIDIA driver.
fn machine_has_driver() -> bool {
    [
        "/proc/driver/nvidia/version",
        "/dev/nvidiactl",
        "/usr/lib/wsl/lib/libcuda.so.1",
    ]
    .iter()
    .any(|p| Path::new(p).exists())
}

#[test]
fn real_driver_probe_child_protocol() {
    // The real child code, run as a child: this test binary, filtered to the entry above.
    let fake = Fake::new();
    let me = std::env::current_exe().unwrap();
    let exe = fake_child(
        &fake,
        &format!(
            "[ \"$1\" = __probe-driver ] || exit 64\nCUDA_BUILD_TEST_AS_PROBE_CHILD=1 exec '{}' --exact probe_child_entry --nocapture --test-threads=1",
            me.display()
        ),
    );
    let start = Instant::now();
    let report = probe::probe(
        &Env::empty(),
        &ProbeOptions {
            child_exe: Some(exe),
            skip_nvidia_smi: true,
            ..ProbeOptions::default()
        },
    );
    let api = attempt(&report, ProbeMethod::DriverApi);
    if machine_has_driver() {
        assert!(api.ok, "{}", api.outcome);
    } else {
        assert!(!api.ok);
        assert!(
            api.outcome.contains("libcuda.so.1 not found"),
            "{}",
            api.outcome
        );
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "took {:?}",
            start.elapsed()
        );
    }
}

#[test]
fn real_driver_api_in_process_is_clean_and_fast() {
    let start = Instant::now();
    let result = probe::driver_api_in_process(&Env::from_process());
    let elapsed = start.elapsed();
    if machine_has_driver() {
        let (driver, _) = result.unwrap();
        assert!(driver.cuda_version.is_some());
    } else {
        let e = result.unwrap_err();
        assert!(e.starts_with("libcuda.so.1 not found ("), "{e}");
        assert!(elapsed < Duration::from_secs(2), "took {elapsed:?}");
    }
    // Through probe(): the guarded thread, then the fallbacks, all recorded.
    let report = probe::probe(&Env::from_process(), &ProbeOptions::default());
    let api = attempt(&report, ProbeMethod::DriverApi);
    assert!(api.outcome.starts_with("in-process: "), "{}", api.outcome);
    assert_eq!(api.ok, machine_has_driver(), "{}", api.outcome);
    // JSON for `cargo cuda info --json` serialises.
    let json = serde_json::to_value(&report).unwrap();
    assert!(json["platform"]["device_nodes"].is_array());
}

#[test]
fn fake_libcuda_path_must_be_absolute() {
    let p = probe::driver_probe_library_at(Path::new("libcuda.so.1"), &Env::empty());
    assert!(p.error.unwrap().contains("relative path"));
    let p = probe::driver_probe_library_at(Path::new("/nonexistent/libcuda.so.1"), &Env::empty());
    assert!(p
        .error
        .unwrap()
        .contains("/nonexistent/libcuda.so.1 could not be loaded"));
}

// ---- A fake libcuda: a tiny C library built here, loaded by absolute path ----

const FAKE_LIBCUDA_C: &str = r#"
#include <string.h>
#include <stddef.h>
#include <unistd.h>
int cuInit(unsigned flags) { (void)flags; return INIT_RC; }
int cuDriverGetVersion(int *v) { *v = 13000; return 0; }
int cuDeviceGetCount(int *n) { *n = 2; return 0; }
int cuDeviceGet(int *d, int ordinal) { *d = ordinal; return 0; }
int cuDeviceGetName(char *buf, int len, int d) {
    strncpy(buf, d == 0 ? "NVIDIA H200" : "Tesla T4", (size_t)len);
    return 0;
}
int cuDeviceGetAttribute(int *v, int attr, int d) {
    if (attr == 75) { *v = d == 0 ? 9 : 7; return 0; }
    if (attr == 76) { *v = d == 0 ? 0 : 5; return 0; }
    return 1;
}
#ifndef NO_TOTAL_MEM
int cuDeviceTotalMem_v2(size_t *bytes, int d) { *bytes = d == 0 ? 150754820096ull : 15835398144ull; return 0; }
#endif
int cuGetErrorName(int e, const char **s) {
    if (e == 700) { *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; return 0; }
    return 1;
}
int cuGetErrorString(int e, const char **s) {
    if (e == 700) { *s = "an illegal memory access was encountered"; return 0; }
    return 1;
}
"#;

/// Builds the fake libcuda with `defines` at `dir/name`; `None` (with a line) without a C compiler.
fn build_fake_libcuda(dir: &Path, name: &str, defines: &[&str]) -> Option<PathBuf> {
    let src = dir.join("fake_libcuda.c");
    std::fs::write(&src, FAKE_LIBCUDA_C).unwrap();
    let out = dir.join(name);
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let mut args: Vec<String> = vec![
        "-shared".into(),
        "-fPIC".into(),
        "-o".into(),
        out.display().to_string(),
    ];
    args.extend(defines.iter().map(|d| format!("-D{d}")));
    args.push(src.display().to_string());
    match cuda_toolchain::process::run("cc", &args, Duration::from_secs(60)) {
        Ok(o) if o.status.success() => Some(out),
        Ok(o) => panic!("cc failed on the fake libcuda: {}", o.combined()),
        Err(e) => {
            eprintln!("skipped: no C compiler for the fake libcuda ({e})");
            None
        }
    }
}

#[test]
fn fake_libcuda_answers_with_two_generations() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = build_fake_libcuda(dir.path(), "lib/libcuda.so.580.65.06", &["INIT_RC=0"])
    else {
        return;
    };
    let p = probe::driver_probe_library_at(&lib, &Env::empty().with_root(dir.path()));
    assert_eq!(p.error, None, "{p:?}");
    let gpus: Vec<(u32, &str, ComputeCapability, Option<u64>)> = p
        .gpus
        .iter()
        .map(|g| {
            (
                g.index,
                g.name.as_str(),
                g.compute_capability,
                g.total_memory,
            )
        })
        .collect();
    assert_eq!(
        gpus,
        vec![
            (0, "NVIDIA H200", cc(9, 0), Some(150_754_820_096)),
            (1, "Tesla T4", cc(7, 5), Some(15_835_398_144)),
        ]
    );
    let driver = p.driver.unwrap();
    assert_eq!(driver.cuda_version, Some((13, 0)));
    assert_eq!(driver.found_via, ProbeMethod::DriverApi);
    // /proc/self/maps names the very file that was loaded.
    assert_eq!(
        p.libcuda.as_deref(),
        Some(lib.canonicalize().unwrap().as_path())
    );
    assert!(!p.libcuda_stub);
    if !machine_has_driver() {
        // No NVML and no /proc here: the version comes from libcuda's file name.
        assert_eq!(driver.version.as_deref(), Some("580.65.06"));
        assert!(
            p.notes.iter().any(|n| n.contains("file name")),
            "{:?}",
            p.notes
        );
    }
}

#[test]
fn fake_libcuda_failures_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[&str], &str); 5] = [
        ("unknown/libcuda.so.1", &["INIT_RC=999"], "cuInit failed: CUDA_ERROR_UNKNOWN (999): unknown error"),
        (
            "mismatch/libcuda.so.1",
            &["INIT_RC=803"],
            "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803): system has unsupported display driver / cuda driver combination",
        ),
        ("compat/libcuda.so.1", &["INIT_RC=804"], "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804)"),
        // Not in our table: the driver's own cuGetErrorName/String answer.
        ("illegal/libcuda.so.1", &["INIT_RC=700"], "CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered"),
        ("nomem/libcuda.so.1", &["INIT_RC=0", "NO_TOTAL_MEM"], "has no `cuDeviceTotalMem_v2`"),
    ];
    for (name, defines, expect) in cases {
        let Some(lib) = build_fake_libcuda(dir.path(), name, defines) else {
            return;
        };
        let p = probe::driver_probe_library_at(&lib, &Env::empty());
        let e = p.error.unwrap_or_default();
        assert!(e.contains(expect), "{name}: {e}");
        assert!(p.driver.is_none() && p.gpus.is_empty());
    }

    // The toolkit's stub, as people symlink it into LD_LIBRARY_PATH.
    let Some(stub) = build_fake_libcuda(dir.path(), "cuda/lib64/stubs/libcuda.so", &["INIT_RC=34"])
    else {
        return;
    };
    let p = probe::driver_probe_library_at(&stub, &Env::empty());
    assert!(p.libcuda_stub);
    let e = p.error.unwrap();
    assert!(
        e.contains("CUDA_ERROR_STUB_LIBRARY (34)") && e.contains("stubs/"),
        "{e}"
    );

    // No device is an answer: the driver is there, it shows no GPU.
    let Some(none) = build_fake_libcuda(dir.path(), "nodev/libcuda.so.1", &["INIT_RC=100"]) else {
        return;
    };
    let p = probe::driver_probe_library_at(&none, &Env::empty());
    assert_eq!(p.error, None);
    assert!(p.gpus.is_empty());
    assert_eq!(p.driver.unwrap().cuda_version, Some((13, 0)));
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("CUDA_ERROR_NO_DEVICE (100)")),
        "{:?}",
        p.notes
    );
}

// ---- GPU machine (scripts/gpu-check.sh sets CARGO_CUDA_TEST_GPU=1) ----

#[test]
fn gpu_h200_through_the_driver_api() {
    if !workspace_tests::gpu_required("gpu_h200_through_the_driver_api") {
        return;
    }
    let env = Env::from_process();
    let (driver, gpus) =
        probe::driver_api_in_process(&env).expect("the driver API answers on a GPU machine");
    let report = probe::probe(&env, &ProbeOptions::default());
    eprintln!(
        "probe report: {}",
        serde_json::to_string_pretty(&report).unwrap()
    );
    assert_eq!(
        report.method,
        Some(ProbeMethod::DriverApi),
        "{:#?}",
        report.attempts
    );
    assert!(!gpus.is_empty());
    for gpu in &gpus {
        assert!(gpu.name.contains("H200"), "{gpu:?}");
        assert_eq!(gpu.compute_capability, cc(9, 0), "{gpu:?}");
        assert!(gpu.total_memory.unwrap() > 100 << 30, "{gpu:?}");
    }
    let version = driver
        .version
        .expect("driver version via NVML, /proc or libcuda's name");
    assert!(version.starts_with("580."), "driver {version}");
    assert_eq!(driver.cuda_version, Some((13, 0)));
    assert_eq!(report.gpus, gpus);
    assert!(!report.platform.libcuda_stub);
    assert!(report.platform.libcuda.is_some());
}

#[test]
fn gpu_nvidia_smi_agrees_with_the_driver_api() {
    if !workspace_tests::gpu_required("gpu_nvidia_smi_agrees_with_the_driver_api") {
        return;
    }
    let env = Env::from_process();
    let (api_driver, api_gpus) = probe::driver_api_in_process(&env).unwrap();
    let smi = probe::probe(
        &env,
        &ProbeOptions {
            skip_driver_api: true,
            ..ProbeOptions::default()
        },
    );
    eprintln!("nvidia-smi attempts: {:#?}", smi.attempts);
    assert_eq!(smi.method, Some(ProbeMethod::NvidiaSmi));
    let ccs = |g: &[probe::GpuInfo]| {
        g.iter()
            .map(|g| (g.name.clone(), g.compute_capability))
            .collect::<Vec<_>>()
    };
    assert_eq!(ccs(&smi.gpus), ccs(&api_gpus));
    let smi_driver = smi.driver.unwrap();
    assert_eq!(smi_driver.version, api_driver.version);
    assert_eq!(smi_driver.cuda_version, api_driver.cuda_version);
}
