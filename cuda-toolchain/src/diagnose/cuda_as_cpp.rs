//! CUDA source compiled as plain C++: the host compiler meets `__global__`
//! or `__device__` without nvcc's CUDA front end (g++'s `'__global__' does
//! not name a type`, clang's `unknown type name '__global__'`). nvcc treats a
//! `.cpp` file as C++ unless told `-x cu`, and a C++ compiler given a `.cu`
//! file knows none of it.

use super::scan::{Fact, LineCx};
use super::view::{Finding, View};
use super::Diagnosis;

/// The CUDA keyword a line says the compiler did not know.
fn unknown_cuda_keyword(l: &str) -> Option<&'static str> {
    let unknown = [
        "does not name a type",
        "unknown type name",
        "was not declared in this scope",
    ]
    .iter()
    .any(|w| l.contains(w));
    if !unknown {
        return None;
    }
    ["__global__", "__device__", "__shared__", "__constant__"]
        .into_iter()
        .find(|k| {
            ["'", "‘", "`", "\""]
                .iter()
                .any(|q| l.contains(&format!("{q}{k}")))
        })
}

pub(crate) fn extract(cx: &mut LineCx) {
    if let Some(keyword) = unknown_cuda_keyword(cx.line) {
        cx.hit(Fact::Symbol(keyword.to_string()), 0.85);
    }
}

/// `cuda-compiled-as-cpp`.
pub(super) fn explain(f: &Finding, _view: &View, d: &mut Diagnosis) {
    let keyword = f.symbol().unwrap_or("__global__");
    let cpp_file = f.evidence.iter().any(|e| {
        [".cpp:", ".cc:", ".cxx:", ".cpp(", ".cc("]
            .iter()
            .any(|k| e.contains(k))
    });
    d.cause = format!("A host C++ compiler read CUDA code: `{keyword}` is a CUDA keyword only nvcc's front end knows. nvcc compiles a .cpp or .cc file as plain C++ unless given `-x cu`, and a C++ compiler (g++, clang++, cl.exe, or a build script's cc without its CUDA mode) given a .cu file does the same.");
    let rename = "rename the file to .cu, or give nvcc `-x cu` before it (CMake: set_source_files_properties(f.cpp PROPERTIES LANGUAGE CUDA))".to_string();
    let compiler = "compile the .cu with nvcc, not the C++ compiler: cc-rs needs `.cuda(true)`; cuda-build's Build compiles .cu files with nvcc".to_string();
    if cpp_file {
        d.fix.push(rename);
        d.fix.push(compiler);
    } else {
        d.fix.push(compiler);
        d.fix.push(rename);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_compilers_words_for_a_cuda_keyword_are_read() {
        let cases = [
            (
                "kern.cpp:1:1: error: ‘__global__’ does not name a type",
                Some("__global__"),
            ),
            (
                "kernel.cu:3:1: error: unknown type name '__device__'",
                Some("__device__"),
            ),
            (
                "a.cu:4:5: error: '__shared__' was not declared in this scope",
                Some("__shared__"),
            ),
            ("a.cpp:1:1: error: 'Foo' does not name a type", None),
            ("note: __global__ functions must return void", None),
        ];
        for (line, want) in cases {
            assert_eq!(unknown_cuda_keyword(line), want, "{line}");
        }
    }
}
