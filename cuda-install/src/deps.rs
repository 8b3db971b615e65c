//! Header-only dependencies from the index (CUTLASS and CuTe from the
//! `nvidia-cutlass` wheel): fetched once into the store, sha256-verified,
//! unpacked atomically; cuda-build only reads them (no network at build time).

use std::fs;
use std::path::{Path, PathBuf};

use cuda_toolchain::env::Env;
use cuda_toolchain::metadata::HeaderSource;
use cuda_toolchain::toolkit::store::{self, HeaderDep};
use cuda_toolchain::Error;

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

/// One declared header dependency into the store at `store_dir`: an index
/// package from `index_url` (else the index the environment names), or a git
/// repository at its commit. What `cargo cuda deps fetch` does for each entry,
/// and what cuda-build's `fetch` feature does from a build script when the
/// store lacks one. `None` for a local directory (nothing to fetch); the
/// bool says whether anything was downloaded.
pub fn fetch_declared(
    env: &Env,
    store_dir: &Path,
    name: &str,
    source: &HeaderSource,
    index_url: Option<&str>,
    offline: bool,
    progress: &dyn Fn(&str),
) -> Result<Option<(HeaderDep, bool)>, Error> {
    match source {
        HeaderSource::Index { package, version } => {
            let (url, setting) = crate::source::index_url(index_url, env);
            let make = || -> Result<Box<dyn Source>, Error> {
                let http = crate::http::Http::new(env)?;
                Ok(Box::new(crate::source::Index::new(&url, setting, http)))
            };
            fetch(store_dir, &make, package, version, offline, progress).map(Some)
        }
        HeaderSource::Git { url, commit } => {
            fetch_git(store_dir, name, url, commit, offline, progress).map(Some)
        }
        HeaderSource::Path(_) => Ok(None),
    }
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
    let stage = new_stage(store_dir, package)?;
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
    publish(
        store_dir,
        stage,
        &mut dep,
        deps.join(package).join(&a.version),
    )?;
    Ok((dep, true))
}

/// A fresh staging directory in the store's `deps/.tmp`: on the same file
/// system as every destination, so [`publish`] is one rename.
fn new_stage(store_dir: &Path, prefix: &str) -> Result<tempfile::TempDir, Error> {
    let staging = store::deps_dir(store_dir).join(".tmp");
    fs::create_dir_all(&staging).map_err(|e| store_error(store_dir, "create", &staging, &e))?;
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(&staging)
        .map_err(|e| store_error(store_dir, "create a staging directory in", &staging, &e))
}

/// Writes `dep.json` into the staged dependency and moves it to `dest` in
/// one rename, so a reader sees all of it or nothing; `dep.dir` becomes `dest`.
fn publish(
    store_dir: &Path,
    stage: tempfile::TempDir,
    dep: &mut HeaderDep,
    dest: PathBuf,
) -> Result<(), Error> {
    let json = serde_json::to_string_pretty(&*dep).unwrap_or_default();
    fs::write(stage.path().join("dep.json"), json)
        .map_err(|e| store_error(store_dir, "write dep.json in", stage.path(), &e))?;
    if let Some(parent) = dest.parent() {
        fs::create_dir_all(parent).map_err(|e| store_error(store_dir, "create", parent, &e))?;
    }
    let staged = stage.keep();
    if let Err(e) = fs::rename(&staged, &dest) {
        let _ = fs::remove_dir_all(&staged);
        if !dest.join("dep.json").is_file() {
            return Err(store_error(store_dir, "move the dependency to", &dest, &e));
        }
        // Another fetch finished first: its copy is as good as ours.
    }
    dep.dir = dest;
    Ok(())
}

pub use cuda_toolchain::metadata::is_full_commit;

fn git(args: &[&str], dir: Option<&Path>) -> Result<String, String> {
    let mut cmd = std::process::Command::new("git");
    if let Some(d) = dir {
        cmd.arg("-C").arg(d);
    }
    cmd.args(args).env("GIT_TERMINAL_PROMPT", "0");
    match cuda_toolchain::process::run_command(&mut cmd, std::time::Duration::from_secs(600)) {
        Ok(out) if out.status.success() => Ok(out.stdout.trim().to_string()),
        Ok(out) => Err(out.combined().trim().to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// Fetches `url` at exactly `commit` with the git CLI into
/// `<store>/deps/git/<name>/<commit>/` (never into OUT_DIR), verified by
/// commit; a no-op when it is already there.
pub fn fetch_git(
    store_dir: &Path,
    name: &str,
    url: &str,
    commit: &str,
    offline: bool,
    progress: &dyn Fn(&str),
) -> Result<(HeaderDep, bool), Error> {
    if !is_full_commit(commit) {
        return Err(Error::new(
            "header-dep-bad-commit",
            format!("header dependency `{name}`: `{commit}` is not a full commit hash"),
        )
        .with_help("pin the full 40-digit hash (`git rev-parse <ref>` prints it): a short hash can become ambiguous, and a branch or tag can move"));
    }
    if let Some(dep) = store::find_git_dep(store_dir, name, commit) {
        return Ok((dep, false));
    }
    if offline {
        return Err(Error::new(
            "header-dep-missing",
            format!("header dependency `{name}` ({url} at {commit}) is not in the store `{}`, and the network is off", store_dir.display()),
        )
        .with_help(format!("run `cargo cuda deps fetch --git {name}={url}@{commit}` once with network")));
    }
    let stage = new_stage(store_dir, &format!("git-{name}-"))?;
    let dir = stage.path();
    progress(&format!("fetching {url} at {commit}"));
    let fail = |what: String| {
        Error::new(
            "header-dep-bad-commit",
            format!("header dependency `{name}`: could not fetch commit {commit} from `{url}`"),
        )
        .with_detail(what)
        .with_help("check that the commit is in that repository (pushed, not only local) and that the URL is right; nothing was stored")
    };
    git(&["init", "-q"], Some(dir)).map_err(fail)?;
    git(&["fetch", "-q", "--depth", "1", url, commit], Some(dir)).map_err(fail)?;
    git(&["checkout", "-q", "--detach", "FETCH_HEAD"], Some(dir)).map_err(fail)?;
    let head = git(&["rev-parse", "HEAD"], Some(dir)).map_err(fail)?;
    if !head.eq_ignore_ascii_case(commit) {
        return Err(fail(format!("the fetched HEAD is {head}")));
    }
    let _ = fs::remove_dir_all(dir.join(".git"));
    let include = if dir.join("include").is_dir() {
        "include"
    } else {
        "."
    };
    let mut include_dirs = vec![include.to_string()];
    // CUTLASS's layout: cutlass/util lives in tools/util/include (as in its wheel).
    if dir.join("include/cutlass").is_dir() && dir.join("tools/util/include").is_dir() {
        include_dirs.push("tools/util/include".into());
    }
    let mut dep = HeaderDep {
        package: format!("git:{url}"),
        version: commit.to_ascii_lowercase(),
        sha256: String::new(),
        include_dirs,
        dir: Default::default(),
    };
    publish(
        store_dir,
        stage,
        &mut dep,
        store::git_dep_dir(store_dir, name, commit),
    )?;
    Ok((dep, true))
}
