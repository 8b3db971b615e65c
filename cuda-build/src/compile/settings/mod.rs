//! What a build asks for.
pub(crate) mod builder;
pub(crate) mod cargo_profile;
pub(crate) mod cc_parity;
pub(crate) mod flag_probe;
pub(crate) mod glue;
pub(crate) mod header_deps;
pub(crate) mod host_toolchain;
pub(crate) mod layout;
pub(crate) mod sources;
pub(crate) mod spec;
