//! `cargo cuda inspect`: real nvcc output through the CLI, targets from
//! flags and from `deploy`, JSON shape, exit codes (runs, will not run,
//! damaged input, no images), a 10,000-file directory.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{cargo_cuda, json, text};

/// nvcc 13.0 output for two kernels, in `dir`: `k.fatbin` (sm_80, sm_86,
/// sm_90a SASS + compute_90 PTX) and `k.ptx` (compute_80).
fn nvcc_outputs(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let nvcc = workspace_tests::nvcc13()?;
    let cu = dir.join("k.cu");
    std::fs::write(
        &cu,
        "extern \"C\" __global__ void vectorAdd(const float* a, const float* b, float* c, int n) {\n\
         int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }\n",
    )
    .unwrap();
    let run = |args: &[&str], out: &Path| {
        let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        all.extend([
            cu.display().to_string(),
            "-o".into(),
            out.display().to_string(),
        ]);
        let r = cuda_toolchain::process::run(&nvcc, &all, Duration::from_secs(300)).unwrap();
        assert!(r.status.success(), "{}", r.stderr);
    };
    let fat = dir.join("k.fatbin");
    run(
        &[
            "-fatbin",
            "-gencode=arch=compute_80,code=sm_80",
            "-gencode=arch=compute_86,code=sm_86",
            "-gencode=arch=compute_90a,code=sm_90a",
            "-gencode=arch=compute_90,code=compute_90",
        ],
        &fat,
    );
    let ptx = dir.join("k.ptx");
    run(&["-ptx", "-arch=compute_80"], &ptx);
    Some((fat, ptx))
}

#[test]
fn verdicts_exit_codes_and_json_shape() {
    let dir = tempfile::tempdir().unwrap();
    let Some((fat, _)) = nvcc_outputs(dir.path()) else {
        return;
    };

    let out = cargo_cuda()
        .args(["inspect", "--gpu", "RTX 4090"])
        .arg(&fat)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("sm_80, sm_86, sm_90a, compute_90 (PTX ISA 9.0, compressed, zstd)"),
        "{stdout}"
    );
    assert!(stdout.contains("runs natively via sm_86"), "{stdout}");

    let out = cargo_cuda()
        .args([
            "inspect",
            "--json",
            "--gpu",
            "sm_89,sm_100,sm_75",
            "--driver",
            "535.104.05",
        ])
        .arg(&fat)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    assert_eq!(v["schema"], 1);
    assert_eq!(v["targets_from"], "flag");
    assert_eq!(v["targets"][0]["driver_cuda"], "12.2");
    let img = &v["files"][0]["images"][0];
    assert_eq!(img["format"], "fatbin");
    assert_eq!(img["entries"][3]["code"], "ptx");
    assert_eq!(img["entries"][3]["ptx_isa"], "9.0");
    assert_eq!(img["entries"][0]["toolkit"], "13.0.88");
    assert_eq!(img["kernels"], serde_json::json!(["vectorAdd"]));
    let codes: Vec<&str> = v["verdict"]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["code"].as_str().unwrap_or("none"))
        .collect();
    // CUDA 13 SASS on a CUDA 12.2 driver; PTX 9.0 beyond its JIT; no 7.x code.
    assert_eq!(
        codes,
        [
            "driver-too-old",
            "ptx-too-new-for-driver",
            "no-kernel-image-for-device"
        ]
    );
    assert_eq!(v["verdict"]["outcome"], "will-not-run");

    // The text form names each failure with its code and fix.
    let out = cargo_cuda()
        .args(["inspect", "--gpu", "sm_75"])
        .arg(&fat)
        .output()
        .unwrap();
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout.contains("error[no-kernel-image-for-device]"),
        "{stdout}"
    );
    assert!(stdout.contains("add 75 to CUDA_ARCHS"), "{stdout}");
}

/// `cargo cuda inspect PATH [--gpu ...] [--json]`: (exit code, stdout, stderr).
fn inspect(path: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let out = cargo_cuda()
        .arg("inspect")
        .arg(path)
        .args(extra)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    (out.status.code(), stdout, stderr)
}

/// The exit code tells the four answers apart, with and without targets:
/// 0 runs, 1 will not run, 2 damaged (a static library cut short anywhere
/// says so, never "0 kernel image(s)"), 3 no kernel image at all.
#[test]
fn exit_codes_tell_runs_will_not_run_damaged_and_no_images_apart() {
    let Some(nvcc) = workspace_tests::nvcc13() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cu = dir.path().join("k.cu");
    std::fs::write(
        &cu,
        "extern \"C\" __global__ void k(float* p) { p[0] = 1.0f; }\n",
    )
    .unwrap();
    let lib = dir.path().join("libk.a");
    let args = [
        "-lib",
        "-gencode=arch=compute_80,code=sm_80",
        "-gencode=arch=compute_90,code=sm_90",
        cu.to_str().unwrap(),
        "-o",
        lib.to_str().unwrap(),
    ];
    let r = cuda_toolchain::process::run(&nvcc, args, Duration::from_secs(300)).unwrap();
    assert!(r.status.success(), "{}", r.stderr);

    let (code, stdout, stderr) = inspect(&lib, &["--gpu", "sm_86,sm_90"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let (code, stdout, _) = inspect(&lib, &["--gpu", "sm_75"]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains("error[no-kernel-image-for-device]"),
        "{stdout}"
    );

    // Cut in the archive's tables, in the object's header, in its fatbin, and at the end.
    let bytes = std::fs::read(&lib).unwrap();
    let fatbin = bytes
        .windows(4)
        .position(|w| w == cuda_toolchain::image::FATBIN_MAGIC.to_le_bytes())
        .unwrap();
    for n in [100, 1000, fatbin + 100, bytes.len() - 3] {
        let cut = dir.path().join(format!("cut{n}.a"));
        std::fs::write(&cut, &bytes[..n]).unwrap();
        for extra in [&["--gpu", "sm_90"][..], &[], &["--json"]] {
            let (code, stdout, stderr) = inspect(&cut, extra);
            assert_eq!(code, Some(2), "cut at {n} {extra:?}: {stdout}{stderr}");
            assert!(
                stderr.contains("error[invalid-kernel-image]")
                    && stderr.contains("is damaged")
                    && stderr.contains("cut short"),
                "cut at {n}: {stderr}"
            );
        }
    }

    // No image: a text file, an empty archive.
    let txt = dir.path().join("notes.txt");
    std::fs::write(&txt, "no kernels here\n").unwrap();
    let empty = dir.path().join("empty.a");
    std::fs::write(&empty, "!<arch>\n").unwrap();
    for path in [&txt, &empty] {
        for extra in [&["--gpu", "sm_90"][..], &[]] {
            let (code, stdout, stderr) = inspect(path, extra);
            assert_eq!(code, Some(3), "{path:?} {extra:?}: {stdout}{stderr}");
            assert!(stdout.contains("no kernel image"), "{stdout}");
            assert!(!stdout.contains("error["), "nothing to judge: {stdout}");
        }
    }
    let (code, _, _) = inspect(&txt, &["--json"]);
    assert_eq!(code, Some(3));

    // `--help` documents the codes.
    let (_, help, _) = inspect(Path::new("--help"), &[]);
    for c in [
        "0 every target runs it",
        "1 some target cannot run it",
        "2 unusable input",
        "3 no kernel image",
    ] {
        assert!(help.replace('\n', " ").contains(c), "{c}: {help}");
    }
}

#[test]
fn targets_from_deploy_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let Some((_, ptx)) = nvcc_outputs(dir.path()) else {
        return;
    };
    let manifest = dir.path().join("Cargo.toml");
    std::fs::write(
        &manifest,
        "[package]\nname = \"p\"\nversion = \"0.1.0\"\n[package.metadata.cuda]\ndeploy = [\"A100@580.65.06\", { gpu = \"sm_86\", driver = \"535.104.05\" }]\n",
    )
    .unwrap();
    let out = cargo_cuda()
        .args(["inspect", "--json", "--manifest-path"])
        .arg(&manifest)
        .arg(&ptx)
        .output()
        .unwrap();
    let v = json(&out);
    assert_eq!(v["targets_from"], "deploy");
    assert_eq!(v["verdict"]["targets"][0]["outcome"], "jit");
    assert_eq!(v["verdict"]["targets"][1]["code"], "ptx-too-new-for-driver");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.fatbin");
    let out = cargo_cuda()
        .arg("inspect")
        .arg(&missing)
        .args(["--gpu", "sm_80"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("error[invalid-argument]") && stderr.contains("nope.fatbin"),
        "{stderr}"
    );

    let out = cargo_cuda()
        .args(["inspect", ".", "--gpu", "GTX 9999 Ultra"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("--gpu `GTX 9999 Ultra`"), "{stderr}");

    let out = cargo_cuda()
        .args(["inspect", ".", "--gpu", "sm_80", "--driver", "new"])
        .output()
        .unwrap();
    assert!(text(&out).1.contains("--driver `new`"));

    // A .fatbin that is not one.
    let bad = dir.path().join("bad.fatbin");
    std::fs::write(
        &bad,
        b"\x50\xed\x55\xba\x01\x00\x10\x00\xff\xff\x00\x00\x00\x00\x00\x00",
    )
    .unwrap();
    let out = cargo_cuda()
        .arg("inspect")
        .arg(&bad)
        .args(["--gpu", "sm_80"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("error[invalid-kernel-image]") && stderr.contains("truncated"),
        "{stderr}"
    );
}

/// 10,000 files, a symlink loop, and one real PTX deep inside: every file is
/// sniffed once, the loop is not followed, the PTX is judged.
#[test]
fn directory_with_ten_thousand_files() {
    let dir = tempfile::tempdir().unwrap();
    let Some((_, ptx)) = nvcc_outputs(dir.path()) else {
        return;
    };
    let tree = dir.path().join("tree");
    for d in 0..100 {
        let sub = tree.join(format!("d{d}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..100 {
            std::fs::write(sub.join(format!("f{f}.o")), b"not an object file").unwrap();
        }
    }
    std::os::unix::fs::symlink(&tree, tree.join("d7/loop")).unwrap();
    std::fs::copy(&ptx, tree.join("d42/kernels.ptx")).unwrap();
    let out = cargo_cuda()
        .args([
            "inspect",
            "--json",
            "--gpu",
            "sm_90",
            "--driver",
            "580.65.06",
        ])
        .arg(&tree)
        .output()
        .unwrap();
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["skipped"]["files"], 10_000);
    assert_eq!(v["skipped"]["symlinks"], 1);
    assert_eq!(v["files"].as_array().unwrap().len(), 1);
    assert_eq!(v["verdict"]["outcome"], "jit");
}
