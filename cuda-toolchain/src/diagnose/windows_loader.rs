//! Windows' loader in other words than "cannot open shared object file":
//! a loader message that names the missing dependency (`Error loading
//! "x.dll" which depends on "cublasLt64_12.dll" which is missing`), and a
//! process that died with STATUS_DLL_NOT_FOUND (exit code -1073741515,
//! 3221225781, 0xC0000135) before it could print anything.

use super::codes::Code;
use super::scan::{Fact, LineCx};
use super::words::lib_code;

/// The quoted library right before `which is missing` / `is missing`.
fn missing_dependency(line: &str) -> Option<&str> {
    let at = line
        .find("which is missing")
        .or_else(|| line.find(" is missing"))?;
    let head = &line[..at];
    let end = head.rfind(['"', '\''])?;
    let start = head[..end].rfind(['"', '\''])? + 1;
    let name = &head[start..end];
    let lower = name.to_ascii_lowercase();
    (lower.ends_with(".dll") || lower.contains(".so") || lower.ends_with(".dylib")).then_some(name)
}

pub(crate) fn extract(cx: &mut LineCx) {
    let l = cx.line;
    if let Some(dep) = missing_dependency(l) {
        if let Some(code) = lib_code(dep) {
            let fact = Fact::Library {
                name: dep.to_string(),
                link_time: false,
            };
            cx.hit_as(code, fact, 0.85);
        }
        return;
    }
    let lower = l.to_ascii_lowercase();
    let dll_not_found = ["-1073741515", "3221225781", "0xc0000135"]
        .iter()
        .any(|c| lower.contains(c));
    if !dll_not_found {
        return;
    }
    // The program died before printing which DLL; a CUDA-named program or
    // path makes a CUDA DLL the likely one.
    let cuda = ["cuda", "cublas", "cudnn", "nvrtc", "cufft"]
        .iter()
        .any(|w| lower.contains(w));
    cx.hit_as(
        Code::CudaRuntimeLibNotFound,
        Fact::Library {
            name: "a DLL the program needs (Windows' STATUS_DLL_NOT_FOUND, 0xC0000135; run the program directly and Windows names it, or `dumpbin /dependents program.exe`)".into(),
            link_time: false,
        },
        if cuda { 0.6 } else { 0.4 },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_dependency_a_loader_says_is_missing() {
        assert_eq!(
            missing_dependency(
                r#"FAIL : Error loading "C:\x\onnxruntime_providers_cuda.dll" which depends on "cublasLt64_12.dll" which is missing."#
            ),
            Some("cublasLt64_12.dll")
        );
        assert_eq!(missing_dependency("the config file is missing"), None);
    }
}
