//! Cargo's profile (DEBUG, OPT_LEVEL) as nvcc flags.
//!
//! - `DEBUG` true (a dev profile, or `debug = true`): `-lineinfo`, so
//!   profilers and `compute-sanitizer` map SASS to source lines. It does not
//!   change the generated code.
//! - Device debug (`-G`: no device optimisation, slow kernels) only when
//!   asked for, with [`Build::device_debug`](crate::compile::Build::device_debug) or
//!   `CUDA_BUILD_DEVICE_DEBUG=1`; it replaces `-lineinfo`.
//! - `OPT_LEVEL` becomes the host compiler's optimisation (`-Xcompiler -O2`,
//!   `/O2` for cl.exe) for static libraries, the only output with host code.
//! - [`Build::profile_flags(false)`](crate::compile::Build::profile_flags) or
//!   `CUDA_BUILD_PROFILE_FLAGS=0` turns `-lineinfo` and `-O` off.
//!
//! The flags join the rest of the command line, so they are part of every
//! cache key: a debug and a release build never share an entry.

use cuda_toolchain::env::{Env, Var};

/// The profile-derived settings of one build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Profile {
    /// `-lineinfo` from DEBUG.
    pub line_info: bool,
    /// `-G`.
    pub device_debug: bool,
    /// OPT_LEVEL as given (`0`-`3`, `s`, `z`), when profile flags are on.
    pub opt_level: Option<String>,
}

/// Cargo's DEBUG values: `true`/`false`, or a debuginfo level.
fn debug_on(value: &str) -> bool {
    !matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "" | "false" | "0" | "none"
    )
}

impl Profile {
    /// The settings from the Env and the builder's overrides.
    pub(crate) fn from_env(
        env: &Env,
        profile_flags: Option<bool>,
        device_debug: Option<bool>,
    ) -> Profile {
        let enabled = profile_flags.unwrap_or_else(|| {
            !matches!(
                env.get(Var::CudaBuildProfileFlags)
                    .map(|v| v.trim().to_ascii_lowercase())
                    .as_deref(),
                Some("0" | "false" | "no" | "off")
            )
        });
        let device_debug = device_debug.unwrap_or_else(|| env.flag(Var::CudaBuildDeviceDebug));
        let debug = env.get(Var::Debug).is_some_and(debug_on);
        Profile {
            line_info: enabled && debug && !device_debug,
            device_debug,
            opt_level: enabled
                .then(|| {
                    env.get_nonempty(Var::OptLevel)
                        .map(|s| s.trim().to_string())
                })
                .flatten(),
        }
    }

    /// nvcc arguments: `-lineinfo` or `-G`, and the host `-O` when
    /// `host_code` (static libraries), in cl.exe's spelling when `msvc`.
    pub(crate) fn flags(&self, host_code: bool, msvc: bool) -> Vec<String> {
        let mut out = Vec::new();
        if self.device_debug {
            out.push("-G".to_string());
        } else if self.line_info {
            out.push("-lineinfo".to_string());
        }
        if let (true, Some(level)) = (host_code, &self.opt_level) {
            let host = match (msvc, level.as_str()) {
                (true, "0") => "/Od".to_string(),
                (true, "s" | "z") => "/O1".to_string(),
                (true, _) => "/O2".to_string(),
                (false, "z") => "-Os".to_string(),
                (false, l) => format!("-O{l}"),
            };
            out.push("-Xcompiler".to_string());
            out.push(host);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cargo(debug: &str, opt: &str) -> Env {
        Env::empty().set(Var::Debug, debug).set(Var::OptLevel, opt)
    }

    #[test]
    fn dev_and_release_profiles() {
        let dev = Profile::from_env(&cargo("true", "0"), None, None);
        assert_eq!(dev.flags(true, false), ["-lineinfo", "-Xcompiler", "-O0"]);
        assert_eq!(dev.flags(false, false), ["-lineinfo"]);
        let release = Profile::from_env(&cargo("false", "3"), None, None);
        assert_eq!(release.flags(true, false), ["-Xcompiler", "-O3"]);
        assert_eq!(release.flags(true, true), ["-Xcompiler", "/O2"]);
        assert!(release.flags(false, false).is_empty());
        let small = Profile::from_env(&cargo("0", "z"), None, None);
        assert_eq!(small.flags(true, false), ["-Xcompiler", "-Os"]);
    }

    #[test]
    fn device_debug_is_opt_in_and_replaces_lineinfo() {
        let env = cargo("true", "0");
        assert!(!Profile::from_env(&env, None, None).device_debug);
        let p = Profile::from_env(&env.clone().set(Var::CudaBuildDeviceDebug, "1"), None, None);
        assert_eq!(p.flags(false, false), ["-G"]);
        let p = Profile::from_env(&env, None, Some(true));
        assert_eq!(p.flags(false, false), ["-G"]);
    }

    #[test]
    fn profile_flags_can_be_turned_off() {
        let env = cargo("true", "2");
        assert!(Profile::from_env(&env, Some(false), None)
            .flags(true, false)
            .is_empty());
        let env = env.set(Var::CudaBuildProfileFlags, "0");
        assert!(Profile::from_env(&env, None, None)
            .flags(true, false)
            .is_empty());
        // The builder wins over the variable.
        assert_eq!(
            Profile::from_env(&env, Some(true), None).flags(false, false),
            ["-lineinfo"]
        );
    }
}
