//! Status codes of CUDA's libraries (cuBLAS, cuDNN, cuFFT, cuSOLVER,
//! cuSPARSE, cuRAND, NVRTC) and what each means for the GPU, the data type
//! and the environment. The names are unique identifiers, so a name on a
//! line is evidence in any wrapper (`CublasError(CUBLAS_STATUS_NOT_SUPPORTED)`,
//! PyTorch's `CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling ...`);
//! source code that names them (`case CUBLAS_STATUS_...:`) is not.

use super::codes::Code;
use super::scan::{Fact, LineCx};
use super::view::{push_unique, Finding, View};
use super::Diagnosis;

/// One library status and the cause it points at.
pub(crate) struct Status {
    pub name: &'static str,
    pub code: Code,
    /// How sure the status alone makes us: below 0.5 where it has several
    /// causes and the log must say which.
    pub confidence: f32,
    pub note: &'static str,
}

const fn s(name: &'static str, code: Code, confidence: f32, note: &'static str) -> Status {
    Status {
        name,
        code,
        confidence,
        note,
    }
}

const OOM: Code = Code::OutOfMemory;
const OP: Code = Code::LibraryOpUnsupported;
const IMAGE: Code = Code::NoKernelImageForDevice;

/// The table. Statuses that mean "bad argument" (INVALID_VALUE) or
/// "compilation error in your source" (NVRTC_ERROR_COMPILATION) are left
/// out: they are the program's, not the machine's.
pub(crate) const STATUSES: &[Status] = &[
    s("CUBLAS_STATUS_NOT_INITIALIZED", OOM, 0.45, "cuBLAS could not create its handle: usually the GPU had no memory left for cuBLAS's workspace (held by this or another process); also an earlier CUDA failure, or cuBLAS and CUDA libraries of different releases."),
    s("CUBLAS_STATUS_ALLOC_FAILED", OOM, 0.8, "cuBLAS could not allocate its workspace: the GPU is out of memory."),
    s("CUBLAS_STATUS_ARCH_MISMATCH", OP, 0.8, "cuBLAS needs a feature this GPU lacks (the data type or tensor cores of a newer architecture)."),
    s("CUBLAS_STATUS_NOT_SUPPORTED", OP, 0.7, "cuBLAS does not support this call here: the data type, layout or size combination, on this GPU or with this cuBLAS release."),
    s("CUBLAS_STATUS_EXECUTION_FAILED", IMAGE, 0.4, "A cuBLAS kernel failed to launch: most often this cuBLAS has no kernel for the GPU (a library older than the GPU, e.g. a CUDA 11 build on an RTX 50xx), or an earlier error left the context broken."),
    s("CUBLAS_STATUS_INTERNAL_ERROR", OOM, 0.35, "cuBLAS failed inside: often an allocation it could not make (out of memory), or an earlier kernel fault (rerun with CUDA_LAUNCH_BLOCKING=1 to see the first error)."),
    s("CUDNN_STATUS_NOT_INITIALIZED", OOM, 0.4, "cuDNN could not initialise: usually no GPU memory left for its handle, or a cuDNN built for another CUDA major version."),
    s("CUDNN_STATUS_ALLOC_FAILED", OOM, 0.8, "cuDNN could not allocate memory: the GPU is out of memory."),
    s("CUDNN_STATUS_ARCH_MISMATCH", OP, 0.8, "This cuDNN release does not support the GPU's architecture (a GPU too old for it, or too new)."),
    s("CUDNN_STATUS_NOT_SUPPORTED", OP, 0.65, "cuDNN has no implementation for this operation's data type, layout or sizes on this GPU."),
    s("CUDNN_STATUS_EXECUTION_FAILED", IMAGE, 0.35, "A cuDNN kernel failed: a cuDNN without kernels for this GPU, or an earlier fault."),
    s("CUDNN_STATUS_INTERNAL_ERROR", OOM, 0.35, "cuDNN failed inside: often out of memory for its workspace, or an earlier fault."),
    s("CUFFT_ALLOC_FAILED", OOM, 0.8, "cuFFT could not allocate its plan's memory: the GPU is out of memory."),
    s("CUFFT_NOT_SUPPORTED", OP, 0.6, "cuFFT does not support this transform's size or type here."),
    s("CUFFT_INTERNAL_ERROR", IMAGE, 0.35, "cuFFT failed inside: often a cuFFT older than the GPU (CUDA 11.7's cuFFT on sm_89), or no memory for the plan."),
    s("CUFFT_EXEC_FAILED", IMAGE, 0.35, "A cuFFT kernel failed to run: a cuFFT without kernels for this GPU, or an earlier fault."),
    s("CUSOLVER_STATUS_ALLOC_FAILED", OOM, 0.8, "cuSOLVER could not allocate memory: the GPU is out of memory."),
    s("CUSOLVER_STATUS_ARCH_MISMATCH", OP, 0.8, "cuSOLVER needs a feature this GPU lacks."),
    s("CUSOLVER_STATUS_NOT_SUPPORTED", OP, 0.6, "cuSOLVER does not support this call's types or sizes here."),
    s("CUSOLVER_STATUS_EXECUTION_FAILED", IMAGE, 0.35, "A cuSOLVER kernel failed to run: a cuSOLVER without kernels for this GPU, or an earlier fault."),
    s("CUSPARSE_STATUS_ALLOC_FAILED", OOM, 0.8, "cuSPARSE could not allocate memory: the GPU is out of memory."),
    s("CUSPARSE_STATUS_ARCH_MISMATCH", OP, 0.8, "cuSPARSE needs a feature this GPU lacks."),
    s("CUSPARSE_STATUS_NOT_SUPPORTED", OP, 0.6, "cuSPARSE does not support this call's types or formats here."),
    s("CURAND_STATUS_ALLOCATION_FAILED", OOM, 0.8, "cuRAND could not allocate memory: the GPU is out of memory."),
    s("CURAND_STATUS_ARCH_MISMATCH", OP, 0.8, "cuRAND needs a feature this GPU lacks."),
    s("CURAND_STATUS_DOUBLE_PRECISION_REQUIRED", OP, 0.7, "cuRAND asked for double precision on a GPU without it."),
    s("NVRTC_ERROR_BUILTIN_OPERATION_FAILURE", Code::CudaRuntimeLibNotFound, 0.7, "NVRTC could not load its builtins library (libnvrtc-builtins.so / nvrtc-builtins64_*.dll), which must sit beside libnvrtc or on the loader's path, of the same release."),
];

/// The prefilter's literals: every status name.
pub(crate) fn trigger_literals() -> &'static [&'static str] {
    static LITS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    LITS.get_or_init(|| STATUSES.iter().map(|s| s.name).collect())
}

/// Source code naming a status (a switch over them, a comparison), not a
/// log reporting one.
fn looks_like_source(line: &str) -> bool {
    let l = line.trim_start_matches(['+', '-', ' ']);
    l.starts_with("case ")
        || l.starts_with("#define")
        || l.starts_with("//")
        || l.contains("return \"")
        || l.contains(" == ")
        || l.contains(" != ")
}

pub(crate) fn extract(cx: &mut LineCx) {
    if looks_like_source(cx.line) {
        return;
    }
    for st in STATUSES {
        let Some(p) = cx.line.find(st.name) else {
            continue;
        };
        // A whole identifier: CUBLAS_STATUS_NOT_SUPPORTED, not ..._SUPPORTED_X.
        let after = cx.line[p + st.name.len()..].chars().next();
        if after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        cx.hit_as(st.code, Fact::Symbol(st.name.to_string()), st.confidence);
        cx.hit_as(st.code, Fact::Note(st.note), st.confidence);
        if st.name == "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE" {
            cx.hit_as(
                st.code,
                Fact::Library {
                    name: "libnvrtc-builtins.so".into(),
                    link_time: false,
                },
                st.confidence,
            );
        }
    }
}

/// The data type a call names (cuBLAS's CUDA_R_16BF, a tensor's dtype).
fn dtype_in(lines: &[String]) -> Option<(&'static str, &'static str)> {
    let text = lines.join(" ");
    [
        ("CUDA_R_16BF", "bf16"),
        ("bf16", "bf16"),
        ("bfloat16", "bf16"),
        ("CUDA_R_8F", "fp8"),
        ("fp8", "fp8"),
        ("tf32", "tf32"),
        ("CUDA_R_16F", "fp16"),
        ("f16", "fp16"),
        ("half", "fp16"),
    ]
    .iter()
    .find(|(k, _)| text.contains(k))
    .map(|(_, t)| {
        (
            *t,
            match *t {
                "bf16" | "tf32" => "sm_80",
                "fp8" => "sm_89",
                _ => "sm_70 (tensor cores; sm_53 for arithmetic)",
            },
        )
    })
}

/// `library-op-unsupported`.
pub(super) fn explain(f: &Finding, view: &View, d: &mut Diagnosis) {
    let status = f.facts.iter().find_map(|x| match x {
        Fact::Symbol(s) => Some(s.as_str()),
        _ => None,
    });
    let lib = status
        .and_then(|s| s.split('_').next())
        .map_or("A CUDA math library", |p| match p {
            "CUBLAS" => "cuBLAS",
            "CUDNN" => "cuDNN",
            "CUFFT" => "cuFFT",
            "CUSOLVER" => "cuSOLVER",
            "CUSPARSE" => "cuSPARSE",
            "CURAND" => "cuRAND",
            _ => "A CUDA math library",
        });
    d.cause = format!(
        "{lib} refused the call{}: this GPU, data type or {lib} release does not support it.",
        status.map_or_else(String::new, |s| format!(" with {s}"))
    );
    let gpus = view.gpu_list();
    if let Some((dtype, needs)) = dtype_in(&f.evidence) {
        d.fix.push(format!("the call is in {dtype}, which needs {needs}: on an older GPU run it in f32 (or f16 below sm_80)"));
    } else {
        d.fix.push("check the call's data type against the GPU: bf16 and tf32 need sm_80, fp8 sm_89, fp16 tensor cores sm_70; use f32 on older GPUs".into());
    }
    d.fix.push(format!(
        "compare the GPU (`nvidia-smi --query-gpu=name,compute_cap --format=csv`{}) with what the {lib} release supports; a GPU newer than the library needs a newer one (CUDA 12.8+ for Blackwell)",
        if gpus.is_empty() { String::new() } else { format!("; here: {gpus}") }
    ));
    d.fix.push("if the GPU and type are supported, the shape or layout is not: make the tensors contiguous, or try another algorithm or size".into());
    push_unique(
        &mut d.alternatives,
        "A CUDA translation layer on a non-NVIDIA GPU (ZLUDA) reports NOT_SUPPORTED for what it cannot map to that GPU.".into(),
    );
    push_unique(
        &mut d.alternatives,
        "arch-feature-needs-higher-target: the same limit met at compile time, in your own kernels.".into(),
    );
}
