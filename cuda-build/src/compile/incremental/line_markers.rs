//! The files a preprocessed translation unit (`.ii`) was read from, taken
//! from its line markers.
//!
//! nvcc keeps its preprocessed files with `--keep --keep-dir DIR`: the
//! device side (`*.cpp1.ii`, one per virtual arch) and, for `-c`, the host
//! side (`*.cpp4.ii`). Their line markers name every file the preprocessor
//! entered, so they give a job's dependencies without the extra host
//! preprocessing pass that `-MD` costs nvcc, and they include headers that
//! only the device side reads (`#ifdef __CUDA_ARCH__`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Every file named by a line marker of the `.ii`/`.i` files in `dir`, in
/// order of first appearance, without the preprocessor's pseudo-files
/// (`<built-in>`, `<command-line>`). None when `dir` holds no preprocessed
/// file with a marker (the caller then asks nvcc for a depfile instead).
pub(crate) fn files_in(dir: &Path) -> Option<Vec<PathBuf>> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("ii" | "i")))
        .collect();
    // Device side first, then host: a stable order for the manifest.
    names.sort();
    // Keyed by the path's bytes: `Path`'s hash walks components, slow
    // unoptimised (see `FileHashes`).
    let mut seen: HashSet<std::ffi::OsString> = HashSet::new();
    let mut out = Vec::new();
    for f in names {
        let Ok(text) = std::fs::read(&f) else {
            continue;
        };
        for p in files(&text) {
            if seen.insert(p.as_os_str().to_owned()) {
                out.push(p);
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The files named by the line markers of one preprocessed text, in order
/// of first appearance. GCC and Clang write `# 12 "path" flags`; MSVC's
/// `cl /E` writes `#line 12 "path"` with backslashes doubled.
pub(crate) fn files(text: &[u8]) -> Vec<PathBuf> {
    let mut seen: HashSet<&[u8]> = HashSet::new();
    let mut out = Vec::new();
    // Markers only ever start a line, and `#` is rare elsewhere in
    // preprocessed code. memchr finds each `#`: a `.ii` runs to megabytes and
    // a hundred thousand lines, and build scripts are unoptimised by default,
    // where each step of the iterator costs; this takes one per `#`, not one
    // per line.
    let at_line_start = |i: usize| i == 0 || text[i - 1] == b'\n';
    // Most markers name the file the one before named (the preprocessor
    // marks each jump within a file): those skip the set and its hashing.
    let mut last: &[u8] = &[];
    for i in memchr::memchr_iter(b'#', text).filter(|&i| at_line_start(i)) {
        if let Some(name) = marker_name(&text[i + 1..]) {
            if name == last {
                continue;
            }
            last = name;
            if !name.starts_with(b"<") && seen.insert(name) {
                out.push(PathBuf::from(unescape(name)));
            }
        }
    }
    out
}

/// The quoted name of a marker, given the text after its `#`: spaces,
/// `line` (optional), spaces, a line number, spaces, `"name"`.
fn marker_name(s: &[u8]) -> Option<&[u8]> {
    let mut s = trim_spaces(s);
    if let Some(rest) = s.strip_prefix(b"line") {
        s = trim_spaces(rest);
    }
    let digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let s = trim_spaces(&s[digits..]);
    let s = s.strip_prefix(b"\"")?;
    let mut j = 0;
    while j < s.len() {
        match s[j] {
            b'\\' => j += 2,
            b'"' => return Some(&s[..j]),
            b'\n' => return None,
            _ => j += 1,
        }
    }
    None
}

fn trim_spaces(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
    &s[n..]
}

/// A marker's name as a path: `\\` → `\`, `\"` → `"`, and GCC's octal
/// escapes (`\ooo`) for other bytes.
fn unescape(name: &[u8]) -> String {
    let mut out: Vec<u8> = Vec::with_capacity(name.len());
    let mut j = 0;
    while j < name.len() {
        if name[j] == b'\\' && j + 1 < name.len() {
            let octal = name[j + 1..]
                .iter()
                .take(3)
                .take_while(|b| (b'0'..=b'7').contains(b))
                .count();
            if octal > 0 {
                let digits = std::str::from_utf8(&name[j + 1..j + 1 + octal]).unwrap_or("0");
                out.push(u8::from_str_radix(digits, 8).unwrap_or(b'?'));
                j += 1 + octal;
            } else {
                out.push(name[j + 1]);
                j += 2;
            }
        } else {
            out.push(name[j]);
            j += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcc_markers_in_order_without_pseudo_files() {
        let ii = b"# 0 \"src/a.cu\"\n# 0 \"<built-in>\"\n# 0 \"<command-line>\"\n\
# 1 \"/usr/include/stdc-predef.h\" 1 3 4\nint x;\n# 1 \"src/h.cuh\" 1\n\
# 3 \"src/a.cu\" 2\n#pragma once\n  # 9 \"not/at/line/start.h\"\n";
        assert_eq!(
            files(ii),
            [
                PathBuf::from("src/a.cu"),
                PathBuf::from("/usr/include/stdc-predef.h"),
                PathBuf::from("src/h.cuh")
            ]
        );
    }

    #[test]
    fn msvc_line_directives_and_escapes() {
        let ii = b"#line 1 \"C:\\\\src\\\\a.cu\"\r\n#line 7 \"dir\\\"q\\\".h\"\r\n# 2 \"sp ace\\040x.h\" 1\n";
        assert_eq!(
            files(ii),
            [
                PathBuf::from("C:\\src\\a.cu"),
                PathBuf::from("dir\"q\".h"),
                PathBuf::from("sp ace x.h")
            ]
        );
    }

    #[test]
    fn not_markers() {
        // `#define`, `#pragma`, a number without a name, an unterminated name.
        let ii = b"#define X 1\n#pragma GCC diagnostic push\n# 12\n# 3 \"open\n";
        assert!(files(ii).is_empty());
    }

    #[test]
    fn a_directory_without_preprocessed_files_is_none() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.ptx"), "# 1 \"x.h\"\n").unwrap();
        assert_eq!(files_in(d.path()), None);
        std::fs::write(d.path().join("a.cpp4.ii"), "# 1 \"h.h\" 1\n").unwrap();
        std::fs::write(d.path().join("a.cpp1.ii"), "# 1 \"d.h\" 1\n# 1 \"h.h\" 1\n").unwrap();
        assert_eq!(
            files_in(d.path()).unwrap(),
            [PathBuf::from("d.h"), PathBuf::from("h.h")]
        );
    }
}
