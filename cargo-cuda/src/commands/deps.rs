//! `cargo cuda deps fetch`: header-only dependencies (CUTLASS, index
//! packages, git repositories at a commit) into the store, verified, so
//! builds need no network (CI caches, air-gapped machines).

use std::path::{Path, PathBuf};

use cuda_install::deps::fetch_declared;
use cuda_toolchain::metadata::HeaderSource;
use cuda_toolchain::Error;

use super::Context;
use crate::session::Session;
use crate::store::{offline_env, store_dir};
use crate::style::{Style, Tone};

/// `cargo cuda deps`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: DepsCommand,
}

/// `cargo cuda deps fetch`.
#[derive(Debug, clap::Subcommand)]
pub enum DepsCommand {
    /// Fetch every `[package.metadata.cuda]` header dependency of the workspace (and --cutlass) into the store.
    Fetch(DepsFetchArgs),
}

/// `cargo cuda deps fetch`.
#[derive(Debug, clap::Args)]
pub struct DepsFetchArgs {
    /// Also fetch this CUTLASS version (`4.2`: the newest 4.2.x; `4.2.0` pins), or the release whose headers a full commit has.
    #[arg(long, value_name = "VERSION")]
    pub cutlass: Option<String>,
    /// Also fetch a git header dependency at a full commit: NAME=URL@COMMIT (repeatable).
    #[arg(long, value_name = "NAME=URL@COMMIT")]
    pub git: Vec<String>,
    /// Path to Cargo.toml (default: the workspace around the current directory).
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// The package index (a PEP 503/691 "simple" URL).
    #[arg(long, value_name = "URL")]
    pub index_url: Option<String>,
    /// Use only what is in the store (also CARGO_NET_OFFLINE=true).
    #[arg(long)]
    pub offline: bool,
}

/// Runs `cargo cuda deps ...`; returns the exit code.
pub fn exec(ctx: &Context, args: &Args) -> i32 {
    let err = ctx.err();
    match fetch(ctx.session(), args, &err) {
        Ok(()) => 0,
        Err(e) => {
            errln!("{}", err.cuda_error(&e));
            1
        }
    }
}

fn fetch(session: &Session, args: &Args, err: &Style) -> Result<(), Error> {
    let DepsCommand::Fetch(a) = &args.command;
    let env = &session.env;
    // What the workspace declares (`cutlass = "4.2"` and
    // `[package.metadata.cuda.header-deps]` of its CUDA packages), then the flags.
    let mut wanted: Vec<(String, String, HeaderSource)> = Vec::new();
    if let Some(w) = session.project(a.manifest_path.as_deref()).workspace {
        for p in &w.cuda_packages {
            let dir = p.manifest_path.parent().unwrap_or(Path::new("."));
            for (name, source) in cuda_toolchain::metadata::read(dir)?.header_deps {
                wanted.push((p.name.clone(), name, source));
            }
        }
    }
    if let Some(v) = &a.cutlass {
        // A full commit: the release whose headers are that commit's.
        let version = if cuda_toolchain::metadata::is_full_commit(v.trim()) {
            match cuda_toolchain::cutlass::release_for_commit(v) {
                Some(r) => r.to_string(),
                None => {
                    let repo = cuda_toolchain::cutlass::REPOSITORY;
                    return Err(Error::new(
                        "header-dep-bad-commit",
                        format!("--cutlass {v}: no CUTLASS release on the package index has this commit's headers; it needs the git form"),
                    )
                    .with_help(format!("fetch it with git: `cargo cuda deps fetch --git cutlass={repo}@{v}`")));
                }
            }
        } else {
            v.clone()
        };
        let source = HeaderSource::Index {
            package: "nvidia-cutlass".into(),
            version,
        };
        wanted.push(("--cutlass".into(), "cutlass".into(), source));
    }
    for spec in &a.git {
        let parsed = spec
            .split_once('=')
            .and_then(|(n, rest)| rest.rsplit_once('@').map(|(u, c)| (n, u, c)));
        let Some((name, url, commit)) = parsed else {
            return Err(Error::new(
                "header-dep-bad-commit",
                format!("`--git {spec}` is not NAME=URL@COMMIT"),
            )
            .with_help("e.g. `--git mylib=https://github.com/org/mylib@<full 40-digit commit>`"));
        };
        let source = HeaderSource::Git {
            url: url.into(),
            commit: commit.into(),
        };
        wanted.push(("--git".into(), name.into(), source));
    }
    if wanted.is_empty() {
        errln!("{}", err.status(Tone::Note, "Deps", "nothing to fetch: no package declares `[package.metadata.cuda] cutlass` or `[package.metadata.cuda.header-deps]`, and no --cutlass or --git was given"));
        return Ok(());
    }
    let store = store_dir(env)?;
    let offline = a.offline || offline_env(env);
    let progress = |msg: &str| errln!("{}", err.status(Tone::Note, "Deps", msg));
    let mut done: Vec<(&str, &HeaderSource)> = Vec::new();
    for (who, name, source) in &wanted {
        // Two packages declaring the same dependency: fetched and reported once.
        if done.contains(&(name.as_str(), source)) {
            continue;
        }
        done.push((name, source));
        let (line, dir) = match source {
            HeaderSource::Index { package, .. } => {
                let (dep, fetched) = fetch_declared(
                    env,
                    &store,
                    name,
                    source,
                    a.index_url.as_deref(),
                    offline,
                    &progress,
                )?
                .expect("an index dependency is fetched");
                let what = if fetched { "fetched" } else { "cached" };
                let sha = dep.sha256.get(..12).unwrap_or(&dep.sha256);
                let line = if package == "nvidia-cutlass" {
                    format!("CUTLASS {} for {who}: {what}, sha256 {sha}", dep.version)
                } else {
                    format!(
                        "{name} ({package} {}) for {who}: {what}, sha256 {sha}",
                        dep.version
                    )
                };
                (line, dep.dir)
            }
            HeaderSource::Git { commit, .. } => {
                let (dep, fetched) =
                    fetch_declared(env, &store, name, source, None, offline, &progress)?
                        .expect("a git dependency is fetched");
                let what = if fetched { "fetched" } else { "cached" };
                (format!("{name} at {commit} for {who}: {what}"), dep.dir)
            }
            HeaderSource::Path(dir) => {
                if !dir.is_dir() {
                    return Err(Error::new(
                        "header-dep-missing",
                        format!("header dependency `{name}` of {who}: `{}` is not a directory", dir.display()),
                    )
                    .with_help("fix its `path` under [package.metadata.cuda.header-deps] (for a submodule: run `git submodule update --init`)"));
                }
                (
                    format!("{name} for {who}: local directory, nothing to fetch"),
                    dir.clone(),
                )
            }
        };
        errln!("{}", err.status(Tone::Good, "Deps", &line));
        outln!("{}", dir.display());
    }
    Ok(())
}
