//! A kernel over a limit ptxas checks for every kernel of its target, whatever
//! the GPU it will run on: static shared memory (`Entry function 'k' uses too
//! much shared data (0xc400 bytes, 0xc000 max)`) and the kernel's parameters
//! (ptxas's `uses too much parameter space (0x11e0 bytes, 0x1100 max)`,
//! cicc's `Formal parameter space overflowed (5696 bytes required, max 4096
//! bytes allowed) in function ...`). The source (or the toolkit, for
//! parameters) must change; the machine cannot.

use super::scan::{Fact, KernelLimit, LineCx};
use super::view::{push_unique, Finding, View};
use super::Diagnosis;

/// ptxas's `Entry function 'NAME' uses too much KIND (0xUSED bytes[ + 0xN
/// bytes system], 0xMAX max)`, or cicc's `Formal parameter space overflowed
/// (USED bytes required, max MAX bytes allowed) in function NAME`.
pub(crate) fn extract(cx: &mut LineCx) {
    let l = cx.line;
    let (what, kernel, (used, max)) = if l.contains("uses too much shared data") {
        (KernelLimit::Shared, ptxas_kernel(l), sizes(l))
    } else if l.contains("uses too much parameter space") {
        (KernelLimit::Params, ptxas_kernel(l), sizes(l))
    } else if l.contains("Formal parameter space overflowed") {
        let kernel = l
            .split_once(" in function ")
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .map(str::to_string);
        (KernelLimit::Params, kernel, cicc_sizes(l))
    } else {
        return;
    };
    cx.hit(
        Fact::KernelLimit {
            what,
            kernel,
            used,
            max,
        },
        0.9,
    );
}

/// The kernel ptxas names: `Entry function 'NAME'`.
fn ptxas_kernel(l: &str) -> Option<String> {
    l.split_once("Entry function '")
        .and_then(|(_, rest)| rest.split_once('\''))
        .map(|(name, _)| name.to_string())
}

/// cicc's decimal counts: `(5696 bytes required, max 4096 bytes allowed)`,
/// or only the maximum: `(4096 bytes max)`.
fn cicc_sizes(l: &str) -> (Option<u64>, Option<u64>) {
    let Some((_, tail)) = l
        .split_once("overflowed")
        .and_then(|(_, rest)| rest.split_once('('))
    else {
        return (None, None);
    };
    let tail = tail.split(')').next().unwrap_or("");
    let number = |s: &str| s.trim().parse::<u64>().ok();
    let mut used = None;
    let mut max = None;
    for part in tail.split(',') {
        let part = part.trim();
        if let Some(n) = part.strip_suffix("bytes required") {
            used = number(n);
        } else if let Some(n) = part
            .strip_prefix("max")
            .and_then(|p| p.strip_suffix("bytes allowed"))
            .or_else(|| part.strip_suffix("bytes max"))
        {
            max = number(n);
        }
    }
    (used, max)
}

/// The used and maximum byte counts in `(0xc400 bytes, 0xc000 max)`; the
/// system's part (`+ 0x10 bytes system`) counts as used.
fn sizes(l: &str) -> (Option<u64>, Option<u64>) {
    let Some((_, tail)) = l.rsplit_once('(') else {
        return (None, None);
    };
    let hex = |s: &str| {
        let s = s.trim();
        u64::from_str_radix(s.strip_prefix("0x")?, 16).ok()
    };
    let mut used = None;
    let mut max = None;
    for part in tail.trim_end_matches([')', '.']).split([',', '+']) {
        let part = part.trim();
        if let Some(n) = part.strip_suffix("max") {
            max = hex(n);
        } else if let Some(n) = part
            .strip_suffix("bytes system")
            .or_else(|| part.strip_suffix("bytes"))
        {
            used = match (used, hex(n)) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
        }
    }
    (used, max)
}

/// `kernel-exceeds-target-limit`.
pub(super) fn explain(f: &Finding, view: &View, d: &mut Diagnosis) {
    let Some((what, kernel, used, max)) = f.facts.iter().find_map(|x| match x {
        Fact::KernelLimit {
            what,
            kernel,
            used,
            max,
        } => Some((*what, kernel, *used, *max)),
        _ => None,
    }) else {
        return;
    };
    let name = kernel
        .as_deref()
        .map_or_else(|| "A kernel".to_string(), |k| format!("The kernel `{k}`"));
    // NVRTC names a program it was given no name for `default_program`;
    // Triton and fusion frameworks write the kernel themselves.
    let generated = f.evidence.iter().any(|e| {
        [
            "default_program",
            "Triton",
            "[Compilation Error]",
            "codegen",
        ]
        .iter()
        .any(|k| e.contains(k))
    });
    if generated {
        d.fix.push("the kernel was generated at run time by a library (a JIT or kernel-fusion framework such as burn/CubeCL, Triton or ArrayFire): the limit is that library's to keep; update it, turn its fusion off or make its fused kernels smaller, and report it upstream".into());
    }
    let amount = match (used, max) {
        (Some(u), Some(m)) => format!(" ({u} bytes, where the limit is {m})"),
        _ => String::new(),
    };
    match what {
        KernelLimit::Shared => {
            d.cause = format!("{name} declares more static `__shared__` memory than ptxas allows in one block{amount}. Statically declared shared memory is limited to 48 KB per block on every architecture since sm_20 (16 KB on sm_1x); only dynamic shared memory can go above it, and only up to what the GPU allows with an opt-in.");
            d.fix.push("if the kernel comes from a project, build the configuration it supports for this architecture and precision (its documented arch list, a smaller tile or block size setting), or update it: such kernels are sized per architecture in the source".into());
            d.fix.push("in your own kernel, declare the array `extern __shared__` (dynamic), pass its size as the launch's third parameter, and above 48 KB raise the kernel's cudaFuncAttributeMaxDynamicSharedMemorySize with cudaFuncSetAttribute (at most 96 KB on sm_70, 64 KB on sm_75, 163 KB on sm_80, 99 KB on sm_86 and sm_89, 227 KB on sm_90)".into());
        }
        KernelLimit::Params => {
            // The old limit is 4 KB of parameters (ptxas counts 0x1100 with
            // its own part); the new one 32,764 bytes.
            let old = view.nvcc_version().is_some_and(|v| v < (12, 1))
                || max.is_some_and(|m| m <= 0x1100);
            d.cause = format!("{name} takes more bytes of parameters than the compiler allows for its target{amount}. Kernel parameters were limited to 4 KB (cicc counts 4,096 bytes, ptxas 4,352) until CUDA 12.1 (PTX ISA 8.1), which raised the limit to 32,764 bytes for sm_70 and newer targets.");
            let upgrade = "compile with CUDA 12.1 or newer for sm_70 or newer targets only, where parameters may take 32,764 bytes (`cargo cuda toolkit install 13.0`)";
            if old {
                d.fix.push(upgrade.into());
            }
            d.fix.push("pass large arrays or structs through device memory (a pointer, or a `__constant__` copy with cudaMemcpyToSymbol) instead of by value".into());
            if !old {
                push_unique(&mut d.alternatives, "The limit was already the 32,764 bytes of CUDA 12.1+ on sm_70+: the parameters must shrink.".into());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_ptxas_hex_counts_with_the_system_part() {
        let shared = "ptxas error   : Entry function '_Z4testv' uses too much shared data (0xc400 bytes, 0xc000 max)";
        assert_eq!(sizes(shared), (Some(0xc400), Some(0xc000)));
        let old = "ptxas error   : Entry function 'block' uses too much shared data (0x40b0 bytes + 0x10 bytes system, 0x4000 max)";
        assert_eq!(sizes(old), (Some(0x40c0), Some(0x4000)));
        let params = "ptxas error   : Entry function '_Z1kv' uses too much parameter space (0x1100 bytes, 0x1000 max).";
        assert_eq!(sizes(params), (Some(0x1100), Some(0x1000)));
        assert_eq!(sizes("uses too much shared data"), (None, None));
    }

    #[test]
    fn cicc_sizes_read_decimal_counts() {
        let quda = "/quda/include/targets/cuda/kernel.h(184): Error: Formal parameter space overflowed (5696 bytes required, max 4096 bytes allowed) in function _ZN4quda8Kernel3D";
        assert_eq!(cicc_sizes(quda), (Some(5696), Some(4096)));
        let af = "KER172(228): Error: Formal parameter space overflowed (4096 bytes max) in function KER172";
        assert_eq!(cicc_sizes(af), (None, Some(4096)));
    }
}
