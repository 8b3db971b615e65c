//! The per-user store that `cargo cuda toolkit install` fills: where it is,
//! and which toolkits it holds. Reading only; the installer (crate
//! `cuda-install`) uses the same functions, so the path rule lives here once.
//!
//! Layout (`<store>` = `CARGO_CUDA_HOME`, else `$XDG_DATA_HOME/cargo-cuda`,
//! else `~/.local/share/cargo-cuda`):
//!
//! ```text
//! <store>/toolkits/<name>/      one toolkit root: bin/ include/ lib64/ nvvm/ version.json
//! <store>/toolkits/.tmp/        downloads and unpacks in progress (never used)
//! <store>/locks/                one lock file per install name
//! <store>/wheels/               verified downloads, by file name
//! <store>/deps/<package>/<version>/   header-only dependencies (CUTLASS…), with dep.json
//! ```
//!
//! A toolkit is installed once its directory exists under `toolkits/`: it is
//! renamed there only after every file was verified and unpacked.

use std::path::{Path, PathBuf};

use crate::env::{Env, Var};

/// The store directory (it may not exist yet); `None` when neither
/// `CARGO_CUDA_HOME`, `XDG_DATA_HOME` nor `HOME` is set.
pub fn root(env: &Env) -> Option<PathBuf> {
    if let Some(dir) = env.get_nonempty(Var::CargoCudaHome) {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = env.get_nonempty(Var::XdgDataHome) {
        return Some(Path::new(dir).join("cargo-cuda"));
    }
    let home = env.get_nonempty(Var::Home)?;
    Some(Path::new(home).join(".local/share/cargo-cuda"))
}

/// Where installed toolkits live in a store.
pub fn toolkits_dir(store: &Path) -> PathBuf {
    store.join("toolkits")
}

/// What `version.json`'s `cargo_cuda` entry records about an install.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InstallRecord {
    /// The compiler release (nvcc's version), e.g. `13.0.88`.
    pub release: String,
    /// Whether the component set was checked to be one release (false for `--unchecked`).
    pub checked: bool,
    /// Where the files came from (the index URL).
    pub source: String,
    /// `wheel` (pip's layout, `nvidia/cu13/...`) or `root` (bin/, include/, lib64/, nvvm/).
    pub layout: String,
    /// Optional components asked for with `--with` (`cublas`, `nvrtc`…).
    #[serde(default)]
    pub components: Vec<String>,
    /// Every package installed: `name==version`, with its file's sha256.
    pub packages: Vec<InstalledPackage>,
}

/// One verified file of an install.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InstalledPackage {
    /// Package name on the index, e.g. `nvidia-cuda-nvcc`.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The wheel's file name.
    pub file: String,
    /// The sha256 the index gave, which the download matched.
    pub sha256: String,
}

/// One toolkit in the store.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Installed {
    /// Its name in the store (`13.0.88`, or the `--name` of an unchecked set).
    pub name: String,
    /// Its directory in the store.
    pub dir: PathBuf,
    /// The directory to use as CUDA_HOME (the dir itself, or `nvidia/cu13` inside a wheel layout);
    /// `None` when the install has no nvcc (a ptxas-only set).
    pub cuda_home: Option<PathBuf>,
    /// What `version.json` records.
    pub record: InstallRecord,
}

/// Reads one store entry; `None` if it is not a finished install.
pub fn read_installed(dir: &Path) -> Option<Installed> {
    let text = std::fs::read_to_string(dir.join("version.json")).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    let record: InstallRecord = serde_json::from_value(value.get("cargo_cuda")?.clone()).ok()?;
    let cuda_home = if record.layout == "root" {
        Some(dir.to_path_buf())
    } else {
        // pip's layout: nvidia/cu13 (13.x) or nvidia/cuda_nvcc (11.x/12.x);
        // an unchecked set may hold no compiler at all (ptxas only, sccache).
        std::fs::read_dir(dir.join("nvidia")).ok().and_then(|d| {
            d.flatten()
                .map(|e| e.path())
                .find(|p| p.join("bin/nvcc").is_file())
        })
    }
    .filter(|home| home.join("bin/nvcc").is_file());
    Some(Installed {
        name: dir.file_name()?.to_string_lossy().into_owned(),
        dir: dir.to_path_buf(),
        cuda_home,
        record,
    })
}

/// Every finished install in the store, newest release first.
pub fn installed(store: &Path) -> Vec<Installed> {
    let mut all: Vec<Installed> = std::fs::read_dir(toolkits_dir(store))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| read_installed(&e.path()))
        .collect();
    all.sort_by(|a, b| {
        let key = |i: &Installed| super::version::parse_loose(&i.record.release);
        key(b).cmp(&key(a)).then(a.name.cmp(&b.name))
    });
    all
}

/// Where header-only dependencies live in a store.
pub fn deps_dir(store: &Path) -> PathBuf {
    store.join("deps")
}

/// A header-only dependency fetched into the store (`dep.json`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HeaderDep {
    /// Package name on the index, e.g. `nvidia-cutlass`.
    pub package: String,
    /// Its exact version, e.g. `4.2.0.0`.
    pub version: String,
    /// The wheel's sha256, as the index published it and the download matched.
    pub sha256: String,
    /// Include directories, relative to the entry's directory.
    pub include_dirs: Vec<String>,
    /// The entry's directory (filled in when read).
    #[serde(skip)]
    pub dir: PathBuf,
}

impl HeaderDep {
    /// The include directories as absolute paths.
    pub fn include_paths(&self) -> Vec<PathBuf> {
        self.include_dirs.iter().map(|d| self.dir.join(d)).collect()
    }
}

/// Whether an exact version (`4.2.0.0`) matches a requested prefix (`4.2`, `4`, `4.2.0.0`).
pub fn version_matches(requested: &str, exact: &str) -> bool {
    let want: Vec<&str> = requested.trim().split('.').collect();
    let have: Vec<&str> = exact.split('.').collect();
    want.len() <= have.len() && want.iter().zip(&have).all(|(a, b)| a == b)
}

/// The newest fetched version of `package` that matches `requested`, if any.
pub fn find_header_dep(store: &Path, package: &str, requested: &str) -> Option<HeaderDep> {
    let dir = deps_dir(store).join(package);
    let mut found: Vec<HeaderDep> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| {
            let text = std::fs::read_to_string(e.path().join("dep.json")).ok()?;
            let mut dep: HeaderDep = serde_json::from_str(&text).ok()?;
            dep.dir = e.path();
            version_matches(requested, &dep.version).then_some(dep)
        })
        .collect();
    found.sort_by_key(|d| {
        d.version
            .split('.')
            .map(|p| p.parse::<u64>().unwrap_or(0))
            .collect::<Vec<_>>()
    });
    found.pop()
}

/// Where a git header dependency at `commit` lives in a store.
pub fn git_dep_dir(store: &Path, name: &str, commit: &str) -> PathBuf {
    deps_dir(store)
        .join("git")
        .join(name)
        .join(commit.to_ascii_lowercase())
}

/// A git header dependency fetched at exactly `commit`, if it is in the store.
pub fn find_git_dep(store: &Path, name: &str, commit: &str) -> Option<HeaderDep> {
    let dir = git_dep_dir(store, name, commit);
    let text = std::fs::read_to_string(dir.join("dep.json")).ok()?;
    let mut dep: HeaderDep = serde_json::from_str(&text).ok()?;
    dep.dir = dir;
    Some(dep)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store holding nvidia-cutlass 3.5.0.0, 3.5.1.0 and 4.2.0.0.
    fn store() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        for v in ["3.5.0.0", "3.5.1.0", "4.2.0.0"] {
            let dir = deps_dir(tmp.path()).join("nvidia-cutlass").join(v);
            std::fs::create_dir_all(&dir).unwrap();
            let dep = format!(
                "{{\"package\":\"nvidia-cutlass\",\"version\":\"{v}\",\"sha256\":\"\",\"include_dirs\":[\"include\"]}}"
            );
            std::fs::write(dir.join("dep.json"), dep).unwrap();
        }
        tmp
    }

    #[test]
    fn a_short_version_is_the_newest_match_and_a_full_one_pins() {
        let s = store();
        let found = |req: &str| find_header_dep(s.path(), "nvidia-cutlass", req).map(|d| d.version);
        assert_eq!(found("3.5").as_deref(), Some("3.5.1.0"));
        assert_eq!(found("3").as_deref(), Some("3.5.1.0"));
        assert_eq!(found("3.5.0").as_deref(), Some("3.5.0.0"));
        assert_eq!(found("3.5.0.0").as_deref(), Some("3.5.0.0"));
        assert_eq!(found("4").as_deref(), Some("4.2.0.0"));
        assert_eq!(found("3.6"), None);
        assert_eq!(found("3.50"), None);
    }
}
