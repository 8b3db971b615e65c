//! Finding cargo and the workspace: which packages use cuda-build or cudarc.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cuda_toolchain::env::Env;
use cuda_toolchain::env::Var;
use cuda_toolchain::Error;

/// The cargo to run: `CARGO` (set by cargo for its subcommands), else `cargo` on PATH.
pub fn find_cargo(env: &Env) -> Result<PathBuf, Error> {
    if let Some(cargo) = env.get_os(Var::Cargo).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(cargo);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(Error::new(
                "cargo-not-found",
                format!("CARGO is set to `{}`, which does not exist", path.display()),
            )
            .with_help("point CARGO at the cargo executable, or unset it to use `cargo` from PATH"))
        };
    }
    if let Some(found) = env.which("cargo") {
        return Ok(found);
    }
    Err(Error::new(
        "cargo-not-found",
        "cargo was not found: CARGO is unset and no `cargo` is on PATH",
    )
    .with_help("install Rust with rustup (https://rustup.rs), or add ~/.cargo/bin to PATH")
    .with_help("or set CARGO to the cargo executable"))
}

/// A workspace package that builds GPU code.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CudaPackage {
    /// Package name.
    pub name: String,
    /// Its Cargo.toml.
    pub manifest_path: PathBuf,
    /// Which of cuda-build / cudarc it depends on.
    pub uses: Vec<String>,
}

/// What `cargo metadata --no-deps` told us.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Workspace {
    /// The workspace root directory.
    pub root: PathBuf,
    /// Every member's name.
    pub members: Vec<String>,
    /// Members that depend (directly, any kind) on cuda-build or cudarc.
    pub cuda_packages: Vec<CudaPackage>,
}

impl Workspace {
    /// Whether a member with this name exists.
    pub fn has_member(&self, name: &str) -> bool {
        self.members.iter().any(|m| m == name)
    }
}

/// Checks a `--manifest-path` before anything runs, so the error names the flag.
pub fn check_manifest_path(path: &Path) -> Result<(), Error> {
    if path.is_file() {
        Ok(())
    } else {
        let what = if path.is_dir() {
            "is a directory"
        } else {
            "does not exist"
        };
        Err(Error::new(
            "manifest-not-found",
            format!("--manifest-path `{}` {what}", path.display()),
        )
        .with_help("pass the path of a package's or workspace's Cargo.toml, e.g. --manifest-path examples/vector-add/Cargo.toml"))
    }
}

/// Runs `cargo metadata --no-deps` (fast: no resolution, no network).
pub fn load(env: &Env, cargo: &Path, manifest_path: Option<&Path>) -> Result<Workspace, Error> {
    if let Some(p) = manifest_path {
        check_manifest_path(p)?;
    }
    let mut cmd = cargo_metadata::MetadataCommand::new();
    cmd.cargo_path(cargo).no_deps();
    if let Some(p) = manifest_path {
        cmd.manifest_path(p);
    }
    let meta = run_metadata(env, &cmd, Duration::from_secs(120))?;
    let packages = meta.workspace_packages();
    let cuda_packages = packages
        .iter()
        .filter_map(|p| {
            let mut uses: Vec<String> = p
                .dependencies
                .iter()
                .filter(|d| d.name == "cuda-build" || d.name == "cudarc")
                .map(|d| d.name.clone())
                .collect();
            uses.sort();
            uses.dedup();
            (!uses.is_empty()).then(|| CudaPackage {
                name: p.name.to_string(),
                manifest_path: p.manifest_path.clone().into(),
                uses,
            })
        })
        .collect();
    Ok(Workspace {
        root: meta.workspace_root.clone().into(),
        members: packages.iter().map(|p| p.name.to_string()).collect(),
        cuda_packages,
    })
}

/// Runs a `cargo metadata` command under a deadline (`CUDA_BUILD_TIMEOUT`
/// overrides `default`) and parses what it prints.
pub fn run_metadata(
    env: &Env,
    cmd: &cargo_metadata::MetadataCommand,
    default: Duration,
) -> Result<cargo_metadata::Metadata, Error> {
    let timeout = cuda_toolchain::process::timeout_from_env(env, default);
    let out =
        cuda_toolchain::process::run_command(&mut cmd.cargo_command(), timeout).map_err(|e| {
            Error::new(
                "cargo-metadata-failed",
                format!("`cargo metadata` could not run: {e}"),
            )
        })?;
    if !out.status.success() {
        return Err(Error::new(
            "cargo-metadata-failed",
            "`cargo metadata` failed; is this a cargo project?",
        )
        .with_detail(out.stderr.trim().to_string())
        .with_help(
            "run from inside a cargo workspace, or pass --manifest-path path/to/Cargo.toml",
        ));
    }
    let stdout = out
        .stdout
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or("");
    cargo_metadata::MetadataCommand::parse(stdout).map_err(|e| {
        Error::new(
            "cargo-metadata-failed",
            format!("`cargo metadata` printed unexpected JSON: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_from_env_must_exist() {
        let env = Env::empty().set(Var::Cargo, "/nonexistent/cargo");
        let e = find_cargo(&env).unwrap_err();
        assert_eq!(e.code, "cargo-not-found");
        assert!(
            e.message.contains("CARGO is set to `/nonexistent/cargo`"),
            "{e}"
        );
    }

    #[test]
    fn cargo_missing_from_path() {
        let dir = tempfile::tempdir().unwrap();
        let env = Env::empty().set(Var::Path, dir.path());
        let e = find_cargo(&env).unwrap_err();
        assert!(e.message.contains("no `cargo` is on PATH"), "{e}");
    }

    #[test]
    fn missing_manifest_names_the_flag() {
        let e = check_manifest_path(Path::new("/nonexistent/Cargo.toml")).unwrap_err();
        assert_eq!(e.code, "manifest-not-found");
        assert!(e
            .message
            .contains("--manifest-path `/nonexistent/Cargo.toml` does not exist"));
    }
}
