//! Each preset reproduces its builder, checked against the builder itself:
//! one crate whose build script compiles the same kernel with cc 1.11's
//! `.cuda(true)`, bindgen_cuda 0.1.6 and cudaforge 0.1.6 (real crates from
//! crates.io, network on the first run only) and with cuda-build's
//! `like_cc()`, `like_bindgen_cuda()` and `like_cudaforge()`, in a release
//! profile. `cargo cuda inspect --compare` finds each pair the same (kernel
//! names, SASS/PTX targets and bytes, debug information, host symbols), and
//! finds the kernel built by `Build::new()` (no preset) different from
//! cudaforge's, naming `--default-stream per-thread`.

mod common;

use std::path::{Path, PathBuf};

use common::{cargo_cuda, fresh, plain_cargo, text, workspace_root};

const KERNEL: &str = r#"#include <cuda_runtime.h>
extern "C" __global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
extern "C" cudaError_t scale_twice(float *x, float *y, float a, int n, cudaStream_t s) {
    scale<<<(n + 255) / 256, 256, 0, s>>>(x, a, n);
    cudaMemcpyAsync(y, x, n * sizeof(float), cudaMemcpyDeviceToDevice, s);
    return cudaStreamSynchronize(s);
}
"#;

/// The build script: every builder, then every preset, each into its own place.
const BUILD_RS: &str = r#"use cuda_build::compile::{Build, OutputKind, OutputNames};
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let dir = |d: &str| { let p = out.join(d); std::fs::create_dir_all(&p).unwrap(); p };

    // cc 1.11 with .cuda(true): a static library, SASS for sm_80 only.
    cc::Build::new()
        .cuda(true)
        .file("src/k.cu")
        .flag("-gencode")
        .flag("arch=compute_80,code=sm_80")
        .out_dir(dir("cc"))
        .cargo_metadata(false)
        .compile("k");
    Build::like_cc().file("src/k.cu").arch("sm_80").module_name("ccport")
        .generate_module(false).cargo_metadata(false).compile();

    // bindgen_cuda 0.1.6: PTX and a static library, CUDA_COMPUTE_CAP=80.
    bindgen_cuda::Builder::default()
        .kernel_paths(vec!["src/k.cu"])
        .out_dir(dir("bindgen"))
        .build_ptx()
        .unwrap();
    bindgen_cuda::Builder::default()
        .kernel_paths(vec!["src/k.cu"])
        .out_dir(dir("bindgen"))
        .build_lib(out.join("bindgen/libbk.a"));
    Build::like_bindgen_cuda().file("src/k.cu").output(OutputKind::Ptx)
        .output_dir(dir("bindgen-port")).output_names(OutputNames::SourceStem)
        .module_name("bptx").generate_module(false).compile();
    Build::like_bindgen_cuda().file("src/k.cu").output(OutputKind::StaticLib)
        .module_name("bk").generate_module(false).cargo_metadata(false).compile();

    // cudaforge 0.1.6: PTX and a static library, CUDA_COMPUTE_CAP=80.
    cudaforge::KernelBuilder::new()
        .source_files(vec!["src/k.cu"])
        .out_dir(dir("forge"))
        .build_ptx()
        .unwrap();
    cudaforge::KernelBuilder::new()
        .source_files(vec!["src/k.cu"])
        .out_dir(dir("forge"))
        .build_lib(out.join("forge/libfk.a"))
        .unwrap();
    Build::like_cudaforge().file("src/k.cu").output(OutputKind::Ptx)
        .output_dir(dir("forge-port")).output_names(OutputNames::SourceStem)
        .module_name("fptx").generate_module(false).compile();
    Build::like_cudaforge().file("src/k.cu").output(OutputKind::StaticLib)
        .module_name("fk").generate_module(false).cargo_metadata(false).compile();

    // A port that copied only the visible lines: no preset.
    Build::new().file("src/k.cu").arch("sm_80").profile_flags(false)
        .output(OutputKind::StaticLib).module_name("plain").generate_module(false)
        .cargo_metadata(false).compile();
}
"#;

fn make_crate(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"preset-check\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
             [build-dependencies]\ncuda-build = {{ path = {:?} }}\ncc = \"1.11\"\n\
             bindgen_cuda = \"=0.1.6\"\ncudaforge = \"=0.1.6\"\n\n[workspace]\n",
            workspace_root().join("cuda-build")
        ),
    )
    .unwrap();
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    std::fs::write(dir.join("src/k.cu"), KERNEL).unwrap();
    std::fs::write(dir.join("build.rs"), BUILD_RS).unwrap();
}

/// `cargo cuda inspect --compare OLD NEW`: (exit code, stdout).
fn compare(old: &Path, new: &Path) -> (i32, String) {
    let out = cargo_cuda()
        .args(["cuda", "inspect", "--compare"])
        .args([old, new])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    (out.status.code().unwrap_or(-1), format!("{stdout}{stderr}"))
}

fn assert_same(old: &Path, new: &Path, what: &str) {
    let (code, out) = compare(old, new);
    assert_eq!(
        code, 0,
        "{what}: the preset's output differs from the builder's:\n{out}"
    );
    assert!(out.contains("Same"), "{out}");
}

#[test]
fn each_preset_builds_what_its_builder_builds() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let krate = tmp.path().join("preset-check");
    make_crate(&krate);
    let mut cmd = plain_cargo();
    // A release build: in a dev build cc adds `-G`, and nvcc's device debug
    // information names the directory of its intermediate files (cc's are
    // `/tmp/tmpxft_<random>`, different on every run, so no two cc builds
    // are byte-identical either); see docs/migrating.md.
    cmd.args(["build", "--release"])
        .current_dir(&krate)
        .env("CUDA_HOME", &root)
        // bindgen_cuda looks for the toolkit here, and runs `nvcc` from PATH.
        .env("CUDA_PATH", &root)
        .env(
            "PATH",
            format!(
                "{}:{}",
                root.join("bin").display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        // bindgen_cuda and cudaforge read the arch here; so does cuda-build.
        .env("CUDA_COMPUTE_CAP", "80")
        .env("CUDA_BUILD_CACHE_DIR", tmp.path().join("cache"))
        .env("CARGO_TARGET_DIR", common::shared_target());
    let out: PathBuf = fresh::out_dir(cmd, "preset-check");
    let lib = |module: &str| out.join(format!("cuda-build/{module}/lib{module}.a"));

    assert_same(&out.join("cc/libk.a"), &lib("ccport"), "cc");
    assert_same(
        &out.join("bindgen/k.ptx"),
        &out.join("bindgen-port/k.ptx"),
        "bindgen_cuda PTX",
    );
    assert_same(
        &out.join("bindgen/libbk.a"),
        &lib("bk"),
        "bindgen_cuda library",
    );
    assert_same(
        &out.join("forge/k.ptx"),
        &out.join("forge-port/k.ptx"),
        "cudaforge PTX",
    );
    assert_same(&out.join("forge/libfk.a"), &lib("fk"), "cudaforge library");
    for (a, b) in [
        ("bindgen/k.ptx", "bindgen-port/k.ptx"),
        ("forge/k.ptx", "forge-port/k.ptx"),
    ] {
        assert!(
            std::fs::read(out.join(a)).unwrap() == std::fs::read(out.join(b)).unwrap(),
            "{a} and {b} differ"
        );
    }

    // Without the preset, the per-thread default stream is lost, and the
    // comparison says so and names the flag.
    let (code, text) = compare(&out.join("forge/libfk.a"), &lib("plain"));
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("differs: stream-mode [--default-stream per-thread]")
            && text.contains("OLD only: __cudaLaunchKernel_ptsz, cudaMemcpyAsync_ptsz, cudaStreamSynchronize_ptsz"),
        "{text}"
    );
    assert!(
        text.contains("OLD was compiled with `--default-stream per-thread`"),
        "{text}"
    );
    // And cc's build against a port without its preset: cc's host flags.
    let (code, text) = compare(&out.join("cc/libk.a"), &lib("plain"));
    assert_eq!(code, 1, "{text}");
    let needle = "function-sections [-Xcompiler -ffunction-sections]";
    assert!(text.contains(needle), "no `{needle}` in:\n{text}");
}
