//! Verdicts computed from the facts: can this driver run this toolkit's SASS,
//! JIT its PTX; is this host compiler within nvcc's limits. Each verdict says
//! why and how to fix it.
//!
//! OWNER: arch helper.
