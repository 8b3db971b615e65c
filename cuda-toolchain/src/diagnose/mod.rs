//! The diagnosis engine: from a log (and optionally the probed machine) to
//! causes and fixes, each with a stable code.
//!
//! ```
//! use cuda_toolchain::diagnose::{diagnose, render, Context};
//! let log = "nvcc fatal   : Unsupported gpu architecture 'sm_70'\n";
//! let found = diagnose(log, &Context::default());
//! assert_eq!(found[0].code, "arch-dropped-by-nvcc");
//! assert!(render(&found[0]).contains("help:"));
//! ```
//!
//! The engine reads text in two passes, both linear in its size: `scan`
//! finds the lines that matter with one literal automaton and pulls facts
//! out of them; `explain` groups them by code and computes causes and fixes
//! from `crate::facts` and the [`Context`] (what was detected on this machine).
//! Every code is documented in [`codes`].

mod build_oom;
pub mod codes;
mod cuda_as_cpp;
mod cuda_error_codes;
mod cxx_standard;
mod defaults;
mod driver_state;
mod explain;
mod fetch;
mod fp_types;
mod frameworks;
mod jit_warnings;
mod kernel_limits;
mod library_status;
mod link_pic;
mod math_constants;
mod memory;
mod message_variants;
mod optional_gpu;
mod ptx_load;
mod render;
mod rules;
mod scan;
mod toolkit_paths;
mod view;
mod windows_loader;
mod words;

pub use codes::Code;
pub use render::render;

use crate::probe::ProbeReport;
use crate::toolkit::Toolkit;

/// What was detected on the machine, to make fixes concrete. Every field is
/// optional: without them, fixes are generic.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// Toolkits found by discovery (`Discovery::candidates`).
    pub toolkits: Vec<Toolkit>,
    /// Index into `toolkits` of the one that ran (`Discovery::selected`).
    pub selected: Option<usize>,
    /// The driver, GPUs and platform (`probe::probe`).
    pub probe: Option<ProbeReport>,
}

/// Explains a log: build output, a cargo error, a panic message, a program's
/// stderr. Returns the diagnoses found, the most likely first; empty when
/// nothing is recognised. Linear in the size of `text`; never panics.
pub fn diagnose(text: &str, ctx: &Context) -> Vec<Diagnosis> {
    explain::explain(scan::scan(text), ctx)
}

/// Explains a log read from `reader` (a file, a pipe) in bounded memory:
/// a log of any size is read in pieces of 1 MiB, and what is kept between
/// them is bounded (one window around a match, the lines already seen, a
/// few dozen hits per code). Invalid UTF-8 reads as U+FFFD. Gives what
/// [`diagnose`] gives for the whole text.
pub fn diagnose_reader(
    mut reader: impl std::io::Read,
    ctx: &Context,
) -> std::io::Result<Vec<Diagnosis>> {
    let mut stream = scan::StreamScanner::default();
    let mut piece = vec![0u8; 1 << 20];
    loop {
        match reader.read(&mut piece) {
            Ok(0) => break,
            Ok(n) => stream.feed(&piece[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(explain::explain(stream.finish(), ctx))
}

/// The layer a failure shows in, in the order a CUDA program meets them:
/// `cargo cuda explain --list` groups the codes by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    /// The kernel module, libcuda, device nodes, containers' GPU access.
    Driver,
    /// Finding and running the toolkit: nvcc, its parts, the variables that name it.
    Toolkit,
    /// Compiling kernels: nvcc, the host compiler, flags, architectures, build scripts.
    Compile,
    /// Linking host and device code.
    Link,
    /// Loading libraries and modules at run time.
    Load,
    /// Kernels and API calls at run time.
    Run,
}

impl Layer {
    /// Every layer, in order.
    pub const ALL: [Layer; 6] = [
        Layer::Driver,
        Layer::Toolkit,
        Layer::Compile,
        Layer::Link,
        Layer::Load,
        Layer::Run,
    ];

    /// The kebab-case name (`driver`, `toolkit`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            Layer::Driver => "driver",
            Layer::Toolkit => "toolkit",
            Layer::Compile => "compile",
            Layer::Link => "link",
            Layer::Load => "load",
            Layer::Run => "run",
        }
    }
}

/// One explained failure.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Diagnosis {
    /// Stable code; `code.as_str()` is its kebab-case spelling.
    pub code: Code,
    /// Short title.
    pub title: String,
    /// The line(s) of input that matched.
    pub evidence: Vec<String>,
    /// The cause in one or two sentences.
    pub cause: String,
    /// Fixes, using what was detected where possible.
    pub fix: Vec<String>,
    /// The layer.
    pub layer: Layer,
    /// 0.0..=1.0; lower when the evidence is ambiguous.
    pub confidence: f32,
    /// What else it could be, and how to tell apart.
    pub alternatives: Vec<String>,
}
