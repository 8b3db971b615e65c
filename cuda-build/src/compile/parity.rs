//! What `cc::Build` users expect: its method names (`includes`, `flags`,
//! `flag_if_supported`, `archiver`, `cargo_warnings`, `cargo_metadata`), the
//! toolkit by path, the host toolchain from `cc`, the cargo profile, and an
//! arch flag in `flag()` that becomes the plan instead of doubling it.
//!
//! All of it is settled once per build, before the compile engine runs, by
//! [`Build::prepared`]: it returns a copy of the builder's settings (the
//! `Spec` the engine reads) with the host compiler, archiver, toolkit and
//! final flags filled in.

use super::artifacts::OutputKind;
use super::builder::Build;
use super::spec::{Found, Prepared, Spec};
use super::{host, profile::Profile};
use cuda_toolchain::env::Env;
use cuda_toolchain::Error;
use std::path::{Path, PathBuf};

impl Build {
    /// Adds several include directories (cc's `includes`).
    pub fn includes<P: AsRef<Path>>(&mut self, dirs: impl IntoIterator<Item = P>) -> &mut Self {
        for d in dirs {
            self.include(d);
        }
        self
    }

    /// Adds several nvcc arguments (cc's `flags`).
    pub fn flags<S: AsRef<str>>(&mut self, flags: impl IntoIterator<Item = S>) -> &mut Self {
        for f in flags {
            self.flag(f.as_ref());
        }
        self
    }

    /// Adds an nvcc argument only if this nvcc (and its host compiler)
    /// accept it. nvcc is asked once per flag and toolkit: the answer is
    /// kept in `$OUT_DIR/cuda-build/flag-support.json`.
    pub fn flag_if_supported(&mut self, flag: &str) -> &mut Self {
        self.spec.flags_if_supported.push(flag.to_string());
        self
    }

    /// Uses the toolkit at this root (the directory holding `bin/nvcc`)
    /// instead of searching; it wins over `CUDA_HOME` and every other rule.
    pub fn toolkit_root(&mut self, root: impl AsRef<Path>) -> &mut Self {
        self.spec.toolkit_root = Some(root.as_ref().to_path_buf());
        self
    }

    /// The archiver for static libraries (default: cc's choice for TARGET:
    /// `AR_<target>`, `TARGET_AR`, `AR`, the target's prefixed `ar`).
    pub fn archiver(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.spec.archiver = Some(path.as_ref().to_path_buf());
        self
    }

    /// Whether warnings are printed as `cargo:warning=` lines (default true).
    pub fn cargo_warnings(&mut self, on: bool) -> &mut Self {
        self.spec.cargo_warnings = on;
        self
    }

    /// Whether the link lines (`cargo:rustc-link-lib`, `rustc-link-search`)
    /// are printed (default true). Like cc, this leaves the `rerun-if` lines
    /// alone; [`Build::emit_cargo`] turns every line off.
    pub fn cargo_metadata(&mut self, on: bool) -> &mut Self {
        self.spec.cargo_metadata = on;
        self
    }

    /// Whether cargo's profile adds flags (default: yes, unless
    /// `CUDA_BUILD_PROFILE_FLAGS=0`): `-lineinfo` when DEBUG is true, and the
    /// host `-O<OPT_LEVEL>` for static libraries.
    pub fn profile_flags(&mut self, on: bool) -> &mut Self {
        self.spec.profile_flags = Some(on);
        self
    }

    /// Device debug code (`-G`): no device optimisation, for cuda-gdb.
    /// Off by default, because it makes kernels much slower; also
    /// `CUDA_BUILD_DEVICE_DEBUG=1`.
    pub fn device_debug(&mut self, on: bool) -> &mut Self {
        self.spec.device_debug = Some(on);
        self
    }

    /// The settings as the engine runs them: toolkit, host compiler,
    /// archiver and flags settled; plus notes for `cargo:warning` and the
    /// per-target variable names to rerun on.
    pub(super) fn prepared(&self, env: &Env) -> Result<Prepared, Error> {
        // A header dependency that could not be resolved when it was declared.
        if let Some(e) = self.spec.setup_errors.first() {
            return Err(e.clone());
        }
        let mut b = self.spec.clone();
        let mut notes = Vec::new();
        let (flags, arch_flag) = split_arch_flags(&b.flags, "Build::flag")?;
        for (_, f) in &b.file_flags {
            if let Some(bad) = arch_flag_name(f) {
                return Err(Error::new(
                    "arch-invalid",
                    format!("Build::file_flag got the arch flag `{f}`"),
                )
                .with_help(format!(
                    "use Build::file_arch(file, \"80;90\") instead of `{bad}`: the plan then names the file's archs"
                )));
            }
        }
        b.flags = flags;
        if let Some((text, value)) = arch_flag {
            if let Some(arch) = &b.arch {
                return Err(Error::new(
                    "arch-invalid",
                    format!("the archs are given twice: Build::flag(\"{text}\") and Build::arch(\"{arch}\")"),
                )
                .with_help("remove the flag: Build::arch takes every spelling (`sm_80`, `80`, `90a`, `native`)"));
            }
            notes.push(format!(
                "cuda-build: Build::flag(\"{text}\") is taken as the arch plan, as Build::arch(\"{value}\") would be; nvcc gets the plan's -gencode flags (call .arch(\"{value}\") instead to silence this note)"
            ));
            b.arch = Some(value);
        }

        // `[package.metadata.cuda]` and toolkit discovery, once per build:
        // the engine gets both (and the other toolkits found, which failure
        // explanations name) instead of reading and searching again.
        let metadata = super::glue::metadata(&super::run::package_dir(env))?;
        // A build that declares no header dependency itself gets the
        // package's (`cutlass = "4.2"`, `[package.metadata.cuda.header-deps]`),
        // so the declaration alone is enough; their requirements are then
        // advisory (see `Needs::advisory`).
        if b.header_deps.is_empty() {
            super::header_deps::apply_declared(&mut b, env, &metadata.header_deps)?;
        }
        // C++ standard requirements, strict or advisory alike (the arch
        // requirements are checked against the plan in `run.rs`).
        if let Some(std) = &b.std {
            for needs in &b.header_needs {
                if super::header_deps::std_number(std).is_some_and(|n| n < needs.min_std) {
                    notes.extend(needs.verdict(super::header_deps::std_error(needs, std))?);
                }
            }
        }
        let mut toolkits = None;
        if b.toolkit.is_none() {
            if let Some(root) = &b.toolkit_root {
                let opts = cuda_toolchain::toolkit::DiscoverOptions {
                    explicit_root: Some(root.clone()),
                    ..Default::default()
                };
                b.toolkit = Some(cuda_toolchain::toolkit::discover(env, &opts)?.into_selected()?);
            } else {
                // The package's `toolkit` requirement applies here as in the engine.
                let found = super::glue::find_toolkit(env, &metadata);
                if let Ok((tk, _)) = &found {
                    b.toolkit = Some(tk.clone());
                }
                // Not found: the engine reports it (or builds docs.rs's empty module).
                toolkits = Some(found);
            }
        }

        let (target, host_triple) = host::triples(env);
        let static_lib = b.output == OutputKind::StaticLib;
        // Device-only outputs do not depend on the target: the build
        // machine's compiler preprocesses them, so a cross build needs no
        // cross compiler and shares cache entries with a native one.
        let triple = if static_lib { &target } else { &host_triple };
        let scratch = scratch_dir(env, &b);
        let mut rerun: Vec<String> = Vec::new();
        for base in ["NVCC_CCBIN", "CXX", "AR"] {
            for name in cuda_toolchain::env::target_names(base, triple, &host_triple) {
                if !cuda_toolchain::env::Var::ALL
                    .iter()
                    .any(|v| v.name() == name)
                {
                    rerun.push(format!("rerun-if-env-changed={name}"));
                }
            }
        }
        let memo = memo_dir(env, &b).unwrap_or_else(|| scratch.clone());
        let ccbin = host::compiler(
            env,
            b.ccbin.as_deref(),
            triple,
            &host_triple,
            &scratch,
            &memo,
        )?;
        let msvc = ccbin.as_ref().is_some_and(|c| {
            c.path
                .file_stem()
                .is_some_and(|s| s.eq_ignore_ascii_case("cl"))
        });
        if let Some(c) = &ccbin {
            if let Some(v) = b.toolkit.as_ref().and_then(|t| t.version.as_ref()) {
                notes.extend(host::check_version(env, c, v, &b.flags, Some(&memo))?);
            }
            b.ccbin = Some(c.path.clone());
        }
        if static_lib && b.archiver.is_none() {
            b.archiver = Some(host::archiver(env, &target, &host_triple, &scratch)?.path);
        }

        let profile = Profile::from_env(env, b.profile_flags, b.device_debug);
        b.flags.extend(profile.flags(static_lib, msvc));
        // CUDA_NVCC_FLAGS without its arch flags: the plan owns those (and
        // warns when they ask for other archs).
        b.flags
            .extend(cuda_toolchain::interop::nvcc_flags::from_env(env).flags);
        if msvc || triple.ends_with("-msvc") {
            let release = b.toolkit.as_ref().and_then(|t| t.version.as_ref());
            let release = release.map(|v| (v.major as u32, v.minor as u32));
            let extra = cuda_toolchain::interop::msvc::host_flags(release, &b.flags);
            b.flags.extend(extra);
        }

        if !b.flags_if_supported.is_empty() {
            if let Some(tk) = &b.toolkit {
                let cache = b
                    .out_dir
                    .clone()
                    .or_else(|| {
                        env.get_os(cuda_toolchain::env::Var::OutDir)
                            .map(PathBuf::from)
                    })
                    .map(|d| d.join("cuda-build").join("flag-support.json"));
                let probe = super::flag_probe::FlagProbe::new(env, tk, b.ccbin.as_deref(), cache);
                let wanted = std::mem::take(&mut b.flags_if_supported);
                let (wanted, _) = split_arch_flags(&wanted, "Build::flag_if_supported")?;
                for f in wanted {
                    if probe.supported(&f) {
                        b.flags.push(f);
                    }
                }
            }
        }
        // The crate can read which version it was built with: env!("CUDA_BUILD_DEP_CUTLASS").
        for dep in &b.header_deps {
            let var = format!(
                "CUDA_BUILD_DEP_{}",
                dep.name
                    .to_ascii_uppercase()
                    .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
            );
            rerun.push(format!("rustc-env={var}={}", dep.version));
        }
        Ok(Prepared {
            spec: b,
            notes,
            rerun,
            found: Found { metadata, toolkits },
        })
    }
}

/// Where cc may write its compiler-detection scratch files.
fn scratch_dir(env: &Env, b: &Spec) -> PathBuf {
    let out = b.out_dir.clone().or_else(|| {
        env.get_os(cuda_toolchain::env::Var::OutDir)
            .map(PathBuf::from)
    });
    let dir = match out {
        Some(d) => d.join("cuda-build").join("host"),
        None => std::env::temp_dir().join("cuda-build-host"),
    };
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// Where the host-compiler memo lives when the kernel cache is on: beside
/// it, shared by every package and surviving `cargo clean`.
fn memo_dir(env: &Env, b: &Spec) -> Option<PathBuf> {
    let dir = super::cache::dir_for(env, b.cache_dir.as_deref(), b.no_cache)?
        .join("v1")
        .join("host");
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}

/// The nvcc option an arch flag starts with, if it is one.
fn arch_flag_name(flag: &str) -> Option<&'static str> {
    cuda_toolchain::interop::nvcc_flags::arch_option(flag)
}

/// An arch flag as written (`-arch=sm_80`) and the arch it plans (`80`).
type ArchFlag = (String, String);

/// Takes `-arch=X` / `--gpu-architecture X` out of the flags, as the arch
/// it names (in [`cuda_toolchain::arch`]'s spelling); refuses `-gencode` and `-code`,
/// which only `.arch()` can plan. Returns the other flags and (text, arch).
fn split_arch_flags(
    flags: &[String],
    method: &str,
) -> Result<(Vec<String>, Option<ArchFlag>), Error> {
    let mut rest = Vec::new();
    let mut arch: Option<ArchFlag> = None;
    let mut i = 0;
    while i < flags.len() {
        let f = flags[i].trim();
        let Some(name) = arch_flag_name(f) else {
            rest.push(flags[i].clone());
            i += 1;
            continue;
        };
        let (value, text) = match f.split_once('=') {
            Some((_, v)) => (v.to_string(), f.to_string()),
            None => match flags.get(i + 1) {
                Some(v) => {
                    i += 1;
                    (v.trim().to_string(), format!("{f} {}", v.trim()))
                }
                None => (String::new(), f.to_string()),
            },
        };
        i += 1;
        if matches!(name, "-arch" | "--gpu-architecture")
            && !value.is_empty()
            && !value.contains(',')
        {
            let planned = match value.strip_prefix("sm_") {
                // nvcc's -arch=sm_80 is SASS plus PTX for 8.0: `80` here.
                Some(rest) => rest.to_string(),
                None => value.clone(),
            };
            cuda_toolchain::arch::parse_arch_list(&planned)
                .map_err(|e| e.with_help(format!("{method}(\"{text}\") names this arch")))?;
            if let Some((first, _)) = &arch {
                return Err(Error::new(
                    "arch-invalid",
                    format!("{method} got two arch flags: `{first}` and `{text}`"),
                )
                .with_help("list every arch in one Build::arch call, e.g. .arch(\"80;90\")"));
            }
            arch = Some((text, planned));
            continue;
        }
        return Err(Error::new(
            "arch-invalid",
            format!("{method}(\"{text}\") sets the GPU code by hand, which would double the planned -gencode flags"),
        )
        .with_help("use Build::arch instead: .arch(\"80;90\") for SASS+PTX, .arch(\"sm_80;compute_90\") for SASS only / PTX only")
        .with_help("the plan then decides every -gencode and the generated module's ARCHS say what was built"));
    }
    Ok((rest, arch))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn arch_flags_become_the_plan() {
        let (rest, arch) = split_arch_flags(&v(&["-O3", "-arch=sm_80", "-lineinfo"]), "f").unwrap();
        assert_eq!(rest, ["-O3", "-lineinfo"]);
        assert_eq!(arch.unwrap().1, "80");
        let (_, arch) = split_arch_flags(&v(&["--gpu-architecture", "compute_90"]), "f").unwrap();
        assert_eq!(
            arch.unwrap(),
            (
                "--gpu-architecture compute_90".to_string(),
                "compute_90".to_string()
            )
        );
        let (_, arch) = split_arch_flags(&v(&["-arch=sm_90a"]), "f").unwrap();
        assert_eq!(arch.unwrap().1, "90a");
        // Not arch flags: -arch-like prefixes of other options.
        let (rest, arch) = split_arch_flags(&v(&["--architecture-hint", "-codegen"]), "f").unwrap();
        assert_eq!((rest.len(), arch), (2, None));
    }

    #[test]
    fn gencode_and_code_are_refused_with_a_pointer_to_arch() {
        for f in [
            v(&["-gencode", "arch=compute_80,code=sm_80"]),
            v(&["-gencode=arch=compute_80,code=sm_80"]),
            v(&["--generate-code=arch=compute_80,code=sm_80"]),
            v(&["-code=sm_80"]),
            v(&["--gpu-code", "sm_80"]),
        ] {
            let e = split_arch_flags(&f, "Build::flag").unwrap_err();
            assert_eq!(e.code, "arch-invalid");
            assert!(e.to_string().contains("use Build::arch"), "{e}");
        }
        let e = split_arch_flags(&v(&["-arch=sm_80", "-arch=sm_90"]), "Build::flag").unwrap_err();
        assert!(e.message.contains("two arch flags"), "{e}");
        let e = split_arch_flags(&v(&["-arch=sm_8x"]), "Build::flag").unwrap_err();
        assert!(e.to_string().contains("-arch=sm_8x"), "{e}");
    }
}
