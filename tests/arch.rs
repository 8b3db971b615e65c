//! Integration tests: the arch model, facts and plan against the real tools —
//! nvcc 13.0's arch lists and PTX `.version`, the `.version` gates of ptxas
//! 11.8, 12.9 and 13.0, the sm_101 → sm_110 rename, and real compiles with
//! the planned `-gencode` flags.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cuda_toolchain::arch::{Arch, ComputeCapability, Variant};
use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::plan::{self, ArchInputs, ArchSource, NvccArchSupport};
use cuda_toolchain::probe::GpuInfo;
use cuda_toolchain::toolkit::{FoundVia, Toolkit};
use cuda_toolchain::{compat, facts, process};

const T: Duration = Duration::from_secs(120);

const KERNEL: &str = r#"extern "C" __global__ void add(float *a, const float *b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] += b[i];
}
"#;

fn kernel_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), KERNEL).unwrap();
    dir
}

fn run(program: &Path, args: &[&str]) -> process::Output {
    process::run(program, args, T).unwrap_or_else(|e| panic!("{}: {e}", program.display()))
}

/// `release 12.9` from `ptxas --version` / `nvcc --version`.
fn release_of(tool: &Path) -> (u32, u32) {
    let out = run(tool, &["--version"]);
    let text = out.combined();
    let rel = text
        .split("release ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .unwrap_or_else(|| panic!("no `release X.Y` in {text}"));
    let (a, b) = rel.split_once('.').unwrap();
    (a.trim().parse().unwrap(), b.trim().parse().unwrap())
}

fn cu13_toolkit(nvcc: &Path) -> Toolkit {
    let root = nvcc.parent().unwrap().parent().unwrap().to_path_buf();
    Toolkit {
        root: root.clone(),
        nvcc: nvcc.to_path_buf(),
        version: Some(semver::Version::new(13, 0, 88)),
        found_via: FoundVia::Explicit,
        include_dirs: vec![root.join("include")],
        lib_dirs: vec![root.join("lib")],
        problems: vec![],
    }
}

fn gpu(index: u32, name: &str, major: u32, minor: u32) -> GpuInfo {
    GpuInfo {
        index,
        name: name.into(),
        compute_capability: ComputeCapability::new(major, minor),
        total_memory: None,
    }
}

#[test]
fn nvcc13_arch_lists_equal_the_facts_table() {
    let Some(nvcc) = workspace_tests::nvcc13() else {
        return;
    };
    assert_eq!(release_of(&nvcc), (13, 0));
    let ccs = |flag: &str| -> BTreeSet<ComputeCapability> {
        run(&nvcc, &[flag])
            .stdout
            .lines()
            .map(|l| {
                l.trim()
                    .parse::<Arch>()
                    .unwrap_or_else(|e| panic!("{flag}: {l}: {e}"))
            })
            .map(|a| {
                assert_eq!(a.variant, Variant::Plain, "{flag} lists {a}");
                a.cc
            })
            .collect()
    };
    let want: BTreeSet<_> = facts::archs_for_toolkit((13, 0)).into_iter().collect();
    assert_eq!(
        ccs("--list-gpu-code"),
        want,
        "nvcc 13.0 --list-gpu-code vs facts"
    );
    assert_eq!(
        ccs("--list-gpu-arch"),
        want,
        "nvcc 13.0 --list-gpu-arch vs facts"
    );

    // The query used by planning reads the same lists from nvcc itself.
    let support =
        NvccArchSupport::query(&nvcc, Some(&semver::Version::new(13, 0, 88)), &Env::empty());
    assert!(support.from_nvcc);
    assert_eq!(
        support.real.iter().map(|a| a.cc).collect::<BTreeSet<_>>(),
        want
    );
    assert_eq!(
        support,
        NvccArchSupport {
            from_nvcc: true,
            ..NvccArchSupport::from_facts((13, 0))
        }
    );
}

#[test]
fn nvcc13_accepts_exactly_the_variants_the_facts_table_lists() {
    // nvcc lists plain archs only; the `a`/`f` columns of the table are
    // checked by asking nvcc 13.0 (dry run) for every arch and variant.
    let Some(nvcc) = workspace_tests::nvcc13() else {
        return;
    };
    let dir = kernel_dir();
    let k = dir.path().join("k.cu");
    let mut checked = 0;
    for span in facts::ARCH_SPANS {
        for variant in [Variant::Plain, Variant::Specific, Variant::Family] {
            let arch = span.cc.arch().with_variant(variant);
            let flag = format!(
                "-gencode=arch={},code={}",
                arch.compute_name(),
                arch.sm_name()
            );
            let out = run(
                &nvcc,
                &[
                    "-dryrun",
                    "--fatbin",
                    "-o",
                    "/dev/null",
                    k.to_str().unwrap(),
                    &flag,
                ],
            );
            let expected = facts::toolkit_supports((13, 0), arch);
            assert_eq!(
                out.status.success(),
                expected,
                "nvcc 13.0 {flag}: {}",
                out.stderr.lines().next().unwrap_or("")
            );
            if !expected {
                assert!(
                    out.stderr.contains(&format!(
                        "nvcc fatal   : Unsupported gpu architecture '{}'",
                        arch.compute_name()
                    )),
                    "{}",
                    out.stderr
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, facts::ARCH_SPANS.len() * 3);
}

#[test]
fn nvcc13_emits_the_ptx_isa_of_the_facts_table() {
    let Some(nvcc) = workspace_tests::nvcc13() else {
        return;
    };
    let dir = kernel_dir();
    let ptx = dir.path().join("k.ptx");
    let out = run(
        &nvcc,
        &[
            "-ptx",
            "-arch=sm_90",
            "-o",
            ptx.to_str().unwrap(),
            dir.path().join("k.cu").to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", out.combined());
    let text = std::fs::read_to_string(&ptx).unwrap();
    let (a, b) = facts::ptx_isa_for_cuda((13, 0)).unwrap();
    assert!(
        text.lines()
            .any(|l| l.trim() == format!(".version {a}.{b}")),
        "{text}"
    );
    assert!(text.lines().any(|l| l.trim() == ".target sm_90"));
}

#[test]
fn mixed_toolkit_failure_matches_the_ptx_table() {
    // nvcc 13.0.88 with nvvm 13.5.37: cicc writes PTX 9.5, ptxas 13.0 accepts 9.0.
    let Some(root) = workspace_tests::mixed_root() else {
        return;
    };
    let dir = kernel_dir();
    let out = run(
        &root.join("bin/nvcc"),
        &[
            "--fatbin",
            "-arch=sm_90",
            "-o",
            dir.path().join("k.fatbin").to_str().unwrap(),
            dir.path().join("k.cu").to_str().unwrap(),
        ],
    );
    assert!(!out.status.success());
    let (x, y) = (
        facts::ptx_isa_for_cuda((13, 5)).unwrap(),
        facts::ptx_isa_for_cuda((13, 0)).unwrap(),
    );
    let want = format!(
        "Unsupported .version {}.{}; current version is '{}.{}'",
        x.0, x.1, y.0, y.1
    );
    assert!(
        out.stderr.contains(&want),
        "want `{want}` in:\n{}",
        out.stderr
    );
}

fn write_ptx(dir: &Path, name: &str, isa: (u32, u32), target: &str) -> PathBuf {
    let p = dir.join(name);
    let text = format!(".version {}.{}\n.target {target}\n.address_size 64\n\n.visible .entry k()\n{{\n\tret;\n}}\n", isa.0, isa.1);
    std::fs::write(&p, text).unwrap();
    p
}

/// ptxas of release `cuda` accepts its own ISA, rejects one above with the
/// real message, and the "current version" it names is the table's.
fn check_ptxas_gate(ptxas: &Path, cuda: (u32, u32)) {
    assert_eq!(release_of(ptxas), cuda, "{}", ptxas.display());
    let isa = facts::ptx_isa_for_cuda(cuda).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cubin = dir.path().join("o.cubin");
    let own = write_ptx(dir.path(), "own.ptx", isa, "sm_80");
    let out = run(
        ptxas,
        &[
            "-arch=sm_80",
            own.to_str().unwrap(),
            "-o",
            cubin.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "ptxas {cuda:?} rejects its own ISA {isa:?}: {}",
        out.stderr
    );
    let above = (isa.0, isa.1 + 1);
    let newer = write_ptx(dir.path(), "newer.ptx", above, "sm_80");
    let out = run(
        ptxas,
        &[
            "-arch=sm_80",
            newer.to_str().unwrap(),
            "-o",
            cubin.to_str().unwrap(),
        ],
    );
    assert!(!out.status.success());
    let want = format!(
        "Unsupported .version {}.{}; current version is '{}.{}'",
        above.0, above.1, isa.0, isa.1
    );
    assert!(
        out.stderr.contains(&want),
        "ptxas {cuda:?}: want `{want}` in:\n{}",
        out.stderr
    );
}

#[test]
fn ptxas_11_8_version_gate() {
    let Some(p) = workspace_tests::ptxas11() else {
        return;
    };
    check_ptxas_gate(&p, (11, 8));
}

#[test]
fn ptxas_12_9_version_gate() {
    let Some(p) = workspace_tests::ptxas12() else {
        return;
    };
    check_ptxas_gate(&p, (12, 9));
}

#[test]
fn ptxas_13_0_version_gate() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    check_ptxas_gate(&root.join("bin/ptxas"), (13, 0));
}

/// Whether ptxas of `cuda` assembles PTX for `sm`; agrees with the facts.
fn ptxas_accepts(ptxas: &Path, cuda: (u32, u32), cc: ComputeCapability) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let sm = cc.arch().sm_name();
    let p = write_ptx(
        dir.path(),
        "t.ptx",
        facts::ptx_isa_for_cuda(cuda).unwrap(),
        &sm,
    );
    let out = run(
        ptxas,
        &[
            &format!("-arch={sm}"),
            p.to_str().unwrap(),
            "-o",
            dir.path().join("o.cubin").to_str().unwrap(),
        ],
    );
    if !out.status.success() {
        assert!(
            out.stderr.contains(&format!(
                "Value '{sm}' is not defined for option 'gpu-name'"
            )),
            "{}",
            out.stderr
        );
    }
    out.status.success()
}

#[test]
fn sm_101_was_renamed_sm_110_between_12_9_and_13_0() {
    let (Some(p12), Some(root)) = (workspace_tests::ptxas12(), workspace_tests::cu13_root()) else {
        return;
    };
    let p13 = root.join("bin/ptxas");
    let (thor_old, thor_new) = (ComputeCapability::new(10, 1), ComputeCapability::new(11, 0));
    for (ptxas, cuda) in [(&p12, (12, 9)), (&p13, (13, 0))] {
        for cc in [thor_old, thor_new] {
            assert_eq!(
                ptxas_accepts(ptxas, cuda, cc),
                facts::toolkit_supports(cuda, cc.arch()),
                "ptxas {cuda:?} and sm_{}",
                cc.number()
            );
        }
    }
    // What the table says, spelled out: 12.9 has sm_101 only, 13.0 sm_110 only.
    assert!(
        facts::toolkit_supports((12, 9), thor_old.arch())
            && !facts::toolkit_supports((12, 9), thor_new.arch())
    );
    assert!(
        !facts::toolkit_supports((13, 0), thor_old.arch())
            && facts::toolkit_supports((13, 0), thor_new.arch())
    );
}

/// (kind, arch number) of each image in a fatbin: kind 1 = PTX, 2 = ELF (SASS).
///
/// The container starts with magic 0xBA55ED50, a u16 version, a u16 header
/// size and a u64 payload size; each entry has u16 kind, u16, u32 header
/// size, u64 payload size, then at offset 28 the u32 arch (90 for sm_90).
fn fatbin_images(bytes: &[u8]) -> Vec<(u16, u32)> {
    let u16_at = |o: usize| u16::from_le_bytes(bytes[o..o + 2].try_into().unwrap());
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap()) as usize;
    assert_eq!(u32_at(0), 0xBA55_ED50, "not a fatbin");
    let header = u16_at(6) as usize;
    let end = header + u64_at(8);
    let mut off = header;
    let mut out = Vec::new();
    while off < end {
        out.push((u16_at(off), u32_at(off + 28)));
        off += u32_at(off + 4) as usize + u64_at(off + 8);
    }
    out
}

/// Compiles k.cu with the plan's flags, checks nvcc's own image list
/// (`-dryrun`) and the fatbin it wrote against the plan.
fn compile_with(nvcc: &Path, p: &plan::ArchPlan) {
    let dir = kernel_dir();
    let k = dir.path().join("k.cu");
    let fatbin = dir.path().join("k.fatbin");
    let flags = p.gencode_flags();
    let mut args: Vec<&str> = vec![
        "--fatbin",
        "-o",
        fatbin.to_str().unwrap(),
        k.to_str().unwrap(),
    ];
    args.extend(flags.iter().map(String::as_str));
    let out = run(nvcc, &args);
    assert!(out.status.success(), "nvcc {args:?}:\n{}", out.combined());

    // The images nvcc says it packs: `--image3=kind=elf,sm=90a,…`.
    args.push("-dryrun");
    let dry = run(nvcc, &args).combined();
    let mut images: Vec<String> = dry
        .split("--image3=kind=")
        .skip(1)
        .map(|s| s.split(",file=").next().unwrap().replace(",sm=", " "))
        .collect();
    images.sort();
    assert_eq!(images, plan_images(p), "flags {flags:?}");

    let mut got = fatbin_images(&std::fs::read(&fatbin).unwrap());
    got.sort();
    let mut want: Vec<(u16, u32)> = p.sass.iter().map(|a| (2, a.cc.number())).collect();
    want.extend(p.ptx.iter().map(|a| (1, a.cc.number())));
    want.sort();
    assert_eq!(got, want, "fatbin images for {flags:?}");
}

#[test]
fn planned_flags_compile_with_real_nvcc13() {
    let Some(nvcc) = workspace_tests::nvcc13() else {
        return;
    };
    let tk = cu13_toolkit(&nvcc);
    let no_gpu = Vec::new;

    let env = Env::empty().set(Var::CudaArchs, "sm_80, 90a;9.0+PTX 100f");
    let p = plan::plan_for_toolkit(&env, &tk, &ArchInputs::default(), &no_gpu).unwrap();
    assert_eq!(p.source, ArchSource::CudaArchs);
    assert_eq!(
        p.targets_display(),
        ["sm_80", "sm_90", "sm_90a", "sm_100f", "compute_90"]
    );
    assert_eq!(
        p.gencode_flags(),
        [
            "-gencode=arch=compute_80,code=sm_80",
            "-gencode=arch=compute_90,code=[sm_90,compute_90]",
            "-gencode=arch=compute_90a,code=sm_90a",
            "-gencode=arch=compute_100f,code=sm_100f",
        ]
    );
    compile_with(&nvcc, &p);

    // Two GPUs of different generations, and one newer than nvcc 13.0.
    let detect = || {
        vec![
            gpu(0, "NVIDIA H200", 9, 0),
            gpu(1, "NVIDIA L4", 8, 9),
            gpu(2, "NVIDIA Future", 13, 0),
        ]
    };
    let p = plan::plan_for_toolkit(&Env::empty(), &tk, &ArchInputs::default(), &detect).unwrap();
    assert_eq!(p.source, ArchSource::Detected);
    assert_eq!(p.targets_display(), ["sm_89", "sm_90", "compute_121"]);
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("NVIDIA Future") && w.contains("JIT")),
        "{:?}",
        p.warnings
    );
    compile_with(&nvcc, &p);

    // all-major, expanded from nvcc's own list.
    let p = plan::plan_for_toolkit(
        &Env::empty().set(Var::CmakeCudaArchs, "all-major"),
        &tk,
        &ArchInputs::default(),
        &no_gpu,
    )
    .unwrap();
    assert_eq!(
        p.targets_display(),
        [
            "sm_75",
            "sm_80",
            "sm_90",
            "sm_100",
            "sm_110",
            "sm_120",
            "compute_120"
        ]
    );
    compile_with(&nvcc, &p);
}

/// The images nvcc's own `-arch=X` would pack, as `elf 90`/`ptx 120`.
fn nvcc_images(nvcc: &Path, arch_flag: &str) -> Vec<String> {
    let dir = kernel_dir();
    let dry = run(
        nvcc,
        &[
            "-dryrun",
            "--fatbin",
            "-o",
            "/dev/null",
            dir.path().join("k.cu").to_str().unwrap(),
            arch_flag,
        ],
    )
    .combined();
    let mut images: Vec<String> = dry
        .split("--image3=kind=")
        .skip(1)
        .map(|s| s.split(",file=").next().unwrap().replace(",sm=", " "))
        .collect();
    images.sort();
    images
}

fn plan_images(p: &plan::ArchPlan) -> Vec<String> {
    let mut want: Vec<String> = p.sass.iter().map(|a| format!("elf {a}")).collect();
    want.extend(p.ptx.iter().map(|a| format!("ptx {a}")));
    want.sort();
    want
}

#[test]
fn all_and_all_major_match_nvcc13s_own_expansion() {
    let Some(nvcc) = workspace_tests::nvcc13() else {
        return;
    };
    let tk = cu13_toolkit(&nvcc);
    for spelling in ["all", "all-major"] {
        let p = plan::plan_for_toolkit(
            &Env::empty().set(Var::CudaArchs, spelling),
            &tk,
            &ArchInputs::default(),
            &Vec::new,
        )
        .unwrap();
        assert_eq!(
            plan_images(&p),
            nvcc_images(&nvcc, &format!("-arch={spelling}")),
            "{spelling}"
        );
    }
    // And a plain list agrees with nvcc's -arch=sm_XX shorthand (SASS + PTX).
    let p = plan::plan_for_toolkit(
        &Env::empty().set(Var::CudaArchs, "90"),
        &tk,
        &ArchInputs::default(),
        &Vec::new,
    )
    .unwrap();
    assert_eq!(plan_images(&p), nvcc_images(&nvcc, "-arch=sm_90"));
}

#[test]
fn plan_errors_agree_with_real_nvcc13() {
    let Some(nvcc) = workspace_tests::nvcc13() else {
        return;
    };
    let tk = cu13_toolkit(&nvcc);
    let dir = kernel_dir();
    let k = dir.path().join("k.cu");
    let env = |v: &str| Env::empty().set(Var::CudaArchs, v);
    // Dropped by CUDA 13: the plan names 12.9; nvcc itself refuses it.
    let e = plan::plan_for_toolkit(&env("70"), &tk, &ArchInputs::default(), &Vec::new).unwrap_err();
    assert_eq!(e.code, "arch-dropped-by-nvcc");
    assert!(
        e.message
            .contains("CUDA 12.9 is the last toolkit that supports it"),
        "{e}"
    );
    let out = run(
        &nvcc,
        &[
            "-dryrun",
            "--fatbin",
            "-o",
            "/dev/null",
            k.to_str().unwrap(),
            "-gencode=arch=compute_70,code=sm_70",
        ],
    );
    assert!(
        out.stderr
            .contains("nvcc fatal   : Unsupported gpu architecture 'compute_70'"),
        "{}",
        out.stderr
    );
    // sm_101 is gone (renamed), sm_130 is not there yet.
    let e =
        plan::plan_for_toolkit(&env("sm_101"), &tk, &ArchInputs::default(), &Vec::new).unwrap_err();
    assert_eq!(e.code, "arch-dropped-by-nvcc");
    let e =
        plan::plan_for_toolkit(&env("sm_130"), &tk, &ArchInputs::default(), &Vec::new).unwrap_err();
    assert_eq!(e.code, "arch-too-new-for-nvcc");
    // Nothing set, no GPU, no fallback: the error says how to set one.
    let e =
        plan::plan_for_toolkit(&Env::empty(), &tk, &ArchInputs::default(), &Vec::new).unwrap_err();
    assert_eq!(e.code, "arch-not-detected");
    assert!(e.to_string().contains("CUDA_ARCHS=90"), "{e}");
}

#[test]
fn host_compiler_choice_is_what_nvcc_runs() {
    let Some(nvcc) = workspace_tests::nvcc13() else {
        return;
    };
    let path = std::env::var_os("PATH").unwrap_or_default();
    let env = Env::empty().set(Var::Path, path);
    // The build engine's rule (what a Build hands nvcc as -ccbin), as the doctor shows it.
    let tool = match cuda_build::compile::host_compiler(&env) {
        Ok(Some(tool)) => tool,
        Ok(None) => panic!("no host compiler on PATH, but nvcc 13.0 needs one"),
        Err(e) => panic!("no host compiler, but nvcc 13.0 needs one: {e}"),
    };
    assert!(tool.from.starts_with("cc's default for "), "{tool:?}");
    // nvcc given that -ccbin runs exactly that program.
    let dir = kernel_dir();
    let dry = run(
        &nvcc,
        &[
            "-dryrun",
            "-c",
            "-arch=sm_90",
            "-ccbin",
            tool.path.to_str().unwrap(),
            dir.path().join("k.cu").to_str().unwrap(),
        ],
    )
    .combined();
    let shown = format!(
        "#$ \"{}\"/{} ",
        tool.path.parent().unwrap().display(),
        tool.path.file_name().unwrap().to_string_lossy()
    );
    assert!(dry.lines().any(|l| l.starts_with(&shown)), "{shown}\n{dry}");
    // And the real compiler is within nvcc 13.0's limits, since real compiles pass.
    let v13 = semver::Version::new(13, 0, 88);
    let hc = compat::identify_host_compiler(&tool.path, Duration::from_secs(10)).unwrap();
    let v = compat::host_compiler_ok(&hc, &v13);
    assert_eq!(v.status, compat::Status::Pass, "{v:?}");
    let notes = cuda_build::compile::check_host_compiler(&env, &tool, &v13).unwrap();
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn every_ptxas_accepts_exactly_the_archs_of_the_facts_table() {
    // ptxas 11.8, 12.9 and 13.0 against every arch and variant in the table:
    // confirms the first/last columns, the `a`/`f` columns, and the renames.
    let (Some(p11), Some(p12), Some(root)) = (
        workspace_tests::ptxas11(),
        workspace_tests::ptxas12(),
        workspace_tests::cu13_root(),
    ) else {
        return;
    };
    let p13 = root.join("bin/ptxas");
    for (ptxas, cuda) in [(&p11, (11, 8)), (&p12, (12, 9)), (&p13, (13, 0))] {
        let isa = facts::ptx_isa_for_cuda(cuda).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut accepted = Vec::new();
        for span in facts::ARCH_SPANS {
            for variant in [Variant::Plain, Variant::Specific, Variant::Family] {
                let arch = span.cc.arch().with_variant(variant);
                let sm = arch.sm_name();
                let ptx = write_ptx(dir.path(), "t.ptx", isa, &sm);
                let out = run(
                    ptxas,
                    &[
                        &format!("-arch={sm}"),
                        ptx.to_str().unwrap(),
                        "-o",
                        dir.path().join("o.cubin").to_str().unwrap(),
                    ],
                );
                assert_eq!(
                    out.status.success(),
                    facts::toolkit_supports(cuda, arch),
                    "ptxas {cuda:?} -arch={sm}: {}",
                    out.stderr
                );
                if out.status.success() {
                    accepted.push(arch.to_string());
                }
            }
        }
        eprintln!(
            "ptxas {}.{} accepts: {}",
            cuda.0,
            cuda.1,
            accepted.join(" ")
        );
    }
}

#[test]
fn real_host_config_h_of_13_0_matches_the_host_compiler_table() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let cuda_h = std::fs::read_to_string(root.join("include/cuda.h")).unwrap();
    assert!(cuda_h.contains("#define CUDA_VERSION 13000"));
    let text = std::fs::read_to_string(root.join("include/crt/host_config.h")).unwrap();
    let number_after = |pat: &str| -> u32 {
        let rest = &text[text
            .find(pat)
            .unwrap_or_else(|| panic!("no `{pat}` in host_config.h"))
            + pat.len()..];
        rest.trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap()
    };
    let limits = facts::host_compiler_limits((13, 0)).unwrap();
    assert_eq!(number_after("#if __GNUC__ >"), limits.gcc_max);
    assert_eq!(
        number_after("#if (__clang_major__ >=") - 1,
        limits.clang_max
    );
    let msvc = (
        number_after("#if _MSC_VER <"),
        number_after("|| _MSC_VER >=") - 1,
    );
    assert_eq!(Some(msvc), limits.msvc);
    // The gcc verdict quotes the header's own message.
    let hc = compat::HostCompiler {
        kind: compat::HostCompilerKind::Gcc,
        version: semver::Version::new(limits.gcc_max as u64 + 1, 1, 0),
        path: "/usr/bin/gcc".into(),
    };
    let v = compat::host_compiler_ok(&hc, &semver::Version::new(13, 0, 88));
    let quoted = v.reason.split('`').nth(1).unwrap();
    assert!(text.contains(quoted), "`{quoted}` is not in host_config.h");
}

#[test]
fn nvcc_query_survives_hanging_and_odd_nvccs() {
    let dir = tempfile::tempdir().unwrap();
    let v13 = semver::Version::new(13, 0, 88);
    // A hung nvcc: killed after CUDA_BUILD_TIMEOUT, answered from the facts.
    let hang = dir.path().join("hang/nvcc");
    workspace_tests::write_script(&hang, "exec sleep 30");
    let env = Env::empty().set(Var::CudaBuildTimeout, "0.3");
    let start = std::time::Instant::now();
    let s = NvccArchSupport::query(&hang, Some(&v13), &env);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert!(!s.from_nvcc);
    assert_eq!(s, NvccArchSupport::from_facts((13, 0)));
    // An nvcc too old for --list-gpu-code, version unknown: nothing known.
    let old = dir.path().join("old/nvcc");
    workspace_tests::write_script(
        &old,
        "echo \"nvcc fatal   : Unknown option '$1'\" >&2; exit 1",
    );
    let s = NvccArchSupport::query(&old, None, &Env::empty());
    assert!(!s.is_known());
    // A future nvcc listing sm_130 (and junk lines): used as listed.
    let future = dir.path().join("future/nvcc");
    workspace_tests::write_script(
        &future,
        "case \"$1\" in --list-gpu-code) printf 'sm_90\\nsm_130\\nwarning: junk\\n';; --list-gpu-arch) printf 'compute_90\\ncompute_130\\n';; *) exit 1;; esac",
    );
    let s = NvccArchSupport::query(
        &future,
        Some(&semver::Version::new(14, 0, 1)),
        &Env::empty(),
    );
    assert!(s.from_nvcc);
    assert_eq!(
        s.real.iter().map(Arch::to_string).collect::<Vec<_>>(),
        ["90", "130"]
    );
    let tk = Toolkit {
        nvcc: future,
        version: Some(semver::Version::new(14, 0, 1)),
        ..cu13_toolkit(&hang)
    };
    let p = plan::plan_for_toolkit(
        &Env::empty().set(Var::CudaArchs, "sm_130;90"),
        &tk,
        &ArchInputs::default(),
        &Vec::new,
    )
    .unwrap();
    assert_eq!(p.targets_display(), ["sm_90", "sm_130", "compute_90"]);
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("sm_130 is not in cuda-build's tables")),
        "{:?}",
        p.warnings
    );
}

// ------------------------------------------------ other tools' arch variables

/// The arch variables other tools own, in their own syntax, planned against
/// the real nvcc 13.0 and compiled: PyTorch's `X.Y` is SASS only and `+PTX`
/// adds PTX, names expand as PyTorch 2.8 expands them; CMake's `80-real`,
/// `90-virtual`, `all-major` mean what they mean to CMake.
#[test]
fn torch_and_cmake_arch_lists_plan_as_their_owners_mean_them() {
    let Some(nvcc) = workspace_tests::nvcc13() else {
        return;
    };
    let tk = cu13_toolkit(&nvcc);
    let no_gpu = Vec::new;
    let plan_with = |var: Var, value: &str| {
        let env = Env::empty().set(var, value);
        plan::plan_for_toolkit(&env, &tk, &ArchInputs::default(), &no_gpu)
            .unwrap_or_else(|e| panic!("{}={value}: {e}", var.name()))
    };
    let p = plan_with(Var::TorchCudaArchList, "8.0;9.0+PTX");
    assert_eq!(p.source, ArchSource::TorchCudaArchList);
    assert_eq!(p.targets_display(), ["sm_80", "sm_90", "compute_90"]);
    compile_with(&nvcc, &p);
    let p = plan_with(Var::TorchCudaArchList, "7.5 Ampere");
    assert_eq!(
        p.targets_display(),
        ["sm_75", "sm_80", "sm_86", "compute_86"]
    );
    let p = plan_with(Var::TorchCudaArchList, "8.0 8.6");
    assert_eq!(p.targets_display(), ["sm_80", "sm_86"], "no +PTX, no PTX");
    compile_with(&nvcc, &p);

    let p = plan_with(Var::CmakeCudaArchitectures, "80-real;90-virtual");
    assert_eq!(p.source, ArchSource::CmakeCudaArchitectures);
    assert_eq!(p.targets_display(), ["sm_80", "compute_90"]);
    compile_with(&nvcc, &p);
    let p = plan_with(Var::CmakeCudaArchitectures, "all-major");
    assert_eq!(
        p.targets_display().first().map(String::as_str),
        Some("sm_75"),
        "nvcc 13.0's all-major starts at 7.5: {:?}",
        p.targets_display()
    );
}

/// CUDA_ARCHS > CMAKE_CUDA_ARCHITECTURES > CUDAARCHS > TORCH_CUDA_ARCH_LIST
/// > CUDA_COMPUTE_CAP > `[package.metadata.cuda] arch`; `Build::arch` above all.
#[test]
fn arch_variables_take_turns_in_precedence_order() {
    // (variable, value, the spec it gives, source)
    let order = [
        (Var::CudaArchs, "70", "70", ArchSource::CudaArchs),
        (
            Var::CmakeCudaArchitectures,
            "75",
            "75",
            ArchSource::CmakeCudaArchitectures,
        ),
        (Var::CmakeCudaArchs, "80", "80", ArchSource::CmakeCudaArchs),
        (
            Var::TorchCudaArchList,
            "8.6",
            "86-real",
            ArchSource::TorchCudaArchList,
        ),
        (Var::CudaComputeCap, "89", "89", ArchSource::CudaComputeCap),
    ];
    let metadata = ArchInputs {
        metadata: Some("90".into()),
        ..Default::default()
    };
    for i in 0..order.len() {
        let mut env = Env::empty();
        for (var, value, _, _) in &order[i..] {
            env = env.set(*var, *value);
        }
        let (spec, source) = plan::resolve_spec(&env, &metadata).unwrap().unwrap();
        assert_eq!(source, order[i].3, "{:?}", order[i].0);
        assert_eq!(spec.to_string(), order[i].2);
        let explicit = ArchInputs {
            explicit: Some("100".into()),
            ..metadata.clone()
        };
        assert_eq!(
            plan::resolve_spec(&env, &explicit).unwrap().unwrap().1,
            ArchSource::Explicit
        );
    }
    let (_, source) = plan::resolve_spec(&Env::empty(), &metadata)
        .unwrap()
        .unwrap();
    assert_eq!(source, ArchSource::CargoMetadata);
}

/// Garbage in another tool's arch variable: one warning that names it and
/// says what was expected, and the next setting plans (not an error, as
/// for this project's own CUDA_ARCHS).
#[test]
fn garbage_in_another_tools_arch_list_is_one_warning_and_skipped() {
    for (var, bad, expected) in [
        (Var::TorchCudaArchList, "sm_86;8.6+PTX", "`8.0;8.6+PTX`"),
        (Var::TorchCudaArchList, "Amperes", "`8.0;8.6+PTX`"),
        (Var::TorchCudaArchList, "86", "PyTorch writes 8.6"),
        (
            Var::CmakeCudaArchitectures,
            "OFF",
            "an arch list such as `80;90`",
        ),
    ] {
        let env = Env::empty().set(var, bad).set(Var::CudaComputeCap, "89");
        let w = env.check();
        assert_eq!(w.len(), 1, "{}={bad}: {w:?}", var.name());
        assert!(w[0].starts_with(&format!("{}=", var.name())), "{w:?}");
        assert!(w[0].contains(expected), "{}={bad}: {w:?}", var.name());
        assert!(w[0].contains("it is ignored"), "{w:?}");
        let (_, source) = plan::resolve_spec(&env, &ArchInputs::default())
            .unwrap()
            .unwrap();
        assert_eq!(source, ArchSource::CudaComputeCap, "{}={bad}", var.name());
        // Alone, it leaves the plan to detection (or the fallback).
        let env = Env::empty().set(var, bad);
        assert_eq!(
            plan::resolve_spec(&env, &ArchInputs::default()).unwrap(),
            None
        );
    }
    // This project's own variable stays an error (the plan says why).
    let env = Env::empty().set(Var::CudaArchs, "sm_86;8.6+PTX;Amperes");
    assert!(env.check().is_empty());
    assert_eq!(
        plan::resolve_spec(&env, &ArchInputs::default())
            .unwrap_err()
            .code,
        "arch-invalid"
    );
}

/// CUDA_NVCC_FLAGS with an arch flag that contradicts the plan: one plan
/// warning naming the variable, the flag and the plan; the flag never
/// reaches nvcc. A matching one is dropped silently.
#[test]
fn cuda_nvcc_flags_arch_contradicting_the_plan_is_one_warning() {
    let Some(nvcc) = workspace_tests::nvcc13() else {
        return;
    };
    let tk = cu13_toolkit(&nvcc);
    let no_gpu = Vec::new;
    let env = Env::empty()
        .set(Var::CudaArchs, "80;90")
        .set(Var::CudaNvccFlags, "-lineinfo -arch=sm_75");
    let p = plan::plan_for_toolkit(&env, &tk, &ArchInputs::default(), &no_gpu).unwrap();
    let w: Vec<&String> = p
        .warnings
        .iter()
        .filter(|w| w.contains("CUDA_NVCC_FLAGS"))
        .collect();
    assert_eq!(w.len(), 1, "{:?}", p.warnings);
    assert!(
        w[0].starts_with("CUDA_NVCC_FLAGS has `-arch=sm_75`")
            && w[0].contains("from CUDA_ARCHS")
            && w[0].contains("sm_80, sm_90, compute_90")
            && w[0].contains("CUDA_ARCHS=\"75\""),
        "{}",
        w[0]
    );
    let flags = cuda_toolchain::interop::nvcc_flags::from_env(&env);
    assert_eq!(flags.flags, ["-lineinfo"]);
    let env = env.set(
        Var::CudaNvccFlags,
        "-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]",
    );
    let p = plan::plan_for_toolkit(&env, &tk, &ArchInputs::default(), &no_gpu).unwrap();
    assert!(
        !p.warnings.iter().any(|w| w.contains("CUDA_NVCC_FLAGS")),
        "{:?}",
        p.warnings
    );
}
