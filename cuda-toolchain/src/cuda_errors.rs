//! CUresult / cudaError_t: numbers, names and message strings of the errors
//! that point at a toolchain, driver or environment cause (shared/cuda-facts.md
//! §7; the strings are what cuGetErrorString / cudaGetErrorString return).
//!
//! Evidence is strict: a name (`CUDA_ERROR_NO_DEVICE`, `cudaErrorNoDevice`, a
//! Rust enum form `Cuda(NoDevice)`), a specific message, or a number in a known
//! shape only (`CUDA error 100`, `code=209(`, `cuInit returned 100`,
//! `cudaHostRegister error: 35`). Generic messages ("out of memory") count only
//! with real CUDA context on the line, not the letters "cuda" in a path or a
//! crate name.

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
    /// The diagnosis code it maps to, as `diagnose::Code` spells it
    /// (diagnose reads it as a `Code` with `CudaError::code`).
    pub code_name: &'static str,
}

const fn e(
    num: u32,
    driver: Option<&'static str>,
    runtime: Option<&'static str>,
    messages: &'static [&'static str],
    generic_message: bool,
    code_name: &'static str,
) -> CudaError {
    CudaError {
        num,
        driver,
        runtime,
        messages,
        generic_message,
        code_name,
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
        false,
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

/// Finds the CUDA errors named on one line (by CUresult/cudaError name, a
/// Rust enum form, a message string, or a number in a known shape), each once.
/// The flag is true for errors found only by their number.
pub(crate) fn find_in_line(line: &str, out: &mut Vec<(&'static CudaError, bool)>) {
    // cuda-build's own error lines quote other tools (`exit status: 2`): only
    // names and messages count there, never numbers.
    let own_error = line.trim_start().starts_with("error[");
    let context = mentions_cuda(line);
    for prefix in ["CUDA_ERROR_", "cudaError"] {
        for word in words_with_prefix(line, prefix) {
            if let Some(err) = by_name(word) {
                push(out, err, false);
            }
        }
    }
    // Rust enum forms: `Cuda(NoBinaryForGpu)`, `CudaError::NoBinaryForGpu`.
    for wrapper in ENUM_WRAPPERS {
        let mut from = 0;
        while let Some(p) = line[from..].find(wrapper) {
            let at = from + p + wrapper.len();
            let word: &str = ident_at(line, at);
            if let Some(err) = ERRORS
                .iter()
                .find(|e| e.enum_name().as_deref() == Some(word))
            {
                push(out, err, false);
            }
            from = at;
        }
    }
    // A distinctive enum name on its own (`Error: InvalidPtx`, cust's Debug form).
    let (names, automaton) = loose_enum_names();
    for m in automaton.find_iter(line) {
        let (_, err) = names[m.pattern().as_usize()];
        let ident = |b: Option<&u8>| b.is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_');
        let b = line.as_bytes();
        let before = m.start().checked_sub(1).and_then(|i| b.get(i));
        if !ident(before) && !ident(b.get(m.end())) {
            push(out, err, false);
        }
    }
    for m in message_regex().find_iter(line) {
        if let Some(err) = ERRORS.iter().find(|e| e.messages.contains(&m.as_str())) {
            if !err.generic_message || context {
                push(out, err, false);
            }
        }
    }
    if out.is_empty() && !own_error {
        if let Some(err) = error_number(line).and_then(by_number) {
            push(out, err, true);
        }
    }
}

/// What a Rust wrapper writes before a CUDA error's enum name.
const ENUM_WRAPPERS: &[&str] = &[
    "Cuda(",
    "DriverError(",
    "CudaError::",
    "CudaError(",
    "CUresult::",
    "cudaError_enum::",
];

impl CudaError {
    /// The name a Rust enum gives it: CUDA_ERROR_NO_BINARY_FOR_GPU → NoBinaryForGpu.
    pub fn enum_name(&self) -> Option<String> {
        let name = self.driver?.strip_prefix("CUDA_ERROR_")?;
        Some(
            name.split('_')
                .map(|w| {
                    let mut c = w.chars();
                    c.next().map_or_else(String::new, |f| {
                        f.to_string() + &c.as_str().to_ascii_lowercase()
                    })
                })
                .collect(),
        )
    }
}

/// Enum names too common in other libraries' errors to count without a CUDA
/// wrapper (`kind: NotFound` is an io::Error).
const COMMON_ENUM_NAMES: &[&str] = &[
    "OutOfMemory",
    "NotInitialized",
    "NoDevice",
    "InvalidDevice",
    "NotFound",
    "Unknown",
    "LaunchFailed",
    "InvalidImage",
];

/// The enum names distinctive enough to count on their own, with their
/// error, and an automaton that finds them in one pass.
type EnumNames = (
    Vec<(&'static str, &'static CudaError)>,
    aho_corasick::AhoCorasick,
);

fn loose_enum_names() -> &'static EnumNames {
    static NAMES: std::sync::OnceLock<EnumNames> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        let names: Vec<(&'static str, &'static CudaError)> = ERRORS
            .iter()
            .filter_map(|e| {
                let name = e.enum_name()?;
                if COMMON_ENUM_NAMES.contains(&name.as_str()) {
                    return None;
                }
                // Leaked once: the table is static and small.
                Some((&*Box::leak(name.into_boxed_str()), e))
            })
            .collect();
        // A few dozen plain identifiers: building cannot fail.
        let automaton = aho_corasick::AhoCorasick::new(names.iter().map(|(n, _)| n))
            .expect("enum names form an automaton");
        (names, automaton)
    })
}

/// The identifier that starts at byte `at`.
fn ident_at(line: &str, at: usize) -> &str {
    let rest = &line[at.min(line.len())..];
    let n = rest
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    &rest[..n]
}

/// Whole identifiers that start with `prefix` (not inside a longer word).
fn words_with_prefix<'a>(line: &'a str, prefix: &'a str) -> impl Iterator<Item = &'a str> {
    let mut from = 0;
    std::iter::from_fn(move || loop {
        let pos = from + line.get(from..)?.find(prefix)?;
        let word = ident_at(line, pos);
        from = pos + word.len().max(1);
        let before = line[..pos].bytes().next_back();
        if !before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Some(word);
        }
    })
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

/// The literal texts that can start CUDA-error evidence on a line: the names,
/// the enum wrappers, the messages and the numeric shapes' keywords. The
/// scanner's prefilter takes them from here, so the table and the prefilter
/// cannot drift apart.
pub(crate) fn trigger_literals() -> &'static [&'static str] {
    static LITS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    LITS.get_or_init(|| {
        let mut v: Vec<&'static str> = vec!["CUDA_ERROR_", "cudaError", "CUresult"];
        v.extend(ENUM_WRAPPERS);
        v.extend(ERRORS.iter().flat_map(|e| e.messages.iter().copied()));
        v.extend(NUMBER_KEYS);
        v.extend(loose_enum_names().0.iter().map(|(name, _)| *name));
        v
    })
}

/// Keywords of the numeric shapes (`CUDA error 2`, `code=209(`, a driver or
/// runtime call name before `returned`/`failed`/`error`).
const NUMBER_KEYS: &[&str] = &[
    "CUDA error",
    "CUDA Error",
    "cuda error",
    "CUDA ERROR",
    "cuda runtime error",
    "code=",
    "cudaSuccess (",
    "cuInit",
    "cuDevice",
    "cuCtx",
    "cuModule",
    "cuLaunch",
    "cuMem",
    "cuStream",
    "cuEvent",
    "cuLink",
    "cuFunc",
    "cuGraph",
    "cudaMalloc",
    "cudaMemcpy",
    "cudaMemset",
    "cudaFree",
    "cudaGetDevice",
    "cudaSetDevice",
    "cudaDevice",
    "cudaHost",
    "cudaStream",
    "cudaEvent",
    "cudaLaunch",
    "cudaFunc",
    "cudaGraph",
    "cudaGetLastError",
    "cudaPeekAtLastError",
    "cudaRuntimeGetVersion",
    "cudaDriverGetVersion",
];

fn push(out: &mut Vec<(&'static CudaError, bool)>, err: &'static CudaError, by_number: bool) {
    if !out.iter().any(|(e, _)| e.num == err.num) {
        out.push((err, by_number));
    }
}

/// Whether a line talks about CUDA itself, so a generic message ("out of
/// memory", "unknown error") is CUDA's: the word CUDA on its own (not inside
/// a path, a crate or package name like `cudarc`, `candle-cuda`,
/// `/usr/local/cuda/lib64`), a driver or runtime call, or a CUDA error type.
pub(crate) fn mentions_cuda(line: &str) -> bool {
    if [
        "CUresult",
        "CUDA_ERROR_",
        "cudaError",
        "DriverError(",
        "Cuda(",
        "CudaError",
    ]
    .iter()
    .any(|k| line.contains(k))
    {
        return true;
    }
    let b = line.as_bytes();
    let mut i = 0;
    while i + 4 <= b.len() {
        if b[i..i + 4].eq_ignore_ascii_case(b"cuda") {
            let before = i.checked_sub(1).map(|j| b[j]);
            let after = b.get(i + 4).copied();
            let path_char = |c: u8| matches!(c, b'/' | b'\\' | b'-' | b'_' | b'.');
            let word_before = before.is_some_and(|c| c.is_ascii_alphanumeric() || path_char(c));
            // `cudaMalloc`: a runtime call; `cudarc`, `cuda-12`, `cuda/`: not CUDA context.
            let call = after.is_some_and(|c| c.is_ascii_uppercase()) && &b[i..i + 4] == b"cuda";
            let word_after = after.is_some_and(|c| c.is_ascii_alphanumeric() || path_char(c));
            if !word_before && (call || !word_after) {
                return true;
            }
            i += 4;
        } else {
            i += 1;
        }
    }
    // Driver API calls: cuInit, cuMemAlloc, cuModuleLoadData, ...
    [
        "cuInit", "cuDevice", "cuCtx", "cuModule", "cuLaunch", "cuMem", "cuStream", "cuLink",
    ]
    .iter()
    .any(|k| line.contains(k))
}

fn number_regex() -> &'static regex::Regex {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(
            r"(?x)
            \b[Cc][Uu][Dd][Aa][\ _][Ee][Rr][Rr][Oo][Rr](?:\s+code)?[\s:\#=(]{0,3}(?P<a>\d{1,4})
          | \bcuda\ runtime\ error\ \((?P<b>\d{1,4})\)
          | \bcode=(?P<c>\d{1,4})\(
          | \bCUresult[\s:=(]{1,3}(?P<d>\d{1,4})
          | \bcudaSuccess\ \((?P<e>\d{1,4})\ vs\.
          | \bcu(?:da)?[A-Z][A-Za-z0-9_]*(?:\([^()]{0,120}\))?\s*
              (?:returned|failed(?:\s+with)?(?:\s+error)?(?:\s+code)?|error(?:\s+code)?|=|->)
              \s*[:=]?\s*[(\#]?(?P<f>\d{1,4})",
        )
        .expect("the CUDA error number shapes form a valid regex")
    })
}

/// A number in one of the known shapes of a CUDA error report: `CUDA error
/// 209`, `cuda runtime error (2)`, `code=209(`, `CUresult 222`, glog's
/// `error == cudaSuccess (35 vs. 0)`, or a driver/runtime call beside it
/// (`cuInit returned 100`, `cuModuleLoadData failed: 222`,
/// `cudaHostRegister error: 35`). Never a bare number near "status", a path's
/// line number, or a version (`CUDA error 12.2` is not error 12).
fn error_number(line: &str) -> Option<u32> {
    for caps in number_regex().captures_iter(line) {
        let Some(m) = ["a", "b", "c", "d", "e", "f"]
            .iter()
            .find_map(|n| caps.name(n))
        else {
            continue;
        };
        let next = line[m.end()..].chars().next();
        if matches!(next, Some(c) if c.is_ascii_alphanumeric() || c == '.' || c == '_') {
            continue;
        }
        if let Ok(n) = m.as_str().parse() {
            return Some(n);
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
        assert_eq!(find("cudaHostRegister error: 35"), vec![(35, true)]);
        assert_eq!(
            find("cudaRuntimeGetVersion() failed with error #35"),
            vec![(35, true)]
        );
        assert_eq!(find("Error: InvalidPtx"), vec![(218, false)]);
        assert_eq!(
            find("cuda runtime error (2) : out of memory"),
            vec![(2, false)]
        );
        assert_eq!(find("Error: Cuda(NoBinaryForGpu)"), vec![(209, false)]);
        // Not CUDA evidence: exit statuses, io::Error codes, paths, crate names.
        assert!(find("error[nvcc-failed]: nvcc failed (exit status: 2)").is_empty());
        assert!(find("`nvidia-smi` failed: Os { code: 2, kind: NotFound }").is_empty());
        assert!(find("/usr/local/cuda/include/x.h:2: out of memory").is_empty());
        assert!(find("cudarc panicked: out of memory").is_empty());
        assert!(find("candle-cuda: unknown error").is_empty());
        assert!(find("status 2 after cuda build").is_empty());
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
