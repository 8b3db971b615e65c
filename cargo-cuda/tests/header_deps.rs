//! Header-only dependencies declared in `[package.metadata.cuda]`, shared
//! through one store by two throwaway crates: `cargo cuda deps fetch` (no
//! arguments) in the first fetches the git dependency from a local bare
//! repository made here; in the second, offline, it fetches nothing; then
//! both crates build with the real nvcc against CUTLASS 4.2 and that git
//! dependency: crate A opts in with `Build::header_deps_from_metadata`, crate B
//! uses the declaration alone (and an sm_75 build gets the advisory warning).

mod common;

use std::path::{Path, PathBuf};

use common::{cargo_cuda, text, workspace_root};

use workspace_tests::git;

/// A bare repository with one header, `include/mylib/mylib.cuh`; returns its URL and commit.
fn bare_repo(tmp: &Path) -> (String, String) {
    let src = tmp.join("mylib-src");
    std::fs::create_dir_all(src.join("include/mylib")).unwrap();
    git(&src, &["init", "-q"]);
    std::fs::write(
        src.join("include/mylib/mylib.cuh"),
        "#pragma once\n#define MYLIB_TILE 128\n",
    )
    .unwrap();
    git(&src, &["add", "."]);
    git(&src, &["commit", "-qm", "mylib"]);
    let commit = git(&src, &["rev-parse", "HEAD"]);
    let bare = tmp.join("mylib.git");
    let (src, bare_s) = (src.to_str().unwrap(), bare.to_str().unwrap());
    git(tmp, &["clone", "-q", "--bare", src, bare_s]);
    (format!("file://{}", bare.display()), commit)
}

/// A crate whose build script compiles a CUTLASS GEMM that also includes
/// mylib, with both declared in its Cargo.toml only. `explicit`: the build
/// script opts in with `header_deps_from_metadata()`; else the declaration
/// alone is used, and a second build compiles an sm_75 kernel that includes
/// neither (CUTLASS's sm_80 requirement is then a warning for it).
fn make_crate(dir: &Path, name: &str, url: &str, commit: &str, explicit: bool) -> PathBuf {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let cuda_build = workspace_root().join("cuda-build");
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
             [build-dependencies]\ncuda-build = {{ path = {:?} }}\n\n\
             [package.metadata.cuda]\ncutlass = \"4.2\"\n\n\
             [package.metadata.cuda.header-deps]\nmylib = {{ git = \"{url}\", commit = \"{commit}\" }}\n\n\
             [workspace]\n",
            cuda_build.display()
        ),
    )
    .unwrap();
    // The workspace's lock: same dependency versions, so the shared target
    // reuses them and cargo needs no registry.
    std::fs::copy(workspace_root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let script = if explicit {
        format!(
            "fn main() {{\n    cuda_build::Build::new()\n        .header_deps_from_metadata()\n        \
             .file(\"gemm.cu\")\n        .define(\"CRATE\", \"{name}\")\n        .arch(\"80\")\n        \
             .compile();\n}}\n"
        )
    } else {
        std::fs::write(
            dir.join("old.cu"),
            "extern \"C\" __global__ void old_kernel(int *o) { *o = 75; }\n",
        )
        .unwrap();
        format!(
            "fn main() {{\n    let mut gemm = cuda_build::Build::new();\n    \
             gemm.file(\"gemm.cu\").define(\"CRATE\", \"{name}\").arch(\"80\").module_name(\"gemm\");\n    \
             let mut old = cuda_build::Build::new();\n    \
             old.file(\"old.cu\").arch(\"75\").module_name(\"old\");\n    \
             cuda_build::compile_all([&gemm, &old]);\n}}\n"
        )
    };
    std::fs::write(dir.join("build.rs"), script).unwrap();
    std::fs::write(
        dir.join("gemm.cu"),
        "// A basic CUTLASS device GEMM sized by a header from a git dependency.\n\
         #include <cutlass/gemm/device/gemm.h>\n#include <mylib/mylib.cuh>\n\
         static_assert(MYLIB_TILE == 128, \"mylib at the pinned commit\");\n\
         extern \"C\" cudaError_t sgemm(int m, int n, int k, float alpha, const float *a, int lda,\n\
             const float *b, int ldb, float beta, float *c, int ldc, cudaStream_t stream) {\n\
             using Col = cutlass::layout::ColumnMajor;\n\
             using Gemm = cutlass::gemm::device::Gemm<float, Col, float, Col, float, Col>;\n\
             Gemm gemm;\n\
             Gemm::Arguments args({m, n, k}, {a, lda}, {b, ldb}, {c, ldc}, {c, ldc}, {alpha, beta});\n\
             return gemm(args, nullptr, stream) == cutlass::Status::kSuccess ? cudaSuccess : cudaErrorUnknown;\n\
         }\n",
    )
    .unwrap();
    // The versions the build used, as the crate reads them.
    std::fs::write(
        dir.join("src/lib.rs"),
        "pub const CUTLASS: &str = env!(\"CUDA_BUILD_DEP_CUTLASS\");\n\
         pub const MYLIB: &str = env!(\"CUDA_BUILD_DEP_MYLIB\");\n",
    )
    .unwrap();
    dir.join("Cargo.toml")
}

/// `cargo build --offline` of one crate with the real nvcc and `store`, no
/// other CUDA setting from the caller's environment.
fn offline_build(manifest: &Path, root: &Path, store: &Path) -> std::process::Command {
    let mut cmd = common::plain_cargo();
    cmd.args(["build", "--offline", "--manifest-path"])
        .arg(manifest)
        .env("CUDA_HOME", root)
        .env("CARGO_CUDA_HOME", store)
        .env("CARGO_NET_OFFLINE", "true");
    cmd
}

/// `cargo cuda deps fetch` for one crate against `store`; returns stderr (it must succeed).
fn deps_fetch(manifest: &Path, store: &Path, offline: bool) -> String {
    let mut cmd = cargo_cuda();
    cmd.args(["cuda", "deps", "fetch", "--manifest-path"])
        .arg(manifest)
        // A stopped index: nothing may come from it.
        .args(["--index-url", "http://127.0.0.1:9/simple"])
        .env("CARGO_CUDA_HOME", store)
        .env("CARGO_NET_OFFLINE", if offline { "true" } else { "false" });
    let out = cmd.output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(
        out.status.success(),
        "deps fetch failed:\n{stdout}\n{stderr}"
    );
    stderr
}

#[test]
fn two_crates_share_cutlass_and_a_git_dep_from_one_store() {
    let (Some(root), Some(test_store)) = (
        workspace_tests::cu13_root(),
        workspace_tests::store_with_cutlass(),
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (url, commit) = bare_repo(tmp.path());
    // One store for both crates, holding the CUTLASS 4.2 that scripts/test.sh
    // fetched (linked, not copied: 40 MB).
    let store = tmp.path().join("store");
    let cutlass =
        cuda_toolchain::toolkit::store::find_header_dep(&test_store, "nvidia-cutlass", "4.2")
            .expect("the test store has CUTLASS 4.2");
    let versions = store.join("deps/nvidia-cutlass");
    std::fs::create_dir_all(&versions).unwrap();
    std::os::unix::fs::symlink(&cutlass.dir, versions.join(&cutlass.version)).unwrap();

    let a = make_crate(&tmp.path().join("crate-a"), "crate-a", &url, &commit, true);
    let b = make_crate(&tmp.path().join("crate-b"), "crate-b", &url, &commit, false);

    // The first crate: CUTLASS is cached, mylib comes from the bare repository.
    let first = deps_fetch(&a, &store, false);
    assert!(
        first.contains("CUTLASS 4.2.0.0 for crate-a: cached"),
        "{first}"
    );
    assert!(
        first.contains(&format!("mylib at {commit} for crate-a: fetched")),
        "{first}"
    );
    // The repository is gone and the network is off: the second fetches nothing.
    std::fs::remove_dir_all(tmp.path().join("mylib.git")).unwrap();
    let second = deps_fetch(&b, &store, true);
    assert!(
        second.contains("CUTLASS 4.2.0.0 for crate-b: cached")
            && second.contains(&format!("mylib at {commit} for crate-b: cached")),
        "{second}"
    );
    assert!(!second.contains("fetching"), "{second}");

    // Both build offline with the real nvcc; nvcc really runs for each (own
    // cuda-build cache per crate), and no header lands in OUT_DIR.
    let target = common::shared_target();
    for (manifest, name) in [(&a, "crate-a"), (&b, "crate-b")] {
        let out = offline_build(manifest, &root, &store)
            .env("CARGO_TARGET_DIR", &target)
            .env(
                "CUDA_BUILD_CACHE_DIR",
                tmp.path().join(format!("cache-{name}")),
            )
            .output()
            .unwrap();
        let (_, stderr) = text(&out);
        assert!(out.status.success(), "{name} failed to build:\n{stderr}");
        // crate-b declares CUTLASS in its metadata only: its sm_75 build
        // gets the headers too, and the sm_80 requirement as a warning.
        let advisory = stderr.contains("warning[header-dep-requirement]: CUTLASS 4.2 needs sm_80 or newer, but the arch plan includes sm_75, compute_75");
        assert_eq!(advisory, name == "crate-b", "{name}:\n{stderr}");
        let outputs: Vec<PathBuf> = std::fs::read_dir(target.join("debug/build"))
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{name}-"))
            })
            .map(|e| e.path())
            .filter(|p| p.join("output").is_file())
            .collect();
        let record = outputs
            .iter()
            .map(|p| std::fs::read_to_string(p.join("output")).unwrap())
            .find(|o| o.contains("CUDA_BUILD_DEP_CUTLASS"))
            .unwrap_or_else(|| panic!("no build-script output of {name} names CUTLASS"));
        assert!(
            record.contains("cargo:rustc-env=CUDA_BUILD_DEP_CUTLASS=4.2.0.0")
                && record.contains(&format!("cargo:rustc-env=CUDA_BUILD_DEP_MYLIB={commit}")),
            "{record}"
        );
        let out_dir = outputs
            .iter()
            .map(|p| p.join("out"))
            .find(|d| d.is_dir())
            .unwrap();
        let files: Vec<PathBuf> = walk(&out_dir);
        assert!(
            files
                .iter()
                .any(|f| f.extension().is_some_and(|e| e == "fatbin")
                    && std::fs::metadata(f).unwrap().len() > 0),
            "no fatbin from nvcc in {}: {files:#?}",
            out_dir.display()
        );
        assert!(
            !files.iter().any(|f| f
                .file_name()
                .is_some_and(|n| n == "gemm.h" || n == "mylib.cuh")),
            "headers were copied into OUT_DIR"
        );
        let cache: Vec<PathBuf> = walk(&tmp.path().join(format!("cache-{name}")));
        assert!(!cache.is_empty(), "nvcc's output was not cached for {name}");
    }
    // One copy of each dependency in the store, used by both.
    let entries = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .collect()
    };
    assert_eq!(entries(&versions), vec![cutlass.version.clone()]);
    assert_eq!(entries(&store.join("deps/git/mylib")), vec![commit]);
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    files
}

/// Header dependencies are system headers: CUTLASS 3.5.0's `platform.h`
/// names CUDA 13's deprecated vector types (`long4`, `double4`, …: five host
/// warnings with `-I`), yet a build that includes it prints none of them,
/// while the same deprecation planted in the crate's own header is printed.
#[test]
fn warnings_from_cutlass_headers_are_not_the_users() {
    let (Some(root), Some(test_store)) = (
        workspace_tests::cu13_root(),
        workspace_tests::store_with_cutlass(),
    ) else {
        return;
    };
    let cutlass =
        cuda_toolchain::toolkit::store::find_header_dep(&test_store, "nvidia-cutlass", "3.5.0")
            .expect("the test store has CUTLASS 3.5.0 (scripts/test.sh fetches it)");
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let versions = store.join("deps/nvidia-cutlass");
    std::fs::create_dir_all(&versions).unwrap();
    std::os::unix::fs::symlink(&cutlass.dir, versions.join(&cutlass.version)).unwrap();

    let dir = tmp.path().join("warns");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"warns\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
             [build-dependencies]\ncuda-build = {{ path = {:?} }}\n\n\
             [package.metadata.cuda]\ncutlass = \"3.5.0\"\n\n[workspace]\n",
            workspace_root().join("cuda-build")
        ),
    )
    .unwrap();
    std::fs::copy(workspace_root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    std::fs::write(
        dir.join("build.rs"),
        "fn main() {\n    cuda_build::Build::new().header_deps_from_metadata().file(\"k.cu\").arch(\"80\").compile();\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("own.h"),
        "#pragma once\n__device__ inline float own_value() { double4 d; d.x = 1; return (float)d.x; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("k.cu"),
        "#include <cutlass/platform/platform.h>\n#include \"own.h\"\n\
         extern \"C\" __global__ void k(float *x) { x[0] = own_value(); }\n",
    )
    .unwrap();
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();

    let out = offline_build(&dir.join("Cargo.toml"), &root, &store)
        .env("CARGO_TARGET_DIR", common::shared_target())
        .env("CUDA_BUILD_CACHE_DIR", tmp.path().join("cache"))
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "the build failed:\n{stderr}");
    assert!(
        stderr.contains("own.h") && stderr.contains("\"double4\" was declared deprecated"),
        "the crate's own warning was not printed:\n{stderr}"
    );
    for needle in ["platform.h", "cutlass_library", "long4"] {
        assert!(
            !stderr.contains(needle),
            "a warning from CUTLASS's headers (`{needle}`) was printed:\n{stderr}"
        );
    }
}
