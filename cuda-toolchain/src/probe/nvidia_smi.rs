//! The nvidia-smi fallback: `--query-gpu` for the GPUs, the banner for the
//! CUDA version.
//!
//! nvidia-smi is found on `PATH` (absolute entries only) or at the paths
//! drivers install it to, and always runs through [`crate::process`] under a
//! deadline. Old drivers reject the `compute_cap` field; then the query is
//! repeated without it and the product name is mapped through the facts table.

use super::{procfs::shorten, visible, GpuInfo};
use crate::arch::ComputeCapability;
use crate::env::{Env, Var};
use crate::process::{self, RunError};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Where drivers and container runtimes put nvidia-smi, after `PATH`.
pub(crate) const KNOWN_PATHS: &[&str] = &[
    "/usr/bin/nvidia-smi",
    "/usr/local/nvidia/bin/nvidia-smi",
    "/usr/lib/wsl/lib/nvidia-smi",
];

const FIELDS: &str = "index,uuid,name,compute_cap,memory.total,driver_version";
const FIELDS_WITHOUT_CC: &str = "index,uuid,name,memory.total,driver_version";

/// What nvidia-smi told us.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SmiAnswer {
    /// Visible GPUs, renumbered after `CUDA_VISIBLE_DEVICES`.
    pub gpus: Vec<GpuInfo>,
    /// The display driver's version, e.g. "580.65.06".
    pub driver_version: Option<String>,
    /// The banner's "CUDA Version" / "CUDA UMD Version".
    pub cuda_version: Option<(u32, u32)>,
    /// Things worth telling (compute_cap rejected, a GPU left out, ...).
    pub notes: Vec<String>,
}

/// The whole nvidia-smi attempt.
#[derive(Debug, Clone)]
pub(crate) struct SmiOutcome {
    /// The answer, or the exact reason there is none.
    pub result: Result<SmiAnswer, String>,
    /// The NVML version, when nvidia-smi printed one (even on failure).
    pub nvml_version: Option<String>,
}

/// Finds nvidia-smi: absolute `PATH` entries first, then [`KNOWN_PATHS`] under the env's root.
pub(crate) fn locate(env: &Env) -> Option<PathBuf> {
    if let Some(found) = env.which("nvidia-smi") {
        return Some(found);
    }
    KNOWN_PATHS
        .iter()
        .map(|p| env.sys_path(p))
        .find(|p| crate::fsutil::is_executable(p))
}

/// Runs the query (and the banner, for the CUDA version). Never panics; all
/// calls together take at most about `timeout`.
pub(crate) fn probe(env: &Env, timeout: Duration) -> SmiOutcome {
    let Some(smi) = locate(env) else {
        return SmiOutcome {
            result: Err(format!(
                "nvidia-smi was not found on PATH or at {}",
                KNOWN_PATHS.join(", ")
            )),
            nvml_version: None,
        };
    };
    let deadline = Instant::now() + timeout;
    let left = || {
        deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(100))
    };
    let shown = smi.display().to_string();

    let run = |fields: &str, left: Duration| {
        let query = format!("--query-gpu={fields}");
        process::run(
            &smi,
            [query.as_str(), "--format=csv,noheader,nounits"],
            left,
        )
    };

    let mut notes = Vec::new();
    let mut with_cc = true;
    let mut out = run(FIELDS, left());
    if let Ok(o) = &out {
        if o.combined()
            .contains("\"compute_cap\" is not a valid field")
        {
            with_cc = false;
            notes.push(
                "nvidia-smi rejected the compute_cap field (older drivers lack it); compute capabilities come from the product-name table"
                    .to_string(),
            );
            out = run(FIELDS_WITHOUT_CC, left());
        }
    }
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            return SmiOutcome {
                result: Err(run_error_text(&e)),
                nvml_version: None,
            }
        }
    };
    if !out.status.success() {
        let text = out.combined();
        return SmiOutcome {
            result: Err(format!(
                "`{shown} --query-gpu=...` failed ({}): {}",
                status_text(&out.status),
                first_lines(&text)
            )),
            nvml_version: parse_banner(&text).nvml_version,
        };
    }

    let rows = match parse_query(&out.stdout, with_cc) {
        Ok(rows) => rows,
        Err(e) => {
            return SmiOutcome {
                result: Err(format!("`{shown} --query-gpu=...` printed {e}")),
                nvml_version: None,
            }
        }
    };

    // The banner carries the CUDA version; a failure here only loses that.
    let banner = match process::run(&smi, std::iter::empty::<&str>(), left()) {
        Ok(o) if o.status.success() => parse_banner(&o.stdout),
        Ok(o) => {
            notes.push(format!(
                "`{shown}` (banner) failed ({}): {}",
                status_text(&o.status),
                first_lines(&o.combined())
            ));
            Banner::default()
        }
        Err(e) => {
            notes.push(run_error_text(&e));
            Banner::default()
        }
    };

    let driver_version = rows
        .iter()
        .find_map(|r| r.driver_version.clone())
        .or(banner.driver_version.clone());
    let mut gpus = Vec::new();
    let all: Vec<(u32, Option<String>)> = rows.iter().map(|r| (r.index, r.uuid.clone())).collect();
    let chosen: Vec<usize> = match env.get_os(Var::CudaVisibleDevices) {
        None => (0..rows.len()).collect(),
        Some(value) => {
            let value = value.to_string_lossy();
            let (chosen, problem) = visible::select(&value, &all);
            notes.push(format!(
                "CUDA_VISIBLE_DEVICES=`{}` applied: {} of {} GPUs visible",
                shorten(&value),
                chosen.len(),
                rows.len()
            ));
            notes.extend(problem);
            chosen
        }
    };
    for (new_index, &pos) in chosen.iter().enumerate() {
        let row = &rows[pos];
        let cc = row
            .compute_capability
            .or_else(|| crate::facts::cc_for_product(&row.name));
        match cc {
            Some(cc) => gpus.push(GpuInfo {
                index: new_index as u32,
                name: row.name.clone(),
                compute_capability: cc,
                total_memory: row.memory_mib.map(|m| m.saturating_mul(1024 * 1024)),
            }),
            None => notes.push(format!(
                "GPU {} `{}` left out: its compute capability is unknown (nvidia-smi gave none and the name is not in the product table); set CUDA_ARCHS",
                row.index, row.name
            )),
        }
    }
    SmiOutcome {
        result: Ok(SmiAnswer {
            gpus,
            driver_version,
            cuda_version: banner.cuda_version,
            notes,
        }),
        nvml_version: banner.nvml_version,
    }
}

/// One CSV row of the query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row {
    pub index: u32,
    pub uuid: Option<String>,
    pub name: String,
    pub compute_capability: Option<ComputeCapability>,
    pub memory_mib: Option<u64>,
    pub driver_version: Option<String>,
}

/// Parses `--format=csv,noheader,nounits` output of [`FIELDS`] (or
/// [`FIELDS_WITHOUT_CC`] when `with_cc` is false). `Err` quotes the bad line.
pub(crate) fn parse_query(stdout: &str, with_cc: bool) -> Result<Vec<Row>, String> {
    let want = if with_cc { 6 } else { 5 };
    let mut rows = Vec::new();
    for line in stdout.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() != want {
            return Err(format!(
                "a line with {} fields where {want} were expected: `{}`",
                f.len(),
                shorten(line)
            ));
        }
        let index = f[0]
            .parse::<u32>()
            .map_err(|_| format!("a GPU index that is not a number: `{}`", shorten(line)))?;
        let (cc, rest) = if with_cc {
            let cc = match value(f[3]) {
                None => None,
                Some(s) => Some(parse_cc(s).ok_or_else(|| {
                    format!(
                        "a compute capability that is not `major.minor`: `{}`",
                        shorten(line)
                    )
                })?),
            };
            (cc, &f[4..])
        } else {
            (None, &f[3..])
        };
        rows.push(Row {
            index,
            uuid: value(f[1]).map(str::to_string),
            name: f[2].to_string(),
            compute_capability: cc,
            memory_mib: value(rest[0]).and_then(|m| m.parse().ok()),
            driver_version: value(rest[1]).map(str::to_string),
        });
    }
    if rows.is_empty() {
        return Err("no GPU lines".to_string());
    }
    Ok(rows)
}

/// `[N/A]`, `[Not Supported]` and empty fields mean "unknown".
fn value(field: &str) -> Option<&str> {
    let f = field.trim();
    (!f.is_empty() && !f.starts_with('[') && f != "N/A").then_some(f)
}

fn parse_cc(s: &str) -> Option<ComputeCapability> {
    let (major, minor) = s.split_once('.')?;
    let major: u32 = major.parse().ok()?;
    let minor: u32 = minor.parse().ok()?;
    (major <= crate::arch::MAX_PLAUSIBLE_MAJOR && minor <= 9)
        .then(|| ComputeCapability::new(major, minor))
}

/// What the banner (or `nvidia-smi --version`, or a failure message) says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Banner {
    /// `Driver Version:` (up to R595) or `KMD Version:` (R610+).
    pub driver_version: Option<String>,
    /// `CUDA Version:` (up to R595) or `CUDA UMD Version:` (R610+).
    pub cuda_version: Option<(u32, u32)>,
    /// `NVML version`, `NVML library version`, else the `NVIDIA-SMI` version (they ship together).
    pub nvml_version: Option<String>,
}

/// Parses both banner spellings; unknown text gives an empty [`Banner`].
pub(crate) fn parse_banner(text: &str) -> Banner {
    static RE: OnceLock<[regex::Regex; 4]> = OnceLock::new();
    let [driver, cuda, nvml, smi] = RE.get_or_init(|| {
        let re = |s: &str| regex::Regex::new(s).expect("static regex");
        [
            re(r"(?i)(?:DRIVER|KMD) version\s*:\s*(\d+\.\d+(?:\.\d+)?)"),
            re(r"(?i)CUDA(?:\s+UMD)?\s+Version\s*:\s*(\d{1,3})\.(\d{1,3})"),
            re(r"(?i)NVML (?:library )?version\s*:\s*(\d+\.\d+(?:\.\d+)?)"),
            re(r"NVIDIA-SMI\s+(?:version\s*:\s*)?(\d+\.\d+(?:\.\d+)?)"),
        ]
    });
    let capture = |re: &regex::Regex| re.captures(text).map(|c| c[1].to_string());
    Banner {
        driver_version: capture(driver),
        cuda_version: cuda
            .captures(text)
            .and_then(|c| Some((c[1].parse().ok()?, c[2].parse().ok()?))),
        nvml_version: capture(nvml).or_else(|| capture(smi)),
    }
}

fn run_error_text(e: &RunError) -> String {
    match e {
        RunError::TimedOut { partial_output, .. } if !partial_output.trim().is_empty() => {
            format!("{e}; it had printed: {}", first_lines(partial_output))
        }
        _ => e.to_string(),
    }
}

fn status_text(status: &std::process::ExitStatus) -> String {
    match status.code() {
        Some(code) => format!("exit status {code}"),
        None => format!("{status}"),
    }
}

/// The first three non-empty lines, joined: enough to quote the exact error.
fn first_lines(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(3)
        .collect();
    if lines.is_empty() {
        "(no output)".to_string()
    } else {
        shorten_long(&lines.join(" | "))
    }
}

fn shorten_long(s: &str) -> String {
    const MAX: usize = 400;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        format!("{}...", s.chars().take(MAX).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banner_old_spelling() {
        let b = parse_banner(
            "+-----------------------------------------------------------------------------------------+\n\
             | NVIDIA-SMI 580.65.06              Driver Version: 580.65.06      CUDA Version: 13.0     |\n",
        );
        assert_eq!(b.driver_version.as_deref(), Some("580.65.06"));
        assert_eq!(b.cuda_version, Some((13, 0)));
        assert_eq!(b.nvml_version.as_deref(), Some("580.65.06"));
    }

    #[test]
    fn banner_r610_spelling() {
        let b = parse_banner(
            "| NVIDIA-SMI 610.43.02              KMD Version: 610.43.02      CUDA UMD Version: 13.3     |\n",
        );
        assert_eq!(b.driver_version.as_deref(), Some("610.43.02"));
        assert_eq!(b.cuda_version, Some((13, 3)));
    }

    #[test]
    fn version_flag_and_mismatch_texts() {
        let b = parse_banner(
            "NVIDIA-SMI version  : 550.54.14\nNVML version        : 550.54\nDRIVER version      : 550.54.14\nCUDA Version        : 12.4\n",
        );
        assert_eq!(b.driver_version.as_deref(), Some("550.54.14"));
        assert_eq!(b.cuda_version, Some((12, 4)));
        assert_eq!(b.nvml_version.as_deref(), Some("550.54"));
        let b = parse_banner("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.173\n");
        assert_eq!(b.nvml_version.as_deref(), Some("580.173"));
        assert_eq!(b.driver_version, None);
        assert_eq!(
            parse_banner("garbage \u{fffd} CUDA Version: x.y"),
            Banner::default()
        );
    }

    #[test]
    fn query_rows() {
        let rows = parse_query(
            "0, GPU-11111111-2222-3333-4444-555555555555, NVIDIA H200, 9.0, 143771, 580.65.06\n\
             1, GPU-aaaaaaaa-2222-3333-4444-555555555555, Tesla T4, 7.5, 15360, 580.65.06\n",
            true,
        )
        .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows[0].compute_capability,
            Some(ComputeCapability::new(9, 0))
        );
        assert_eq!(rows[0].memory_mib, Some(143771));
        assert_eq!(rows[1].name, "Tesla T4");
        let rows = parse_query("0, [N/A], Orin (nvgpu), 8.7, [N/A], [N/A]\n", true).unwrap();
        assert_eq!(rows[0].memory_mib, None);
        assert_eq!(rows[0].uuid, None);
        let rows = parse_query("0, GPU-1, Tesla K80, 11441, 470.82.01\n", false).unwrap();
        assert_eq!(rows[0].compute_capability, None);
        assert_eq!(rows[0].driver_version.as_deref(), Some("470.82.01"));
    }

    #[test]
    fn query_garbage_is_an_error() {
        assert!(parse_query("", true).unwrap_err().contains("no GPU lines"));
        assert!(parse_query("hello world", true)
            .unwrap_err()
            .contains("`hello world`"));
        assert!(parse_query("x, GPU-1, A, 9.0, 1, 580.1", true)
            .unwrap_err()
            .contains("index"));
        assert!(parse_query("0, GPU-1, A, nine, 1, 580.1", true)
            .unwrap_err()
            .contains("major.minor"));
        assert!(parse_query("0, GPU-1, A, 9.99, 1, 580.1", true).is_err());
    }
}
