//! Header-only dependencies from the index (CUTLASS and CuTe from the
//! `nvidia-cutlass` wheel): fetched once into the store, sha256-verified,
//! unpacked atomically; cuda-build only reads them (no network at build time).

use std::fs;
use std::path::Path;

use cuda_build::toolkit::store::{self, HeaderDep};
use cuda_build::Error;

use crate::install::store_error;
use crate::source::Source;
use crate::unpack::{self, Layout};

/// The include directories of a known package's wheel, else every `include` dir found.
fn include_dirs(package: &str, root: &Path) -> Vec<String> {
    if package == "nvidia-cutlass" {
        // cutlass/ and cute/ live in the first; cutlass/util in the second.
        return vec![
            "cutlass_library/source/include".into(),
            "cutlass_library/source/tools/util/include".into(),
        ];
    }
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n == "include") {
                    if let Ok(rel) = p.strip_prefix(root) {
                        found.push(rel.to_string_lossy().into_owned());
                    }
                } else {
                    stack.push(p);
                }
            }
        }
    }
    found.sort();
    found
}

/// Fetches `package` at the newest version matching `requested` (`4.2` → 4.2.0.0)
/// into the store; a no-op (no network) when it is already there.
pub fn fetch(
    store_dir: &Path,
    source: &dyn Fn() -> Result<Box<dyn Source>, Error>,
    package: &str,
    requested: &str,
    offline: bool,
    progress: &dyn Fn(&str),
) -> Result<(HeaderDep, bool), Error> {
    if let Some(dep) = store::find_header_dep(store_dir, package, requested) {
        return Ok((dep, false));
    }
    if offline {
        return Err(Error::new(
            "header-dep-missing",
            format!(
                "{package} {requested} is not in the store `{}`, and the network is off",
                store_dir.display()
            ),
        )
        .with_help("run `cargo cuda deps fetch` once with network"));
    }
    let source = source()?;
    let files = source.files(package)?;
    let pick = files
        .iter()
        .filter(|a| !a.version.chars().any(|c| c.is_ascii_alphabetic()))
        .filter(|a| store::version_matches(requested, &a.version))
        .max_by_key(|a| {
            a.version
                .split('.')
                .map(|p| p.parse::<u64>().unwrap_or(0))
                .collect::<Vec<_>>()
        })
        .cloned();
    let Some(a) = pick else {
        let mut have: Vec<&str> = files.iter().map(|a| a.version.as_str()).collect();
        have.dedup();
        return Err(Error::new(
            "install-unknown-version",
            format!(
                "the index `{}` has no {package} matching `{requested}`",
                source.name()
            ),
        )
        .with_help(if have.is_empty() {
            format!("the index has no wheel of {package}")
        } else {
            format!("versions there: {}", have.join(", "))
        }));
    };
    let wheel = crate::install::fetch_verified(store_dir, source.as_ref(), &a, progress)?.0;
    let deps = store::deps_dir(store_dir);
    let staging = deps.join(".tmp");
    fs::create_dir_all(&staging).map_err(|e| store_error(store_dir, "create", &staging, &e))?;
    let stage = tempfile::Builder::new()
        .prefix(package)
        .tempdir_in(&staging)
        .map_err(|e| store_error(store_dir, "create a staging directory in", &staging, &e))?;
    unpack::unpack(&wheel, stage.path(), Layout::Wheel).map_err(|e| {
        if e.kind() == std::io::ErrorKind::InvalidData {
            let _ = fs::remove_file(&wheel);
            Error::new("install-bad-wheel", format!("`{}` is not a usable wheel: {e}", wheel.display()))
                .with_help("the index serves a broken file: use another index (--index-url); nothing was stored")
        } else {
            store_error(store_dir, "unpack into", stage.path(), &e)
        }
    })?;
    let mut dep = HeaderDep {
        package: package.to_string(),
        version: a.version.clone(),
        sha256: a.sha256.clone(),
        include_dirs: include_dirs(package, stage.path()),
        dir: Default::default(),
    };
    let missing: Vec<&String> = dep
        .include_dirs
        .iter()
        .filter(|d| !stage.path().join(d).is_dir())
        .collect();
    if dep.include_dirs.is_empty() || !missing.is_empty() {
        return Err(Error::new(
            "install-bad-wheel",
            format!(
                "{package} {} has no include directory ({missing:?} missing)",
                a.version
            ),
        )
        .with_help("this is not a header package; nothing was stored"));
    }
    let json = serde_json::to_string_pretty(&dep).unwrap_or_default();
    fs::write(stage.path().join("dep.json"), json)
        .map_err(|e| store_error(store_dir, "write dep.json in", stage.path(), &e))?;
    let dest = deps.join(package).join(&a.version);
    fs::create_dir_all(deps.join(package))
        .map_err(|e| store_error(store_dir, "create", &dest, &e))?;
    let staged = stage.keep();
    if let Err(e) = fs::rename(&staged, &dest) {
        let _ = fs::remove_dir_all(&staged);
        if !dest.join("dep.json").is_file() {
            return Err(store_error(store_dir, "move the dependency to", &dest, &e));
        }
        // Another fetch finished first: its copy is as good as ours.
    }
    dep.dir = dest;
    Ok((dep, true))
}
