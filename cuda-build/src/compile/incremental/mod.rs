//! What makes a rerun cheap: content hashes and key fields (`hash.rs`), the
//! per-OUT_DIR manifest of what each source was built from (`manifest.rs`),
//! the headers a compile read (`line_markers.rs` from nvcc's kept
//! preprocessed files, `depfile.rs` from `-MD`), and the persistent kernel
//! cache (`cache.rs`) with its Redis tier (`redis.rs`) and the status doctor
//! and info show (`cache_status.rs`). Nothing here knows the engine's stages.
pub(crate) mod cache;
pub(crate) mod cache_status;
pub(crate) mod cost;
pub(crate) mod depfile;
pub(crate) mod hash;
pub(crate) mod line_markers;
pub(crate) mod manifest;
pub(crate) mod redis;
