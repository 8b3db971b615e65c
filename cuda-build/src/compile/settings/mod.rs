//! What a build asks for, and the prepare stage that settles it.
//!
//! `builder.rs` holds [`Build`](crate::compile::Build) and its setters, with
//! cc's spellings in `cc_parity.rs` and the output layout in `layout.rs`; all
//! of them write the plain-data `Spec` (`spec.rs`). The prepare stage
//! (`prepare.rs`) settles a `Spec` once, before the engine runs: arch flags
//! (`arch_flags.rs`), the package (`package.rs`) and its header-only
//! dependencies (`header_deps.rs`), the toolkit (`toolchain.rs`), the host
//! compiler and archiver (`host_toolchain.rs`), the profile's flags
//! (`cargo_profile.rs`), a preset's flags (`presets.rs`) and the flags nvcc
//! supports (`flag_probe.rs`).
//! `sources.rs` turns file/dir/glob settings into the list of sources.
pub(crate) mod arch_flags;
pub(crate) mod builder;
pub(crate) mod cargo_profile;
pub(crate) mod cc_parity;
pub(crate) mod flag_probe;
pub(crate) mod header_deps;
pub(crate) mod host_toolchain;
pub(crate) mod layout;
pub(crate) mod package;
pub(crate) mod prepare;
pub(crate) mod presets;
pub(crate) mod sources;
pub(crate) mod spec;
pub(crate) mod toolchain;
