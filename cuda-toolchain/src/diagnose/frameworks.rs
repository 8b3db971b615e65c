//! Frameworks' own words for their CUDA part: "built without CUDA" in any
//! framework's wording (CPU-only builds), and setup reports that hide which
//! library is missing (bitsandbytes' "CUDA Setup failed despite GPU being
//! available").

use super::codes::Code;
use super::scan::{Fact, LineCx};

/// A framework saying its CUDA part is absent from this build.
const NOT_BUILT: &[&str] = &[
    "not compiled with cuda",
    "not built with cuda",
    "compiled without cuda",
    "built without cuda",
    "wasn't built with cuda",
    "wasn't compiled with cuda",
    "has not been built with cuda",
    "without cuda support",
    "cuda support is not enabled",
    "cuda support not enabled",
    "cuda support is disabled",
    "cuda backend is not available",
    "cuda backend not available",
    "not compiled with gpu",
    "compiled without gpu",
    "gpu support not compiled",
    "gpu support is not compiled",
    "not compiled with gpu offload support",
    "cuda-enabled jaxlib is not installed",
    "'cudaexecutionprovider' is not in available provider names",
    "cudaexecutionprovider is not available",
    "installed cpu version of paddlepaddle",
    "is not compiled with cuda",
];

/// `cuda-backend-not-built` in frameworks' own words.
pub(crate) fn not_built(cx: &mut LineCx) {
    let lower = cx.line.to_ascii_lowercase();
    if !NOT_BUILT.iter().any(|p| lower.contains(p)) {
        return;
    }
    // "Torch not compiled with CUDA enabled" and the ort/tch forms have their own rule.
    if cx.gave(Code::CudaBackendNotBuilt) {
        return;
    }
    // A build's configure step announcing it (`-- Building without CUDA`)
    // says what the build will lack, not that something failed.
    let configure = cx.line.starts_with("-- ") || lower.starts_with("building ");
    let conf = if configure { 0.4 } else { 0.8 };
    cx.hit_as(
        Code::CudaBackendNotBuilt,
        Fact::Note("The library reports that this build of it has no CUDA support (a CPU-only package or build), so nothing can run on the GPU whatever the driver and toolkit."),
        conf,
    );
}

/// bitsandbytes' setup report: the last line hides which library failed;
/// the lines before it say.
pub(crate) fn bnb_setup(cx: &mut LineCx) {
    let l = cx.line;
    if l.contains("CUDA Setup failed despite GPU being available") {
        cx.hit_as(
            Code::FrameworkLibNotFound,
            Fact::Library {
                name: "libbitsandbytes_cuda*.so".into(),
                link_time: false,
            },
            0.4,
        );
        cx.hit_as(
            Code::FrameworkLibNotFound,
            Fact::Note("bitsandbytes could not load its CUDA library. `python -m bitsandbytes` prints which part is missing: the CUDA runtime (`libcudart.so not found`: cuda-runtime-lib-not-found) or bitsandbytes' own binary for this CUDA version (an old bitsandbytes: `pip install -U bitsandbytes`)."),
            0.4,
        );
    } else if l.contains("Required library version not found") {
        let lib = l
            .split([' ', ':', '\'', '"'])
            .find(|w| w.starts_with("libbitsandbytes") && w.contains(".so"))
            .unwrap_or("libbitsandbytes_cuda*.so");
        cx.hit_as(
            Code::FrameworkLibNotFound,
            Fact::Library {
                name: lib.to_string(),
                link_time: false,
            },
            0.75,
        );
    } else if l.contains("libcudart.so not found in any environmental path") {
        cx.hit_as(
            Code::CudaRuntimeLibNotFound,
            Fact::Library {
                name: "libcudart.so".into(),
                link_time: false,
            },
            0.45,
        );
    }
}
