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
    // A CPU build's warning that it ignores GPU options (llama.cpp's `warning:
    // not compiled with GPU offload support, --gpu-layers option will be
    // ignored`) is the failure only if the GPU was wanted.
    let ignored = lower.contains("will be ignored") || lower.contains("ignoring");
    if ignored && !configure {
        cx.hit_as(
            Code::CudaBackendNotBuilt,
            Fact::Note("A CPU-only build warns that it will ignore the GPU options. That is the problem only if this program should run on the GPU (then install or build the CUDA variant of the library); if the program fails, the cause is elsewhere in the log."),
            0.45,
        );
        return;
    }
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

/// A request for CUDA answered with the list of what this build offers,
/// and CUDA not in it: argparse's `invalid choice: 'cuda' (choose from
/// 'azure', 'cpu')` (the choices come from ONNX Runtime's available
/// providers), ONNX Runtime's `Available providers: 'CPUExecutionProvider'`.
pub(crate) fn provider_choices(cx: &mut LineCx) {
    let lower = cx.line.to_ascii_lowercase();
    let (asked, offered) = if let Some(p) = lower.find("invalid choice") {
        let rest = &lower[p..];
        let Some(c) = rest.find("choose from") else {
            return;
        };
        (rest[..c].contains("cuda"), &rest[c..])
    } else if let Some(p) = lower.find("available providers") {
        // ONNX Runtime prints the list after asking for a provider it lacks.
        (lower[..p].contains("cuda"), &lower[p..])
    } else if let Some(p) = lower.find("available execution providers") {
        (lower[..p].contains("cuda"), &lower[p..])
    } else {
        return;
    };
    if !asked || offered.contains("cuda") || offered.contains("tensorrt") {
        return;
    }
    // Execution providers are what the installed library was built with;
    // any other option's choices may be the program's own list.
    let providers =
        lower.contains("provider") || offered.contains("cpu") && offered.contains("azure");
    if cx.gave(Code::CudaBackendNotBuilt) {
        return;
    }
    cx.hit_as(
        Code::CudaBackendNotBuilt,
        Fact::Note("CUDA was asked for and the list of what is available has no CUDA: the installed library (usually ONNX Runtime: the CPU package `onnxruntime`, or it installed beside `onnxruntime-gpu` and shadowing it) was built without CUDA. `python -c \"import onnxruntime as o; print(o.get_available_providers())\"` lists what it has; uninstall both packages and install only `onnxruntime-gpu`."),
        if providers { 0.8 } else { 0.45 },
    );
}

/// Phrases of a framework's "is CUDA usable" check.
const AVAILABILITY: &[&str] = &[
    "cuda_if_available",
    "is_available",
    "cuda available",
    "cuda is available",
];

/// A framework's CUDA check answering `false` with no error: tch's
/// `Cuda::is_available()` / `Device::cuda_if_available()`, PyTorch's
/// `torch.cuda.is_available()`. The answer alone cannot say why, so this is
/// a hint below 0.5 that names the usual cause (a CPU-only build of the
/// library, or its CUDA part not linked) and the checks that tell it from
/// a driver or device problem.
pub(crate) fn available_false(cx: &mut LineCx) {
    let lower = cx.line.to_ascii_lowercase();
    let Some((p, phrase)) = AVAILABILITY
        .iter()
        .filter_map(|a| lower.find(a).map(|p| (p, *a)))
        .min_by_key(|(p, _)| *p)
    else {
        return;
    };
    let rest = &lower[p + phrase.len()..];
    let next = cx.next_line();
    if !(answers_false(rest) || answers_false(&next.to_ascii_lowercase())) {
        return;
    }
    let tch = lower.contains("cuda::")
        || lower.contains("tch")
        || lower.contains("cuda_if_available")
        || lower.contains("device::");
    let note = if tch {
        "tch reports CUDA unavailable without an error. Usually the libtorch it loads is the CPU build (the automatic download is CPU-only unless TORCH_CUDA_VERSION is set), or libtorch_cuda is not linked into the binary (the linker drops it unless the build script passes `-Wl,--no-as-needed`; copy tch-rs's build.rs). Check: `ls $LIBTORCH/lib | grep torch_cuda` and `ldd target/debug/<bin> | grep torch_cuda`; if both are there, `nvidia-smi` tells whether the driver sees the GPU (driver-not-loaded, no-device-visible)."
    } else {
        "The framework reports CUDA unavailable without an error. Usually the installed package is a CPU-only build (`python -c \"import torch; print(torch.version.cuda)\"` prints None); if it names a CUDA version, `nvidia-smi` tells whether the driver sees the GPU (driver-not-loaded, no-device-visible) and whether the driver is older than that CUDA version (driver-too-old)."
    };
    cx.hit_as(
        Code::CudaBackendNotBuilt,
        Fact::Note(note),
        if tch { 0.45 } else { 0.4 },
    );
}

/// Whether text right after an availability check is its answer `false`:
/// `: false`, `() returns False`, `= false`, `> false`, `Out[2]: False`.
fn answers_false(rest: &str) -> bool {
    let mut s = rest
        .trim_start_matches(|c: char| "()`'\"*;:=>-!{}?,#/| \t".contains(c) || c.is_ascii_digit());
    for word in [
        "out[", "]:", "returns", "return", "still", "always", "is", "was", "prints", "gives", "=",
        ":", ">",
    ] {
        if let Some(t) = s.strip_prefix(word) {
            s = t.trim_start_matches(|c: char| {
                "()`'\"*;:=>-]!{}?,#/| \t".contains(c) || c.is_ascii_digit()
            });
        }
    }
    s.starts_with("false")
}

/// candle's `no cuda implementation for rms-norm` (a custom op of candle-nn
/// or candle-transformers): the crate that defines the op was built without
/// its `cuda` feature, while candle-core has it (candle's maintainer: that is
/// the usual cause). An op candle never implemented for CUDA reads the same.
pub(crate) fn no_cuda_impl(cx: &mut LineCx) {
    if !cx.line.contains("no cuda implementation for") {
        return;
    }
    cx.hit_as(
        Code::CudaBackendNotBuilt,
        Fact::Note("candle found no CUDA implementation of an op: the crate that defines it (candle-nn, candle-transformers, a custom op) was built without its `cuda` feature while candle-core has it. Enable `cuda` on every candle crate in Cargo.toml (`candle-nn = { features = [\"cuda\"] }`); if they all have it, the op has no CUDA kernel in this candle version (try a newer candle)."),
        0.6,
    );
}
