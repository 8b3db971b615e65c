//! A CUDA library header refusing the C++ standard the file is compiled
//! with: CUDA 13's CCCL (`#error CUB requires at least C++17`, Thrust's and
//! libcu++'s the same), older Thrust's `C++11 is required for this Thrust
//! feature`. The toolkit is fine; the build asks for an older standard.

use super::scan::{Fact, LineCx};
use super::view::{push_unique, Finding, View};
use super::Diagnosis;

/// The standard an `#error` line says its library needs (`17` from
/// `requires at least C++17` or `C++ 17`, `11` from `C++11 is required`).
fn required_standard(l: &str) -> Option<u32> {
    if !l.contains("#error") {
        return None;
    }
    let after = |key: &str| {
        let rest = &l[l.find(key)? + key.len()..];
        let digits: String = rest
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    if let Some(n) = after("requires at least C++") {
        return Some(n);
    }
    let (_, rest) = l.split_once("C++")?;
    rest.split_once(" is required")
        .filter(|(n, _)| n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty())
        .and_then(|(n, _)| n.parse().ok())
}

pub(crate) fn extract(cx: &mut LineCx) {
    if let Some(n) = required_standard(cx.line) {
        cx.hit(Fact::Text(n.to_string()), 0.9);
    }
}

/// `cxx-standard-too-old`.
pub(super) fn explain(f: &Finding, _view: &View, d: &mut Diagnosis) {
    let n = f.text().unwrap_or("17");
    let library = ["CUB", "Thrust", "libcu++", "CUTLASS"]
        .into_iter()
        .find(|lib| f.evidence.iter().any(|e| e.contains(lib)))
        .unwrap_or("A CUDA library header");
    let cccl = n == "17"
        && f.evidence
            .iter()
            .any(|e| e.contains("CCCL") || e.contains("cccl"));
    d.cause = format!("{library} needs C++{n} or newer, and this file is compiled with an older standard: the build passes an older `-std` (or CMAKE_CUDA_STANDARD), or passes none and the host compiler's default is older (nvcc takes its host compiler's default: C++14 for MSVC, g++ before 11 and clang before 16).");
    if cccl {
        d.cause
            .push_str(" CUDA 13's CCCL (Thrust, CUB, libcu++) requires C++17.");
        push_unique(&mut d.alternatives, "Defining CCCL_IGNORE_DEPRECATED_CPP_DIALECT, as the message offers, only removes the check: with nvcc 13.0 and -std=c++14 the headers then fail to compile (`argument list for class template \"cuda::std::__4::array\" is missing`).".into());
    }
    d.fix.push(format!("compile the .cu files with `-std=c++{n}` or newer (Build::std(\"{n}\"); CMake: set_target_properties(... CUDA_STANDARD {n} CUDA_STANDARD_REQUIRED ON); PyTorch extensions: `-std=c++{n}` in extra_compile_args' nvcc list), and the C++ sources that share its headers too"));
    if n == "17" {
        push_unique(&mut d.alternatives, "A toolkit older than CUDA 13 still accepts C++14 with a deprecation warning; staying on it is the other way out, with its own end of support.".into());
    } else {
        d.fix.push(
            "or use a newer host compiler, whose default standard is newer (`g++ --version`)"
                .into(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_is_read_from_each_librarys_words() {
        let cases = [
            ("/usr/local/cuda-13.0/targets/x86_64-linux/include/cccl/cub/util_cpp_dialect.cuh:88:8: error: #error CUB requires at least C++17. Define CCCL_IGNORE_DEPRECATED_CPP_DIALECT to suppress this message.", Some(17)),
            ("cpp_dialect.h:40:6: error: #error libcu++ requires at least C++ 17. Define CCCL_IGNORE_DEPRECATED_CPP_DIALECT to suppress this message.", Some(17)),
            ("error: #error C++11 is required for this Thrust feature; please upgrade your compiler or pass the appropriate -std=c++XX flag to it.", Some(11)),
            ("warning: Thrust requires at least C++17", None),
            ("error: #error unsupported GNU version! gcc versions later than 13 are not supported!", None),
        ];
        for (line, want) in cases {
            assert_eq!(required_standard(line), want, "{line}");
        }
    }
}
