//! CUDA's error strings in other cases than cudaGetErrorString writes them:
//! title case (`Too Many Resources Requested For Launch`), a capital first
//! letter (`No kernel image is available ...`), upper case. The table in
//! `cuda_errors.rs` matches the exact strings; this rule matches the rest,
//! case-insensitively, with the same care for generic messages.

use super::cuda_errors::{mentions_cuda, CudaError, ERRORS};
use super::scan::{Fact, LineCx};

/// The variants' literals for the prefilter: each message with a capital
/// first letter, in title case and in upper case (those that differ).
pub(crate) fn trigger_literals() -> &'static [&'static str] {
    static LITS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    LITS.get_or_init(|| {
        let mut v: Vec<&'static str> = Vec::new();
        for m in ERRORS.iter().flat_map(|e| e.messages.iter()) {
            let first = capitalise(m);
            let title = m.split(' ').map(capitalise).collect::<Vec<_>>().join(" ");
            let upper = m.to_uppercase();
            for s in [first, title, upper] {
                if s != *m && !v.iter().any(|x| *x == s) {
                    // Leaked once: the table is static and small.
                    v.push(Box::leak(s.into_boxed_str()));
                }
            }
        }
        v
    })
}

fn capitalise(w: &str) -> String {
    let mut c = w.chars();
    c.next().map_or_else(String::new, |f| {
        f.to_uppercase().collect::<String>() + c.as_str()
    })
}

pub(crate) fn extract(cx: &mut LineCx) {
    let lower = cx.line.to_lowercase();
    let mut found: Vec<&'static CudaError> = Vec::new();
    for err in ERRORS {
        for m in err.messages {
            // The exact string is the error table's.
            if cx.line.contains(m) || !lower.contains(&m.to_lowercase()) {
                continue;
            }
            if err.generic_message && !mentions_cuda(cx.line) {
                continue;
            }
            if !found.iter().any(|e| e.num == err.num) {
                found.push(err);
            }
        }
    }
    for err in found {
        if !cx.gave(err.code) {
            cx.hit_as(
                err.code,
                Fact::Cuda {
                    err,
                    by_number: false,
                },
                0.85,
            );
        }
    }
}
