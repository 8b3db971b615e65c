//! Integration tests: `cuda_toolchain::image` on real nvcc 13.0 output (fatbins,
//! compressed fatbins, cubins, host objects, PTX checked by ptxas 11.8/12.9),
//! on this test binary's own embedded kernels, and on corrupt, truncated and
//! very large inputs. Verdicts are checked against the facts tables.

use cuda_toolchain::image::{
    self, check_image_on, Code, Compression, ImageFormat, Outcome, Target,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

const KERNELS: &str = r#"
extern "C" __global__ void vectorAdd(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i];
}
extern "C" __global__ void scale(float* a, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= s;
}
"#;

struct Nvcc {
    nvcc: PathBuf,
    dir: tempfile::TempDir,
}

impl Nvcc {
    fn new() -> Option<Nvcc> {
        let nvcc = workspace_tests::nvcc13()?;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("k.cu"), KERNELS).unwrap();
        Some(Nvcc { nvcc, dir })
    }

    /// Runs nvcc on k.cu with `args`, writing `out`; returns its bytes.
    fn run(&self, args: &[&str], out: &str) -> Vec<u8> {
        let o = self.dir.path().join(out);
        let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        all.push(self.dir.path().join("k.cu").display().to_string());
        all.push("-o".into());
        all.push(o.display().to_string());
        let r = cuda_toolchain::process::run(&self.nvcc, &all, Duration::from_secs(300)).unwrap();
        assert!(r.status.success(), "nvcc {all:?}: {}", r.stderr);
        std::fs::read(&o).unwrap()
    }

    fn fatbin(&self, compress: &str) -> Vec<u8> {
        self.run(
            &[
                "-fatbin",
                "-gencode=arch=compute_80,code=sm_80",
                "-gencode=arch=compute_86,code=sm_86",
                "-gencode=arch=compute_90a,code=sm_90a",
                "-gencode=arch=compute_90,code=compute_90",
                &format!("--compress-mode={compress}"),
            ],
            &format!("k_{compress}.fatbin"),
        )
    }
}

fn gpu(s: &str) -> Target {
    let t = image::deploy::parse_gpu_list(s, "--gpu").unwrap();
    t.into_iter().next().unwrap()
}

#[test]
fn fatbin_with_several_sass_and_ptx() {
    let Some(nv) = Nvcc::new() else { return };
    let bytes = nv.fatbin("none");
    let scan = image::scan(&bytes);
    assert!(scan.problems.is_empty(), "{:?}", scan.problems);
    assert_eq!(scan.images.len(), 1);
    let img = &scan.images[0];
    assert_eq!(img.format, ImageFormat::Fatbin);
    assert_eq!((img.offset, img.size), (0, bytes.len() as u64));
    assert_eq!(img.targets_display(), "sm_80, sm_86, sm_90a, compute_90");
    assert!(img
        .entries
        .iter()
        .all(|e| e.compression == Compression::None));
    assert_eq!(img.entries[3].ptx_isa, Some((9, 0)));
    assert_eq!(
        img.entries[0].toolkit.as_ref().unwrap().to_string(),
        "13.0.88"
    );
    let mut k = img.kernels.clone();
    k.sort();
    assert_eq!(k, ["scale", "vectorAdd"]);
    assert!(img.kernels_complete);

    // Verdicts against the facts tables.
    let on = |t: &str| image::verdict::judge(img, &gpu(t));
    let v = on("sm_89");
    assert_eq!(
        (v.outcome, v.via.as_deref()),
        (Outcome::Native, Some("sm_86"))
    );
    assert_eq!(on("sm_90").via.as_deref(), Some("sm_90a"));
    // 10.0 cannot run sm_90a; the plain compute_90 PTX is JIT-compiled.
    let v = on("sm_100");
    assert_eq!(
        (v.outcome, v.via.as_deref()),
        (Outcome::Jit, Some("compute_90"))
    );
    let v = on("sm_75");
    assert_eq!(v.code, Some("no-kernel-image-for-device"));
    // PTX 9.0 (CUDA 13.0) on driver 535 (CUDA 12.2, ISA 8.2) does not JIT.
    let old = gpu("sm_120").with_driver(Some("535.104.05"), None);
    let v = image::verdict::judge(img, &old);
    assert_eq!(v.code, Some("ptx-too-new-for-driver"), "{v:?}");
    // ... and its SASS from CUDA 13 does not run on that driver either.
    let v = image::verdict::judge(img, &gpu("sm_86").with_driver(Some("535.104.05"), None));
    assert_eq!(v.code, Some("driver-too-old"), "{v:?}");
    let v = image::verdict::judge(img, &gpu("sm_86").with_driver(Some("580.65.06"), None));
    assert_eq!(v.outcome, Outcome::Native);
}

#[test]
fn compressed_fatbins_are_read_and_judged() {
    let Some(nv) = Nvcc::new() else { return };
    let size = nv.fatbin("size");
    let img = &image::scan(&size).images[0];
    assert_eq!(img.entries.len(), 4);
    assert!(img
        .entries
        .iter()
        .all(|e| e.compression == Compression::Zstd));
    assert_eq!(img.entries[3].ptx_isa, Some((9, 0)));
    // zstd entries are decompressed (feature `decompress`) for names and the
    // toolkit that built the SASS.
    let mut k = img.kernels.clone();
    k.sort();
    assert_eq!(k, ["scale", "vectorAdd"]);
    assert!(img.kernels_complete);
    assert_eq!(
        img.entries[1].toolkit.as_ref().unwrap().to_string(),
        "13.0.88"
    );
    // CUDA 13.0 SASS does not run on a 535 driver.
    let v = image::verdict::judge(img, &gpu("sm_89").with_driver(Some("535.104.05"), None));
    assert_eq!(v.code, Some("driver-too-old"), "{v:?}");
    assert_eq!(
        image::verdict::judge(img, &gpu("sm_89")).via.as_deref(),
        Some("sm_86")
    );

    // `speed` compresses the PTX with LZ4, which is not decompressed here:
    // its names are unknown, the SASS names are read.
    let speed = nv.fatbin("speed");
    let img = &image::scan(&speed).images[0];
    assert_eq!(img.entries[3].compression, Compression::Lz4);
    assert_eq!(img.entries[3].kernels, None);
    assert_eq!(img.entries[0].compression, Compression::None);
    assert_eq!(img.kernels.len(), 2);
    assert!(!img.kernels_complete);
    // CUDA 13's default compresses only the PTX (zstd).
    let default = nv.fatbin("default");
    let img = &image::scan(&default).images[0];
    assert_eq!(img.entries[3].compression, Compression::Zstd);
    assert_eq!(img.entries[3].kernels.as_ref().map(Vec::len), Some(2));
    assert!(img.kernels_complete);
}

#[test]
fn cubins_sass_rules_and_family() {
    let Some(nv) = Nvcc::new() else { return };
    let c89 = nv.run(&["-cubin", "-arch=sm_89"], "k89.cubin");
    let scan = image::scan(&c89);
    assert_eq!(scan.images.len(), 1);
    let img = &scan.images[0];
    assert_eq!(
        (img.format, img.size),
        (ImageFormat::Cubin, c89.len() as u64)
    );
    assert_eq!(img.entries[0].target, "sm_89");
    assert_eq!(img.entries[0].code, Code::Sass);
    // sm_89 SASS does not run on 8.6; it does on 8.9.
    let t86 = gpu("sm_86");
    assert_eq!(
        check_image_on(&c89, &[t86]).targets[0].code,
        Some("no-kernel-image-for-device")
    );
    assert!(check_image_on(&c89, &[gpu("RTX 4090")]).runs());

    let c90a = nv.run(&["-cubin", "-arch=sm_90a"], "k90a.cubin");
    assert_eq!(image::scan(&c90a).images[0].entries[0].target, "sm_90a");
    let v = check_image_on(&c90a, &[gpu("sm_100"), gpu("sm_90")]);
    assert_eq!(v.targets[0].code, Some("no-kernel-image-for-device"));
    assert!(
        v.targets[0].reason.contains("arch-specific"),
        "{:?}",
        v.targets[0]
    );
    assert_eq!(v.targets[1].outcome, Outcome::Native);

    let c100f = nv.run(&["-cubin", "-arch=sm_100f"], "k100f.cubin");
    assert_eq!(image::scan(&c100f).images[0].entries[0].target, "sm_100f");
    let v = check_image_on(&c100f, &[gpu("sm_103"), gpu("sm_120")]);
    assert_eq!(v.targets[0].outcome, Outcome::Native);
    assert_eq!(v.targets[1].outcome, Outcome::WillNotRun);
}

#[test]
fn host_object_embeds_a_fatbin() {
    let Some(nv) = Nvcc::new() else { return };
    let obj = nv.run(
        &["-c", "-gencode=arch=compute_80,code=[sm_80,compute_80]"],
        "k.o",
    );
    let scan = image::scan(&obj);
    let fat: Vec<_> = scan
        .images
        .iter()
        .filter(|i| i.format == ImageFormat::Fatbin)
        .collect();
    assert_eq!(fat.len(), 1, "{:?}", scan.images);
    assert_eq!(fat[0].targets_display(), "sm_80, compute_80");
    let section = image::elf_section(&obj, ".nv_fatbin").unwrap();
    assert_eq!(
        fat[0].size as usize,
        section.len().min(fat[0].size as usize)
    );
}

/// PTX of other ISA versions: nvcc 13's PTX relabelled, and the real
/// ptxas 11.8 / 12.9 as judges of which ISA each release accepts, the
/// same ceiling the facts give the driver's JIT.
#[test]
fn ptx_isa_versions_against_real_ptxas_and_driver_facts() {
    let Some(nv) = Nvcc::new() else { return };
    let (Some(p11), Some(p12)) = (workspace_tests::ptxas11(), workspace_tests::ptxas12()) else {
        return;
    };
    let ptx = String::from_utf8(nv.run(&["-ptx", "-arch=compute_80"], "k.ptx")).unwrap();
    assert!(ptx.contains(".version 9.0"));
    let ptxas_ok = |ptxas: &Path, text: &str, name: &str| {
        let f = nv.dir.path().join(name);
        std::fs::write(&f, text).unwrap();
        let out = nv.dir.path().join(format!("{name}.cubin"));
        let args = [
            "-arch=sm_80".to_string(),
            f.display().to_string(),
            "-o".into(),
            out.display().to_string(),
        ];
        cuda_toolchain::process::run(ptxas, &args, Duration::from_secs(120))
            .unwrap()
            .status
            .success()
    };
    let v78 = ptx.replace(".version 9.0", ".version 7.8");
    let v88 = ptx.replace(".version 9.0", ".version 8.8");
    // The real assemblers: 11.8 takes ISA 7.8 only; 12.9 takes 8.8, not 9.0.
    assert!(ptxas_ok(&p11, &v78, "v78.ptx"));
    assert!(!ptxas_ok(&p11, &v88, "v88a.ptx"));
    assert!(ptxas_ok(&p12, &v88, "v88.ptx"));
    assert!(!ptxas_ok(&p12, &ptx, "v90.ptx"));

    let target = |driver: &str| gpu("sm_86").with_driver(Some(driver), None);
    for (text, isa, driver, runs) in [
        (&v78, (7, 8), "520.61.05", true), // CUDA 11.8 driver
        (&v88, (8, 8), "520.61.05", false),
        (&v88, (8, 8), "575.51.03", true), // CUDA 12.9 driver
        (&ptx, (9, 0), "575.51.03", false),
        (&ptx, (9, 0), "535.104.05", false), // CUDA 12.2 driver
        (&ptx, (9, 0), "580.65.06", true),
    ] {
        let img = &image::scan(text.as_bytes()).images[0];
        assert_eq!(img.entries[0].ptx_isa, Some(isa));
        let v = check_image_on(text.as_bytes(), &[target(driver)]);
        assert_eq!(
            v.runs(),
            runs,
            "ISA {isa:?} on {driver}: {:?}",
            v.targets[0]
        );
        if !runs {
            assert_eq!(v.targets[0].code, Some("ptx-too-new-for-driver"));
        } else {
            assert_eq!(v.outcome, Outcome::Jit);
        }
    }
}

/// This test binary links the workspace's `cuda-kernels`, whose generated
/// module embeds fatbins and a cubin with `include_bytes!`: the scan of the
/// binary finds each of them, byte for byte.
#[test]
fn own_binary_embeds_the_workspace_kernels() {
    let exe = std::env::current_exe().unwrap();
    let bytes = image::map_file(&exe).unwrap();
    let scan = image::scan(&bytes);
    let embedded: [(&str, &[u8]); 3] = [
        ("vector_add", cuda_kernels::kernels::vector_add::IMAGE),
        ("sgemm", cuda_kernels::kernels::sgemm::IMAGE),
        ("mismatch", cuda_kernels::mismatch::vector_add::IMAGE),
    ];
    for (name, want) in embedded {
        if want.is_empty() {
            // Built without a toolkit (docs.rs mode): nothing to find.
            assert!(!workspace_tests::nvcc_promised(), "{name} is empty");
            continue;
        }
        let found = scan.images.iter().find(|i| {
            let r = i.offset as usize..(i.offset + i.size) as usize;
            bytes.get(r) == Some(want) || bytes[i.offset as usize..].starts_with(want)
        });
        let found = found.unwrap_or_else(|| panic!("{name} not found in {}", exe.display()));
        let direct = &image::scan(want).images[0];
        assert_eq!(found.entries, direct.entries, "{name}");
    }
}

#[test]
fn truncated_real_fatbins_never_panic() {
    let Some(nv) = Nvcc::new() else { return };
    let bytes = nv.fatbin("none");
    let t = [gpu("sm_86").with_driver(Some("535.104.05"), None)];
    // Every cut in the headers, then every 7th byte (each scan is linear).
    for n in (0..bytes.len()).filter(|&n| n < 256 || n % 7 == 0) {
        let cut = &bytes[..n];
        let scan = image::scan(cut);
        // A cut fatbin is a problem, never a fatbin image.
        assert!(
            scan.images.iter().all(|i| i.format != ImageFormat::Fatbin),
            "cut at {n}"
        );
        if n >= 16 {
            assert!(!scan.problems.is_empty(), "cut at {n}");
        }
        let _ = check_image_on(cut, &t);
    }
}

mod corrupt {
    use super::*;
    use proptest::prelude::*;

    fn real_fatbin() -> Option<Vec<u8>> {
        static F: std::sync::OnceLock<Option<Vec<u8>>> = std::sync::OnceLock::new();
        F.get_or_init(|| Nvcc::new().map(|nv| nv.fatbin("speed")))
            .clone()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn flipped_bytes_never_panic(flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..16), cut in any::<usize>()) {
            let Some(mut bytes) = real_fatbin() else { return Ok(()) };
            let n = bytes.len();
            for (at, b) in flips {
                bytes[at % n] = b;
            }
            bytes.truncate(cut % (n + 1));
            let t = [gpu("sm_90").with_driver(Some("535.104.05"), None)];
            let _ = check_image_on(&bytes, &t);
            let _ = image::read_fatbin(&bytes);
            let _ = image::read_cubin(&bytes);
        }

        #[test]
        fn random_bytes_with_magics_never_panic(mut bytes in prop::collection::vec(any::<u8>(), 0..4096), at in any::<usize>(), which in 0usize..3) {
            let magic: &[u8] = match which {
                0 => &image::FATBIN_MAGIC.to_le_bytes(),
                1 => b"\x7fELF\x02\x01\x01\x41",
                _ => b".version 9.0\n.target sm_90\n",
            };
            if bytes.len() > magic.len() {
                let at = at % (bytes.len() - magic.len());
                bytes[at..at + magic.len()].copy_from_slice(magic);
                if which == 1 && at + 0x14 <= bytes.len() {
                    bytes[at + 0x12] = 190;
                    bytes[at + 0x13] = 0;
                }
            }
            let _ = image::scan(&bytes);
        }
    }
}

/// A 2 GiB sparse file with a real fatbin near its end: found by a mapped
/// scan, without reading the file into memory.
#[test]
fn two_gib_sparse_file() {
    let Some(nv) = Nvcc::new() else { return };
    let fat = nv.fatbin("none");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.bin");
    let f = std::fs::File::create(&path).unwrap();
    let len: u64 = 2 << 30;
    f.set_len(len).unwrap();
    let at = len - (1 << 20);
    use std::os::unix::fs::FileExt;
    f.write_all_at(&fat, at).unwrap();
    drop(f);
    let scan = image::scan_file(&path).unwrap();
    assert_eq!(scan.images.len(), 1);
    assert_eq!(scan.images[0].offset, at);
    assert_eq!(scan.images[0].entries.len(), 4);
}

/// `[package.metadata.cuda] deploy` stops a build whose plan cannot run on a
/// declared target, before nvcc runs.
#[test]
fn build_fails_early_for_an_unreachable_deploy_target() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("Cargo.toml"),
        "[package]\nname = \"p\"\nversion = \"0.1.0\"\n[package.metadata.cuda]\ndeploy = [\"sm_75\", \"H100@580.65.06\"]\n",
    )
    .unwrap();
    std::fs::write(pkg.join("k.cu"), KERNELS).unwrap();
    use cuda_toolchain::env::{Env, Var};
    let env = Env::empty()
        .set(Var::CargoManifestDir, &pkg)
        .set(Var::CudaHome, &root);
    let out = dir.path().join("out");
    let mut b = cuda_build::Build::new();
    b.env(env)
        .file(pkg.join("k.cu"))
        .arch("80")
        .out_dir(&out)
        .no_cache()
        .emit_cargo(false);
    let e = b.try_compile().unwrap_err();
    assert_eq!(e.code, "no-kernel-image-for-device", "{e}");
    assert!(
        e.message.contains("sm_75") && e.message.contains("deploy"),
        "{e}"
    );
    let built = std::fs::read_dir(&out)
        .map(|d| {
            d.flatten()
                .any(|e| e.path().extension().is_some_and(|x| x == "fatbin"))
        })
        .unwrap_or(false);
    assert!(!built, "nothing is compiled before the check");
}
