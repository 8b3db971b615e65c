//! Reading one nvcc into a [`Toolkit`]: version, layout (nvcc.profile or a
//! dry run), version files, include and library dirs, integrity checks.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::{Candidate, Extras, Search};
use crate::process::RunError;
use crate::toolkit::integrity::{self, Places};
use crate::toolkit::layout::{self, Profile};
use crate::toolkit::version::{self, ToolRunError};
use crate::toolkit::{FoundVia, Problem, Severity, Toolkit};

/// Problem codes that mean nvcc itself cannot be used.
pub(super) const NVCC_UNUSABLE: [&str; 4] = [
    "nvcc-not-executable",
    "nvcc-timeout",
    "nvcc-failed",
    "nvcc-bad-version",
];

impl Search<'_> {
    /// Builds a candidate from an nvcc path: layout, version, integrity.
    pub(super) fn candidate(
        &self,
        nvcc: &Path,
        found_via: FoundVia,
        extras: Extras,
        explicit: bool,
    ) -> Candidate {
        let env = self.env;
        let real = std::fs::canonicalize(nvcc).unwrap_or_else(|_| nvcc.to_path_buf());
        let real_dir = real.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut problems = Vec::new();

        // Version first: a wrapper script is only asked for a dry run if nvcc works at all.
        let nvcc_out = if crate::fsutil::is_executable(&real) {
            Some(version::cached_output(env, &real, &["--version"]))
        } else {
            problems.push(Problem {
                code: "nvcc-not-executable",
                severity: Severity::Error,
                message: format!("`{}` is not executable", real.display()),
                fix: Some(crate::fsutil::not_executable_fix(&real, "nvcc")),
            });
            None
        };
        let mut nvcc_version = None;
        match &nvcc_out {
            Some(Ok(text)) => match version::parse_tool_version(text) {
                Some(v) => nvcc_version = Some(v),
                None => problems.push(Problem {
                    code: "nvcc-bad-version",
                    severity: Severity::Error,
                    message: format!(
                        "`{} --version` printed no `Cuda compilation tools, release X.Y, VX.Y.Z` line: {}",
                        real.display(),
                        first_line(text)
                    ),
                    fix: Some("this is not a working nvcc: reinstall the toolkit, or point NVCC/CUDA_HOME at another one".into()),
                }),
            },
            Some(Err(e)) => problems.push(run_problem(&real, e)),
            None => {}
        }

        // Layout: nvcc.profile next to the real nvcc, else a dry run (wrapper scripts).
        let shown_nvcc = real.clone();
        let mut key = real.clone();
        let profile = match layout::read_profile(&real_dir) {
            Some(p) => Some(p),
            None if nvcc_version.is_some() && version::is_script(&real) => {
                let dry = version::cached_output(
                    env,
                    &real,
                    &[
                        "-v",
                        "--dryrun",
                        "-c",
                        "cuda_build_probe.cu",
                        "-o",
                        "cuda_build_probe.o",
                    ],
                )
                .ok()
                .and_then(|t| layout::parse_dryrun(&t));
                // The wrapper stays the nvcc we run; the real binary is its identity.
                if let Some(here) = dry.as_ref().and_then(|p| p.here.clone()) {
                    key = std::fs::canonicalize(here.join("nvcc")).unwrap_or(key);
                }
                dry
            }
            None => None,
        };
        let profile = profile.unwrap_or_else(|| {
            if nvcc_version.is_some() {
                problems.push(Problem {
                    code: "toolkit-incomplete",
                    severity: Severity::Warning,
                    message: format!(
                        "no nvcc.profile next to `{}`; assuming the toolkit root is `{}`",
                        real.display(),
                        real_dir.parent().unwrap_or(Path::new("")).display()
                    ),
                    fix: Some(
                        "reinstall the toolkit: nvcc needs bin/nvcc.profile to find its headers"
                            .into(),
                    ),
                });
            }
            Profile::default()
        });
        let root = profile
            .top
            .clone()
            .or_else(|| real_dir.parent().map(Path::to_path_buf))
            .unwrap_or_default();

        // Version files, cross-checked against nvcc.
        let mut file_version = None;
        let mut version_json = None;
        let json_path = root.join("version.json");
        if let Ok(text) = std::fs::read_to_string(&json_path) {
            match version::parse_version_json(&text) {
                Ok(j) => {
                    if let (Some(n), Some(jn)) = (&nvcc_version, &j.nvcc) {
                        if n != jn {
                            problems.push(mismatch(&json_path, "cuda_nvcc", jn, n));
                        }
                    } else if let (Some(n), Some(jc)) = (&nvcc_version, &j.cuda) {
                        if (n.major, n.minor) != (jc.major, jc.minor) {
                            problems.push(mismatch(&json_path, "cuda", jc, n));
                        }
                    }
                    file_version = j.nvcc.clone().or(j.cuda.clone());
                    version_json = Some(j);
                }
                Err(why) => problems.push(Problem {
                    code: "toolkit-version-json",
                    severity: if nvcc_version.is_some() { Severity::Warning } else { Severity::Error },
                    message: format!("`{}` is malformed: {why}", json_path.display()),
                    fix: Some(format!(
                        "restore it from the toolkit installer or delete it (nvcc --version is used instead): `{}`",
                        json_path.display()
                    )),
                }),
            }
        } else if let Ok(text) = std::fs::read_to_string(root.join("version.txt")) {
            file_version = version::parse_version_txt(&text);
            if let (Some(n), Some(t)) = (&nvcc_version, &file_version) {
                if (n.major, n.minor) != (t.major, t.minor) {
                    problems.push(mismatch(&root.join("version.txt"), "CUDA Version", t, n));
                }
            }
        }

        let mut include_dirs = Vec::new();
        for d in profile.include_dirs.iter().chain(&extras.include_dirs) {
            if d.is_dir() && !include_dirs.contains(d) {
                include_dirs.push(d.clone());
            }
        }
        if profile.include_dirs.is_empty() && extras.include_dirs.is_empty() {
            let d = root.join("include");
            if d.is_dir() {
                include_dirs.push(d);
            }
        }
        let mut lib_dirs = Vec::new();
        let target = layout::target_dir(&root);
        let guesses = [
            root.join("lib64"),
            root.join("lib"),
            root.join(&target).join("lib"),
        ];
        for d in profile
            .lib_dirs
            .iter()
            .chain(&extras.lib_dirs)
            .chain(guesses.iter())
        {
            let has_cudart = std::fs::read_dir(d)
                .map(|it| {
                    it.flatten()
                        .any(|e| e.file_name().to_string_lossy().starts_with("libcudart"))
                })
                .unwrap_or(false);
            if has_cudart && !d.ends_with("stubs") && !lib_dirs.contains(d) {
                lib_dirs.push(d.clone());
            }
        }

        let mut tk = Toolkit {
            root: root.clone(),
            nvcc: shown_nvcc,
            version: nvcc_version.or(file_version),
            found_via,
            include_dirs,
            lib_dirs,
            problems,
        };
        // Tools and release checks only make sense for an nvcc that runs.
        if !tk.problems.iter().any(|p| NVCC_UNUSABLE.contains(&p.code)) {
            let mut tool_dirs = profile.path_dirs.clone();
            tool_dirs.extend(profile.cicc_dir.clone());
            tool_dirs.extend(extras.tool_dirs);
            let (site, wheel_dir) = wheel_site(&root);
            let places = Places {
                tool_dirs,
                site,
                wheel_dir,
                version_json,
            };
            let found = integrity::check(env, &tk, &places);
            tk.problems.extend(found);
        }
        Candidate { tk, key, explicit }
    }
}

fn mismatch(file: &Path, field: &str, said: &semver::Version, nvcc: &semver::Version) -> Problem {
    Problem {
        code: "toolkit-version-mismatch",
        severity: Severity::Warning,
        message: format!(
            "`{}` says {field} {said}, but nvcc says {nvcc}: files from two installs are mixed in one directory",
            file.display()
        ),
        fix: Some("reinstall the toolkit into a clean directory".into()),
    }
}

fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(nothing)");
    let mut s: String = line.chars().take(120).collect();
    if line.chars().count() > 120 {
        s.push('…');
    }
    format!("`{s}`")
}

fn run_problem(nvcc: &Path, e: &ToolRunError) -> Problem {
    match e {
        ToolRunError::Run(RunError::TimedOut { after, .. }) => Problem {
            code: "nvcc-timeout",
            severity: Severity::Error,
            message: format!(
                "`{} --version` did not answer within {} and was killed",
                nvcc.display(),
                crate::process::show_duration(*after)
            ),
            fix: Some("this nvcc hangs (a wrapper waiting on input or a license/network check?): fix or replace it, or raise CUDA_BUILD_TIMEOUT (seconds)".into()),
        },
        ToolRunError::Run(RunError::PermissionDenied(_)) => Problem {
            code: "nvcc-not-executable",
            severity: Severity::Error,
            message: format!("`{}` is not executable (permission denied)", nvcc.display()),
            fix: Some(crate::fsutil::not_executable_fix(nvcc, "nvcc")),
        },
        ToolRunError::Run(other) => Problem {
            code: "nvcc-failed",
            severity: Severity::Error,
            message: format!("`{} --version` could not run: {other}", nvcc.display()),
            fix: Some("reinstall the toolkit (the nvcc binary is damaged or for another platform)".into()),
        },
        ToolRunError::Failed { status, output } => Problem {
            code: "nvcc-failed",
            severity: Severity::Error,
            message: format!(
                "`{} --version` failed ({status}): {}",
                nvcc.display(),
                first_line(output)
            ),
            fix: Some("reinstall the toolkit, or point NVCC/CUDA_HOME at a working one".into()),
        },
    }
}

/// For a root inside `site/nvidia/<dir>`, the site and `<dir>`.
fn wheel_site(root: &Path) -> (Option<PathBuf>, String) {
    let parent = root.parent();
    if parent.and_then(Path::file_name) == Some(OsStr::new("nvidia")) {
        let dir = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        (parent.and_then(Path::parent).map(Path::to_path_buf), dir)
    } else {
        (None, String::new())
    }
}
