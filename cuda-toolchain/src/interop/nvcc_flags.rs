//! `CUDA_NVCC_FLAGS`: extra nvcc flags for every kernel, as FindCUDA and
//! mistral.rs (PR #469: `mistralrs-core/build.rs` splits it at whitespace)
//! take them. The arch plan owns the GPU code, so an arch flag in it is
//! dropped; when it asks for other archs than the plan, one warning says so.

use crate::arch::Arch;
use crate::env::{show_value, Env, Var};

/// nvcc's options that choose GPU code (`-arch`, `-gencode`, `-code` and
/// their long spellings), as written before `=` or a separate value.
pub const ARCH_OPTIONS: [&str; 6] = [
    "-arch",
    "--gpu-architecture",
    "-gencode",
    "--generate-code",
    "-code",
    "--gpu-code",
];

/// The arch option `flag` starts with (`-arch=sm_80` → `-arch`), if any.
pub fn arch_option(flag: &str) -> Option<&'static str> {
    let name = flag.split('=').next().unwrap_or(flag).trim();
    ARCH_OPTIONS.into_iter().find(|n| name == *n)
}

/// `CUDA_NVCC_FLAGS` split into what reaches nvcc and the arch flags dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvFlags {
    /// Flags passed to every nvcc command, in order.
    pub flags: Vec<String>,
    /// Arch flags as written (`-arch=sm_80`, `-gencode arch=…`): the plan decides instead.
    pub arch_flags: Vec<String>,
}

/// Reads `CUDA_NVCC_FLAGS` (split at whitespace, as mistral.rs does).
///
/// ```
/// use cuda_toolchain::env::{Env, Var};
/// let env = Env::empty().set(Var::CudaNvccFlags, "-lineinfo -arch sm_80 --use_fast_math");
/// let f = cuda_toolchain::interop::nvcc_flags::from_env(&env);
/// assert_eq!(f.flags, ["-lineinfo", "--use_fast_math"]);
/// assert_eq!(f.arch_flags, ["-arch sm_80"]);
/// ```
pub fn from_env(env: &Env) -> EnvFlags {
    let mut out = EnvFlags::default();
    let Some(value) = env.get(Var::CudaNvccFlags) else {
        return out;
    };
    let mut words = value.split_whitespace();
    while let Some(w) = words.next() {
        match arch_option(w) {
            Some(_) if w.contains('=') => out.arch_flags.push(w.to_string()),
            Some(_) => match words.next() {
                Some(v) => out.arch_flags.push(format!("{w} {v}")),
                None => out.arch_flags.push(w.to_string()),
            },
            None => out.flags.push(w.to_string()),
        }
    }
    out
}

/// The compute capabilities an arch flag names (`sm_80`, `compute_90a`,
/// `-arch=86`); `None` for one the plan cannot be compared with (`native`,
/// `all`, a malformed value).
fn named_archs(flag: &str) -> Option<Vec<Arch>> {
    let value = flag
        .split_once(['=', ' '])
        .map(|(_, v)| v)
        .unwrap_or_default();
    let mut out = Vec::new();
    for part in value.split([',', '[', ']', '=']) {
        let part = part.trim();
        if part.is_empty() || part == "arch" || part == "code" {
            continue;
        }
        let arch = Arch::parse(part).ok()?;
        if !out.contains(&arch) {
            out.push(arch);
        }
    }
    (!out.is_empty()).then_some(out)
}

/// One warning when `CUDA_NVCC_FLAGS` holds arch flags that ask for other
/// archs than the plan's (`planned_archs`: its SASS and PTX archs; they are
/// dropped either way, matching ones silently). `plan_source` and
/// `plan_targets` say where the plan came from and what it is, for the warning.
///
/// ```
/// use cuda_toolchain::arch::Arch;
/// use cuda_toolchain::env::{Env, Var};
/// let plan = [Arch::new(8, 0), Arch::new(9, 0), Arch::new(9, 0)];
/// let env = Env::empty().set(Var::CudaNvccFlags, "-arch=sm_75");
/// let w = cuda_toolchain::interop::nvcc_flags::contradiction(&env, &plan, "CUDA_ARCHS", &["sm_80".into(), "sm_90".into(), "compute_90".into()]).unwrap();
/// assert!(w.starts_with("CUDA_NVCC_FLAGS has `-arch=sm_75`"), "{w}");
/// let env = Env::empty().set(Var::CudaNvccFlags, "-gencode=arch=compute_90,code=[sm_80,sm_90]");
/// assert_eq!(cuda_toolchain::interop::nvcc_flags::contradiction(&env, &plan, "CUDA_ARCHS", &["sm_80".into(), "sm_90".into(), "compute_90".into()]), None);
/// ```
pub fn contradiction(
    env: &Env,
    planned_archs: &[Arch],
    plan_source: &str,
    plan_targets: &[String],
) -> Option<String> {
    let flags = from_env(env);
    if flags.arch_flags.is_empty() {
        return None;
    }
    let mut planned: Vec<(u32, u32)> = planned_archs
        .iter()
        .map(|a| (a.cc.major, a.cc.minor))
        .collect();
    planned.sort();
    planned.dedup();
    let mut named: Option<Vec<(u32, u32)>> = Some(Vec::new());
    for f in &flags.arch_flags {
        named = match (named, named_archs(f)) {
            (Some(mut all), Some(archs)) => {
                all.extend(archs.iter().map(|a| (a.cc.major, a.cc.minor)));
                Some(all)
            }
            _ => None,
        };
    }
    if let Some(named) = named.as_mut() {
        named.sort();
        named.dedup();
        if *named == planned {
            return None;
        }
    }
    let shown: Vec<String> = flags.arch_flags.iter().map(|f| show_value(f)).collect();
    let hint = match named.filter(|n| !n.is_empty()) {
        Some(n) => {
            let list: Vec<String> = n.iter().map(|(ma, mi)| format!("{ma}{mi}")).collect();
            format!(
                "to build for those archs, set CUDA_ARCHS=\"{}\" instead",
                list.join(";")
            )
        }
        None => "set the archs with CUDA_ARCHS instead (e.g. CUDA_ARCHS=\"80;90\")".to_string(),
    };
    Some(format!(
        "CUDA_NVCC_FLAGS has {}, but the arch plan (from {}) is {}; the arch flag is dropped and the plan is used. \
         Remove it from CUDA_NVCC_FLAGS; {hint}",
        shown.join(" "),
        plan_source,
        plan_targets.join(", "),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan of sm_80 and sm_90 SASS with compute_90 PTX.
    fn planned() -> Vec<Arch> {
        vec![Arch::new(8, 0), Arch::new(9, 0), Arch::new(9, 0)]
    }

    fn check(flags: &str) -> Option<String> {
        contradiction(
            &Env::empty().set(Var::CudaNvccFlags, flags),
            &planned(),
            "CUDA_ARCHS",
            &["sm_80".into(), "sm_90".into(), "compute_90".into()],
        )
    }

    #[test]
    fn arch_flags_are_taken_out_in_every_spelling() {
        let env = Env::empty().set(
            Var::CudaNvccFlags,
            " -O3  --gpu-architecture sm_90 -gencode=arch=compute_80,code=sm_80 -code sm_80 -Xcompiler -fPIE ",
        );
        let f = from_env(&env);
        assert_eq!(f.flags, ["-O3", "-Xcompiler", "-fPIE"]);
        assert_eq!(
            f.arch_flags,
            [
                "--gpu-architecture sm_90",
                "-gencode=arch=compute_80,code=sm_80",
                "-code sm_80"
            ]
        );
        assert_eq!(from_env(&Env::empty()), EnvFlags::default());
    }

    #[test]
    fn only_a_different_arch_set_warns() {
        assert_eq!(check("-fPIE"), None);
        assert_eq!(check("-arch=sm_80 -arch=sm_90"), None);
        assert_eq!(check("-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]"), None);
        assert!(check("-arch=sm_75")
            .unwrap()
            .contains("set CUDA_ARCHS=\"75\" instead"));
        for bad in [
            "-arch=sm_75",
            "-arch=sm_90",
            "-arch=native",
            "--gpu-architecture=all",
            "-arch",
        ] {
            let w = check(bad).unwrap_or_else(|| panic!("{bad} should warn"));
            assert!(w.starts_with("CUDA_NVCC_FLAGS has"), "{w}");
            assert!(w.contains("from CUDA_ARCHS"), "{w}");
            assert!(w.contains("sm_80, sm_90, compute_90"), "{w}");
            assert!(
                w.contains("set the archs with CUDA_ARCHS") || w.contains("CUDA_ARCHS=\""),
                "{w}"
            );
        }
    }
}
