//! Sourced compatibility facts: toolkit → minimum driver, driver → CUDA,
//! CUDA → PTX ISA, arch → first/last CUDA, CUDA → host compiler limits,
//! product name → compute capability. Sources: shared/cuda-facts.md.
//!
//! OWNER: arch helper.
