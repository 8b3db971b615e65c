//! Small file-system helpers: atomic writes, so nothing half-written is ever read.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A unique temporary path next to `path` (same directory, so rename is atomic).
pub fn temp_path_for(path: &Path) -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    path.with_file_name(format!(".{name}.tmp-{}-{n}-{nanos}", std::process::id()))
}

/// Writes `bytes` to `path` atomically: a temporary file in the same
/// directory, flushed to disk, then renamed over `path`.
///
/// A reader sees either the old file, no file, or the complete new one. On
/// error (disk full, no permission) the temporary file is removed.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let p = dir.path().join("kernel.ptx");
/// cuda_toolchain::fsutil::write_atomic(&p, b".version 9.0").unwrap();
/// assert_eq!(std::fs::read(&p).unwrap(), b".version 9.0");
/// ```
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_via_temp(path, bytes, true)
}

/// Like [`write_atomic`] but without flushing to disk: for caches, where an
/// fsync (several ms on a busy disk) costs more than the answer saves. Never
/// half-written while the system runs; after a crash the file may be empty
/// or stale, so readers must check what they read.
pub fn write_atomic_unsynced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_via_temp(path, bytes, false)
}

fn write_via_temp(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    let tmp = temp_path_for(path);
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        if sync {
            f.sync_all()?;
        }
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Copies `from` to `to` atomically (temporary file, then rename).
pub fn copy_atomic(from: &Path, to: &Path) -> std::io::Result<()> {
    let tmp = temp_path_for(to);
    let result = std::fs::copy(from, &tmp).and_then(|_| std::fs::rename(&tmp, to));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Removes what interrupted operations left in `dir`: entries whose name
/// holds `marker` followed by the pid of the process that made them
/// (`.tmp-<pid>-…` job directories, `.<file>.tmp-<pid>-…` from
/// [`temp_path_for`], `.part-<pid>-…` downloads), when that process is gone
/// (SIGKILLed, crashed), and any such entry older than a day whoever made it
/// (a pid reused since, a name without one). Returns how many were removed;
/// an error leaves an entry for the next run.
///
/// The owner is looked up in this machine's pid namespace: a directory
/// written at the same moment from another container is not this
/// function's to clean.
///
/// ```
/// use cuda_toolchain::fsutil::remove_abandoned;
/// let dir = tempfile::tempdir().unwrap();
/// let dead = dir.path().join(format!(".tmp-{}-0-k", i32::MAX));
/// let ours = dir.path().join(format!(".tmp-{}-0-k", std::process::id()));
/// std::fs::create_dir(&dead).unwrap();
/// std::fs::create_dir(&ours).unwrap();
/// assert_eq!(remove_abandoned(dir.path(), ".tmp-"), 1);
/// assert!(!dead.exists() && ours.exists());
/// ```
pub fn remove_abandoned(dir: &Path, marker: &str) -> usize {
    const DAY: std::time::Duration = std::time::Duration::from_secs(24 * 3600);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(at) = name.find(marker) else {
            continue;
        };
        let owner = name[at + marker.len()..]
            .split('-')
            .next()
            .and_then(|p| p.parse::<u32>().ok());
        // symlink_metadata: a link is removed as a link, never followed.
        let Ok(meta) = e.path().symlink_metadata() else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > DAY);
        if !old && owner.is_none_or(process_alive) {
            continue;
        }
        let gone = if meta.is_dir() {
            std::fs::remove_dir_all(e.path())
        } else {
            std::fs::remove_file(e.path())
        };
        removed += usize::from(gone.is_ok());
    }
    removed
}

/// Whether a process with this pid exists (on this machine, in this pid
/// namespace). Outside Unix every pid counts as alive.
pub fn process_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        if pid <= 0 {
            return false;
        }
        // SAFETY: signal 0 only checks that the process exists.
        let r = unsafe { libc::kill(pid, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Removes `.` and resolves `name/..` lexically, without touching the file
/// system (`/cu13/bin/../include` → `/cu13/include`).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for comp in path.components() {
        match comp {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Whether `path` starts like a program: an ELF executable (`\x7fELF`) or a
/// script (`#!`). Advice such as `chmod +x` only fits a file that does.
pub fn looks_like_program(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == *b"\x7fELF" || head.starts_with(b"#!"))
}

/// The fix for a `tool` file at `path` that cannot be run: `chmod +x` when it
/// is a program without its execute bit; otherwise it is not the tool at all
/// (`NVCC=/etc/passwd`), and making it executable would be wrong.
pub fn not_executable_fix(path: &Path, tool: &str) -> String {
    if path.is_dir() {
        format!(
            "`{}` is a directory: name the {tool} program inside it (e.g. `{}`)",
            path.display(),
            path.join("bin").join(tool).display()
        )
    } else if looks_like_program(path) {
        format!(
            "chmod +x {} (or reinstall the toolkit)",
            crate::process::shell_quote(&path.to_string_lossy())
        )
    } else {
        format!(
            "`{}` is not a program (neither an ELF executable nor a script): point at the toolkit's {tool}, e.g. /usr/local/cuda/bin/{tool}",
            path.display()
        )
    }
}

/// Whether `path` is a regular file with an execute bit set.
pub fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chmod_is_advised_only_for_programs() {
        let d = tempfile::tempdir().unwrap();
        let text = d.path().join("passwd");
        std::fs::write(&text, "root:x:0:0:root:/root:/bin/bash\n").unwrap();
        let fix = not_executable_fix(&text, "nvcc");
        assert!(!fix.contains("chmod"), "{fix}");
        assert!(fix.contains("is not a program"), "{fix}");
        let script = d.path().join("nvcc");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        assert!(not_executable_fix(&script, "nvcc").starts_with("chmod +x "));
        let fix = not_executable_fix(d.path(), "nvcc");
        assert!(
            fix.contains("is a directory") && !fix.contains("chmod"),
            "{fix}"
        );
        assert!(!looks_like_program(&d.path().join("missing")));
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.bin");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        write_atomic_unsynced(&p, b"three").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"three");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
        assert!(write_atomic_unsynced(&dir.path().join("missing/a"), b"x").is_err());
    }

    #[test]
    fn atomic_write_into_missing_dir_fails_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("missing/a.bin");
        assert!(write_atomic(&p, b"x").is_err());
    }
}
