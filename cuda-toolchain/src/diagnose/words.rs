//! Small text tests the rules and the per-topic extractors share: whole
//! words on a line, and which code a missing library's file name points to.

use super::codes::Code;

/// Whether `word` occurs in `line` as a whole word.
pub(crate) fn has_word(line: &str, word: &str) -> bool {
    let b = line.as_bytes();
    line.match_indices(word).any(|(p, _)| {
        let before = p.checked_sub(1).map(|i| b[i]);
        let after = b.get(p + word.len()).copied();
        !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
            && !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
    })
}

/// The code of a library that could not be found, by its name.
pub(crate) fn lib_code(lib: &str) -> Option<Code> {
    let base = lib.rsplit(['/', '\\']).next().unwrap_or(lib);
    let base = base.trim_start_matches("lib");
    if base.starts_with("cuda.so")
        || base == "cuda"
        || base.starts_with("cuda.dll")
        || base.starts_with("nvcuda")
    {
        Some(Code::LibcudaNotFound)
    } else if base.starts_with("nvidia-ml") || base.starts_with("nvml") {
        Some(Code::NvmlNotFound)
    } else if base.starts_with("nvidia-ptxjitcompiler") {
        Some(Code::PtxJitCompilerMissing)
    } else if [
        "cudart",
        "cublas",
        "cublasLt",
        "nvrtc",
        "nvvm",
        "cufft",
        "curand",
        "cusparse",
        "cusolver",
        "nvJitLink",
        "nvToolsExt",
        "cudnn",
        "nccl",
        "npp",
        "nvjpeg",
        "cudadevrt",
        "culibos",
        "cupti",
        "cufile",
        "cutensor",
        "nvptxcompiler",
        "nvfatbin",
    ]
    .iter()
    .any(|p| base.starts_with(p))
    {
        Some(Code::CudaRuntimeLibNotFound)
    } else {
        None
    }
}
