//! `cargo cuda deps fetch`: header-only dependencies (CUTLASS) into the
//! store, sha256-verified, so builds need no network (CI caches, air-gapped machines).

use std::path::Path;

use cuda_install::source::{index_url, Index, Source};

use crate::cb::Error;
use crate::cli::{DepsArgs, DepsCommand};
use crate::session::Session;
use crate::style::{Style, Tone};
use crate::toolkit_cmd::{offline_env, store_dir};

/// Runs `cargo cuda deps ...`; returns the exit code.
pub fn run(session: &Session, args: &DepsArgs, err: &Style) -> i32 {
    match fetch(session, args, err) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{}", err.cuda_error(&e));
            1
        }
    }
}

fn fetch(session: &Session, args: &DepsArgs, err: &Style) -> Result<(), Error> {
    let DepsCommand::Fetch(a) = &args.command;
    let env = &session.env;
    // What the workspace declares: `[package.metadata.cuda] cutlass` of its CUDA packages.
    let mut wanted: Vec<(String, String)> = Vec::new();
    if let Some(w) = session.project(a.manifest_path.as_deref()).workspace {
        for p in &w.cuda_packages {
            let dir = p.manifest_path.parent().unwrap_or(Path::new("."));
            if let Some(v) = crate::cb::read_metadata(dir)?.cutlass {
                wanted.push((p.name.clone(), v));
            }
        }
    }
    if let Some(v) = &a.cutlass {
        wanted.push(("--cutlass".into(), v.clone()));
    }
    let store = store_dir(env)?;
    let progress = |msg: &str| eprintln!("{}", err.status(Tone::Note, "Deps", msg));
    // One dependency ready: a status line (`line` gets "fetched" or "cached"),
    // and its directory on stdout for scripts.
    let ready = |fetched: bool, dir: &std::path::Path, line: &dyn Fn(&str) -> String| {
        let what = if fetched { "fetched" } else { "cached" };
        eprintln!("{}", err.status(Tone::Good, "Deps", &line(what)));
        println!("{}", dir.display());
    };
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
        let (dep, fetched) = cuda_install::deps::fetch_git(
            &store,
            name,
            url,
            commit,
            a.offline || offline_env(env),
            &progress,
        )?;
        ready(fetched, &dep.dir, &|what| {
            format!("{name} at {commit}: {what}")
        });
    }
    if wanted.is_empty() && !a.git.is_empty() {
        return Ok(());
    }
    if wanted.is_empty() {
        eprintln!("{}", err.status(Tone::Note, "Deps", "nothing to fetch: no package sets `[package.metadata.cuda] cutlass`, and no --cutlass was given"));
        return Ok(());
    }
    let (url, setting) = index_url(a.index_url.as_deref(), env);
    let make = || -> Result<Box<dyn Source>, Error> {
        let http = cuda_install::http::Http::new(env)?;
        Ok(Box::new(Index::new(&url, setting, http)))
    };
    for (who, version) in wanted {
        let (dep, fetched) = cuda_install::deps::fetch(
            &store,
            &make,
            "nvidia-cutlass",
            &version,
            a.offline || offline_env(env),
            &progress,
        )?;
        ready(fetched, &dep.dir, &|what| {
            format!(
                "CUTLASS {} for {who}: {what}, sha256 {}",
                dep.version,
                &dep.sha256[..12]
            )
        });
    }
    Ok(())
}
