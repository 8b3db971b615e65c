//! Content hashing for cache keys: SHA-256, fields length-prefixed so that
//! `("ab", "c")` and `("a", "bc")` never collide.

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

/// A key being built from fields.
#[derive(Clone, Default)]
pub(crate) struct KeyHasher(Sha256);

impl KeyHasher {
    pub(crate) fn new(domain: &str) -> Self {
        let mut h = KeyHasher(Sha256::new());
        h.field(domain.as_bytes());
        h
    }

    pub(crate) fn field(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
        self
    }

    pub(crate) fn str(&mut self, s: &str) -> &mut Self {
        self.field(s.as_bytes())
    }

    pub(crate) fn finish(self) -> String {
        hex(&self.0.finalize())
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// SHA-256 of some bytes, as hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// A file's size and modification time (ns since the epoch).
pub(crate) fn file_stat(path: &Path) -> Option<(u64, u64)> {
    let m = std::fs::metadata(path).ok()?;
    let mtime = m
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos() as u64;
    Some((m.len(), mtime))
}

/// Hashes an earlier build recorded for its inputs (the manifest keeps them).
pub(crate) trait RecordedHashes: Send + Sync {
    /// Calls `f` with each input's path, size, mtime (ns) and SHA-256 (hex;
    /// empty when none was recorded).
    fn for_each_recorded(&self, f: &mut dyn FnMut(&Path, u64, u64, &str));
}

/// Hashes files once per build, however many sources include them.
///
/// Seeded with the hashes the last build recorded (size, mtime, SHA-256):
/// a file whose size and mtime still match is not read again. Editing one
/// `.cu` then hashes that file alone, not the hundreds of toolkit headers
/// its key also covers (in cargo's default dev profile sha2 is unoptimised,
/// and hashing them all cost 0.4 s per edit on candle-kernels). Trusting
/// size and mtime is the same rule the up-to-date check uses.
///
/// The seed is indexed only when a file must be hashed at all: a rerun with
/// nothing changed never asks, and pays nothing for it.
///
/// Maps are keyed by the path's bytes: hashing a `Path` walks its
/// components byte by byte, which unoptimised costs microseconds per path,
/// and the seed holds every header of every source (1,500 on candle).
#[derive(Default)]
pub(crate) struct FileHashes {
    memo: Mutex<HashMap<OsString, Option<String>>>,
    known: Mutex<Known>,
}

#[derive(Default)]
struct Known {
    /// The last build's records, not yet indexed.
    pending: Vec<std::sync::Arc<dyn RecordedHashes>>,
    index: HashMap<OsString, (u64, u64, String)>,
}

impl FileHashes {
    /// Remembers the hashes an earlier build recorded (indexed on first use).
    pub(crate) fn seed(&self, record: std::sync::Arc<dyn RecordedHashes>) {
        if let Ok(mut known) = self.known.lock() {
            known.pending.push(record);
        }
    }

    fn recorded(&self, path: &Path) -> Option<(u64, u64, String)> {
        let mut known = self.known.lock().ok()?;
        for m in std::mem::take(&mut known.pending) {
            m.for_each_recorded(&mut |p, size, mtime, sha| {
                if !sha.is_empty() {
                    known
                        .index
                        .insert(p.as_os_str().to_owned(), (size, mtime, sha.to_string()));
                }
            });
        }
        known.index.get(path.as_os_str()).cloned()
    }

    /// Hashes every file of `paths` not known yet in one run of an
    /// optimised hasher ([`external_sha256`]): a clean build or another
    /// machine knows none of a source's headers, hundreds of files and
    /// megabytes that unoptimised sha2 reads at 25 MB/s (candle's
    /// moe_wmma.cu: 1,437 files, 16 MB, 1.5 s). What the run does not
    /// answer, or a machine without such a program, is left to
    /// [`FileHashes::get`].
    pub(crate) fn prefetch(&self, paths: &[std::path::PathBuf]) {
        let mut todo: Vec<&str> = Vec::new();
        let mut queued: std::collections::HashSet<&str> = std::collections::HashSet::new();
        let mut bytes = 0u64;
        {
            let Ok(mut memo) = self.memo.lock() else {
                return;
            };
            for p in paths {
                if memo.contains_key(p.as_os_str()) {
                    continue;
                }
                let stat = file_stat(p);
                match (self.recorded(p), stat) {
                    (Some((size, mtime, sha)), Some(now)) if now == (size, mtime) => {
                        memo.insert(p.as_os_str().to_owned(), Some(sha));
                    }
                    // Names the hashers would escape go one by one.
                    (_, Some((size, _))) => match p.to_str() {
                        Some(s) if plain_name(s) && queued.insert(s) => {
                            todo.push(s);
                            bytes += size;
                        }
                        _ => {}
                    },
                    (_, None) => {}
                }
            }
        }
        // Below this, starting a process costs more than hashing here.
        if bytes < EXTERNAL_BATCH_MIN {
            return;
        }
        for chunk in todo.chunks(1000) {
            let found = external_sha256(chunk);
            if let Ok(mut memo) = self.memo.lock() {
                for name in chunk {
                    if let Some(hex) = found.get(*name) {
                        memo.insert(OsString::from(name), Some(hex.clone()));
                    }
                }
            }
        }
    }

    /// The SHA-256 of a file's content; `None` when it cannot be read
    /// (a deleted header: the key then differs and the source recompiles).
    pub(crate) fn get(&self, path: &Path) -> Option<String> {
        if let Some(h) = self.memo.lock().ok()?.get(path.as_os_str()) {
            return h.clone();
        }
        let h = match self.recorded(path) {
            Some((size, mtime, sha)) if file_stat(path) == Some((size, mtime)) => Some(sha),
            _ => file_sha256(path),
        };
        if let Ok(mut m) = self.memo.lock() {
            m.insert(path.as_os_str().to_owned(), h.clone());
        }
        h
    }
}

/// A batch of files at least this big in all is hashed by one external run.
const EXTERNAL_BATCH_MIN: u64 = 256 << 10;

/// Optimised SHA-256 programs, tried in turn, each printing `<hex>  <name>`
/// or `<hex> *<name>` per file and going on past unreadable ones. OpenSSL's
/// uses the CPU's SHA instructions (53 MB of cached kernels: 0.06 s here);
/// coreutils' does not (0.25 s); unoptimised sha2 takes about 2 s.
const HASHERS: &[(&str, &[&str])] = &[
    ("openssl", &["dgst", "-sha256", "-r", "--"]),
    ("sha256sum", &["--"]),
];

/// A name every hasher prints as given: no escapes, not an option.
fn plain_name(s: &str) -> bool {
    !s.contains(['\\', '\n', '\r']) && !s.starts_with('-')
}

/// The SHA-256 of each of `files` (plain names, see [`plain_name`]) that the
/// first working program of [`HASHERS`] could read, by name. Empty when none
/// is installed.
fn external_sha256(files: &[&str]) -> HashMap<String, String> {
    for (program, args) in HASHERS {
        let mut argv: Vec<&str> = args.to_vec();
        argv.extend(files);
        // Not installed, or stuck past the deadline: the next one.
        let Ok(out) = cuda_toolchain::process::run(program, &argv, Duration::from_secs(120)) else {
            continue;
        };
        let asked: std::collections::HashSet<&str> = files.iter().copied().collect();
        let found: HashMap<String, String> = parse_hash_lines(&out.stdout)
            .into_iter()
            .filter(|(name, _)| asked.contains(name))
            .map(|(n, h)| (n.to_string(), h.to_string()))
            .collect();
        // A program that ran but answered nothing usable (an unknown option
        // in an old version) does not count; an unreadable file's line is
        // just missing.
        if !found.is_empty() || out.status.success() {
            return found;
        }
    }
    HashMap::new()
}

/// Hash lines (`<64 hex>  <name>` or `<64 hex> *<name>`), by name; escaped
/// lines (starting with `\\`) and anything else are skipped.
fn parse_hash_lines(stdout: &str) -> HashMap<&str, &str> {
    stdout
        .lines()
        .filter_map(|l| {
            let (hex, rest) = (l.get(..64)?, l.get(64..)?);
            let name = rest
                .strip_prefix("  ")
                .or_else(|| rest.strip_prefix(" *"))?;
            hex.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
                .then_some((name, hex))
        })
        .collect()
}

/// Files at least this big are hashed by an external program when one is there.
pub(crate) const EXTERNAL_HASH_MIN: u64 = 1 << 20;

/// A file's SHA-256. Build dependencies are compiled without optimisation
/// in cargo's default dev profile, where sha2 manages about 25 MB/s: a
/// touched 50 MB source would cost 2 s on every rerun, and restoring a
/// library's 35 MB of objects from the cache 1.4 s. Big files go to an
/// optimised program ([`external_sha256`]) when one is installed;
/// otherwise, or if it fails, sha2 does.
pub(crate) fn file_sha256(path: &Path) -> Option<String> {
    let size = std::fs::metadata(path).ok()?.len();
    if size >= EXTERNAL_HASH_MIN {
        if let Some(name) = path.to_str().filter(|s| plain_name(s)) {
            if let Some(hex) = external_sha256(&[name]).remove(name) {
                return Some(hex);
            }
        }
    }
    std::fs::read(path).ok().map(|b| sha256_hex(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_length_prefixed() {
        let mut a = KeyHasher::new("t");
        a.str("ab").str("c");
        let mut b = KeyHasher::new("t");
        b.str("a").str("bc");
        assert_ne!(a.finish(), b.finish());
    }

    #[test]
    fn big_files_hash_the_same_either_way() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big.cu");
        let bytes: Vec<u8> = (0..EXTERNAL_HASH_MIN as usize + 7)
            .map(|i| (i % 251) as u8)
            .collect();
        std::fs::write(&p, &bytes).unwrap();
        assert_eq!(file_sha256(&p).unwrap(), sha256_hex(&bytes));
        assert_eq!(file_sha256(&d.path().join("missing")), None);
    }

    #[test]
    fn a_batch_hashes_the_same_as_one_by_one() {
        let d = tempfile::tempdir().unwrap();
        let mut paths = Vec::new();
        // Enough bytes for one sha256sum run, a name with a space, one
        // missing file and one with a backslash (hashed here, one by one).
        for (i, name) in ["a.cuh", "b c.cuh", "d\\e.cuh", "f.cuh"].iter().enumerate() {
            let p = d.path().join(name);
            std::fs::write(&p, vec![i as u8; 100 << 10]).unwrap();
            paths.push(p);
        }
        paths.push(d.path().join("missing.cuh"));
        let batch = FileHashes::default();
        batch.prefetch(&paths);
        let hashed = batch.memo.lock().unwrap().len();
        let one_by_one: Vec<Option<String>> = paths.iter().map(|p| file_sha256(p)).collect();
        let batched: Vec<Option<String>> = paths.iter().map(|p| batch.get(p)).collect();
        assert_eq!(batched, one_by_one);
        assert_eq!(batched[4], None);
        // With a hasher on PATH the three plain names came from its run.
        if HASHERS.iter().any(|(p, _)| {
            cuda_toolchain::process::run(p, ["--version"], Duration::from_secs(10)).is_ok()
        }) {
            assert_eq!(hashed, 3);
        }
    }

    #[test]
    fn every_installed_hasher_agrees_with_sha2() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("k.ptx");
        let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
        std::fs::write(&p, &bytes).unwrap();
        let name = p.to_str().unwrap();
        let mut ran = 0;
        for (program, args) in HASHERS {
            let mut argv: Vec<&str> = args.to_vec();
            argv.push(name);
            let Ok(out) = cuda_toolchain::process::run(program, &argv, Duration::from_secs(30))
            else {
                continue;
            };
            ran += 1;
            let lines = parse_hash_lines(&out.stdout);
            assert_eq!(
                lines.get(name).copied(),
                Some(sha256_hex(&bytes).as_str()),
                "{program}: {}",
                out.stdout
            );
        }
        // Linux CI has coreutils at least.
        if cfg!(target_os = "linux") {
            assert!(ran >= 1);
        }
    }

    #[test]
    fn hash_lines_are_parsed_by_name() {
        let h = "a".repeat(64);
        let out = format!("{h}  /x/a.cuh\n{h} */x/b c.cuh\n\\{h}  /x/d\\\\e.cuh\nnot a line\n");
        let m = parse_hash_lines(&out);
        assert_eq!(m.len(), 2, "{m:?}");
        assert_eq!(m["/x/a.cuh"], h);
        assert_eq!(m["/x/b c.cuh"], h);
    }

    #[test]
    fn seeded_hashes_are_used_only_while_size_and_mtime_match() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("h.cuh");
        std::fs::write(&p, b"int a;").unwrap();
        let (size, mtime) = file_stat(&p).unwrap();
        let seeded = |size, mtime| {
            let h = FileHashes::default();
            h.seed(std::sync::Arc::new(
                crate::compile::incremental::manifest::Manifest::with_input(
                    &p, size, mtime, "recorded",
                ),
            ));
            h
        };
        // A recorded hash with the file's current size and mtime is trusted
        // (the file is not read), so a planted value shows through.
        assert_eq!(seeded(size, mtime).get(&p).as_deref(), Some("recorded"));
        // Another mtime or size: the file is hashed.
        assert_eq!(seeded(size, mtime + 1).get(&p), Some(sha256_hex(b"int a;")));
        assert_eq!(seeded(size + 1, mtime).get(&p), Some(sha256_hex(b"int a;")));
    }

    #[test]
    fn known_digest() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
