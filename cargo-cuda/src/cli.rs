//! The command line's top level: `cargo cuda [--color WHEN] COMMAND`, and the
//! flags several commands share. Each command's own flags are in its file
//! under `commands/`, and the list of commands in `commands/mod.rs`.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser};

use crate::commands::Command;
use crate::session::Overrides;
use crate::style::ColorChoice;

/// `cargo cuda`: one validated CUDA toolchain for the whole build, checked layer by layer.
#[derive(Debug, Parser)]
#[command(
    name = "cargo-cuda",
    bin_name = "cargo cuda",
    // The package name tells this `cargo-cuda` from another project's binary of that name.
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("CARGO_PKG_NAME"), ")"),
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

impl Selection {
    /// The settings these flags override.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            toolkit: self.toolkit.clone(),
            arch: self.arch.clone(),
            manifest_path: self.manifest_path.clone(),
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

    /// The hidden driver-probe command answers the argument the probe passes.
    #[test]
    fn the_driver_probe_child_is_a_subcommand() {
        let cli =
            Cli::try_parse_from(["cargo-cuda", cuda_toolchain::probe::DRIVER_PROBE_ARG]).unwrap();
        assert!(matches!(cli.command, Command::ProbeDriver(_)));
        let help = Cli::command().render_help().to_string();
        assert!(!help.contains("probe"), "hidden from --help: {help}");
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
        let Command::Build(a) = &cli.command else {
            panic!("not a build: {:?}", cli.command)
        };
        assert_eq!(a.arch.as_deref(), Some("80"));
        let rest: Vec<_> = a.cargo_args.iter().map(|s| s.to_str().unwrap()).collect();
        assert_eq!(rest, ["--release", "-p", "x", "--", "--arch", "y"]);
    }
}
