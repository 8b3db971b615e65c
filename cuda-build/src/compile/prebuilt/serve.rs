//! Which shipped image, if any, a job may use instead of compiling: the one
//! built by the same `Build` from the same source, with the same output
//! role, flags and defines, the same target triple (static libraries), every
//! package-local input with the recorded content, and targets that serve the
//! requested arch plan. Otherwise the reason, in words: what differs.
//!
//! Serving follows the run rules `cargo cuda inspect` applies
//! (`Arch::sass_runs_on`, `Arch::ptx_jits_on`): each requested SASS target
//! needs SASS that runs natively on its GPU; a requested PTX target needs
//! every GPU its PTX would JIT on (each known compute capability at or
//! above it, and a future one) to be covered by shipped SASS or PTX. Among
//! the images that serve, the one built for exactly the requested targets
//! is taken first (the bytes a local nvcc would write), then one holding
//! them all, then the nearest by the run rules.

use crate::compile::prebuilt::manifest::Record;
use cuda_toolchain::arch::{Arch, ComputeCapability};

/// What a job would compile, in the manifest's terms.
#[derive(Debug, Clone)]
pub(crate) struct Want<'a> {
    pub module: &'a str,
    pub source: &'a str,
    pub kind: &'a str,
    pub role: &'a str,
    pub target: Option<&'a str>,
    pub flags: &'a [String],
    pub defines: &'a [String],
    pub targets: &'a [String],
}

/// Why no shipped image serves a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mismatch {
    /// What differs, in words (an edited file, a flag, an arch not shipped).
    pub what: String,
    /// What would make a shipped image usable.
    pub help: String,
}

/// A target in nvcc's words: SASS (`sm_80`) or PTX (`compute_90`).
fn parse_target(s: &str) -> Option<(bool, Arch)> {
    if let Some(a) = s.strip_prefix("sm_") {
        return Arch::parse(a).ok().map(|a| (true, a));
    }
    s.strip_prefix("compute_")
        .and_then(|a| Arch::parse(a).ok())
        .map(|a| (false, a))
}

/// Whether `shipped` runs everywhere `wanted` does (see the module doc):
/// None if not, else its rank (0 the same targets, 1 a superset, 2 by the
/// run rules).
pub(crate) fn serves(shipped: &[String], wanted: &[String]) -> Option<u8> {
    let mut have_set: Vec<&String> = shipped.iter().collect();
    let mut want_set: Vec<&String> = wanted.iter().collect();
    have_set.sort();
    want_set.sort();
    if have_set == want_set {
        return Some(0);
    }
    if wanted.iter().all(|w| shipped.contains(w)) {
        return Some(1);
    }
    let have: Vec<(bool, Arch)> = shipped.iter().filter_map(|s| parse_target(s)).collect();
    let runs = |cc: ComputeCapability, native: bool| {
        have.iter().any(|&(sass, a)| {
            if sass {
                a.sass_runs_on(cc)
            } else {
                !native && a.ptx_jits_on(cc)
            }
        })
    };
    for w in wanted {
        let (sass, a) = parse_target(w)?;
        if sass {
            if !runs(a.cc, true) {
                return None;
            }
            continue;
        }
        // Every GPU this PTX would JIT on, known or to come.
        let future = ComputeCapability::new(99, 0);
        let probes = cuda_toolchain::facts::ARCH_SPANS
            .iter()
            .map(|s| s.cc)
            .chain([a.cc, future]);
        for cc in probes {
            if a.ptx_jits_on(cc) && !runs(cc, false) {
                return None;
            }
        }
    }
    Some(2)
}

/// The best shipped record for `want`, or what differs. `sha_of` gives a
/// package-local file's SHA-256 now (None: missing).
pub(crate) fn find<'r>(
    records: &'r [Record],
    want: &Want,
    sha_of: &dyn Fn(&str) -> Option<String>,
) -> Result<&'r Record, Mismatch> {
    let who = format!("`{}` (build `{}`)", want.source, want.module);
    let same_source: Vec<&Record> = records
        .iter()
        .filter(|r| r.module == want.module && r.source == want.source)
        .collect();
    if same_source.is_empty() {
        return Err(Mismatch {
            what: format!("no image is shipped for {who}"),
            help: "the package's prebuilt images were made without this source (another feature set, or a source added since)".into(),
        });
    }
    let kinds: Vec<&Record> = same_source
        .iter()
        .copied()
        .filter(|r| r.kind == want.kind)
        .collect();
    if kinds.is_empty() {
        return Err(Mismatch {
            what: format!(
                "{who} is shipped as {}, but this build makes {}",
                list(same_source.iter().map(|r| r.kind.as_str())),
                want.kind
            ),
            help: "build it with the output kind the package was prebuilt with".into(),
        });
    }
    let targets: Vec<&Record> = kinds
        .iter()
        .copied()
        .filter(|r| want.target.is_none() || r.target.as_deref() == want.target)
        .collect();
    if targets.is_empty() {
        return Err(Mismatch {
            what: format!(
                "{who} is a static-library object shipped for {}, but this build is for `{}`",
                list(kinds.iter().filter_map(|r| r.target.as_deref())),
                want.target.unwrap_or_default()
            ),
            help:
                "static libraries are per target: build for a shipped target, or compile with nvcc"
                    .into(),
        });
    }
    let flagged: Vec<&Record> = targets
        .iter()
        .copied()
        .filter(|r| r.flags == want.flags && r.defines == want.defines)
        .collect();
    if flagged.is_empty() {
        let r = targets[0];
        let what = match difference(&r.flags, want.flags) {
            Some(d) => format!("the nvcc flags of {who} differ from the shipped image's: {d}"),
            None => match difference(&r.defines, want.defines) {
                Some(d) => format!("the defines of {who} differ from the shipped image's: {d}"),
                None => format!("the flags of {who} are the shipped ones in another order"),
            },
        };
        return Err(Mismatch {
            what,
            help: "build with the flags the package was prebuilt with (a cargo profile's -lineinfo counts: CUDA_BUILD_PROFILE_FLAGS=0 turns it off)".into(),
        });
    }
    // Inputs, each file hashed once however many records list it.
    let memo = std::cell::RefCell::new(std::collections::HashMap::<String, Option<String>>::new());
    let now = |p: &str| -> Option<String> {
        if let Some(v) = memo.borrow().get(p) {
            return v.clone();
        }
        let v = sha_of(p);
        memo.borrow_mut().insert(p.to_string(), v.clone());
        v
    };
    let mut first_diff: Option<String> = None;
    let current: Vec<&Record> = flagged
        .iter()
        .copied()
        .filter(|r| {
            let bad = r
                .inputs
                .iter()
                .find(|(p, sha)| now(p).as_deref() != Some(sha.as_str()));
            if let (Some((p, _)), None) = (bad, &first_diff) {
                first_diff = Some(match now(p) {
                    Some(_) => format!("`{p}` differs from the file the shipped image of {who} was built from (edited?)"),
                    None => format!("`{p}`, which the shipped image of {who} was built from, is missing"),
                });
            }
            bad.is_none()
        })
        .collect();
    if current.is_empty() {
        return Err(Mismatch {
            what: first_diff.unwrap_or_default(),
            help: "restore the package's file, or compile with nvcc".into(),
        });
    }
    let best = current
        .iter()
        .copied()
        .filter(|r| r.role == want.role)
        .filter_map(|r| serves(&r.targets, want.targets).map(|rank| (rank, r)))
        .min_by(|(ra, a), (rb, b)| {
            ra.cmp(rb)
                .then(a.targets.len().cmp(&b.targets.len()))
                .then(highest(&b.targets).cmp(&highest(&a.targets)))
        });
    match best {
        Some((_, r)) => Ok(r),
        None => {
            let mut shipped: Vec<String> = current
                .iter()
                .map(|r| format!("[{}]", r.targets.join(", ")))
                .collect();
            shipped.dedup();
            Err(Mismatch {
                what: format!(
                    "this build wants [{}] for {who}, and no shipped image serves it: shipped {}",
                    want.targets.join(", "),
                    shipped.join(", ")
                ),
                help: format!(
                    "set CUDA_ARCHS to shipped archs ({}), or compile with nvcc",
                    shipped_archs(&current)
                ),
            })
        }
    }
}

/// The highest arch among targets, for preferring the nearest image.
fn highest(targets: &[String]) -> Option<Arch> {
    targets
        .iter()
        .filter_map(|t| parse_target(t))
        .map(|(_, a)| a)
        .max()
}

/// The distinct archs of the records' targets, `80;86;90`.
fn shipped_archs(records: &[&Record]) -> String {
    let mut archs: Vec<Arch> = records
        .iter()
        .flat_map(|r| r.targets.iter().filter_map(|t| parse_target(t)))
        .map(|(_, a)| a)
        .collect();
    archs.sort();
    archs.dedup();
    archs
        .iter()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
        .join(";")
}

fn list<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let mut v: Vec<&str> = items.collect();
    v.sort();
    v.dedup();
    v.iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What `now` has that `shipped` lacks and the reverse, or None when both
/// hold the same items.
fn difference(shipped: &[String], now: &[String]) -> Option<String> {
    let added: Vec<&String> = now.iter().filter(|f| !shipped.contains(f)).collect();
    let removed: Vec<&String> = shipped.iter().filter(|f| !now.contains(f)).collect();
    let quote = |v: &[&String]| {
        v.iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    match (added.is_empty(), removed.is_empty()) {
        (true, true) => None,
        (false, true) => Some(format!("this build adds {}", quote(&added))),
        (true, false) => Some(format!("this build lacks {}", quote(&removed))),
        (false, false) => Some(format!(
            "this build adds {} and lacks {}",
            quote(&added),
            quote(&removed)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn run_rules() {
        let full = s(&["sm_80", "sm_86", "sm_89", "sm_90", "compute_90"]);
        assert_eq!(serves(&full, &full), Some(0));
        assert_eq!(serves(&full, &s(&["sm_89", "compute_90"])), Some(1));
        // compute_89 asks for 8.9 and up: sm_89, sm_90 and compute_90 cover it.
        assert_eq!(serves(&full, &s(&["sm_89", "compute_89"])), Some(2));
        assert_eq!(serves(&full, &s(&["sm_80", "compute_80"])), Some(2));
        assert_eq!(serves(&full, &s(&["sm_75", "compute_75"])), None);
        // SASS must be native: PTX does not serve a SASS request.
        assert_eq!(serves(&s(&["compute_80"]), &s(&["sm_86"])), None);
        // PTX serves PTX upward only.
        assert_eq!(serves(&s(&["compute_80"]), &s(&["compute_89"])), Some(2));
        assert_eq!(serves(&s(&["compute_90"]), &s(&["compute_89"])), None);
        // Without PTX, future GPUs are not covered.
        assert_eq!(serves(&s(&["sm_90"]), &s(&["compute_90"])), None);
        assert_eq!(serves(&s(&["sm_90a"]), &s(&["sm_90"])), Some(2));
        assert_eq!(serves(&s(&["sm_90"]), &s(&["sm_90a"])), Some(2));
    }

    fn rec(targets: &[&str], sha: &str) -> Record {
        Record {
            module: "ptx".into(),
            source: "src/a.cu".into(),
            kind: "ptx".into(),
            role: "out.ptx".into(),
            targets: s(targets),
            target: None,
            flags: s(&["-std=c++17", "-O3"]),
            defines: vec![],
            inputs: vec![
                ("src/a.cu".into(), "A".into()),
                ("src/h.cuh".into(), "H".into()),
            ],
            sha256: sha.into(),
            size: 1,
            file: format!("images/{sha}.zst"),
            nvcc: "13.0.88".into(),
            host_compiler: None,
            entries: vec![],
        }
    }

    #[test]
    fn the_nearest_image_and_each_reason() {
        let records = vec![
            rec(&["compute_80"], "80"),
            rec(&["compute_86"], "86"),
            rec(&["compute_90"], "90"),
        ];
        let flags = s(&["-std=c++17", "-O3"]);
        let want = |targets: &'static [&'static str]| -> Vec<String> { s(targets) };
        let t89 = want(&["compute_89"]);
        let mut w = Want {
            module: "ptx",
            source: "src/a.cu",
            kind: "ptx",
            role: "out.ptx",
            target: None,
            flags: &flags,
            defines: &[],
            targets: &t89,
        };
        let same = |p: &str| Some(if p.ends_with(".cu") { "A" } else { "H" }.to_string());
        assert_eq!(find(&records, &w, &same).unwrap().sha256, "86");
        let t86 = want(&["compute_86"]);
        w.targets = &t86;
        assert_eq!(find(&records, &w, &same).unwrap().sha256, "86");
        let t75 = want(&["compute_75"]);
        w.targets = &t75;
        let m = find(&records, &w, &same).unwrap_err();
        assert!(
            m.what.contains("[compute_75]") && m.what.contains("[compute_90]"),
            "{m:?}"
        );
        assert!(m.help.contains("80;86;90"), "{m:?}");
        w.targets = &t86;
        let edited = |p: &str| Some(if p.ends_with(".cu") { "A" } else { "X" }.to_string());
        let m = find(&records, &w, &edited).unwrap_err();
        assert!(m.what.contains("`src/h.cuh` differs"), "{m:?}");
        let gone = |p: &str| p.ends_with(".cu").then(|| "A".to_string());
        assert!(find(&records, &w, &gone)
            .unwrap_err()
            .what
            .contains("is missing"));
        let more = s(&["-std=c++17", "-O3", "-lineinfo"]);
        w.flags = &more;
        let m = find(&records, &w, &same).unwrap_err();
        assert!(m.what.contains("adds `-lineinfo`"), "{m:?}");
        w.flags = &flags;
        w.source = "src/b.cu";
        assert!(find(&records, &w, &same)
            .unwrap_err()
            .what
            .contains("no image is shipped"));
    }
}
