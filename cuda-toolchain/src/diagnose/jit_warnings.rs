//! Warnings that come before the symptom and are its cause: XLA's (JAX,
//! TensorFlow) "ptxas does not support CC 9.0" and "ptxas too old", after
//! which kernels are missing (`named symbol not found`) or fail; and XLA
//! finding no ptxas at all. A warning alone is a hint below 0.5 (XLA goes on
//! with the driver); with the symptom in the log, `explain::cross_check`
//! raises it and ranks it above the symptom.

use super::codes::Code;
use super::scan::{Fact, LineCx};

pub(crate) fn extract(cx: &mut LineCx) {
    let l = cx.line;
    if let Some(p) = l.find("ptxas does not support CC ") {
        let cc: String = l[p + 26..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        if let Some((major, minor)) = cc.split_once('.') {
            if let (Ok(a), Ok(b)) = (major.parse::<u32>(), minor.parse::<u32>()) {
                cx.hit_as(Code::PtxasTooOld, Fact::GpuArch(a * 10 + b), 0.45);
            }
        }
        cx.hit_as(
            Code::PtxasTooOld,
            Fact::Note("XLA's ptxas (from the CUDA toolkit or the nvidia-cuda-nvcc wheel it found) is older than this GPU: XLA fell back to the driver to compile its PTX, and the kernels it then loads can be missing (`named symbol not found`) or fail."),
            0.45,
        );
    } else if l.contains("ptxas too old") {
        cx.hit_as(
            Code::PtxasTooOld,
            Fact::Note("XLA found a ptxas too old for this GPU and fell back to the driver to compile; later kernel errors follow from it."),
            0.45,
        );
    } else if l.contains("No PTX compilation provider is available")
        || l.contains("Couldn't find a suitable version of ptxas")
    {
        cx.hit_as(
            Code::ToolkitIncomplete,
            Fact::Note("XLA found no usable ptxas (nor nvJitLink) to compile its kernels: install the CUDA compiler it expects (JAX: `pip install -U \"jax[cuda12]\"` brings nvidia-cuda-nvcc; or a toolkit whose bin/ptxas is on PATH)."),
            0.75,
        );
    }
}
