//! Turning `file`/`dir`/`glob`/`exclude` into a sorted list of sources.
//!
//! Globs (globset) use `*` and `?` within one path component and `**` for
//! any number of directories (`cu/**/*.cu`). Relative paths are taken from
//! the package directory (`CARGO_MANIFEST_DIR`). Excludes are globs matched
//! against the path relative to the package directory, or against the file
//! name alone. Directories are walked with walkdir, following symlinks: a
//! link back to an ancestor (a loop) is skipped with a note, and a file
//! reached twice through links is compiled once.
//!
//! A source must be a regular file. A FIFO, a device (a link to
//! `/dev/zero` would feed nvcc forever), a socket or a directory that a
//! walk would have taken (named `*.cu`, or matching the glob) is skipped
//! with a note that says what it is; given to `Build::file`, it is an
//! error that says the same.

use cuda_toolchain::Error;
use globset::{Glob, GlobMatcher};
use std::path::{Path, PathBuf};

/// Extensions collected from directories and `**` globs.
const SOURCE_EXTS: &[&str] = &["cu"];

pub(crate) struct Sources {
    pub files: Vec<PathBuf>,
    /// Directories to watch for new files (`rerun-if-changed` on a directory).
    pub watch_dirs: Vec<PathBuf>,
    /// Things skipped while walking (symlink loops), for `cargo:warning`.
    pub notes: Vec<String>,
}

fn matcher(pattern: &str, what: &str) -> Result<GlobMatcher, Error> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g: Glob| g.compile_matcher())
        .map_err(|e| {
            Error::new(
                "invalid-glob",
                format!("the pattern `{pattern}` given to {what} is not a valid glob: {e}"),
            )
            .with_help(
                "use `*` and `?` within a directory, `**` across directories, `[ab]` for a set",
            )
        })
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
    let mut notes = Vec::new();
    for f in files {
        let p = base.join(f);
        if !p.is_file() {
            return Err(Error::new(
                "source-not-found",
                format!("CUDA source `{}` {}", p.display(), not_a_file(&p)),
            )
            .with_help(format!(
                "give Build::file a regular .cu file (relative paths are taken from {})",
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
        walk(&p, &mut notes, &mut |f| has_source_ext(f), &mut |f| {
            out.push(f.to_path_buf())
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
            } else if root.symlink_metadata().is_ok() {
                skipped(&mut notes, &root);
            }
        } else if root.is_dir() {
            let m = matcher(&rest, "Build::glob")?;
            walk(
                &root,
                &mut notes,
                &mut |f| f.strip_prefix(&root).is_ok_and(|rel| m.is_match(rel)),
                &mut |f| out.push(f.to_path_buf()),
            );
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
    let excl = excludes
        .iter()
        .map(|e| matcher(e, "Build::exclude"))
        .collect::<Result<Vec<_>, _>>()?;
    out.retain(|f| {
        let rel = f.strip_prefix(base).unwrap_or(f);
        let name = Path::new(rel.file_name().unwrap_or_default());
        !excl.iter().any(|e| e.is_match(rel) || e.is_match(name))
    });
    out.sort();
    out.dedup();
    // The same file reached through a symlink (`cu/alias -> real`) is one source.
    let mut seen = std::collections::HashSet::new();
    out.retain(|f| seen.insert(std::fs::canonicalize(f).unwrap_or_else(|_| f.clone())));
    if out.is_empty() {
        return Err(Error::new("no-cuda-sources", "no CUDA sources to compile")
            .with_help("add sources with Build::file, Build::dir or Build::glob (or loosen Build::exclude)"));
    }
    Ok(Sources {
        files: out,
        watch_dirs,
        notes,
    })
}

fn has_source_ext(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| SOURCE_EXTS.contains(&e))
}

/// Every regular file under `dir` that `wanted`, in sorted order, handed to
/// `take`; hidden entries (editors' and our own temporary files) skipped.
/// What is wanted but no regular file (a FIFO, a device, a directory named
/// `x.cu`), and symlink loops, are skipped with a note.
fn walk(
    dir: &Path,
    notes: &mut Vec<String>,
    wanted: &mut dyn FnMut(&Path) -> bool,
    take: &mut dyn FnMut(&Path),
) {
    let it = walkdir::WalkDir::new(dir)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
    for entry in it {
        match entry {
            Ok(e) if e.file_type().is_file() => {
                if wanted(e.path()) {
                    take(e.path());
                }
            }
            Ok(e) if e.depth() > 0 && wanted(e.path()) => skipped(notes, e.path()),
            Ok(_) => {}
            // A link to nothing: wanted by its name, it is named like the rest.
            Err(e)
                if e.loop_ancestor().is_none()
                    && e.path().is_some_and(|p| {
                        p.symlink_metadata().is_ok() && !p.exists() && wanted(p)
                    }) =>
            {
                skipped(notes, e.path().unwrap_or(dir));
            }
            Err(e) => {
                let path = e
                    .path()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                let note = match e.loop_ancestor() {
                    Some(a) => format!(
                        "cuda-build: skipped `{path}`: a symlink loop back to `{}`",
                        a.display()
                    ),
                    None => format!("cuda-build: skipped `{path}` while looking for sources: {e}"),
                };
                if !notes.contains(&note) {
                    notes.push(note);
                }
            }
        }
    }
}

/// Notes a wanted source that is not a regular file.
fn skipped(notes: &mut Vec<String>, path: &Path) {
    let note = format!(
        "cuda-build: skipped `{}`: it {}; a CUDA source must be a regular file",
        path.display(),
        not_a_file(path)
    );
    if !notes.contains(&note) {
        notes.push(note);
    }
}

/// What `path` is, when it is not a regular file: `is a FIFO (named pipe)`,
/// `is a symlink to `/dev/zero`, a character device`, `does not exist`.
fn not_a_file(path: &Path) -> String {
    let Ok(link) = path.symlink_metadata() else {
        return "does not exist".into();
    };
    let kind = |t: std::fs::FileType| -> &'static str {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            if t.is_fifo() {
                return "a FIFO (named pipe)";
            }
            if t.is_char_device() {
                return "a character device";
            }
            if t.is_block_device() {
                return "a block device";
            }
            if t.is_socket() {
                return "a socket";
            }
        }
        if t.is_dir() {
            "a directory"
        } else if t.is_file() {
            "a file"
        } else {
            "not a regular file"
        }
    };
    if !link.file_type().is_symlink() {
        return format!("is {}", kind(link.file_type()));
    }
    let target = std::fs::read_link(path)
        .map(|t| t.display().to_string())
        .unwrap_or_default();
    match std::fs::metadata(path) {
        Ok(m) => format!("is a symlink to `{target}`, {}", kind(m.file_type())),
        Err(_) => format!("is a symlink to `{target}`, which does not exist"),
    }
}

/// Splits a pattern into its literal leading directory and the wildcard rest.
fn split_glob(pat: &str) -> (PathBuf, String) {
    let mut root = PathBuf::from(if pat.starts_with('/') { "/" } else { "" });
    let parts: Vec<&str> = pat.split('/').filter(|s| !s.is_empty()).collect();
    let mut i = 0;
    while i < parts.len() && !parts[i].contains(['*', '?', '[', '{']) {
        root.push(parts[i]);
        i += 1;
    }
    (root, parts[i..].join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pat: &str, path: &str) -> bool {
        matcher(pat, "test").unwrap().is_match(path)
    }

    #[test]
    fn glob_matching() {
        assert!(m("cu/*.cu", "cu/a.cu"));
        assert!(!m("cu/*.cu", "cu/x/a.cu"));
        assert!(m("cu/**/*.cu", "cu/x/y/a.cu"));
        assert!(m("cu/**/*.cu", "cu/a.cu"));
        assert!(m("a?.cu", "ab.cu"));
        assert!(!m("*.cu", "a.cuh"));
        // A pattern that backtracks exponentially in a naive matcher is instant here.
        let long = "a".repeat(60);
        assert!(!m(&"*a".repeat(30), &format!("{long}b")));
        assert_eq!(
            matcher("cu/[", "Build::glob").unwrap_err().code,
            "invalid-glob"
        );
    }

    #[cfg(unix)]
    #[test]
    fn symlink_loops_are_skipped_with_a_note() {
        let d = tempfile::tempdir().unwrap();
        let b = d.path();
        std::fs::create_dir_all(b.join("cu")).unwrap();
        std::fs::write(b.join("cu/a.cu"), "").unwrap();
        std::os::unix::fs::symlink(".", b.join("cu/loop")).unwrap();
        std::os::unix::fs::symlink(".", b.join("cu/loop2")).unwrap();
        std::os::unix::fs::symlink("a.cu", b.join("cu/alias.cu")).unwrap();
        let s = collect(b, &[], &[PathBuf::from("cu")], &[], &[]).unwrap();
        assert_eq!(s.files, [b.join("cu/a.cu")], "compiled once");
        assert_eq!(s.notes.len(), 2, "{:?}", s.notes);
        assert!(s.notes[0].contains("symlink loop"), "{:?}", s.notes);
        let s = collect(b, &[], &[], &["cu/**/*.cu".into()], &[]).unwrap();
        assert_eq!(s.files.len(), 1);
    }

    /// A FIFO, a link to /dev/zero and a directory named `x.cu` are no
    /// sources: `.dir()` and `.glob()` skip each with a note saying what it
    /// is, and `.file()` refuses each, saying the same.
    #[cfg(unix)]
    #[test]
    fn sources_that_are_not_regular_files_are_named() {
        let d = tempfile::tempdir().unwrap();
        let b = d.path();
        std::fs::create_dir_all(b.join("cu/dir.cu")).unwrap();
        std::fs::write(b.join("cu/a.cu"), "").unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(b.join("cu/fifo.cu"))
            .status()
            .unwrap();
        assert!(made.success());
        std::os::unix::fs::symlink("/dev/zero", b.join("cu/zero.cu")).unwrap();
        std::os::unix::fs::symlink("gone.cu", b.join("cu/dangling.cu")).unwrap();
        let says = [
            ("cu/dir.cu", "is a directory"),
            ("cu/fifo.cu", "is a FIFO (named pipe)"),
            (
                "cu/zero.cu",
                "is a symlink to `/dev/zero`, a character device",
            ),
            (
                "cu/dangling.cu",
                "is a symlink to `gone.cu`, which does not exist",
            ),
        ];
        for s in [
            collect(b, &[], &[PathBuf::from("cu")], &[], &[]).unwrap(),
            collect(b, &[], &[], &["cu/*.cu".into()], &[]).unwrap(),
        ] {
            assert_eq!(s.files, [b.join("cu/a.cu")]);
            for (path, what) in says {
                assert!(
                    s.notes
                        .iter()
                        .any(|n| n
                            .contains(&format!("skipped `{}`: it {what}", b.join(path).display()))),
                    "{path}: {:?}",
                    s.notes
                );
            }
        }
        for (path, what) in says {
            let e = collect(b, &[PathBuf::from(path)], &[], &[], &[])
                .err()
                .unwrap();
            assert_eq!(e.code, "source-not-found");
            assert!(e.message.ends_with(what), "{path}: {e}");
        }
        let e = collect(b, &[PathBuf::from("cu/none.cu")], &[], &[], &[])
            .err()
            .unwrap();
        assert!(e.message.ends_with("does not exist"), "{e}");
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
