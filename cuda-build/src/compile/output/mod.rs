//! What a build produces, below everything else: the public result types
//! (`artifacts.rs`), the generated Rust module's text (`generated_module.rs`),
//! the structural checks an output passes before it is used (`validate.rs`),
//! the reader of kernel images (`inspect.rs`, public), and the error for a
//! failed write (`write_error.rs`).
pub(crate) mod artifacts;
pub(crate) mod generated_module;
pub mod inspect;
pub mod timings;
pub(crate) mod validate;
pub(crate) mod write_error;
