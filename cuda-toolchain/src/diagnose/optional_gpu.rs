//! Frameworks that report a missing CUDA library as a notice and go on
//! without the GPU: TensorFlow prints `Could not load dynamic library
//! 'libcudart.so.11.0'` and `kernel driver does not appear to be running on
//! this host` on any machine without a CUDA setup, then `Ignore above cudart
//! dlerror if you do not have a GPU set up on your machine`, and runs on the
//! CPU. Those lines are the failure only when the program was meant to use
//! the GPU, which the log does not say: with TensorFlow's own "ignore" notice
//! in the log, its library and driver lines become hints below 0.5 that name
//! the question.

use super::codes::Code;
use super::scan::{Hit, LineCx};
use super::view::{push_unique, Finding, View};
use super::Diagnosis;

/// TensorFlow's and XLA's words for "no GPU here is fine".
const OPTIONAL: &[&str] = &[
    "Ignore above cudart dlerror if you do not have a GPU set up",
    "Ignore above cudart dlerror if you do not have a GPU",
];

/// Literals that trigger [`context`].
pub(crate) const TRIGGERS: &[&str] = &["Ignore above cudart dlerror"];

/// Context: the log carries the framework's "GPU optional" notice.
pub(crate) fn context(cx: &mut LineCx) {
    if OPTIONAL.iter().any(|w| cx.line.contains(w)) {
        cx.scan.gpu_optional = true;
    }
}

/// The codes a framework's notices give for a machine without CUDA.
const NOTICE_CODES: &[Code] = &[
    Code::CudaRuntimeLibNotFound,
    Code::LibcudaNotFound,
    Code::DriverNotLoaded,
    Code::CudaUnknownError,
    Code::CudaInitFailed,
    Code::NoDeviceVisible,
];

/// A glog-style notice line (`W tensorflow/.../dso_loader.cc:60] ...`,
/// `I tensorflow/.../cuda_diagnostics.cc:156] ...`): level W or I, a C++
/// source location.
fn notice_line(line: &str) -> bool {
    let level = [": W ", ": I ", "] W ", "] I "]
        .iter()
        .any(|p| line.contains(p))
        || line.starts_with("W ")
        || line.starts_with("I ")
        || line.starts_with("W0")
        || line.starts_with("I0");
    level && line.contains(".cc:")
}

/// In a log with the framework's "GPU optional" notice, its own notice lines
/// about CUDA libraries and the driver are hints.
pub(super) fn resolve(hit: &Hit, view: &View) -> Option<(Code, f32)> {
    (view.scan.gpu_optional
        && NOTICE_CODES.contains(&hit.code)
        && notice_line(&hit.evidence)
        && hit.confidence >= 0.45)
        .then_some((hit.code, 0.45))
}

/// The question that tells a CPU-only run from a GPU setup that failed.
const QUESTION: &str = "TensorFlow prints these lines on any machine without a usable CUDA setup and goes on on the CPU: they are the failure only if this program should use the GPU. `nvidia-smi` shows whether there is an NVIDIA GPU and driver, and `python -c \"import tensorflow as tf; print(tf.config.list_physical_devices('GPU'))\"` whether TensorFlow can use it.";

/// A finding whose lines are all such notices names the question first.
pub(super) fn annotate(f: &Finding, view: &View, d: &mut Diagnosis) {
    if view.scan.gpu_optional
        && NOTICE_CODES.contains(&f.code)
        && !f.evidence.is_empty()
        && f.evidence.iter().all(|e| notice_line(e))
    {
        push_unique(&mut d.alternatives, QUESTION.to_string());
    }
}
