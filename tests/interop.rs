//! Other tools' conventions on fake trees with real texts: what NVIDIA's
//! crates, cudarc and CMake will see ([`consumers`]) and what to hand them,
//! and the nvcc flags for an MSVC host (`/Zc:preprocessor` by CUDA release,
//! `_USE_MATH_DEFINES`). The real crates are built in
//! cargo-cuda/tests/interop.rs; nothing here runs on Windows.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use cuda_build::compile::Build;
use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::interop::consumers::{
    self, assess_one, BuildTarget, Consumer, CudarcFeatures, NvidiaCrate, Package,
};
use cuda_toolchain::toolkit::{FoundVia, Toolkit};

const X86: &str = "x86_64-unknown-linux-gnu";

fn native() -> BuildTarget {
    BuildTarget {
        triple: X86.into(),
        host: X86.into(),
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A toolkit root with a `cuda.h` of `cuda_version` (13000 = 13.0) in
/// `include/` (or `targets/<dir>/include`), and `curand.h` when asked.
fn headers(root: &Path, cuda_version: u32, dir: Option<&str>, curand: bool) -> PathBuf {
    let include = match dir {
        Some(d) => root.join("targets").join(d).join("include"),
        None => root.join("include"),
    };
    write(
        &include.join("cuda.h"),
        &format!("#ifndef __cuda_cuda_h__\n#define CUDA_VERSION {cuda_version}\n#endif\n"),
    );
    if curand {
        write(&include.join("curand.h"), "/* curand */\n");
    }
    root.to_path_buf()
}

/// The selected toolkit as discovery would describe it (nothing on disk needed but headers).
fn selected(root: &Path, version: &str) -> Toolkit {
    Toolkit {
        root: root.to_path_buf(),
        nvcc: root.join("bin/nvcc"),
        version: Some(semver::Version::parse(version).unwrap()),
        found_via: FoundVia::Explicit,
        include_dirs: vec![root.join("include")],
        lib_dirs: vec![],
        problems: vec![],
    }
}

fn vars(h: &[(Var, OsString)]) -> Vec<(&'static str, String)> {
    h.iter()
        .map(|(v, s)| (v.name(), s.to_string_lossy().into_owned()))
        .collect()
}

/// NVIDIA's cuda-bindings and cuda-core: CUDA_TOOLKIT_PATH, then CUDA_HOME
/// (as is), else their fixed lists under `/` (here a fake root), where the
/// two crates differ: only cuda-bindings looks in /opt/cuda.
#[test]
fn nvidia_crates_see_what_their_build_scripts_would() {
    let sys = tempfile::tempdir().unwrap();
    let mine = headers(&sys.path().join("store/13.0.88"), 13000, None, true);
    let tk = selected(&mine, "13.0.88");
    let bindings = Consumer::Nvidia(NvidiaCrate::Bindings);
    let core = Consumer::Nvidia(NvidiaCrate::Core);
    let judge = |c: Consumer, env: &Env| assess_one("x".into(), c, &tk, env, &native());
    let env = Env::empty().with_root(sys.path());

    // Nothing anywhere: cuda-bindings stops, cuda-core quietly goes without.
    let a = judge(bindings, &env);
    assert!(!a.agrees && a.seen.failure.is_some(), "{a:#?}");
    assert_eq!(
        vars(&a.handoff),
        [("CUDA_TOOLKIT_PATH", mine.display().to_string())]
    );

    // /opt/cuda (CUDA 13.0): cuda-bindings takes it, cuda-core does not look there.
    let opt = headers(&sys.path().join("opt/cuda"), 13000, None, true);
    let a = judge(bindings, &env);
    assert_eq!(a.seen.root.as_deref(), Some(opt.as_path()), "{a:#?}");
    assert_eq!(a.seen.release, Some((13, 0)));
    assert!(!a.agrees);
    let a = judge(core, &env);
    assert_eq!(
        a.seen.root, None,
        "cuda-core's list has no /opt/cuda: {a:#?}"
    );

    // A decoy 13.3 where both look first, an older 12.4 /usr/local/cuda skipped.
    headers(&sys.path().join("usr/local/cuda"), 12040, None, true);
    let decoy = headers(&sys.path().join("usr/local/cuda-13.3"), 13030, None, true);
    for c in [bindings, core] {
        let a = judge(c, &env);
        assert_eq!(a.seen.root.as_deref(), Some(decoy.as_path()), "{a:#?}");
        assert_eq!(a.seen.release, Some((13, 3)));
        assert!(
            a.seen.via.starts_with("/usr/local/cuda-13.3"),
            "{}",
            a.seen.via
        );
        assert!(!a.agrees);
        assert_eq!(
            vars(&a.handoff),
            [("CUDA_TOOLKIT_PATH", mine.display().to_string())]
        );
    }

    // CUDA_HOME at the selected root: both agree. CUDA_TOOLKIT_PATH comes
    // first and is taken as is, even when it names nothing.
    let env = env.set(Var::CudaHome, &mine);
    assert!(judge(bindings, &env).agrees);
    assert!(judge(core, &env).agrees);
    let env = env.set(Var::CudaToolkitPath, sys.path().join("gone"));
    let a = judge(bindings, &env);
    assert_eq!(a.seen.via, "CUDA_TOOLKIT_PATH");
    assert!(
        a.seen
            .failure
            .as_deref()
            .unwrap()
            .contains("is not a directory"),
        "{a:#?}"
    );
    assert!(!a.agrees);
    let env = env.set(Var::CudaToolkitPath, "");
    assert!(judge(bindings, &env)
        .seen
        .failure
        .unwrap()
        .contains("empty"));

    // A toolkit without curand.h: cuda-bindings cannot build with it, whatever it is handed.
    let bare = headers(&sys.path().join("bare"), 13000, None, false);
    let tk_bare = selected(&bare, "13.0.88");
    let a = assess_one(
        "cuda-bindings 0.5.0".into(),
        bindings,
        &tk_bare,
        &Env::empty(),
        &native(),
    );
    let blocked = a.blocked.unwrap();
    assert!(
        blocked.contains("curand.h")
            && blocked.contains("cargo cuda toolkit install 13.0 --with curand"),
        "{blocked}"
    );
    let a = assess_one(
        "cuda-core 0.5.0".into(),
        core,
        &tk_bare,
        &Env::empty(),
        &native(),
    );
    assert_eq!(a.blocked, None, "cuda-core reads only cuda.h");

    // CUDA 12.4: below their floor.
    let old = headers(&sys.path().join("old"), 12040, None, true);
    let a = assess_one(
        "x".into(),
        bindings,
        &selected(&old, "12.4.131"),
        &Env::empty(),
        &native(),
    );
    assert!(a.blocked.unwrap().contains("below the 13.0"));
}

/// A cross build (aarch64 on x86_64): NVIDIA's crates would read the host's
/// `include/` first, so they are handed the target's `targets/<dir>`.
#[test]
fn a_cross_build_hands_nvidias_crates_the_target_tree() {
    let sys = tempfile::tempdir().unwrap();
    let root = headers(&sys.path().join("cuda"), 13000, None, true);
    headers(&root, 13000, Some("sbsa-linux"), true);
    let tk = selected(&root, "13.0.88");
    let arm = BuildTarget {
        triple: "aarch64-unknown-linux-gnu".into(),
        host: X86.into(),
    };
    let env = Env::empty().set(Var::CudaToolkitPath, &root);
    let a = assess_one(
        "x".into(),
        Consumer::Nvidia(NvidiaCrate::Bindings),
        &tk,
        &env,
        &arm,
    );
    assert!(!a.agrees);
    assert_eq!(
        vars(&a.handoff),
        [("CUDA_TOOLKIT_TARGET_DIR", "sbsa-linux".to_string())]
    );
    let env = env.set(Var::CudaToolkitTargetDir, "sbsa-linux");
    assert!(
        assess_one(
            "x".into(),
            Consumer::Nvidia(NvidiaCrate::Bindings),
            &tk,
            &env,
            &arm
        )
        .agrees
    );
    assert_eq!(
        vars(&consumers::handoff_all(&tk, Some(&arm)))
            .iter()
            .find(|(n, _)| *n == "CUDA_TOOLKIT_TARGET_DIR")
            .map(|(_, v)| v.as_str()),
        Some("sbsa-linux")
    );
    // No aarch64 tree: they would bind the build machine's headers.
    let host_only = headers(&sys.path().join("host-only"), 13000, None, true);
    let a = assess_one(
        "x".into(),
        Consumer::Nvidia(NvidiaCrate::Core),
        &selected(&host_only, "13.0.88"),
        &Env::empty(),
        &arm,
    );
    assert!(a
        .blocked
        .unwrap()
        .contains("targets/sbsa-linux or targets/aarch64-linux"));
}

/// cudarc: CUDARC_CUDA_VERSION, a version feature, the nvcc on PATH (the
/// real 13.0), else fallback-latest.
#[test]
fn cudarc_sees_its_version_as_its_build_script_would() {
    let tmp = tempfile::tempdir().unwrap();
    let root = headers(&tmp.path().join("cuda"), 13000, None, true);
    let tk = selected(&root, "13.0.88");
    let from_build = Consumer::Cudarc(CudarcFeatures {
        from_build_system: true,
        fallback_latest: true,
        ..Default::default()
    });
    let judge =
        |c: Consumer, env: &Env| assess_one("cudarc 0.19.10".into(), c, &tk, env, &native());
    let env = Env::empty().set(Var::Path, tmp.path());
    let a = judge(from_build, &env);
    assert_eq!(a.seen.release, Some((13, 4)), "fallback-latest: {a:#?}");
    assert_eq!(
        vars(&a.handoff),
        [("CUDARC_CUDA_VERSION", "13000".to_string())]
    );
    assert!(
        judge(
            from_build,
            &env.clone().set(Var::CudarcCudaVersion, "13000")
        )
        .agrees
    );
    let a = judge(from_build, &env.clone().set(Var::CudarcCudaVersion, "13"));
    assert!(a.seen.failure.unwrap().contains("panics"));
    if let Some(nvcc) = workspace_tests::nvcc13() {
        let env = Env::empty().set(Var::Path, nvcc.parent().unwrap());
        let a = judge(from_build, &env);
        assert_eq!(a.seen.release, Some((13, 0)), "{a:#?}");
        assert!(a.seen.via.contains("nvcc --version"), "{}", a.seen.via);
        assert!(a.agrees);
    }
    let fixed = Consumer::Cudarc(CudarcFeatures {
        version: Some((12, 8)),
        ..Default::default()
    });
    let a = judge(fixed, &env);
    assert!(a.handoff.is_empty(), "a second version would clash: {a:#?}");
    assert!(a.blocked.unwrap().contains("cuda-12080"));
    // Linking: every set root variable is a link search path.
    let links = Consumer::Cudarc(CudarcFeatures {
        version: Some((13, 0)),
        links: true,
        ..Default::default()
    });
    let env = env.set(Var::CudaPath, tmp.path().join("other"));
    let a = judge(links, &env);
    assert_eq!(
        vars(&a.handoff),
        [("CUDA_PATH", root.display().to_string())]
    );
}

/// CMake: CUDACXX (first word), else nvcc on PATH, else $CUDA_PATH/bin. A
/// package is a CMake consumer when it build-depends on `cmake` and a
/// CMakeLists.txt of it enables CUDA.
#[test]
fn cmake_builds_are_found_and_see_cudacxx_then_path() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("llama-sys");
    write(
        &pkg.join("vendor/llama/CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.18)\nproject(llama LANGUAGES C CXX)\nif (GGML_CUDA)\n  enable_language(CUDA)\nendif()\n",
    );
    let p = Package {
        name: "llama-sys".into(),
        version: "0.1.0".into(),
        build_dependencies: vec!["cmake".into(), "cc".into()],
        manifest_dir: pkg.clone(),
        ..Default::default()
    };
    assert_eq!(consumers::classify(&p), Some(Consumer::Cmake));
    let plain = tmp.path().join("zlib-sys");
    write(&plain.join("CMakeLists.txt"), "project(zlib C)\n");
    let p = Package {
        name: "zlib-sys".into(),
        build_dependencies: vec!["cmake".into()],
        manifest_dir: plain,
        ..Default::default()
    };
    assert_eq!(consumers::classify(&p), None);

    let Some(nvcc) = workspace_tests::nvcc13() else {
        return;
    };
    let root = nvcc.parent().unwrap().parent().unwrap().to_path_buf();
    let tk = selected(&root, "13.0.88");
    let judge = |env: &Env| assess_one("llama-sys".into(), Consumer::Cmake, &tk, env, &native());
    let a = judge(&Env::empty());
    assert!(a
        .seen
        .failure
        .unwrap()
        .contains("CMake finds no CUDA compiler"));
    assert!(
        judge(&Env::empty().set(Var::Cudacxx, format!("{} -ccbin g++", nvcc.display()))).agrees
    );
    assert!(judge(&Env::empty().set(Var::Path, nvcc.parent().unwrap())).agrees);
    assert!(judge(&Env::empty().set(Var::CudaPath, &root)).agrees);
    let a = judge(&Env::empty().set(Var::Cudacxx, "/usr/bin/env"));
    assert!(a.seen.via.contains("not nvcc"), "{a:#?}");
    assert_eq!(vars(&a.handoff), [("CUDACXX", nvcc.display().to_string())]);
}

/// An MSVC host compile, as data: `TARGET`/`HOST` are x86_64-pc-windows-msvc,
/// the host compiler is a script that answers like cl.exe (its real banner
/// and `--version` diagnostics), and nvcc a script that answers with a real
/// banner of each release and records the rest of its command lines. nvcc
/// gets `-Xcompiler=/Zc:preprocessor` from CUDA 13.1 (CCCL warns) and 13.2
/// (CCCL fails) on, and `-D_USE_MATH_DEFINES` always; a flag the build
/// already has is not doubled. cl.exe's own discovery (cc's vswhere lookup)
/// is not exercised: NVCC_CCBIN names it.
#[test]
fn msvc_host_compiles_get_the_flags_their_cuda_release_needs() {
    let tmp = tempfile::tempdir().unwrap();
    let cl = tmp.path().join("msvc/bin/Hostx64/x64/cl");
    workspace_tests::write_script(
        &cl,
        "cat >&2 <<'EOF'\nMicrosoft (R) C/C++ Optimizing Compiler Version 19.44.35225 for x64\nCopyright (C) Microsoft Corporation.  All rights reserved.\n\ncl : Command line warning D9002 : ignoring unknown option '--version'\ncl : Command line error D8003 : missing source filename\nEOF\nexit 2",
    );
    let real_banner = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/toolkit/nvcc-version-13.0.88.txt"),
    )
    .unwrap();
    let pkg = tmp.path().join("pkg");
    write(
        &pkg.join("cu/k.cu"),
        "extern \"C\" __global__ void k() {}\n",
    );
    for (release, full, zc) in [
        ("13.0", "13.0.88", false),
        ("13.1", "13.1.80", true),
        ("13.2", "13.2.78", true),
    ] {
        // nvcc 13.0.88's real banner, with the release line of `full`
        // (13.2.78's as huggingface/candle #3686 quotes it).
        let banner = real_banner
            .replace(
                "release 13.0, V13.0.88",
                &format!("release {release}, V{full}"),
            )
            .replace("cuda_13.0.", &format!("cuda_{release}."));
        let parsed = cuda_toolchain::toolkit::version::parse_tool_version(&banner);
        assert_eq!(parsed.map(|v| v.to_string()).as_deref(), Some(full));
        let root = tmp.path().join(format!("cuda-{release}"));
        let log = root.join("nvcc.log");
        workspace_tests::write_script(
            &root.join("bin/nvcc"),
            &format!(
                "if [ \"$1\" = --version ]; then cat <<'EOF'\n{banner}EOF\nexit 0; fi\necho \"$*\" >> '{}'\nexit 1",
                log.display()
            ),
        );
        let tk = selected(&root, full);
        let env = Env::empty()
            .set(Var::CargoManifestDir, &pkg)
            .set(Var::Path, "/usr/bin:/bin")
            .set(Var::Target, "x86_64-pc-windows-msvc")
            .set(Var::Host, "x86_64-pc-windows-msvc")
            .set(Var::NvccCcbin, &cl);
        for given in [
            vec![],
            vec!["-Xcompiler", "/Zc:preprocessor", "-D_USE_MATH_DEFINES"],
        ] {
            let _ = std::fs::remove_file(&log);
            let mut b = Build::new();
            b.env(env.clone())
                .toolkit(tk.clone())
                .out_dir(tmp.path().join(format!("out-{release}")))
                .no_cache()
                .emit_cargo(false)
                .arch("80")
                .file("cu/k.cu");
            for f in &given {
                b.flag(f);
            }
            let e = b.try_compile().unwrap_err();
            let lines =
                std::fs::read_to_string(&log).unwrap_or_else(|_| panic!("nvcc never ran: {e}"));
            let compile = lines
                .lines()
                .find(|l| l.contains("k.cu"))
                .unwrap_or_else(|| panic!("no compile of k.cu in:\n{lines}"));
            let count = |needle: &str| compile.matches(needle).count();
            assert!(
                compile.contains(&format!("-ccbin {}", cl.display())),
                "{compile}"
            );
            assert_eq!(
                count("/Zc:preprocessor"),
                usize::from(zc || !given.is_empty()),
                "{release}: {compile}"
            );
            assert_eq!(count("_USE_MATH_DEFINES"), 1, "{release}: {compile}");
            assert!(!compile.contains("-fPIC"), "MSVC has no -fPIC: {compile}");
        }
    }
}
