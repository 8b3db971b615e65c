//! `cuda_build::Build` as a `cc::Build` user expects it, against the real
//! nvcc 13.0: the host compiler and archiver chosen as cc chooses them (CXX,
//! AR, TARGET), a real aarch64 cross build, cargo profiles, cc's method
//! names, and `compile()` that unwinds with its message.
//!
//! nvcc, the host compiler and the archiver run through logging wrapper
//! scripts (they append their arguments to a file, then exec the real tool),
//! so the tests see exactly what ran.

use cuda_build::compile::{Artifacts, Build, OutputKind};
use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::toolkit::{FoundVia, Toolkit};
use cuda_toolchain::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::Duration;

const X86: &str = "x86_64-unknown-linux-gnu";
const ARM: &str = "aarch64-unknown-linux-gnu";

struct Fx {
    dir: tempfile::TempDir,
    tk: Toolkit,
    real_root: PathBuf,
}

impl Fx {
    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }
    /// A build script's environment: package dir, PATH, TARGET and HOST.
    fn env(&self, target: &str) -> Env {
        Env::empty()
            .set(Var::CargoManifestDir, self.path("pkg"))
            .set(Var::Path, "/usr/local/bin:/usr/bin:/bin")
            .set(Var::Target, target)
            .set(Var::Host, X86)
    }
    /// A builder for the package with the logging nvcc, no arch, no cargo output.
    fn base(&self, env: Env, out: &str) -> Build {
        let mut b = Build::new();
        b.env(env)
            .toolkit(self.tk.clone())
            .out_dir(self.path(out))
            .cache_dir(self.path("cache"))
            .emit_cargo(false)
            .file("cu/vector_add.cu");
        b
    }
    fn build(&self, env: Env, out: &str) -> Build {
        let mut b = self.base(env, out);
        b.arch("90");
        b
    }
    /// nvcc's compile commands logged so far (not its arch queries or
    /// flag probes), and clears the log.
    fn nvcc_compiles(&self) -> Vec<String> {
        self.take("nvcc.log")
            .into_iter()
            .filter(|l| l.ends_with(".cu") && !l.contains(" -E "))
            .collect()
    }
    /// Lines a logging wrapper wrote (and clears its log).
    fn take(&self, log: &str) -> Vec<String> {
        let p = self.path(log);
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        let _ = std::fs::remove_file(&p);
        text.lines().map(str::to_string).collect()
    }
    /// A wrapper script `bin/<name>` that logs to `<name>.log` and execs `real`.
    fn logging_wrapper(&self, name: &str, real: &Path) -> PathBuf {
        let script = self.path(&format!("bin/{name}"));
        workspace_tests::write_script(
            &script,
            &format!(
                "echo \"$*\" >> '{}'\nexec '{}' \"$@\"",
                self.path(&format!("{name}.log")).display(),
                real.display()
            ),
        );
        script
    }
}

fn fixture() -> Option<Fx> {
    let real_root = workspace_tests::cu13_root()?;
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/compile/kernels");
    let pkg = dir.path().join("pkg");
    std::fs::create_dir_all(pkg.join("cu/include")).unwrap();
    for h in ["common.cuh", "vec_math.cuh"] {
        std::fs::copy(src.join("include").join(h), pkg.join("cu/include").join(h)).unwrap();
    }
    std::fs::copy(src.join("vector_add.cu"), pkg.join("cu/vector_add.cu")).unwrap();
    let mut fx = Fx {
        dir,
        tk: Toolkit {
            root: real_root.clone(),
            nvcc: PathBuf::new(),
            version: Some(semver::Version::new(13, 0, 88)),
            found_via: FoundVia::Explicit,
            include_dirs: vec![real_root.join("include")],
            lib_dirs: vec![real_root.join("lib")],
            problems: Vec::new(),
        },
        real_root,
    };
    fx.tk.nvcc = fx.logging_wrapper("nvcc", &fx.real_root.join("bin/nvcc"));
    Some(fx)
}

/// The Debian cross toolchain that scripts/test.sh installs.
fn cross_gxx() -> Option<PathBuf> {
    let p = PathBuf::from("/usr/bin/aarch64-linux-gnu-g++");
    if p.is_file() {
        return Some(p);
    }
    assert!(
        !workspace_tests::nvcc_promised(),
        "aarch64-linux-gnu-g++ is missing, but the test command promised the test tools; run scripts/test.sh (it installs g++-aarch64-linux-gnu)"
    );
    eprintln!("skipped: aarch64-linux-gnu-g++ not installed (scripts/test.sh installs it)");
    None
}

/// `Machine:` of every member of an archive, as readelf reports it.
fn machines(lib: &Path) -> Vec<String> {
    let out = cuda_toolchain::process::run(
        "readelf",
        ["-h".as_ref(), lib.as_os_str()],
        Duration::from_secs(30),
    )
    .unwrap();
    assert!(out.status.success(), "{}", out.combined());
    out.stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Machine:"))
        .map(|m| m.trim().to_string())
        .collect()
}

fn arg_after<'a>(line: &'a str, flag: &str) -> Option<&'a str> {
    let mut it = line.split_whitespace();
    it.find(|a| *a == flag)?;
    it.next()
}

#[test]
fn cxx_and_ar_wrappers_make_the_static_library() {
    let Some(fx) = fixture() else { return };
    let cxx = fx.logging_wrapper("cxx-logger", Path::new("/usr/bin/g++"));
    let ar = fx.logging_wrapper("ar-logger", Path::new("/usr/bin/ar"));
    let env = fx.env(X86).set(Var::Cxx, &cxx).set(Var::Ar, &ar);
    let a = fx
        .build(env, "out")
        .output(OutputKind::StaticLib)
        .try_compile()
        .unwrap();
    // nvcc received CXX as -ccbin, and ran it to compile the host code.
    let nvcc = fx.nvcc_compiles();
    assert_eq!(nvcc.len(), 1, "{nvcc:?}");
    assert_eq!(
        arg_after(&nvcc[0], "-ccbin"),
        Some(cxx.to_str().unwrap()),
        "{nvcc:?}"
    );
    let cxx_log = fx.take("cxx-logger.log");
    assert!(
        cxx_log.iter().any(|l| l == "--version"),
        "version check: {cxx_log:?}"
    );
    assert!(
        cxx_log
            .iter()
            .any(|l| l.split_whitespace().any(|a| a == "-c")),
        "nvcc compiled host code with CXX: {cxx_log:?}"
    );
    // AR made the archive.
    let lib = a.library.unwrap();
    let ar_log = fx.take("ar-logger.log");
    assert_eq!(ar_log.len(), 1, "{ar_log:?}");
    assert!(
        ar_log[0].starts_with("crs ") && ar_log[0].ends_with("vector_add.o"),
        "{ar_log:?}"
    );
    assert_eq!(machines(&lib), ["Advanced Micro Devices X86-64"]);

    // NVCC_CCBIN for this target wins over CXX.
    let env = fx
        .env(X86)
        .set(Var::Cxx, &cxx)
        .set_named("NVCC_CCBIN_x86_64_unknown_linux_gnu", "/usr/bin/g++");
    fx.build(env, "out2")
        .output(OutputKind::StaticLib)
        .no_cache()
        .try_compile()
        .unwrap();
    let nvcc = fx.nvcc_compiles();
    assert_eq!(
        arg_after(&nvcc[0], "-ccbin"),
        Some("/usr/bin/g++"),
        "{nvcc:?}"
    );
    assert!(fx.take("cxx-logger.log").is_empty());
}

#[test]
fn a_clean_build_does_not_probe_the_host_compiler_again() {
    let Some(fx) = fixture() else { return };
    let cxx = fx.logging_wrapper("cxx-logger", Path::new("/usr/bin/g++"));
    let env = fx.env(X86).set(Var::Cxx, &cxx);
    fx.build(env.clone(), "out").try_compile().unwrap();
    let first = fx.take("cxx-logger.log");
    assert!(first.iter().any(|l| l == "--version"), "{first:?}");
    // Another OUT_DIR (as after `cargo clean`), the same kernel cache: the
    // kernel is copied, and what the probe found is remembered beside it.
    let clean = fx.build(env.clone(), "out-clean").try_compile().unwrap();
    assert_eq!(clean.stats.from_cache, 1);
    assert_eq!(fx.take("cxx-logger.log"), Vec::<String>::new());
    // A replaced compiler (another size) is asked again.
    workspace_tests::write_script(
        &cxx,
        &format!(
            "# replaced\necho \"$*\" >> '{}'\nexec /usr/bin/g++ \"$@\"",
            fx.path("cxx-logger.log").display()
        ),
    );
    fx.build(env, "out-replaced").try_compile().unwrap();
    let again = fx.take("cxx-logger.log");
    assert!(again.iter().any(|l| l == "--version"), "{again:?}");
}

#[test]
fn a_host_compiler_newer_than_the_toolkit_allows_is_refused_before_nvcc_runs() {
    let Some(fx) = fixture() else { return };
    // gcc 16 is past CUDA 13.0's limit (host_config.h: gcc <= 15).
    let fake = fx.path("bin/g++-16");
    workspace_tests::write_script(
        &fake,
        "case \"$1\" in -dumpfullversion) echo 16.1.0;; *) echo 'g++ (GCC) 16.1.0'; echo 'Copyright (C) 2026 Free Software Foundation, Inc.';; esac",
    );
    let env = fx.env(X86).set(Var::Cxx, &fake);
    let e = fx.build(env, "out").try_compile().unwrap_err();
    assert_eq!(e.code, "host-compiler-unsupported", "{e}");
    assert_eq!(e.kind(), ErrorKind::HostCompiler);
    assert!(
        e.message.contains("gcc 16.1.0") && e.message.contains("chosen by CXX"),
        "{e}"
    );
    assert!(fx.take("nvcc.log").is_empty(), "nvcc must not run");
}

#[test]
fn aarch64_cross_build_gives_aarch64_host_objects() {
    let Some(fx) = fixture() else { return };
    let Some(gxx) = cross_gxx() else { return };
    // As cargo sets it for a build script of `cargo build --target aarch64-unknown-linux-gnu`.
    let a = fx
        .build(fx.env(ARM), "arm")
        .output(OutputKind::StaticLib)
        .try_compile()
        .unwrap();
    let nvcc = fx.nvcc_compiles();
    assert_eq!(nvcc.len(), 1, "{nvcc:?}");
    assert_eq!(
        arg_after(&nvcc[0], "-ccbin"),
        Some(gxx.to_str().unwrap()),
        "{nvcc:?}"
    );
    let lib = a.library.unwrap();
    assert_eq!(machines(&lib), ["AArch64"]);
    // The native build of the same source is x86-64, and not served from
    // the cross build's cache entry.
    let b = fx
        .build(fx.env(X86), "x86")
        .output(OutputKind::StaticLib)
        .try_compile()
        .unwrap();
    assert_eq!(b.stats.compiled, 1);
    assert_eq!(
        machines(b.library.as_ref().unwrap()),
        ["Advanced Micro Devices X86-64"]
    );
}

#[test]
fn device_outputs_do_not_depend_on_the_target() {
    let Some(fx) = fixture() else { return };
    for kind in [OutputKind::Ptx, OutputKind::Cubin, OutputKind::Fatbin] {
        let outs: Vec<Artifacts> = [X86, ARM]
            .iter()
            .map(|t| {
                fx.build(fx.env(t), &format!("{}-{t}", kind.as_str()))
                    .output(kind)
                    .no_cache()
                    .try_compile()
                    .unwrap()
            })
            .collect();
        let bytes = |a: &Artifacts| std::fs::read(&a.kernels[0].output).unwrap();
        assert!(!bytes(&outs[0]).is_empty());
        assert!(
            bytes(&outs[0]) == bytes(&outs[1]),
            "{kind:?} differs between targets"
        );
    }
}

#[test]
fn debug_and_release_profiles_differ_in_flags_and_cache_keys() {
    let Some(fx) = fixture() else { return };
    let dev = || fx.env(X86).set(Var::Debug, "true").set(Var::OptLevel, "0");
    let release = || fx.env(X86).set(Var::Debug, "false").set(Var::OptLevel, "3");
    let ptx = |env: Env, out: &str| {
        let a = fx
            .build(env, out)
            .output(OutputKind::Ptx)
            .try_compile()
            .unwrap();
        let text = std::fs::read_to_string(&a.kernels[0].output).unwrap();
        (a, text, fx.take("nvcc.log").join("\n"))
    };
    let (d, dtext, dlog) = ptx(dev(), "dev");
    assert!(
        dlog.contains("-lineinfo") && !dlog.contains(" -G "),
        "{dlog}"
    );
    assert!(dtext.contains(".loc"), "debug PTX has line info");
    let (r, rtext, rlog) = ptx(release(), "release");
    assert!(!rlog.contains("-lineinfo"), "{rlog}");
    assert!(!rtext.contains(".loc"), "release PTX has no line info");
    // Different keys: the release build compiled instead of reusing the debug entry.
    assert_eq!(
        (d.stats.compiled, r.stats.compiled, r.stats.from_cache),
        (1, 1, 0)
    );
    // Same key again: a fresh dev build is served from the cache.
    let (d2, _, _) = ptx(dev(), "dev2");
    assert_eq!(d2.stats.from_cache, 1);
    // Device debug is opt-in and replaces -lineinfo.
    let (_, _, glog) = ptx(dev().set(Var::CudaBuildDeviceDebug, "1"), "g");
    assert!(
        glog.contains(" -G ") && !glog.contains("-lineinfo"),
        "{glog}"
    );
    // Turned off: no profile flags, so the release key is reused.
    let (off, _, olog) = ptx(dev().set(Var::CudaBuildProfileFlags, "0"), "off");
    assert!(!olog.contains("-lineinfo"));
    assert_eq!(off.stats.from_cache, 1);

    // OPT_LEVEL is the host optimisation of a static library.
    for (env, opt) in [(dev(), "-O0"), (release(), "-O3")] {
        fx.build(env, &format!("lib{opt}"))
            .output(OutputKind::StaticLib)
            .try_compile()
            .unwrap();
        let log = fx.take("nvcc.log").join("\n");
        assert!(log.contains(&format!("-Xcompiler {opt}")), "{log}");
    }
    let mut b = fx.build(dev(), "liboff");
    b.output(OutputKind::StaticLib).profile_flags(false);
    b.try_compile().unwrap();
    let log = fx.take("nvcc.log").join("\n");
    assert!(!log.contains("-O0") && !log.contains("-lineinfo"), "{log}");
}

#[test]
fn cc_named_methods_work() {
    let Some(fx) = fixture() else { return };
    // includes: a header found only through the second directory.
    std::fs::create_dir_all(fx.path("pkg/extra")).unwrap();
    std::fs::write(fx.path("pkg/extra/scale.cuh"), "#define SCALE 2.0f\n").unwrap();
    std::fs::write(
        fx.path("pkg/cu/scaled.cu"),
        "#include \"scale.cuh\"\nextern \"C\" __global__ void scaled(float* x) { x[0] *= SCALE; }\n",
    )
    .unwrap();
    let mut b = fx.build(fx.env(X86), "out");
    b.file("cu/scaled.cu")
        .includes(["cu/include", "extra"])
        .flags(["--use_fast_math", "-Xptxas=-O3"])
        .flag_if_supported("--extra-device-vectorization")
        .flag_if_supported("--no-such-nvcc-flag");
    let a = b.try_compile().unwrap();
    assert_eq!(a.kernels.len(), 2);
    let log = fx.take("nvcc.log");
    let compiles: Vec<&String> = log
        .iter()
        .filter(|l| l.contains(".cu ") || l.ends_with(".cu"))
        .filter(|l| !l.contains(" -E "))
        .collect();
    assert_eq!(compiles.len(), 2, "{log:?}");
    for c in &compiles {
        assert!(
            c.contains("--use_fast_math") && c.contains("-Xptxas=-O3"),
            "{c}"
        );
        assert!(c.contains("--extra-device-vectorization"), "{c}");
        assert!(!c.contains("--no-such-nvcc-flag"), "{c}");
    }
    assert_eq!(
        log.iter().filter(|l| l.contains(" -E ")).count(),
        2,
        "one probe per flag: {log:?}"
    );
    // The answers are kept: a second build asks nvcc nothing.
    b.try_compile().unwrap();
    assert!(fx.take("nvcc.log").is_empty());

    // toolkit_root: the real toolkit by path, no discovery rules involved.
    let mut b = Build::new();
    b.env(fx.env(X86))
        .toolkit_root(&fx.real_root)
        .out_dir(fx.path("root"))
        .no_cache()
        .emit_cargo(false)
        .arch("90")
        .file("cu/vector_add.cu");
    let a = b.try_compile().unwrap();
    assert_eq!(a.toolkit_version.as_deref(), Some("13.0.88"));
    let e = b
        .toolkit_root(fx.path("no-such-toolkit"))
        .try_compile()
        .unwrap_err();
    assert_eq!(
        (e.code, e.kind()),
        ("cuda-home-invalid", ErrorKind::ToolkitNotFound),
        "{e}"
    );
    assert!(e.message.contains("no-such-toolkit"), "{e}");
}

#[test]
fn an_arch_flag_becomes_the_plan_or_is_refused() {
    let Some(fx) = fixture() else { return };
    let a = fx
        .base(fx.env(X86), "out")
        .flag("-arch=sm_80")
        .try_compile()
        .unwrap();
    // Taken as the plan (nvcc's -arch=sm_80: SASS and PTX for 8.0), not doubled.
    assert_eq!(a.kernels[0].archs, ["sm_80", "compute_80"]);
    let log = fx.take("nvcc.log").join("\n");
    assert!(!log.contains("-arch=sm_80"), "{log}");
    assert_eq!(log.matches("-gencode").count(), 1, "{log}");
    assert!(
        a.warnings
            .iter()
            .any(|w| w.contains("taken as the arch plan")),
        "{:?}",
        a.warnings
    );
    // With .arch() as well: refused, pointing at .arch().
    let e = fx
        .build(fx.env(X86), "out")
        .flag("-arch=sm_80")
        .try_compile()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Arch);
    assert!(e.message.contains("given twice"), "{e}");
    // -gencode cannot be planned: refused.
    let e = fx
        .build(fx.env(X86), "out")
        .flags(["-gencode", "arch=compute_80,code=sm_80"])
        .try_compile()
        .unwrap_err();
    assert!(e.to_string().contains("use Build::arch"), "{e}");
    assert!(fx.take("nvcc.log").is_empty());
}

#[test]
fn compile_panics_with_the_full_message_like_cc() {
    let Some(fx) = fixture() else { return };
    let mut b = fx.build(fx.env(X86), "out");
    b.file("cu/missing.cu");
    let caught = std::panic::catch_unwind(|| b.compile()).unwrap_err();
    let message = caught
        .downcast_ref::<String>()
        .expect("the payload is the message");
    assert!(message.starts_with("error[source-not-found]"), "{message}");
    assert!(
        message.contains("missing.cu") && message.contains("= help:"),
        "{message}"
    );
    let e = b.try_compile().unwrap_err();
    assert_eq!(
        (e.to_string(), e.kind()),
        (message.clone(), ErrorKind::InvalidInput)
    );
}

/// Child half of `cargo_warnings_and_cargo_metadata_silence_their_lines`.
#[test]
#[ignore = "run as a child process by cargo_warnings_and_cargo_metadata_silence_their_lines"]
fn child_cargo_lines() {
    let var = |n: &str| PathBuf::from(std::env::var_os(n).unwrap_or_else(|| panic!("{n} unset")));
    let quiet = std::env::var_os("CB_TEST_QUIET").is_some();
    let mut b = Build::new();
    b.env(Env::empty().set(Var::CargoManifestDir, var("CB_TEST_PKG")))
        .toolkit_root(var("CB_TEST_ROOT"))
        .out_dir(var("CB_TEST_OUT"))
        .no_cache()
        .output(OutputKind::StaticLib)
        // A note (cargo:warning) that the build was planned from this flag.
        .flag("-arch=sm_90")
        .file("cu/vector_add.cu");
    if quiet {
        b.cargo_warnings(false).cargo_metadata(false);
    }
    b.compile();
}

#[test]
fn cargo_warnings_and_cargo_metadata_silence_their_lines() {
    let Some(fx) = fixture() else { return };
    let exe = std::env::current_exe().unwrap();
    let run = |quiet: bool| {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(["--ignored", "--exact", "child_cargo_lines", "--nocapture"])
            .env("CB_TEST_ROOT", &fx.real_root)
            .env("CB_TEST_PKG", fx.path("pkg"))
            .env("CB_TEST_OUT", fx.path(if quiet { "quiet" } else { "loud" }));
        if quiet {
            cmd.env("CB_TEST_QUIET", "1");
        }
        let out = cuda_toolchain::process::run_command(&mut cmd, Duration::from_secs(300)).unwrap();
        assert!(out.status.success(), "{}", out.combined());
        out.stdout
    };
    let loud = run(false);
    assert!(
        loud.contains("cargo:warning=cuda-build: Build::flag(\"-arch=sm_90\")"),
        "{loud}"
    );
    assert!(
        loud.contains("cargo:rustc-link-lib=static=kernels"),
        "{loud}"
    );
    assert!(loud.contains("cargo:rerun-if-changed="), "{loud}");
    let quiet = run(true);
    assert!(!quiet.contains("cargo:warning"), "{quiet}");
    assert!(!quiet.contains("cargo:rustc-link"), "{quiet}");
    // Like cc, the rerun-if lines stay.
    assert!(quiet.contains("cargo:rerun-if-changed="), "{quiet}");
    assert!(
        quiet.contains("cargo:rerun-if-env-changed=CXX_x86_64-unknown-linux-gnu"),
        "{quiet}"
    );
}
