//! The prepare stage: a `Build`'s settings settled once, before the compile
//! engine runs. [`Build::prepared`] returns a copy of the builder's [`Spec`]
//! with the arch flags taken as the plan, the package's header-only
//! dependencies, the toolkit, the host compiler and archiver, the profile's
//! flags and the supported `flag_if_supported` flags filled in, plus the
//! notes and `cargo:` lines the build will print.

use crate::compile::incremental::cache;
use crate::compile::output::artifacts::OutputKind;
use crate::compile::settings::arch_flags::{arch_flag_name, split_arch_flags};
use crate::compile::settings::builder::Build;
use crate::compile::settings::cargo_profile::Profile;
use crate::compile::settings::flag_probe::FlagProbe;
use crate::compile::settings::header_deps;
use crate::compile::settings::host_toolchain;
use crate::compile::settings::package;
use crate::compile::settings::presets;
use crate::compile::settings::spec::{Prepared, Spec, ToolkitChoice};
use crate::compile::settings::toolchain;
use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::metadata::CudaMetadata;
use cuda_toolchain::Error;
use std::path::PathBuf;

impl Build {
    /// The settings as the engine runs them: toolkit, host compiler,
    /// archiver and flags settled; plus notes for `cargo:warning` and the
    /// per-target variable names to rerun on.
    pub(crate) fn prepared(&self, env: &Env) -> Result<Prepared, Error> {
        // A header dependency that could not be resolved when it was declared.
        if let Some(e) = self.spec.setup_errors.first() {
            return Err(e.clone());
        }
        let mut b = self.spec.clone();
        let mut notes = Vec::new();
        let mut rerun = Vec::new();
        arch_flags_to_plan(&mut b, &mut notes)?;
        // `[package.metadata.cuda]` and toolkit discovery, once per build:
        // the engine gets both (and the other toolkits found, which failure
        // explanations name) instead of reading and searching again.
        let metadata = package::metadata(&package::package_dir(env))?;
        package_header_deps(&mut b, env, &metadata, &mut notes)?;
        choose_toolkit(&mut b, env, &metadata)?;
        let msvc = host_toolchain(&mut b, env, &mut notes, &mut rerun)?;
        presets::apply(&mut b, env, msvc, &package::package_dir(env));
        let profile = Profile::from_env(env, b.profile_flags, b.device_debug);
        b.flags
            .extend(profile.flags(b.output == OutputKind::StaticLib, msvc));
        flags_other_tools_set(&mut b, env, msvc);
        supported_flags(&mut b, env)?;
        // The crate can read which version it was built with: env!("CUDA_BUILD_DEP_CUTLASS").
        for dep in &b.header_deps {
            rerun.push(format!("rustc-env={}={}", dep.env_name(), dep.version));
        }
        Ok(Prepared {
            spec: b,
            notes,
            rerun,
            metadata,
        })
    }
}

/// An `-arch=` flag becomes the plan (with a note); `-gencode`/`-code`, an
/// arch flag for one file, or archs given twice are refused.
fn arch_flags_to_plan(b: &mut Spec, notes: &mut Vec<String>) -> Result<(), Error> {
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
    Ok(())
}

/// A build that declares no header dependency itself gets the package's
/// (`cutlass = "4.2"`, `[package.metadata.cuda.header-deps]`), so the
/// declaration alone is enough; their requirements are then advisory (see
/// `Needs::advisory`). The C++ standard requirements are checked here,
/// strict or advisory alike (the arch requirements are checked against the
/// plan in `run/plan_jobs.rs`).
fn package_header_deps(
    b: &mut Spec,
    env: &Env,
    metadata: &CudaMetadata,
    notes: &mut Vec<String>,
) -> Result<(), Error> {
    if b.header_deps.is_empty() {
        for (dep, needs) in header_deps::resolve_declared(env, &metadata.header_deps)? {
            b.header_needs.extend(needs);
            b.add_header_dep(dep);
        }
    }
    // Said once, by the build that fetched it (feature `fetch`).
    notes.extend(b.header_deps.iter().filter_map(|d| d.fetched.clone()));
    if let Some(std) = &b.std {
        for needs in &b.header_needs {
            if header_deps::std_number(std).is_some_and(|n| n < needs.min_std) {
                notes.extend(needs.verdict(header_deps::std_error(needs, std))?);
            }
        }
    }
    Ok(())
}

/// `CUDA_NVCC_FLAGS` without its arch flags (the plan owns those, and warns
/// when they ask for other archs), and the host flags an MSVC build of this
/// CUDA release needs (`/Zc:preprocessor`, `_USE_MATH_DEFINES`).
fn flags_other_tools_set(b: &mut Spec, env: &Env, msvc: bool) {
    b.flags
        .extend(cuda_toolchain::interop::nvcc_flags::from_env(env).flags);
    let (target, host_triple) = host_toolchain::triples(env);
    let triple = if b.output == OutputKind::StaticLib {
        target
    } else {
        host_triple
    };
    if msvc || triple.ends_with("-msvc") {
        let release = b.toolkit.toolkit().and_then(|t| t.version.as_ref());
        let release = release.map(|v| (v.major as u32, v.minor as u32));
        let extra = cuda_toolchain::interop::msvc::host_flags(release, &b.flags);
        b.flags.extend(extra);
    }
}

/// Settles [`ToolkitChoice`]: the toolkit at `Build::toolkit_root` is read
/// (an error if it is not one); a search keeps what discovery found, or why
/// it found nothing, for the engine to report (or, on docs.rs, to build an
/// empty module).
fn choose_toolkit(b: &mut Spec, env: &Env, metadata: &CudaMetadata) -> Result<(), Error> {
    match &b.toolkit {
        ToolkitChoice::Root(root) => {
            let opts = cuda_toolchain::toolkit::DiscoverOptions {
                explicit_root: Some(root.clone()),
                ..Default::default()
            };
            let tk = cuda_toolchain::toolkit::discover(env, &opts)?.into_selected()?;
            b.toolkit = ToolkitChoice::Given(tk);
        }
        // The package's `toolkit` requirement applies here as in the engine.
        ToolkitChoice::Search => {
            b.toolkit = match toolchain::find_toolkit(env, metadata) {
                Ok((tk, others)) => ToolkitChoice::Found(tk, others),
                Err(e) => ToolkitChoice::Missing(e),
            };
        }
        ToolkitChoice::Given(_) | ToolkitChoice::Found(..) | ToolkitChoice::Missing(_) => {}
    }
    Ok(())
}

/// The host compiler (`-ccbin`, its version checked against the toolkit)
/// and, for a static library, the archiver, as the `cc` crate chooses them;
/// the per-target variables they read become rerun lines. Returns whether
/// the compiler is MSVC's cl.exe.
fn host_toolchain(
    b: &mut Spec,
    env: &Env,
    notes: &mut Vec<String>,
    rerun: &mut Vec<String>,
) -> Result<bool, Error> {
    let (target, host_triple) = host_toolchain::triples(env);
    let static_lib = b.output == OutputKind::StaticLib;
    // Device-only outputs do not depend on the target: the build
    // machine's compiler preprocesses them, so a cross build needs no
    // cross compiler and shares cache entries with a native one.
    let triple = if static_lib { &target } else { &host_triple };
    let scratch = scratch_dir(env, b);
    for base in ["NVCC_CCBIN", "CXX", "AR"] {
        for name in cuda_toolchain::env::target_names(base, triple, &host_triple) {
            if !Var::ALL.iter().any(|v| v.name() == name) {
                rerun.push(format!("rerun-if-env-changed={name}"));
            }
        }
    }
    let memo = memo_dir(env, b).unwrap_or_else(|| scratch.clone());
    let ccbin = host_toolchain::compiler(
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
        if let Some(v) = b.toolkit.toolkit().and_then(|t| t.version.as_ref()) {
            notes.extend(host_toolchain::check_version(
                env,
                c,
                v,
                &b.flags,
                Some(&memo),
            )?);
        }
        b.ccbin = Some(c.path.clone());
    }
    if static_lib && b.archiver.is_none() {
        b.archiver = Some(host_toolchain::archiver(env, &target, &host_triple, &scratch)?.path);
    }
    Ok(msvc)
}

/// `Build::flag_if_supported`: each flag nvcc (and its host compiler)
/// accepts joins the flags; nvcc is asked once per flag and toolkit, the
/// answer kept in `$OUT_DIR/cuda-build/flag-support.json`.
fn supported_flags(b: &mut Spec, env: &Env) -> Result<(), Error> {
    if b.flags_if_supported.is_empty() {
        return Ok(());
    }
    let Some(tk) = b.toolkit.toolkit() else {
        return Ok(());
    };
    let cache = b
        .out_dir
        .clone()
        .or_else(|| env.get_os(Var::OutDir).map(PathBuf::from))
        .map(|d| d.join("cuda-build").join("flag-support.json"));
    let probe = FlagProbe::new(env, tk, b.ccbin.as_deref(), cache);
    let wanted = std::mem::take(&mut b.flags_if_supported);
    let (wanted, _) = split_arch_flags(&wanted, "Build::flag_if_supported")?;
    for f in wanted {
        if probe.supported(&f) {
            b.flags.push(f);
        }
    }
    Ok(())
}

/// Where cc may write its compiler-detection scratch files.
fn scratch_dir(env: &Env, b: &Spec) -> PathBuf {
    let out = b
        .out_dir
        .clone()
        .or_else(|| env.get_os(Var::OutDir).map(PathBuf::from));
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
    let dir = cache::dir_for(env, b.cache_dir.as_deref(), b.no_cache)?
        .join("v1")
        .join("host");
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}
