//! The `M_*` math constants (`M_PI`, `M_SQRT1_2`, `M_2_SQRTPI`) undefined:
//! cudafe++'s `identifier "M_PI" is undefined`, MSVC's `error C2065: 'M_PI':
//! undeclared identifier` (in any language: C2065 is the code), g++'s
//! `'M_PI' was not declared in this scope`. They are not standard C or C++:
//! glibc defines them, MSVC's math.h only when `_USE_MATH_DEFINES` is defined
//! before its first inclusion (and nvcc's host pass includes it before the
//! source's own lines), NVRTC's run-time compiles have no math.h at all.

use super::scan::{Fact, LineCx};
use super::view::{push_unique, Finding, View};
use super::Diagnosis;

/// The `M_…` name a line says is undefined, if any.
fn undefined_constant(l: &str) -> Option<String> {
    let undefined = [
        "is undefined",
        "undeclared identifier",
        "C2065",
        "was not declared",
    ]
    .iter()
    .any(|w| l.contains(w));
    if !undefined {
        return None;
    }
    l.match_indices("M_").find_map(|(at, _)| {
        let before = l[..at].chars().next_back();
        if !matches!(before, Some('"' | '\'' | '`' | '‘')) {
            return None;
        }
        let name: String = l[at..]
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        (name.len() > 2).then_some(name)
    })
}

pub(crate) fn extract(cx: &mut LineCx) {
    if let Some(name) = undefined_constant(cx.line) {
        cx.hit(Fact::Symbol(name), 0.85);
    }
}

/// `math-constants-undefined`.
pub(super) fn explain(f: &Finding, _view: &View, d: &mut Diagnosis) {
    let name = f.symbol().unwrap_or("M_PI");
    let seen = |keys: &[&str]| {
        f.evidence
            .iter()
            .any(|e| keys.iter().any(|k| e.contains(k)))
    };
    // A drive letter or MSVC's own error code: the host compiler is cl.exe.
    let windows = seen(&[":\\", "C2065", ".vcxproj", "cl.exe"]);
    let nvrtc = seen(&["default_program", "NVRTC"]);
    d.cause = format!("`{name}` is one of the `M_*` math constants, which are not standard C or C++: glibc's math.h defines them, MSVC's only when `_USE_MATH_DEFINES` is defined before math.h is first included, and a kernel compiled at run time by NVRTC has no math.h at all. nvcc's host pass includes math.h before the source's own lines, so a `#define` in the .cu file comes too late.");
    let msvc = "define it for the whole compile: `-D_USE_MATH_DEFINES` on nvcc's command line (Build::define(\"_USE_MATH_DEFINES\", None); CMake: add_compile_definitions(_USE_MATH_DEFINES)), as candle-kernels does for MSVC".to_string();
    let own = format!("or define the constant in the source where it is missing (`#ifndef {name}` … `#endif`), or use a standard one (C++20's std::numbers::pi, CUDA's CUDART_PI_F from math_constants.h)");
    if nvrtc && !windows {
        d.fix.push(format!("the kernel is compiled at run time by NVRTC, which has no math.h: define `{name}` in the kernel source, or pass `-D{name}=<value>` in NVRTC's options"));
        d.fix.push(own);
    } else {
        d.fix.push(msvc);
        d.fix.push(own);
    }
    if !windows && !nvrtc {
        push_unique(&mut d.alternatives, "On Linux with glibc and g++ these constants are defined; a build that misses them is usually on Windows (cl.exe) or compiles with a C library other than glibc.".into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_constant_is_read_from_each_compilers_words() {
        let cases = [
            (
                r#"D:\candle\candle-kernels\src\unary.cu(34): error: identifier "M_2_SQRTPI" is undefined"#,
                Some("M_2_SQRTPI"),
            ),
            (
                "C:\\src\\fft.cpp(28,29): error C2065: 'M_PI': undeclared identifier",
                Some("M_PI"),
            ),
            (
                "C:\\src\\q.c(61,45): error C2065: 'M_PI' : identificateur non déclaré",
                Some("M_PI"),
            ),
            (
                "helper_functions.h:63:34: error: 'M_PI' was not declared in this scope",
                Some("M_PI"),
            ),
            (r#"error: identifier "MAX_PATH" is undefined"#, None),
            (r#"error: identifier "ITEM_COUNT" is undefined"#, None),
            ("note: M_PI is used here", None),
        ];
        for (line, want) in cases {
            assert_eq!(undefined_constant(line).as_deref(), want, "{line}");
        }
    }
}
