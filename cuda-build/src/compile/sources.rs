//! Turning `file`/`dir`/`glob`/`exclude` into a sorted list of sources.
//!
//! Globs use `*` and `?` within one path component and `**` for any number of
//! directories (`cu/**/*.cu`). Relative paths are taken from the package
//! directory (`CARGO_MANIFEST_DIR`). Excludes are globs matched against the
//! path relative to the package directory, or against the file name alone.

use crate::Error;
use std::path::{Component, Path, PathBuf};

/// Extensions collected from directories and `**` globs.
const SOURCE_EXTS: &[&str] = &["cu"];

pub(crate) struct Sources {
    pub files: Vec<PathBuf>,
    /// Directories to watch for new files (`rerun-if-changed` on a directory).
    pub watch_dirs: Vec<PathBuf>,
}

pub(crate) fn collect(
    base: &Path,
    files: &[PathBuf],
    dirs: &[PathBuf],
    globs: &[String],
    excludes: &[String],
) -> Result<Sources, Error> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut watch_dirs = Vec::new();
    for f in files {
        let p = base.join(f);
        if !p.is_file() {
            let what = if p.is_dir() {
                "is a directory"
            } else {
                "does not exist"
            };
            return Err(Error::new(
                "source-not-found",
                format!("CUDA source `{}` {what}", p.display()),
            )
            .with_help(format!(
                "check the path given to Build::file (relative paths are taken from {})",
                base.display()
            )));
        }
        out.push(p);
    }
    for d in dirs {
        let p = base.join(d);
        if !p.is_dir() {
            return Err(Error::new(
                "source-not-found",
                format!("source directory `{}` does not exist", p.display()),
            )
            .with_help("check the path given to Build::dir"));
        }
        let before = out.len();
        walk(&p, &mut |f| {
            if has_source_ext(f) {
                out.push(f.to_path_buf());
            }
        });
        if out.len() == before {
            return Err(Error::new(
                "no-cuda-sources",
                format!("source directory `{}` holds no .cu files", p.display()),
            )
            .with_help("add .cu files there, or point Build::dir at the directory that has them"));
        }
        watch_dirs.push(p);
    }
    for g in globs {
        let pat = if Path::new(g).is_absolute() {
            g.clone()
        } else {
            format!("{}/{}", base.display(), g)
        };
        let (root, rest) = split_glob(&pat);
        let before = out.len();
        if rest.is_empty() {
            if root.is_file() {
                out.push(root.clone());
            }
        } else if root.is_dir() {
            walk(&root, &mut |f| {
                if let Ok(rel) = f.strip_prefix(&root) {
                    if match_path(&rest, &components(rel)) {
                        out.push(f.to_path_buf());
                    }
                }
            });
            watch_dirs.push(root.clone());
        }
        if out.len() == before {
            return Err(Error::new(
                "no-cuda-sources",
                format!("glob `{g}` matched no files (searched under {})", root.display()),
            )
            .with_help("check the pattern given to Build::glob: `*` stays within a directory, `**` crosses them"));
        }
    }
    let excl: Vec<Vec<String>> = excludes.iter().map(|e| components(Path::new(e))).collect();
    out.retain(|f| {
        let rel = f.strip_prefix(base).unwrap_or(f);
        let rel_c = components(rel);
        let name = vec![rel_c.last().cloned().unwrap_or_default()];
        !excl
            .iter()
            .any(|e| match_path(e, &rel_c) || match_path(e, &name))
    });
    out.sort();
    out.dedup();
    if out.is_empty() {
        return Err(Error::new("no-cuda-sources", "no CUDA sources to compile")
            .with_help("add sources with Build::file, Build::dir or Build::glob (or loosen Build::exclude)"));
    }
    Ok(Sources {
        files: out,
        watch_dirs,
    })
}

fn has_source_ext(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| SOURCE_EXTS.contains(&e))
}

fn walk(dir: &Path, f: &mut dyn FnMut(&Path)) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        // Hidden entries are editors' and our own temporary files.
        if name.starts_with('.') {
            continue;
        }
        if p.is_dir() {
            walk(&p, f);
        } else {
            f(&p);
        }
    }
}

fn components(p: &Path) -> Vec<String> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect()
}

/// Splits a pattern into its literal leading directory and the wildcard rest.
fn split_glob(pat: &str) -> (PathBuf, Vec<String>) {
    let mut root = PathBuf::from(if pat.starts_with('/') { "/" } else { "" });
    let parts: Vec<&str> = pat.split('/').filter(|s| !s.is_empty()).collect();
    let mut i = 0;
    while i < parts.len() && !parts[i].contains(['*', '?']) {
        root.push(parts[i]);
        i += 1;
    }
    (root, parts[i..].iter().map(|s| s.to_string()).collect())
}

/// Matches path components against pattern components (`**` = any number).
pub(crate) fn match_path(pat: &[String], path: &[String]) -> bool {
    match pat.first() {
        None => path.is_empty(),
        Some(p) if p == "**" => (0..=path.len()).any(|i| match_path(&pat[1..], &path[i..])),
        Some(p) => {
            !path.is_empty()
                && match_name(p.as_bytes(), path[0].as_bytes())
                && match_path(&pat[1..], &path[1..])
        }
    }
}

fn match_name(p: &[u8], s: &[u8]) -> bool {
    match (p.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => match_name(&p[1..], s) || (!s.is_empty() && match_name(p, &s[1..])),
        (Some(b'?'), Some(_)) => match_name(&p[1..], &s[1..]),
        (Some(a), Some(b)) if a == b => match_name(&p[1..], &s[1..]),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        components(Path::new(s))
    }

    #[test]
    fn glob_matching() {
        assert!(match_path(&v("cu/*.cu"), &v("cu/a.cu")));
        assert!(!match_path(&v("cu/*.cu"), &v("cu/x/a.cu")));
        assert!(match_path(&v("cu/**/*.cu"), &v("cu/x/y/a.cu")));
        assert!(match_path(&v("cu/**/*.cu"), &v("cu/a.cu")));
        assert!(match_path(&v("a?.cu"), &v("ab.cu")));
        assert!(!match_path(&v("*.cu"), &v("a.cuh")));
    }

    #[test]
    fn collect_dir_glob_exclude() {
        let d = tempfile::tempdir().unwrap();
        let b = d.path();
        std::fs::create_dir_all(b.join("cu/sub")).unwrap();
        for f in ["cu/a.cu", "cu/b.cu", "cu/sub/c.cu", "cu/h.cuh", "cu/.x.cu"] {
            std::fs::write(b.join(f), "").unwrap();
        }
        let s = collect(b, &[], &[PathBuf::from("cu")], &[], &["b.cu".into()]).unwrap();
        let names: Vec<_> = s
            .files
            .iter()
            .map(|f| f.strip_prefix(b).unwrap().to_owned())
            .collect();
        assert_eq!(
            names,
            [PathBuf::from("cu/a.cu"), PathBuf::from("cu/sub/c.cu")]
        );
        let s = collect(b, &[], &[], &["cu/*.cu".into()], &[]).unwrap();
        assert_eq!(s.files.len(), 2);
        let e = collect(b, &[], &[], &["cu/*.cpp".into()], &[])
            .err()
            .unwrap();
        assert_eq!(e.code, "no-cuda-sources");
        assert!(e.message.contains("cu/*.cpp"));
        let e = collect(b, &[PathBuf::from("nope.cu")], &[], &[], &[])
            .err()
            .unwrap();
        assert_eq!(e.code, "source-not-found");
        assert!(e.message.contains("nope.cu"));
        std::fs::create_dir_all(b.join("empty")).unwrap();
        let e = collect(b, &[], &[PathBuf::from("empty")], &[], &[])
            .err()
            .unwrap();
        assert_eq!(e.code, "no-cuda-sources");
    }
}
