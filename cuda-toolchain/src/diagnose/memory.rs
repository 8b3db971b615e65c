//! Out of memory reported as another error: an allocation call that fails
//! with `invalid argument` or `unknown error` (allocators that check the
//! size against the free memory first, virtual-memory APIs), and the math
//! libraries' allocation statuses (`library_status.rs`). A hint below 0.5:
//! a bad size reads the same.

use super::codes::Code;
use super::scan::{Fact, LineCx};

/// Calls and words that say the failing call was an allocation.
const ALLOCATION: &[&str] = &[
    "cudaMalloc",
    "cuMemAlloc",
    "cuMemCreate",
    "cuMemMap",
    "cuMemSetAccess",
    "cuMemAddressReserve",
    "cudaMallocAsync",
    "cudaMallocManaged",
    "cudaMallocHost",
    "alloc_zeros",
    "allocate",
    "allocation",
    "Allocation",
    "Allocate",
    "llocating",
];

/// Generic errors an allocation reports instead of out-of-memory.
const GENERIC: &[&str] = &[
    "invalid argument",
    "CUDA_ERROR_INVALID_VALUE",
    "cudaErrorInvalidValue",
    "InvalidValue",
    "unknown error",
    "CUDA_ERROR_UNKNOWN",
];

/// How far after an allocation line a generic error still counts as its.
const NEAR: usize = 2048;

pub(crate) fn extract(cx: &mut LineCx) {
    let l = cx.line;
    let allocation = ALLOCATION.iter().any(|a| l.contains(a));
    if cx.gave(Code::OutOfMemory) || l.contains("out of memory") || l.contains("OUT_OF_MEMORY") {
        return;
    }
    let Some(err) = GENERIC.iter().find(|g| l.contains(**g)) else {
        if allocation {
            cx.scan.allocating = Some(cx.offset() + l.len());
        }
        return;
    };
    // The allocation on this line, or a line just before it.
    let near = cx
        .scan
        .allocating
        .is_some_and(|end| cx.offset().saturating_sub(end) <= NEAR);
    if !(allocation || near) {
        return;
    }
    let note = if err.contains("nknown") || err.contains("UNKNOWN") {
        "An allocation call failed with `unknown error`: usually the request did not fit in the GPU's free memory; a broken driver state reads the same. `nvidia-smi` shows the memory in use."
    } else {
        "An allocation call failed with `invalid argument`: usually a request larger than the GPU's free (or total) memory; a size of 0 or beyond the API's limit reads the same. `nvidia-smi` shows the memory in use; retry with a smaller size."
    };
    cx.hit_as(Code::OutOfMemory, Fact::Note(note), 0.45);
}
