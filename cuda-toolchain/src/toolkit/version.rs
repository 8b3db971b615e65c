//! Reading versions: `nvcc --version` text, `version.json`, `version.txt`,
//! wheel `*.dist-info` names and the version string inside `cicc`; plus the
//! cache that keeps `nvcc --version` to one run per build.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::env::{Env, Var};
use crate::process::{self, RunError};
pub use crate::tool_version::{parse_loose, parse_tool_version};

/// What `version.json` (CUDA 11.1+) says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionJson {
    /// `"cuda": {"version": "12.4.1"}`: the toolkit release.
    pub cuda: Option<semver::Version>,
    /// `"cuda_nvcc": {"version": "12.4.131"}`: nvcc's own version (ptxas ships with it).
    pub nvcc: Option<semver::Version>,
    /// `"libnvvm": {"version": "13.0.88"}`: cicc's release, a separate entry in CUDA 13.x installs.
    pub nvvm: Option<semver::Version>,
}

/// Parses `version.json`; the error says what is wrong with it.
pub fn parse_version_json(text: &str) -> Result<VersionJson, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("it is not valid JSON ({e})"))?;
    let obj = value
        .as_object()
        .ok_or("it is not a JSON object (expected {\"cuda\": {\"version\": \"X.Y.Z\"}, ...})")?;
    let version_of = |key: &str| -> Result<Option<semver::Version>, String> {
        match obj.get(key) {
            None => Ok(None),
            Some(entry) => {
                let s = entry
                    .get("version")
                    .and_then(|v| v.as_str())
                    .ok_or_else(|| format!("`{key}` has no string field `version`"))?;
                parse_loose(s)
                    .map(Some)
                    .ok_or_else(|| format!("`{key}.version` is `{s}`, not a version number"))
            }
        }
    };
    let parsed = VersionJson {
        cuda: version_of("cuda")?,
        nvcc: version_of("cuda_nvcc")?,
        nvvm: version_of("libnvvm")?,
    };
    if parsed.cuda.is_none() && parsed.nvcc.is_none() {
        return Err("it has neither a `cuda` nor a `cuda_nvcc` entry".into());
    }
    Ok(parsed)
}

/// Parses `version.txt` (CUDA ≤ 11.0): `CUDA Version 10.2.89`.
pub fn parse_version_txt(text: &str) -> Option<semver::Version> {
    let rest = text.trim().strip_prefix("CUDA Version")?;
    parse_loose(rest.trim())
}

/// Splits a wheel's `name-version.dist-info` directory name.
///
/// ```
/// # use cuda_toolchain::toolkit::version::parse_dist_info;
/// let (name, v) = parse_dist_info("nvidia_nvvm-13.5.37.dist-info").unwrap();
/// assert_eq!((name.as_str(), v.to_string().as_str()), ("nvidia_nvvm", "13.5.37"));
/// ```
pub fn parse_dist_info(dir_name: &str) -> Option<(String, semver::Version)> {
    let stem = dir_name.strip_suffix(".dist-info")?;
    let (name, version) = stem.rsplit_once('-')?;
    Some((name.to_ascii_lowercase(), parse_loose(version)?))
}

/// Finds the `Cuda compilation tools, release …` string inside a binary (cicc
/// has no `--version`). The file is memory-mapped, never read whole; in an
/// ELF file only `.rodata` is searched first (cicc is ~80 MB, its `.rodata`
/// ~12 MB), through the one ELF reader in [`crate::image`].
pub fn scan_binary_version(path: &Path) -> std::io::Result<Option<semver::Version>> {
    let bytes = crate::image::map_file(path).map_err(std::io::Error::other)?;
    if let Some(range) = crate::image::elf_section_range(&bytes, ".rodata") {
        if let Some(v) = scan_bytes(&bytes[range]) {
            return Ok(Some(v));
        }
    }
    Ok(scan_bytes(&bytes))
}

fn scan_bytes(bytes: &[u8]) -> Option<semver::Version> {
    let finder =
        regex::bytes::Regex::new(r"Cuda compilation tools, release [0-9]+\.[0-9]+, V[0-9.]+")
            .expect("static regex");
    let m = finder.find(bytes)?;
    parse_tool_version(&String::from_utf8_lossy(m.as_bytes()))
}

/// Why a tool's version could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolRunError {
    /// Could not be started, or timed out.
    Run(RunError),
    /// It ran but failed (exit status or signal), with what it printed.
    Failed {
        /// `exit status: 139` and similar.
        status: String,
        /// Its output.
        output: String,
    },
}

/// Default deadline for `nvcc --version` and friends (overridden by `CUDA_BUILD_TIMEOUT`).
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(10);

type Memo = Mutex<HashMap<String, Result<String, ToolRunError>>>;

fn memo() -> &'static Memo {
    static MEMO: OnceLock<Memo> = OnceLock::new();
    MEMO.get_or_init(Default::default)
}

/// Identifies an executable's exact bytes cheaply: canonical path, size, mtime.
fn file_key(path: &Path, args: &[&str]) -> Option<String> {
    let canonical = std::fs::canonicalize(path).ok()?;
    let meta = std::fs::metadata(&canonical).ok()?;
    let mtime = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some(format!(
        "{}\0{}\0{}.{}\0{}",
        canonical.display(),
        meta.len(),
        mtime.as_secs(),
        mtime.subsec_nanos(),
        args.join("\0")
    ))
}

/// The directory for cached tool answers: `CUDA_BUILD_CACHE_DIR`, the user
/// cache dir, or `OUT_DIR`; `None` when caching is off or nothing is set.
pub fn cache_dir(env: &Env) -> Option<PathBuf> {
    if env.flag(Var::CudaBuildNoCache) {
        return None;
    }
    let base = match env.cache_dir() {
        Some(d) => d,
        None => PathBuf::from(env.get_nonempty(Var::OutDir)?),
    };
    Some(base.join("tool-versions"))
}

fn disk_path(dir: &Path, key: &str) -> PathBuf {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(key.as_bytes());
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    dir.join(format!("{hex}.json"))
}

fn read_disk(dir: &Path, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(disk_path(dir, key)).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    // The key is stored too, so a hash collision or a stray file is never believed.
    (value.get("key")?.as_str()? == key).then(|| value.get("output")?.as_str().map(String::from))?
}

fn write_disk(dir: &Path, key: &str, output: &str) {
    // A cache that cannot be written is only slower; never an error.
    if std::fs::create_dir_all(dir).is_ok() {
        let body = serde_json::json!({ "key": key, "output": output }).to_string();
        // Unsynced: read_disk checks the stored key, so a torn file is never believed.
        let _ = crate::fsutil::write_atomic_unsynced(&disk_path(dir, key), body.as_bytes());
    }
}

/// Runs `exe args` (e.g. `nvcc --version`) and returns stdout+stderr, at most
/// once per build: answers are kept in memory and on disk, keyed by the
/// executable's canonical path, size and mtime. Failures are not kept on disk.
pub fn cached_output(env: &Env, exe: &Path, args: &[&str]) -> Result<String, ToolRunError> {
    let key = file_key(exe, args);
    // A wrapper script's answer depends on what it runs, not on its own bytes:
    // keep it in memory for this build only.
    let disk = if is_script(exe) { None } else { cache_dir(env) };
    // The memo is per cache dir too, so a new cache dir is always filled.
    let memo_key = key.as_ref().map(|k| format!("{k}\0{:?}", disk));
    if let (Some(key), Some(mk)) = (&key, &memo_key) {
        if let Some(hit) = memo().lock().ok().and_then(|m| m.get(mk).cloned()) {
            return hit;
        }
        if let Some(dir) = &disk {
            if let Some(out) = read_disk(dir, key) {
                if let Ok(mut m) = memo().lock() {
                    m.insert(mk.clone(), Ok(out.clone()));
                }
                return Ok(out);
            }
        }
    }
    let timeout = process::timeout_from_env(env, QUERY_TIMEOUT);
    let result = match process::run(exe, args, timeout) {
        Err(e) => Err(ToolRunError::Run(e)),
        Ok(out) if !out.status.success() => Err(ToolRunError::Failed {
            status: out.status.to_string(),
            output: out.combined(),
        }),
        Ok(out) => Ok(out.combined()),
    };
    if let (Some(key), Some(mk)) = (&key, memo_key) {
        if let Ok(mut m) = memo().lock() {
            m.insert(mk, result.clone());
        }
        if let (Ok(out), Some(dir)) = (&result, &disk) {
            write_disk(dir, key, out);
        }
    }
    result
}

/// Whether a file starts with `#!` (a script, not the nvcc binary).
pub(crate) fn is_script(path: &Path) -> bool {
    let mut head = [0u8; 2];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .map(|_| &head == b"#!")
        .unwrap_or(false)
}

/// The version embedded in a binary, cached like [`cached_output`] (scanning
/// cicc costs tens of milliseconds; the cache makes it free afterwards).
pub fn cached_binary_version(env: &Env, path: &Path) -> Option<semver::Version> {
    let key = file_key(path, &["<scan>"])?;
    let dir = cache_dir(env);
    let memo_key = format!("{key}\0{dir:?}");
    if let Some(Ok(hit)) = memo().lock().ok().and_then(|m| m.get(&memo_key).cloned()) {
        return parse_loose(&hit);
    }
    if let Some(out) = dir.as_deref().and_then(|d| read_disk(d, &key)) {
        return parse_loose(&out);
    }
    let version = scan_binary_version(path).ok().flatten()?;
    let text = version.to_string();
    if let Ok(mut m) = memo().lock() {
        m.insert(memo_key, Ok(text.clone()));
    }
    if let Some(dir) = dir {
        write_disk(&dir, &key, &text);
    }
    Some(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NVCC_13: &str = "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\nBuilt on Wed_Aug_20_01:58:59_PM_PDT_2025\nCuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0.r13.0/compiler.36424714_0\n";

    #[test]
    fn tool_version_from_real_texts() {
        assert_eq!(
            parse_tool_version(NVCC_13),
            Some(semver::Version::new(13, 0, 88))
        );
        let cicc = "Cuda compilation tools, release 13.5, V13.5.37, Build cuda_13.5.r13.5/compiler.39125733_0, Build ID: CL-39125733";
        assert_eq!(
            parse_tool_version(cicc),
            Some(semver::Version::new(13, 5, 37))
        );
        assert_eq!(
            parse_tool_version("Cuda compilation tools, release 9.2"),
            Some(semver::Version::new(9, 2, 0))
        );
        assert_eq!(parse_tool_version("segfault\nrelease notes"), None);
        assert_eq!(parse_tool_version(""), None);
    }

    #[test]
    fn loose_versions() {
        assert_eq!(parse_loose("12.4"), Some(semver::Version::new(12, 4, 0)));
        assert_eq!(
            parse_loose("11.8.89.post1"),
            Some(semver::Version::new(11, 8, 89))
        );
        assert_eq!(parse_loose("12rc1"), Some(semver::Version::new(12, 0, 0)));
        assert_eq!(parse_loose("abc"), None);
        assert_eq!(parse_loose("99999999999999999999999"), None);
    }

    #[test]
    fn version_json_good_and_bad() {
        let j = r#"{"cuda":{"name":"CUDA SDK","version":"12.4.1"},"cuda_nvcc":{"name":"CUDA NVCC","version":"12.4.131"}}"#;
        let v = parse_version_json(j).unwrap();
        assert_eq!(v.cuda, Some(semver::Version::new(12, 4, 1)));
        assert_eq!(v.nvcc, Some(semver::Version::new(12, 4, 131)));
        assert_eq!(v.nvvm, None);
        let j13 = r#"{"cuda":{"version":"13.0.0"},"cuda_nvcc":{"version":"13.0.48"},"libnvvm":{"name":"NVVM","version":"13.0.48"}}"#;
        assert_eq!(
            parse_version_json(j13).unwrap().nvvm,
            Some(semver::Version::new(13, 0, 48))
        );
        assert!(parse_version_json("{\"cuda\": ")
            .unwrap_err()
            .contains("not valid JSON"));
        assert!(parse_version_json("[1]")
            .unwrap_err()
            .contains("not a JSON object"));
        assert!(parse_version_json(r#"{"cuda":{"version":"x"}}"#)
            .unwrap_err()
            .contains("cuda.version"));
        assert!(parse_version_json(r#"{"other":{}}"#)
            .unwrap_err()
            .contains("neither"));
    }

    #[test]
    fn version_txt_and_dist_info() {
        assert_eq!(
            parse_version_txt("CUDA Version 10.2.89\n"),
            Some(semver::Version::new(10, 2, 89))
        );
        assert_eq!(parse_version_txt("garbage"), None);
        let (n, v) = parse_dist_info("nvidia_cuda_nvcc_cu12-12.9.86.dist-info").unwrap();
        assert_eq!(n, "nvidia_cuda_nvcc_cu12");
        assert_eq!(v, semver::Version::new(12, 9, 86));
        assert_eq!(parse_dist_info("nvidia"), None);
    }

    #[test]
    fn scan_finds_version_across_chunk_boundary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("cicc");
        let mut bytes = vec![0u8; (1 << 20) - 10];
        bytes.extend_from_slice(b"Cuda compilation tools, release 13.5, V13.5.37, Build x");
        bytes.extend_from_slice(&[0u8; 100]);
        std::fs::write(&p, &bytes).unwrap();
        assert_eq!(
            scan_binary_version(&p).unwrap(),
            Some(semver::Version::new(13, 5, 37))
        );
        std::fs::write(&p, [0u8; 10]).unwrap();
        assert_eq!(scan_binary_version(&p).unwrap(), None);
    }

    #[test]
    fn rodata_of_a_real_binary_holds_its_strings() {
        // The one ELF reader finds `.rodata` of this test binary, and the
        // scan finds the version strings this file's tests keep there.
        let exe = std::env::current_exe().unwrap();
        let bytes = crate::image::map_file(&exe).unwrap();
        let r = crate::image::elf_section_range(&bytes, ".rodata").expect(".rodata");
        assert!(!r.is_empty() && r.end <= bytes.len());
        assert!(scan_binary_version(&exe).unwrap().is_some());
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("script");
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        assert_eq!(scan_binary_version(&p).unwrap(), None);
        std::fs::write(&p, b"\x7fELF\x02\x01garbage").unwrap();
        assert_eq!(scan_binary_version(&p).unwrap(), None);
    }

    #[test]
    fn disk_cache_round_trip_checks_key() {
        let dir = tempfile::tempdir().unwrap();
        write_disk(dir.path(), "k1", "out1");
        assert_eq!(read_disk(dir.path(), "k1").as_deref(), Some("out1"));
        assert_eq!(read_disk(dir.path(), "k2"), None);
        // A corrupt file is ignored, never believed.
        std::fs::write(disk_path(dir.path(), "k1"), "{garbage").unwrap();
        assert_eq!(read_disk(dir.path(), "k1"), None);
    }
}
