//! The import graph of a crate's own modules, read from its sources: which
//! file's code names which other file's items through `crate::`, `super::`
//! or `self::` paths (in `use` trees and inline). Enough to check that
//! imports point one way; no macro expansion, no name resolution beyond
//! "the longest module prefix of the path".
//!
//! Comments, string and char literals are blanked first, and `#[cfg(test)]`
//! modules are left out: tests may reach anywhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One source file of a crate and the module path it defines
/// (`src/a/b.rs` and `src/a/b/mod.rs` are `["a", "b"]`; `lib.rs` is `[]`).
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Relative to the crate's `src/`, with `/` separators.
    pub file: String,
    pub module: Vec<String>,
}

/// One import: `from` names an item of `to` (both relative to `src/`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Import {
    pub from: String,
    pub to: String,
    /// The path as written, for messages.
    pub path: String,
    /// `to` is `from`'s ancestor or descendant module (a folder's `mod.rs`
    /// and the files in it).
    pub parent_child: bool,
    /// The path goes on past `to`'s module into items `to` holds (for a
    /// `mod.rs` that only re-exports: an import through a re-export).
    pub into_items: bool,
}

/// Every `.rs` file under `src` (binaries' `main.rs` included).
pub fn source_files(src: &Path) -> Vec<SourceFile> {
    let mut files = Vec::new();
    collect(src, src, &mut files);
    files.sort_by(|a, b| a.file.cmp(&b.file));
    files
}

fn collect(src: &Path, dir: &Path, out: &mut Vec<SourceFile>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(src, &p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p.strip_prefix(src).unwrap_or(&p);
            let file = rel.to_string_lossy().replace('\\', "/");
            let mut module: Vec<String> = file
                .trim_end_matches(".rs")
                .split('/')
                .map(str::to_string)
                .collect();
            // `a/mod.rs` is module `a`; `lib.rs` and `main.rs` are the root.
            if module.last().map(String::as_str) == Some("mod")
                || file == "lib.rs"
                || file == "main.rs"
            {
                module.pop();
            }
            // `src/bin/x.rs` is its own crate root.
            if module.first().map(String::as_str) == Some("bin") {
                continue;
            }
            out.push(SourceFile { file, module });
        }
    }
}

/// The imports between a crate's own files.
pub fn imports(src: &Path) -> Vec<Import> {
    let files = source_files(src);
    let by_module: BTreeMap<Vec<String>, String> = files
        .iter()
        .map(|f| (f.module.clone(), f.file.clone()))
        .collect();
    let mut out = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(src.join(&f.file)).unwrap_or_default();
        let code = without_test_modules(&blank_comments_and_literals(&text));
        for path in paths_in(&code) {
            let Some(absolute) = absolute(&f.module, &path) else {
                continue;
            };
            // The longest prefix that is a file of this crate.
            let Some(n) = (0..=absolute.len())
                .rev()
                .find(|&n| by_module.contains_key(&absolute[..n]))
            else {
                continue;
            };
            let to_module = &absolute[..n];
            if to_module == f.module.as_slice() {
                continue;
            }
            let parent_child = f.module.starts_with(to_module) || to_module.starts_with(&f.module);
            out.push(Import {
                from: f.file.clone(),
                to: by_module[to_module].clone(),
                path: path.join("::"),
                parent_child,
                into_items: n < absolute.len(),
            });
        }
    }
    out.sort();
    out.dedup();
    out
}

/// `path` (starting with `crate`, `super` or `self`) as an absolute module
/// path, seen from `module`.
fn absolute(module: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut at: Vec<String> = match path.first()?.as_str() {
        "crate" => Vec::new(),
        "self" | "super" => module.to_vec(),
        _ => return None,
    };
    let mut rest = &path[1..];
    if path[0] == "super" {
        at.pop()?;
    }
    while rest.first().map(String::as_str) == Some("super") {
        at.pop()?;
        rest = &rest[1..];
    }
    at.extend(rest.iter().filter(|s| *s != "self" && *s != "*").cloned());
    Some(at)
}

/// Every `crate::`/`super::`/`self::` path in the code: `use` trees
/// expanded, then inline paths outside them.
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let use_re = regex::Regex::new(r"\buse\s+([^;]+);").unwrap();
    let spaces = regex::Regex::new(r"\s+").unwrap();
    let around = regex::Regex::new(r" ?(::|\{|\}|,) ?").unwrap();
    let mut paths = Vec::new();
    for c in use_re.captures_iter(code) {
        let tree = spaces.replace_all(c[1].trim(), " ");
        let tree = around.replace_all(&tree, "$1");
        expand_tree(&tree, &[], &mut paths);
    }
    let rest = use_re.replace_all(code, " ");
    let inline = regex::Regex::new(r"\b(?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+").unwrap();
    for m in inline.find_iter(&rest) {
        paths.push(m.as_str().split("::").map(str::to_string).collect());
    }
    paths
        .into_iter()
        .filter(|p| {
            matches!(
                p.first().map(String::as_str),
                Some("crate" | "super" | "self")
            )
        })
        .collect()
}

/// `a::b::{c,d::{e,f as g}}` → `a::b::c`, `a::b::d::e`, `a::b::d::f`.
fn expand_tree(tree: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let tree = tree.trim_start_matches("::");
    let segments = |s: &str| -> Vec<String> {
        s.split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut path = prefix.to_vec();
    let Some(open) = tree.find('{') else {
        path.extend(segments(tree.split(" as ").next().unwrap_or(tree)));
        out.push(path);
        return;
    };
    path.extend(segments(&tree[..open]));
    let inner = &tree[open + 1..];
    let inner = inner.strip_suffix('}').unwrap_or(inner);
    let (mut depth, mut start) = (0, 0);
    for (i, ch) in inner.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                if start < i {
                    expand_tree(&inner[start..i], &path, out);
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < inner.len() {
        expand_tree(&inner[start..], &path, out);
    }
}

/// The text with comments, string literals and char literals replaced by
/// spaces (newlines kept), so braces and paths inside them are not read.
pub fn blank_comments_and_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && matches!(next, Some('"' | '#'))
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_'))
        {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                match chars.get(j) {
                    None => break,
                    Some('"') if (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) => {
                        j += 1 + hashes;
                        break;
                    }
                    _ => j += 1,
                }
            }
            for &ch in &chars[i..j.min(chars.len())] {
                out.push(blank(ch));
            }
            i = j;
        } else if c == '"' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                if chars[j] == '\\' {
                    j += 1;
                }
                j += 1;
            }
            for &ch in &chars[i..(j + 1).min(chars.len())] {
                out.push(blank(ch));
            }
            i = j + 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{1F600}'), else a lifetime.
            let end = if next == Some('\\') {
                chars[i + 2..]
                    .iter()
                    .position(|&ch| ch == '\'')
                    .map(|p| i + 2 + p)
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    for &ch in &chars[i..=e] {
                        out.push(blank(ch));
                    }
                    i = e + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The code without `#[cfg(test)]` (or `#[cfg(all(test, …))]`) modules.
pub fn without_test_modules(code: &str) -> String {
    let re = regex::Regex::new(r"#\[cfg\([^\]]*\btest\b[^\]]*\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{").unwrap();
    let mut out = String::new();
    let mut rest = code;
    while let Some(m) = re.find(rest) {
        out.push_str(&rest[..m.start()]);
        let mut depth = 1;
        let mut end = rest.len();
        for (i, ch) in rest[m.end()..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = m.end() + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The crate directory of a workspace member, from the tests' manifest dir.
pub fn crate_src(member: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(member)
        .join("src")
}
