//! `cargo cuda toolkit install | list | remove | which`: the per-user store
//! of verified CUDA compilers (engine: crate `cuda-install`).

use std::path::PathBuf;

use cuda_install::{Request, Spec};
use cuda_toolchain::toolkit::store;
use cuda_toolchain::Error;

use super::Context;
use crate::session::{Overrides, ProjectWants, Session};
use crate::store::{install, store_dir};
use crate::style::{Style, Tone};

/// `cargo cuda toolkit`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: ToolkitCommand,
}

/// `cargo cuda toolkit install|list|remove|which`.
#[derive(Debug, clap::Subcommand)]
pub enum ToolkitCommand {
    /// Install a complete, one-release CUDA compiler from NVIDIA's wheels (no root, no Python); prints its root.
    Install(ToolkitInstallArgs),
    /// List the toolkits in the store.
    List(ToolkitListArgs),
    /// Remove a toolkit from the store (by the name `list` shows).
    Remove(ToolkitRemoveArgs),
    /// Print the root of the toolkit a project directory would use, and why.
    Which(ToolkitWhichArgs),
}

/// `cargo cuda toolkit install`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The store is CARGO_CUDA_HOME, else $XDG_DATA_HOME/cargo-cuda, else ~/.local/share/cargo-cuda.\n\
                  The index is --index-url, else UV_INDEX_URL, else PIP_INDEX_URL, else https://pypi.org/simple;\n\
                  HTTPS_PROXY / HTTP_PROXY / NO_PROXY are honoured."
)]
pub struct ToolkitInstallArgs {
    /// `latest`, `13`, `13.0` or `13.0.88`; with --unchecked: the wheels as NAME==VERSION.
    #[arg(value_name = "VERSION", required = true)]
    pub versions: Vec<String>,
    /// Optional components, comma-separated: cublas, nvrtc, curand, nvjitlink.
    #[arg(long, value_name = "LIST")]
    pub with: Vec<String>,
    /// The package index (a PEP 503/691 "simple" URL).
    #[arg(long, value_name = "URL")]
    pub index_url: Option<String>,
    /// Use only what is in the store (also CARGO_NET_OFFLINE=true).
    #[arg(long)]
    pub offline: bool,
    /// Install exactly the NAME==VERSION wheels given, in pip's layout, with no release check (test fixtures).
    #[arg(long, requires = "name")]
    pub unchecked: bool,
    /// The store name for an --unchecked set.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

/// `cargo cuda toolkit list`.
#[derive(Debug, clap::Args)]
pub struct ToolkitListArgs {
    /// Print the store's entries as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `cargo cuda toolkit remove`.
#[derive(Debug, clap::Args)]
pub struct ToolkitRemoveArgs {
    /// The name `cargo cuda toolkit list` shows (e.g. `13.0.88`).
    pub name: String,
}

/// `cargo cuda toolkit which`.
#[derive(Debug, clap::Args)]
pub struct ToolkitWhichArgs {
    /// The project directory (default: the current one).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
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
pub fn exec(ctx: &Context, args: &Args) -> i32 {
    let err = ctx.err();
    match dispatch(ctx.session(), args, &err) {
        Ok(code) => code,
        Err(e) => {
            errln!("{}", err.cuda_error(&e));
            1
        }
    }
}

fn dispatch(session: &Session, args: &Args, err: &Style) -> Result<i32, Error> {
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
            errln!("{}", err.status(Tone::Good, "Toolkit", &msg));
            outln!("{}", home.display());
            Ok(0)
        }
        ToolkitCommand::List(a) => {
            let store = store_dir(env)?;
            let all = store::installed(&store);
            if a.json {
                outln!("{}", serde_json::to_string_pretty(&all).unwrap_or_default());
                return Ok(0);
            }
            if all.is_empty() {
                errln!(
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
                outln!(
                    "{}\t{}{extra}\t{kind}\t{}",
                    i.name,
                    i.record.release,
                    i.cuda_home.as_deref().unwrap_or(&i.dir).display()
                );
            }
            Ok(0)
        }
        ToolkitCommand::Remove(a) => {
            let store = store_dir(env)?;
            let progress = |msg: &str| errln!("{}", err.status(Tone::Note, "Toolkit", msg));
            let gone = cuda_install::remove(&store, &a.name, &progress)?;
            errln!(
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
            outln!("{}", tk.root.display());
            errln!(
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
