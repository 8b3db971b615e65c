//! Where a toolkit's parts are, as nvcc itself sees them.
//!
//! nvcc reads `nvcc.profile` from the directory it was started from
//! (`$(_HERE_)`; a symlink is *not* followed) and takes TOP, INCLUDES,
//! LIBRARIES, CICC_PATH and PATH from it. We parse that file the same way,
//! without running anything, and only fall back to the `#$ NAME=value` lines
//! of `nvcc -v --dryrun` when there is no profile (a wrapper script).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What nvcc.profile (or a dry run) says about a toolkit's layout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Profile {
    /// `TOP`: the toolkit root.
    pub top: Option<PathBuf>,
    /// `-I` and `-isystem` directories from INCLUDES and SYSTEM_INCLUDES.
    pub include_dirs: Vec<PathBuf>,
    /// `-L` directories from LIBRARIES.
    pub lib_dirs: Vec<PathBuf>,
    /// Directories nvcc puts in front of PATH (where it finds cicc, ptxas…).
    pub path_dirs: Vec<PathBuf>,
    /// `CICC_PATH`.
    pub cicc_dir: Option<PathBuf>,
    /// `_HERE_` when learned from a dry run: the real nvcc's directory.
    pub here: Option<PathBuf>,
}

/// The `targets/<triple>` directory nvcc uses on this host, when present under `top`.
pub fn target_dir(top: &Path) -> String {
    let triple = match std::env::consts::ARCH {
        "aarch64" => ["sbsa-linux", "aarch64-linux"],
        "powerpc64" => ["ppc64le-linux", "ppc64le-linux"],
        _ => ["x86_64-linux", "x86_64-linux"],
    };
    for t in triple {
        if top.join("targets").join(t).is_dir() {
            return format!("targets/{t}");
        }
    }
    String::new()
}

pub use crate::fsutil::normalize;

/// Expands `$(NAME)` references.
fn expand(value: &str, vars: &HashMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("$(") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find(')') {
            Some(end) => {
                let name = &after[..end];
                out.push_str(vars.get(name).map(String::as_str).unwrap_or(""));
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Splits `"-I/a b" -isystem "/c"` into shell-like words (double quotes group).
fn words(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_quotes = false;
    let mut any = false;
    for c in value.chars() {
        match c {
            '"' => {
                in_quotes = !in_quotes;
                any = true;
            }
            c if c.is_whitespace() && !in_quotes => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

fn flag_dirs(value: &str, short: &str, long: Option<&str>) -> Vec<PathBuf> {
    let ws = words(value);
    let mut out = Vec::new();
    let mut i = 0;
    while i < ws.len() {
        let w = &ws[i];
        if Some(w.as_str()) == long {
            if let Some(next) = ws.get(i + 1) {
                out.push(normalize(Path::new(next)));
            }
            i += 2;
            continue;
        }
        if let Some(dir) = w.strip_prefix(short) {
            if !dir.is_empty() {
                out.push(normalize(Path::new(dir)));
            }
        }
        i += 1;
    }
    out
}

fn path_list(value: &str) -> Vec<PathBuf> {
    value
        .split(':')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| normalize(Path::new(s)))
        .collect()
}

fn from_vars(vars: &HashMap<String, String>, path_value: Option<&str>) -> Profile {
    let get = |k: &str| vars.get(k).map(String::as_str).unwrap_or("");
    let mut include_dirs = flag_dirs(get("INCLUDES"), "-I", None);
    include_dirs.extend(flag_dirs(get("SYSTEM_INCLUDES"), "-I", Some("-isystem")));
    Profile {
        top: vars
            .get("TOP")
            .filter(|t| !t.trim().is_empty())
            .map(|t| normalize(Path::new(t.trim()))),
        include_dirs,
        lib_dirs: flag_dirs(get("LIBRARIES"), "-L", None),
        path_dirs: path_value.map(path_list).unwrap_or_default(),
        cicc_dir: vars
            .get("CICC_PATH")
            .filter(|t| !t.trim().is_empty())
            .map(|t| normalize(Path::new(t.trim()))),
        here: None,
    }
}

/// Parses nvcc.profile text as nvcc would for an nvcc in `here`.
///
/// ```
/// # use cuda_toolchain::toolkit::layout::parse_profile;
/// # use std::path::Path;
/// let p = parse_profile("TOP = $(_HERE_)/..\nINCLUDES += \"-I$(TOP)/include\" $(_SPACE_)\n", Path::new("/cuda/bin"), "");
/// assert_eq!(p.top.unwrap(), Path::new("/cuda"));
/// assert_eq!(p.include_dirs, vec![Path::new("/cuda/include")]);
/// ```
pub fn parse_profile(text: &str, here: &Path, target_dir: &str) -> Profile {
    let mut vars: HashMap<String, String> = HashMap::new();
    let here_s = here.to_string_lossy().into_owned();
    vars.insert("_HERE_".into(), here_s.clone());
    vars.insert("_THERE_".into(), here_s);
    vars.insert("_TARGET_DIR_".into(), target_dir.into());
    // As nvcc's dry run shows: `lib64` without a targets dir, `targets/<triple>/lib` with one.
    let size = if target_dir.is_empty() { "64" } else { "" };
    vars.insert("_TARGET_SIZE_".into(), size.into());
    vars.insert("_SPACE_".into(), " ".into());
    vars.insert("_NVVM_BRANCH_".into(), "nvvm".into());
    vars.insert("_CUDART_".into(), "cudart".into());
    // PATH in the profile extends the process PATH; we only keep what it adds.
    let mut path_added = String::new();
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        // The first `=` decides: `NAME += v` appends, `NAME =+ v` prepends, `NAME = v` sets.
        let Some(eq) = line.find('=') else {
            continue;
        };
        let (name, op, value) = if line[..eq].ends_with('+') {
            (&line[..eq - 1], "+=", &line[eq + 1..])
        } else if line[eq + 1..].starts_with('+') {
            (&line[..eq], "=+", &line[eq + 2..])
        } else {
            (&line[..eq], "=", &line[eq + 1..])
        };
        let name = name.trim().to_string();
        if name.is_empty() || name.contains(char::is_whitespace) {
            continue;
        }
        let value = expand(value.trim(), &vars);
        if name == "PATH" {
            path_added.push(':');
            path_added.push_str(&value);
            continue;
        }
        let old = vars.get(&name).cloned().unwrap_or_default();
        let new = match op {
            "+=" => format!("{old}{value}"),
            "=+" => format!("{value}{old}"),
            _ => value,
        };
        vars.insert(name, new);
    }
    from_vars(&vars, Some(&path_added))
}

/// Reads and parses the nvcc.profile next to `nvcc_dir`, if there is one.
pub fn read_profile(nvcc_dir: &Path) -> Option<Profile> {
    let text = std::fs::read_to_string(nvcc_dir.join("nvcc.profile")).ok()?;
    let top_guess = nvcc_dir.parent().unwrap_or(nvcc_dir);
    Some(parse_profile(&text, nvcc_dir, &target_dir(top_guess)))
}

/// Parses the `#$ NAME=value` lines of `nvcc -v --dryrun` output.
pub fn parse_dryrun(text: &str) -> Option<Profile> {
    let mut vars: HashMap<String, String> = HashMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("#$ ") else {
            continue;
        };
        let Some((name, value)) = rest.split_once('=') else {
            continue;
        };
        // Only `NAME=value` assignment lines; commands have spaces before any `=`.
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        vars.insert(name.to_string(), value.to_string());
    }
    if !vars.contains_key("_HERE_") {
        return None;
    }
    let path = vars.get("PATH").cloned();
    let here = vars.get("_HERE_").map(|h| normalize(Path::new(h.trim())));
    // The dry run prints the whole PATH; keep only what lies under TOP or _HERE_.
    let mut profile = from_vars(&vars, path.as_deref());
    let anchors: Vec<PathBuf> = profile.top.iter().chain(here.iter()).cloned().collect();
    profile
        .path_dirs
        .retain(|d| anchors.iter().any(|a| d.starts_with(a)));
    profile.here = here;
    Some(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The nvcc.profile shipped in the nvidia-cuda-nvcc 13.0.88 wheel, verbatim.
    const WHEEL_PROFILE: &str = "\nTOP              = $(_HERE_)/..\n\nCICC_PATH        = $(TOP)/nvvm/bin\nNVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice\n\nLD_LIBRARY_PATH += $(TOP)/lib:\nPATH            += $(CICC_PATH):$(_HERE_):\n\nINCLUDES        +=  \"-I$(TOP)/$(_TARGET_DIR_)/include\" $(_SPACE_)\nSYSTEM_INCLUDES +=  \"-isystem\" \"$(TOP)/$(_TARGET_DIR_)/include/cccl\" $(_SPACE_)\n\nLIBRARIES        =+ $(_SPACE_) \"-L$(TOP)/$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)/stubs\" \"-L$(TOP)/$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)\"\n\nCUDAFE_FLAGS    +=\nPTXAS_FLAGS     +=\n";

    #[test]
    fn wheel_profile() {
        let p = parse_profile(WHEEL_PROFILE, Path::new("/site/nvidia/cu13/bin"), "");
        assert_eq!(p.top.as_deref(), Some(Path::new("/site/nvidia/cu13")));
        assert_eq!(
            p.include_dirs,
            vec![
                PathBuf::from("/site/nvidia/cu13/include"),
                PathBuf::from("/site/nvidia/cu13/include/cccl")
            ]
        );
        assert_eq!(
            p.lib_dirs,
            vec![
                PathBuf::from("/site/nvidia/cu13/lib64/stubs"),
                PathBuf::from("/site/nvidia/cu13/lib64")
            ]
        );
        assert_eq!(
            p.cicc_dir.as_deref(),
            Some(Path::new("/site/nvidia/cu13/nvvm/bin"))
        );
        assert_eq!(
            p.path_dirs,
            vec![
                PathBuf::from("/site/nvidia/cu13/nvvm/bin"),
                PathBuf::from("/site/nvidia/cu13/bin")
            ]
        );
    }

    #[test]
    fn targets_dir_and_spaces() {
        let p = parse_profile(
            WHEEL_PROFILE,
            Path::new("/opt/my cuda/bin"),
            "targets/x86_64-linux",
        );
        assert_eq!(
            p.include_dirs[0],
            Path::new("/opt/my cuda/targets/x86_64-linux/include")
        );
        assert_eq!(
            p.lib_dirs[1],
            Path::new("/opt/my cuda/targets/x86_64-linux/lib")
        );
    }

    #[test]
    fn distro_style_profile_with_custom_top() {
        let text = "TOP = /usr/lib/nvidia-cuda-toolkit\nINCLUDES += $(_SPACE_)\nLIBRARIES =+ $(_SPACE_)\n# comment\ngarbage line\n";
        let p = parse_profile(text, Path::new("/usr/lib/nvidia-cuda-toolkit/bin"), "");
        assert_eq!(
            p.top.as_deref(),
            Some(Path::new("/usr/lib/nvidia-cuda-toolkit"))
        );
        assert!(p.include_dirs.is_empty());
        assert!(p.lib_dirs.is_empty());
    }

    #[test]
    fn dryrun_lines() {
        let text = "#$ _NVVM_BRANCH_=nvvm\n#$ _SPACE_= \n#$ _HERE_=/r/bin\n#$ _TARGET_DIR_=\n#$ TOP=/r/bin/..\n#$ CICC_PATH=/r/bin/../nvvm/bin\n#$ PATH=/r/bin/../nvvm/bin:/r/bin:/usr/bin:/bin\n#$ INCLUDES=\"-I/r/bin/..//include\"  \n#$ SYSTEM_INCLUDES=\"-isystem\" \"/r/bin/..//include/cccl\"  \n#$ LIBRARIES=  \"-L/r/bin/..//lib64/stubs\" \"-L/r/bin/..//lib64\"\n#$ gcc -D__CUDA_ARCH_LIST__=750 -E x.cu\n";
        let p = parse_dryrun(text).unwrap();
        assert_eq!(p.top.as_deref(), Some(Path::new("/r")));
        assert_eq!(p.here.as_deref(), Some(Path::new("/r/bin")));
        assert_eq!(
            p.include_dirs,
            vec![
                PathBuf::from("/r/include"),
                PathBuf::from("/r/include/cccl")
            ]
        );
        assert_eq!(
            p.path_dirs,
            vec![PathBuf::from("/r/nvvm/bin"), PathBuf::from("/r/bin")]
        );
        assert!(parse_dryrun("nvcc fatal : something").is_none());
    }

    #[test]
    fn normalize_paths() {
        assert_eq!(
            normalize(Path::new("/a/bin/..//include/./x")),
            Path::new("/a/include/x")
        );
    }
}
