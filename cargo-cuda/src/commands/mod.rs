//! The subcommands: one file each, listed once in the `commands!` table
//! below. clap's definition (`cargo cuda --help`, in table order) and the
//! dispatch are both generated from that table, so they cannot disagree.
//!
//! To add `cargo cuda NAME`:
//! 1. write `commands/NAME.rs` with `pub struct Args` (`#[derive(Debug,
//!    clap::Args)]`: its flags) and `pub fn exec(ctx: &Context, args: &Args)
//!    -> i32` (the exit code). Print with `outln!` (results) and `errln!`
//!    (errors, warnings, progress) only: the crate denies `println!`;
//! 2. add `mod NAME;` and one row, `/// one-line help` then
//!    `Name(NAME::Args) => NAME::exec,`, to the table;
//! 3. give it a row in the README's command and exit-code tables and in
//!    docs/ARCHITECTURE.md's cargo-cuda table, and a case in
//!    `tests/closed_stdout.rs` (which fails until it has one).
//!
//! A flag or mode of an existing command (`explain --list`) belongs in that
//! command's file; a command with its own subcommands (`toolkit install`)
//! dispatches inside its file; a doctor check is a function in the file of
//! its layer under `doctor/`. What several commands share lives beside this
//! folder (`session.rs`, `toolchain.rs`, `store.rs`, …); modules there never
//! import from here. (One command may show another's form: `info --json`
//! embeds the toolkit objects of `toolkits --json`.)

use std::cell::OnceCell;

use crate::session::Session;
use crate::style::{ColorChoice, Style};

mod cargo_wrapper;
mod deps;
mod doctor;
mod env;
mod explain;
mod info;
mod inspect;
mod prebuild;
mod probe_driver;
mod toolkit;
mod toolkits;

/// Generates [`Command`] (clap's subcommands) and [`Command::exec`] (the
/// dispatch) from one table of `Variant(ArgsType) => exec_function` rows.
macro_rules! commands {
    ($( $(#[$attr:meta])* $variant:ident($args:ty) => $exec:path, )*) => {
        /// The subcommands, in `cargo cuda --help` order.
        #[derive(Debug, clap::Subcommand)]
        pub enum Command {
            $( $(#[$attr])* $variant($args), )*
        }

        impl Command {
            /// Runs the subcommand; returns the process's exit code.
            pub fn exec(&self, ctx: &Context) -> i32 {
                match self {
                    $( Command::$variant(args) => $exec(ctx, args), )*
                }
            }
        }
    };
}

commands! {
    /// Check the driver, toolkit, compatibility, a real compile and a real run, layer by layer.
    Doctor(doctor::Args) => doctor::exec,
    /// `cargo build` with one validated CUDA toolchain; failures explained.
    Build(cargo_wrapper::Args) => cargo_wrapper::build,
    /// `cargo run` with one validated CUDA toolchain; failures explained.
    Run(cargo_wrapper::Args) => cargo_wrapper::run,
    /// `cargo test` with one validated CUDA toolchain; failures explained.
    Test(cargo_wrapper::Args) => cargo_wrapper::test,
    /// `cargo check` with one validated CUDA toolchain; failures explained.
    Check(cargo_wrapper::Args) => cargo_wrapper::check,
    /// `cargo bench` with one validated CUDA toolchain; failures explained.
    Bench(cargo_wrapper::Args) => cargo_wrapper::bench,
    /// Explain a build log (FILE, or `-` for stdin) or a diagnosis code, like `rustc --explain`.
    Explain(explain::Args) => explain::exec,
    /// List every CUDA toolkit found, with its problems, and which one is selected and why.
    Toolkits(toolkits::Args) => toolkits::exec,
    /// Show the selected toolkit, the driver, the GPUs and the arch plan.
    Info(info::Args) => info::exec,
    /// Print (or with --write, save to .cargo/config.toml) the environment for the selected toolkit.
    Env(env::Args) => env::exec,
    /// Install, list, remove verified CUDA compilers in the per-user store (CARGO_CUDA_HOME).
    Toolkit(toolkit::Args) => toolkit::exec,
    /// Fetch header-only dependencies (CUTLASS) into the store, for offline builds.
    Deps(deps::Args) => deps::exec,
    /// List the kernel images a binary, library, .fatbin, .cubin, .ptx or directory holds, and whether they run on the target GPUs and drivers.
    Inspect(inspect::Args) => inspect::exec,
    /// Build the package's kernels for its declared archs and ship them in it (cuda-prebuilt/); --verify rebuilds and compares.
    Prebuild(prebuild::Args) => prebuild::exec,
    /// The driver-probe child: `cuda_toolchain::probe` runs it under a timeout (hidden).
    #[command(name = cuda_toolchain::probe::DRIVER_PROBE_ARG, hide = true)]
    ProbeDriver(probe_driver::Args) => probe_driver::exec,
}

/// What every subcommand gets: the global flags, and the session and
/// output styles, made on first use (the driver-probe child never makes
/// them: it answers from the process environment alone).
pub struct Context {
    /// `--color`.
    pub color: Option<ColorChoice>,
    session: OnceCell<Session>,
}

impl Context {
    /// A context for one run of `cargo cuda`.
    pub fn new(color: Option<ColorChoice>) -> Context {
        Context {
            color,
            session: OnceCell::new(),
        }
    }

    /// The session, over the process environment with cargo's `[env]`
    /// configuration applied, as build scripts will see it.
    pub fn session(&self) -> &Session {
        self.session.get_or_init(|| {
            let process_env = cuda_toolchain::env::Env::from_process();
            let cwd = std::env::current_dir().unwrap_or_default();
            let entries = crate::config::env_entries(&cwd, &process_env);
            Session::new(crate::config::apply(process_env, &entries))
        })
    }

    /// The style for standard output.
    pub fn out(&self) -> Style {
        Style::new(
            &self.session().env,
            self.color,
            crate::output::Stream::Stdout,
        )
    }

    /// The style for standard error.
    pub fn err(&self) -> Style {
        Style::new(
            &self.session().env,
            self.color,
            crate::output::Stream::Stderr,
        )
    }
}
