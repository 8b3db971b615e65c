//! The engine.
pub(crate) mod context;
pub(crate) mod exec;
pub(crate) mod job;
pub(crate) mod pool;
pub(crate) mod static_library;
pub(crate) mod work_estimate;
