//! `cuda-install`: pinned, verified CUDA compilers from NVIDIA's wheels on a
//! package index, installed per user without root or Python; the engine of
//! `cargo cuda toolkit install`.
//!
//! - [`source`]: the [`Source`](source::Source) trait and the package index
//!   (PEP 691 JSON, PEP 503 HTML), honouring `--index-url`, UV_INDEX_URL,
//!   PIP_INDEX_URL and HTTPS_PROXY / HTTP_PROXY / NO_PROXY;
//! - [`resolve`]: `13.0` → one consistent component set;
//! - [`install`](mod@install): lock, download with sha256 checks, unpack into a
//!   staging directory, check, rename into place;
//! - [`unpack`]: wheels into one standard root (or pip's layout).
//!
//! The store's location and layout are defined once, in
//! [`cuda_toolchain::toolkit::store`], which discovery also reads: cuda-build
//! itself never touches the network.

pub mod deps;
pub mod http;
pub mod install;
pub mod resolve;
pub mod source;
pub mod unpack;

pub use install::{install, remove, Outcome, Request};
pub use resolve::Spec;
