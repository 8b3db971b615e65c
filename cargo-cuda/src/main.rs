//! `cargo cuda`: doctor, build/run/test with one validated CUDA toolchain,
//! and explained failures. A thin CLI over `cuda-build`.
//!
//! Runs as a cargo subcommand (`cargo cuda doctor`: cargo passes `cuda` as
//! the first argument) and directly (`cargo-cuda doctor`). The subcommands
//! are in `commands/`, one file each; the modules here are what they share.

// Every byte goes through `output` (`outln!`, `errln!`), so a closed pipe
// cannot panic; `tests/closed_stdout.rs` checks the same without clippy.
#![deny(clippy::print_stdout, clippy::print_stderr, clippy::dbg_macro)]

#[macro_use]
mod output;
mod cli;
mod commands;
mod config;
mod graph;
mod progress;
mod sccache;
mod session;
mod signals;
mod store;
mod style;
mod toolchain;
mod workspace;

use clap::Parser;

fn main() {
    let args = cli::normalize_args(std::env::args_os().collect());
    let cli = cli::Cli::parse_from(args);
    let ctx = commands::Context::new(cli.color);
    std::process::exit(cli.command.exec(&ctx));
}
