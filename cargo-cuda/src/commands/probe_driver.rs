//! `cargo-cuda __probe-driver` (hidden): the child that `cuda_toolchain::probe`
//! runs under a timeout to ask the driver API for the driver and GPUs, so a
//! crashing or hanging libcuda cannot take the parent down. It prints one
//! JSON line and reads nothing but the process environment.

use super::Context;

/// No flags: the probe passes only the subcommand.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Answers the probe; the exit code is the probe's own (0: a driver answered).
pub fn exec(_ctx: &Context, _args: &Args) -> i32 {
    cuda_toolchain::probe::driver_probe_child_main(&cuda_toolchain::env::Env::from_process())
}
