//! `cargo cuda inspect --compare OLD NEW`: two builds' outputs side by side
//! (two files, or two output directories paired by file name), each
//! difference with the flag that explains it. What is compared and which
//! flag explains what is `cuda_toolchain::image::compare`'s; this renders it.
//!
//! Exit status: 0 the outputs match, 1 they differ (or a file is on one side
//! only), 2 unusable input.
//!
//! `--json` prints one object (schema 1; fields are only ever added):
//!
//! ```json
//! { "schema": 1, "old": "a/out", "new": "b/out", "same": false,
//!   "pairs": [{ "name": "libmoe.a", "old": { "path": "...", "summary": { "size": 1, "kernels": [], "sass": ["sm_89"],
//!               "ptx": [], "device_debug": "none" | "line-info" | "full", "host": null | { "objects": 1, "defined": [],
//!               "undefined": [], "non_pic": [], "function_sections": false, "debug_info": false, "text_size": 0,
//!               "relocatable_device_code": false } } },
//!               "new": { /* as old */ },
//!               "differences": [{ "aspect": "stream-mode", "only_old": [], "only_new": [],
//!                                 "flag": "--default-stream per-thread" | null, "explanation": "..." }] }],
//!   "only_old": ["x.ptx"], "only_new": [] }
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{exit, human_size};
use crate::style::{Style, Tone};
use cuda_toolchain::image::compare::{self, DeviceDebug, Difference, Summary};
use cuda_toolchain::Error;

/// One side of a pair.
#[derive(Debug, Serialize)]
struct Side {
    path: String,
    summary: Summary,
}

/// Two files of the same name, compared.
#[derive(Debug, Serialize)]
struct Pair {
    name: String,
    old: Side,
    new: Side,
    differences: Vec<Difference>,
}

/// The whole answer (`--json`).
#[derive(Debug, Serialize)]
struct Report {
    schema: u32,
    old: String,
    new: String,
    same: bool,
    pairs: Vec<Pair>,
    only_old: Vec<String>,
    only_new: Vec<String>,
}

/// Output files a build leaves: kernel images and libraries (objects are
/// inside the libraries; a cuda-build OUT_DIR's cache records are not outputs).
fn is_output(p: &Path) -> bool {
    matches!(
        p.extension().and_then(|e| e.to_str()),
        Some("ptx" | "cubin" | "fatbin" | "a" | "lib")
    )
}

/// The outputs under `dir` by file name; of two with one name, the shallower
/// (then the first in path order) stands for it.
fn outputs(dir: &Path) -> BTreeMap<String, PathBuf> {
    let mut found: BTreeMap<String, (usize, PathBuf)> = BTreeMap::new();
    for e in walkdir::WalkDir::new(dir)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .flatten()
    {
        if !e.file_type().is_file() || !is_output(e.path()) {
            continue;
        }
        let name = e.file_name().to_string_lossy().into_owned();
        let depth = e.depth();
        if found.get(&name).is_none_or(|(d, _)| depth < *d) {
            found.insert(name, (depth, e.path().to_path_buf()));
        }
    }
    found.into_iter().map(|(n, (_, p))| (n, p)).collect()
}

fn side(path: &Path) -> Result<Side, Error> {
    let bytes = cuda_toolchain::image::map_file(path).map_err(|e| {
        Error::new(
            "invalid-argument",
            format!("cannot read `{}`: {e}", path.display()),
        )
        .with_help("check the path and its permissions")
    })?;
    let summary = compare::summarize(&bytes).map_err(|e| {
        Error::new(
            "invalid-kernel-image",
            format!("`{}` cannot be read: {e}", path.display()),
        )
        .with_help("rebuild it; a file cut short by a failed copy reads this way")
    })?;
    Ok(Side {
        path: path.display().to_string(),
        summary,
    })
}

fn pair(name: String, old: &Path, new: &Path) -> Result<Pair, Error> {
    let (old, new) = (side(old)?, side(new)?);
    let differences = compare::compare(&old.summary, &new.summary);
    Ok(Pair {
        name,
        old,
        new,
        differences,
    })
}

fn report(old: &Path, new: &Path) -> Result<Report, Error> {
    let kind = |p: &Path| {
        std::fs::metadata(p).map(|m| m.is_dir()).map_err(|e| {
            Error::new(
                "invalid-argument",
                format!("cannot compare `{}`: {e}", p.display()),
            )
            .with_help("name two output files, or two output directories (OUT_DIRs)")
        })
    };
    let (mut pairs, mut only_old, mut only_new) = (Vec::new(), Vec::new(), Vec::new());
    match (kind(old)?, kind(new)?) {
        (false, false) => {
            let name = new
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            pairs.push(pair(name, old, new)?);
        }
        (true, true) => {
            let (a, b) = (outputs(old), outputs(new));
            for (name, pa) in &a {
                match b.get(name) {
                    Some(pb) => pairs.push(pair(name.clone(), pa, pb)?),
                    None => only_old.push(name.clone()),
                }
            }
            only_new.extend(b.keys().filter(|n| !a.contains_key(*n)).cloned());
        }
        _ => {
            return Err(Error::new(
                "invalid-argument",
                format!(
                    "`{}` and `{}`: one is a directory, the other a file",
                    old.display(),
                    new.display()
                ),
            )
            .with_help("compare two files, or two output directories"))
        }
    }
    if pairs.is_empty() && only_old.is_empty() && only_new.is_empty() {
        return Err(Error::new(
            "invalid-argument",
            format!(
                "no build outputs (.ptx, .cubin, .fatbin, .a, .lib) in `{}` or `{}`",
                old.display(),
                new.display()
            ),
        )
        .with_help("name the OUT_DIRs of the two builds (`cargo build -vv` prints them), or two output files"));
    }
    let same = pairs.iter().all(|p| p.differences.is_empty())
        && only_old.is_empty()
        && only_new.is_empty();
    Ok(Report {
        schema: 1,
        old: old.display().to_string(),
        new: new.display().to_string(),
        same,
        pairs,
        only_old,
        only_new,
    })
}

/// What a summary holds, in one line.
fn describe(s: &Summary) -> String {
    let list = |set: &std::collections::BTreeSet<String>, none: &str| {
        if set.is_empty() {
            none.to_string()
        } else {
            set.iter().cloned().collect::<Vec<_>>().join(" ")
        }
    };
    let mut parts = vec![
        format!("{} kernel(s)", s.kernels.len()),
        format!("SASS {}", list(&s.sass, "none")),
        format!("PTX {}", list(&s.ptx, "none")),
    ];
    match s.device_debug {
        DeviceDebug::None => {}
        DeviceDebug::LineInfo => parts.push("line info".into()),
        DeviceDebug::Full => parts.push("device debug (-G)".into()),
    }
    if let Some(h) = &s.host {
        parts.push(format!(
            "host: {} object(s), {} symbols defined, {} needed",
            h.objects,
            h.defined.len(),
            h.undefined.len()
        ));
    }
    parts.join(", ")
}

/// At most a few names of a long list, then how many more.
fn names(list: &[String]) -> String {
    const SHOWN: usize = 6;
    let mut s = list
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if list.len() > SHOWN {
        s.push_str(&format!(" and {} more", list.len() - SHOWN));
    }
    s
}

fn print(r: &Report, out: &Style) {
    outln!(
        "{}",
        out.status(
            Tone::Good,
            "Comparing",
            &format!(
                "{} (OLD) with {} (NEW): {} file(s) in both, {} only in OLD, {} only in NEW",
                r.old,
                r.new,
                r.pairs.len(),
                r.only_old.len(),
                r.only_new.len()
            )
        )
    );
    for p in &r.pairs {
        let (a, b) = (&p.old.summary, &p.new.summary);
        outln!(
            "{} ({} → {})",
            out.bold(&p.name),
            human_size(a.size),
            human_size(b.size)
        );
        if p.differences.is_empty() {
            outln!("  {}: {}", out.paint(Tone::Good, "same"), describe(b));
            continue;
        }
        outln!("  OLD: {}", describe(a));
        outln!("  NEW: {}", describe(b));
        for d in &p.differences {
            let flag = d.flag.map(|f| format!(" [{f}]")).unwrap_or_default();
            outln!("  {} {}{flag}", out.paint(Tone::Bad, "differs:"), d.aspect);
            if !d.only_old.is_empty() {
                outln!("    OLD only: {}", names(&d.only_old));
            }
            if !d.only_new.is_empty() {
                outln!("    NEW only: {}", names(&d.only_new));
            }
            outln!("    {}", d.explanation);
        }
    }
    for (side, list) in [("OLD", &r.only_old), ("NEW", &r.only_new)] {
        for n in list.iter() {
            outln!("{} {n}: only in {side}", out.paint(Tone::Bad, "missing:"));
        }
    }
    let verdict = if r.same {
        out.status(
            Tone::Good,
            "Same",
            "outputs: kernels, targets, debug information and host symbols match",
        )
    } else {
        out.status(
            Tone::Bad,
            "Different",
            "outputs: each difference and the flag that explains it are listed above",
        )
    };
    outln!("{verdict}");
}

/// Runs `inspect --compare OLD NEW`; returns the exit code.
pub(super) fn exec(old: &Path, new: &Path, json: bool, out: &Style, err: &Style) -> i32 {
    match report(old, new) {
        Ok(r) => {
            if json {
                outln!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
            } else {
                print(&r, out);
            }
            if r.same {
                exit::RUNS
            } else {
                exit::WILL_NOT_RUN
            }
        }
        Err(e) => {
            errln!("{}", err.cuda_error(&e));
            exit::UNUSABLE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_pair_outputs_by_name_shallowest_first() {
        let d = tempfile::tempdir().unwrap();
        let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n}\n";
        for (p, text) in [
            ("a/k.ptx", ptx),
            ("a/deep/x/k.ptx", "junk"),
            ("a/notes.txt", "x"),
            ("b/sub/k.ptx", ptx),
            ("b/extra.ptx", ptx),
        ] {
            let f = d.path().join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, text).unwrap();
        }
        let r = report(&d.path().join("a"), &d.path().join("b")).unwrap();
        assert_eq!(r.pairs.len(), 1);
        assert!(r.pairs[0].old.path.ends_with("a/k.ptx"));
        assert!(r.pairs[0].differences.is_empty());
        assert_eq!(r.only_new, ["extra.ptx"]);
        assert!(!r.same);
        let e = report(&d.path().join("a"), &d.path().join("a/k.ptx")).unwrap_err();
        assert!(e.message.contains("one is a directory"), "{e}");
    }
}
