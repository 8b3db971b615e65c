//! A shipped image read back: decompressed (`.zst`, zstd, read with ruzstd,
//! which has no dependencies) or raw (a prebuild's staging folder), never
//! past the size its record gives, and checked against the recorded SHA-256
//! before anything uses it. An image that fails is refused: never used,
//! never cached.

use crate::compile::incremental::hash::{file_sha256, sha256_hex};
use crate::compile::output::write_error::write_error;
use crate::compile::prebuilt::manifest::Record;
use cuda_toolchain::Error;
use std::io::Read;
use std::path::Path;

/// How restoring an image to an output ended badly.
#[derive(Debug)]
pub enum RestoreError {
    /// The image is not what its manifest says (why, naming the file).
    Refused(String),
    /// Writing the output failed (disk full, permissions).
    Write(Error),
}

/// The image's bytes, checked: `dir` is the folder the manifest is in.
pub fn read(dir: &Path, rec: &Record) -> Result<Vec<u8>, String> {
    let bytes = decode(dir, rec)?;
    let sha = sha256_hex(&bytes);
    if sha != rec.sha256 {
        return Err(mismatch(rec, &sha));
    }
    Ok(bytes)
}

/// Writes the image to `to` (a temporary file beside it, checked, then
/// renamed): the output is either the recorded bytes or absent.
pub(crate) fn restore(dir: &Path, rec: &Record, to: &Path) -> Result<(), RestoreError> {
    let bytes = decode(dir, rec).map_err(RestoreError::Refused)?;
    let tmp = cuda_toolchain::fsutil::temp_path_for(to);
    std::fs::write(&tmp, &bytes).map_err(|e| RestoreError::Write(write_error(to, &e)))?;
    drop(bytes);
    // An optimised hasher for big images (build dependencies are unoptimised).
    let sha = file_sha256(&tmp).unwrap_or_default();
    if sha != rec.sha256 {
        let _ = std::fs::remove_file(&tmp);
        return Err(RestoreError::Refused(mismatch(rec, &sha)));
    }
    std::fs::rename(&tmp, to).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        RestoreError::Write(write_error(to, &e))
    })
}

fn mismatch(rec: &Record, sha: &str) -> String {
    format!(
        "the shipped image `{}` for `{}` ({}) does not match its manifest: its SHA-256 is {sha}, the manifest says {}",
        rec.file,
        rec.source,
        rec.targets.join(", "),
        rec.sha256
    )
}

/// The stored bytes, decompressed when the file is `.zst`; at most the
/// recorded size (a bigger result is refused, not read to the end).
fn decode(dir: &Path, rec: &Record) -> Result<Vec<u8>, String> {
    let path = dir.join(&rec.file);
    let file = std::fs::File::open(&path).map_err(|e| {
        format!(
            "the shipped image `{}` for `{}` cannot be read: {e}",
            rec.file, rec.source
        )
    })?;
    let limit = rec.size.saturating_add(1);
    let mut out = Vec::with_capacity(rec.size.min(1 << 30) as usize);
    let corrupt = |e: &dyn std::fmt::Display| {
        format!(
            "the shipped image `{}` for `{}` is not a readable zstd file: {e}",
            rec.file, rec.source
        )
    };
    if rec.file.ends_with(".zst") {
        let reader = std::io::BufReader::new(file);
        let decoder = ruzstd::decoding::StreamingDecoder::new(reader).map_err(|e| corrupt(&e))?;
        decoder
            .take(limit)
            .read_to_end(&mut out)
            .map_err(|e| corrupt(&e))?;
    } else {
        file.take(limit)
            .read_to_end(&mut out)
            .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    }
    if out.len() as u64 != rec.size {
        return Err(format!(
            "the shipped image `{}` for `{}` holds {} bytes, its manifest says {}",
            rec.file,
            rec.source,
            if out.len() as u64 > rec.size {
                format!("more than {}", rec.size)
            } else {
                out.len().to_string()
            },
            rec.size
        ));
    }
    Ok(out)
}

/// Bytes as verify compares them: an object's temporary file name
/// (`tmpxft_<pid>_<n>`, which nvcc derives from its process id and writes
/// into host objects) masked; every other kind as it is.
pub fn comparable(kind: &str, bytes: &[u8]) -> Vec<u8> {
    if kind != "staticlib" {
        return bytes.to_vec();
    }
    let mut out = bytes.to_vec();
    let pat = b"tmpxft_";
    let mut i = 0;
    while let Some(at) = memchr::memmem::find(&out[i..], pat) {
        let start = i + at + pat.len();
        // tmpxft_XXXXXXXX_XXXXXXXX: two runs of 8 hex digits.
        let hex_at = |k: usize| out.get(k).is_some_and(|b| b.is_ascii_hexdigit());
        if (0..8).all(|k| hex_at(start + k))
            && out.get(start + 8) == Some(&b'_')
            && (0..8).all(|k| hex_at(start + 9 + k))
        {
            for k in (start..start + 8).chain(start + 9..start + 17) {
                out[k] = b'0';
            }
        }
        i = start;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(file: &str, bytes: &[u8]) -> Record {
        Record {
            module: "k".into(),
            source: "src/a.cu".into(),
            kind: "ptx".into(),
            role: "out.ptx".into(),
            targets: vec!["compute_80".into()],
            target: None,
            flags: vec![],
            defines: vec![],
            inputs: vec![],
            sha256: sha256_hex(bytes),
            size: bytes.len() as u64,
            file: file.into(),
            nvcc: "13.0.88".into(),
            host_compiler: None,
            entries: vec![],
        }
    }

    #[test]
    fn raw_images_are_checked() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("images")).unwrap();
        std::fs::write(d.path().join("images/a"), b"PTX").unwrap();
        let r = rec("images/a", b"PTX");
        assert_eq!(read(d.path(), &r).unwrap(), b"PTX");
        let out = d.path().join("out.ptx");
        restore(d.path(), &r, &out).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"PTX");
        std::fs::write(d.path().join("images/a"), b"PTY").unwrap();
        let why = read(d.path(), &r).unwrap_err();
        assert!(why.contains("does not match its manifest"), "{why}");
        std::fs::remove_file(&out).unwrap();
        assert!(matches!(
            restore(d.path(), &r, &out),
            Err(RestoreError::Refused(_))
        ));
        assert!(!out.exists(), "a refused image leaves no output");
        std::fs::write(d.path().join("images/a"), b"PTXPTX").unwrap();
        assert!(read(d.path(), &r).unwrap_err().contains("more than 3"));
    }

    #[test]
    fn zstd_images_are_decompressed() {
        let d = tempfile::tempdir().unwrap();
        let data = b"hello hello hello hello".repeat(100);
        let mut z = Vec::new();
        ruzstd::encoding::compress(
            &data[..],
            &mut z,
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        std::fs::write(d.path().join("x.zst"), &z).unwrap();
        assert_eq!(read(d.path(), &rec("x.zst", &data)).unwrap(), data);
        std::fs::write(d.path().join("x.zst"), &z[..z.len() / 2]).unwrap();
        assert!(read(d.path(), &rec("x.zst", &data)).is_err());
    }

    #[test]
    fn object_temp_names_are_masked() {
        let a = b"x tmpxft_00007e16_00000000-6_a.cudafe1.cpp y tmpxft_zz".to_vec();
        let b = b"x tmpxft_0000a1b2_00000003-6_a.cudafe1.cpp y tmpxft_zz".to_vec();
        assert_ne!(a, b);
        assert_eq!(comparable("staticlib", &a), comparable("staticlib", &b));
        assert_ne!(comparable("ptx", &a), comparable("ptx", &b));
    }
}
