//! Presets: what another build crate does on its own, reproduced so that a
//! port compiles exactly what the original did (`Build::like_cudaforge()`,
//! `Build::preset(Preset::Cc)`). A port is identical first, and improved on
//! purpose after: each preset only adds what its builder adds, and every
//! other setting of the `Build` still applies.
//!
//! The flags and defaults, read from each builder's source (cudaforge 0.1.2
//! to 0.1.6, bindgen_cuda 0.1.5 and 0.1.6, cc 1.11.3's `.cuda(true)`), are
//! listed with the cuda-build line for each in docs/migrating.md; this file
//! is where they are applied. The prepare stage calls [`apply`] once the
//! host compiler is known; the engine asks [`shape_plan`] for the archs and
//! [`file_flags`] for per-source flags.

use crate::compile::output::artifacts::OutputKind;
use crate::compile::settings::spec::{Preset, Spec};
use cuda_toolchain::arch::{Arch, Variant};
use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::plan::ArchPlan;
use std::path::{Path, PathBuf};

impl Preset {
    /// The builder's name, for messages and docs.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Cudaforge => "cudaforge",
            Preset::BindgenCuda => "bindgen_cuda",
            Preset::Cc => "cc",
        }
    }
}

/// The sources cudaforge and bindgen_cuda compile when given none.
const DEFAULT_SOURCES: &str = "src/**/*.cu";

/// cudaforge's default `nvcc_thread_patterns`: a source whose path (as the
/// build script gave it) contains one of them gets `--threads=2`.
const CUDAFORGE_THREAD_PATTERNS: [&str; 2] = ["flash_api", "cutlass"];

/// Settles the preset's settings into `spec`: flags, defines, defaults the
/// builder has and the `Build` did not set. `msvc`: the host compiler is
/// cl.exe; `package`: the package directory.
pub(crate) fn apply(spec: &mut Spec, env: &Env, msvc: bool, package: &Path) {
    let Some(preset) = spec.preset else {
        return;
    };
    let static_lib = spec.output == OutputKind::StaticLib;
    // None of the three adds cargo's profile the way cuda-build does.
    spec.profile_flags.get_or_insert(false);
    if preset != Preset::Cc
        && spec.files.is_empty()
        && spec.dirs.is_empty()
        && spec.globs.is_empty()
    {
        spec.globs.push(DEFAULT_SOURCES.to_string());
    }
    match preset {
        Preset::Cudaforge => {
            spec.flags
                .extend(["--default-stream".into(), "per-thread".into()]);
            allow_unsupported_ccbin(spec, env);
            if static_lib {
                if msvc {
                    spec.defines.push(("_USE_MATH_DEFINES".into(), None));
                }
                if spec.header_deps.iter().any(|d| d.name == "cutlass") {
                    spec.defines.push(("USE_CUTLASS".into(), None));
                }
            }
            spec.path_flags.extend(
                CUDAFORGE_THREAD_PATTERNS
                    .iter()
                    .map(|p| (p.to_string(), "--threads=2".to_string())),
            );
        }
        Preset::BindgenCuda => {
            spec.flags
                .extend(["--default-stream".into(), "per-thread".into()]);
            allow_unsupported_ccbin(spec, env);
            // bindgen_cuda's `build_lib` passes no -fPIC.
            spec.pic.get_or_insert(false);
            if spec.output == OutputKind::Ptx && spec.includes.is_empty() {
                spec.includes.extend(header_dirs(package));
            }
        }
        Preset::Cc => {
            spec.pic.get_or_insert(false);
            spec.flags.extend(cc_flags(env, msvc));
            if spec.files.len() > 1 {
                spec.rdc = true;
            }
        }
    }
}

/// `-allow-unsupported-compiler` when `NVCC_CCBIN` is set, as cudaforge and
/// bindgen_cuda add it (the version check cuda-build makes still runs).
fn allow_unsupported_ccbin(spec: &mut Spec, env: &Env) {
    if env.get_nonempty(Var::NvccCcbin).is_some() {
        spec.flags.push("-allow-unsupported-compiler".into());
    }
}

/// The directories of `src/**/*.cuh` (bindgen_cuda's default
/// `include_paths`), sorted, package-relative.
fn header_dirs(package: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = walkdir::WalkDir::new(package.join("src"))
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "cuh"))
        .filter_map(|e| {
            let dir = e.path().parent()?;
            Some(dir.strip_prefix(package).unwrap_or(dir).to_path_buf())
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// The arguments cc 1.11.3 gives nvcc for a GNU-like host compiler on
/// Linux, in its order (its `-ccbin` is the host compiler cuda-build picks
/// the same way, through cc).
fn cc_flags(env: &Env, msvc: bool) -> Vec<String> {
    let target = env.get_nonempty(Var::Target).unwrap_or("");
    let debug = env
        .get_nonempty(Var::Debug)
        .is_some_and(|d| !matches!(d.trim(), "false" | "0" | "none"));
    let x = |f: &str| ["-Xcompiler".to_string(), f.to_string()];
    let mut out: Vec<String> = Vec::new();
    if msvc {
        // cc's MSVC flags differ (/O2, /Z7, …); only the device part is kept.
        if debug {
            out.push("-G".into());
        }
        return out;
    }
    let opt = match env.get_nonempty(Var::OptLevel).map(str::trim) {
        Some("z") => "-Os".to_string(),
        Some(l) => format!("-O{l}"),
        None => "-O0".to_string(),
    };
    out.extend(x(&opt));
    out.extend(x("-ffunction-sections"));
    out.extend(x("-fdata-sections"));
    out.extend(x("-fPIC"));
    if debug {
        out.push("-G".into());
        out.extend(x("-g"));
        out.extend(x("-gdwarf-4"));
        out.extend(x("-fno-omit-frame-pointer"));
    }
    if target.starts_with("x86_64") || target.starts_with("aarch64") {
        out.push("-m64".into());
    }
    let target_cpu = env
        .get(Var::CargoEncodedRustflags)
        .unwrap_or("")
        .split('\u{1f}')
        .collect::<Vec<_>>()
        .windows(2)
        .find_map(|w| match (w[0], w[1]) {
            ("-C", v) => v.strip_prefix("target-cpu="),
            (v, _) => v.strip_prefix("-Ctarget-cpu="),
        })
        .map(str::to_string);
    if target.starts_with("x86_64") && matches!(target_cpu.as_deref(), None | Some("x86-64")) {
        out.extend(x("-march=x86-64"));
    }
    out.extend(x("-Wall"));
    out.extend(x("-Wextra"));
    out
}

/// The arch plan as the preset's builder would compile it: cudaforge's
/// `-gencode=arch=compute_XX,code=sm_XX` is SASS only, and a plain 9.0 or
/// newer gets the `a` suffix (12.1 and newer `f`), as its `GpuArch::auto_suffix`
/// does; the others compile what the plan says.
pub(crate) fn shape_plan(preset: Option<Preset>, plan: ArchPlan) -> ArchPlan {
    if preset != Some(Preset::Cudaforge) {
        return plan;
    }
    let mut sass: Vec<Arch> = plan
        .sass
        .iter()
        .chain(plan.ptx.iter())
        .map(|a| cudaforge_arch(*a))
        .collect();
    sass.sort();
    sass.dedup();
    ArchPlan {
        sass,
        ptx: None,
        ..plan
    }
}

/// cudaforge's suffix rule (0.1.6; 0.1.2-0.1.5 gave 12.1 and newer `a`).
fn cudaforge_arch(a: Arch) -> Arch {
    if a.variant != Variant::Plain {
        return a;
    }
    let n = a.cc.number();
    let variant = match n {
        120 => Variant::Specific,
        n if n > 120 => Variant::Family,
        n if n >= 90 => Variant::Specific,
        _ => Variant::Plain,
    };
    Arch { variant, ..a }
}

/// The extra flags for one source (package-relative path as nvcc gets it):
/// those of `spec.path_flags` whose text the path contains.
pub(crate) fn file_flags<'s>(spec: &'s Spec, rel: &Path) -> impl Iterator<Item = &'s str> {
    let path = rel.to_string_lossy().into_owned();
    spec.path_flags
        .iter()
        .filter(move |(pattern, _)| path.contains(pattern.as_str()))
        .map(|(_, flag)| flag.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuda_toolchain::plan::ArchSource;

    fn plan(sass: &[&str], ptx: Option<&str>) -> ArchPlan {
        ArchPlan {
            sass: sass.iter().map(|a| Arch::parse(a).unwrap()).collect(),
            ptx: ptx.map(|a| Arch::parse(a).unwrap()),
            source: ArchSource::CudaComputeCap,
            warnings: Vec::new(),
        }
    }

    #[test]
    fn cudaforge_compiles_sass_only_with_its_suffixes() {
        let p = shape_plan(Some(Preset::Cudaforge), plan(&["80"], Some("80")));
        assert_eq!(p.gencode_flags(), ["-gencode=arch=compute_80,code=sm_80"]);
        let p = shape_plan(Some(Preset::Cudaforge), plan(&["86", "90"], Some("90")));
        assert_eq!(
            p.gencode_flags(),
            [
                "-gencode=arch=compute_86,code=sm_86",
                "-gencode=arch=compute_90a,code=sm_90a"
            ]
        );
        for (cc, want) in [("100", "sm_100a"), ("120", "sm_120a"), ("121", "sm_121f")] {
            let p = shape_plan(Some(Preset::Cudaforge), plan(&[cc], None));
            assert_eq!(p.targets_display(), [want], "{cc}");
        }
        // An explicit variant is kept; other presets change nothing.
        let p = shape_plan(Some(Preset::Cudaforge), plan(&["100f"], None));
        assert_eq!(p.targets_display(), ["sm_100f"]);
        let p = plan(&["80"], Some("80"));
        assert_eq!(shape_plan(Some(Preset::BindgenCuda), p.clone()), p);
        assert_eq!(shape_plan(None, p.clone()), p);
    }

    fn env(debug: &str, opt: &str) -> Env {
        Env::empty()
            .set(Var::Target, "x86_64-unknown-linux-gnu")
            .set(Var::Debug, debug)
            .set(Var::OptLevel, opt)
    }

    #[test]
    fn cc_flags_match_cc_1_11_in_debug_and_release() {
        // What cc 1.11.3 passed to nvcc (logged from a real build).
        let debug = "-Xcompiler -O0 -Xcompiler -ffunction-sections -Xcompiler -fdata-sections -Xcompiler -fPIC -G -Xcompiler -g -Xcompiler -gdwarf-4 -Xcompiler -fno-omit-frame-pointer -m64 -Xcompiler -march=x86-64 -Xcompiler -Wall -Xcompiler -Wextra";
        assert_eq!(cc_flags(&env("true", "0"), false).join(" "), debug);
        let release = "-Xcompiler -O3 -Xcompiler -ffunction-sections -Xcompiler -fdata-sections -Xcompiler -fPIC -m64 -Xcompiler -march=x86-64 -Xcompiler -Wall -Xcompiler -Wextra";
        assert_eq!(cc_flags(&env("false", "3"), false).join(" "), release);
        // -C target-cpu=native: no -march, as in cc.
        let native = env("false", "3").set(Var::CargoEncodedRustflags, "-C\u{1f}target-cpu=native");
        assert!(!cc_flags(&native, false)
            .iter()
            .any(|f| f.starts_with("-march")));
    }

    #[test]
    fn presets_fill_only_what_is_unset() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/inc")).unwrap();
        std::fs::write(dir.path().join("src/inc/a.cuh"), "").unwrap();
        std::fs::write(dir.path().join("src/b.cuh"), "").unwrap();
        let mut s = Spec {
            preset: Some(Preset::BindgenCuda),
            output: OutputKind::Ptx,
            ..Spec::default()
        };
        apply(&mut s, &Env::empty(), false, dir.path());
        assert_eq!(s.globs, ["src/**/*.cu"]);
        assert_eq!(s.includes, [PathBuf::from("src"), PathBuf::from("src/inc")]);
        assert_eq!(s.flags, ["--default-stream", "per-thread"]);
        assert_eq!((s.profile_flags, s.pic), (Some(false), Some(false)));

        let mut s = Spec {
            preset: Some(Preset::Cudaforge),
            output: OutputKind::StaticLib,
            profile_flags: Some(true),
            files: vec!["kernels/flash_api.cu".into()],
            ..Spec::default()
        };
        apply(
            &mut s,
            &Env::empty().set(Var::NvccCcbin, "/usr/bin/g++-12"),
            false,
            dir.path(),
        );
        assert!(s.globs.is_empty());
        assert_eq!(s.profile_flags, Some(true));
        assert_eq!(
            s.flags,
            [
                "--default-stream",
                "per-thread",
                "-allow-unsupported-compiler"
            ]
        );
        let flags: Vec<&str> = file_flags(&s, Path::new("kernels/flash_api.cu")).collect();
        assert_eq!(flags, ["--threads=2"]);
        assert_eq!(file_flags(&s, Path::new("kernels/gemm.cu")).count(), 0);

        let mut s = Spec {
            preset: Some(Preset::Cc),
            output: OutputKind::StaticLib,
            files: vec!["a.cu".into(), "b.cu".into()],
            ..Spec::default()
        };
        apply(&mut s, &env("false", "2"), false, dir.path());
        assert!(s.rdc, "cc compiles several files with --device-c");
        assert!(s.flags.contains(&"-O2".to_string()));
    }
}
