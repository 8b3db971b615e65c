//! What makes a rerun cheap.
pub(crate) mod cache;
pub(crate) mod cache_status;
pub(crate) mod depfile;
pub(crate) mod hash;
pub(crate) mod line_markers;
pub(crate) mod manifest;
pub(crate) mod redis;
