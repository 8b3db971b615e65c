//! `cargo cuda toolkit install | list | remove | which`: the per-user store
//! of verified CUDA compilers (engine: crate `cuda-install`).

use std::path::PathBuf;

use cuda_install::source::{index_url, Index, Source};
use cuda_install::{Request, Spec};
use cuda_toolchain::toolkit::store;

use crate::cli::{ToolkitArgs, ToolkitCommand};
use crate::session::{Overrides, ProjectWants, Session};
use crate::style::{Style, Tone};
use cuda_toolchain::env::Env;
use cuda_toolchain::env::Var;
use cuda_toolchain::Error;

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
    env.get_nonempty(Var::CargoNetOffline)
        .is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
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
    let progress = |msg: &str| eprintln!("{}", err.status(Tone::Note, "Toolkit", msg));
    cuda_install::install(&store, &make, req, offline || offline_env(env), &progress)
}

fn parse_pins(pins: &[String]) -> Result<Vec<(String, String)>, Error> {
    pins.iter()
        .map(|p| {
            p.split_once("==")
                .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
                .filter(|(n, v)| !n.is_empty() && !v.is_empty())
                .ok_or_else(|| {
                    Error::new(
                        "install-bad-version",
                        format!("`{p}` is not a pinned package"),
                    )
                    .with_help("with --unchecked, name every wheel as NAME==VERSION, e.g. nvidia-cuda-nvcc-cu12==12.9.86")
                })
        })
        .collect()
}

/// Runs `cargo cuda toolkit ...`; returns the exit code.
pub fn run(session: &Session, args: &ToolkitArgs, out: &Style, err: &Style) -> i32 {
    match dispatch(session, args, out, err) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{}", err.cuda_error(&e));
            1
        }
    }
}

fn dispatch(session: &Session, args: &ToolkitArgs, out: &Style, err: &Style) -> Result<i32, Error> {
    let env = &session.env;
    match &args.command {
        ToolkitCommand::Install(a) => {
            let req = if a.unchecked {
                let name = a.name.clone().ok_or_else(|| {
                    Error::new("install-bad-name", "--unchecked needs --name NAME (the store entry to create)")
                        .with_help("e.g. `cargo cuda toolkit install --unchecked --name cu12 nvidia-cuda-nvcc-cu12==12.9.86`")
                })?;
                Request::Unchecked {
                    name,
                    pins: parse_pins(&a.versions)?,
                }
            } else {
                let [version] = a.versions.as_slice() else {
                    return Err(Error::new(
                        "install-bad-version",
                        format!("expected one VERSION, got {}", a.versions.len()),
                    )
                    .with_help("e.g. `cargo cuda toolkit install 13.0`; to install named wheels as they are, add --unchecked --name NAME"));
                };
                let with: Vec<String> = a
                    .with
                    .iter()
                    .flat_map(|w| w.split(','))
                    .map(|w| w.trim().to_string())
                    .filter(|w| !w.is_empty())
                    .collect();
                Request::Release {
                    spec: Spec::parse(version)?,
                    with,
                }
            };
            let started = std::time::Instant::now();
            let o = install(env, &req, a.index_url.as_deref(), a.offline, err)?;
            let home = o
                .installed
                .cuda_home
                .clone()
                .unwrap_or(o.installed.dir.clone());
            let msg = if o.changed {
                format!(
                    "installed {} in {:.1}s ({:.1} MB downloaded, every file sha256-verified)",
                    o.installed.name,
                    started.elapsed().as_secs_f64(),
                    o.downloaded as f64 / 1e6
                )
            } else {
                format!("{} is already installed", o.installed.name)
            };
            eprintln!("{}", err.status(Tone::Good, "Toolkit", &msg));
            println!("{}", home.display());
            Ok(0)
        }
        ToolkitCommand::List(a) => {
            let store = store_dir(env)?;
            let all = store::installed(&store);
            if a.json {
                println!("{}", serde_json::to_string_pretty(&all).unwrap_or_default());
                return Ok(0);
            }
            if all.is_empty() {
                eprintln!(
                    "no toolkits in `{}`; install one with `cargo cuda toolkit install 13.0`",
                    store.display()
                );
                return Ok(0);
            }
            for i in &all {
                let kind = if i.record.checked {
                    "checked"
                } else {
                    "unchecked"
                };
                let extra = if i.record.components.is_empty() {
                    String::new()
                } else {
                    format!(" +{}", i.record.components.join(","))
                };
                println!(
                    "{}\t{}{extra}\t{kind}\t{}",
                    i.name,
                    i.record.release,
                    i.cuda_home.as_deref().unwrap_or(&i.dir).display()
                );
            }
            let _ = out;
            Ok(0)
        }
        ToolkitCommand::Remove(a) => {
            let store = store_dir(env)?;
            let progress = |msg: &str| eprintln!("{}", err.status(Tone::Note, "Toolkit", msg));
            let gone = cuda_install::remove(&store, &a.name, &progress)?;
            eprintln!(
                "{}",
                err.status(Tone::Good, "Toolkit", &format!("removed {}", gone.name))
            );
            Ok(0)
        }
        ToolkitCommand::Which(a) => {
            let dir = a.dir.clone().unwrap_or_else(|| PathBuf::from("."));
            let manifest = dir.join("Cargo.toml");
            let wants = if manifest.is_file() {
                ProjectWants::read(std::slice::from_ref(&dir))?
            } else {
                ProjectWants::default()
            };
            let d = session.discover(&Overrides::default(), &wants)?;
            let reason = d.reason.clone();
            let tk = d.into_selected()?;
            println!("{}", tk.root.display());
            eprintln!(
                "{}",
                err.status(
                    Tone::Good,
                    "Toolkit",
                    &format!(
                        "{} via {} ({reason})",
                        tk.version.map(|v| v.to_string()).unwrap_or_default(),
                        tk.found_via
                    )
                )
            );
            Ok(0)
        }
    }
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
    eprintln!(
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
