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
//! With `CUDA_BUILD_CACHE_REDIS` set, a Redis server is a second tier
//! behind this directory (read-through, write-through): a local miss asks
//! Redis, and what it answers is verified exactly as a local entry is (every
//! file's size and SHA-256 from its meta) before it is written here and
//! used; a fresh compile is stored here and in Redis. The small `deps` and
//! `plans` records travel the same way (a second machine needs the deps
//! index to compute the full key). Redis keys are `cuda-build:v1:<ns>:<key>`,
//! so one server can also serve sccache. Any fault (down, gone mid-build,
//! garbage) turns the tier off for the rest of the build with one warning;
//! the local cache goes on.
//!
//! An entry is written into `tmp/`, `meta.json` last, then the whole
//! directory is renamed into `objects/`. A reader trusts an entry only when
//! `meta.json` parses and every file has the recorded size and hash, so a
//! killed build (which leaves at most a stray `tmp/` directory) or a torn
//! file is a miss, never a wrong kernel. Two build scripts writing the same
//! key race on the rename; the loser drops its copy (same content).

use crate::compile::incremental::hash::{file_sha256, sha256_hex};
use crate::compile::incremental::redis;
use cuda_toolchain::env::{Env, Var};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

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
    remote: Option<Tier>,
}

/// The record namespaces shared through Redis (`durations` are per machine).
const REMOTE_NS: &[&str] = &["deps", "plans", "launchers"];

/// Magic at the start of a Redis value: format version of the blob.
const BLOB_MAGIC: &[u8; 8] = b"cbcache1";

/// The Redis tier, on until its first fault.
struct Tier {
    client: Option<redis::Client>,
    off: AtomicBool,
    /// The one warning to hand to the build (taken once).
    note: Mutex<Option<String>>,
}

impl Tier {
    fn from_env(env: &Env) -> Option<Tier> {
        let var = Var::CudaBuildCacheRedis;
        let url = env.get_nonempty(var)?.trim();
        Some(match redis::Endpoint::parse(url) {
            Ok(ep) => Tier {
                client: Some(redis::Client::new(ep)),
                off: AtomicBool::new(false),
                note: Mutex::new(None),
            },
            Err(why) => {
                // Never echo a password, even from a malformed URL.
                let shown = cuda_toolchain::redact::mask_credentials(url);
                Tier {
                    client: None,
                    off: AtomicBool::new(true),
                    note: Mutex::new(Some(format!(
                        "cuda-build: {}=`{shown}` is not used: {why}; expected {}. The remote kernel cache is off for this build (local cache only)",
                        var.name(),
                        redis::EXPECTED
                    ))),
                }
            }
        })
    }

    fn client(&self) -> Option<&redis::Client> {
        if self.off.load(Ordering::Relaxed) {
            return None;
        }
        self.client.as_ref()
    }

    /// The first fault turns the tier off and leaves one warning.
    fn fault(&self, client: &redis::Client, why: String) {
        if !self.off.swap(true, Ordering::Relaxed) {
            if let Ok(mut n) = self.note.lock() {
                *n = Some(format!(
                    "cuda-build: the remote kernel cache is off for this build: {}={}: {why}; building with the local cache only",
                    Var::CudaBuildCacheRedis.name(),
                    client.endpoint().shown()
                ));
            }
        }
    }

    fn get(&self, ns: &str, key: &str) -> Option<Vec<u8>> {
        let c = self.client()?;
        match c.get(&redis_key(ns, key)) {
            Ok(v) => v,
            Err(why) => {
                self.fault(c, why);
                None
            }
        }
    }

    fn set(&self, ns: &str, key: &str, value: &[u8]) {
        // Larger entries stay local: one value is read into memory whole.
        if value.len() > redis::MAX_VALUE {
            return;
        }
        if let Some(c) = self.client() {
            if let Err(why) = c.set(&redis_key(ns, key), value) {
                self.fault(c, why);
            }
        }
    }
}

/// An entry's files: name and bytes.
type Files = Vec<(String, Vec<u8>)>;

fn redis_key(ns: &str, key: &str) -> String {
    format!("cuda-build:v1:{ns}:{key}")
}

/// One Redis value: magic, meta length (u64 LE), meta JSON, then every
/// file's bytes in meta order.
fn encode_blob(meta: &ObjectMeta, files: &[(String, Vec<u8>)]) -> Option<Vec<u8>> {
    let json = serde_json::to_vec(meta).ok()?;
    let total = files.iter().map(|(_, b)| b.len()).sum::<usize>();
    let mut out = Vec::with_capacity(16 + json.len() + total);
    out.extend_from_slice(BLOB_MAGIC);
    out.extend_from_slice(&(json.len() as u64).to_le_bytes());
    out.extend_from_slice(&json);
    for (_, b) in files {
        out.extend_from_slice(b);
    }
    Some(out)
}

/// The entry in a Redis value: plain file names only, every file's size as
/// the meta says, nothing left over; None otherwise. The SHA-256s are
/// checked once the files are on disk, as for a local entry
/// ([`Cache::get`]), where an optimised hasher can do it: unoptimised sha2
/// in memory took 2 s for candle-kernels' 53 MB.
fn decode_blob(blob: &[u8]) -> Option<(ObjectMeta, Files)> {
    let rest = blob.strip_prefix(BLOB_MAGIC)?;
    let (len, rest) = rest.split_at_checked(8)?;
    let len = usize::try_from(u64::from_le_bytes(len.try_into().ok()?)).ok()?;
    let (json, mut body) = rest.split_at_checked(len)?;
    let meta: ObjectMeta = serde_json::from_slice(json).ok()?;
    let mut files = Vec::new();
    for f in &meta.files {
        let plain = !f.name.is_empty()
            && !f.name.starts_with('.')
            && f.name != "meta.json"
            && f.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !plain {
            return None;
        }
        let (bytes, next) = body.split_at_checked(usize::try_from(f.size).ok()?)?;
        files.push((f.name.clone(), bytes.to_vec()));
        body = next;
    }
    body.is_empty().then_some((meta, files))
}

fn shard(dir: &Path, key: &str) -> PathBuf {
    dir.join(&key[..2.min(key.len())]).join(key)
}

impl Cache {
    pub(crate) fn new(dir: &Path) -> Cache {
        Cache {
            root: dir.join("v1"),
            remote: None,
        }
    }

    /// Adds the Redis tier named by `CUDA_BUILD_CACHE_REDIS`, if set. A
    /// malformed value leaves the tier off with a warning ([`Cache::take_remote_note`]).
    pub(crate) fn with_remote(mut self, env: &Env) -> Cache {
        self.remote = Tier::from_env(env);
        self
    }

    /// The remote tier's one warning (a bad URL, or the fault that turned
    /// it off), handed out once.
    pub(crate) fn take_remote_note(&self) -> Option<String> {
        self.remote.as_ref()?.note.lock().ok()?.take()
    }

    fn json_path(&self, ns: &str, key: &str) -> PathBuf {
        shard(&self.root.join(ns), key).with_extension("json")
    }

    /// Writes a record's bytes locally (temp file, then rename; no fsync:
    /// a record torn by a crash does not parse, and is a miss).
    fn put_local_record(&self, ns: &str, key: &str, bytes: &[u8]) -> io::Result<()> {
        let path = self.json_path(ns, key);
        std::fs::create_dir_all(path.parent().unwrap_or(&self.root))?;
        cuda_toolchain::fsutil::write_atomic_unsynced(&path, bytes)
    }

    /// A small JSON record (`deps` index, remembered `plans`); a torn or
    /// foreign file does not parse and is a miss.
    pub(crate) fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        ns: &str,
        key: &str,
    ) -> Option<T> {
        let path = self.json_path(ns, key);
        if let Some(v) = std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
        {
            return Some(v);
        }
        let tier = self.remote.as_ref().filter(|_| REMOTE_NS.contains(&ns))?;
        let bytes = tier.get(ns, key)?;
        let v = serde_json::from_slice(&bytes).ok()?;
        let _ = self.put_local_record(ns, key, &bytes);
        Some(v)
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
        let json = serde_json::to_vec(value).map_err(io::Error::other)?;
        if let Some(tier) = self.remote.as_ref().filter(|_| REMOTE_NS.contains(&ns)) {
            tier.set(ns, key, &json);
        }
        self.put_local_record(ns, key, &json)
    }

    pub(crate) fn deps_index(&self, k1: &str) -> Option<Vec<String>> {
        self.get_json("deps", k1)
    }

    pub(crate) fn put_deps_index(&self, k1: &str, deps: &[String]) -> io::Result<()> {
        self.put_json("deps", k1, &deps)
    }

    /// The entry for `key`, if present and intact: locally, else from the
    /// remote tier (verified, then kept locally). A damaged local entry is
    /// removed; a damaged remote one is a miss (a fresh compile overwrites it).
    pub(crate) fn get(&self, key: &str) -> Option<CachedObject> {
        if let Some(hit) = self.get_local(key) {
            return Some(hit);
        }
        let blob = self.remote.as_ref()?.get("objects", key)?;
        let (meta, files) = decode_blob(&blob)?;
        self.put_local(key, &files, meta).ok()?;
        // Verified here: a damaged value is removed again, and is a miss.
        self.get_local(key)
    }

    fn get_local(&self, key: &str) -> Option<CachedObject> {
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

    /// Stores `files` (name, path of the produced file) under `key`, here
    /// and in the remote tier.
    pub(crate) fn put(
        &self,
        key: &str,
        files: &[(String, PathBuf)],
        mut meta: ObjectMeta,
    ) -> io::Result<()> {
        let mut data = Vec::with_capacity(files.len());
        meta.files.clear();
        for (name, src) in files {
            let bytes = std::fs::read(src)?;
            // Big outputs by an optimised hasher (see `file_sha256`): this is
            // on every compile's path.
            let sha256 = (bytes.len() as u64
                >= crate::compile::incremental::hash::EXTERNAL_HASH_MIN)
                .then(|| file_sha256(src))
                .flatten()
                .unwrap_or_else(|| sha256_hex(&bytes));
            meta.files.push(FileMeta {
                name: name.clone(),
                size: bytes.len() as u64,
                sha256,
            });
            data.push((name.clone(), bytes));
        }
        if let Some(tier) = &self.remote {
            if let Some(blob) = encode_blob(&meta, &data) {
                tier.set("objects", key, &blob);
            }
        }
        self.put_local(key, &data, meta)
    }

    /// Writes an entry into the local directory (whole, or not at all).
    fn put_local(
        &self,
        key: &str,
        files: &[(String, Vec<u8>)],
        meta: ObjectMeta,
    ) -> io::Result<()> {
        let final_dir = shard(&self.root.join("objects"), key);
        if self.get_local(key).is_some() {
            return Ok(());
        }
        let tmp_root = self.root.join("tmp");
        std::fs::create_dir_all(&tmp_root)?;
        std::fs::create_dir_all(final_dir.parent().unwrap_or(&self.root))?;
        let tmp = cuda_toolchain::fsutil::temp_path_for(&tmp_root.join(key));
        let result = (|| {
            std::fs::create_dir(&tmp)?;
            for (name, bytes) in files {
                std::fs::write(tmp.join(name), bytes)?;
            }
            let json = serde_json::to_vec_pretty(&meta).map_err(io::Error::other)?;
            // No fsync (milliseconds each, on the one-edit path): every
            // file's size and SHA-256 are checked before an entry is used,
            // so one a crash left short is a miss, never a wrong output.
            std::fs::write(tmp.join("meta.json"), &json)?;
            match std::fs::rename(&tmp, &final_dir) {
                Ok(()) => Ok(()),
                // Another build script stored the same key first: same content, keep theirs.
                Err(_) if self.get_local(key).is_some() => Ok(()),
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

/// The default cache directory: `$XDG_CACHE_HOME/cuda-build`, else `$HOME/.cache/cuda-build`.
pub(crate) fn default_dir(env: &cuda_toolchain::env::Env) -> Option<PathBuf> {
    env.cache_dir()
}

/// The cache directory a build uses: None when the build (`Build::no_cache`)
/// or `CUDA_BUILD_NO_CACHE` turns the cache off, else the build's own
/// (`Build::cache_dir`), else [`default_dir`].
pub(crate) fn dir_for(
    env: &cuda_toolchain::env::Env,
    explicit: Option<&Path>,
    no_cache: bool,
) -> Option<PathBuf> {
    if no_cache || env.flag(Var::CudaBuildNoCache) {
        return None;
    }
    explicit.map(Path::to_path_buf).or_else(|| default_dir(env))
}

/// `dir` when the kernel cache can live there, else the warning that says
/// why not and what to change: a cache dir that is a regular file (or sits
/// below one, or cannot be made) turns the cache off for this build, named
/// by where it came from (`Build::cache_dir` or `CUDA_BUILD_CACHE_DIR`).
pub(crate) fn usable_dir(dir: PathBuf, explicit: bool) -> Result<PathBuf, String> {
    let why = match std::fs::metadata(&dir) {
        Ok(m) if m.is_dir() => match std::fs::create_dir_all(dir.join("v1")) {
            Ok(()) => return Ok(dir),
            Err(e) => format!("cannot be written ({e})"),
        },
        Ok(_) => "is not a directory".to_string(),
        Err(_) => match std::fs::create_dir_all(dir.join("v1")) {
            Ok(()) => return Ok(dir),
            Err(e) => format!("cannot be created ({e})"),
        },
    };
    Err(format!(
        "cuda-build: the kernel cache `{}` {why}, so this build runs without it; set {} to a writable directory (or CUDA_BUILD_NO_CACHE=1)",
        dir.display(),
        if explicit { "Build::cache_dir" } else { "CUDA_BUILD_CACHE_DIR" },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache dir that is a regular file names the setting to change,
    /// not some record inside it.
    #[test]
    fn a_cache_dir_that_is_a_file_names_its_setting() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cache");
        std::fs::write(&file, "").unwrap();
        let w = usable_dir(file.clone(), false).unwrap_err();
        assert!(
            w.contains(&format!("`{}` is not a directory", file.display()))
                && w.contains("set CUDA_BUILD_CACHE_DIR"),
            "{w}"
        );
        let w = usable_dir(file.join("below"), true).unwrap_err();
        assert!(
            w.contains("cannot be created") && w.contains("Build::cache_dir"),
            "{w}"
        );
        let ok = dir.path().join("fresh");
        assert_eq!(usable_dir(ok.clone(), false).unwrap(), ok);
        assert!(ok.join("v1").is_dir());
    }

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

    /// What comes from Redis is trusted only whole: every file's size and
    /// hash as recorded (checked once written, as a local entry), nothing
    /// after them, plain file names only.
    #[test]
    fn remote_blobs_are_verified() {
        let bytes = b"fatbin bytes".to_vec();
        let meta = ObjectMeta {
            files: vec![FileMeta {
                name: "out.fatbin".into(),
                size: bytes.len() as u64,
                sha256: sha256_hex(&bytes),
            }],
            entries: vec!["k".into()],
            ..Default::default()
        };
        let files = vec![("out.fatbin".to_string(), bytes)];
        let blob = encode_blob(&meta, &files).unwrap();
        assert_eq!(decode_blob(&blob), Some((meta.clone(), files.clone())));
        // A flipped byte has the right shape, and is refused once on disk.
        let mut flipped = blob.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let (m, f) = decode_blob(&flipped).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let local = Cache::new(dir.path());
        local.put_local("flipped", &f, m).unwrap();
        assert!(local.get_local("flipped").is_none());
        assert!(!shard(&local.root.join("objects"), "flipped").exists());
        let (m, f) = decode_blob(&blob).unwrap();
        local.put_local("intact", &f, m).unwrap();
        assert!(local.get_local("intact").is_some());
        assert_eq!(decode_blob(&blob[..blob.len() - 1]), None);
        assert_eq!(decode_blob(&[&blob[..], b"x"].concat()), None);
        assert_eq!(
            decode_blob(b"cbcache1\xff\xff\xff\xff\xff\xff\xff\xff"),
            None
        );
        for name in ["../x", "a/b", ".hidden", "meta.json", ""] {
            let mut m = meta.clone();
            m.files[0].name = name.into();
            let blob = encode_blob(&m, &files).unwrap();
            assert_eq!(decode_blob(&blob), None, "{name:?}");
        }
        // A malformed URL leaves the tier off, with one note naming the variable.
        let env = Env::empty().set(Var::CudaBuildCacheRedis, "http://:pw@h:1");
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path()).with_remote(&env);
        assert!(cache.get("abcdef").is_none());
        let note = cache.take_remote_note().unwrap();
        assert!(
            note.contains("CUDA_BUILD_CACHE_REDIS=`http://:***@h:1`")
                && note.contains("redis://host:port[/db]"),
            "{note}"
        );
        assert_eq!(cache.take_remote_note(), None, "one warning");
    }

    #[test]
    fn default_dir_precedence() {
        use cuda_toolchain::env::{Env, Var};
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
