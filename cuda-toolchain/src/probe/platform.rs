//! Where we run: WSL2, a container, and the NVIDIA device nodes with this
//! user's permissions on them. Every path goes through [`Env::sys_path`], so a
//! test can point the whole module at a fake root.

use super::DeviceNode;
use crate::env::Env;
use std::path::Path;

/// Device nodes the driver needs on Linux; always listed, present or not.
const REQUIRED_NODES: &[&str] = &["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0"];

/// WSL2: the kernel says "microsoft", or the GPU paravirtualisation bits are there.
pub(crate) fn is_wsl(env: &Env) -> bool {
    let version = read_lossy(&env.sys_path("/proc/version")).unwrap_or_default();
    let lower = version.to_ascii_lowercase();
    lower.contains("microsoft")
        || lower.contains("wsl")
        || env.sys_path("/dev/dxg").exists()
        || env.sys_path("/usr/lib/wsl/lib").is_dir()
}

/// The container runtime we appear to run under, if any.
pub(crate) fn container(env: &Env) -> Option<String> {
    if env.sys_path("/.dockerenv").exists() {
        return Some("docker".into());
    }
    if env.sys_path("/run/.containerenv").exists() {
        return Some("podman".into());
    }
    if env
        .sys_path("/var/run/secrets/kubernetes.io/serviceaccount")
        .is_dir()
    {
        return Some("kubernetes".into());
    }
    if let Some(cgroup) = read_lossy(&env.sys_path("/proc/1/cgroup")) {
        if let Some(kind) = container_from_cgroup(&cgroup) {
            return Some(kind.into());
        }
    }
    // cgroup v2 shows only "0::/" inside docker; its bind mounts still give it away.
    if let Some(mounts) = read_lossy(&env.sys_path("/proc/self/mountinfo")) {
        if mounts.contains("/docker/containers/") {
            return Some("docker".into());
        }
        if mounts.contains("/containers/storage/") && mounts.contains("/userdata/") {
            return Some("podman".into());
        }
    }
    None
}

/// Reads `/proc/1/cgroup`-style text for a container runtime's name.
pub(crate) fn container_from_cgroup(text: &str) -> Option<&'static str> {
    for line in text.lines() {
        // "hierarchy-ID:controllers:path"; only the path matters.
        let path = line.splitn(3, ':').nth(2).unwrap_or(line);
        if path.contains("kubepods") {
            return Some("kubernetes");
        }
        if path.contains("/docker") || path.contains("docker-") {
            return Some("docker");
        }
        if path.contains("libpod") {
            return Some("podman");
        }
        if path.contains("/lxc") {
            return Some("lxc");
        }
        if path.contains("containerd") {
            return Some("containerd");
        }
    }
    None
}

/// The NVIDIA device nodes: the required ones, every `/dev/nvidiaN`, and `/dev/dxg` on WSL.
pub(crate) fn device_nodes(env: &Env, wsl: bool) -> Vec<DeviceNode> {
    let mut paths: Vec<String> = REQUIRED_NODES.iter().map(|s| s.to_string()).collect();
    if let Ok(dir) = std::fs::read_dir(env.sys_path("/dev")) {
        let mut extra: Vec<(u32, String)> = dir
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let n: u32 = name.strip_prefix("nvidia")?.parse().ok()?;
                Some((n, format!("/dev/{name}")))
            })
            .filter(|(_, p)| !paths.contains(p))
            .collect();
        extra.sort();
        paths.extend(extra.into_iter().map(|(_, p)| p));
    }
    if wsl {
        paths.push("/dev/dxg".into());
    }
    paths
        .into_iter()
        .map(|p| {
            let real = env.sys_path(&p);
            let exists = real.exists();
            DeviceNode {
                path: p.into(),
                exists,
                readable: exists && accessible(&real, Access::Read),
                writable: exists && accessible(&real, Access::Write),
            }
        })
        .collect()
}

#[derive(Clone, Copy)]
enum Access {
    Read,
    Write,
}

/// Whether this user may open `path` so: access(2), which asks the kernel
/// without opening a device (opening one can have side effects).
#[cfg(unix)]
fn accessible(path: &Path, how: Access) -> bool {
    use std::os::unix::ffi::OsStrExt;
    extern "C" {
        fn access(
            path: *const std::os::raw::c_char,
            mode: std::os::raw::c_int,
        ) -> std::os::raw::c_int;
    }
    const R_OK: std::os::raw::c_int = 4;
    const W_OK: std::os::raw::c_int = 2;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    let mode = match how {
        Access::Read => R_OK,
        Access::Write => W_OK,
    };
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    unsafe { access(c.as_ptr(), mode) == 0 }
}

#[cfg(not(unix))]
fn accessible(path: &Path, how: Access) -> bool {
    match how {
        Access::Read => std::fs::metadata(path).is_ok(),
        Access::Write => std::fs::metadata(path).is_ok_and(|m| !m.permissions().readonly()),
    }
}

/// A small text file, lossily decoded; `None` when it cannot be read.
pub(crate) fn read_lossy(path: &Path) -> Option<String> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut buf = Vec::new();
    // /proc files are small; a bound keeps a strange file from costing much.
    file.take(1 << 20).read_to_end(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_contents() {
        assert_eq!(
            container_from_cgroup("12:devices:/docker/0123abcd\n11:cpu:/docker/0123abcd\n"),
            Some("docker")
        );
        assert_eq!(
            container_from_cgroup(
                "0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-1.scope\n"
            ),
            Some("kubernetes")
        );
        assert_eq!(
            container_from_cgroup("0::/system.slice/docker-0123.scope\n"),
            Some("docker")
        );
        assert_eq!(
            container_from_cgroup("1:name=systemd:/user.slice/libpod-abc\n"),
            Some("podman")
        );
        assert_eq!(container_from_cgroup("0::/init.scope\n"), None);
        assert_eq!(container_from_cgroup("0::/\n"), None);
        assert_eq!(container_from_cgroup("garbage\u{fffd}"), None);
    }

    #[test]
    fn fake_root_nodes_and_wsl() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("dev")).unwrap();
        std::fs::create_dir_all(root.join("proc")).unwrap();
        for n in ["nvidiactl", "nvidia0", "nvidia3", "nvidia-modeset"] {
            std::fs::write(root.join("dev").join(n), "").unwrap();
        }
        std::fs::write(
            root.join("proc/version"),
            "Linux version 5.15.167.4-microsoft-standard-WSL2",
        )
        .unwrap();
        let env = Env::empty().with_root(root);
        assert!(is_wsl(&env));
        let nodes = device_nodes(&env, true);
        let paths: Vec<String> = nodes.iter().map(|n| n.path.display().to_string()).collect();
        assert_eq!(
            paths,
            [
                "/dev/nvidiactl",
                "/dev/nvidia-uvm",
                "/dev/nvidia0",
                "/dev/nvidia3",
                "/dev/dxg"
            ]
        );
        assert!(nodes[0].exists && nodes[0].readable);
        assert!(!nodes[1].exists && !nodes[1].readable && !nodes[1].writable);
        assert!(!nodes[4].exists);
    }

    #[test]
    fn nothing_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let env = Env::empty().with_root(dir.path());
        assert!(!is_wsl(&env));
        assert_eq!(container(&env), None);
        assert!(device_nodes(&env, false).iter().all(|n| !n.exists));
    }
}
