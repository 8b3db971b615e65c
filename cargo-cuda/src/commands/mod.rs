//! The subcommands, one file each.

pub mod cargo_wrapper;
pub mod deps;
pub mod doctor;
pub mod explain;
pub mod info;
pub mod inspect;
pub mod toolkit;
