//! How many compiler threads may run at once: cargo's jobserver.
//!
//! A build script holds one implicit job token. Each further concurrent nvcc
//! thread waits for a token from cargo's jobserver (`-j`), so a workspace
//! build never runs more compilers than cargo allows (`schedule.rs` runs
//! the tasks). Without a jobserver (a build script run by hand, or a test)
//! the limit is `NUM_JOBS`, else the number of CPUs.

use cuda_toolchain::env::{Env, Var};
use std::sync::OnceLock;

/// How many compilers may run at once.
#[derive(Clone)]
pub(crate) enum Limiter {
    /// Cargo's (or make's) jobserver.
    Jobserver(jobserver::Client),
    /// A fixed limit.
    Fixed(usize),
}

impl Limiter {
    /// The jobserver when one is inherited, else NUM_JOBS, else the CPU count.
    pub(crate) fn from_env(env: &Env) -> Limiter {
        static CLIENT: OnceLock<Option<jobserver::Client>> = OnceLock::new();
        // SAFETY: the descriptors are only taken from the inherited environment
        // once per process (cached), and `check_pipe` verifies they are a pipe.
        let client =
            CLIENT.get_or_init(|| unsafe { jobserver::Client::from_env_ext(true) }.client.ok());
        match client {
            Some(c) => Limiter::Jobserver(c.clone()),
            None => Limiter::Fixed(fixed_limit(env)),
        }
    }
}

pub(crate) fn fixed_limit(env: &Env) -> usize {
    env.get_nonempty(Var::NumJobs)
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num_jobs_parsing() {
        let env = Env::empty().set(Var::NumJobs, "3");
        assert_eq!(fixed_limit(&env), 3);
        let env = Env::empty().set(Var::NumJobs, "zero");
        assert!(fixed_limit(&env) >= 1);
    }
}
