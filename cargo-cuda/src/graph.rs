//! The resolved dependency graph (`cargo metadata` with dependencies), as
//! the packages [`cuda_toolchain::interop::consumers`] judges: which crates
//! of the build look for CUDA on their own.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use cargo_metadata::DependencyKind;
use cuda_toolchain::env::Env;
use cuda_toolchain::interop::consumers::{BuildTarget, Package};
use cuda_toolchain::Error;

/// The cargo options that change the resolved graph or how it is fetched,
/// passed on from a wrapped command line (with their values).
const PASSED_ON: [(&str, bool); 8] = [
    ("--offline", false),
    ("--frozen", false),
    ("--locked", false),
    ("--all-features", false),
    ("--no-default-features", false),
    ("--features", true),
    ("-F", true),
    ("--manifest-path", true),
];

/// `cargo metadata`'s options taken from cargo arguments (`--features X`,
/// `--offline`, `--manifest-path P`), and the `--target` they name.
pub fn metadata_args(cargo_args: &[OsString]) -> (Vec<String>, Option<String>) {
    let mut out = Vec::new();
    let mut target = None;
    let mut it = cargo_args.iter().map(|a| a.to_string_lossy().into_owned());
    while let Some(a) = it.next() {
        if a == "--" {
            break;
        }
        if let Some(t) = a.strip_prefix("--target=") {
            target = Some(t.to_string());
            continue;
        }
        if a == "--target" {
            target = it.next();
            continue;
        }
        for (name, takes_value) in PASSED_ON {
            if a == name {
                out.push(a.clone());
                if takes_value {
                    out.extend(it.next());
                }
            } else if takes_value && a.starts_with(&format!("{name}=")) {
                out.push(a.clone());
            }
        }
    }
    (out, target)
}

/// The build target: `--target` from the command line, else this machine.
pub fn build_target(target: Option<String>) -> BuildTarget {
    let host = cuda_toolchain::env::native_triple();
    BuildTarget {
        triple: target.unwrap_or_else(|| host.clone()),
        host,
    }
}

/// Whether the workspace's lock file names a package that finds CUDA on
/// its own besides cuda-build (whose build scripts agree by construction):
/// cudarc, NVIDIA's crates, the `cmake` crate. `Some(false)` lets a build
/// skip resolving the graph; `None` when there is no lock file yet.
pub fn lock_names_consumers(workspace_root: &Path) -> Option<bool> {
    let text = std::fs::read_to_string(workspace_root.join("Cargo.lock")).ok()?;
    Some(
        ["cudarc", "cuda-bindings", "cuda-core", "cmake"]
            .iter()
            .any(|n| text.contains(&format!("name = \"{n}\""))),
    )
}

/// Every package of the resolved graph (cargo resolves and, unless told
/// `--offline`, fetches what the lock file lacks: what the build would do).
pub fn packages(
    env: &Env,
    cargo: &Path,
    args: &[String],
    target: Option<&str>,
) -> Result<Vec<Package>, Error> {
    let mut cmd = cargo_metadata::MetadataCommand::new();
    cmd.cargo_path(cargo);
    let mut other = args.to_vec();
    if let Some(t) = target {
        other.push("--filter-platform".into());
        other.push(t.into());
    }
    cmd.other_options(other);
    let meta = crate::workspace::run_metadata(env, &cmd, Duration::from_secs(300))?;
    let Some(resolve) = &meta.resolve else {
        return Ok(Vec::new());
    };
    let name_of = |id: &cargo_metadata::PackageId| {
        meta.packages
            .iter()
            .find(|p| &p.id == id)
            .map(|p| p.name.to_string())
    };
    let mut out = Vec::new();
    for node in &resolve.nodes {
        let Some(p) = meta.packages.iter().find(|p| p.id == node.id) else {
            continue;
        };
        let mut deps = Vec::new();
        let mut build_deps = Vec::new();
        for d in &node.deps {
            let Some(name) = name_of(&d.pkg) else {
                continue;
            };
            for k in &d.dep_kinds {
                match k.kind {
                    DependencyKind::Build => build_deps.push(name.clone()),
                    DependencyKind::Normal => deps.push(name.clone()),
                    _ => {}
                }
            }
        }
        deps.dedup();
        build_deps.dedup();
        out.push(Package {
            name: p.name.to_string(),
            version: p.version.to_string(),
            repository: p.repository.clone(),
            features: node.features.iter().map(|f| f.to_string()).collect(),
            dependencies: deps,
            build_dependencies: build_deps,
            manifest_dir: p
                .manifest_path
                .parent()
                .map(|d| d.as_std_path().to_path_buf())
                .unwrap_or_default(),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name).then(a.version.cmp(&b.version)));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn graph_options_are_passed_on_and_the_target_taken() {
        let (opts, target) = metadata_args(&args(&[
            "--release",
            "--features",
            "a,b",
            "--target",
            "aarch64-unknown-linux-gnu",
            "--offline",
            "-p",
            "x",
            "--manifest-path=k/Cargo.toml",
            "--",
            "--locked",
        ]));
        assert_eq!(
            opts,
            [
                "--features",
                "a,b",
                "--offline",
                "--manifest-path=k/Cargo.toml"
            ]
        );
        assert_eq!(target.as_deref(), Some("aarch64-unknown-linux-gnu"));
        let (_, target) = metadata_args(&args(&["--target=x86_64-pc-windows-msvc"]));
        assert_eq!(target.as_deref(), Some("x86_64-pc-windows-msvc"));
    }
}
