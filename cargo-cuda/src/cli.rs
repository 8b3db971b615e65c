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
    /// Install, list, remove verified CUDA compilers in the per-user store (CARGO_CUDA_HOME).
    Toolkit(ToolkitArgs),
    /// Fetch header-only dependencies (CUTLASS) into the store, for offline builds.
    Deps(DepsArgs),
    /// List the kernel images a binary, library, .fatbin, .cubin, .ptx or directory holds, and whether they run on the target GPUs and drivers.
    Inspect(InspectArgs),
}

/// `cargo cuda deps`.
#[derive(Debug, Args)]
pub struct DepsArgs {
    #[command(subcommand)]
    pub command: DepsCommand,
}

/// `cargo cuda deps fetch`.
#[derive(Debug, Subcommand)]
pub enum DepsCommand {
    /// Fetch every `[package.metadata.cuda]` header dependency of the workspace (and --cutlass) into the store.
    Fetch(DepsFetchArgs),
}

/// `cargo cuda deps fetch`.
#[derive(Debug, Args)]
pub struct DepsFetchArgs {
    /// Also fetch this CUTLASS version (`4.2`), whatever the workspace declares.
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

/// `cargo cuda toolkit`.
#[derive(Debug, Args)]
pub struct ToolkitArgs {
    #[command(subcommand)]
    pub command: ToolkitCommand,
}

/// `cargo cuda toolkit install|list|remove|which`.
#[derive(Debug, Subcommand)]
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
#[derive(Debug, Args)]
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
#[derive(Debug, Args)]
pub struct ToolkitListArgs {
    /// Print the store's entries as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `cargo cuda toolkit remove`.
#[derive(Debug, Args)]
pub struct ToolkitRemoveArgs {
    /// The name `cargo cuda toolkit list` shows (e.g. `13.0.88`).
    pub name: String,
}

/// `cargo cuda toolkit which`.
#[derive(Debug, Args)]
pub struct ToolkitWhichArgs {
    /// The project directory (default: the current one).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
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
    /// List every code with a one-line summary, grouped by layer (driver, toolkit, compile, link, load, run).
    #[arg(long, conflicts_with = "input")]
    pub list: bool,
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

/// `cargo cuda inspect`.
#[derive(Debug, Args)]
#[command(
    after_help = "Targets: --gpu if given, else `deploy = [...]` under [package.metadata.cuda], else this machine's GPUs and driver.\n\
                  Exit status: 0 runs on every target, 1 some target cannot run it, 2 unusable input."
)]
pub struct InspectArgs {
    /// A Rust binary or library (ELF, .rlib, .a), a .fatbin, .cubin or .ptx file, or a directory (a cuda-build OUT_DIR).
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// Target GPUs: archs or product names, comma-separated (`sm_86,sm_90`, `"RTX 4090"`).
    #[arg(long, value_name = "GPUS")]
    pub gpu: Option<String>,
    /// The targets' driver version (`535.104.05`), for the PTX-JIT and toolkit checks.
    #[arg(long, value_name = "VERSION")]
    pub driver: Option<String>,
    /// The Cargo.toml whose `[package.metadata.cuda] deploy` lists the targets (default: ./Cargo.toml).
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// Print one JSON object (schema documented in `cargo-cuda/src/inspect.rs`).
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
