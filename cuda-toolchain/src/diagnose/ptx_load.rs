//! PTX that fails to load with an error that names no cause: the `cust`
//! crate's `UnknownError` (CUDA_ERROR_UNKNOWN), `Error loading PTX:
//! "unknown error"`. With an old driver and PTX from a newer toolkit this is
//! what some drivers and wrappers report instead of
//! CUDA_ERROR_UNSUPPORTED_PTX_VERSION; a hint below 0.5 with the check that
//! decides it, naming cuda-unknown-error's causes as the other candidates.

use super::codes::Code;
use super::scan::{Fact, LineCx};
use super::words::has_word;

/// The line talks about loading PTX or a module.
fn loads_ptx(lower: &str) -> bool {
    [
        "loading ptx",
        "load ptx",
        "load the ptx",
        "loading the ptx",
        "from_ptx",
        "load_ptx",
        "ptx load",
        "cumoduleloaddata",
        "module::load",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

pub(crate) fn extract(cx: &mut LineCx) {
    let l = cx.line;
    let lower = l.to_ascii_lowercase();
    let ptx = loads_ptx(&lower);
    if ptx {
        cx.scan.jit_context = true;
    }
    let unknown = lower.contains("unknown error") || has_word(l, "UnknownError");
    // A named CUDA error on the line is read by the error table instead.
    let named = l.contains("CUDA_ERROR_") || l.contains("cudaError");
    if !unknown || named {
        return;
    }
    if ptx || cx.scan.jit_context {
        cx.hit_as(
            Code::PtxTooNewForDriver,
            Fact::Note("Loading PTX failed with an error that names no cause (`unknown error`, cust's `UnknownError`). The usual cause is PTX from a newer CUDA toolkit than the driver supports; a broken driver state reads the same. Compare the driver's CUDA version (`nvidia-smi`) with the PTX's `.version` line (the toolkit that wrote it)."),
            0.45,
        );
    } else if has_word(l, "UnknownError") {
        // cust's CudaError::UnknownError is CUDA_ERROR_UNKNOWN (999); Rust
        // CUDA code meets it mostly when it loads its PTX at start-up.
        cx.hit_as(
            Code::PtxTooNewForDriver,
            Fact::Note("A CUDA wrapper (cust) reports UnknownError, CUDA_ERROR_UNKNOWN, which names no cause. Rust CUDA code meets it mostly when loading its PTX at start-up, with PTX from a newer CUDA toolkit than the driver supports; it is also cuda-unknown-error's driver states (nvidia_uvm not loaded, after suspend). Compare the driver's CUDA version (`nvidia-smi`) with the toolkit that built the PTX; `ls /dev/nvidia-uvm` for the other."),
            0.4,
        );
    }
}
