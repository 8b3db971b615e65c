//! The kernel module's own version, from `/proc/driver/nvidia/version`.
//!
//! Two spellings occur (the proprietary and the open kernel module):
//!
//! ```text
//! NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 07:09:38 UTC 2025
//! NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  (dvs-builder@U16-I3-B03-4-3)  Sun Jul 27 06:54:38 UTC 2025
//! ```

use crate::env::Env;

/// Where the kernel module reports its version.
pub(crate) const VERSION_FILE: &str = "/proc/driver/nvidia/version";

/// What the version file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KernelModule {
    /// e.g. "580.65.06".
    pub version: String,
    /// The open kernel module (rather than the proprietary one).
    pub open: bool,
}

/// Parses the file's text. `Err` says, with the first line quoted, why not.
pub(crate) fn parse_version_file(text: &str) -> Result<KernelModule, String> {
    let Some(line) = text
        .lines()
        .find(|l| l.trim_start().starts_with("NVRM version:"))
    else {
        let first = text.lines().next().unwrap_or("").trim();
        return Err(format!(
            "{VERSION_FILE} has no `NVRM version:` line (first line: `{}`)",
            shorten(first)
        ));
    };
    // The version is the first dotted number after the words "Kernel Module".
    let after = match line.find("Kernel Module") {
        Some(i) => &line[i..],
        None => line,
    };
    let version = after.split_whitespace().find(|t| is_driver_version(t));
    match version {
        Some(v) => Ok(KernelModule {
            version: v.to_string(),
            open: line.contains("Open Kernel Module"),
        }),
        None => Err(format!(
            "{VERSION_FILE}: no driver version in `{}`",
            shorten(line.trim())
        )),
    }
}

/// Reads and parses the version file under the env's root.
pub(crate) fn read(env: &Env) -> Result<KernelModule, String> {
    let path = env.sys_path(VERSION_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => parse_version_file(&String::from_utf8_lossy(&bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "{} does not exist (the NVIDIA kernel module is not loaded, or this is WSL or a container without /proc/driver/nvidia)",
            path.display()
        )),
        Err(e) => Err(format!("{} could not be read: {e}", path.display())),
    }
}

/// `580.65.06`, `470.82`: two or three dot-separated numbers, the first with 3 digits or more.
pub(crate) fn is_driver_version(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    (2..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 4 && p.bytes().all(|b| b.is_ascii_digit()))
        && parts[0].len() >= 3
}

/// Keeps quoted input short in messages.
pub(crate) fn shorten(s: &str) -> String {
    const MAX: usize = 120;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        let cut: String = s.chars().take(MAX).collect();
        format!("{cut}...")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proprietary_and_open_modules() {
        let k = parse_version_file(
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 07:09:38 UTC 2025\nGCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n",
        )
        .unwrap();
        assert_eq!(
            k,
            KernelModule {
                version: "580.65.06".into(),
                open: false
            }
        );
        let k = parse_version_file(
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Apr  1 09:51:42 UTC 2025\n",
        )
        .unwrap();
        assert_eq!(
            k,
            KernelModule {
                version: "570.133.20".into(),
                open: true
            }
        );
        let k = parse_version_file(
            "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.82.07  Release Build\n",
        )
        .unwrap();
        assert_eq!(k.version, "580.82.07");
        // The build host's name holds digits: they must not be taken for the version.
        let k = parse_version_file("NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.82.01  Wed Oct 27 04:23:39 UTC 2021\n").unwrap();
        assert_eq!(k.version, "470.82.01");
    }

    #[test]
    fn odd_content_is_an_error_not_a_panic() {
        for text in [
            "",
            "\n\n",
            "garbage\u{0}\u{fffd}",
            "NVRM version:",
            "NVRM version: NVIDIA UNIX Kernel Module 1.2 x",
        ] {
            let e = parse_version_file(text).unwrap_err();
            assert!(e.contains(VERSION_FILE), "{e}");
        }
        assert!(parse_version_file("hello\nworld")
            .unwrap_err()
            .contains("first line: `hello`"));
    }

    #[test]
    fn version_shape() {
        assert!(is_driver_version("580.65.06"));
        assert!(is_driver_version("470.82"));
        assert!(!is_driver_version("13.0"));
        assert!(!is_driver_version("580"));
        assert!(!is_driver_version("1.2.3.4"));
        assert!(!is_driver_version("58a.1"));
    }
}
