//! Header-only dependencies (CUTLASS/CuTe and others) for [`Build`](crate::compile::Build):
//! where their headers are, and what they require of the build.
//!
//! A git or index dependency is read from the store (`cargo cuda deps fetch`
//! puts it there, sha256-verified). A missing one is fetched into the store
//! by the build itself when cuda-build's `fetch` feature is on and cargo is
//! not offline (`CARGO_NET_OFFLINE`), so a plain `cargo build` of a crate
//! that declares CUTLASS works for a user who never ran `cargo cuda`;
//! otherwise it is an error naming that command. docs.rs never fetches.

use std::path::PathBuf;

use cuda_toolchain::env::Env;
use cuda_toolchain::toolkit::store;
use cuda_toolchain::Error;

pub use cuda_toolchain::metadata::HeaderSource;

/// A dependency resolved to include directories.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub name: String,
    /// The exact version, or the path for a local one (part of the cache key).
    pub version: String,
    pub includes: Vec<PathBuf>,
    /// Set when this build fetched it into the store (feature `fetch`): the note to print.
    pub fetched: Option<String>,
}

impl Resolved {
    /// `CUDA_BUILD_DEP_<NAME>`: the macro nvcc gets and the variable the
    /// crate reads (`env!`), both holding the version.
    pub(crate) fn env_name(&self) -> String {
        format!(
            "CUDA_BUILD_DEP_{}",
            self.name
                .to_ascii_uppercase()
                .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
        )
    }
}

/// What a dependency needs of the build (CUTLASS 3.x/4.x: C++17 and sm_80+).
#[derive(Debug, Clone)]
pub(crate) struct Needs {
    pub who: String,
    pub min_std: u32,
    pub min_cc: (u32, u32),
    /// Applied from `[package.metadata.cuda]` to a build that declared no
    /// header dependency itself: a mismatch is a warning, since the package
    /// may also compile older-arch kernels that never include it.
    pub advisory: bool,
}

impl Needs {
    /// The requirement, as an error or (advisory) a warning line.
    pub(crate) fn verdict(&self, e: Error) -> Result<Option<String>, Error> {
        if !self.advisory {
            return Err(e);
        }
        Ok(Some(format!(
            "cuda-build: warning[{}]: {}; {} is declared in [package.metadata.cuda], so this build goes on (call .cutlass()/.header_deps_from_metadata() on the builds that include it to make this an error)",
            e.code, e.message, self.who
        )))
    }
}

/// What a dependency requires of the build: CUTLASS from `nvidia-cutlass`
/// needs C++17 and sm_80+; others nothing known.
pub(crate) fn needs_of(source: &HeaderSource, advisory: bool) -> Option<Needs> {
    match source {
        HeaderSource::Index { package, version } if package == "nvidia-cutlass" => Some(Needs {
            advisory,
            ..cutlass_needs(version)
        }),
        HeaderSource::Git { url, commit } if cuda_toolchain::cutlass::is_repository(url) => {
            Some(Needs {
                advisory,
                ..cutlass_needs(&format!("at {}", &commit[..commit.len().min(12)]))
            })
        }
        _ => None,
    }
}

/// The error for a CUTLASS commit whose headers are no release on the index
/// (`Build::cutlass_commit`): it needs the git form.
pub(crate) fn unknown_cutlass_commit(commit: &str) -> Error {
    use cuda_toolchain::cutlass::{INDEX_RELEASES, REPOSITORY};
    let (what, help) = if cuda_toolchain::metadata::is_full_commit(commit) {
        (
            format!("no CUTLASS release on the package index has the headers of commit {commit} (the index has nvidia-cutlass {}); this commit needs the git form", INDEX_RELEASES.join(", ")),
            format!("fetch it with `cargo cuda deps fetch --git cutlass={REPOSITORY}@{commit}` and use `.header_dep(\"cutlass\", HeaderSource::Git {{ url: \"{REPOSITORY}\".into(), commit: \"{commit}\".into() }})`, or `cutlass = {{ git = \"{REPOSITORY}\", commit = \"{commit}\" }}` under [package.metadata.cuda]; or pin a release: `.cutlass(\"3.5.0\")`"),
        )
    } else {
        (
            format!("Build::cutlass_commit(\"{}\"): not a full commit hash", commit.escape_debug()),
            "pass the full 40-digit hash (`git rev-parse <ref>` prints it): a short hash can become ambiguous".to_string(),
        )
    };
    Error::new("header-dep-bad-commit", what).with_help(help)
}

/// The package's declared dependencies, resolved for a build that declares
/// none itself, each with its requirements made advisory (see
/// [`Needs::advisory`]). docs.rs has no store, and its empty module needs no
/// headers: there a dependency that does not resolve is left out.
pub(crate) fn resolve_declared(
    env: &Env,
    declared: &[(String, HeaderSource)],
) -> Result<Vec<(Resolved, Option<Needs>)>, Error> {
    let mut deps = Vec::new();
    for (name, source) in declared {
        match resolve(env, name, source) {
            Ok(dep) => deps.push((dep, needs_of(source, true))),
            Err(_) if env.get_os(cuda_toolchain::env::Var::DocsRs).is_some() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(deps)
}

/// Resolves one dependency against the store (no network).
pub(crate) fn resolve(env: &Env, name: &str, source: &HeaderSource) -> Result<Resolved, Error> {
    match source {
        HeaderSource::Path(dir) => {
            if !dir.is_dir() {
                return Err(Error::new(
                    "header-dep-missing",
                    format!("header dependency `{name}`: `{}` is not a directory", dir.display()),
                )
                .with_help("pass the directory that holds the headers (for a submodule: run `git submodule update --init`)"));
            }
            Ok(Resolved {
                name: name.into(),
                version: dir.display().to_string(),
                includes: vec![dir.clone()],
                fetched: None,
            })
        }
        HeaderSource::Git { url, commit } => {
            if !cuda_toolchain::metadata::is_full_commit(commit) {
                return Err(Error::new(
                    "header-dep-bad-commit",
                    format!("header dependency `{name}`: `{commit}` is not a full commit hash"),
                )
                .with_help("pin the full 40-digit hash (`git rev-parse <ref>` prints it): a short hash can become ambiguous, and a branch or tag can move"));
            }
            let found = store::root(env).and_then(|r| store::find_git_dep(&r, name, commit));
            let (dep, fetched) = match found {
                Some(dep) => (dep, None),
                None => fetch_missing(env, name, source, Error::new(
                    "header-dep-missing",
                    format!("header dependency `{name}` ({url} at {commit}) is not in the store"),
                )
                .with_help(format!("run `cargo cuda deps fetch` (it fetches every `[package.metadata.cuda.header-deps]` entry of the workspace), or `cargo cuda deps fetch --git {name}={url}@{commit}`")))?,
            };
            Ok(Resolved {
                name: name.into(),
                version: dep.version.clone(),
                includes: dep.include_paths(),
                fetched,
            })
        }
        HeaderSource::Index { package, version } => {
            let fetch = if package == "nvidia-cutlass" {
                format!("run `cargo cuda deps fetch` (it fetches every `[package.metadata.cuda]` dependency of the workspace), or `cargo cuda deps fetch --cutlass {version}`")
            } else {
                format!("declare it as `{name} = {{ index = \"{package}\", version = \"{version}\" }}` under [package.metadata.cuda.header-deps] and run `cargo cuda deps fetch`")
            };
            let Some(root) = store::root(env) else {
                return Err(Error::new(
                    "header-dep-missing",
                    format!("header dependency `{name}` ({package} {version}): no store (CARGO_CUDA_HOME, XDG_DATA_HOME and HOME are unset)"),
                )
                .with_help("set CARGO_CUDA_HOME to the store that `cargo cuda deps fetch` fills"));
            };
            let (dep, fetched) = match store::find_header_dep(&root, package, version) {
                Some(dep) => (dep, None),
                None => fetch_missing(
                    env,
                    name,
                    source,
                    Error::new(
                        "header-dep-missing",
                        format!(
                        "header dependency `{name}` ({package} {version}) is not in the store `{}`{}",
                        store::deps_dir(&root).display(),
                        request_note(package, version),
                    ),
                    )
                    .with_help(fetch),
                )?,
            };
            Ok(Resolved {
                name: name.into(),
                version: dep.version.clone(),
                includes: dep.include_paths(),
                fetched,
            })
        }
    }
}

/// How a CUTLASS version request is read (`"3.5"`: the newest 3.5.x;
/// `"3.5.0"` pins), as a clause for messages; empty for other packages and
/// full versions.
pub(crate) fn request_note(package: &str, version: &str) -> String {
    if package != cuda_toolchain::cutlass::INDEX_PACKAGE {
        return String::new();
    }
    cuda_toolchain::cutlass::request_meaning(version)
        .map(|m| format!(" ({m})"))
        .unwrap_or_default()
}

/// The store lacks a git or index dependency. With the `fetch` feature, and
/// unless cargo is offline (`CARGO_NET_OFFLINE`; cargo does not tell build
/// scripts about `--offline`) or this is docs.rs (no network), it is fetched
/// into the store by cuda-install, the code `cargo cuda deps fetch` runs:
/// sha256-verified against the index, or checked out at its commit, and
/// unpacked atomically. Otherwise `missing`, saying how to get it.
fn fetch_missing(
    env: &Env,
    name: &str,
    source: &HeaderSource,
    missing: Error,
) -> Result<(store::HeaderDep, Option<String>), Error> {
    let offline = env.flag(cuda_toolchain::env::Var::CargoNetOffline);
    let docs_rs = env.get_os(cuda_toolchain::env::Var::DocsRs).is_some();
    #[cfg(feature = "fetch")]
    if !offline && !docs_rs {
        if let Some(root) = store::root(env) {
            let fetched =
                cuda_install::deps::fetch_declared(env, &root, name, source, None, false, &|_| {})
                    .map_err(|e| {
                        e.with_help(format!("cuda-build fetches `{name}` because the store lacks it and cuda-build's `fetch` feature is on; `cargo cuda deps fetch` with network (or on another machine, then copy the store) fetches it too"))
                    })?;
            if let Some((dep, _)) = fetched {
                let note = format!(
                    "fetched header dependency `{name}` {} into the store `{}`",
                    dep.version,
                    store::deps_dir(&root).display()
                );
                return Ok((dep, Some(note)));
            }
        }
    }
    let _ = (name, source, docs_rs);
    Err(if offline {
        Error::new(
            missing.code,
            format!(
                "{}, and the build is offline (CARGO_NET_OFFLINE)",
                missing.message
            ),
        )
        .with_help("run `cargo cuda deps fetch` once with network, then build offline")
    } else if cfg!(feature = "fetch") {
        missing
    } else {
        missing.with_help("or turn on cuda-build's `fetch` feature in [build-dependencies] (`cuda-build = { version = \"0.1\", features = [\"fetch\"] }`) so a plain `cargo build` fetches it into the store")
    })
}

/// What CUTLASS 3.x/4.x needs: C++17 and sm_80+ for most of its paths.
pub(crate) fn cutlass_needs(version: &str) -> Needs {
    Needs {
        who: format!("CUTLASS {version}"),
        min_std: 17,
        min_cc: (8, 0),
        advisory: false,
    }
}

/// The header dependencies `[package.metadata.cuda]` of the package at
/// `manifest_dir` declares (`cutlass = "4.2"` and `[package.metadata.cuda.header-deps]`).
pub(crate) fn declared(
    manifest_dir: &std::path::Path,
) -> Result<Vec<(String, HeaderSource)>, Error> {
    Ok(crate::compile::settings::package::metadata(manifest_dir)?.header_deps)
}

/// The C++ standard number of `17`, `c++17`, `gnu++20`.
pub(crate) fn std_number(std: &str) -> Option<u32> {
    std.trim_start_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .ok()
}

/// The error for a C++ standard below what a dependency needs.
pub(crate) fn std_error(needs: &Needs, std: &str) -> Error {
    Error::new(
        "header-dep-requirement",
        format!(
            "{} needs C++{} or newer, but the build sets `std(\"{std}\")`",
            needs.who, needs.min_std
        ),
    )
    .with_help(format!(
        "use `.std(\"c++{}\")` (the default when std is not set)",
        needs.min_std
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuda_toolchain::env::Var;

    #[test]
    fn a_missing_cutlass_says_how_its_version_reads() {
        let tmp = tempfile::tempdir().unwrap();
        let env = Env::empty()
            .set(Var::CargoCudaHome, tmp.path().to_str().unwrap())
            .set(Var::CargoNetOffline, "true");
        let missing = |version: &str| {
            let source = HeaderSource::Index {
                package: "nvidia-cutlass".into(),
                version: version.into(),
            };
            resolve(&env, "cutlass", &source).unwrap_err()
        };
        let e = missing("3.5");
        assert_eq!(e.code, "header-dep-missing");
        assert!(
            e.message.contains("(\"3.5\" means the newest 3.5.x release, 3.5.1.0 on the index (write \"3.5.0\" to pin 3.5.0))"),
            "{e}"
        );
        let e = missing("3.5.0");
        assert!(e.message.contains("(\"3.5.0\" pins release 3.5.0)"), "{e}");
        let e = missing("3.5.0.0");
        assert!(!e.message.contains("pins"), "{e}");
    }
}
