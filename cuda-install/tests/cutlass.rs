//! CUTLASS from the store: a real device GEMM compiled with the real nvcc for
//! sm_80 and sm_90, the offline rule, the C++17 / sm_80+ checks, and
//! `deps::fetch` faults against an index on 127.0.0.1.

mod common;

use std::path::{Path, PathBuf};

use cuda_build::Build;
use cuda_install::source::{Index, Source};
use cuda_toolchain::env::{Env, Var};

fn gemm_cu() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cutlass/gemm.cu")
}

fn env_for(root: &Path, store: &Path) -> Env {
    Env::empty()
        .set(Var::CudaHome, root)
        .set(Var::CargoCudaHome, store)
        .set(Var::Path, "/usr/bin:/bin")
}

#[test]
fn real_cutlass_gemm_compiles_for_sm80_and_sm90() {
    let (Some(root), Some(store)) = (
        workspace_tests::cu13_root(),
        workspace_tests::store_with_cutlass(),
    ) else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let a = Build::new()
        .env(env_for(&root, &store))
        .cutlass("4.2")
        .file(gemm_cu())
        .arch("80;90")
        .out_dir(out.path())
        .emit_cargo(false)
        .no_cache()
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let k = &a.kernels[0];
    assert!(
        k.archs.iter().any(|x| x.contains("80")) && k.archs.iter().any(|x| x.contains("90")),
        "{:?}",
        k.archs
    );
    assert!(
        k.entries
            .iter()
            .any(|e| e.contains("cutlass") && e.contains("Kernel")),
        "{:?}",
        k.entries
    );
}

#[test]
fn cutlass_requirements_are_checked_before_compiling() {
    let (Some(root), Some(store)) = (
        workspace_tests::cu13_root(),
        workspace_tests::store_with_cutlass(),
    ) else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let e = Build::new()
        .env(env_for(&root, &store))
        .cutlass("4.2")
        .file(gemm_cu())
        .arch("75;90")
        .out_dir(out.path())
        .emit_cargo(false)
        .try_compile()
        .unwrap_err();
    assert_eq!(e.code, "header-dep-requirement", "{e}");
    assert!(
        e.message.contains("sm_80") && e.message.contains("75"),
        "{e}"
    );
    let e = Build::new()
        .env(env_for(&root, &store))
        .cutlass("4.2")
        .std("14")
        .file(gemm_cu())
        .arch("80")
        .out_dir(out.path())
        .emit_cargo(false)
        .try_compile()
        .unwrap_err();
    assert_eq!(e.code, "header-dep-requirement", "{e}");
    assert!(e.message.contains("C++17"), "{e}");
}

#[test]
fn uncached_dependency_is_an_error_naming_the_fetch_command() {
    let store = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let env = Env::empty()
        .set(Var::CargoCudaHome, store.path())
        .set(Var::CargoNetOffline, "true");
    let e = Build::new()
        .env(env)
        .cutlass("4.2")
        .file(gemm_cu())
        .out_dir(out.path())
        .emit_cargo(false)
        .try_compile()
        .unwrap_err();
    assert_eq!(e.code, "header-dep-missing", "{e}");
    assert!(
        e.message.contains("offline") && e.message.contains("nvidia-cutlass 4.2"),
        "{e}"
    );
    assert!(e.help[0].contains("cargo cuda deps fetch"), "{e}");
    // A local path that is not there says so.
    let e = Build::new()
        .header_dep(
            "mylib",
            cuda_build::compile::HeaderSource::Path(store.path().join("nope")),
        )
        .out_dir(out.path())
        .emit_cargo(false)
        .try_compile()
        .unwrap_err();
    assert_eq!(e.code, "header-dep-missing");
}

fn fetch(
    store: &Path,
    url: &str,
    version: &str,
) -> Result<(cuda_toolchain::toolkit::store::HeaderDep, bool), cuda_toolchain::Error> {
    let url = url.to_string();
    let make = move || -> Result<Box<dyn Source>, cuda_toolchain::Error> {
        Ok(Box::new(Index::new(
            &url,
            "--index-url",
            cuda_install::http::Http::new(&Env::empty())?,
        )))
    };
    cuda_install::deps::fetch(store, &make, "nvidia-cutlass", version, false, &|_| {})
}

#[test]
fn fetch_from_a_local_index_then_offline_and_faults() {
    let server = common::Server::start();
    let wheel = common::wheel(&[
        (
            "cutlass_library/source/include/cutlass/cutlass.h",
            b"#pragma once".to_vec(),
            0o644,
        ),
        (
            "cutlass_library/source/include/cute/tensor.hpp",
            b"#pragma once".to_vec(),
            0o644,
        ),
        (
            "cutlass_library/source/tools/util/include/cutlass/util/host_tensor.h",
            b"#pragma once".to_vec(),
            0o644,
        ),
    ]);
    server.publish(&[
        ("nvidia-cutlass", "4.2.0.0", wheel.clone()),
        ("nvidia-cutlass", "3.9.0.0", b"not a zip".to_vec()),
    ]);
    let store = tempfile::tempdir().unwrap();
    let e = fetch(store.path(), &server.url, "5").unwrap_err();
    assert_eq!(e.code, "install-unknown-version", "{e}");
    assert!(e.help[0].contains("4.2.0.0"), "{e}");
    // An answer that is not a wheel (its sha256 matches: the index serves it so).
    let e = fetch(store.path(), &server.url, "3.9").unwrap_err();
    assert_eq!(e.code, "install-bad-wheel", "{e}");
    let (dep, fetched) = fetch(store.path(), &server.url, "4.2").unwrap();
    assert!(fetched);
    assert_eq!(dep.version, "4.2.0.0");
    assert!(dep.include_paths()[0].join("cute/tensor.hpp").is_file());
    // The index is gone: the cached copy is used, by the fetcher and by cuda-build.
    drop(server);
    let (_, fetched) = fetch(store.path(), "http://127.0.0.1:9/simple", "4.2").unwrap();
    assert!(!fetched);
    let found =
        cuda_toolchain::toolkit::store::find_header_dep(store.path(), "nvidia-cutlass", "4.2")
            .unwrap();
    assert_eq!(found.include_paths(), dep.include_paths());
    let left: Vec<_> = std::fs::read_dir(store.path().join("deps/.tmp"))
        .unwrap()
        .flatten()
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

use workspace_tests::git;

#[test]
fn git_dependency_from_a_local_bare_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir_all(src.join("include/mylib")).unwrap();
    git(&src, &["init", "-q"]);
    std::fs::write(
        src.join("include/mylib/mylib.cuh"),
        "#pragma once\n#define MYLIB 1\n",
    )
    .unwrap();
    git(&src, &["add", "."]);
    git(&src, &["commit", "-qm", "one"]);
    let first = git(&src, &["rev-parse", "HEAD"]);
    std::fs::write(
        src.join("include/mylib/mylib.cuh"),
        "#pragma once\n#define MYLIB 2\n",
    )
    .unwrap();
    git(&src, &["commit", "-qam", "two"]);
    let bare = tmp.path().join("mylib.git");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            "--bare",
            src.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    let url = format!("file://{}", bare.display());
    let store = tmp.path().join("store");
    let fetch =
        |commit: &str| cuda_install::deps::fetch_git(&store, "mylib", &url, commit, false, &|_| {});

    // A short hash, and a full one that is not in the repository.
    assert_eq!(
        fetch(&first[..8]).unwrap_err().code,
        "header-dep-bad-commit"
    );
    let e = fetch(&"1".repeat(40)).unwrap_err();
    assert_eq!(e.code, "header-dep-bad-commit", "{e}");
    assert!(e.message.contains(&url), "{e}");
    let staging: Vec<_> = std::fs::read_dir(store.join("deps/.tmp"))
        .unwrap()
        .flatten()
        .collect();
    assert!(staging.is_empty(), "{staging:?}");

    // The older commit, exactly: its header says 1, and no .git is kept.
    let (dep, fetched) = fetch(&first).unwrap();
    assert!(fetched);
    let header = std::fs::read_to_string(dep.include_paths()[0].join("mylib/mylib.cuh")).unwrap();
    assert!(header.contains("MYLIB 1"), "{header}");
    assert!(!dep.dir.join(".git").exists());
    // Cached: the repository can go; a build script finds it in the store.
    std::fs::remove_dir_all(&bare).unwrap();
    assert!(!fetch(&first).unwrap().1);
    let out = tempfile::tempdir().unwrap();
    let source = cuda_build::compile::HeaderSource::Git {
        url: url.clone(),
        commit: first.clone(),
    };
    let env = Env::empty().set(Var::CargoCudaHome, &store);
    let mut b = Build::new();
    b.env(env.clone())
        .header_dep("mylib", source)
        .out_dir(out.path())
        .emit_cargo(false);
    assert!(b
        .try_compile()
        .err()
        .is_none_or(|e| e.code != "header-dep-missing" && e.code != "header-dep-bad-commit"));
    let short = cuda_build::compile::HeaderSource::Git {
        url,
        commit: first[..12].to_string(),
    };
    let e = Build::new()
        .env(env)
        .header_dep("mylib", short)
        .out_dir(out.path())
        .emit_cargo(false)
        .try_compile()
        .unwrap_err();
    assert_eq!(e.code, "header-dep-bad-commit");
}
