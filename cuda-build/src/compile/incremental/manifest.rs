//! The per-OUT_DIR manifest: what each source was built from last time, so a
//! run with nothing changed stats files instead of hashing them, and starts
//! no nvcc.

use crate::compile::incremental::hash::{file_stat as stat, FileHashes, RecordedHashes};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A file as last seen: size, mtime and content hash.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Stamp {
    pub path: PathBuf,
    pub size: u64,
    pub mtime_ns: u64,
    /// SHA-256 of the content; empty for outputs (their hashes live in the cache).
    pub sha: String,
    /// Its row in the loaded manifest's input table, shared by every source
    /// that includes the file: [`InputChecks`] checks each row once without
    /// hashing paths. None for stamps made in this build.
    #[serde(skip)]
    pub row: Option<u32>,
}

/// What the stamp records; `row` is bookkeeping.
impl PartialEq for Stamp {
    fn eq(&self, o: &Stamp) -> bool {
        (self.size, self.mtime_ns) == (o.size, o.mtime_ns)
            && self.path == o.path
            && self.sha == o.sha
    }
}

impl Eq for Stamp {}

/// Hashes the path's bytes, not its components: `Path`'s component-wise
/// hash is slow in an unoptimised build. Equal stamps still hash equally.
impl std::hash::Hash for Stamp {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.path.as_os_str().as_encoded_bytes().hash(h);
        self.size.hash(h);
        self.mtime_ns.hash(h);
    }
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
            row: None,
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
            row: None,
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

/// Generated launcher code, keyed by every source's key, include dirs and
/// defines: the code per source in the sources' order, and the notes (paths
/// inside are package-relative). Kept in the manifest and, under the same
/// key, in the cache's `launchers` records.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct LaunchersStamp {
    pub key: String,
    pub code: Vec<String>,
    pub notes: Vec<String>,
}

// 3: launchers keep their code by the sources' order, not by path.
const VERSION: u32 = 3;

/// The manifest as stored: every input once (package-relative when inside
/// the package), entries pointing at them by index. Sources share most
/// headers, so this keeps the file small.
#[derive(serde::Serialize, serde::Deserialize)]
struct Disk {
    version: u32,
    plans: BTreeMap<String, PlanStamp>,
    /// (path, size, mtime_ns, sha256)
    inputs: Vec<(PathBuf, u64, u64, String)>,
    sources: BTreeMap<PathBuf, DiskEntry>,
    library_key: Option<String>,
    launchers: Option<LaunchersStamp>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct DiskEntry {
    flags_key: String,
    key: String,
    deps: Vec<u32>,
    outputs: Vec<Stamp>,
    entries: Vec<String>,
    archs: Vec<String>,
    stderr: String,
}

impl Manifest {
    /// A manifest whose one source recorded `path` as its input (tests).
    #[cfg(test)]
    pub(crate) fn with_input(path: &Path, size: u64, mtime_ns: u64, sha: &str) -> Manifest {
        let stamp = Stamp {
            path: path.to_path_buf(),
            size,
            mtime_ns,
            sha: sha.to_string(),
            row: None,
        };
        let entry = Entry {
            flags_key: String::new(),
            key: String::new(),
            deps: vec![stamp],
            outputs: Vec::new(),
            entries: Vec::new(),
            archs: Vec::new(),
            stderr: String::new(),
        };
        let mut m = Manifest::default();
        m.sources.insert(path.to_path_buf(), entry);
        m
    }

    /// Loads a manifest; a missing, unreadable or older one is empty (everything is checked again).
    pub(crate) fn load(path: &Path, base: &Path) -> Manifest {
        std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Disk>(&b).ok())
            .filter(|m| m.version == VERSION)
            .and_then(|d| Manifest::from_disk(d, base))
            .unwrap_or_default()
    }

    fn from_disk(d: Disk, base: &Path) -> Option<Manifest> {
        let inputs: Vec<Stamp> = d
            .inputs
            .into_iter()
            .enumerate()
            .map(|(row, (path, size, mtime_ns, sha))| Stamp {
                path: base.join(path),
                size,
                mtime_ns,
                sha,
                row: u32::try_from(row).ok(),
            })
            .collect();
        let mut sources = BTreeMap::new();
        for (src, e) in d.sources {
            let deps = e
                .deps
                .iter()
                .map(|&i| inputs.get(i as usize).cloned())
                .collect::<Option<Vec<_>>>()?;
            sources.insert(
                base.join(src),
                Entry {
                    flags_key: e.flags_key,
                    key: e.key,
                    deps,
                    outputs: e.outputs,
                    entries: e.entries,
                    archs: e.archs,
                    stderr: e.stderr,
                },
            );
        }
        Some(Manifest {
            version: VERSION,
            plans: d.plans,
            sources,
            library_key: d.library_key,
            launchers: d.launchers,
        })
    }

    pub(crate) fn to_json(&self, base: &Path) -> Vec<u8> {
        let rel = |p: &Path| p.strip_prefix(base).unwrap_or(p).to_path_buf();
        let mut index: std::collections::HashMap<&Stamp, u32> = Default::default();
        let mut inputs = Vec::new();
        let mut sources = BTreeMap::new();
        for (src, e) in &self.sources {
            let deps = e
                .deps
                .iter()
                .map(|d| {
                    *index.entry(d).or_insert_with(|| {
                        inputs.push((rel(&d.path), d.size, d.mtime_ns, d.sha.clone()));
                        (inputs.len() - 1) as u32
                    })
                })
                .collect();
            sources.insert(
                rel(src),
                DiskEntry {
                    flags_key: e.flags_key.clone(),
                    key: e.key.clone(),
                    deps,
                    outputs: e.outputs.clone(),
                    entries: e.entries.clone(),
                    archs: e.archs.clone(),
                    stderr: e.stderr.clone(),
                },
            );
        }
        let disk = Disk {
            version: VERSION,
            plans: self.plans.clone(),
            inputs,
            sources,
            library_key: self.library_key.clone(),
            launchers: self.launchers.clone(),
        };
        serde_json::to_vec(&disk).unwrap_or_default()
    }

    /// Rows in the input table the manifest was loaded from (see [`Stamp::row`]).
    pub(crate) fn input_rows(&self) -> usize {
        self.sources
            .values()
            .flat_map(|e| e.deps.iter().filter_map(|d| d.row))
            .max()
            .map_or(0, |r| r as usize + 1)
    }

    /// Every input some source was built from (sources and headers).
    pub(crate) fn input_paths(&self) -> impl Iterator<Item = &PathBuf> + '_ {
        self.sources
            .values()
            .flat_map(|e| e.deps.iter().map(|d| &d.path))
    }
}

impl RecordedHashes for Manifest {
    fn for_each_recorded(&self, f: &mut dyn FnMut(&Path, u64, u64, &str)) {
        for d in self.sources.values().flat_map(|e| e.deps.iter()) {
            f(&d.path, d.size, d.mtime_ns, &d.sha);
        }
    }
}

/// Input checks memoised for one build: a header shared by 15 sources is
/// stat-ed (and, when touched, hashed) once.
#[derive(Default)]
pub(crate) struct InputChecks {
    /// By the loaded manifest's input row: the file's current mtime when
    /// its content is still the recorded one.
    rows: std::sync::OnceLock<Vec<std::sync::OnceLock<Option<u64>>>>,
    /// Stamps without a row.
    memo: std::sync::Mutex<std::collections::HashMap<Stamp, Option<u64>>>,
}

impl InputChecks {
    /// Makes room for the rows of the loaded manifest (the first call counts).
    pub(crate) fn size_for(&self, manifest: &Manifest) {
        let n = manifest.input_rows();
        let _ = self
            .rows
            .set((0..n).map(|_| std::sync::OnceLock::new()).collect());
    }

    /// [`Stamp::check_input`], once per distinct stamp: the file's current
    /// mtime when its content is still the recorded one, else None.
    pub(crate) fn check(&self, s: &Stamp, hashes: &FileHashes) -> Option<u64> {
        let now = || s.check_input(hashes).map(|now| now.mtime_ns);
        if let Some(slot) = s
            .row
            .and_then(|r| self.rows.get().and_then(|rows| rows.get(r as usize)))
        {
            return *slot.get_or_init(now);
        }
        if let Some(r) = self.memo.lock().ok().and_then(|m| m.get(s).copied()) {
            return r;
        }
        let r = now();
        if let Ok(mut m) = self.memo.lock() {
            m.insert(s.clone(), r);
        }
        r
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
    fn round_trip_shares_inputs() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("pkg");
        let h = Stamp {
            path: base.join("cu/h.cuh"),
            size: 3,
            mtime_ns: 9,
            sha: "ab".into(),
            row: None,
        };
        let entry = |src: &str| Entry {
            flags_key: "f".into(),
            key: "k".into(),
            deps: vec![
                Stamp {
                    path: base.join(src),
                    size: 1,
                    mtime_ns: 2,
                    sha: "cd".into(),
                    row: None,
                },
                h.clone(),
            ],
            outputs: Vec::new(),
            entries: vec!["k".into()],
            archs: vec!["sm_90".into()],
            stderr: String::new(),
        };
        let mut m = Manifest {
            version: VERSION,
            ..Default::default()
        };
        m.sources.insert(base.join("cu/a.cu"), entry("cu/a.cu"));
        m.sources.insert(base.join("cu/b.cu"), entry("cu/b.cu"));
        let json = m.to_json(&base);
        let text = String::from_utf8_lossy(&json);
        assert_eq!(text.matches("h.cuh").count(), 1, "{text}");
        assert!(
            !text.contains(&*base.to_string_lossy()),
            "paths are package-relative: {text}"
        );
        let p = d.path().join("m.json");
        std::fs::write(&p, &json).unwrap();
        assert_eq!(Manifest::load(&p, &base), m);
    }

    #[test]
    fn garbage_manifest_is_empty() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("m.json");
        std::fs::write(&p, "{not json").unwrap();
        assert_eq!(Manifest::load(&p, d.path()), Manifest::default());
    }
}
