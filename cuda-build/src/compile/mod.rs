//! Compiling .cu kernels: the `Build` builder for build.rs, parallel under
//! cargo's jobserver, incremental, cached, with a generated Rust module.
//!
//! OWNER: compile helper.
