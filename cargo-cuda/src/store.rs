//! The per-user toolkit store, as commands use it: where it is, whether
//! cargo's offline mode is on, and installing a toolkit into it (engine:
//! crate `cuda-install`), for `cargo cuda toolkit install`, `deps fetch`
//! and `build --install`.

use std::path::PathBuf;

use cuda_install::source::{index_url, Index, Source};
use cuda_install::{Request, Spec};
use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::toolkit::store;
use cuda_toolchain::Error;

use crate::session::{Overrides, ProjectWants, Session};
use crate::style::{Style, Tone};

/// The store, or an error naming the variables that set it.
pub fn store_dir(env: &Env) -> Result<PathBuf, Error> {
    store::root(env).ok_or_else(|| {
        Error::new(
            "toolkit-store-unknown",
            "no toolkit store: CARGO_CUDA_HOME, XDG_DATA_HOME and HOME are all unset",
        )
        .with_help("set CARGO_CUDA_HOME to the directory that should hold installed toolkits")
    })
}

/// Whether cargo's offline mode is on (`CARGO_NET_OFFLINE=true`).
pub fn offline_env(env: &Env) -> bool {
    env.flag(Var::CargoNetOffline)
}

/// Installs `req`, printing progress to stderr; used by `toolkit install` and `build --install`.
pub fn install(
    env: &Env,
    req: &Request,
    index: Option<&str>,
    offline: bool,
    err: &Style,
) -> Result<cuda_install::Outcome, Error> {
    let store = store_dir(env)?;
    let (url, setting) = index_url(index, env);
    let make = || -> Result<Box<dyn Source>, Error> {
        let http = cuda_install::http::Http::new(env)?;
        Ok(Box::new(Index::new(&url, setting, http)))
    };
    let progress = |msg: &str| errln!("{}", err.status(Tone::Note, "Toolkit", msg));
    cuda_install::install(&store, &make, req, offline || offline_env(env), &progress)
}

/// The install spec for a project requirement (`^13.0` → `13.0`).
fn spec_for(req: &semver::VersionReq) -> Option<Spec> {
    let c = req.comparators.first()?;
    let mut parts = vec![c.major];
    parts.extend(c.minor);
    parts.extend(c.patch.filter(|_| c.minor.is_some()));
    Some(Spec::Prefix(parts))
}

/// Puts the exact install command first in a "no toolkit" or "pin not met" error.
pub fn with_install_hint(mut e: Error, wants: &ProjectWants) -> Error {
    if !matches!(e.code, "toolkit-requirement" | "nvcc-not-found") {
        return e;
    }
    let version = wants
        .requirement
        .as_ref()
        .and_then(spec_for)
        .map_or("13.0".to_string(), |s| s.to_string());
    e.help.insert(
        0,
        format!("install it: `cargo cuda toolkit install {version}`, or build with `cargo cuda build --install`"),
    );
    e
}

/// For `cargo cuda build --install`: installs the project's pinned toolkit
/// when no installed or discovered toolkit satisfies it.
pub fn install_pinned(session: &Session, wants: &ProjectWants, err: &Style) -> Result<(), Error> {
    let Some(req) = &wants.requirement else {
        return Ok(());
    };
    if let Ok(d) = session.discover(&Overrides::default(), wants) {
        if d.selected.is_some() {
            return Ok(());
        }
    }
    let Some(spec) = spec_for(req) else {
        return Ok(());
    };
    let o = install(
        &session.env,
        &Request::Release {
            spec,
            with: Vec::new(),
        },
        None,
        false,
        err,
    )?;
    errln!(
        "{}",
        err.status(
            Tone::Good,
            "Toolkit",
            &format!(
                "installed {} for the project's `toolkit = \"{req}\"`",
                o.installed.name
            )
        )
    );
    Ok(())
}
