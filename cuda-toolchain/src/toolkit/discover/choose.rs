//! Choosing among candidates: an explicit setting wins, then the project's
//! requirement (newest match), then precedence order.

use super::explain::via_name;
use std::path::{Path, PathBuf};

use super::Candidate;
use crate::toolkit::{Problem, Severity};

/// Picks a candidate; returns its index (or none) and why.
pub(super) fn choose(
    cands: &[Candidate],
    req: Option<&semver::VersionReq>,
    looked: &[String],
) -> (Option<usize>, String) {
    let describe = |c: &Candidate| {
        format!(
            "{} ({}, found via {})",
            c.tk.root.display(),
            c.tk.version
                .as_ref()
                .map_or("unknown version".into(), |v| v.to_string()),
            via_name(&c.tk.found_via)
        )
    };
    if cands.is_empty() {
        return (
            None,
            format!(
                "no CUDA toolkit was found (looked at: {})",
                looked.join(", ")
            ),
        );
    }
    if let Some(i) = cands.iter().position(|c| c.explicit) {
        let c = &cands[i];
        let via = via_name(&c.tk.found_via);
        if let Some(req) = req {
            match &c.tk.version {
                Some(v) if req.matches(v) => {}
                other => {
                    return (
                        None,
                        format!(
                            "{via} names CUDA {}, which does not satisfy the project's requirement `{req}`",
                            other.as_ref().map_or("of unknown version".into(), |v| v.to_string())
                        ),
                    )
                }
            }
        }
        return (Some(i), format!("{via} is set (an explicit setting wins)"));
    }
    if let Some(req) = req {
        let best = cands
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                !c.tk.is_broken() && c.tk.version.as_ref().is_some_and(|v| req.matches(v))
            })
            // Newest wins; among equals, the earlier rule.
            .max_by(|(ia, a), (ib, b)| a.tk.version.cmp(&b.tk.version).then(ib.cmp(ia)));
        return match best {
            Some((i, c)) => (
                Some(i),
                format!(
                    "newest usable toolkit that satisfies the project's requirement `{req}`: {}",
                    describe(c)
                ),
            ),
            None => {
                let why: Vec<String> = cands
                    .iter()
                    .map(|c| {
                        let verdict = match &c.tk.version {
                            _ if c.tk.is_broken() => "broken".to_string(),
                            Some(v) if req.matches(v) => "matches".into(),
                            Some(_) => format!("does not match `{req}`"),
                            None => "version unknown".into(),
                        };
                        format!("{}: {verdict}", describe(c))
                    })
                    .collect();
                (
                    None,
                    format!(
                        "no installed toolkit satisfies the project's requirement `{req}`; found {}",
                        why.join("; ")
                    ),
                )
            }
        };
    }
    match cands.iter().position(|c| !c.tk.is_broken()) {
        Some(i) => {
            let skipped: Vec<String> = cands[..i].iter().map(describe).collect();
            let mut reason = format!(
                "first usable toolkit in precedence order (found via {})",
                via_name(&cands[i].tk.found_via)
            );
            if !skipped.is_empty() {
                reason.push_str(&format!("; skipped broken: {}", skipped.join(", ")));
            }
            (Some(i), reason)
        }
        None => (
            None,
            format!(
                "every toolkit found is broken: {}",
                cands.iter().map(describe).collect::<Vec<_>>().join(", ")
            ),
        ),
    }
}

/// The selected toolkit is not the first nvcc on PATH (`path_first`: that
/// nvcc as shown, and its resolved key), so nvcc run by hand differs.
pub(super) fn path_conflict(sel: &Candidate, path_first: &(PathBuf, PathBuf)) -> Option<Problem> {
    let (shown, key) = path_first;
    if &sel.key == key {
        return None;
    }
    Some(Problem {
        code: "nvcc-path-mismatch",
        severity: Severity::Warning,
        message: format!(
            "`nvcc` on PATH is `{}`, not the selected toolkit's `{}`; nvcc run by hand (and tools that use PATH) compile with another toolkit",
            shown.display(),
            sel.tk.nvcc.display()
        ),
        fix: Some(format!(
            "put `{}` first on PATH (`cargo cuda env --shell` prints the line)",
            sel.tk.nvcc.parent().unwrap_or(Path::new("")).display()
        )),
    })
}
