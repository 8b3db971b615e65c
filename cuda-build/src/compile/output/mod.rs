//! What a build produces.
pub(crate) mod artifacts;
pub(crate) mod generated_module;
pub mod inspect;
pub(crate) mod validate;
pub(crate) mod write_error;
