//! Running nvcc: how one call starts (`runner.rs`: the wrapper, the child's
//! environment, the deadline, errors that carry the command), sccache's rules
//! (`sccache.rs`), how many run at once (`jobserver.rs`: cargo's jobserver),
//! and the progress events `cargo cuda build` shows (`progress.rs`).
pub(crate) mod jobserver;
pub(crate) mod progress;
pub(crate) mod runner;
pub mod sccache;
