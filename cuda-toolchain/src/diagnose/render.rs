//! Human-readable text for a diagnosis, in the style of rustc and cargo.

use super::Diagnosis;
use std::fmt::Write;

/// Renders a diagnosis as text:
///
/// ```text
/// error[arch-dropped-by-nvcc]: This nvcc no longer targets the requested GPU architecture
///   --> nvcc fatal   : Unsupported gpu architecture 'sm_70'
///   = cause: nvcc 13.0 no longer targets `sm_70`: CUDA 12.9 was the last release that did.
///   = help: remove sm_70 from the arch list (CUDA_ARCHS, ...)
///   = note: it could also be: ...
///   = note: confidence 95%; `cargo cuda explain arch-dropped-by-nvcc` explains this code
/// ```
pub fn render(d: &Diagnosis) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "error[{}]: {}", d.code, d.title);
    for (i, e) in d.evidence.iter().enumerate() {
        let _ = writeln!(s, "  {} {e}", if i == 0 { "-->" } else { "   " });
    }
    let _ = writeln!(s, "  = cause: {}", d.cause);
    for f in &d.fix {
        let _ = writeln!(s, "  = help: {f}");
    }
    for a in &d.alternatives {
        let _ = writeln!(s, "  = note: it could also be: {a}");
    }
    let _ = write!(
        s,
        "  = note: confidence {:.0}%; `cargo cuda explain {}` explains this code",
        d.confidence * 100.0,
        d.code
    );
    s
}
