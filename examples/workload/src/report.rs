//! The results: one structure, printed as a table or as JSON (`--json`).

use serde::Serialize;

use crate::explain::Explained;
use crate::gpu::{Bandwidth, CopyKind, DeviceInfo, Direction};
use crate::verify::Check;

/// Everything one run found.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    /// `cuda-workload`.
    pub tool: &'static str,
    /// This binary's version.
    pub version: &'static str,
    /// `full`, `quick` or `force-arch-mismatch`.
    pub mode: &'static str,
    /// CUDA toolkit that compiled the embedded kernels.
    pub kernels_toolkit: String,
    /// Targets embedded in the kernels' images.
    pub kernels_archs: Vec<String>,
    /// The display driver version (from the probe), e.g. `580.159.04`.
    pub driver_version: Option<String>,
    /// The highest CUDA the driver supports (`cuDriverGetVersion`), e.g. `13.0`.
    pub driver_cuda: Option<String>,
    /// Every visible GPU.
    pub devices: Vec<DeviceInfo>,
    /// The GPU the measurements ran on.
    pub selected_device: Option<usize>,
    /// Copy bandwidths.
    pub bandwidth: Vec<Bandwidth>,
    /// Kernel and comparison rows.
    pub results: Vec<ResultRow>,
    /// Things the reader should know (what a limit was measured against, skips).
    pub notes: Vec<String>,
    /// `--force-arch-mismatch`: what was predicted, what the driver said, the diagnosis.
    pub arch_mismatch: Option<serde_json::Value>,
    /// The failure that ended the run early, explained.
    pub error: Option<Explained>,
    /// True when everything ran and verified.
    pub ok: bool,
}

/// What a measurement is compared with.
#[derive(Debug, Clone, Serialize)]
pub struct Limit {
    /// e.g. `D2D copy (cuMemcpyDtoD, 1 GiB)`, `cuBLAS SGEMM`, `FP32 peak (datasheet-style)`.
    pub name: String,
    /// Its value, in the row's unit.
    pub value: f64,
}

/// One row of the results table.
#[derive(Debug, Clone, Serialize)]
pub struct ResultRow {
    /// Kernel or measurement, e.g. `vectorAdd`.
    pub name: String,
    /// Problem size in words, e.g. `268435456 floats`.
    pub size: String,
    /// Unit of `achieved`: `GB/s` or `GFLOP/s`.
    pub unit: &'static str,
    /// Achieved rate (0 for verification-only rows).
    pub achieved: f64,
    /// Mean time per run (ms).
    pub ms: f64,
    /// What it is compared with, measured in the same run where possible.
    pub limit: Option<Limit>,
    /// achieved / limit x 100.
    pub percent: Option<f64>,
    /// The target on an H200, in percent of the limit.
    pub target_percent: Option<f64>,
    /// The verification, when the row computes something.
    pub check: Option<Check>,
}

impl ResultRow {
    /// Sets the limit and the percentage.
    pub fn against(mut self, limit: Option<Limit>, target: Option<f64>) -> Self {
        self.percent = limit
            .as_ref()
            .filter(|l| l.value > 0.0)
            .map(|l| self.achieved / l.value * 100.0);
        self.limit = limit;
        self.target_percent = target;
        self
    }

    /// Whether the target (if any) was met.
    pub fn met(&self) -> Option<bool> {
        Some(self.percent? >= self.target_percent?)
    }

    /// Whether the verification (if any) passed.
    pub fn verified(&self) -> Option<bool> {
        self.check.as_ref().map(Check::passed)
    }
}

/// Bytes in the largest binary unit that divides them (`1 GiB`, `48 KiB`).
pub fn human_size(b: u64) -> String {
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

fn copy_label(b: &Bandwidth) -> String {
    let dir = match b.direction {
        Direction::H2d => "host->device",
        Direction::D2h => "device->host",
        Direction::D2d => "device->device",
    };
    let kind = match b.kind {
        CopyKind::Pinned => "pinned, driver API",
        CopyKind::Pageable => "pageable, driver API",
        CopyKind::PinnedRuntime => "pinned, cudaMemcpyAsync",
        CopyKind::Device => "cuMemcpyDtoD, bytes read+written",
    };
    format!("{dir} ({kind})")
}

impl Report {
    /// The human-readable report: device query, bandwidth, then the table.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let push = |s: &mut String, line: String| {
            s.push_str(&line);
            s.push('\n');
        };
        push(
            &mut s,
            format!(
                "cuda-workload {}: kernels built by CUDA {} for {}",
                self.version,
                self.kernels_toolkit,
                self.kernels_archs.join(", ")
            ),
        );
        if !self.devices.is_empty() {
            push(
                &mut s,
                format!(
                    "driver {} (supports CUDA {})",
                    self.driver_version
                        .as_deref()
                        .unwrap_or("(version unknown)"),
                    self.driver_cuda.as_deref().unwrap_or("?")
                ),
            );
        }
        for d in &self.devices {
            push(&mut s, String::new());
            push(&mut s, format!("Device {}: \"{}\"", d.index, d.name));
            let rows: Vec<(&str, String)> = vec![
                ("compute capability", d.compute_capability.clone()),
                ("multiprocessors", d.sm_count.to_string()),
                ("global memory", crate::sizes::gib(d.total_memory)),
                ("max SM clock", format!("{} MHz", d.sm_clock_mhz)),
                (
                    "memory",
                    format!(
                        "{} MHz x {}-bit bus = {:.0} GB/s theoretical",
                        d.memory_clock_mhz, d.memory_bus_bits, d.theoretical_memory_gbps
                    ),
                ),
                ("L2 cache", human_size(d.l2_bytes as u64)),
                (
                    "shared memory",
                    format!(
                        "{} per block ({} opt-in), {} per SM",
                        human_size(d.smem_per_block as u64),
                        human_size(d.smem_per_block_optin as u64),
                        human_size(d.smem_per_sm as u64)
                    ),
                ),
                ("threads per SM", d.max_threads_per_sm.to_string()),
                (
                    "FP32 peak",
                    d.fp32_peak_gflops
                        .map_or("unknown for this CC".into(), |g| {
                            format!("{:.1} TFLOP/s", g / 1e3)
                        }),
                ),
            ];
            for (k, v) in rows {
                push(&mut s, format!("  {k:<22}{v}"));
            }
            let runs = d
                .module
                .chosen
                .clone()
                .unwrap_or_else(|| format!("NOTHING ({})", d.module.problem.unwrap_or("?")));
            push(&mut s, format!("  {:<22}{runs}", "kernels will run as"));
            for t in &d.module.targets {
                let fit = match t.fit {
                    crate::targets::Fit::Sass => "SASS",
                    crate::targets::Fit::PtxJit => "PTX, JIT",
                    crate::targets::Fit::No => "no",
                };
                push(
                    &mut s,
                    format!("    {:<14}{:<10}{}", t.target, fit, t.reason),
                );
            }
        }
        if !self.bandwidth.is_empty() {
            push(&mut s, String::new());
            push(
                &mut s,
                "Bandwidth (CUDA events, mean of timed copies after one warm-up):".into(),
            );
            for b in &self.bandwidth {
                push(
                    &mut s,
                    format!(
                        "  {:<52}{:>9}  {:>9.1} GB/s",
                        copy_label(b),
                        human_size(b.bytes),
                        b.gbps
                    ),
                );
            }
        }
        if !self.results.is_empty() {
            push(&mut s, String::new());
            push(&mut s, self.table());
        }
        for n in &self.notes {
            push(&mut s, format!("note: {n}"));
        }
        // The error itself goes to stderr (main), not into the report text.
        s
    }

    /// The results table (printed last by gpu-check.sh too).
    pub fn table(&self) -> String {
        let mut s = format!(
            "{:<34}{:>16}{:>14}  {:<40}{:>8}{:>8}  {}\n",
            "measure", "size", "achieved", "limit (same run)", "%", "target", "verified"
        );
        for r in &self.results {
            let achieved = if r.achieved > 0.0 {
                format!("{:.1} {}", r.achieved, r.unit)
            } else {
                "-".into()
            };
            let limit = r
                .limit
                .as_ref()
                .map_or("-".into(), |l| format!("{} {:.1}", l.name, l.value));
            let percent = r.percent.map_or("-".into(), |p| format!("{p:.1}%"));
            let target = match (r.target_percent, r.met()) {
                (Some(t), Some(true)) => format!(">={t:.0} ok"),
                (Some(t), _) => format!(">={t:.0} MISS"),
                _ => "-".into(),
            };
            let verified = match &r.check {
                Some(c) if c.passed() => format!("yes ({} compared)", c.compared),
                Some(c) => format!(
                    "FAILED {}/{}: {}",
                    c.failures,
                    c.compared,
                    c.first_failure.as_deref().unwrap_or("")
                ),
                None => "-".into(),
            };
            s.push_str(&format!(
                "{:<34}{:>16}{:>14}  {:<40}{:>8}{:>8}  {}\n",
                r.name, r.size, achieved, limit, percent, target, verified
            ));
        }
        s.trim_end().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(achieved: f64) -> ResultRow {
        ResultRow {
            name: "vectorAdd".into(),
            size: "268435456 floats".into(),
            unit: "GB/s",
            achieved,
            ms: 1.0,
            limit: None,
            percent: None,
            target_percent: None,
            check: None,
        }
    }

    #[test]
    fn percent_and_target_follow_the_limit() {
        let limit = Limit {
            name: "D2D copy".into(),
            value: 4000.0,
        };
        let r = row(3800.0).against(Some(limit.clone()), Some(90.0));
        assert!((r.percent.unwrap() - 95.0).abs() < 1e-9);
        assert_eq!(r.met(), Some(true));
        let r = row(3000.0).against(Some(limit), Some(90.0));
        assert_eq!(r.met(), Some(false));
        assert_eq!(row(1.0).against(None, Some(90.0)).met(), None);
        // A zero limit (nothing measured) gives no percentage, not infinity.
        let zero = Limit {
            name: "x".into(),
            value: 0.0,
        };
        assert_eq!(row(1.0).against(Some(zero), None).percent, None);
    }

    #[test]
    fn table_marks_misses_and_failures() {
        let mut report = Report::default();
        let limit = Limit {
            name: "D2D".into(),
            value: 4000.0,
        };
        report
            .results
            .push(row(3000.0).against(Some(limit), Some(90.0)));
        let mut failed = row(0.0);
        failed.check = Some(Check {
            compared: 10,
            failures: 2,
            max_abs_error: 1.0,
            tolerance: "exact".into(),
            first_failure: Some("element 3".into()),
        });
        report.results.push(failed);
        let t = report.table();
        assert!(t.contains("75.0%") && t.contains(">=90 MISS"), "{t}");
        assert!(t.contains("FAILED 2/10: element 3"), "{t}");
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["results"][0]["percent"], 75.0);
    }

    #[test]
    fn render_shows_the_device_query_and_bandwidth() {
        use crate::gpu::{Bandwidth, CopyKind, DeviceInfo, Direction};
        use cuda_toolchain::arch::ComputeCapability;
        let module = crate::targets::check(
            &["sm_80", "sm_90", "compute_90"],
            ComputeCapability::new(9, 0),
            Some((13, 0)),
            Some((13, 0)),
        );
        let report = Report {
            version: "0.1.0",
            kernels_toolkit: "13.0.88".into(),
            kernels_archs: vec!["sm_80".into(), "sm_90".into(), "compute_90".into()],
            driver_version: Some("580.159.04".into()),
            driver_cuda: Some("13.0".into()),
            devices: vec![DeviceInfo {
                index: 0,
                name: "NVIDIA H200".into(),
                compute_capability: "9.0".into(),
                sm_count: 132,
                total_memory: 150_754_820_096,
                sm_clock_mhz: 1980,
                memory_clock_mhz: 3201,
                memory_bus_bits: 6144,
                theoretical_memory_gbps: 4917.0,
                l2_bytes: 62_914_560,
                smem_per_block: 48 << 10,
                smem_per_block_optin: 227 << 10,
                smem_per_sm: 228 << 10,
                max_threads_per_sm: 2048,
                pci_bus: 0,
                fp32_peak_gflops: Some(66_908.0),
                module,
            }],
            bandwidth: vec![Bandwidth {
                direction: Direction::D2d,
                kind: CopyKind::Device,
                bytes: 1 << 30,
                ms: 0.5,
                gbps: 4294.9,
            }],
            ..Default::default()
        };
        let text = report.render();
        for needle in [
            "Device 0: \"NVIDIA H200\"",
            "driver 580.159.04 (supports CUDA 13.0)",
            "132",
            "60 MiB",
            "48 KiB per block (227 KiB opt-in), 228 KiB per SM",
            "66.9 TFLOP/s",
            "kernels will run as   sm_90",
            "compute_90    PTX, JIT",
            "device->device (cuMemcpyDtoD, bytes read+written)",
            "4294.9 GB/s",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
        }
    }

    #[test]
    fn bytes_read_naturally() {
        assert_eq!(human_size(1 << 30), "1 GiB");
        assert_eq!(human_size(50 << 20), "50 MiB");
        assert_eq!(human_size(48 << 10), "48 KiB");
        assert_eq!(human_size(1000), "1000 B");
    }
}
