//! Content hashing for cache keys: SHA-256, fields length-prefixed so that
//! `("ab", "c")` and `("a", "bc")` never collide.

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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

/// Hashes files once per build, however many sources include them.
#[derive(Default)]
pub(crate) struct FileHashes {
    memo: Mutex<HashMap<PathBuf, Option<String>>>,
}

impl FileHashes {
    /// The SHA-256 of a file's content; `None` when it cannot be read
    /// (a deleted header: the key then differs and the source recompiles).
    pub(crate) fn get(&self, path: &Path) -> Option<String> {
        if let Some(h) = self.memo.lock().ok()?.get(path) {
            return h.clone();
        }
        let h = std::fs::read(path).ok().map(|b| sha256_hex(&b));
        if let Ok(mut m) = self.memo.lock() {
            m.insert(path.to_path_buf(), h.clone());
        }
        h
    }
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
    fn known_digest() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
