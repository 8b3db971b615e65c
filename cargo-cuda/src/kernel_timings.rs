//! `cargo cuda build --timings`: each build script writes its kernel
//! compiles' report (cuda-build's `timings`, through `CUDA_BUILD_TIMINGS`)
//! into `<target>/cargo-timings/cuda-build/`; after cargo, they are merged
//! into `cuda-timing.html` and `cuda-timing.json` beside cargo's own
//! `cargo-timing.html`, and one line names the three costliest kernels.

use cuda_build::compile::timings::Report;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Whether `--timings` (or `--timings=…`) is among cargo's arguments, before any `--`.
pub fn asked(args: &[OsString]) -> bool {
    args.iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "--timings" || a.to_string_lossy().starts_with("--timings="))
}

/// The target directory cargo will use: `--target-dir` among its arguments,
/// else the workspace's (which `cargo metadata` gave, `CARGO_TARGET_DIR` and
/// config included).
pub fn target_dir(args: &[OsString], workspace_target: Option<&Path>) -> PathBuf {
    let mut it = args.iter().take_while(|a| *a != "--");
    while let Some(a) = it.next() {
        if a == "--target-dir" {
            if let Some(d) = it.next() {
                return PathBuf::from(d);
            }
        } else if let Some(d) = a.to_string_lossy().strip_prefix("--target-dir=") {
            return PathBuf::from(d);
        }
    }
    workspace_target
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("target"))
}

/// The directory the build scripts write into, emptied of earlier reports
/// (a package that does not rebuild writes none, and is not in this build's).
pub fn prepare(timings: &Path) -> std::io::Result<PathBuf> {
    let dir = timings.join("cuda-build");
    std::fs::create_dir_all(&dir)?;
    for e in std::fs::read_dir(&dir)?.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("cuda-timing-") && (name.ends_with(".json") || name.ends_with(".html"))
        {
            std::fs::remove_file(e.path())?;
        }
    }
    Ok(dir)
}

/// Merges the build scripts' reports in `dir` into `<timings>/cuda-timing.*`;
/// the line to print last, or None when no build script compiled kernels.
pub fn finish(timings: &Path, dir: &Path) -> Result<Option<String>, String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(None);
    };
    let mut reports = Vec::new();
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    for p in paths {
        reports.push(Report::read(&p)?);
    }
    if reports.is_empty() {
        return Ok(None);
    }
    let merged = Report::merge(reports);
    let html = merged
        .write(timings, "")
        .map_err(|e| format!("{}: {e}", timings.display()))?;
    Ok(Some(format!(
        "{} ({} kernel sources); {}",
        html.display(),
        merged.compiles.len(),
        merged.costliest_line()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn flags_are_read_before_the_double_dash_only() {
        assert!(asked(&os(&["--release", "--timings"])));
        assert!(asked(&os(&["--timings=html"])));
        assert!(!asked(&os(&["--", "--timings"])));
        assert_eq!(
            target_dir(&os(&["--target-dir", "t2", "--timings"]), None),
            PathBuf::from("t2")
        );
        assert_eq!(
            target_dir(&os(&["--target-dir=t3"]), Some(Path::new("/w/target"))),
            PathBuf::from("t3")
        );
        assert_eq!(
            target_dir(&os(&["--", "--target-dir=x"]), Some(Path::new("/w/target"))),
            PathBuf::from("/w/target")
        );
    }
}
