//! What nvcc needs when cl.exe is the host compiler (MSVC targets).
//!
//! - `-Xcompiler=/Zc:preprocessor` for the CUDA releases whose CCCL headers
//!   reject (13.2+) or warn about (13.1) MSVC's traditional preprocessor
//!   ([`facts::cccl_msvc_preprocessor`]); candle-kernels adds it itself
//!   (huggingface/candle #3686, PR #3694).
//! - `-D_USE_MATH_DEFINES`: MSVC's `<math.h>`/`<cmath>` define `M_PI` and the
//!   other `M_*` constants only with it (Microsoft's "Math Constants" page),
//!   while glibc defines them by default, so kernels that build on Linux
//!   build on Windows too; candle-kernels defines it for MSVC as well.
//!
//! cl.exe itself is found by the `cc` crate (`NVCC_CCBIN`/`CXX` first, then
//! its Visual Studio lookup through vswhere and the registry).

use crate::facts::{self, CcclMsvcPreprocessor};

/// The flags to add for a cl.exe host compile with a toolkit of `release`
/// (unknown: assume the newest rules), leaving out what `flags` already has.
///
/// ```
/// use cuda_toolchain::interop::msvc::host_flags;
/// assert_eq!(host_flags(Some((13, 2)), &[]), ["-Xcompiler=/Zc:preprocessor", "-D_USE_MATH_DEFINES"]);
/// assert_eq!(host_flags(Some((13, 0)), &[]), ["-D_USE_MATH_DEFINES"]);
/// let given = ["-Xcompiler".to_string(), "/Zc:preprocessor".to_string(), "-D_USE_MATH_DEFINES".to_string()];
/// assert!(host_flags(Some((13, 3)), &given).is_empty());
/// ```
pub fn host_flags(release: Option<(u32, u32)>, flags: &[String]) -> Vec<String> {
    let has = |needle: &str| flags.iter().any(|f| f.contains(needle));
    let mut out = Vec::new();
    let check = release.map_or(CcclMsvcPreprocessor::Fails, facts::cccl_msvc_preprocessor);
    if check != CcclMsvcPreprocessor::Accepted
        && !has("/Zc:preprocessor")
        && !has("CCCL_IGNORE_MSVC_TRADITIONAL_PREPROCESSOR_WARNING")
    {
        out.push("-Xcompiler=/Zc:preprocessor".to_string());
    }
    if !has("_USE_MATH_DEFINES") {
        out.push("-D_USE_MATH_DEFINES".to_string());
    }
    out
}
