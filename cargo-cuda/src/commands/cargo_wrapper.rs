//! `cargo cuda build|run|test|check|bench`: resolve the toolchain once,
//! refuse early what would certainly fail, run cargo with one environment for
//! every build script, stream its output, and explain a failure.

use std::ffi::OsString;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;

use super::Context;
use crate::output::{self, Stream};
use crate::progress::{Tail, Terminal};
use crate::session::{Overrides, ProjectWants, Session};
use crate::signals;
use crate::style::{ColorChoice, Style, Tone};
use crate::toolchain;
use crate::workspace;
use cuda_toolchain::env::Var;
use cuda_toolchain::plan::ArchPlan;
use cuda_toolchain::toolkit::Toolkit;
use cuda_toolchain::Error;

/// `cargo cuda build|run|test|check|bench`: ours before `--`, the rest is cargo's.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Every other argument goes to cargo unchanged: `cargo cuda build --release -p foo`.\n\
                  Put --arch/--toolkit before `--`; what follows `--` belongs to the program."
)]
pub struct Args {
    /// Arch targets for every build script, e.g. `80;90`, `sm_86`, `native` (sets CUDA_ARCHS).
    #[arg(long, value_name = "ARCHS")]
    pub arch: Option<String>,
    /// Use the toolkit at this root (the directory holding bin/nvcc).
    #[arg(long, value_name = "DIR")]
    pub toolkit: Option<PathBuf>,
    /// Run every build script's nvcc under sccache (≥ 0.9; found on PATH), started once.
    #[arg(long)]
    pub sccache: bool,
    /// Install the project's pinned toolkit (`[package.metadata.cuda] toolkit`) first when none matches.
    #[arg(long)]
    pub install: bool,
    /// Arguments passed to cargo unchanged.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CARGO_ARGS"
    )]
    pub cargo_args: Vec<OsString>,
}

/// `cargo cuda build`.
pub fn build(ctx: &Context, args: &Args) -> i32 {
    exec("build", ctx, args)
}

/// `cargo cuda run`.
pub fn run(ctx: &Context, args: &Args) -> i32 {
    exec("run", ctx, args)
}

/// `cargo cuda test`.
pub fn test(ctx: &Context, args: &Args) -> i32 {
    exec("test", ctx, args)
}

/// `cargo cuda check`.
pub fn check(ctx: &Context, args: &Args) -> i32 {
    exec("check", ctx, args)
}

/// `cargo cuda bench`.
pub fn bench(ctx: &Context, args: &Args) -> i32 {
    exec("bench", ctx, args)
}

/// Keep at most this much of each of cargo's streams for diagnosis (the tail matters most).
const KEEP_OUTPUT: usize = 32 << 20;

/// Our own flags, pulled out of the arguments that otherwise go to cargo.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// `--arch`.
    pub arch: Option<String>,
    /// `--toolkit`.
    pub toolkit: Option<PathBuf>,
    /// `--manifest-path` (also left in `cargo_args`: cargo needs it too).
    pub manifest_path: Option<PathBuf>,
    /// What cargo gets.
    pub cargo_args: Vec<OsString>,
}

/// Splits `--arch`/`--toolkit` (ours) from cargo's arguments. Only before a
/// `--`: after it, everything belongs to the program `cargo run` starts.
pub fn split_args(args: &[OsString]) -> Result<Split, Error> {
    let mut out = Split::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            out.cargo_args.extend(args[i..].iter().cloned());
            break;
        }
        let s = a.to_string_lossy();
        let mut take = |name: &str| -> Result<Option<OsString>, Error> {
            if s == name {
                i += 1;
                return args.get(i).cloned().map(Some).ok_or_else(|| {
                    Error::new("invalid-argument", format!("{name} needs a value")).with_help(
                        format!("for example: cargo cuda build {name} {}", example(name)),
                    )
                });
            }
            Ok(s.strip_prefix(&format!("{name}=")).map(OsString::from))
        };
        if let Some(v) = take("--arch")? {
            out.arch = Some(v.to_string_lossy().into_owned());
        } else if let Some(v) = take("--toolkit")? {
            out.toolkit = Some(PathBuf::from(v));
        } else if let Some(v) = take("--manifest-path")? {
            out.manifest_path = Some(PathBuf::from(&v));
            out.cargo_args.push("--manifest-path".into());
            out.cargo_args.push(v);
        } else {
            out.cargo_args.push(a.clone());
        }
        i += 1;
    }
    Ok(out)
}

fn example(flag: &str) -> &'static str {
    match flag {
        "--arch" => "80;90",
        "--toolkit" => "/usr/local/cuda-13.0",
        _ => "path/to/Cargo.toml",
    }
}

/// Runs cargo's `sub` command; returns the exit code.
fn exec(sub: &str, ctx: &Context, args: &Args) -> i32 {
    let err_style = ctx.err();
    match prepare_and_run(sub, args, ctx.session(), ctx.color, &err_style) {
        Ok(code) => code,
        Err(e) => {
            errln!("{}", err_style.cuda_error(&e));
            1
        }
    }
}

fn prepare_and_run(
    sub: &str,
    args: &Args,
    session: &Session,
    color: Option<ColorChoice>,
    style: &Style,
) -> Result<i32, Error> {
    let (sccache, cargo_args) = crate::sccache::take_flag(args.sccache, &args.cargo_args);
    let split = split_args(&cargo_args)?;
    let overrides = Overrides {
        arch: args.arch.clone().or(split.arch.clone()),
        toolkit: args.toolkit.clone().or(split.toolkit.clone()),
        manifest_path: split.manifest_path.clone(),
    };
    if let Some(p) = &overrides.manifest_path {
        workspace::check_manifest_path(p)?;
    }
    let cargo = workspace::find_cargo(&session.env)?;

    // The workspace tells us which packages build GPU code and what they ask for.
    // If cargo metadata fails, cargo itself will say why in a moment.
    let project = session.project(overrides.manifest_path.as_deref());
    let uses_cuda = project
        .workspace
        .as_ref()
        .is_none_or(|w| !w.cuda_packages.is_empty());
    let strict = uses_cuda || overrides.arch.is_some() || overrides.toolkit.is_some();
    let wants = project.wants?;
    // Build scripts print the same as `cargo:warning`, but cargo shows those
    // only for packages that rebuild; say it once here too.
    for w in session.env.check().iter().chain(&wants.warnings) {
        errln!("{}", style.warning(w));
    }
    if args.install {
        crate::store::install_pinned(session, &wants, style)?;
    }

    let setup = resolve(session, &overrides, &wants);
    let (toolkit, plan, context) = match setup {
        Ok(s) => s,
        Err(e) if strict => return Err(crate::store::with_install_hint(e, &wants)),
        Err(e) => {
            errln!(
                "{}",
                style.warning(&format!(
                    "no package in this workspace uses cuda-build or cudarc, and no CUDA toolchain is ready ({}); running cargo unchanged",
                    e.message
                ))
            );
            return spawn_cargo(&cargo, sub, &split.cargo_args, &[], session, None, style);
        }
    };
    if let Some(plan) = &plan {
        for w in &plan.warnings {
            errln!("{}", style.warning(w));
        }
    }
    if wants.arch_conflict && overrides.arch.is_none() {
        errln!(
            "{}",
            style.warning("packages set different `[package.metadata.cuda] arch`; each build script keeps its own (pass --arch to use one for all)")
        );
    }
    errln!(
        "{}",
        style.status(Tone::Good, "CUDA", &describe(&toolkit, plan.as_ref()))
    );

    let progress_dir = tempfile::Builder::new()
        .prefix("cargo-cuda-")
        .tempdir()
        .ok();
    let progress_file = progress_dir
        .as_ref()
        .map(|d| d.path().join("progress.jsonl"));
    let handed = plan
        .as_ref()
        .map(|p| session.handed_plan(&toolkit, &overrides, &wants, p));
    let mut vars = toolchain::child_env(
        &toolkit,
        plan.as_ref(),
        &overrides,
        &session.env,
        progress_file.as_deref(),
        handed,
    );
    vars.extend(toolchain::handoff_for_build(
        session,
        &toolkit,
        &overrides,
        &wants,
        project.workspace.as_ref().map(|w| w.root.as_path()),
        &split.cargo_args,
        style,
    ));
    vars.extend(crate::sccache::build_vars(
        sccache,
        &session.env,
        project.workspace.as_ref(),
        style,
    )?);
    // We pipe cargo's stderr; keep its colours when our own stderr shows them.
    if session.env.get_os(Var::CargoTermColor).is_none() || color.is_some() {
        let c = if style.colored() { "always" } else { "never" };
        vars.push(("CARGO_TERM_COLOR", c.into()));
    }
    spawn_cargo(
        &cargo,
        sub,
        &split.cargo_args,
        &vars,
        session,
        progress_file.map(|p| (p, context)),
        style,
    )
}

/// Discovery, integrity and plan: everything that must be right before cargo
/// starts; plus every toolkit found, so a later diagnosis can name the others.
fn resolve(
    session: &Session,
    overrides: &Overrides,
    wants: &ProjectWants,
) -> Result<(Toolkit, Option<ArchPlan>, cuda_toolchain::diagnose::Context), Error> {
    let discovery = session.discover(overrides, wants)?;
    let context = cuda_toolchain::diagnose::Context {
        toolkits: discovery.candidates.clone(),
        selected: discovery.selected,
        probe: None,
    };
    let toolkit = discovery.into_selected()?;
    // into_selected refuses a selected toolkit with error-level problems (say, a
    // mixed release): such a build would certainly fail.
    // Packages disagreeing on `[package.metadata.cuda] arch` keep their own.
    if wants.arch_conflict && overrides.arch.is_none() {
        return Ok((toolkit, None, context));
    }
    match session.plan(&toolkit, overrides, wants) {
        Ok(plan) => Ok((toolkit, Some(plan), context)),
        // Nothing set and no GPU: not certain to fail (a build script may have
        // its own `fallback_arch` or `arch`), so each build script decides.
        Err(e) if e.code == "arch-not-detected" => Ok((toolkit, None, context)),
        Err(e) => Err(e),
    }
}

fn describe(toolkit: &Toolkit, plan: Option<&ArchPlan>) -> String {
    let Some(plan) = plan else {
        return format!(
            "{} (arch targets: each build script's own)",
            describe_toolkit(toolkit)
        );
    };
    format!(
        "{}, targets {} (from {})",
        describe_toolkit(toolkit),
        plan.targets_display().join(" "),
        crate::session::arch_source_name(&plan.source)
    )
}

fn describe_toolkit(toolkit: &Toolkit) -> String {
    let version = toolkit
        .version
        .as_ref()
        .map_or("(unknown version)".to_string(), |v| v.to_string());
    format!("{version} at {}", toolkit.root.display())
}

fn spawn_cargo(
    cargo: &std::path::Path,
    sub: &str,
    cargo_args: &[OsString],
    vars: &[(&'static str, OsString)],
    session: &Session,
    progress: Option<(PathBuf, cuda_toolchain::diagnose::Context)>,
    style: &Style,
) -> Result<i32, Error> {
    // libtest prints a failing test's panic on stdout, so `test` and `bench`
    // tee stdout too; `run` leaves the program's stdout alone (it may be a tty).
    let tee_stdout = matches!(sub, "test" | "bench");
    let mut cmd = Command::new(cargo);
    cmd.arg(sub)
        .args(cargo_args)
        .stdout(if tee_stdout {
            Stdio::piped()
        } else {
            Stdio::inherit()
        })
        .stderr(Stdio::piped());
    for (k, v) in vars {
        cmd.env(k, v);
    }
    // Our handlers must be in place before the child exists; exec resets them
    // to the default in the child, so cargo itself still dies on Ctrl-C.
    signals::install_handlers();
    signals::become_subreaper();
    let mut child = cuda_toolchain::process::spawn_retrying_busy(&mut cmd).map_err(|e| {
        Error::new(
            "cargo-not-found",
            format!("could not start `{}`: {e}", cargo.display()),
        )
        .with_help("check that CARGO (or `cargo` on PATH) is a working cargo executable")
    })?;

    let term = Terminal::new(output::is_terminal(Stream::Stderr), *style);
    // stderr first: cargo's own error and build-script output come there.
    let mut tees = Vec::new();
    if let Some(stderr) = child.stderr.take() {
        tees.push(tee(stderr, false, term.clone()));
    }
    if let Some(stdout) = child.stdout.take() {
        tees.push(tee(stdout, true, term.clone()));
    }
    let tail = progress
        .as_ref()
        .map(|(p, _)| Tail::start(p.clone(), term.clone()));

    // We outlive cargo whatever arrives: SIGINT is only recorded (cargo got
    // it from the terminal too); SIGTERM is passed to cargo's whole tree.
    let mut forwarded: Vec<u32> = Vec::new();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(Error::new(
                    "cargo-failed",
                    format!("waiting for cargo failed: {e}"),
                ))
            }
        }
        if signals::terminated() {
            // Again on each turn: a build script may start nvcc meanwhile.
            let new: Vec<u32> = signals::process_tree(child.id())
                .into_iter()
                .filter(|p| !forwarded.contains(p))
                .collect();
            signals::signal_all(&new, libc::SIGTERM);
            forwarded.extend(new);
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    };
    if signals::exit_code().is_some() {
        // cargo is gone; its build scripts, nvcc and cicc may not be yet (and
        // they hold the pipes the tee threads read).
        signals::end_descendants(std::time::Duration::from_secs(5));
    }
    if let Some(t) = tail {
        t.stop();
    }
    let mut kept = Vec::new();
    for t in tees {
        kept.extend(t.join().unwrap_or_default());
        kept.push(b'\n');
    }

    if let Some(code) = signals::exit_code() {
        return Ok(code);
    }
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return Ok(128 + sig);
        }
    }
    if status.success() {
        return Ok(0);
    }
    let text = String::from_utf8_lossy(&kept).into_owned();
    let mut ctx = progress.map(|(_, c)| c).unwrap_or_default();
    ctx.probe = Some(session.probe().clone());
    // cuda-build (in a build script) and programs built with it print their
    // own explanation; repeat only what the output does not already say.
    let found: Vec<_> = cuda_toolchain::diagnose::diagnose(&text, &ctx)
        .into_iter()
        .filter(|d| !text.contains(&format!("error[{}]", d.code)))
        .collect();
    if !found.is_empty() {
        errln!();
        errln!(
            "{}",
            style.status(
                Tone::Note,
                "Diagnosis",
                "`cargo cuda` found the likely cause:"
            )
        );
        for d in &found {
            errln!("{}", cuda_toolchain::diagnose::render(d));
        }
    }
    Ok(status.code().unwrap_or(101))
}

/// Copies a child's stream to ours as it comes; returns its last
/// [`KEEP_OUTPUT`] bytes for diagnosis.
fn tee(
    mut from: impl Read + Send + 'static,
    to_stdout: bool,
    term: Arc<Terminal>,
) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    term.write_passthrough(&buf[..n], to_stdout);
                    kept.extend_from_slice(&buf[..n]);
                    if kept.len() > KEEP_OUTPUT {
                        let cut = kept.len() - KEEP_OUTPUT;
                        kept.drain(..cut);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        kept
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn splits_our_flags_from_cargos() {
        let s = split_args(&os(&[
            "--release",
            "--arch=80;90",
            "--manifest-path",
            "x/Cargo.toml",
            "--toolkit",
            "/opt/cuda",
            "--",
            "--arch",
            "70",
        ]))
        .unwrap();
        assert_eq!(s.arch.as_deref(), Some("80;90"));
        assert_eq!(s.toolkit, Some(PathBuf::from("/opt/cuda")));
        assert_eq!(s.manifest_path, Some(PathBuf::from("x/Cargo.toml")));
        assert_eq!(
            s.cargo_args,
            os(&[
                "--release",
                "--manifest-path",
                "x/Cargo.toml",
                "--",
                "--arch",
                "70"
            ])
        );
    }

    #[test]
    fn flag_without_value_is_an_error() {
        let e = split_args(&os(&["--arch"])).unwrap_err();
        assert!(e.message.contains("--arch needs a value"), "{e}");
    }
}
