//! The staging folder of `cargo cuda prebuild`: while it runs the package's
//! build (`CUDA_BUILD_PREBUILT_RECORD` names this folder), each build of the
//! package appends what it produced, the same [`Record`] lines a manifest
//! holds, with the images uncompressed:
//!
//! ```text
//! <staging>/package            the package directory whose builds record
//! <staging>/records/*.jsonl    one file per build run, records with file = images/<sha256>
//! <staging>/images/<sha256>    the image bytes
//! ```
//!
//! The CLI then compresses the images and writes the package's manifest.

use crate::compile::prebuilt::manifest::{parse_records, Record};
use cuda_toolchain::Error;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The file that names the package directory.
pub const PACKAGE_FILE: &str = "package";
/// The folder of record files.
pub const RECORDS: &str = "records";
/// The folder of images.
pub const IMAGES: &str = "images";

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Makes an empty staging folder for `package_dir`'s builds.
pub fn create(staging: &Path, package_dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(staging.join(RECORDS))?;
    std::fs::create_dir_all(staging.join(IMAGES))?;
    let dir = cuda_toolchain::fsutil::normalize(package_dir);
    std::fs::write(staging.join(PACKAGE_FILE), dir.to_string_lossy().as_bytes())
}

/// Whether a build of the package in `package_dir` records into `staging`
/// (another package's build, a dependency, does not).
pub(crate) fn records(staging: &Path, package_dir: &Path) -> bool {
    std::fs::read_to_string(staging.join(PACKAGE_FILE))
        .is_ok_and(|d| Path::new(d.trim()) == cuda_toolchain::fsutil::normalize(package_dir))
}

/// Adds one build's records; `images` are (SHA-256, the output file holding
/// those bytes). Images are copied once (by content); the records file is
/// written whole, then renamed.
pub(crate) fn add(
    staging: &Path,
    records: &[Record],
    images: &[(String, PathBuf)],
) -> Result<(), Error> {
    let fail = |what: &Path, e: std::io::Error| {
        Error::new(
            "write-failed",
            format!(
                "cannot record a prebuilt image in `{}`: {e}",
                what.display()
            ),
        )
        .with_help("check the free space and permissions of the prebuild's target directory")
    };
    for (sha, from) in images {
        let to = staging.join(IMAGES).join(sha);
        if !to.is_file() {
            cuda_toolchain::fsutil::copy_atomic(from, &to).map_err(|e| fail(&to, e))?;
        }
    }
    let mut text = String::new();
    for r in records {
        text.push_str(&serde_json::to_string(r).unwrap_or_default());
        text.push('\n');
    }
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = format!("{}-{n}-{}.jsonl", std::process::id(), nanos());
    let path = staging.join(RECORDS).join(name);
    cuda_toolchain::fsutil::write_atomic_unsynced(&path, text.as_bytes())
        .map_err(|e| fail(&path, e))
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// Every record in the staging folder, in file-name order.
pub fn read(staging: &Path) -> Result<Vec<Record>, Error> {
    let dir = staging.join(RECORDS);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| {
            Error::new(
                "prebuilt-manifest-invalid",
                format!("cannot read `{}`: {e}", dir.display()),
            )
        })?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        out.extend(parse_records(&f, text.lines().enumerate())?);
    }
    Ok(out)
}
