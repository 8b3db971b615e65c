//! CUDA's error strings in other cases than cudaGetErrorString writes them:
//! title case (`Too Many Resources Requested For Launch`), a capital first
//! letter (`No kernel image is available ...`), upper case. The table in
//! `cuda_errors.rs` matches the exact strings; this rule matches the rest,
//! case-insensitively, with the same care for generic messages.

use super::scan::{Fact, LineCx};
use crate::cuda_errors::{mentions_cuda, CudaError, ERRORS};

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
        if !cx.gave(err.code()) {
            cx.hit_as(
                err.code(),
                Fact::Cuda {
                    err,
                    by_number: false,
                },
                0.85,
            );
        }
    }
}

/// A CUDA error number after other punctuation than the error table's
/// shapes (`CUDA error! 2`, `CUDA Error - 700`, `cuda error #209`), read as
/// evidence by number only (below 0.5 unless more is known).
pub(crate) fn loose_number(cx: &mut LineCx) {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    // Case-folded by hand: the workspace's regex has no unicode-case
    // feature, so `(?i)` does not compile (ASCII lowering keeps offsets).
    let re = RE.get_or_init(|| {
        regex::Regex::new(r"\bcuda[ _]?error\b[^0-9a-z\n]{1,4}(?:code[^0-9a-z\n]{0,3})?(\d{1,4})")
            .expect("a valid regex")
    });
    let l = cx.line;
    let lower = l.to_ascii_lowercase();
    // Names and messages on the line are read by the error table.
    if l.contains("CUDA_ERROR_") || l.contains("cudaError") {
        return;
    }
    for caps in re.captures_iter(&lower) {
        let Some(m) = caps.get(1) else { continue };
        // `CUDA error 12.2` is a version, not error 12.
        let next = l[m.end()..].chars().next();
        if next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_') {
            continue;
        }
        let Some(err) = m
            .as_str()
            .parse()
            .ok()
            .and_then(crate::cuda_errors::by_number)
        else {
            continue;
        };
        if !cx.gave(err.code()) {
            cx.hit_as(
                err.code(),
                Fact::Cuda {
                    err,
                    by_number: true,
                },
                0.5,
            );
        }
        return;
    }
}
