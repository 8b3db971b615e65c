//! The images one build may use instead of compiling: the package's
//! `cuda-prebuilt/` folder, or, while `cargo cuda prebuild` runs, its staging
//! folder (so a later run of the prebuild reuses what an earlier one made).

use crate::compile::prebuilt::manifest::{self, Header, Record};
use crate::compile::prebuilt::policy::policy;
use crate::compile::prebuilt::staging;
use cuda_toolchain::env::Env;
use cuda_toolchain::metadata::prebuilt::Policy;
use cuda_toolchain::metadata::CudaMetadata;
use cuda_toolchain::toolkit::{FoundVia, Toolkit};
use cuda_toolchain::Error;
use std::path::{Path, PathBuf};

/// A loaded set of shipped images.
#[derive(Debug, Clone)]
pub(crate) struct Shipped {
    /// The folder stored files are relative to.
    pub dir: PathBuf,
    /// The manifest file (a staging folder: the folder itself), for messages.
    pub manifest: PathBuf,
    /// The header (None for a staging folder).
    pub header: Option<Header>,
    pub records: Vec<Record>,
}

impl Shipped {
    /// The package's shipped images; None when it ships none.
    pub(crate) fn load(package_dir: &Path) -> Result<Option<Shipped>, Error> {
        let path = manifest::path_in(package_dir);
        if !path.is_file() {
            return Ok(None);
        }
        let (header, records) = manifest::read(&path)?;
        Ok(Some(Shipped {
            dir: package_dir.join(manifest::DIR),
            manifest: path,
            header: Some(header),
            records,
        }))
    }

    /// What a prebuild has staged so far.
    pub(crate) fn load_staging(dir: &Path) -> Result<Shipped, Error> {
        Ok(Shipped {
            dir: dir.to_path_buf(),
            manifest: dir.to_path_buf(),
            header: None,
            records: staging::read(dir)?,
        })
    }

    /// The toolkit most images were compiled with: what a build without
    /// nvcc plans for, and names in its generated module.
    pub(crate) fn toolkit_version(&self) -> Option<semver::Version> {
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for r in &self.records {
            match counts.iter_mut().find(|(v, _)| *v == r.nvcc) {
                Some((_, n)) => *n += 1,
                None => counts.push((&r.nvcc, 1)),
            }
        }
        counts
            .iter()
            .max_by_key(|(_, n)| *n)
            .and_then(|(v, _)| semver::Version::parse(v).ok())
    }

    /// A stand-in for the toolkit when none is found: it names the nvcc
    /// version most images were compiled with, so jobs are planned and
    /// matched as that nvcc would compile them. It never runs (its nvcc
    /// does not exist): a job the images do not settle fails, naming what
    /// differs.
    pub(crate) fn stand_in_toolkit(&self) -> Toolkit {
        let none = self.dir.join("no-toolkit");
        Toolkit {
            root: none.clone(),
            nvcc: none.join("nvcc"),
            version: self.toolkit_version(),
            found_via: FoundVia::Explicit,
            include_dirs: Vec::new(),
            lib_dirs: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// The arch set the images were prebuilt for (from the header).
    pub(crate) fn declared_arch(&self) -> Option<&str> {
        self.header.as_ref().map(|h| h.arch.as_str())
    }

    /// The manifest and one record's stored file, as a build's inputs (a
    /// changed image then reruns the build and is checked again).
    pub(crate) fn files_of(&self, rec: &Record) -> Vec<PathBuf> {
        let image = self.dir.join(&rec.file);
        match self.header {
            Some(_) => vec![self.manifest.clone(), image],
            None => vec![image],
        }
    }
}

/// The package's shipped images as `Build::plan` sees them: what the build
/// would use (none under the policy `never`, or when the manifest cannot be
/// read; the build itself then says why).
pub(crate) fn for_plan(env: &Env, metadata: &CudaMetadata, package_dir: &Path) -> Option<Shipped> {
    match policy(env, metadata) {
        Ok((Policy::Never, _)) | Err(_) => None,
        Ok(_) => Shipped::load(package_dir).ok().flatten(),
    }
}
