//! Where the outputs a build took from shipped images came from:
//! `$OUT_DIR/cuda-build/<module>/prebuilt-origin.json`, written by the
//! build's finish stage (removed when it used none), read by
//! `cargo cuda inspect` ([`origin_of`]).

use crate::compile::prebuilt::manifest::Record;
use std::path::{Path, PathBuf};

/// The file's name in a build's `cuda-build/<module>/` folder.
pub const FILE: &str = "prebuilt-origin.json";

/// One output and the shipped image it holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Origin {
    /// The manifest the image was listed in.
    pub manifest: PathBuf,
    /// The output file.
    pub output: PathBuf,
    /// The manifest's record for the image.
    pub record: Record,
}

/// The origin file's text (sorted by output; stable, so a rerun writes
/// nothing when nothing changed).
pub(crate) fn render(origins: &[Origin]) -> Vec<u8> {
    let mut v: Vec<&Origin> = origins.iter().collect();
    v.sort_by(|a, b| a.output.cmp(&b.output));
    serde_json::to_vec_pretty(&v).unwrap_or_default()
}

/// Where `file` came from, if a cuda-build build took it from a shipped
/// image: the origin files of its folder and of the OUT_DIRs above it are
/// read, and an entry counts only while the file still has its bytes' size.
pub fn origin_of(file: &Path) -> Option<Origin> {
    let file = cuda_toolchain::fsutil::normalize(file);
    let size = std::fs::metadata(&file).ok()?.len();
    for dir in file.ancestors().skip(1).take(4) {
        let mut candidates = vec![dir.join(FILE)];
        if let Ok(modules) = std::fs::read_dir(dir.join("cuda-build")) {
            candidates.extend(modules.flatten().map(|m| m.path().join(FILE)));
        }
        for c in candidates {
            let Ok(bytes) = std::fs::read(&c) else {
                continue;
            };
            let Ok(list) = serde_json::from_slice::<Vec<Origin>>(&bytes) else {
                continue;
            };
            if let Some(o) = list
                .into_iter()
                .find(|o| o.output == file && o.record.size == size)
            {
                return Some(o);
            }
        }
    }
    None
}
