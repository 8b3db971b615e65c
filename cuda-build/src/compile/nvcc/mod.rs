//! Running nvcc: how one call starts (`runner.rs`: the wrapper, the child's
//! environment, the deadline, its tree's peak memory, errors that carry the
//! command), sccache's rules (`sccache.rs`), how many run at once
//! (`jobserver.rs`: cargo's jobserver; `memory_budget.rs`: the memory they
//! may use; `schedule.rs`: starting each when its slots and memory allow),
//! and the progress events `cargo cuda build` shows (`progress.rs`).
pub(crate) mod jobserver;
pub(crate) mod memory_budget;
pub(crate) mod progress;
pub(crate) mod runner;
pub mod sccache;
pub(crate) mod schedule;
