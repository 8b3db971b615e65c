//! CUresult / cudaError_t: numbers, names and message strings of the errors
//! that point at a toolchain, driver or environment cause (shared/cuda-facts.md
//! §7; the strings are what cuGetErrorString / cudaGetErrorString return).

/// One CUDA error, in its driver and runtime spellings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CudaError {
    /// The numeric value (the same in CUresult and cudaError_t for these rows).
    pub num: u32,
    /// The CUresult name, if the driver API has one.
    pub driver: Option<&'static str>,
    /// The cudaError_t name, if the runtime API has one.
    pub runtime: Option<&'static str>,
    /// The message strings, most specific first.
    pub messages: &'static [&'static str],
    /// Whether the message is so generic ("out of memory") that a line must
    /// also mention CUDA before it counts.
    pub generic_message: bool,
    /// The diagnosis code it maps to.
    pub code: &'static str,
}

const fn e(
    num: u32,
    driver: Option<&'static str>,
    runtime: Option<&'static str>,
    messages: &'static [&'static str],
    generic_message: bool,
    code: &'static str,
) -> CudaError {
    CudaError {
        num,
        driver,
        runtime,
        messages,
        generic_message,
        code,
    }
}

/// The table (cuda-facts.md §7; sources S13, S14, S21).
pub(crate) const ERRORS: &[CudaError] = &[
    e(
        2,
        Some("CUDA_ERROR_OUT_OF_MEMORY"),
        Some("cudaErrorMemoryAllocation"),
        &["out of memory"],
        true,
        "out-of-memory",
    ),
    e(
        3,
        Some("CUDA_ERROR_NOT_INITIALIZED"),
        Some("cudaErrorInitializationError"),
        &["initialization error"],
        true,
        "cuda-init-failed",
    ),
    e(
        34,
        Some("CUDA_ERROR_STUB_LIBRARY"),
        Some("cudaErrorStubLibrary"),
        &["CUDA driver is a stub library"],
        false,
        "libcuda-stub",
    ),
    e(
        35,
        None,
        Some("cudaErrorInsufficientDriver"),
        &["CUDA driver version is insufficient for CUDA runtime version"],
        false,
        "driver-too-old",
    ),
    e(
        36,
        None,
        Some("cudaErrorCallRequiresNewerDriver"),
        &["API call requires a newer CUDA driver"],
        false,
        "driver-too-old",
    ),
    e(
        46,
        Some("CUDA_ERROR_DEVICE_UNAVAILABLE"),
        Some("cudaErrorDevicesUnavailable"),
        &["CUDA-capable device(s) is/are busy or unavailable"],
        false,
        "device-unavailable",
    ),
    e(
        98,
        None,
        Some("cudaErrorInvalidDeviceFunction"),
        &["invalid device function"],
        true,
        "no-kernel-image-for-device",
    ),
    e(
        100,
        Some("CUDA_ERROR_NO_DEVICE"),
        Some("cudaErrorNoDevice"),
        &[
            "no CUDA-capable device is detected",
            "no CUDA-capable devices were detected",
        ],
        false,
        "no-device-visible",
    ),
    e(
        101,
        Some("CUDA_ERROR_INVALID_DEVICE"),
        Some("cudaErrorInvalidDevice"),
        &["invalid device ordinal"],
        false,
        "invalid-device-ordinal",
    ),
    e(
        200,
        Some("CUDA_ERROR_INVALID_IMAGE"),
        Some("cudaErrorInvalidKernelImage"),
        &["device kernel image is invalid"],
        false,
        "invalid-kernel-image",
    ),
    e(
        209,
        Some("CUDA_ERROR_NO_BINARY_FOR_GPU"),
        Some("cudaErrorNoKernelImageForDevice"),
        &["no kernel image is available for execution on the device"],
        false,
        "no-kernel-image-for-device",
    ),
    e(
        218,
        Some("CUDA_ERROR_INVALID_PTX"),
        Some("cudaErrorInvalidPtx"),
        &["a PTX JIT compilation failed"],
        false,
        "ptx-jit-failed",
    ),
    e(
        221,
        Some("CUDA_ERROR_JIT_COMPILER_NOT_FOUND"),
        Some("cudaErrorJitCompilerNotFound"),
        &["PTX JIT compiler library not found"],
        false,
        "ptx-jit-compiler-missing",
    ),
    e(
        222,
        Some("CUDA_ERROR_UNSUPPORTED_PTX_VERSION"),
        Some("cudaErrorUnsupportedPtxVersion"),
        &["the provided PTX was compiled with an unsupported toolchain"],
        false,
        "ptx-too-new-for-driver",
    ),
    e(
        223,
        Some("CUDA_ERROR_JIT_COMPILATION_DISABLED"),
        Some("cudaErrorJitCompilationDisabled"),
        &["PTX JIT compilation was disabled"],
        false,
        "ptx-jit-failed",
    ),
    e(
        500,
        Some("CUDA_ERROR_NOT_FOUND"),
        Some("cudaErrorSymbolNotFound"),
        &["named symbol not found"],
        true,
        "kernel-not-found",
    ),
    e(
        700,
        Some("CUDA_ERROR_ILLEGAL_ADDRESS"),
        Some("cudaErrorIllegalAddress"),
        &["an illegal memory access was encountered"],
        false,
        "illegal-address",
    ),
    e(
        701,
        Some("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"),
        Some("cudaErrorLaunchOutOfResources"),
        &["too many resources requested for launch"],
        false,
        "launch-out-of-resources",
    ),
    e(
        716,
        Some("CUDA_ERROR_MISALIGNED_ADDRESS"),
        Some("cudaErrorMisalignedAddress"),
        &["misaligned address"],
        true,
        "illegal-address",
    ),
    e(
        719,
        Some("CUDA_ERROR_LAUNCH_FAILED"),
        Some("cudaErrorLaunchFailure"),
        &["unspecified launch failure"],
        false,
        "illegal-address",
    ),
    e(
        802,
        Some("CUDA_ERROR_SYSTEM_NOT_READY"),
        Some("cudaErrorSystemNotReady"),
        &["system not yet initialized"],
        true,
        "system-not-ready",
    ),
    e(
        803,
        Some("CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"),
        Some("cudaErrorSystemDriverMismatch"),
        &["system has unsupported display driver / cuda driver combination"],
        false,
        "driver-library-mismatch",
    ),
    e(
        804,
        Some("CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"),
        Some("cudaErrorCompatNotSupportedOnDevice"),
        &["forward compatibility was attempted on non supported HW"],
        false,
        "forward-compat-unsupported",
    ),
    e(
        999,
        Some("CUDA_ERROR_UNKNOWN"),
        Some("cudaErrorUnknown"),
        &["unknown error"],
        true,
        "cuda-unknown-error",
    ),
];

/// The error with this CUresult or cudaError_t name (exact, case-sensitive).
pub(crate) fn by_name(name: &str) -> Option<&'static CudaError> {
    ERRORS
        .iter()
        .find(|e| e.driver == Some(name) || e.runtime == Some(name))
}

/// The error with this number.
pub(crate) fn by_number(num: u32) -> Option<&'static CudaError> {
    ERRORS.iter().find(|e| e.num == num)
}

impl CudaError {
    /// The best name to show: `CUDA_ERROR_NO_BINARY_FOR_GPU (209)`.
    pub fn label(&self) -> String {
        match (self.driver, self.runtime) {
            (Some(d), _) => format!("{d} ({})", self.num),
            (None, Some(r)) => format!("{r} ({})", self.num),
            (None, None) => format!("CUDA error {}", self.num),
        }
    }
}

/// Finds the CUDA errors named on one line (by CUresult/cudaError name, by
/// message string, or by a number next to CUDA words), each once.
/// `by_number_only` is true for errors found only by their number.
pub(crate) fn find_in_line(line: &str, out: &mut Vec<(&'static CudaError, bool)>) {
    let mentions_cuda = mentions_cuda(line);
    // Names: scan identifiers that start with CUDA_ERROR_ or cudaError.
    for prefix in ["CUDA_ERROR_", "cudaError"] {
        let mut from = 0;
        while let Some(pos) = line[from..].find(prefix) {
            let start = from + pos;
            let end = start
                + line[start..]
                    .bytes()
                    .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
                    .count();
            if let Some(err) = by_name(&line[start..end]) {
                push(out, err, false);
            }
            from = end.max(start + 1);
        }
    }
    // Message strings: one pass of a literal automaton over the line.
    for m in message_regex().find_iter(line) {
        if let Some(err) = ERRORS.iter().find(|e| e.messages.contains(&m.as_str())) {
            if !err.generic_message || mentions_cuda {
                push(out, err, false);
            }
        }
    }
    if mentions_cuda && out.is_empty() {
        if let Some(num) = error_number(line) {
            if let Some(err) = by_number(num) {
                push(out, err, true);
            }
        }
    }
}

fn message_regex() -> &'static regex::Regex {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        let all: Vec<String> = ERRORS
            .iter()
            .flat_map(|e| e.messages.iter())
            .map(|m| regex::escape(m))
            .collect();
        // Only escaped literals: cannot fail.
        regex::Regex::new(&all.join("|")).expect("message literals form a valid regex")
    })
}

fn push(out: &mut Vec<(&'static CudaError, bool)>, err: &'static CudaError, by_number: bool) {
    if !out.iter().any(|(e, _)| e.num == err.num) {
        out.push((err, by_number));
    }
}

/// Whether a line talks about CUDA at all (so "out of memory" means GPU memory).
pub(crate) fn mentions_cuda(line: &str) -> bool {
    let b = line.as_bytes();
    b.windows(4).any(|w| w.eq_ignore_ascii_case(b"cuda"))
        || line.contains("CUresult")
        || line.contains("cuInit")
        || line.contains("cuModule")
        || line.contains("cuLaunch")
        || line.contains("cuMem")
        || line.contains("cuCtx")
}

/// A number that follows "error", "code", "result", "status", "returned" or
/// "failed" (`CUDA error 209`, `error code 222`, `code=209`, `returned 100`,
/// `CUresult 222`, `cuModuleLoadData failed: 222`), or glog's
/// `error == cudaSuccess (35 vs. 0)`.
fn error_number(line: &str) -> Option<u32> {
    let lower = line.to_ascii_lowercase();
    for key in [
        "error code",
        "error",
        "code",
        "result",
        "status",
        "returned",
        "failed",
        "cuda_error",
        "cudasuccess",
    ] {
        let mut from = 0;
        while let Some(pos) = lower[from..].find(key) {
            let after = from + pos + key.len();
            let rest = &lower[after..];
            let digits_start = rest
                .bytes()
                .take_while(|b| matches!(b, b' ' | b':' | b'=' | b'(' | b'[' | b'#'))
                .count();
            let digits: String = rest[digits_start..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .take(4)
                .collect();
            if !digits.is_empty() && digits_start <= 3 {
                let next = rest[digits_start + digits.len()..].chars().next();
                // "error 209" but not "error 2.5" or "error 20x".
                if !matches!(next, Some(c) if c.is_ascii_alphanumeric() || c == '.') {
                    if let Ok(n) = digits.parse() {
                        return Some(n);
                    }
                }
            }
            from = after;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(line: &str) -> Vec<(u32, bool)> {
        let mut out = Vec::new();
        find_in_line(line, &mut out);
        out.into_iter().map(|(e, n)| (e.num, n)).collect()
    }

    #[test]
    fn names_messages_and_numbers() {
        assert_eq!(
            find(
                r#"DriverError(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported toolchain.")"#
            ),
            vec![(222, false)]
        );
        assert_eq!(
            find("code=209(cudaErrorNoKernelImageForDevice)"),
            vec![(209, false)]
        );
        assert_eq!(find("CUDA error 218 while loading"), vec![(218, true)]);
        assert_eq!(find("cuInit returned 100"), vec![(100, true)]);
        assert_eq!(find("CUresult 218"), vec![(218, true)]);
        assert_eq!(find("cuModuleLoadData failed: 222"), vec![(222, true)]);
        assert_eq!(
            find("Check failed: error == cudaSuccess (35 vs. 0)"),
            vec![(35, true)]
        );
        // Generic strings count only next to CUDA words.
        assert!(find("java.lang.OutOfMemoryError: out of memory").is_empty());
        assert_eq!(
            find("CUDA out of memory. Tried to allocate 2.00 GiB"),
            vec![(2, false)]
        );
        // Numbers without CUDA context or in versions are not errors.
        assert!(find("error 209 in parser").is_empty());
        assert!(find("CUDA version 12.2").is_empty());
    }

    #[test]
    fn names_are_unique() {
        for a in ERRORS {
            assert_eq!(by_number(a.num).unwrap(), a);
            for name in [a.driver, a.runtime].into_iter().flatten() {
                assert_eq!(by_name(name).unwrap().num, a.num);
            }
        }
    }
}
