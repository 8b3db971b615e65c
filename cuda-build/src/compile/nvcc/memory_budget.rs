//! How much memory one build script's compiles may use at once: the pool
//! never starts an nvcc whose predicted peak would take the sum of the
//! running ones past it (`schedule.rs`).
//!
//! `CUDA_BUILD_MEMORY_BUDGET` sets it outright (`8G`, `16GiB`, `unlimited`).
//! Otherwise it is [`SAFETY`] times the smaller of the kernel's
//! `MemAvailable` and the memory limit of this process's cgroup (v2
//! `memory.max`, v1 `memory.limit_in_bytes`, the tightest along the path to
//! the root), so a container's limit counts even where `/proc/meminfo`
//! shows the host's. It is read once, when the pool starts. Other build
//! scripts that cargo runs at the same time each have their own budget: the
//! safety margin is also for them.

use cuda_toolchain::env::{Env, Var};
use std::path::{Path, PathBuf};

/// The share of the available memory the pool plans to fill.
pub(crate) const SAFETY: f64 = 0.8;

/// The pool's memory budget and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Budget {
    /// Bytes; `u64::MAX` when nothing limits it.
    pub bytes: u64,
    /// Where it came from, for messages (`CUDA_BUILD_MEMORY_BUDGET`, `80% of MemAvailable`, …).
    pub source: String,
}

impl Budget {
    /// The budget from the variable, else from this machine and cgroup.
    pub(crate) fn from_env(env: &Env) -> Budget {
        let var = Var::CudaBuildMemoryBudget;
        if let Some(bytes) = env
            .get_nonempty(var)
            .and_then(cuda_toolchain::env::parse_bytes)
        {
            return Budget {
                bytes,
                source: var.name().to_string(),
            };
        }
        let root = env.root().to_path_buf();
        let available = mem_available(&root);
        let cgroup = cgroup_limit(&root);
        let (bytes, what) = match (available, cgroup) {
            (Some(a), Some(c)) if c < a => (c, "the cgroup's memory limit"),
            (Some(a), _) => (a, "MemAvailable"),
            (None, Some(c)) => (c, "the cgroup's memory limit"),
            (None, None) => {
                return Budget {
                    bytes: u64::MAX,
                    source: "no memory limit found".into(),
                }
            }
        };
        Budget {
            bytes: (bytes as f64 * SAFETY) as u64,
            source: format!("{:.0}% of {what}", SAFETY * 100.0),
        }
    }
}

/// `MemAvailable` from `/proc/meminfo`, in bytes.
fn mem_available(root: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(root.join("proc/meminfo")).ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The tightest memory limit on this process's cgroup and its ancestors
/// (v2 and v1), in bytes; None when there is none.
fn cgroup_limit(root: &Path) -> Option<u64> {
    let groups = std::fs::read_to_string(root.join("proc/self/cgroup")).ok()?;
    let mounts = std::fs::read_to_string(root.join("proc/self/mountinfo")).ok()?;
    let mut limits = Vec::new();
    for line in groups.lines() {
        // `0::/path` (v2) or `4:memory:/path` (v1).
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (v2, file) = if controllers.is_empty() {
            (true, "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            (false, "memory.limit_in_bytes")
        } else {
            continue;
        };
        let Some((mount_root, mount_point)) = mount_of(&mounts, v2) else {
            continue;
        };
        let rel = Path::new(path)
            .strip_prefix(&mount_root)
            .unwrap_or(Path::new(path));
        let rel = rel.strip_prefix("/").unwrap_or(rel);
        let base = root.join(mount_point.strip_prefix("/").unwrap_or(&mount_point));
        // The cgroup and every ancestor up to the mount: each limit applies.
        let mut at = base.join(rel);
        loop {
            if let Some(l) = read_limit(&at.join(file)) {
                limits.push(l);
            }
            if at == base || !at.pop() {
                break;
            }
        }
    }
    limits.into_iter().min()
}

/// A limit file's value: None for `max` or v1's "unlimited" (near 2^63).
fn read_limit(path: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let v: u64 = text.trim().parse().ok()?;
    (v < 1 << 60).then_some(v)
}

/// The (root within the hierarchy, mount point) of the cgroup2 mount, or of
/// the v1 mount holding the memory controller, from `/proc/self/mountinfo`.
fn mount_of(mountinfo: &str, v2: bool) -> Option<(PathBuf, PathBuf)> {
    for line in mountinfo.lines() {
        // `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS`
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let f: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        if f.len() < 5 || r.is_empty() {
            continue;
        }
        let matches = if v2 {
            r[0] == "cgroup2"
        } else {
            r[0] == "cgroup"
                && r.get(2)
                    .is_some_and(|o| o.split(',').any(|x| x == "memory"))
        };
        if matches {
            return Some((PathBuf::from(f[3]), PathBuf::from(f[4])));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn the_variable_wins_and_else_the_tighter_of_meminfo_and_the_cgroup() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        write(
            root,
            "proc/meminfo",
            "MemTotal: 32000000 kB\nMemAvailable:   20000000 kB\n",
        );
        let env = Env::empty().with_root(root);
        // No cgroup information: 80% of MemAvailable.
        let b = Budget::from_env(&env);
        assert_eq!(b.bytes, (20_000_000u64 * 1024) * 4 / 5);
        assert_eq!(b.source, "80% of MemAvailable");
        // A v2 container limited to 8 GiB, with an unlimited parent.
        write(root, "proc/self/cgroup", "0::/box/build\n");
        write(
            root,
            "proc/self/mountinfo",
            "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n",
        );
        write(root, "sys/fs/cgroup/box/build/memory.max", "max\n");
        write(root, "sys/fs/cgroup/box/memory.max", "8589934592\n");
        let b = Budget::from_env(&env);
        assert_eq!(b.bytes, (8u64 << 30) * 4 / 5);
        assert_eq!(b.source, "80% of the cgroup's memory limit");
        // v1 (a hybrid host): the memory controller's own mount and file.
        write(
            root,
            "proc/self/cgroup",
            "9:name=systemd:/\n4:memory:/job\n0::/\n",
        );
        write(
            root,
            "proc/self/mountinfo",
            "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
        );
        write(
            root,
            "sys/fs/cgroup/memory/job/memory.limit_in_bytes",
            "2147483648\n",
        );
        write(
            root,
            "sys/fs/cgroup/memory/memory.limit_in_bytes",
            "9223372036854771712\n",
        );
        assert_eq!(Budget::from_env(&env).bytes, (2u64 << 30) * 4 / 5);
        // The variable wins; a malformed one is ignored (Env::check warns).
        let b = Budget::from_env(&env.clone().set(Var::CudaBuildMemoryBudget, "8G"));
        assert_eq!(
            (b.bytes, b.source.as_str()),
            (8 << 30, "CUDA_BUILD_MEMORY_BUDGET")
        );
        let lots = env.clone().set(Var::CudaBuildMemoryBudget, "lots");
        assert_eq!(Budget::from_env(&lots).bytes, (2u64 << 30) * 4 / 5);
        let w = lots.check();
        assert!(
            w.iter().any(|w| w.starts_with(
                "CUDA_BUILD_MEMORY_BUDGET=`lots` is not an amount of memory, so the default applies; expected bytes"
            )),
            "{w:?}"
        );
    }

    #[test]
    fn nothing_known_is_no_limit() {
        let d = tempfile::tempdir().unwrap();
        let b = Budget::from_env(&Env::empty().with_root(d.path()));
        assert_eq!(b.bytes, u64::MAX);
    }
}
