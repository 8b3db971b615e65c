//! Running nvcc.
pub(crate) mod jobserver;
pub(crate) mod progress;
pub(crate) mod runner;
pub mod sccache;
