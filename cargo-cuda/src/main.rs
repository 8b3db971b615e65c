//! `cargo cuda`: doctor, build/run/test with one validated CUDA toolchain,
//! and explained failures. A thin CLI over `cuda-build`.
//!
//! Runs as a cargo subcommand (`cargo cuda doctor`: cargo passes `cuda` as
//! the first argument) and directly (`cargo-cuda doctor`).

#[macro_use]
mod out;
mod cli;
mod config;
mod deps_cmd;
mod doctor;
mod explain;
mod gpu;
mod info;
mod inspect;
mod progress;
mod sccache;
mod session;
mod shell;
mod signals;
mod style;
mod toolchain;
mod toolkit_cmd;
mod workspace;
mod wrap;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::session::{Overrides, Session};
use crate::style::{Stream, Style};

fn main() {
    let args = cli::normalize_args(std::env::args_os().collect());
    // The driver-probe child answers before anything else is set up: it is
    // run by cuda_toolchain::probe under a timeout and must stay minimal.
    if args
        .get(1)
        .is_some_and(|a| a == cuda_toolchain::probe::DRIVER_PROBE_ARG)
    {
        std::process::exit(cuda_toolchain::probe::driver_probe_child_main(
            &cuda_toolchain::env::Env::from_process(),
        ));
    }
    let cli = Cli::parse_from(args);
    // Cargo applies its config's `[env]` to build scripts; resolve as they will.
    let process_env = cuda_toolchain::env::Env::from_process();
    let cwd = std::env::current_dir().unwrap_or_default();
    let env = config::apply(
        process_env.clone(),
        &config::env_entries(&cwd, &process_env),
    );
    let session = Session::new(env);
    let out = Style::new(&session.env, cli.color, Stream::Stdout);
    let err = Style::new(&session.env, cli.color, Stream::Stderr);

    if let Some((sub, args)) = cli.command.wrapped() {
        std::process::exit(wrap::run(sub, args, &session, cli.color));
    }
    let code = match &cli.command {
        Command::Doctor(a) => {
            let opts = doctor::Options {
                overrides: overrides(&a.selection),
                no_workload: a.no_workload,
            };
            let report = doctor::run(&session, &opts);
            if a.json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&report).unwrap_or_default()
                );
            } else {
                doctor::print(&report, &out);
            }
            i32::from(!report.ok)
        }
        Command::Explain(a) if a.list => explain::list(a.json, &out),
        Command::Explain(a) => {
            let ctx = if a.no_detect {
                cuda_toolchain::diagnose::Context::default()
            } else {
                explain::detected_context(&session)
            };
            explain::run(a.input.as_deref(), a.json, &ctx, &out, &err)
        }
        Command::Toolkits(a) => {
            info::toolkits(&session, &overrides(&a.selection), a.json, &out, &err)
        }
        Command::Info(a) => info::info(&session, &overrides(&a.selection), a.json, &out, &err),
        Command::Env(a) => info::env(&session, &overrides(&a.selection), a.write, &err),
        Command::Toolkit(a) => toolkit_cmd::run(&session, a, &out, &err),
        Command::Deps(a) => deps_cmd::run(&session, a, &err),
        Command::Inspect(a) => {
            let opts = inspect::Options {
                path: a.path.clone(),
                gpu: a.gpu.clone(),
                driver: a.driver.clone(),
                manifest_path: a.manifest_path.clone(),
            };
            inspect::run(&session, &opts, a.json, &out, &err)
        }
        Command::Build(_)
        | Command::Run(_)
        | Command::Test(_)
        | Command::Check(_)
        | Command::Bench(_) => {
            unreachable!("wrapped commands returned above")
        }
    };
    std::process::exit(code);
}

fn overrides(s: &cli::Selection) -> Overrides {
    Overrides {
        toolkit: s.toolkit.clone(),
        arch: s.arch.clone(),
        manifest_path: s.manifest_path.clone(),
    }
}
