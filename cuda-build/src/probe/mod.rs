//! Probing the machine: the driver, every visible GPU, and the platform
//! (WSL2, containers, device nodes, stub libcuda), without needing a toolkit
//! or nvidia-smi.
//!
//! OWNER: probe helper. The types below are the shared contract.

use crate::arch::ComputeCapability;
use std::path::PathBuf;

/// Which method answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeMethod {
    /// The CUDA driver API (libcuda.so.1), in a child process or guarded thread.
    DriverApi,
    /// `nvidia-smi --query-gpu=...`.
    NvidiaSmi,
    /// The kernel module's /proc/driver/nvidia/version (driver only, no GPUs).
    ProcFs,
}

/// One visible GPU.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GpuInfo {
    /// Index as the driver numbers it (after CUDA_VISIBLE_DEVICES).
    pub index: u32,
    /// Product name, e.g. "NVIDIA H200".
    pub name: String,
    /// Its compute capability.
    pub compute_capability: ComputeCapability,
    /// Total memory in bytes, when known.
    pub total_memory: Option<u64>,
}

/// The installed driver.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DriverInfo {
    /// Kernel-module / display-driver version, e.g. "580.65.06".
    pub version: Option<String>,
    /// Highest CUDA version the driver supports, e.g. (13, 0).
    pub cuda_version: Option<(u32, u32)>,
    /// Which method answered.
    pub found_via: ProbeMethod,
}
