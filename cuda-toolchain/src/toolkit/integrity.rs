//! Is a toolkit complete, and from one release? Checked before any compile.
//!
//! A wheel install that pins only `nvidia-cuda-nvcc` gets whatever
//! `nvidia-nvvm` is newest: nvcc 13.0.88 with cicc 13.5.37. cicc then emits
//! PTX 9.5, and every compile dies in ptxas 13.0 with
//! `Unsupported .version 9.5; current version is '9.0'`. We catch that here,
//! from the wheels' `*.dist-info` names and the version strings inside cicc
//! and ptxas, so the user gets the fix instead of the ptxas error.

use std::path::{Path, PathBuf};

use super::version::{self, parse_dist_info, parse_tool_version};
use super::{Problem, Severity, Toolkit};
use crate::env::Env;

/// Where to look for a toolkit's tools and headers beyond nvcc's own directory.
#[derive(Debug, Clone, Default)]
pub(crate) struct Places {
    /// Directories nvcc searches for its tools (profile PATH, CICC_PATH, extras).
    pub tool_dirs: Vec<PathBuf>,
    /// The site-packages dir for wheel installs (holds `*.dist-info`).
    pub site: Option<PathBuf>,
    /// The toolkit's directory under `site/nvidia` (`cu13`, `cuda_nvcc`).
    pub wheel_dir: String,
    /// The root's `version.json`, when it parsed.
    pub version_json: Option<version::VersionJson>,
}

/// Whether a wheel belongs to this toolkit: one site can hold cu12 split
/// wheels and cu13 wheels side by side. A `nvidia/cu13` toolkit owns the
/// wheels whose RECORD lists files under `nvidia/cu13/`; a split-layout
/// toolkit owns the `_cuNN` wheels of nvcc's major version.
fn belongs(record: &str, pkg: &str, wheel_dir: &str, nvcc: &semver::Version) -> bool {
    if wheel_dir.starts_with("cuda_") {
        return pkg.ends_with(&format!("_cu{}", nvcc.major));
    }
    record.contains(&format!("nvidia/{wheel_dir}/"))
}

/// The start of a wheel's RECORD (the file list pip wrote): all of it for the
/// small compiler wheels, which we search for tool files, 4 KiB for the
/// header wheels (the CCCL one is 200 KB), enough to see which toolkit dir
/// they install into.
fn read_record(site: &Path, dist_info: &str, limit: u64) -> String {
    let mut text = String::new();
    let _ = std::fs::File::open(site.join(dist_info).join("RECORD"))
        .and_then(|f| std::io::Read::read_to_string(&mut std::io::Read::take(f, limit), &mut text));
    text
}

/// Whether a RECORD lists `file` (a path relative to the site-packages dir).
fn record_lists(record: &str, file: &Path) -> bool {
    let want = file.to_string_lossy();
    record
        .lines()
        .any(|l| l.split(',').next() == Some(want.as_ref()))
}

/// Whether this toolkit came from pip wheels (changes the advice we give).
fn wheel_fix(places: &Places, package: &str, release: Option<&semver::Version>) -> Option<String> {
    places.site.as_ref()?;
    let pin = release
        .map(|v| format!("=={}.{}.*", v.major, v.minor))
        .unwrap_or_default();
    Some(format!(
        "pip install \"{package}{pin}\" (pin every nvidia-cuda-* wheel to nvcc's release)"
    ))
}

fn find_tool(name: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    dirs.iter().find_map(|d| super::windows::exe_in(d, name))
}

fn has_header(include_dirs: &[PathBuf], rel: &str) -> bool {
    include_dirs
        .iter()
        .any(|d| d.join(rel).is_file() || d.join("cccl").join(rel).is_file())
}

/// Checks tools, headers and release consistency; returns the problems found.
pub(crate) fn check(env: &Env, tk: &Toolkit, places: &Places) -> Vec<Problem> {
    let mut problems = Vec::new();
    let nvcc_dir = tk.nvcc.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut dirs = places.tool_dirs.clone();
    dirs.push(nvcc_dir);
    dirs.push(tk.root.join("bin"));
    let mut cicc_dirs = dirs.clone();
    cicc_dirs.push(tk.root.join("nvvm").join("bin"));

    let mut found = Vec::new();
    for (tool, search, package) in [
        ("cicc", &cicc_dirs, "nvidia-nvvm"),
        ("ptxas", &dirs, "nvidia-cuda-nvcc"),
        ("fatbinary", &dirs, "nvidia-cuda-nvcc"),
        ("nvlink", &dirs, "nvidia-cuda-nvcc"),
    ] {
        match find_tool(tool, search) {
            None => {
                let looked: Vec<String> = search.iter().map(|d| d.display().to_string()).collect();
                problems.push(Problem {
                    code: "toolkit-incomplete",
                    severity: Severity::Error,
                    message: format!(
                        "`{tool}` is missing from the toolkit at `{}` (looked in {})",
                        tk.root.display(),
                        looked.join(", ")
                    ),
                    fix: Some(wheel_fix(places, package, tk.version.as_ref()).unwrap_or_else(|| {
                        format!("reinstall the CUDA toolkit's compiler package (it ships {tool}), or point CUDA_HOME at a complete toolkit")
                    })),
                });
            }
            Some(path) if !crate::fsutil::is_executable(&path) => problems.push(Problem {
                code: "toolkit-incomplete",
                severity: Severity::Error,
                message: format!("`{}` is not executable", path.display()),
                fix: Some(crate::fsutil::not_executable_fix(&path, tool)),
            }),
            Some(path) => found.push((tool, path)),
        }
    }

    if !has_header(&tk.include_dirs, "cuda_runtime.h") {
        problems.push(Problem {
            code: "toolkit-incomplete",
            severity: Severity::Error,
            message: format!(
                "cuda_runtime.h is not in the toolkit's include directories ({})",
                display_list(&tk.include_dirs)
            ),
            fix: Some(
                wheel_fix(places, "nvidia-cuda-runtime", tk.version.as_ref()).unwrap_or_else(
                    || {
                        "install the CUDA runtime headers (cuda-cudart-dev) of the same release"
                            .into()
                    },
                ),
            ),
        });
    }
    // cuda_fp16.h and friends include <nv/target> since CUDA 12.
    let needs_cccl = tk.version.as_ref().is_none_or(|v| v.major >= 12);
    if needs_cccl && !has_header(&tk.include_dirs, "nv/target") {
        problems.push(Problem {
            code: "toolkit-incomplete",
            severity: Severity::Error,
            message: format!(
                "the CCCL headers (nv/target) are not in the toolkit's include directories ({}); \
                 compiles fail with `fatal error: nv/target: No such file or directory`",
                display_list(&tk.include_dirs)
            ),
            fix: Some(
                wheel_fix(places, "nvidia-cuda-cccl", tk.version.as_ref()).unwrap_or_else(|| {
                    "install the toolkit's CCCL package (cuda-cccl) of the same release".into()
                }),
            ),
        });
    }

    if let Some(nvcc_version) = &tk.version {
        problems.extend(release_check(env, nvcc_version, &found, places));
    }
    problems
}

fn display_list(dirs: &[PathBuf]) -> String {
    if dirs.is_empty() {
        return "none".into();
    }
    dirs.iter()
        .map(|d| format!("`{}`", d.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A component's version and where we read it.
struct Part {
    what: String,
    version: semver::Version,
    /// Compiler parts must match nvcc's release exactly; headers may drift a little.
    compiler: bool,
    package: &'static str,
}

/// The toolkit's wheels in its site-packages (compiler and header wheels),
/// each with the RECORD text of the compiler ones.
fn wheel_parts(places: &Places, nvcc: &semver::Version) -> Vec<(Part, String)> {
    let Some(site) = &places.site else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(site) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((pkg, version)) = parse_dist_info(&name) else {
            continue;
        };
        let base = pkg
            .trim_end_matches("_cu11")
            .trim_end_matches("_cu12")
            .trim_end_matches("_cu13");
        let (compiler, package) = match base {
            "nvidia_nvvm" => (true, "nvidia-nvvm"),
            "nvidia_cuda_nvcc" => (true, "nvidia-cuda-nvcc"),
            "nvidia_cuda_crt" => (true, "nvidia-cuda-crt"),
            "nvidia_cuda_runtime" => (false, "nvidia-cuda-runtime"),
            "nvidia_cuda_cccl" => (false, "nvidia-cuda-cccl"),
            _ => continue,
        };
        let record = read_record(site, &name, if compiler { 1 << 20 } else { 4096 });
        if !belongs(&record, &pkg, &places.wheel_dir, nvcc) {
            continue;
        }
        let part = Part {
            what: format!("{package} {version} (`{name}`)"),
            version,
            compiler,
            package,
        };
        out.push((part, if compiler { record } else { String::new() }));
    }
    out
}

fn release_check(
    env: &Env,
    nvcc: &semver::Version,
    tools: &[(&str, PathBuf)],
    places: &Places,
) -> Vec<Problem> {
    let wheels = wheel_parts(places, nvcc);
    let mut parts = Vec::new();
    for (tool, path) in tools {
        let package = match *tool {
            "cicc" => "nvidia-nvvm",
            "ptxas" => "nvidia-cuda-nvcc",
            _ => continue,
        };
        // A tool file that one of this toolkit's wheels installed has that
        // wheel's version, and so does one an installer's version.json lists:
        // no need to run ptxas or scan the 80 MB cicc (most of a cold
        // discovery). The wheel's own version still catches the mixed release.
        let rel = places
            .site
            .as_deref()
            .and_then(|s| path.strip_prefix(s).ok());
        let by_wheel = rel.is_some_and(|rel| wheels.iter().any(|(_, r)| record_lists(r, rel)));
        // Only a version.json that agrees with nvcc describes these files (a
        // stale one from an earlier install does not).
        let json = places
            .version_json
            .as_ref()
            .filter(|j| j.nvcc.as_ref() == Some(nvcc));
        let by_json = match *tool {
            "cicc" => json.and_then(|j| j.nvvm.clone()).map(|v| (v, "libnvvm")),
            _ => json.and_then(|j| j.nvcc.clone()).map(|v| (v, "cuda_nvcc")),
        };
        if by_wheel {
            continue;
        }
        if let Some((version, key)) = by_json {
            parts.push(Part {
                what: format!("{tool} {version} (`version.json` {key})"),
                version,
                compiler: true,
                package,
            });
            continue;
        }
        let version = if *tool == "cicc" {
            version::cached_binary_version(env, path)
        } else {
            version::cached_output(env, path, &["--version"])
                .ok()
                .and_then(|t| parse_tool_version(&t))
        };
        if let Some(version) = version {
            parts.push(Part {
                what: format!("{tool} {version} (`{}`)", path.display()),
                version,
                compiler: true,
                package,
            });
        }
    }
    parts.extend(wheels.into_iter().map(|(part, _)| part));
    let same = |v: &semver::Version| v.major == nvcc.major && v.minor == nvcc.minor;
    let mut problems = Vec::new();
    let bad_compiler: Vec<&Part> = parts
        .iter()
        .filter(|p| p.compiler && !same(&p.version))
        .collect();
    if !bad_compiler.is_empty() {
        let list: Vec<String> = bad_compiler.iter().map(|p| p.what.clone()).collect();
        let newer_cicc = bad_compiler
            .iter()
            .any(|p| p.package == "nvidia-nvvm" && p.version > *nvcc);
        let consequence = if newer_cicc {
            format!(
                "; cicc emits PTX newer than ptxas {}.{} accepts, so every compile fails with \
                 `ptxas fatal: Unsupported .version …`",
                nvcc.major, nvcc.minor
            )
        } else {
            String::new()
        };
        let mut pins: Vec<&str> = bad_compiler.iter().map(|p| p.package).collect();
        pins.dedup();
        let fix = if places.site.is_some() {
            let args: Vec<String> = pins
                .iter()
                .map(|p| format!("\"{p}=={}.{}.*\"", nvcc.major, nvcc.minor))
                .collect();
            format!(
                "pin the wheels to nvcc's release: pip install {} (an unpinned `pip install nvidia-cuda-nvcc==X` pulls the newest nvidia-nvvm)",
                args.join(" ")
            )
        } else {
            "reinstall the toolkit so that nvcc, cicc (nvvm) and ptxas come from one release"
                .to_string()
        };
        problems.push(Problem {
            code: "toolkit-incomplete",
            severity: Severity::Error,
            message: format!(
                "the toolkit mixes CUDA releases: nvcc is {nvcc} but {}{consequence}",
                list.join(", ")
            ),
            fix: Some(fix),
        });
    }
    let drifted: Vec<String> = parts
        .iter()
        .filter(|p| !p.compiler && !same(&p.version))
        .map(|p| p.what.clone())
        .collect();
    if !drifted.is_empty() {
        problems.push(Problem {
            code: "toolkit-incomplete",
            severity: Severity::Warning,
            message: format!(
                "headers from another CUDA release than nvcc {nvcc}: {}",
                drifted.join(", ")
            ),
            fix: Some(format!(
                "install the {}.{} versions of these wheels",
                nvcc.major, nvcc.minor
            )),
        });
    }
    problems
}
