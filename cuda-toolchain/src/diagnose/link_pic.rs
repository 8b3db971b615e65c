//! CUDA objects compiled without position-independent code, linked into a
//! PIE executable (Rust's default on Linux) or a shared library: `relocation
//! R_X86_64_32 against ... can not be used when making a PIE object;
//! recompile with -fPIE`, rust-lld's `relocation R_X86_64_PC32 cannot be
//! used against symbol ...; recompile with -fPIC` with a `.cu.o` / nvcc
//! temporary (`tmpxft_..cudafe1.cpp`) as the referencing object. nvcc does
//! not pass -fPIC to the host compiler unless told to.

use super::scan::{Fact, LineCx};
use super::view::{push_unique, Finding, View};
use super::Diagnosis;

/// Signs that an object came out of nvcc.
fn cuda_object(text: &str) -> bool {
    [
        ".cu.o",
        ".cu.obj",
        "cudafe1",
        "tmpxft_",
        "_dlink.o",
        "dlink.o",
        "libcudart_static",
        ".cu:",
    ]
    .iter()
    .any(|k| text.contains(k))
}

pub(crate) fn extract(cx: &mut LineCx) {
    let l = cx.line;
    let relocation = l.contains("relocation R_") || l.contains("relocation against");
    let pic = l.contains("recompile with -fPIC")
        || l.contains("recompile with -fPIE")
        || l.contains("when making a PIE object")
        || l.contains("when making a shared object");
    if !(relocation && pic) {
        return;
    }
    // rust-lld names the object on the lines below (`>>> referenced by`).
    let below: String = cx.after.lines().take(4).collect::<Vec<_>>().join(" ");
    if cuda_object(l) || cuda_object(&below) {
        cx.hit(Fact::None, 0.8);
    }
}

/// `cuda-object-not-pic`.
pub(super) fn explain(_f: &Finding, view: &View, d: &mut Diagnosis) {
    let by = view.scan.build_script.as_deref().map_or_else(
        || "The build".to_string(),
        |c| format!("The build script of `{c}`"),
    );
    d.cause = format!("{by} compiled CUDA sources without position-independent code, and the linker is making a position-independent executable (Rust's default on Linux) or a shared library from them. nvcc does not pass -fPIC to the host compiler unless told to.");
    d.fix.push("compile every .cu with `-Xcompiler -fPIC` (cc-rs: `.flag(\"-Xcompiler\").flag(\"-fPIC\")`; CMake: POSITION_INDEPENDENT_CODE ON), and the device-link step too (`nvcc -dlink -Xcompiler -fPIC`)".into());
    d.fix.push("cuda-build's Build passes -fPIC itself; a crate that builds its own static library needs the flag in its build script".into());
    push_unique(
        &mut d.alternatives,
        "As a stopgap, link the final binary without PIE (`-C relocation-model=static` or `-C link-arg=-no-pie`); this does not help a shared library.".into(),
    );
}
