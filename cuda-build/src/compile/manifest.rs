//! The per-OUT_DIR manifest: what each source was built from last time, so a
//! run with nothing changed stats files instead of hashing them, and starts
//! no nvcc.

use super::hash::FileHashes;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A file as last seen: size, mtime and content hash.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Stamp {
    pub path: PathBuf,
    pub size: u64,
    pub mtime_ns: u64,
    /// SHA-256 of the content; empty for outputs (their hashes live in the cache).
    pub sha: String,
}

fn stat(path: &Path) -> Option<(u64, u64)> {
    let m = std::fs::metadata(path).ok()?;
    let mtime = m
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos() as u64;
    Some((m.len(), mtime))
}

impl Stamp {
    /// Stamps an input, hashing it (through the per-build memo).
    pub(crate) fn input(path: &Path, hashes: &FileHashes) -> Stamp {
        let (size, mtime_ns) = stat(path).unwrap_or((0, 0));
        Stamp {
            path: path.to_path_buf(),
            size,
            mtime_ns,
            sha: hashes.get(path).unwrap_or_default(),
        }
    }

    /// Stamps an output (size and mtime only).
    pub(crate) fn output(path: &Path) -> Stamp {
        let (size, mtime_ns) = stat(path).unwrap_or((0, 0));
        Stamp {
            path: path.to_path_buf(),
            size,
            mtime_ns,
            sha: String::new(),
        }
    }

    /// The stamp refreshed if the input still has the recorded content, else
    /// None. Cheap when size and mtime match (one `stat`); otherwise the
    /// file is hashed, so a touched but unchanged header is still current
    /// (and its new mtime is recorded, making the next check cheap again).
    pub(crate) fn check_input(&self, hashes: &FileHashes) -> Option<Stamp> {
        match stat(&self.path) {
            Some((size, mtime)) if size == self.size && mtime == self.mtime_ns => {
                Some(self.clone())
            }
            Some((size, mtime)) if size == self.size && hashes.get(&self.path)? == self.sha => {
                Some(Stamp {
                    mtime_ns: mtime,
                    ..self.clone()
                })
            }
            _ => None,
        }
    }

    #[cfg(test)]
    fn input_unchanged(&self, hashes: &FileHashes) -> bool {
        self.check_input(hashes).is_some()
    }

    /// Whether an output is still the file we wrote.
    pub(crate) fn output_unchanged(&self) -> bool {
        stat(&self.path) == Some((self.size, self.mtime_ns))
    }
}

/// One source's last build.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Entry {
    pub flags_key: String,
    pub key: String,
    /// The source first, then every header nvcc reported.
    pub deps: Vec<Stamp>,
    pub outputs: Vec<Stamp>,
    pub entries: Vec<String>,
    pub archs: Vec<String>,
    pub stderr: String,
}

/// A remembered arch plan (so a no-op run does not ask nvcc for its arch list).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct PlanStamp {
    pub sass: Vec<String>,
    pub ptx: Option<String>,
    pub source: String,
    pub warnings: Vec<String>,
}

/// The whole manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Manifest {
    pub version: u32,
    pub plans: BTreeMap<String, PlanStamp>,
    pub sources: BTreeMap<PathBuf, Entry>,
    /// Key of the last static library (objects + link step).
    #[serde(default)]
    pub library_key: Option<String>,
    /// The last typed launchers (feature `launchers`).
    #[serde(default)]
    pub launchers: Option<LaunchersStamp>,
}

/// Generated launcher code, keyed by every source's key, include dirs and defines.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct LaunchersStamp {
    pub key: String,
    pub code_per_source: Vec<(PathBuf, String)>,
    pub notes: Vec<String>,
}

const VERSION: u32 = 1;

impl Manifest {
    /// Loads a manifest; a missing or unreadable one is empty (everything rebuilds).
    pub(crate) fn load(path: &Path) -> Manifest {
        std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Manifest>(&b).ok())
            .filter(|m| m.version == VERSION)
            .unwrap_or_default()
    }

    pub(crate) fn to_json(&self) -> Vec<u8> {
        let mut m = self.clone();
        m.version = VERSION;
        serde_json::to_vec(&m).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touched_but_unchanged_is_unchanged() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("h.cuh");
        std::fs::write(&p, "#pragma once\n").unwrap();
        let hashes = FileHashes::default();
        let s = Stamp::input(&p, &hashes);
        assert!(s.input_unchanged(&FileHashes::default()));
        // Same content, new mtime.
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
            .unwrap();
        assert!(s.input_unchanged(&FileHashes::default()));
        std::fs::write(&p, "#pragma twice\n").unwrap();
        assert!(!s.input_unchanged(&FileHashes::default()));
        std::fs::remove_file(&p).unwrap();
        assert!(!s.input_unchanged(&FileHashes::default()));
    }

    #[test]
    fn garbage_manifest_is_empty() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("m.json");
        std::fs::write(&p, "{not json").unwrap();
        assert_eq!(Manifest::load(&p), Manifest::default());
    }
}
