//! The command line, as clap derive types.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::style::ColorChoice;

/// `cargo cuda`: one validated CUDA toolchain for the whole build, checked layer by layer.
#[derive(Debug, Parser)]
#[command(
    name = "cargo-cuda",
    bin_name = "cargo cuda",
    version,
    about,
    propagate_version = true,
    after_help = "Run `cargo cuda doctor` first when anything CUDA-related fails."
)]
pub struct Cli {
    /// Coloring: auto, always, never (default: CARGO_TERM_COLOR, then NO_COLOR, then auto).
    #[arg(long, value_enum, global = true, value_name = "WHEN")]
    pub color: Option<ColorChoice>,

    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check the driver, toolkit, compatibility, a real compile and a real run, layer by layer.
    Doctor(DoctorArgs),
    /// `cargo build` with one validated CUDA toolchain; failures explained.
    Build(WrapArgs),
    /// `cargo run` with one validated CUDA toolchain; failures explained.
    Run(WrapArgs),
    /// `cargo test` with one validated CUDA toolchain; failures explained.
    Test(WrapArgs),
    /// `cargo check` with one validated CUDA toolchain; failures explained.
    Check(WrapArgs),
    /// `cargo bench` with one validated CUDA toolchain; failures explained.
    Bench(WrapArgs),
    /// Explain a build log (FILE, or `-` for stdin) or a diagnosis code, like `rustc --explain`.
    Explain(ExplainArgs),
    /// List every CUDA toolkit found, with its problems, and which one is selected and why.
    Toolkits(ToolkitsArgs),
    /// Show the selected toolkit, the driver, the GPUs and the arch plan.
    Info(InfoArgs),
    /// Print (or with --write, save to .cargo/config.toml) the environment for the selected toolkit.
    Env(EnvArgs),
}

/// Options shared by commands that select a toolkit.
#[derive(Debug, Args, Clone, Default)]
pub struct Selection {
    /// Use the toolkit at this root (the directory holding bin/nvcc) instead of discovery.
    #[arg(long, value_name = "DIR")]
    pub toolkit: Option<PathBuf>,
    /// Arch targets, e.g. `80;90`, `sm_86`, `90a`, `native` (overrides CUDA_ARCHS).
    #[arg(long, value_name = "ARCHS")]
    pub arch: Option<String>,
    /// Path to Cargo.toml (for `[package.metadata.cuda]` and the workspace).
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
}

/// `cargo cuda doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// Print `{"ok": bool, "checks": [...]}` instead of the report.
    #[arg(long)]
    pub json: bool,
    /// Do not build and run the sample workload (package `cuda-workload`) even when a GPU exists.
    #[arg(long)]
    pub no_workload: bool,
}

/// `cargo cuda build|run|test|check|bench`.
#[derive(Debug, Args)]
#[command(
    after_help = "Every other argument goes to cargo unchanged: `cargo cuda build --release -p foo`.\n\
                  Put --arch/--toolkit before `--`; what follows `--` belongs to the program."
)]
pub struct WrapArgs {
    /// Arch targets for every build script, e.g. `80;90`, `sm_86`, `native` (sets CUDA_ARCHS).
    #[arg(long, value_name = "ARCHS")]
    pub arch: Option<String>,
    /// Use the toolkit at this root (the directory holding bin/nvcc).
    #[arg(long, value_name = "DIR")]
    pub toolkit: Option<PathBuf>,
    /// Arguments passed to cargo unchanged.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CARGO_ARGS"
    )]
    pub cargo_args: Vec<OsString>,
}

/// `cargo cuda explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// A log file, `-` for stdin, or a diagnosis code such as `nvcc-not-found` (default: stdin).
    #[arg(value_name = "FILE|-|CODE")]
    pub input: Option<OsString>,
    /// Print `{"diagnoses": [...]}`, most likely first.
    #[arg(long)]
    pub json: bool,
    /// Do not look at this machine's toolkits and driver (for a log from another machine).
    #[arg(long)]
    pub no_detect: bool,
}

/// `cargo cuda toolkits`.
#[derive(Debug, Args)]
pub struct ToolkitsArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// Print the discovery as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `cargo cuda info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// Print JSON: toolkit, toolkits, gpus, driver, arch, gencode.
    #[arg(long)]
    pub json: bool,
}

/// `cargo cuda env`.
#[derive(Debug, Args)]
pub struct EnvArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// Print POSIX shell `export` lines (the default): `eval "$(cargo cuda env --shell)"`.
    #[arg(long, conflicts_with = "write")]
    pub shell: bool,
    /// Write CUDA_HOME, CUDA_PATH, CUDARC_CUDA_VERSION (and with --arch, CUDA_ARCHS and
    /// CUDA_COMPUTE_CAP) into the `[env]` table of the project's .cargo/config.toml, so
    /// plain `cargo`, rust-analyzer and IDEs use the same toolkit as `cargo cuda`.
    #[arg(long)]
    pub write: bool,
}

impl Command {
    /// The cargo subcommand a wrapper command runs, with its arguments.
    pub fn wrapped(&self) -> Option<(&'static str, &WrapArgs)> {
        match self {
            Command::Build(a) => Some(("build", a)),
            Command::Run(a) => Some(("run", a)),
            Command::Test(a) => Some(("test", a)),
            Command::Check(a) => Some(("check", a)),
            Command::Bench(a) => Some(("bench", a)),
            _ => None,
        }
    }
}

/// Drops the `cuda` that cargo inserts when it runs us as `cargo cuda ...`.
pub fn normalize_args(mut args: Vec<OsString>) -> Vec<OsString> {
    if args.get(1).is_some_and(|a| a == "cuda") {
        args.remove(1);
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn cargo_subcommand_form_drops_cuda() {
        let a = normalize_args(vec!["cargo-cuda".into(), "cuda".into(), "doctor".into()]);
        assert_eq!(a, vec![OsString::from("cargo-cuda"), "doctor".into()]);
        let b = normalize_args(vec!["cargo-cuda".into(), "doctor".into()]);
        assert_eq!(b.len(), 2);
    }

    #[test]
    fn wrapper_passes_cargo_flags_through() {
        let cli = Cli::try_parse_from([
            "cargo-cuda",
            "build",
            "--arch",
            "80",
            "--release",
            "-p",
            "x",
            "--",
            "--arch",
            "y",
        ])
        .unwrap();
        let (sub, a) = cli.command.wrapped().unwrap();
        assert_eq!(sub, "build");
        assert_eq!(a.arch.as_deref(), Some("80"));
        let rest: Vec<_> = a.cargo_args.iter().map(|s| s.to_str().unwrap()).collect();
        assert_eq!(rest, ["--release", "-p", "x", "--", "--arch", "y"]);
    }
}
