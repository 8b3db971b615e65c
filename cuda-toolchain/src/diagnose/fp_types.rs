//! Half and bfloat16 code compiled for a target that lacks the types'
//! operations, in the nvcc front end's words beyond the bf16 rule of
//! `rules.rs`: a wmma `fragment<...>` of any element type left incomplete
//! (tf32, bf16, double need sm_80; int8 sm_72; half sm_70), and operators
//! or atomics on `__half` / `__nv_bfloat16` with no match. Fragments that are
//! incomplete for every target (an accumulator declared with a layout, an
//! operand without one) are the code's, not the target's, and stay silent.

use super::codes::Code;
use super::scan::{Fact, LineCx};

/// The architecture a wmma fragment needs, from its template arguments;
/// `None` when no target has it (a code error).
fn fragment_needs(args: &str) -> Option<(&'static str, u32)> {
    let accumulator = args.contains("accumulator");
    let laid_out = args.contains("row_major") || args.contains("col_major");
    if accumulator == laid_out {
        // An accumulator takes no layout; matrix_a/matrix_b need one.
        return None;
    }
    let k8 = args.contains(", 8,") || args.contains(",8,");
    Some(if args.contains("bfloat16") {
        ("bf16", 80)
    } else if args.contains("tf32") || (k8 && args.contains("float")) {
        ("tf32", 80)
    } else if args.contains("double") {
        ("double", 80)
    } else if args.contains("precision::s4")
        || args.contains("precision::u4")
        || args.contains("precision::b1")
    {
        ("sub-byte", 75)
    } else if args.contains("signed char") || args.contains("unsigned char") {
        ("int8", 72)
    } else {
        ("half", 70)
    })
}

/// The wmma fragment's template arguments on a line, or on the next.
fn fragment_args<'a>(line: &'a str, after: &'a str) -> Option<&'a str> {
    let from_line = line.find("fragment<").map(|p| &line[p..]);
    let from_next = || {
        after
            .lines()
            .map(str::trim)
            .find(|n| !n.is_empty())
            .and_then(|n| n.find("fragment<").map(|p| &n[p..]))
    };
    from_line.or_else(from_next)
}

pub(crate) fn wmma_fragment(cx: &mut LineCx) {
    let l = cx.line;
    if !l.contains("incomplete type") || cx.gave(Code::ArchFeatureNeedsHigherTarget) {
        return;
    }
    let Some(args) = fragment_args(l, cx.after) else {
        return;
    };
    let Some((kind, needs)) = fragment_needs(args) else {
        return;
    };
    let below = cx.scan.lowest_cmd_arch.is_some_and(|a| a < needs);
    cx.hit_as(
        Code::ArchFeatureNeedsHigherTarget,
        Fact::Feature {
            feature: format!("wmma fragments of {kind}"),
            needs: format!("sm_{needs}"),
            arch_specific: false,
            target: None,
        },
        if below { 0.8 } else { 0.7 },
    );
}

/// The half/bf16 type an operand list names, and the lowest target whose
/// headers define the operation for it.
fn half_operands(text: &str, atomic: bool) -> Option<(&'static str, u32)> {
    let bf16 = [
        "__nv_bfloat16",
        "nv_bfloat16",
        "__nv_bfloat162",
        "nv_bfloat162",
    ]
    .iter()
    .any(|t| text.contains(t));
    let half2 = text.contains("__half2") || text.contains("half2");
    let half = text.contains("__half") || text.contains(" half");
    // atomicAdd on double exists from sm_60 (nvcc's default target is lower).
    if atomic && !bf16 && !half && !half2 && text.contains("(double *, ") {
        return Some(("double atomics", 60));
    }
    Some(match (bf16, half2, half, atomic) {
        (true, _, _, _) => ("bf16", 80),
        (false, true, _, true) => ("half2 atomics", 60),
        (false, _, true, true) => ("half atomics", 70),
        (false, _, true, false) | (false, true, _, false) => ("half arithmetic", 53),
        _ => return None,
    })
}

pub(crate) fn half_operators(cx: &mut LineCx) {
    let l = cx.line;
    let overload = l.contains("no instance of overloaded function") || l.contains("no operator");
    if !overload || cx.gave(Code::ArchFeatureNeedsHigherTarget) {
        return;
    }
    // nvcc writes the operand types on the next line.
    let next = cx.next_line();
    let types = if next.starts_with("operand types are") || next.starts_with("argument types are") {
        next.as_str()
    } else {
        ""
    };
    let atomic = l.contains("atomic");
    let Some((what, needs)) = half_operands(types, atomic).or_else(|| half_operands(l, atomic))
    else {
        return;
    };
    let below = cx.scan.lowest_cmd_arch.is_some_and(|a| a < needs);
    // A double atomicAdd that matches no overload has one cause: a target
    // below sm_60. The half forms can also be a header or type mistake.
    let conf = if what == "double atomics" {
        0.8
    } else if below {
        0.6
    } else {
        0.45
    };
    cx.hit_as(
        Code::ArchFeatureNeedsHigherTarget,
        Fact::Feature {
            feature: what.to_string(),
            needs: format!("sm_{needs}"),
            arch_specific: false,
            target: None,
        },
        conf,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_need_their_architecture_or_are_code_errors() {
        assert_eq!(
            fragment_needs("fragment<nvcuda::wmma::accumulator, 16, 16, 8, float, void>"),
            Some(("tf32", 80))
        );
        assert_eq!(
            fragment_needs("fragment<matrix_a, 16, 16, 16, __nv_bfloat16, row_major>"),
            Some(("bf16", 80))
        );
        assert_eq!(
            fragment_needs("fragment<matrix_b, 16, 16, 16, __half, col_major>"),
            Some(("half", 70))
        );
        // An accumulator with a layout is incomplete on every target.
        assert_eq!(
            fragment_needs(
                "fragment<nvcuda::wmma::accumulator, 16, 16, 16, float, nvcuda::wmma::row_major>"
            ),
            None
        );
    }
}
