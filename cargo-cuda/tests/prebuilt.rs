//! Kernels shipped in a crate (`cargo cuda prebuild`, docs/prebuilt.md), with
//! a crate nobody here wrote: candle-kernels 0.11.1 from crates.io, its
//! build.rs ported to cuda-build (benches/candle/build.rs), cut to three of
//! its kernels as `real_crate.rs` does (two PTX files and one object of its
//! static library), depending on cuda-build by version from the local
//! registry of packaged crates (common/registry.rs).
//!
//! The port is prebuilt for 80 and 90 (cudaforge's shape, which the port
//! keeps: sm_80 and sm_90a) with the real nvcc 13.0, packaged with `cargo
//! package`, added to the registry, and built as a dependency of a fresh
//! crate where there is no nvcc, no CUDA_HOME and no toolkit in the store.
//! Then, each against that package:
//!
//! - its images are byte-identical to a local nvcc build of the port
//!   (objects up to nvcc's process-id file name, which every compile varies);
//! - an edited `.cu`, or a header one source includes: with nvcc exactly that
//!   source compiles and the others stay prebuilt; without nvcc the error
//!   names the file;
//! - one flipped byte of a shipped image: refused, and `--verify` reports it;
//! - `--verify` passes with the real nvcc 13.0;
//! - `CUDA_ARCHS=75`: compiled with nvcc; without it, an error naming the
//!   shipped archs;
//! - the policy: `require` builds from the images alone, and refuses an
//!   edited source even with nvcc; `never` compiles everything.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::candle::{self, KEPT};
use common::registry::{registry, Registry};
use common::{cargo_cuda, fresh, plain_cargo, real_cargo, text, workspace_root};

/// The arch set shipped.
const ARCHS: &str = "80;90";

/// The port at `to`: [`candle::KEPT`]'s kernels, a lib.rs with only the PTX module,
/// benches/candle/build.rs, `cuda-build` by version, and what to prebuild.
fn port(published: &Path, to: &Path) {
    candle::trimmed_copy(published, to);
    std::fs::copy(
        workspace_root().join("benches/candle/build.rs"),
        to.join("build.rs"),
    )
    .unwrap();
    let manifest = to.join("Cargo.toml");
    let toml = std::fs::read_to_string(&manifest).unwrap();
    let dep = "[build-dependencies.cudaforge]\nversion = \"0.1.2\"";
    assert!(
        toml.contains(dep),
        "candle-kernels' Cargo.toml changed:\n{toml}"
    );
    let v: Vec<&str> = env!("CARGO_PKG_VERSION").split('.').collect();
    let toml = toml.replace(
        dep,
        &format!(
            "[build-dependencies.cuda-build]\nversion = \"{}.{}\"",
            v[0], v[1]
        ),
    );
    std::fs::write(
        &manifest,
        format!(
            "{toml}\n[package.metadata.cuda]\nprebuilt = {{ arch = \"{ARCHS}\", profiles = [\"dev\"] }}\n\n[workspace]\n"
        ),
    )
    .unwrap();
}

/// A fresh crate that depends on the packaged port by version.
fn consumer(reg: &Registry) -> PathBuf {
    let dir = reg.work("consumer");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"consumer\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [dependencies]\ncandle-kernels = \"=0.11.1\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("src/lib.rs"),
        "/// The affine kernels' PTX.\npub fn affine() -> &'static str {\n    candle_kernels::ptx::AFFINE\n}\n",
    )
    .unwrap();
    dir
}

/// Where the builds of this test look for toolkits and caches.
struct Places {
    /// An empty toolkit store.
    empty_store: PathBuf,
    /// An empty root for discovery's fixed paths (no /usr/local/cuda).
    empty_root: PathBuf,
    target: PathBuf,
    scratch: PathBuf,
}

/// `cargo build` of the consumer; `nvcc`: the real toolkit's root, or
/// none at all. A fresh, empty kernel cache each time, so a `cached` progress
/// event can only be a shipped image.
fn build(dir: &Path, p: &Places, nvcc: Option<&Path>, archs: Option<&str>, step: &str) -> Command {
    let mut cmd = plain_cargo();
    cmd.arg("build")
        .current_dir(dir)
        .env("PATH", path_without_nvcc())
        .env("CARGO_TARGET_DIR", &p.target)
        .env("CARGO_CUDA_HOME", &p.empty_store)
        .env("CARGO_CUDA_SYSROOT", &p.empty_root)
        .env("CUDA_BUILD_PYTHON", p.empty_root.join("no-python"))
        .env(
            "CUDA_BUILD_CACHE_DIR",
            p.scratch.join(format!("cache-{step}")),
        )
        .env(
            "CARGO_CUDA_PROGRESS",
            p.scratch.join(format!("progress-{step}.jsonl")),
        );
    if let Some(root) = nvcc {
        cmd.env("CUDA_HOME", root);
    }
    if let Some(a) = archs {
        cmd.env("CUDA_ARCHS", a);
    }
    cmd
}

/// PATH without any folder that holds an nvcc.
fn path_without_nvcc() -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::env::split_paths(&path).filter(|d| !d.join("nvcc").exists())).unwrap()
}

/// Runs a build; its success, stderr and the build script's own output.
fn run_build(cmd: Command, p: &Places) -> (bool, String, String) {
    let mut cmd = cmd;
    let out = cmd.output().unwrap();
    let (_, stderr) = text(&out);
    (out.status.success(), stderr, script_output(p))
}

/// The newest candle-kernels build script output (its `cargo:` lines).
fn script_output(p: &Places) -> String {
    let build = p.target.join("debug/build");
    let newest = std::fs::read_dir(&build)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("output"))
        .filter(|o| {
            o.parent()
                .and_then(|d| d.file_name())
                .is_some_and(|n| n.to_string_lossy().starts_with("candle-kernels-"))
                && o.is_file()
        })
        .max_by_key(|o| std::fs::metadata(o).and_then(|m| m.modified()).ok());
    newest
        .map(|o| std::fs::read_to_string(o).unwrap_or_default())
        .unwrap_or_default()
}

/// `event file` per progress line of a step.
fn events(p: &Places, step: &str) -> Vec<String> {
    fresh::progress_events(&p.scratch.join(format!("progress-{step}.jsonl")))
        .into_iter()
        .filter(|e| !e.starts_with("start "))
        .collect()
}

/// The images a build of the port or the consumer left in candle-kernels' OUT_DIR.
fn images(out_dir: &Path) -> Vec<(String, Vec<u8>)> {
    [
        "affine.ptx",
        "fill.ptx",
        "cuda-build/moe/mmq_quantize.o",
        "ptx.rs",
    ]
    .iter()
    .map(|n| {
        let bytes = std::fs::read(out_dir.join(n))
            .unwrap_or_else(|e| panic!("{}: {e}", out_dir.join(n).display()));
        (n.to_string(), bytes)
    })
    .collect()
}

/// Bytes as verify compares them: nvcc writes its process id into host
/// objects (`tmpxft_<pid>_<n>`), so every compile of an object differs there.
fn comparable(name: &str, bytes: &[u8]) -> Vec<u8> {
    let kind = if name.ends_with(".o") {
        "staticlib"
    } else {
        "ptx"
    };
    cuda_build::compile::prebuilt::stored::comparable(kind, bytes)
}

/// Replaces `what` in a file, returning the original text.
fn edit(path: &Path, f: impl Fn(&str) -> String) -> String {
    let before = std::fs::read_to_string(path).unwrap();
    std::fs::write(path, f(&before)).unwrap();
    before
}

#[test]
fn a_prebuilt_candle_port_builds_without_nvcc_and_names_every_difference() {
    let Some(cuda) = workspace_tests::cu13_root() else {
        return;
    };
    let reg = registry();
    let scratch = tempfile::tempdir().unwrap();
    let p = Places {
        empty_store: scratch.path().join("empty-store"),
        empty_root: scratch.path().join("empty-root"),
        target: reg.root.join("target-prebuilt"),
        scratch: scratch.path().to_path_buf(),
    };
    std::fs::create_dir_all(&p.empty_store).unwrap();
    std::fs::create_dir_all(&p.empty_root).unwrap();

    // The port, prebuilt with the real nvcc and packaged.
    let published = candle::published(scratch.path(), "");
    let crate_dir = reg.work("port").join("candle-kernels");
    let _ = std::fs::remove_dir_all(&crate_dir);
    port(&published, &crate_dir);
    let out = cargo_cuda()
        .arg("prebuild")
        .current_dir(&crate_dir)
        .env("CUDA_HOME", &cuda)
        .env("CARGO", real_cargo())
        .env(
            "CUDA_BUILD_CACHE_DIR",
            scratch.path().join("prebuild-cache"),
        )
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(
        out.status.success(),
        "cargo cuda prebuild:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("Prebuilt"), "{stdout}");
    assert!(!stderr.contains("would leave out"), "{stderr}");
    let manifest = std::fs::read_to_string(crate_dir.join("cuda-prebuilt/manifest.jsonl")).unwrap();
    for want in [
        "\"schema\":\"cuda-build-prebuilt\"",
        "\"source\":\"src/affine.cu\"",
        "\"targets\":[\"compute_80\"]",
        // The port is cudaforge's (`Build::like_cudaforge()`): 90 is sm_90a,
        // and a library gets SASS only.
        "\"targets\":[\"compute_90a\"]",
        "\"source\":\"src/mmq_gguf/mmq_quantize.cu\"",
        "\"targets\":[\"sm_80\",\"sm_90a\"]",
        "\"nvcc\":\"13.0.88\"",
        "\"src/mmq_gguf/mmq_gguf.cuh\"",
    ] {
        assert!(
            manifest.contains(want),
            "no {want} in the manifest:\n{manifest}"
        );
    }
    let out = plain_cargo()
        .args(["package", "--no-verify", "--allow-dirty"])
        .current_dir(&crate_dir)
        .env("CARGO_TARGET_DIR", crate_dir.join("target"))
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo package:\n{}", text(&out).1);
    let krate = crate_dir.join("target/package/candle-kernels-0.11.1.crate");
    let size = std::fs::metadata(&krate).unwrap().len();
    assert!(
        size < 10 << 20,
        "the .crate is {size} bytes, over crates.io's 10 MiB"
    );
    reg.add_crate(&krate);
    let shipped = reg.vendor().join("candle-kernels-0.11.1");
    assert!(shipped.join("cuda-prebuilt/manifest.jsonl").is_file());

    // No nvcc anywhere: the consumer builds from the shipped images, with
    // the arch set they were built for (no GPU, no CUDA_ARCHS here).
    let dir = consumer(reg);
    let (ok, stderr, script) = run_build(build(&dir, &p, None, None, "none"), &p);
    assert!(ok, "build without nvcc:\n{stderr}\n{script}");
    assert!(
        script.contains("cuda-build: build `ptx` used 2 prebuilt kernel images from")
            && script.contains("cuda-build: build `moe` used 1 prebuilt kernel image from")
            && script.contains("(no nvcc here)"),
        "{script}"
    );
    assert!(
        events(&p, "none").iter().all(|e| e.starts_with("cached ")),
        "{:?}",
        events(&p, "none")
    );
    let consumer_out = fresh::out_dir(build(&dir, &p, None, None, "none-again"), "candle-kernels");
    let from_package = images(&consumer_out);
    // inspect says where a shipped image came from.
    let out = cargo_cuda()
        .args(["inspect", "--gpu", "sm_90"])
        .arg(consumer_out.join("affine.ptx"))
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(
        stdout.contains("prebuilt: `src/affine.cu` (build `ptx`, compute_90a), nvcc 13.0.88")
            && stdout.contains("cuda-prebuilt/manifest.jsonl"),
        "{stdout}\n{stderr}"
    );

    // `require` with nvcc at hand: nothing compiles, the build succeeds.
    let mut cmd = build(&dir, &p, Some(&cuda), None, "require");
    cmd.env("CUDA_BUILD_PREBUILT", "require");
    let (ok, stderr, _) = run_build(cmd, &p);
    assert!(ok, "{stderr}");
    assert!(
        events(&p, "require")
            .iter()
            .all(|e| e.starts_with("cached ")),
        "{:?}",
        events(&p, "require")
    );

    // A local nvcc build of the port (`never`: everything compiles, though
    // the port's folder holds the images) gives the same bytes, the
    // generated module included.
    let out_local = fresh::out_dir(
        {
            let mut c = plain_cargo();
            c.arg("build")
                .current_dir(&crate_dir)
                .env("CUDA_HOME", &cuda)
                .env("CUDA_ARCHS", ARCHS)
                .env("CUDA_BUILD_PREBUILT", "never")
                .env("CUDA_BUILD_NO_CACHE", "1")
                .env(
                    "CARGO_CUDA_PROGRESS",
                    p.scratch.join("progress-never.jsonl"),
                )
                .env("CARGO_TARGET_DIR", crate_dir.join("target"));
            c
        },
        "candle-kernels",
    );
    let never = events(&p, "never");
    assert!(
        never.len() == KEPT.len() && never.iter().all(|e| e.starts_with("done ")),
        "{never:?}"
    );
    let local = images(&out_local);
    for ((name, a), (_, b)) in from_package.iter().zip(&local) {
        assert!(
            comparable(name, a) == comparable(name, b),
            "{name}: the shipped image differs from a local nvcc build"
        );
    }

    // An edited .cu: with nvcc exactly that one compiles, the others stay
    // prebuilt; without nvcc the error names it.
    let affine = shipped.join("src/affine.cu");
    let original = edit(&affine, |t| {
        format!(
            "{t}\nextern \"C\" __global__ void prebuilt_test_edit(float *x) {{ x[0] = 1.0f; }}\n"
        )
    });
    let (ok, stderr, _) = run_build(build(&dir, &p, None, None, "edit-none"), &p);
    assert!(!ok, "an edited source built without nvcc");
    assert!(
        stderr.contains("error[prebuilt-mismatch]")
            && stderr.contains("`src/affine.cu` differs from the file the shipped image")
            && stderr.contains("no CUDA toolkit (nvcc) was found"),
        "{stderr}"
    );
    // `require` refuses to compile it even with nvcc at hand.
    let mut cmd = build(&dir, &p, Some(&cuda), None, "edit-require");
    cmd.env("CUDA_BUILD_PREBUILT", "require");
    let (ok, stderr, _) = run_build(cmd, &p);
    assert!(!ok, "an edited source built under `require`");
    assert!(
        stderr.contains("the prebuilt-image policy is `require` (from CUDA_BUILD_PREBUILT), but `src/affine.cu` would be compiled"),
        "{stderr}"
    );
    let (ok, stderr, script) = run_build(build(&dir, &p, Some(&cuda), None, "edit-nvcc"), &p);
    assert!(ok, "{stderr}");
    let mut ev = events(&p, "edit-nvcc");
    ev.sort();
    assert_eq!(
        ev,
        [
            "cached src/fill.cu",
            "cached src/mmq_gguf/mmq_quantize.cu",
            "done src/affine.cu"
        ],
        "{script}"
    );
    std::fs::write(&affine, original).unwrap();

    // A header only the library's source includes.
    let header = shipped.join("src/mmq_gguf/mmq_gguf.cuh");
    let original = edit(&header, |t| format!("{t}\n// edited\n"));
    let (ok, stderr, _) = run_build(build(&dir, &p, None, None, "header-none"), &p);
    assert!(!ok);
    assert!(
        stderr.contains("`src/mmq_gguf/mmq_gguf.cuh` differs from the file the shipped image")
            && stderr.contains("src/mmq_gguf/mmq_quantize.cu"),
        "{stderr}"
    );
    let (ok, stderr, _) = run_build(build(&dir, &p, Some(&cuda), None, "header-nvcc"), &p);
    assert!(ok, "{stderr}");
    let mut ev = events(&p, "header-nvcc");
    ev.sort();
    assert_eq!(
        ev,
        [
            "cached src/affine.cu",
            "cached src/fill.cu",
            "done src/mmq_gguf/mmq_quantize.cu"
        ]
    );
    std::fs::write(&header, original).unwrap();

    // An arch that is not shipped.
    let (ok, stderr, _) = run_build(build(&dir, &p, None, Some("75"), "sm75-none"), &p);
    assert!(!ok);
    assert!(
        stderr.contains("this build wants [compute_75]")
            && stderr.contains("set CUDA_ARCHS to shipped archs (80;90a)"),
        "{stderr}"
    );
    let (ok, stderr, _) = run_build(build(&dir, &p, Some(&cuda), Some("75"), "sm75-nvcc"), &p);
    assert!(ok, "{stderr}");
    assert!(
        events(&p, "sm75-nvcc")
            .iter()
            .all(|e| e.starts_with("done ")),
        "{:?}",
        events(&p, "sm75-nvcc")
    );

    // Verify holds with the real nvcc 13.0, in the package as downloaded.
    // A copy of the package as downloaded, in no workspace (as under
    // ~/.cargo/registry/src; the local registry lies inside this one), with
    // the registry's source replacement so its dependencies resolve offline.
    std::fs::create_dir_all(p.scratch.join(".cargo")).unwrap();
    std::fs::copy(
        reg.root.join(".cargo/config.toml"),
        p.scratch.join(".cargo/config.toml"),
    )
    .unwrap();
    let verify = |what: &str| {
        let copy = p
            .scratch
            .join(format!("verify-{what}/candle-kernels-0.11.1"));
        workspace_tests::copy_dir(&shipped, &copy);
        cargo_cuda()
            .args(["prebuild", "--verify"])
            .current_dir(&copy)
            .env("CUDA_HOME", &cuda)
            .env("CARGO", real_cargo())
            .env(
                "CARGO_TARGET_DIR",
                p.scratch.join(format!("verify-{what}/target")),
            )
            .output()
            .unwrap()
    };
    let out = verify("clean");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "verify:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("Verified") && stdout.contains("all 5 shipped image(s)"),
        "{stdout}"
    );

    // One flipped byte of a shipped image: refused without nvcc, compiled
    // with it (and never cached), and reported by verify.
    let r = manifest_line(&shipped, "src/fill.cu", "compute_90a");
    let image = shipped
        .join("cuda-prebuilt")
        .join(r["file"].as_str().unwrap());
    let mut bytes = std::fs::read(&image).unwrap();
    let original = bytes.clone();
    let at = bytes.len() - 5;
    bytes[at] ^= 0x40;
    std::fs::write(&image, &bytes).unwrap();
    let (ok, stderr, _) = run_build(build(&dir, &p, None, None, "tampered-none"), &p);
    assert!(!ok);
    assert!(
        stderr.contains("error[prebuilt-image-refused]")
            && stderr.contains(r["file"].as_str().unwrap()),
        "{stderr}"
    );
    let (ok, stderr, script) = run_build(build(&dir, &p, Some(&cuda), None, "tampered-nvcc"), &p);
    assert!(ok, "{stderr}");
    assert!(
        script.contains("it was refused; `src/fill.cu` is compiled instead"),
        "{script}"
    );
    let out = verify("tampered");
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(r["file"].as_str().unwrap())
            && stderr.contains("error[prebuilt-verify-failed]"),
        "{stdout}\n{stderr}"
    );
    std::fs::write(&image, original).unwrap();
}

/// The manifest line of `source`'s image for `targets` (one target).
fn manifest_line(package: &Path, source: &str, target: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(package.join("cuda-prebuilt/manifest.jsonl")).unwrap();
    text.lines()
        .skip(1)
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["source"] == source && v["targets"] == serde_json::json!([target]))
        .unwrap_or_else(|| panic!("no {target} record for {source}:\n{text}"))
}
