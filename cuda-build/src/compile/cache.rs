//! The persistent, content-addressed kernel cache.
//!
//! Layout under the cache directory (`v1/` so a format change never reads
//! old entries):
//!
//! ```text
//! v1/deps/ab/<k1>.json      dependency list for (flags, source path, source content)
//! v1/plans/ef/<k>.json     arch plans computed from settings (not from detected GPUs)
//! v1/objects/cd/<key>/      outputs for the full key (flags + source + every header)
//!     meta.json             names, sizes and SHA-256 of the files, kernel names, archs, stderr
//!     out.fatbin …
//! v1/tmp/                   entries being written
//! ```
//!
//! An entry is written into `tmp/`, `meta.json` last, then the whole
//! directory is renamed into `objects/`. A reader trusts an entry only when
//! `meta.json` parses and every file has the recorded size and hash, so a
//! killed build (which leaves at most a stray `tmp/` directory) or a torn
//! file is a miss, never a wrong kernel. Two build scripts writing the same
//! key race on the rename; the loser drops its copy (same content).

use super::hash::{file_sha256, sha256_hex};
use std::io;
use std::path::{Path, PathBuf};

/// One file of a cached entry.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct FileMeta {
    pub name: String,
    pub size: u64,
    pub sha256: String,
}

/// What is recorded with an entry.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct ObjectMeta {
    pub files: Vec<FileMeta>,
    pub entries: Vec<String>,
    pub archs: Vec<String>,
    /// nvcc's stderr (warnings), replayed on a hit.
    pub stderr: String,
}

/// A verified cache entry.
pub(crate) struct CachedObject {
    pub dir: PathBuf,
    pub meta: ObjectMeta,
}

pub(crate) struct Cache {
    root: PathBuf,
}

fn shard(dir: &Path, key: &str) -> PathBuf {
    dir.join(&key[..2.min(key.len())]).join(key)
}

impl Cache {
    pub(crate) fn new(dir: &Path) -> Cache {
        Cache {
            root: dir.join("v1"),
        }
    }

    /// A small JSON record (`deps` index, remembered `plans`); a torn or
    /// foreign file does not parse and is a miss.
    pub(crate) fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        ns: &str,
        key: &str,
    ) -> Option<T> {
        let path = shard(&self.root.join(ns), key).with_extension("json");
        let bytes = std::fs::read(path).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// A small JSON record: None when absent, `Err` (why) when present but unreadable.
    pub(crate) fn read_json<T: serde::de::DeserializeOwned>(
        &self,
        ns: &str,
        key: &str,
    ) -> Option<Result<T, String>> {
        let path = shard(&self.root.join(ns), key).with_extension("json");
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
            Err(e) => return Some(Err(format!("{}: {e}", path.display()))),
        };
        Some(serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display())))
    }

    pub(crate) fn put_json<T: serde::Serialize>(
        &self,
        ns: &str,
        key: &str,
        value: &T,
    ) -> io::Result<()> {
        let path = shard(&self.root.join(ns), key).with_extension("json");
        std::fs::create_dir_all(path.parent().unwrap_or(&self.root))?;
        let json = serde_json::to_vec(value).map_err(io::Error::other)?;
        crate::fsutil::write_atomic(&path, &json)
    }

    pub(crate) fn deps_index(&self, k1: &str) -> Option<Vec<String>> {
        self.get_json("deps", k1)
    }

    pub(crate) fn put_deps_index(&self, k1: &str, deps: &[String]) -> io::Result<()> {
        self.put_json("deps", k1, &deps)
    }

    /// The entry for `key`, if present and intact. A damaged entry is removed.
    pub(crate) fn get(&self, key: &str) -> Option<CachedObject> {
        let dir = shard(&self.root.join("objects"), key);
        let bytes = std::fs::read(dir.join("meta.json")).ok()?;
        let meta: Option<ObjectMeta> = serde_json::from_slice(&bytes).ok();
        let intact = meta.as_ref().is_some_and(|m| {
            m.files.iter().all(|f| {
                let p = dir.join(&f.name);
                std::fs::metadata(&p).is_ok_and(|md| md.len() == f.size)
                    && file_sha256(&p).is_some_and(|h| h == f.sha256)
            })
        });
        if !intact {
            let _ = std::fs::remove_dir_all(&dir);
            return None;
        }
        Some(CachedObject { dir, meta: meta? })
    }

    /// Stores `files` (name, path of the produced file) under `key`.
    pub(crate) fn put(
        &self,
        key: &str,
        files: &[(String, PathBuf)],
        mut meta: ObjectMeta,
    ) -> io::Result<()> {
        let final_dir = shard(&self.root.join("objects"), key);
        if self.get(key).is_some() {
            return Ok(());
        }
        let tmp_root = self.root.join("tmp");
        std::fs::create_dir_all(&tmp_root)?;
        std::fs::create_dir_all(final_dir.parent().unwrap_or(&self.root))?;
        let tmp = crate::fsutil::temp_path_for(&tmp_root.join(key));
        let result = (|| {
            std::fs::create_dir(&tmp)?;
            meta.files.clear();
            for (name, src) in files {
                let bytes = std::fs::read(src)?;
                write_synced(&tmp.join(name), &bytes)?;
                meta.files.push(FileMeta {
                    name: name.clone(),
                    size: bytes.len() as u64,
                    sha256: sha256_hex(&bytes),
                });
            }
            let json = serde_json::to_vec_pretty(&meta).map_err(io::Error::other)?;
            write_synced(&tmp.join("meta.json"), &json)?;
            match std::fs::rename(&tmp, &final_dir) {
                Ok(()) => Ok(()),
                // Another build script stored the same key first: same content, keep theirs.
                Err(_) if self.get(key).is_some() => Ok(()),
                Err(_) => {
                    let _ = std::fs::remove_dir_all(&final_dir);
                    std::fs::rename(&tmp, &final_dir)
                }
            }
        })();
        if tmp.exists() {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        result
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::File::create(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// The default cache directory: `$XDG_CACHE_HOME/cuda-build`, else `$HOME/.cache/cuda-build`.
pub(crate) fn default_dir(env: &crate::env::Env) -> Option<PathBuf> {
    env.cache_dir()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corruption_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        let src = dir.path().join("k.fatbin");
        std::fs::write(&src, b"fatbin bytes").unwrap();
        let meta = ObjectMeta {
            entries: vec!["k".into()],
            ..Default::default()
        };
        cache
            .put("abcdef", &[("out.fatbin".into(), src.clone())], meta)
            .unwrap();
        let hit = cache.get("abcdef").expect("hit");
        assert_eq!(hit.meta.entries, ["k"]);
        assert_eq!(
            std::fs::read(hit.dir.join("out.fatbin")).unwrap(),
            b"fatbin bytes"
        );
        // A torn file (same size, other bytes) must not be trusted.
        std::fs::write(hit.dir.join("out.fatbin"), b"fatbin bytez").unwrap();
        assert!(cache.get("abcdef").is_none());
        assert!(!hit.dir.exists(), "the damaged entry is removed");
        // No temp directories are left behind.
        let tmp: Vec<_> = std::fs::read_dir(dir.path().join("v1/tmp"))
            .unwrap()
            .collect();
        assert!(tmp.is_empty());
    }

    #[test]
    fn default_dir_precedence() {
        use crate::env::{Env, Var};
        let env = Env::empty().set(Var::Home, "/home/u");
        assert_eq!(
            default_dir(&env).unwrap(),
            Path::new("/home/u/.cache/cuda-build")
        );
        let env = env.set(Var::XdgCacheHome, "/xdg");
        assert_eq!(default_dir(&env).unwrap(), Path::new("/xdg/cuda-build"));
        let env = env.set(Var::CudaBuildCacheDir, "/c");
        assert_eq!(default_dir(&env).unwrap(), Path::new("/c"));
    }
}
