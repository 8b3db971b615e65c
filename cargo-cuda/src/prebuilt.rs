//! Shipped kernel images as the CLI handles them (`cargo cuda prebuild`,
//! `cargo cuda inspect`): the package a command runs in, compressing images
//! for the package, and reading a package's `cuda-prebuilt/` back. The
//! format itself is cuda-build's (`cuda_build::compile::prebuilt`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use cuda_build::compile::prebuilt::manifest::{self, Header, Record};
use cuda_build::compile::prebuilt::stored;
use cuda_toolchain::env::Env;
use cuda_toolchain::Error;

/// zstd's level for shipped images: its strongest regular level (PTX text
/// shrinks about 14×); decompressing costs the same at any level.
pub const ZSTD_LEVEL: i32 = 19;

/// Compresses one image for the package.
pub fn compress(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    zstd::bulk::compress(bytes, ZSTD_LEVEL)
}

/// The package a command runs on.
#[derive(Debug, Clone)]
pub struct Package {
    /// Its name.
    pub name: String,
    /// Its directory (holds Cargo.toml).
    pub dir: PathBuf,
    /// Its Cargo.toml.
    pub manifest_path: PathBuf,
    /// The workspace's target directory.
    pub target_dir: PathBuf,
}

/// The package whose Cargo.toml is `manifest_path` (default: the current
/// directory's), from `cargo metadata --no-deps`.
pub fn locate(env: &Env, cargo: &Path, manifest_path: Option<&Path>) -> Result<Package, Error> {
    let wanted = match manifest_path {
        Some(p) => {
            crate::workspace::check_manifest_path(p)?;
            p.to_path_buf()
        }
        None => std::env::current_dir()
            .unwrap_or_default()
            .join("Cargo.toml"),
    };
    let wanted =
        cuda_toolchain::fsutil::normalize(&std::fs::canonicalize(&wanted).unwrap_or(wanted));
    let mut cmd = cargo_metadata::MetadataCommand::new();
    cmd.cargo_path(cargo).no_deps().manifest_path(&wanted);
    let meta = crate::workspace::run_metadata(env, &cmd, Duration::from_secs(120))?;
    let package = meta
        .packages
        .iter()
        .find(|p| {
            let m: &Path = p.manifest_path.as_std_path();
            cuda_toolchain::fsutil::normalize(&std::fs::canonicalize(m).unwrap_or(m.to_path_buf()))
                == wanted
        })
        .ok_or_else(|| {
            Error::new(
                "invalid-argument",
                format!("`{}` is a workspace without a package of its own", wanted.display()),
            )
            .with_help("run in the folder of the package that ships kernels, or pass --manifest-path <package>/Cargo.toml")
        })?;
    Ok(Package {
        name: package.name.to_string(),
        dir: wanted.parent().unwrap_or(Path::new(".")).to_path_buf(),
        manifest_path: wanted,
        target_dir: meta.target_directory.clone().into(),
    })
}

/// A package's shipped images, each decompressed and checked (or why not).
pub struct ShippedImages {
    /// The manifest.
    pub manifest: PathBuf,
    /// Its header.
    pub header: Header,
    /// Each record, with its image's bytes or why they cannot be used.
    pub images: Vec<(Record, Result<Vec<u8>, String>)>,
}

/// Reads `dir` (a package's `cuda-prebuilt/` folder, or its manifest file)
/// when it is one; None when it is not.
pub fn read_shipped(path: &Path) -> Option<Result<ShippedImages, Error>> {
    let manifest_path = if path.is_dir() {
        path.join(manifest::MANIFEST)
    } else {
        path.to_path_buf()
    };
    if manifest_path
        .file_name()
        .is_none_or(|n| n != manifest::MANIFEST)
        || !manifest_path.is_file()
    {
        return None;
    }
    let dir = manifest_path.parent()?.to_path_buf();
    Some(manifest::read(&manifest_path).map(|(header, records)| {
        ShippedImages {
            images: records
                .into_iter()
                .map(|r| {
                    let bytes = stored::read(&dir, &r);
                    (r, bytes)
                })
                .collect(),
            manifest: manifest_path,
            header,
        }
    }))
}

/// One line on where a shipped image came from, for people.
pub fn describe(r: &Record) -> String {
    let mut s = format!(
        "`{}` (build `{}`, {}), nvcc {}",
        r.source,
        r.module,
        r.targets.join(", "),
        r.nvcc
    );
    if let Some(h) = &r.host_compiler {
        s.push_str(&format!(", {h}"));
    }
    if let Some(t) = &r.target {
        s.push_str(&format!(", for {t}"));
    }
    s
}
