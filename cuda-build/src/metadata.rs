//! `[package.metadata.cuda]` in Cargo.toml. OWNER: toolkit helper.
