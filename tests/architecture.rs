//! docs/ARCHITECTURE.md is a true map of the source tree: its "Every file"
//! section places every `*.rs` under each crate's `src/` (and no file that
//! is gone), and every `.rs` file the document names anywhere exists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const CRATES: &[&str] = &["cuda-toolchain", "cuda-build", "cuda-install", "cargo-cuda"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn architecture_md() -> String {
    std::fs::read_to_string(repo().join("docs/ARCHITECTURE.md")).expect("docs/ARCHITECTURE.md")
}

/// Every `.rs` file under `dir`, relative to it, with `/` separators.
fn rs_files(dir: &Path) -> BTreeSet<String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(root).unwrap_or(&p);
                out.insert(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

/// The "Every file" section: for each `### <crate> (`<crate>/src/`)`
/// heading, the files of its table rows (`` | `path` | job | ``).
fn mapped(doc: &str) -> BTreeMap<String, BTreeSet<String>> {
    let start = doc
        .find("\n## Every file")
        .expect("ARCHITECTURE.md has an `## Every file` section");
    let section = &doc[start + 1..];
    let section = match section[3..].find("\n## ") {
        Some(end) => &section[..end + 3],
        None => section,
    };
    let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in section.lines() {
        if let Some(h) = line.strip_prefix("### ") {
            current = CRATES
                .iter()
                .find(|c| h.split_whitespace().next() == Some(**c))
                .map(|c| c.to_string());
            continue;
        }
        let (Some(c), Some(row)) = (&current, line.strip_prefix("| `")) else {
            continue;
        };
        if let Some(end) = row.find('`') {
            map.entry(c.clone())
                .or_default()
                .insert(row[..end].to_string());
        }
    }
    map
}

#[test]
fn every_source_file_is_on_the_map() {
    let map = mapped(&architecture_md());
    let mut problems = Vec::new();
    for c in CRATES {
        let have = rs_files(&repo().join(c).join("src"));
        assert!(!have.is_empty(), "{c}/src has no .rs files");
        let named = map.get(*c).cloned().unwrap_or_default();
        for f in have.difference(&named) {
            problems.push(format!("{c}/src/{f} is not in the map: add a row for it"));
        }
        for f in named.difference(&have) {
            problems.push(format!(
                "{c}/src/{f} is in the map but does not exist: remove or rename its row"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "docs/ARCHITECTURE.md, section \"Every file\", is out of date:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn every_file_the_document_names_exists() {
    let doc = architecture_md();
    // Fenced blocks show generated code, not the tree.
    let fences = regex::Regex::new(r"(?s)```.*?```").unwrap();
    let doc = fences.replace_all(&doc, "");
    let spans = regex::Regex::new(r"`([^`\n]+)`").unwrap();
    let path_like = regex::Regex::new(r"^[A-Za-z0-9_./-]+\.rs$").unwrap();
    let crate_files: Vec<(String, BTreeSet<String>)> = CRATES
        .iter()
        .map(|c| (c.to_string(), rs_files(&repo().join(c).join("src"))))
        .collect();
    let root = repo();
    let mut missing = BTreeSet::new();
    for s in spans.captures_iter(&doc) {
        let name = &s[1];
        if !path_like.is_match(name) {
            continue;
        }
        let first = name.split('/').next().unwrap_or("");
        let exists = if name.contains('/') && root.join(first).is_dir() && first != "src" {
            // From the workspace root: `cargo-cuda/src/toolchain.rs`, `tests/boundaries.rs`.
            root.join(name).is_file()
        } else if name.contains('/') {
            // Inside a crate's src, whole or its tail: `compile/run/pool.rs`,
            // `run/pool.rs`, `src/cuda_errors.rs`.
            let rel = name.strip_prefix("src/").unwrap_or(name);
            let tail = format!("/{rel}");
            crate_files
                .iter()
                .any(|(_, fs)| fs.iter().any(|f| f == rel || f.ends_with(&tail)))
        } else {
            // A bare file name: some crate has it.
            crate_files
                .iter()
                .any(|(_, fs)| fs.iter().any(|f| f.rsplit('/').next() == Some(name)))
                || root.join(name).is_file()
        };
        if !exists {
            missing.insert(name.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md names files that do not exist: {missing:?}"
    );
}

/// The map check is strict both ways on a planted tree.
#[test]
fn the_map_check_sees_a_missing_and_a_stale_row() {
    let doc = "# A\n\n## Every file\n\n### cuda-build (`cuda-build/src/`)\n\n| file | job |\n|---|---|\n| `lib.rs` | x |\n| `gone.rs` | y |\n\n## Next\n\n| `not/in/the/map.rs` | z |\n";
    let map = mapped(doc);
    let named = &map["cuda-build"];
    assert_eq!(
        named.iter().map(String::as_str).collect::<Vec<_>>(),
        ["gone.rs", "lib.rs"]
    );
    let have: BTreeSet<String> = ["lib.rs", "new.rs"].iter().map(|s| s.to_string()).collect();
    assert_eq!(have.difference(named).collect::<Vec<_>>(), ["new.rs"]);
    assert_eq!(named.difference(&have).collect::<Vec<_>>(), ["gone.rs"]);
}
