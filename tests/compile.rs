//! Integration tests: `cuda_build::compile::Build` against the real nvcc 13.0.
//!
//! nvcc runs through a logging wrapper script (it appends its arguments to a
//! file, then execs the real nvcc), so the tests count exactly which sources
//! were compiled. Each test works on its own copy of
//! `tests/fixtures/compile/kernels` so touching headers is safe.

use cuda_build::compile::inspect::{self, FatbinKind};
use cuda_build::compile::prebuilt::stored::comparable;
use cuda_build::compile::{Artifacts, Build, OutputKind};
use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::image::compare;
use cuda_toolchain::toolkit::{FoundVia, Toolkit};
use std::path::{Path, PathBuf};
use std::time::Duration;

struct Fx {
    dir: tempfile::TempDir,
    tk: Toolkit,
    real_root: PathBuf,
}

impl Fx {
    fn root(&self) -> &Path {
        self.dir.path()
    }
    fn pkg(&self) -> PathBuf {
        self.root().join("pkg")
    }
    fn out(&self) -> PathBuf {
        self.root().join("out")
    }
    fn cache(&self) -> PathBuf {
        self.root().join("cache")
    }
    fn log(&self) -> PathBuf {
        self.root().join("nvcc.log")
    }
    fn env(&self) -> Env {
        Env::empty().set(Var::CargoManifestDir, self.pkg())
    }
    /// A builder for the package copy with the wrapper toolkit, no cargo output.
    fn build(&self) -> Build {
        let mut b = Build::new();
        b.env(self.env())
            .toolkit(self.tk.clone())
            .out_dir(self.out())
            .cache_dir(self.cache())
            .emit_cargo(false)
            .arch("90");
        b
    }
    /// nvcc invocations logged so far (and clears the log).
    fn take_log(&self) -> Vec<String> {
        let text = std::fs::read_to_string(self.log()).unwrap_or_default();
        let _ = std::fs::remove_file(self.log());
        text.lines().map(str::to_string).collect()
    }
    /// Logged compiles (invocations naming a .cu file), by file name.
    fn compiled(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .take_log()
            .iter()
            .filter_map(|l| {
                // The source is nvcc's last argument.
                l.split_whitespace().rfind(|a| a.ends_with(".cu")).map(|a| {
                    Path::new(a)
                        .file_name()
                        .unwrap()
                        .to_string_lossy()
                        .into_owned()
                })
            })
            .collect();
        v.sort();
        v
    }
}

/// A fixture package with the given kernels (file names under `kernels/`).
fn fixture(kernels: &[&str]) -> Option<Fx> {
    let real_root = workspace_tests::cu13_root()?;
    let dir = tempfile::tempdir().unwrap();
    workspace_tests::fixture_package(dir.path(), kernels);
    let log = dir.path().join("nvcc.log");
    let wrapper = dir.path().join("bin/nvcc");
    workspace_tests::write_script(
        &wrapper,
        &format!(
            "echo \"$*\" >> '{}'\nexec '{}' \"$@\"",
            log.display(),
            real_root.join("bin/nvcc").display()
        ),
    );
    let tk = Toolkit {
        root: real_root.clone(),
        nvcc: wrapper,
        version: Some(semver::Version::new(13, 0, 88)),
        found_via: FoundVia::Explicit,
        include_dirs: vec![real_root.join("include")],
        lib_dirs: vec![real_root.join("lib")],
        problems: Vec::new(),
    };
    Some(Fx { dir, tk, real_root })
}

const ALL: &[&str] = workspace_tests::FIXTURE_KERNELS;

fn kernel<'a>(a: &'a Artifacts, module: &str) -> &'a cuda_build::compile::KernelArtifact {
    a.kernels
        .iter()
        .find(|k| k.module == module)
        .unwrap_or_else(|| panic!("no kernel module {module}"))
}

/// Compiles the generated module with rustc, so its format is checked for real.
fn rustc_accepts(module: &Path, use_line: &str) {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib.rs");
    std::fs::write(
        &lib,
        format!(
            "#![deny(warnings)]\ninclude!({:?});\npub fn check() -> usize {{ {use_line} }}\n",
            module.display()
        ),
    )
    .unwrap();
    let out = cuda_toolchain::process::run(
        "rustc",
        [
            "--edition=2021".as_ref(),
            "--crate-type=lib".as_ref(),
            "--emit=metadata".as_ref(),
            "--out-dir".as_ref(),
            dir.path().as_os_str(),
            lib.as_os_str(),
        ],
        Duration::from_secs(120),
    )
    .expect("rustc runs");
    assert!(
        out.status.success(),
        "generated module does not compile:\n{}",
        out.combined()
    );
}

#[test]
fn fatbin_holds_exactly_the_planned_archs() {
    let Some(fx) = fixture(&["vector_add.cu", "reduction.cu"]) else {
        return;
    };
    let a = fx.build().dir("cu").arch("80;90").try_compile().unwrap();
    assert_eq!(a.stats.compiled, 2);
    assert_eq!(a.toolkit_version.as_deref(), Some("13.0.88"));
    let k = kernel(&a, "vector_add");
    assert_eq!(k.kind, OutputKind::Fatbin);
    assert_eq!(k.archs, ["sm_80", "sm_90", "compute_90"]);
    assert_eq!(k.entries, ["vectorAdd"]);
    let bytes = std::fs::read(&k.output).unwrap();
    let entries = inspect::read_fatbin(&bytes).unwrap();
    let mut names: Vec<String> = entries.iter().map(|e| e.target_name()).collect();
    names.sort();
    assert_eq!(names, ["compute_90", "sm_80", "sm_90"]);
    for e in entries.iter().filter(|e| e.kind == FatbinKind::Elf) {
        // The embedded cubin's own ELF header agrees with the fatbin entry.
        let cubin = inspect::read_cubin(&bytes[e.payload.clone()]).unwrap();
        assert_eq!(cubin.arch, e.arch);
        assert_eq!(cubin.entries, ["vectorAdd"]);
    }
    let r = kernel(&a, "reduction");
    let mut entries = r.entries.clone();
    entries.sort();
    assert_eq!(
        entries,
        ["reduce_sum_1024", "reduce_sum_256", "reduce_sum_512"]
    );

    let text = std::fs::read_to_string(&a.module).unwrap();
    assert_eq!(a.module, fx.out().join("kernels.rs"));
    assert!(
        text.contains("pub const TOOLKIT_VERSION: &str = \"13.0.88\";"),
        "{text}"
    );
    assert!(text.contains("pub const ARCHS: &[&str] = &[\"sm_80\", \"sm_90\", \"compute_90\"];"));
    assert!(text.contains("pub mod vector_add {"));
    assert!(text.contains("pub const SOURCE: &str = \"cu/vector_add.cu\";"));
    assert!(text.contains("pub const KIND: &str = \"fatbin\";"));
    assert!(text.contains("pub const ENTRIES: &[&str] = &[\"vectorAdd\"];"));
    rustc_accepts(
        &a.module,
        "vector_add::IMAGE.len() + vector_add::ENTRIES.len() + ARCHS.len()",
    );
}

#[test]
fn arch_specific_targets_are_recorded() {
    let Some(fx) = fixture(&["saxpy.cu"]) else {
        return;
    };
    let a = fx.build().dir("cu").arch("90a").try_compile().unwrap();
    let k = kernel(&a, "saxpy");
    let bytes = std::fs::read(&k.output).unwrap();
    let mut names: Vec<String> = inspect::read_fatbin(&bytes)
        .unwrap()
        .iter()
        .map(|e| e.target_name())
        .collect();
    names.sort();
    let mut planned = a.plan.as_ref().unwrap().targets_display();
    planned.sort();
    assert_eq!(names, planned);
    assert!(names.contains(&"sm_90a".to_string()), "{names:?}");
}

#[test]
fn ptx_only_fatbin_still_lists_its_kernels() {
    let Some(fx) = fixture(&["saxpy.cu"]) else {
        return;
    };
    let a = fx
        .build()
        .dir("cu")
        .arch("90-virtual")
        .try_compile()
        .unwrap();
    let k = kernel(&a, "saxpy");
    assert_eq!(k.archs, ["compute_90"]);
    let names: Vec<String> = inspect::read_fatbin(&std::fs::read(&k.output).unwrap())
        .unwrap()
        .iter()
        .map(|e| e.target_name())
        .collect();
    assert_eq!(names, ["compute_90"]);
    assert_eq!(k.entries, ["saxpy", "daxpy"]);
}

#[test]
fn ptx_has_target_version_and_entries() {
    let Some(fx) = fixture(&["saxpy.cu"]) else {
        return;
    };
    let a = fx
        .build()
        .dir("cu")
        .arch("80;90")
        .output(OutputKind::Ptx)
        .try_compile()
        .unwrap();
    let k = kernel(&a, "saxpy");
    assert_eq!(k.output.extension().unwrap(), "ptx");
    let info = inspect::read_ptx(&std::fs::read_to_string(&k.output).unwrap());
    // CUDA 13.0 emits PTX ISA 9.0 (cuda-facts.md, PTX ISA table).
    assert_eq!(info.version, Some((9, 0)));
    assert_eq!(info.target.as_deref(), Some("sm_90"));
    assert_eq!(info.entries, ["saxpy", "daxpy"]);
    assert_eq!(k.archs, ["compute_90"]);
    let text = std::fs::read_to_string(&a.module).unwrap();
    assert!(text.contains("pub const PTX: &str = include_str!("));
    rustc_accepts(&a.module, "saxpy::PTX.len() + saxpy::IMAGE.len()");
}

#[test]
fn one_cubin_per_real_arch() {
    let Some(fx) = fixture(&["vector_add.cu"]) else {
        return;
    };
    let a = fx
        .build()
        .dir("cu")
        .arch("80;90a")
        .output(OutputKind::Cubin)
        .try_compile()
        .unwrap();
    let k = kernel(&a, "vector_add");
    let names: Vec<String> = k
        .outputs
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["vector_add.sm_80.cubin", "vector_add.sm_90a.cubin"]);
    let c80 = inspect::read_cubin(&std::fs::read(&k.outputs[0]).unwrap()).unwrap();
    let c90 = inspect::read_cubin(&std::fs::read(&k.outputs[1]).unwrap()).unwrap();
    assert_eq!((c80.sm, c80.arch.to_string()), (80, "80".to_string()));
    assert_eq!((c90.sm, c90.arch.to_string()), (90, "90a".to_string()));
    assert_eq!(c90.entries, ["vectorAdd"]);
    assert_eq!(k.output, k.outputs[1], "IMAGE is the highest arch");
    let text = std::fs::read_to_string(&a.module).unwrap();
    assert!(text.contains("pub const CUBINS: &[(&str, &[u8])] = &[(\"sm_80\", include_bytes!("));
    rustc_accepts(
        &a.module,
        "vector_add::CUBINS.len() + vector_add::IMAGE.len()",
    );
}

fn ar_members(lib: &Path) -> Vec<String> {
    let out = cuda_toolchain::process::run(
        "ar",
        ["t".as_ref(), lib.as_os_str()],
        Duration::from_secs(30),
    )
    .unwrap();
    assert!(out.status.success());
    out.stdout.lines().map(str::to_string).collect()
}

#[test]
fn static_library_with_and_without_rdc() {
    let Some(fx) = fixture(&["vector_add.cu", "saxpy.cu"]) else {
        return;
    };
    let a = fx
        .build()
        .dir("cu")
        .output(OutputKind::StaticLib)
        .try_compile()
        .unwrap();
    let lib = a.library.clone().unwrap();
    assert_eq!(lib.file_name().unwrap(), "libkernels.a");
    let mut m = ar_members(&lib);
    m.sort();
    assert_eq!(m, ["saxpy.o", "vector_add.o"]);
    // The host object embeds the device code; its kernels are read from it.
    assert_eq!(kernel(&a, "vector_add").entries, ["vectorAdd"]);

    let b = fx
        .build()
        .dir("cu")
        .output(OutputKind::StaticLib)
        .rdc(true)
        .module_name("rdc")
        .try_compile()
        .unwrap();
    let mut m = ar_members(b.library.as_ref().unwrap());
    m.sort();
    assert_eq!(m, ["rdc_dlink.o", "saxpy.o", "vector_add.o"]);
    let log = fx.take_log().join("\n");
    assert!(log.contains("-rdc=true") && log.contains("-dlink"), "{log}");
}

#[test]
fn incremental_noop_touch_and_header_edit() {
    let kernels = [
        "vector_add.cu",
        "saxpy.cu",
        "nbody.cu",
        "stencil.cu",
        "transpose.cu",
    ];
    let Some(fx) = fixture(&kernels) else { return };
    let a = fx.build().dir("cu").try_compile().unwrap();
    assert_eq!(a.stats.compiled, 5);
    assert_eq!(fx.compiled().len(), 5);
    let module_mtime = std::fs::metadata(&a.module).unwrap().modified().unwrap();

    // Nothing changed: no nvcc at all (not even an arch query), nothing rewritten.
    let a = fx.build().dir("cu").try_compile().unwrap();
    assert_eq!(fx.take_log(), Vec::<String>::new());
    assert_eq!(a.stats.up_to_date, 5);
    assert_eq!(
        std::fs::metadata(&a.module).unwrap().modified().unwrap(),
        module_mtime
    );

    // A header touched but not changed: still nothing to compile.
    let header = fx.pkg().join("cu/include/vec_math.cuh");
    let f = std::fs::File::options().write(true).open(&header).unwrap();
    f.set_modified(std::time::SystemTime::now() + Duration::from_secs(3))
        .unwrap();
    drop(f);
    let a = fx.build().dir("cu").try_compile().unwrap();
    assert_eq!(fx.take_log(), Vec::<String>::new());
    assert_eq!(a.stats.up_to_date, 5);

    // A header changed: only its two includers recompile.
    let mut text = std::fs::read_to_string(&header).unwrap();
    text.push_str("\n__device__ inline float len2(f3 a) { return dot(a, a); }\n");
    std::fs::write(&header, text).unwrap();
    let a = fx.build().dir("cu").try_compile().unwrap();
    assert_eq!(fx.compiled(), ["nbody.cu", "stencil.cu"]);
    assert_eq!((a.stats.compiled, a.stats.up_to_date), (2, 3));

    // A flag change recompiles everything; so does NVCC_APPEND_FLAGS (nvcc reads it itself).
    fx.build()
        .dir("cu")
        .define("EXTRA", "1")
        .try_compile()
        .unwrap();
    assert_eq!(fx.compiled().len(), 5);
    let env = fx.env().set(Var::NvccAppendFlags, "-DAPPENDED=1");
    fx.build().dir("cu").env(env).try_compile().unwrap();
    assert_eq!(fx.compiled().len(), 5);
    // Back to the first settings: served from the cache, no nvcc.
    let a = fx.build().dir("cu").try_compile().unwrap();
    assert_eq!(fx.take_log(), Vec::<String>::new());
    assert_eq!(a.stats.from_cache, 5);
}

/// A kernel whose device side and host side include different headers.
fn split_sides(fx: &Fx) {
    let cu = fx.pkg().join("cu");
    std::fs::write(cu.join("dev_only.cuh"), "#define DEV_VALUE 1.5f\n").unwrap();
    std::fs::write(cu.join("host_only.cuh"), "static int host_side = 1;\n").unwrap();
    std::fs::write(
        cu.join("split.cu"),
        "#ifdef __CUDA_ARCH__\n#include \"dev_only.cuh\"\n#else\n#include \"host_only.cuh\"\n#endif\n\
         extern \"C\" __global__ void split(float* x) {\n#ifdef __CUDA_ARCH__\n  x[0] = DEV_VALUE;\n#endif\n}\n",
    )
    .unwrap();
}

/// `split.cu` built as PTX.
fn split_ptx(fx: &Fx) -> Artifacts {
    fx.build()
        .file("cu/split.cu")
        .output(OutputKind::Ptx)
        .try_compile()
        .unwrap()
}

/// The logged nvcc calls that compiled a source.
fn compile_calls(fx: &Fx) -> Vec<String> {
    fx.take_log()
        .into_iter()
        .filter(|l| l.contains(".cu"))
        .collect()
}

#[test]
fn headers_are_tracked_per_side_from_what_nvcc_preprocessed() {
    let Some(fx) = fixture(&[]) else { return };
    split_sides(&fx);
    let cu = fx.pkg().join("cu");
    let ptx = |fx: &Fx| {
        let a = split_ptx(fx);
        assert!(a.warnings.is_empty(), "{:?}", a.warnings);
        (
            a.stats.compiled,
            std::fs::read_to_string(&a.kernels[0].output).unwrap(),
        )
    };
    let (n, text) = ptx(&fx);
    assert_eq!(n, 1);
    assert!(
        text.contains("1069547520"),
        "1.5f (0x3fc00000) in the PTX:\n{text}"
    );
    // One nvcc run per compile, and no `-MD` pass: the headers came from
    // the preprocessed files nvcc kept.
    let log = compile_calls(&fx);
    assert_eq!(log.len(), 1, "{log:?}");
    assert!(
        log[0].contains("--keep") && !log[0].contains("-MD"),
        "{log:?}"
    );

    // The PTX is built from the device side only: a host-only header edit
    // recompiles nothing, a device-only one recompiles and changes the PTX.
    std::fs::write(cu.join("host_only.cuh"), "static int host_side = 2;\n").unwrap();
    assert_eq!(ptx(&fx).0, 0);
    std::fs::write(cu.join("dev_only.cuh"), "#define DEV_VALUE 2.5f\n").unwrap();
    let (n, text) = ptx(&fx);
    assert_eq!(n, 1);
    assert!(
        text.contains("1075838976"),
        "2.5f (0x40200000) in the PTX:\n{text}"
    );

    // A static library holds host code too: both sides' headers count.
    let lib = |fx: &Fx| {
        fx.build()
            .file("cu/split.cu")
            .output(OutputKind::StaticLib)
            .out_dir(fx.root().join("out-lib"))
            .try_compile()
            .unwrap()
            .stats
            .compiled
    };
    assert_eq!(lib(&fx), 1);
    assert_eq!(lib(&fx), 0);
    std::fs::write(cu.join("host_only.cuh"), "static int host_side = 3;\n").unwrap();
    assert_eq!(lib(&fx), 1);
    std::fs::write(cu.join("dev_only.cuh"), "#define DEV_VALUE 3.5f\n").unwrap();
    assert_eq!(lib(&fx), 1);
}

#[test]
fn an_nvcc_that_keeps_nothing_gets_its_headers_listed_with_md() {
    let Some(mut fx) = fixture(&[]) else { return };
    split_sides(&fx);
    // An nvcc that drops `--keep`/`--keep-dir` (so keeps no preprocessed file).
    let real = fx.tk.nvcc.clone();
    let dropping = fx.root().join("bin/nvcc-keeps-nothing");
    workspace_tests::write_script(
        &dropping,
        &format!(
            "for a in \"$@\"; do shift; case \"$skip$a\" in --keep) ;; --keep-dir) skip=1 ;; 1*) skip= ;; *) set -- \"$@\" \"$a\" ;; esac; done\nexec '{}' \"$@\"",
            real.display()
        ),
    );
    fx.tk.nvcc = dropping;
    let a = split_ptx(&fx);
    assert_eq!(a.stats.compiled, 1);
    assert!(
        a.warnings
            .iter()
            .any(|w| w.contains("kept no preprocessed file") && w.contains("-MD")),
        "{:?}",
        a.warnings
    );
    let log = compile_calls(&fx);
    assert_eq!(log.len(), 2, "the compile again with -MD: {log:?}");
    assert!(
        !log[0].contains("--keep") && log[1].contains("-MD"),
        "{log:?}"
    );
    // The headers were still listed: a header edit recompiles.
    std::fs::write(fx.pkg().join("cu/dev_only.cuh"), "#define DEV_VALUE 2.5f\n").unwrap();
    let a = split_ptx(&fx);
    assert_eq!(a.stats.compiled, 1);
    let text = std::fs::read_to_string(&a.kernels[0].output).unwrap();
    assert!(text.contains("1075838976"), "2.5f (0x40200000):\n{text}");
}

#[test]
fn cache_serves_a_clean_build_and_a_second_checkout() {
    let Some(fx) = fixture(&["vector_add.cu", "histogram.cu", "softmax.cu"]) else {
        return;
    };
    let first = fx.build().dir("cu").try_compile().unwrap();
    assert_eq!(first.stats.compiled, 3);
    let before: Vec<Vec<u8>> = first
        .kernels
        .iter()
        .map(|k| std::fs::read(&k.output).unwrap())
        .collect();
    fx.take_log();

    // `cargo clean`: OUT_DIR is gone.
    std::fs::remove_dir_all(fx.out()).unwrap();
    let again = fx.build().dir("cu").try_compile().unwrap();
    assert_eq!(fx.take_log(), Vec::<String>::new(), "no nvcc after clean");
    assert_eq!(again.stats.from_cache, 3);
    let after: Vec<Vec<u8>> = again
        .kernels
        .iter()
        .map(|k| std::fs::read(&k.output).unwrap())
        .collect();
    assert_eq!(before, after);
    assert_eq!(again.kernels[0].entries, first.kernels[0].entries);

    // Another checkout of the same package elsewhere, sharing the cache.
    let other = fx.root().join("checkout2");
    workspace_tests::copy_dir(&fx.pkg(), &other);
    let env = Env::empty().set(Var::CargoManifestDir, &other);
    let b = fx
        .build()
        .env(env)
        .out_dir(fx.root().join("out2"))
        .dir("cu")
        .try_compile()
        .unwrap();
    assert_eq!(
        fx.take_log(),
        Vec::<String>::new(),
        "no nvcc for a second checkout"
    );
    assert_eq!(b.stats.from_cache, 3);

    // CUDA_BUILD_NO_CACHE=1 turns it off.
    std::fs::remove_dir_all(fx.out()).unwrap();
    let env = fx.env().set(Var::CudaBuildNoCache, "1");
    let c = fx.build().env(env).dir("cu").try_compile().unwrap();
    assert_eq!(c.stats.compiled, 3);
}

#[test]
fn corrupt_cache_entry_is_not_trusted() {
    let Some(fx) = fixture(&["vector_add.cu"]) else {
        return;
    };
    fx.build().dir("cu").try_compile().unwrap();
    // Damage every cached fatbin (same length, different bytes), as a torn write would.
    let mut damaged = 0;
    for e in walk(&fx.cache()) {
        if e.extension().is_some_and(|x| x == "fatbin") {
            let mut b = std::fs::read(&e).unwrap();
            let n = b.len();
            b[n / 2] ^= 0xff;
            std::fs::write(&e, b).unwrap();
            damaged += 1;
        }
    }
    assert_eq!(damaged, 1);
    std::fs::remove_dir_all(fx.out()).unwrap();
    fx.take_log();
    let a = fx.build().dir("cu").try_compile().unwrap();
    assert_eq!(a.stats.compiled, 1, "a damaged entry is a miss");
    let bytes = std::fs::read(&a.kernels[0].output).unwrap();
    assert!(inspect::read_fatbin(&bytes).is_ok());
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn two_builds_of_the_same_source_at_once() {
    let Some(fx) = fixture(&["sgemm.cu", "scan.cu"]) else {
        return;
    };
    let results: Vec<Artifacts> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..3)
            .map(|i| {
                let fx = &fx;
                s.spawn(move || {
                    fx.build()
                        .dir("cu")
                        .out_dir(fx.root().join(format!("par{i}")))
                        .try_compile()
                        .unwrap()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let first: Vec<Vec<u8>> = results[0]
        .kernels
        .iter()
        .map(|k| std::fs::read(&k.output).unwrap())
        .collect();
    for r in &results[1..] {
        let these: Vec<Vec<u8>> = r
            .kernels
            .iter()
            .map(|k| std::fs::read(&k.output).unwrap())
            .collect();
        assert_eq!(these, first);
    }
    // The cache holds complete entries only, and no temporaries.
    assert!(walk(&fx.cache().join("v1/tmp")).is_empty());
    let a = fx
        .build()
        .dir("cu")
        .out_dir(fx.root().join("after"))
        .try_compile()
        .unwrap();
    assert_eq!(a.stats.from_cache, 2);
}

#[test]
fn nvcc_runs_in_parallel_up_to_num_jobs_and_gets_threads_when_slots_are_idle() {
    let Some(fx) = fixture(&["sgemm.cu", "scan.cu", "saxpy.cu", "softmax.cu"]) else {
        return;
    };
    // A wrapper that logs `+ <args>` when nvcc starts and `- <args>` when it ends.
    let log = fx.root().join("overlap.log");
    let wrapper = fx.root().join("bin/nvcc-overlap");
    workspace_tests::write_script(
        &wrapper,
        &format!(
            "echo \"+ $*\" >> '{log}'\n'{}' \"$@\"\nrc=$?\necho \"- $*\" >> '{log}'\nexit $rc",
            fx.real_root.join("bin/nvcc").display(),
            log = log.display()
        ),
    );
    let mut tk = fx.tk.clone();
    tk.nvcc = wrapper;
    // (compiles, most at once, their arguments); arch-list queries are left out.
    let build = |jobs: &str, archs: &str, out: &str| -> (usize, usize, Vec<String>) {
        let _ = std::fs::remove_file(&log);
        fx.build()
            .env(fx.env().set(Var::NumJobs, jobs))
            .toolkit(tk.clone())
            .no_cache()
            .arch(archs)
            .dir("cu")
            .out_dir(fx.root().join(out))
            .try_compile()
            .unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        let (mut now, mut peak) = (0usize, 0usize);
        let mut calls = Vec::new();
        for l in text.lines().filter(|l| l.contains(".cu")) {
            if let Some(args) = l.strip_prefix("+ ") {
                now += 1;
                peak = peak.max(now);
                calls.push(args.to_string());
            } else {
                now -= 1;
            }
        }
        (calls.len(), peak, calls)
    };
    let (n, peak, calls) = build("2", "80;90", "two");
    assert_eq!((n, peak), (4, 2), "{calls:?}");
    // More sources than slots: no --threads.
    assert!(calls.iter().all(|c| !c.contains("--threads")), "{calls:?}");
    let (n, peak, _) = build("1", "80;90", "one");
    assert_eq!((n, peak), (4, 1));
    // One source left and 4 slots: its 2 device chains (compute_80 → sm_80;
    // compute_90 → sm_90 and its PTX) get nvcc's --threads, no more.
    std::fs::write(
        fx.pkg().join("cu/saxpy.cu"),
        std::fs::read_to_string(fx.pkg().join("cu/saxpy.cu")).unwrap() + "\n// edit\n",
    )
    .unwrap();
    let (n, _, calls) = build("4", "80;90", "two");
    assert_eq!(n, 1, "{calls:?}");
    assert!(calls[0].contains("--threads 2"), "{calls:?}");
    // A PTX build's source has one target (the top arch's PTX) whatever
    // the archs: no --threads, and no slot taken for it.
    let _ = std::fs::remove_file(&log);
    fx.build()
        .env(fx.env().set(Var::NumJobs, "4"))
        .toolkit(tk.clone())
        .no_cache()
        .arch("80;90")
        .file("cu/saxpy.cu")
        .output(OutputKind::Ptx)
        .out_dir(fx.root().join("ptx"))
        .try_compile()
        .unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    let calls: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("+ ") && l.contains(".cu"))
        .collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(!calls[0].contains("--threads"), "{calls:?}");
}

#[test]
fn progress_events_reach_the_side_channel() {
    let Some(fx) = fixture(&["vector_add.cu", "saxpy.cu"]) else {
        return;
    };
    let p = fx.root().join("progress.jsonl");
    let env = fx.env().set(Var::CargoCudaProgress, &p);
    fx.build().dir("cu").env(env.clone()).try_compile().unwrap();
    fx.build().dir("cu").env(env).try_compile().unwrap();
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let events: Vec<&str> = lines.iter().map(|v| v["event"].as_str().unwrap()).collect();
    assert_eq!(events.iter().filter(|e| **e == "start").count(), 2);
    assert_eq!(events.iter().filter(|e| **e == "done").count(), 2);
    assert_eq!(events.iter().filter(|e| **e == "cached").count(), 2);
    assert!(lines
        .iter()
        .all(|v| v["total"] == 2 && v["archs"] == "sm_90,compute_90"));
    assert!(lines.iter().any(|v| v["file"] == "cu/saxpy.cu"));
}

#[test]
fn per_file_flags_and_arch() {
    let Some(fx) = fixture(&["vector_add.cu", "saxpy.cu"]) else {
        return;
    };
    let a = fx
        .build()
        .dir("cu")
        .file_arch("cu/saxpy.cu", "80")
        .file_flag("cu/vector_add.cu", "-DONLY_HERE=1")
        .try_compile()
        .unwrap();
    assert_eq!(kernel(&a, "saxpy").archs, ["sm_80", "compute_80"]);
    assert_eq!(kernel(&a, "vector_add").archs, ["sm_90", "compute_90"]);
    let log = fx.take_log();
    let va = log.iter().find(|l| l.contains("vector_add.cu")).unwrap();
    let sx = log.iter().find(|l| l.contains("saxpy.cu")).unwrap();
    assert!(va.contains("-DONLY_HERE=1") && !sx.contains("-DONLY_HERE=1"));
    let e = fx
        .build()
        .dir("cu")
        .file_flag("cu/nope.cu", "-G")
        .try_compile()
        .unwrap_err();
    assert_eq!(e.code, "source-not-found");
}

#[test]
fn warnings_are_deduplicated() {
    let Some(fx) = fixture(&[]) else { return };
    let hdr = fx.pkg().join("cu/include/warn.cuh");
    std::fs::write(
        &hdr,
        "#pragma once\n__device__ inline int w() { int unused_var; return 1; }\n",
    )
    .unwrap();
    for n in ["a", "b"] {
        std::fs::write(
            fx.pkg().join(format!("cu/{n}.cu")),
            format!("#include \"include/warn.cuh\"\nextern \"C\" __global__ void k_{n}(int* o) {{ *o = w(); }}\n"),
        )
        .unwrap();
    }
    let a = fx.build().dir("cu").try_compile().unwrap();
    let w: Vec<&String> = a
        .warnings
        .iter()
        .filter(|w| w.contains("unused_var"))
        .collect();
    assert_eq!(w.len(), 1, "{:?}", a.warnings);
    assert!(w[0].contains("warn.cuh"), "{w:?}");
}

#[test]
fn docs_rs_without_toolkit_gives_an_empty_module() {
    let Some(fx) = fixture(&["vector_add.cu"]) else {
        return;
    };
    let env = fx
        .env()
        .set(Var::DocsRs, "1")
        .set(Var::Path, "/nonexistent");
    let a = Build::new()
        .env(env)
        .out_dir(fx.out())
        .emit_cargo(false)
        .dir("cu")
        .try_compile()
        .unwrap();
    assert!(a.kernels.is_empty() && a.toolkit_version.is_none());
    let text = std::fs::read_to_string(&a.module).unwrap();
    assert!(
        text.contains("pub const IMAGE: &[u8] = &[];")
            && text.contains("pub const ENTRIES: &[&str] = &[];")
    );
    rustc_accepts(&a.module, "vector_add::IMAGE.len() + TOOLKIT_VERSION.len()");
    // Without DOCS_RS the same setup is an error, not an empty module.
    let e = Build::new()
        .env(fx.env().set(Var::Path, "/nonexistent"))
        .out_dir(fx.out())
        .emit_cargo(false)
        .dir("cu")
        .try_compile()
        .unwrap_err();
    assert_eq!(e.code, "nvcc-not-found", "{e}");
}

// ---- bad input ----

#[test]
fn missing_source_and_empty_dir() {
    let Some(fx) = fixture(&[]) else { return };
    let e = fx.build().file("cu/missing.cu").try_compile().unwrap_err();
    assert_eq!(e.code, "source-not-found");
    assert!(
        e.message.contains("missing.cu") && e.message.contains("does not exist"),
        "{e}"
    );
    let e = fx.build().dir("cu").try_compile().unwrap_err();
    assert_eq!(e.code, "no-cuda-sources");
    assert!(e.message.contains("holds no .cu files"), "{e}");
    assert!(fx.take_log().is_empty());
}

#[test]
fn syntax_error_shows_file_line_and_command() {
    let Some(fx) = fixture(&["vector_add.cu"]) else {
        return;
    };
    std::fs::write(
        fx.pkg().join("cu/bad.cu"),
        "extern \"C\" __global__ void k(float* x) {\n  x[0] = 1.0f\n}\n",
    )
    .unwrap();
    let e = fx.build().dir("cu").try_compile().unwrap_err();
    assert_eq!(e.code, "nvcc-failed");
    assert!(e.message.contains("cu/bad.cu"), "{e}");
    let shown = e.to_string();
    assert!(
        shown.contains("bad.cu(3): error: expected a \";\""),
        "{shown}"
    );
    assert!(
        shown.contains("command: ") && shown.contains("-fatbin") && shown.contains("bad.cu"),
        "{shown}"
    );
    // The command names the real output, not a temporary file.
    assert!(
        shown.contains("cuda-build/kernels/bad.fatbin") && !shown.contains(".tmp-"),
        "{shown}"
    );
    // The command shown reproduces the failure when run by hand (through a
    // shell, as a user would paste it): same error, not a missing directory.
    let detail = e.detail.clone().unwrap_or_default();
    let command = detail
        .lines()
        .find_map(|l| l.strip_prefix("command: "))
        .unwrap_or_else(|| panic!("no command line in {detail}"));
    let by_hand =
        cuda_toolchain::process::run("sh", ["-c", command], Duration::from_secs(120)).unwrap();
    assert!(!by_hand.status.success());
    assert!(
        by_hand
            .combined()
            .contains("bad.cu(3): error: expected a \";\""),
        "{}",
        by_hand.combined()
    );
    // The good source was still built and recorded: fixing bad.cu compiles only it.
    std::fs::write(
        fx.pkg().join("cu/bad.cu"),
        "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }\n",
    )
    .unwrap();
    fx.take_log();
    let a = fx.build().dir("cu").try_compile().unwrap();
    assert_eq!(fx.compiled(), ["bad.cu"]);
    assert_eq!(a.stats.up_to_date, 1);
    // No cache entry was made for the failure.
    assert!(walk(&fx.cache().join("v1/tmp")).is_empty());
}

#[test]
fn missing_include_dir_and_rejected_flag() {
    let Some(fx) = fixture(&["vector_add.cu"]) else {
        return;
    };
    let e = fx
        .build()
        .dir("cu")
        .include("no/such/dir")
        .try_compile()
        .unwrap_err();
    assert_eq!(e.code, "include-dir-missing");
    assert!(e.message.contains("no/such/dir"), "{e}");
    let e = fx
        .build()
        .dir("cu")
        .flag("--no-such-flag")
        .try_compile()
        .unwrap_err();
    assert_eq!(e.code, "nvcc-failed");
    let shown = e.to_string();
    assert!(
        shown.contains("--no-such-flag") && shown.contains("Unknown option"),
        "{shown}"
    );
}

/// A tmpfs mounted for the test (root only); unmounted on drop.
struct Mount(PathBuf);
impl Mount {
    fn tmpfs(at: &Path, opts: &str) -> Option<Mount> {
        std::fs::create_dir_all(at).ok()?;
        let out = cuda_toolchain::process::run(
            "mount",
            [
                "-t".as_ref(),
                "tmpfs".as_ref(),
                "-o".as_ref(),
                opts.as_ref(),
                "tmpfs".as_ref(),
                at.as_os_str(),
            ],
            Duration::from_secs(10),
        )
        .ok()?;
        out.status.success().then(|| Mount(at.to_path_buf()))
    }
}
impl Drop for Mount {
    fn drop(&mut self) {
        let _ =
            cuda_toolchain::process::run("umount", [self.0.as_os_str()], Duration::from_secs(10));
    }
}

#[test]
fn unwritable_out_dir() {
    let Some(fx) = fixture(&["vector_add.cu"]) else {
        return;
    };
    use std::os::unix::fs::PermissionsExt;
    let ro = fx.root().join("ro");
    std::fs::create_dir_all(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    // Root ignores permission bits; then a read-only tmpfs stands in.
    let _mount = if std::fs::write(ro.join("probe"), b"").is_ok() {
        let _ = std::fs::remove_file(ro.join("probe"));
        match Mount::tmpfs(&ro, "ro,size=1m") {
            Some(m) => Some(m),
            None => {
                eprintln!("skipped unwritable_out_dir: running as root and cannot mount a read-only tmpfs");
                return;
            }
        }
    } else {
        None
    };
    let e = fx
        .build()
        .dir("cu")
        .out_dir(ro.join("out"))
        .try_compile()
        .unwrap_err();
    assert_eq!(e.code, "out-dir-not-writable", "{e}");
    assert!(e.message.contains(&*ro.to_string_lossy()), "{e}");
    assert!(
        fx.take_log().is_empty(),
        "nothing compiled into a directory that cannot take it"
    );
}

#[test]
fn disk_full_is_reported_and_leaves_nothing_trusted() {
    let Some(fx) = fixture(&["sgemm.cu"]) else {
        return;
    };
    // Simulated ENOSPC on our own writes (works without root).
    let e = fx
        .build()
        .dir("cu")
        .simulate_write_error(28)
        .try_compile()
        .unwrap_err();
    assert_eq!(e.code, "disk-full", "{e}");
    assert!(e.message.contains("no space left on device"), "{e}");
    assert!(!fx.out().join("kernels.rs").exists());
    assert!(!fx.out().join("cuda-build/kernels/sgemm.fatbin").exists());

    // A real full file system, when a tmpfs can be mounted (root).
    let small = fx.root().join("small");
    let Some(_m) = Mount::tmpfs(&small, "size=8k") else {
        eprintln!("real ENOSPC part skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    let e = fx
        .build()
        .dir("cu")
        .out_dir(&small)
        .no_cache()
        .try_compile()
        .unwrap_err();
    let shown = e.to_string();
    assert_eq!(e.code, "disk-full", "{shown}");
    assert!(
        shown.contains("sgemm.cu") && shown.contains("command: "),
        "{shown}"
    );
    // Nothing half-written is left where a later build would trust it.
    let leftovers: Vec<PathBuf> = walk(&small)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "fatbin" || x == "rs"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn sccache_style_wrapper_runs_nvcc() {
    let Some(fx) = fixture(&["vector_add.cu"]) else {
        return;
    };
    let wlog = fx.root().join("wrapper.log");
    let wrapper = fx.root().join("bin/fake-sccache");
    workspace_tests::write_script(
        &wrapper,
        &format!("echo \"$1\" >> '{}'\nexec \"$@\"", wlog.display()),
    );
    let env = fx.env().set(Var::CudaBuildWrapper, &wrapper);
    let a = fx
        .build()
        .dir("cu")
        .env(env)
        .no_cache()
        .try_compile()
        .unwrap();
    assert_eq!(a.stats.compiled, 1);
    let logged = std::fs::read_to_string(&wlog).unwrap();
    assert_eq!(
        logged.trim(),
        fx.tk.nvcc.to_string_lossy(),
        "the wrapper was given nvcc as its first argument"
    );
    let _ = &fx.real_root;
}

#[test]
fn glob_exclude_and_colliding_stems() {
    let Some(fx) = fixture(&["vector_add.cu", "saxpy.cu", "scan.cu"]) else {
        return;
    };
    std::fs::create_dir_all(fx.pkg().join("cu/more")).unwrap();
    std::fs::write(
        fx.pkg().join("cu/more/saxpy.cu"),
        "extern \"C\" __global__ void other(){}\n",
    )
    .unwrap();
    let a = fx
        .build()
        .glob("cu/**/*.cu")
        .exclude("scan.cu")
        .try_compile()
        .unwrap();
    let mut mods: Vec<&str> = a.kernels.iter().map(|k| k.module.as_str()).collect();
    mods.sort();
    assert_eq!(mods, ["cu_saxpy", "more_saxpy", "vector_add"]);
    rustc_accepts(
        &a.module,
        "cu_saxpy::ENTRIES.len() + more_saxpy::ENTRIES.len()",
    );
}

#[test]
fn full_fixture_set_builds() {
    let Some(fx) = fixture(ALL) else { return };
    let a = fx.build().dir("cu").arch("80;90").try_compile().unwrap();
    assert_eq!(a.kernels.len(), ALL.len());
    for k in &a.kernels {
        assert!(
            !k.entries.is_empty(),
            "{} has no kernels",
            k.source.display()
        );
        let e = inspect::read_fatbin(&std::fs::read(&k.output).unwrap()).unwrap();
        assert_eq!(e.len(), 3, "{}", k.source.display());
    }
    rustc_accepts(&a.module, "conv2d::ENTRIES.len() + stencil::ENTRIES.len()");
}

#[test]
fn typed_launchers_are_spliced_into_the_module_when_asked() {
    let Some(fx) = fixture(&["vector_add.cu", "saxpy.cu"]) else {
        return;
    };
    // Off by default: feature unification must not change a module nobody asked to change.
    let a = fx.build().dir("cu").try_compile().unwrap();
    let plain = std::fs::read_to_string(&a.module).unwrap();
    assert!(!plain.contains("pub unsafe fn"), "{plain}");
    match fx.build().dir("cu").launchers(true).try_compile() {
        Ok(a) => {
            let text = std::fs::read_to_string(&a.module).unwrap();
            let va = &text[text.find("pub mod vector_add {").unwrap()..];
            let va = &va[..va.find("\n}\n").unwrap()];
            assert!(va.contains("pub unsafe fn vector_add("), "{va}");
            // Paths in the generated code are package-relative: the same module in every checkout.
            assert!(va.contains("(cu/vector_add.cu:"), "{va}");
            assert!(
                !text.contains(&fx.pkg().display().to_string()),
                "absolute source path in the module:\n{text}"
            );
            let sx = &text[text.find("pub mod saxpy {").unwrap()..];
            assert!(
                sx.contains("pub unsafe fn saxpy(") && sx.contains("pub unsafe fn daxpy("),
                "{sx}"
            );
            // The second run takes the launchers from the manifest: nothing compiled, same text.
            let b = fx.build().dir("cu").launchers(true).try_compile().unwrap();
            assert_eq!(b.stats.up_to_date, 2);
            assert_eq!(std::fs::read_to_string(&b.module).unwrap(), text);

            // After a clean build (no manifest), and in a checkout at another
            // path, the launchers come from the cache's record, not from
            // parsing again: a marker put into the record shows up.
            let records: Vec<PathBuf> = walk(&fx.cache().join("v1/launchers"))
                .into_iter()
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect();
            assert_eq!(records.len(), 1, "{records:?}");
            let record = std::fs::read_to_string(&records[0]).unwrap();
            let marker = "// marker: from the cache";
            let tampered =
                record.replacen("pub unsafe fn", &format!("{marker}\\npub unsafe fn"), 1);
            assert_ne!(tampered, record);
            std::fs::write(&records[0], tampered).unwrap();
            let elsewhere = fx.root().join("elsewhere");
            workspace_tests::copy_dir(&fx.pkg(), &elsewhere);
            let build_in = |pkg: &Path, out: &str, cache: PathBuf| {
                let mut b = fx.build();
                b.env(Env::empty().set(Var::CargoManifestDir, pkg))
                    .out_dir(fx.root().join(out))
                    .cache_dir(cache)
                    .dir("cu")
                    .launchers(true);
                let a = b.try_compile().unwrap();
                // The images' paths differ (include_bytes! of OUT_DIR): the rest must not.
                let module = std::fs::read_to_string(&a.module).unwrap();
                (a.stats, module.replace(&format!("/{out}/"), "/out/"))
            };
            std::fs::remove_dir_all(fx.out()).unwrap();
            for (pkg, out) in [(fx.pkg(), "out"), (elsewhere.clone(), "out-elsewhere")] {
                let (stats, module) = build_in(&pkg, out, fx.cache());
                assert_eq!(stats.from_cache, 2, "{}", pkg.display());
                assert!(module.contains(marker), "{}:\n{module}", pkg.display());
                assert_eq!(module.replace(&format!("{marker}\n    "), ""), text);
            }
            // The control: with an empty cache the sources are parsed again.
            let (stats, module) = build_in(&elsewhere, "out-uncached", fx.root().join("empty"));
            assert_eq!(stats.compiled, 2);
            assert_eq!(module, text);
        }
        Err(e) if e.code == "libclang-not-found" => {
            eprintln!("skipped launcher splice: {}", e.message);
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn a_hung_nvcc_is_killed_and_leaves_nothing_trusted() {
    let Some(fx) = fixture(&["vector_add.cu"]) else {
        return;
    };
    // An nvcc that writes half an output and an intermediate in its TMPDIR
    // (as nvcc's tmpxft_* files), records where that was, then hangs.
    let slow = fx.root().join("bin/slow-nvcc");
    let seen = fx.root().join("tmpdir-seen");
    workspace_tests::write_script(
        &slow,
        &format!(
            "echo \"$TMPDIR\" > '{}'\ntouch \"${{TMPDIR:-/tmp}}/tmpxft_fake_{}\"\nout=''\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=\"$2\"; shift; done\nprintf 'half' > \"$out\"\nexec sleep 30",
            seen.display(),
            std::process::id()
        ),
    );
    let mut tk = fx.tk.clone();
    tk.nvcc = slow;
    let env = fx.env().set(Var::CudaBuildTimeout, "1");
    let start = std::time::Instant::now();
    let e = fx
        .build()
        .dir("cu")
        .toolkit(tk)
        .env(env)
        .try_compile()
        .unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(20));
    assert_eq!(e.code, "nvcc-timeout", "{e}");
    assert!(e.to_string().contains("CUDA_BUILD_TIMEOUT"), "{e}");
    // Neither OUT_DIR nor the cache holds the half-written file.
    let kept: Vec<PathBuf> = walk(fx.root())
        .into_iter()
        .filter(|p| std::fs::read(p).is_ok_and(|b| b == b"half"))
        .collect();
    assert!(kept.is_empty(), "{kept:?}");
    // nvcc's TMPDIR was the job's own directory, and it is gone with its intermediates.
    let tmpdir = std::fs::read_to_string(&seen).unwrap();
    let tmpdir = Path::new(tmpdir.trim());
    assert!(
        tmpdir.starts_with(fx.root()),
        "nvcc's TMPDIR was {}",
        tmpdir.display()
    );
    assert!(!tmpdir.exists(), "{} was left behind", tmpdir.display());
    // The next (working) build compiles for real.
    let a = fx.build().dir("cu").try_compile().unwrap();
    assert_eq!(a.stats.compiled, 1);
}

#[test]
fn an_nvcc_that_cannot_start_is_explained() {
    let Some(fx) = fixture(&["vector_add.cu"]) else {
        return;
    };
    let mut tk = fx.tk.clone();
    tk.nvcc = fx.root().join("bin/no-such-nvcc");
    let e = fx.build().dir("cu").toolkit(tk).try_compile().unwrap_err();
    assert_eq!(e.code, "nvcc-not-found", "{e}");
    assert!(e.message.contains("no-such-nvcc"), "{e}");
    // Present but not executable.
    let plain = fx.root().join("bin/plain-file");
    std::fs::write(&plain, "not a program").unwrap();
    let mut tk = fx.tk.clone();
    tk.nvcc = plain;
    let e = fx.build().dir("cu").toolkit(tk).try_compile().unwrap_err();
    assert_eq!(e.code, "nvcc-not-executable", "{e}");
}

/// Child half of `two_processes_compile_the_same_source_at_once`: a build
/// script stand-in, configured through `CB_TEST_*` variables.
#[test]
#[ignore = "run as a child process by two_processes_compile_the_same_source_at_once"]
fn child_build_script() {
    let var = |n: &str| PathBuf::from(std::env::var_os(n).unwrap_or_else(|| panic!("{n} unset")));
    let nvcc = var("CB_TEST_NVCC");
    let root = nvcc.parent().unwrap().parent().unwrap().to_path_buf();
    let tk = Toolkit {
        root: root.clone(),
        nvcc,
        version: Some(semver::Version::new(13, 0, 88)),
        found_via: FoundVia::Explicit,
        include_dirs: vec![root.join("include")],
        lib_dirs: Vec::new(),
        problems: Vec::new(),
    };
    let a = Build::new()
        .env(Env::empty().set(Var::CargoManifestDir, var("CB_TEST_PKG")))
        .toolkit(tk)
        .out_dir(var("CB_TEST_OUT"))
        .cache_dir(var("CB_TEST_CACHE"))
        .emit_cargo(false)
        .arch("90")
        .dir("cu")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    println!(
        "CHILD-OK compiled={} cached={}",
        a.stats.compiled, a.stats.from_cache
    );
}

/// Child half of `compile_unwinds_with_the_error_once_like_cc`: a
/// build script calling `Build::compile()` with cargo output on.
#[test]
#[ignore = "run as a child process by compile_unwinds_with_the_error_once_like_cc"]
fn child_compile_build_script() {
    let var = |n: &str| PathBuf::from(std::env::var_os(n).unwrap_or_else(|| panic!("{n} unset")));
    let nvcc = var("CB_TEST_NVCC");
    let root = nvcc.parent().unwrap().parent().unwrap().to_path_buf();
    let tk = Toolkit {
        root: root.clone(),
        nvcc,
        version: Some(semver::Version::new(13, 0, 88)),
        found_via: FoundVia::Explicit,
        include_dirs: vec![root.join("include")],
        lib_dirs: Vec::new(),
        problems: Vec::new(),
    };
    let mut b = Build::new();
    b.env(Env::empty().set(Var::CargoManifestDir, var("CB_TEST_PKG")))
        .toolkit(tk)
        .out_dir(var("CB_TEST_OUT"))
        .no_cache()
        .arch("90")
        .dir("cu");
    if std::env::var_os("CB_TEST_TWO").is_some() {
        // Two builds of the same sources: every cargo: line still once.
        let mut ptx = b.clone();
        ptx.output(OutputKind::Ptx).module_name("ptx");
        let all = cuda_build::compile_all([&b, &ptx]);
        println!(
            "CHILD-OK compiled={}",
            all.iter().map(|a| a.stats.compiled).sum::<usize>()
        );
        return;
    }
    let a = b.compile();
    println!("CHILD-OK compiled={}", a.stats.compiled);
}

#[test]
fn compile_unwinds_with_the_error_once_like_cc() {
    let Some(fx) = fixture(&["vector_add.cu"]) else {
        return;
    };
    let exe = std::env::current_exe().unwrap();
    let run = || {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args([
            "--ignored",
            "--exact",
            "child_compile_build_script",
            "--nocapture",
        ])
        .env("CB_TEST_NVCC", fx.real_root.join("bin/nvcc"))
        .env("CB_TEST_PKG", fx.pkg())
        .env("CB_TEST_OUT", fx.out())
        .env("RUST_BACKTRACE", "1");
        cuda_toolchain::process::run_command(&mut cmd, Duration::from_secs(300)).unwrap()
    };
    // Success: the rerun lines for the source and its headers are printed.
    let ok = run();
    assert!(ok.status.success(), "{}", ok.combined());
    assert!(
        ok.stdout.contains("CHILD-OK compiled=1"),
        "{}",
        ok.combined()
    );
    assert!(
        ok.stdout.contains("cargo:rerun-if-changed=") && ok.stdout.contains("common.cuh"),
        "{}",
        ok.stdout
    );
    assert!(ok.stdout.contains("cargo:rerun-if-env-changed=CUDA_HOME"));

    // Two builds in one script: each cargo: line is printed once.
    let two = {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args([
            "--ignored",
            "--exact",
            "child_compile_build_script",
            "--nocapture",
        ])
        .env("CB_TEST_NVCC", fx.real_root.join("bin/nvcc"))
        .env("CB_TEST_PKG", fx.pkg())
        .env("CB_TEST_OUT", fx.root().join("out-two"))
        .env("CB_TEST_TWO", "1");
        cuda_toolchain::process::run_command(&mut cmd, Duration::from_secs(300)).unwrap()
    };
    assert!(
        two.stdout.contains("CHILD-OK compiled=2"),
        "{}",
        two.combined()
    );
    let lines: Vec<&str> = two
        .stdout
        .lines()
        .filter(|l| l.starts_with("cargo:"))
        .collect();
    let distinct: std::collections::HashSet<&&str> = lines.iter().collect();
    assert_eq!(lines.len(), distinct.len(), "{}", two.stdout);
    assert_eq!(
        two.stdout
            .matches("cargo:rerun-if-env-changed=CUDA_HOME")
            .count(),
        1
    );
    assert!(two.stdout.contains("common.cuh"), "{}", two.stdout);

    std::fs::write(
        fx.pkg().join("cu/bad.cu"),
        "extern \"C\" __global__ void k(float* x) {\n  x[0] = 1.0f\n}\n",
    )
    .unwrap();
    let bad = run();
    // compile() prints the error and unwinds like cc (a build script then
    // exits 101); it skips the panic hook, so no "panicked at" noise.
    assert_eq!(bad.status.code(), Some(101), "{}", bad.combined());
    assert!(!bad.combined().contains("panicked"), "{}", bad.combined());
    assert_eq!(
        bad.stderr.matches("error[nvcc-failed]").count(),
        1,
        "{}",
        bad.stderr
    );
    assert_eq!(
        bad.stderr.matches("expected a \";\"").count(),
        1,
        "{}",
        bad.stderr
    );
    assert!(bad.stderr.contains("| command: "), "{}", bad.stderr);
    assert!(bad.stderr.contains("bad.cu(3): error"), "{}", bad.stderr);
    // Nothing on stdout would help next to the error (cargo reruns a failed
    // build script anyway): no flood of rerun-if-changed lines.
    assert!(!bad.stdout.contains("cargo:rerun-if"), "{}", bad.stdout);
}

#[test]
fn two_processes_compile_the_same_source_at_once() {
    let Some(fx) = fixture(&["sgemm.cu", "conv2d.cu"]) else {
        return;
    };
    let exe = std::env::current_exe().unwrap();
    let outs: Vec<cuda_toolchain::process::Output> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|i| {
                let (fx, exe) = (&fx, &exe);
                s.spawn(move || {
                    let mut cmd = std::process::Command::new(exe);
                    cmd.args(["--ignored", "--exact", "child_build_script", "--nocapture"])
                        .env("CB_TEST_NVCC", fx.real_root.join("bin/nvcc"))
                        .env("CB_TEST_PKG", fx.pkg())
                        .env("CB_TEST_OUT", fx.root().join(format!("proc{i}")))
                        .env("CB_TEST_CACHE", fx.cache());
                    cuda_toolchain::process::run_command(&mut cmd, Duration::from_secs(300))
                        .unwrap()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for o in &outs {
        assert!(
            o.status.success() && o.stdout.contains("CHILD-OK"),
            "{}",
            o.combined()
        );
    }
    let read = |i: usize| -> Vec<Vec<u8>> {
        ["sgemm.fatbin", "conv2d.fatbin"]
            .iter()
            .map(|f| {
                std::fs::read(fx.root().join(format!("proc{i}/cuda-build/kernels/{f}"))).unwrap()
            })
            .collect()
    };
    assert_eq!(read(0), read(1));
    assert!(walk(&fx.cache().join("v1/tmp")).is_empty());
    // The cache entries both wrote are whole: a third build is served from them.
    let a = fx
        .build()
        .dir("cu")
        .out_dir(fx.root().join("third"))
        .try_compile()
        .unwrap();
    assert_eq!(a.stats.from_cache, 2);
}

#[test]
fn toolkit_discovered_from_cuda_home() {
    let Some(fx) = fixture(&["vector_add.cu"]) else {
        return;
    };
    let env = fx
        .env()
        .set(Var::CudaHome, &fx.real_root)
        .set(Var::CudaBuildCacheDir, fx.cache())
        .set(Var::CudaArchs, "80");
    let a = Build::new()
        .env(env)
        .out_dir(fx.out())
        .emit_cargo(false)
        .dir("cu")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(a.toolkit_version.as_deref(), Some("13.0.88"));
    // CUDA_ARCHS decided the plan (no Build::arch).
    assert_eq!(kernel(&a, "vector_add").archs, ["sm_80", "compute_80"]);
    assert!(
        fx.cache().join("v1/objects").is_dir(),
        "CUDA_BUILD_CACHE_DIR is honoured"
    );
}

#[test]
fn host_compiler_std_and_defines_reach_nvcc() {
    let Some(fx) = fixture(&["vector_add.cu"]) else {
        return;
    };
    let gxx = Path::new("/usr/bin/g++");
    if !gxx.exists() {
        eprintln!("skipped: /usr/bin/g++ not installed");
        return;
    }
    let env = fx.env().set(Var::NvccCcbin, gxx);
    fx.build()
        .dir("cu")
        .env(env)
        .std("17")
        .define("CB_TILE", "256")
        .define("FAST", None)
        .try_compile()
        .unwrap();
    let log = fx.take_log().join("\n");
    for want in [
        "-ccbin /usr/bin/g++",
        "-std=c++17",
        "-DCB_TILE=256",
        "-DFAST",
    ] {
        assert!(log.contains(want), "{want} missing from: {log}");
    }
    // Build::ccbin wins over NVCC_CCBIN, and a different host compiler is a different key.
    let env = fx.env().set(Var::NvccCcbin, gxx);
    let a = fx
        .build()
        .dir("cu")
        .env(env)
        .ccbin("/usr/bin/c++")
        .std("17")
        .define("CB_TILE", "256")
        .define("FAST", None)
        .try_compile()
        .unwrap();
    assert_eq!(a.stats.compiled, 1);
    assert!(fx.take_log().join("\n").contains("-ccbin /usr/bin/c++"));
}

#[test]
fn a_broken_toolkit_failure_is_explained_by_the_diagnosis_engine() {
    let Some(fx) = fixture(&["vector_add.cu"]) else {
        return;
    };
    let Some(mixed) = workspace_tests::mixed_root() else {
        return;
    };
    let tk = Toolkit {
        root: mixed.clone(),
        nvcc: mixed.join("bin/nvcc"),
        version: Some(semver::Version::new(13, 0, 88)),
        found_via: FoundVia::Explicit,
        include_dirs: vec![mixed.join("include")],
        lib_dirs: Vec::new(),
        problems: Vec::new(),
    };
    let e = fx.build().dir("cu").toolkit(tk).try_compile().unwrap_err();
    assert_eq!(e.code, "nvcc-failed");
    let shown = e.to_string();
    // nvcc's own words, then the engine's explanation with its stable code.
    assert!(shown.contains("Unsupported .version 9.5"), "{shown}");
    let detail = e.detail.as_deref().unwrap_or("");
    let explained = detail
        .lines()
        .any(|l| l.starts_with("error[") && l.contains("]: "));
    assert!(explained, "no diagnosis in:\n{shown}");
    // Nothing was cached for the failure.
    assert!(
        !fx.cache().join("v1/objects").exists() || walk(&fx.cache().join("v1/objects")).is_empty()
    );
}

#[test]
fn paths_with_spaces_and_quotes() {
    let Some(fx) = fixture(&[]) else { return };
    let dir = fx.pkg().join("cu dir's");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("my header.cuh"),
        "#pragma once\n#define SCALE 2.0f\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("with space.cu"),
        "#include \"my header.cuh\"\nextern \"C\" __global__ void scale(float* x) { x[threadIdx.x] *= SCALE; }\n",
    )
    .unwrap();
    let a = fx.build().dir("cu dir's").try_compile().unwrap();
    assert_eq!(kernel(&a, "with_space").entries, ["scale"]);
    rustc_accepts(&a.module, "with_space::IMAGE.len()");
    fx.take_log();
    // The header was found through nvcc's depfile despite the space: editing it recompiles.
    std::fs::write(
        dir.join("my header.cuh"),
        "#pragma once\n#define SCALE 3.0f\n",
    )
    .unwrap();
    let a = fx.build().dir("cu dir's").try_compile().unwrap();
    assert_eq!(a.stats.compiled, 1);
    assert_eq!(fx.take_log().len(), 1);
}

// ---- issue 18: one pool, cheap reruns, reproducible outputs, porting, validation ----

/// Writes `cu/<name>` with a kernel `k_<stem>` padded with `pad` comment bytes.
fn write_kernel(fx: &Fx, name: &str, pad: usize, salt: &str) {
    let stem = name.trim_end_matches(".cu");
    std::fs::write(
        fx.pkg().join("cu").join(name),
        format!(
            "// {salt}\n// {}\nextern \"C\" __global__ void k_{stem}(float* x) {{ x[threadIdx.x] += 1.0f; }}\n",
            "x".repeat(pad)
        ),
    )
    .unwrap();
}

/// A toolkit whose nvcc sleeps 2 s before compiling any source named `slow*`.
fn slow_for(fx: &Fx) -> Toolkit {
    let wrapper = fx.root().join("bin/nvcc-slow");
    workspace_tests::write_script(
        &wrapper,
        &format!(
            "case \"$*\" in *slow*.cu*) sleep 2;; esac\nexec '{}' \"$@\"",
            fx.tk.nvcc.display()
        ),
    );
    let mut tk = fx.tk.clone();
    tk.nvcc = wrapper;
    tk
}

#[test]
fn several_builds_share_one_pool_longest_job_first() {
    let Some(fx) = fixture(&[]) else { return };
    std::fs::create_dir_all(fx.pkg().join("lib")).unwrap();
    // PTX build: slow.cu (small) and big.cu (large); library build: mid.cu.
    write_kernel(&fx, "slow.cu", 10, "v1");
    write_kernel(&fx, "big.cu", 4000, "v1");
    std::fs::write(
        fx.pkg().join("lib/mid.cu"),
        format!(
            "// {}\nextern \"C\" __global__ void k_mid(float* x) {{ x[0] = 2.0f; }}\n",
            "y".repeat(2000)
        ),
    )
    .unwrap();
    // A short source that pulls in a large header: by its own size it would
    // start last; with the header it includes, it starts first.
    std::fs::write(
        fx.pkg().join("cu/heavy.cuh"),
        format!("// {}\n#define HEAVY 3.0f\n", "z".repeat(8000)),
    )
    .unwrap();
    std::fs::write(
        fx.pkg().join("cu/templ.cu"),
        "#include \"heavy.cuh\"\nextern \"C\" __global__ void k_templ(float* x) { x[0] = HEAVY; }\n",
    )
    .unwrap();
    let tk = slow_for(&fx);
    let env = fx.env().set(Var::NumJobs, "1");
    let builds = |salt: &str| {
        if !salt.is_empty() {
            write_kernel(&fx, "slow.cu", 10, salt);
            write_kernel(&fx, "big.cu", 4000, salt);
        }
        let mut ptx = fx.build();
        ptx.env(env.clone())
            .toolkit(tk.clone())
            .dir("cu")
            .output(OutputKind::Ptx)
            .module_name("ptx");
        let mut lib = fx.build();
        lib.env(env.clone())
            .toolkit(tk.clone())
            .dir("lib")
            .output(OutputKind::StaticLib)
            .module_name("lib");
        (ptx, lib)
    };
    // Cold: no durations yet, so by size with included headers, times the
    // device passes of the targets, across both builds (one pool): the
    // library's mid.cu, half big.cu's size but an object (cicc, then ptxas
    // for sm_90), runs before big.cu's PTX (cicc alone).
    let (ptx, lib) = builds("");
    let all = cuda_build::try_compile_all([&ptx, &lib]).unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].kernels.len(), 3);
    assert!(all[1].library.as_ref().unwrap().is_file());
    let order: Vec<String> = fx
        .take_log()
        .iter()
        .filter_map(|l| {
            l.split_whitespace()
                .rfind(|a| a.ends_with(".cu"))
                .map(str::to_string)
        })
        .collect();
    assert_eq!(
        order,
        ["cu/templ.cu", "lib/mid.cu", "cu/big.cu", "cu/slow.cu"],
        "relative paths, by size with included headers, times device passes"
    );
    // Durations are recorded in the cache; after an edit, slow.cu (2 s) starts first.
    let records = walk(&fx.cache().join("v1/durations"));
    assert_eq!(records.len(), 4, "{records:?}");
    let (ptx, lib) = builds("v2");
    cuda_build::try_compile_all([&ptx, &lib]).unwrap();
    assert_eq!(fx.compiled(), ["big.cu", "slow.cu"]);
    let log_order = {
        let (ptx, lib) = builds("v3");
        cuda_build::try_compile_all([&ptx, &lib]).unwrap();
        fx.take_log()
    };
    let first = log_order
        .iter()
        .find_map(|l| l.split_whitespace().rfind(|a| a.ends_with(".cu")))
        .unwrap();
    assert_eq!(first, "cu/slow.cu", "{log_order:?}");

    // A corrupt duration record is ignored with a note; the build succeeds.
    for r in walk(&fx.cache().join("v1/durations")) {
        std::fs::write(r, "{\"secs\": \"soon\"").unwrap();
    }
    let (ptx, lib) = builds("v4");
    let all = cuda_build::try_compile_all([&ptx, &lib]).unwrap();
    assert_eq!(all[0].stats.compiled, 2);
    assert!(
        all[0]
            .warnings
            .iter()
            .any(|w| w.contains("corrupt job-duration record")),
        "{:?}",
        all[0].warnings
    );
}

#[test]
fn two_builds_with_one_module_name_are_refused_naming_both() {
    let Some(fx) = fixture(&["vector_add.cu", "saxpy.cu"]) else {
        return;
    };
    let mut a = fx.build();
    a.file("cu/vector_add.cu").output(OutputKind::Ptx);
    let mut b = fx.build();
    b.file("cu/saxpy.cu");
    let e = cuda_build::try_compile_all([&a, &b]).unwrap_err();
    assert_eq!(e.code, "module-name-collision", "{e}");
    assert!(
        e.message.contains("build #1 (ptx") && e.message.contains("build #2 (fatbin"),
        "{e}"
    );
    assert!(e.message.contains("module name `kernels`"), "{e}");
    assert!(
        fx.take_log().is_empty(),
        "nothing ran, not even an arch query"
    );
}

#[test]
fn output_layout_candle_style_and_refusals() {
    let Some(fx) = fixture(&["vector_add.cu", "saxpy.cu"]) else {
        return;
    };
    // candle's layout: $OUT_DIR/<stem>.ptx, no generated module.
    let a = fx
        .build()
        .dir("cu")
        .output(OutputKind::Ptx)
        .output_dir(".")
        .output_names(cuda_build::compile::OutputNames::SourceStem)
        .generate_module(false)
        .try_compile()
        .unwrap();
    let ptx = std::fs::read_to_string(fx.out().join("vector_add.ptx")).unwrap();
    assert!(ptx.contains(".entry vectorAdd"), "{ptx}");
    assert!(fx.out().join("saxpy.ptx").is_file());
    assert!(!fx.out().join("kernels.rs").exists(), "module turned off");
    assert_eq!(a.stats.compiled, 2);
    // A no-op rerun with that layout compiles nothing.
    let a = fx
        .build()
        .dir("cu")
        .output(OutputKind::Ptx)
        .output_dir(".")
        .output_names(cuda_build::compile::OutputNames::SourceStem)
        .generate_module(false)
        .try_compile()
        .unwrap();
    assert_eq!(a.stats.up_to_date, 2);

    // An output directory in the package's sources is refused.
    let e = fx
        .build()
        .dir("cu")
        .output_dir(fx.pkg().join("cu"))
        .try_compile()
        .unwrap_err();
    assert_eq!(e.code, "output-overwrites-source", "{e}");
    assert!(e.message.contains("Build::output_dir"), "{e}");

    // Two sources with one stem under SourceStem: refused, naming both.
    std::fs::create_dir_all(fx.pkg().join("cu/sub")).unwrap();
    std::fs::copy(
        fx.pkg().join("cu/saxpy.cu"),
        fx.pkg().join("cu/sub/saxpy.cu"),
    )
    .unwrap();
    let e = fx
        .build()
        .dir("cu")
        .output_names(cuda_build::compile::OutputNames::SourceStem)
        .try_compile()
        .unwrap_err();
    assert_eq!(e.code, "output-collision", "{e}");
    assert!(
        e.message.contains("cu/saxpy.cu") && e.message.contains("cu/sub/saxpy.cu"),
        "{e}"
    );
}

#[test]
fn plan_before_compiling_and_msvc_host_flags() {
    let Some(fx) = fixture(&["vector_add.cu"]) else {
        return;
    };
    let plan = fx.build().arch("80;90").plan().unwrap();
    assert_eq!(
        plan.sass.iter().map(|a| a.sm_name()).collect::<Vec<_>>(),
        ["sm_80", "sm_90"]
    );
    assert!(fx.compiled().is_empty(), "planning compiles nothing");

    let a = fx
        .build()
        .dir("cu")
        .output(OutputKind::StaticLib)
        .target("x86_64-pc-windows-msvc")
        .cudart(cuda_build::compile::Cudart::Shared)
        .try_compile()
        .unwrap();
    let log = fx.take_log().join("\n");
    assert!(!log.contains("-fPIC"), "{log}");
    assert!(kernel(&a, "vector_add").output.ends_with("vector_add.obj"));
    let a = fx
        .build()
        .dir("cu")
        .output(OutputKind::StaticLib)
        .module_name("gnu")
        .try_compile()
        .unwrap();
    assert!(kernel(&a, "vector_add").output.ends_with("vector_add.o"));
    assert!(fx.take_log().join("\n").contains("-Xcompiler -fPIC"));
}

/// An nvcc that runs the real one, then damages its output (`mode`: truncate or delete).
fn damaging_nvcc(fx: &Fx, mode: &str) -> Toolkit {
    let script = fx.root().join(format!("bin/nvcc-{mode}"));
    let damage = match mode {
        "truncate" => "head -c 100 \"$out\" > \"$out.cut\" && mv \"$out.cut\" \"$out\"",
        _ => "rm -f \"$out\"",
    };
    workspace_tests::write_script(
        &script,
        &format!(
            "out=''\nprev=''\nfor a in \"$@\"; do [ \"$prev\" = -o ] && out=\"$a\"; prev=\"$a\"; done\n'{}' \"$@\" || exit $?\n[ -n \"$out\" ] && {damage}\nexit 0",
            fx.tk.nvcc.display()
        ),
    );
    let mut tk = fx.tk.clone();
    tk.nvcc = script;
    tk
}

#[test]
fn an_nvcc_that_exits_0_with_a_bad_output_is_an_error() {
    let Some(fx) = fixture(&["vector_add.cu"]) else {
        return;
    };
    for (mode, kind, why) in [
        ("truncate", OutputKind::Fatbin, "is not a valid fatbin"),
        ("truncate", OutputKind::Ptx, "is not a valid PTX file"),
        ("truncate", OutputKind::Cubin, "is not a valid cubin"),
        (
            "truncate",
            OutputKind::StaticLib,
            "is not a valid object file",
        ),
        ("delete", OutputKind::Fatbin, "was not written"),
    ] {
        let tk = damaging_nvcc(&fx, mode);
        let e = fx
            .build()
            .dir("cu")
            .output(kind)
            .toolkit(tk.clone())
            .try_compile()
            .unwrap_err();
        assert_eq!(e.code, "nvcc-bad-output", "{mode} {kind:?}: {e}");
        assert!(e.message.contains(why), "{e}");
        assert!(
            e.message.contains(&*tk.nvcc.to_string_lossy()),
            "names the compiler: {e}"
        );
        assert!(
            e.message.contains("cuda-build/kernels/vector_add."),
            "the real output name: {e}"
        );
        assert!(!e.message.contains(".tmp-"), "{e}");
    }
    // Nothing bad was cached: the real nvcc builds for real next.
    assert!(
        !fx.cache().join("v1/objects").exists() || walk(&fx.cache().join("v1/objects")).is_empty()
    );
    let a = fx.build().dir("cu").try_compile().unwrap();
    assert_eq!(a.stats.compiled, 1);
    assert_eq!(kernel(&a, "vector_add").entries, ["vectorAdd"]);
}

#[test]
fn outputs_are_identical_across_checkout_paths() {
    let Some(fx) = fixture(&["vector_add.cu", "reduction.cu"]) else {
        return;
    };
    // __FILE__ ends up in the image: the classic path leak.
    std::fs::write(
        fx.pkg().join("cu/where.cu"),
        "#include <cstdio>\nextern \"C\" __global__ void where_am_i() { printf(\"%s:%d\\n\", __FILE__, __LINE__); }\n",
    )
    .unwrap();
    // Internal linkage: nvcc names these after a hash of the source's
    // absolute path (its module id) unless told the relative one.
    std::fs::write(
        fx.pkg().join("cu/internal.cu"),
        r#"namespace {
__device__ __noinline__ int twice(int x) { return 2 * x; }
__attribute__((noinline)) int host_twice(int x) { return 2 * x; }
}
static __device__ __noinline__ int thrice(int x) { return 3 * x; }
extern "C" __global__ void internal_names(int* p) { *p = twice(*p) + thrice(*p); }
extern "C" int internal_names_host(int x) { return host_twice(x); }
"#,
    )
    .unwrap();
    let a_pkg = fx.root().join("a/pkg");
    let b_pkg = fx.root().join("somewhere/much/deeper/b/pkg");
    workspace_tests::copy_dir(&fx.pkg(), &a_pkg);
    workspace_tests::copy_dir(&fx.pkg(), &b_pkg);
    let build = |pkg: &Path, out: &str, kind: OutputKind, cache: bool| {
        let mut b = fx.build();
        b.env(Env::empty().set(Var::CargoManifestDir, pkg))
            .out_dir(fx.root().join(out))
            .arch("80;90")
            .output(kind)
            .module_name(kind.as_str())
            .dir("cu");
        if !cache {
            b.no_cache();
        }
        b.try_compile().unwrap()
    };
    // A static library's objects name nvcc's temporary file (from its pid):
    // compared as prebuilt verify compares them, with that masked.
    let bytes = |a: &Artifacts, kind: OutputKind| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<_> = a
            .kernels
            .iter()
            .flat_map(|k| k.outputs.iter())
            .chain(&a.library)
            .map(|p| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    comparable(kind.as_str(), &std::fs::read(p).unwrap()),
                )
            })
            .collect();
        v.sort();
        v.dedup();
        v
    };
    for kind in [
        OutputKind::Ptx,
        OutputKind::Cubin,
        OutputKind::Fatbin,
        OutputKind::StaticLib,
    ] {
        let a = build(&a_pkg, "out-a", kind, false);
        let b = build(&b_pkg, "out-b", kind, false);
        assert_eq!(b.stats.compiled, 4, "{kind:?}: compiled, not cached");
        let (ba, bb) = (bytes(&a, kind), bytes(&b, kind));
        assert!(!ba.is_empty());
        assert_eq!(ba.len(), bb.len());
        let internal = ba.iter().any(|(_, x)| {
            let text = String::from_utf8_lossy(x);
            text.contains("_INTERNAL_") || text.contains("_GLOBAL__N_")
        });
        assert!(internal, "{kind:?}: no internal-linkage name to compare");
        for ((na, xa), (nb, xb)) in ba.iter().zip(&bb) {
            assert_eq!(na, nb);
            assert!(xa == xb, "{kind:?}: {na} differs between the two checkouts");
        }
    }
    // A cache hit from one checkout is the other's exact output.
    let a = build(&a_pkg, "out-a2", OutputKind::Fatbin, true);
    assert_eq!(a.stats.compiled, 4);
    let b = build(&b_pkg, "out-b2", OutputKind::Fatbin, true);
    assert_eq!(b.stats.from_cache, 4);
    let fresh = build(&b_pkg, "out-b3", OutputKind::Fatbin, false);
    assert_eq!(
        bytes(&b, OutputKind::Fatbin),
        bytes(&fresh, OutputKind::Fatbin)
    );
}

/// A source that defines only templates has no ordinary external definition
/// for nvcc to name its internal entities after: nvcc 13.0 uses its process
/// id instead, and every compile differs. `Build::stable_module_ids` anchors
/// the name to the package and the source's relative path.
#[test]
fn stable_module_ids_make_template_only_sources_reproducible() {
    let Some(fx) = fixture(&[]) else {
        return;
    };
    std::fs::create_dir_all(fx.pkg().join("cu")).unwrap();
    std::fs::write(
        fx.pkg().join("cu/instance.cu"),
        r#"namespace {
__device__ __noinline__ int thrice(int x) { return 3 * x; }
}
template <typename T> __global__ void scale(T* p) { p[threadIdx.x] = thrice(p[threadIdx.x]); }
template __global__ void scale<int>(int*);
"#,
    )
    .unwrap();
    let a_pkg = fx.root().join("a/pkg");
    let b_pkg = fx.root().join("elsewhere/b/pkg");
    workspace_tests::copy_dir(&fx.pkg(), &a_pkg);
    workspace_tests::copy_dir(&fx.pkg(), &b_pkg);
    let build = |pkg: &Path, out: &str, kind: OutputKind, stable: bool, cache: bool| {
        let mut b = fx.build();
        b.env(
            Env::empty()
                .set(Var::CargoManifestDir, pkg)
                .set(Var::CargoPkgName, "templates")
                .set(Var::CargoPkgVersion, "0.1.0"),
        )
        .out_dir(fx.root().join(out))
        .arch("80")
        .output(kind)
        .module_name(kind.as_str())
        .stable_module_ids(stable)
        .dir("cu");
        if !cache {
            b.no_cache();
        }
        b.try_compile().unwrap()
    };
    let bytes = |a: &Artifacts, kind: OutputKind| -> Vec<u8> {
        let k = a.kernels.iter().flat_map(|k| k.outputs.iter());
        let p = k.chain(&a.library).next().expect("an output");
        comparable(kind.as_str(), &std::fs::read(p).unwrap())
    };
    let internal = |x: &[u8]| String::from_utf8_lossy(x).contains("_GLOBAL__N_");

    // What the setting is for: without it, two compiles of the one source
    // at the one path differ (docs/prebuilt.md, "Reproducible outputs").
    let x = bytes(
        &build(&a_pkg, "plain-1", OutputKind::Ptx, false, false),
        OutputKind::Ptx,
    );
    let y = bytes(
        &build(&a_pkg, "plain-2", OutputKind::Ptx, false, false),
        OutputKind::Ptx,
    );
    assert!(internal(&x), "no internal-linkage name to compare");
    assert!(x != y, "nvcc named the internal entities of a template-only source the same twice without an anchor");
    // `inspect --compare` sees that difference for what it is, in PTX and
    // in cubins (whose string tables shift when the pids' lengths differ).
    let cubin = |out: &str| {
        let a = build(&a_pkg, out, OutputKind::Cubin, false, false);
        std::fs::read(&a.kernels[0].outputs[0]).unwrap()
    };
    for (kind, x, y) in [
        ("PTX", x.clone(), y.clone()),
        ("cubin", cubin("plain-3"), cubin("plain-4")),
    ] {
        let sum = |b: &[u8]| compare::summarize(b).unwrap();
        let d = compare::compare(&sum(&x), &sum(&y));
        let aspects: Vec<_> = d.iter().map(|d| d.aspect).collect();
        assert_eq!(aspects, ["module-id"], "{kind}: {d:#?}");
        assert!(
            d[0].explanation.contains("Build::stable_module_ids"),
            "{kind}"
        );
    }

    for kind in [OutputKind::Ptx, OutputKind::Cubin, OutputKind::StaticLib] {
        let a = build(&a_pkg, &format!("a-{}", kind.as_str()), kind, true, false);
        let b = build(&b_pkg, &format!("b-{}", kind.as_str()), kind, true, false);
        assert_eq!(b.stats.compiled, 1, "{kind:?}: compiled, not cached");
        let (xa, xb) = (bytes(&a, kind), bytes(&b, kind));
        assert!(
            internal(&xa),
            "{kind:?}: no internal-linkage name to compare"
        );
        assert!(
            xa == xb,
            "{kind:?}: the anchored source differs between two compiles"
        );
        if kind == OutputKind::StaticLib {
            let text = String::from_utf8_lossy(&xa);
            assert!(
                text.contains("cuda_build_module_anchor_"),
                "the anchor symbol is in the object"
            );
        }
        // The anchor header is the build's own file, not an input: the
        // second build in the same place is up to date.
        let again = build(&a_pkg, &format!("a-{}", kind.as_str()), kind, true, false);
        assert_eq!(again.stats.up_to_date, 1, "{kind:?}: {:?}", again.stats);
    }

    // The key names the anchor, not where its header lies: a checkout
    // elsewhere hits the cache; the setting off is another key.
    let a = build(&a_pkg, "cache-a", OutputKind::Fatbin, true, true);
    assert_eq!(a.stats.compiled, 1);
    let b = build(&b_pkg, "cache-b", OutputKind::Fatbin, true, true);
    assert_eq!(b.stats.from_cache, 1, "{:?}", b.stats);
    let off = build(&b_pkg, "cache-off", OutputKind::Fatbin, false, true);
    assert_eq!(off.stats.compiled, 1, "{:?}", off.stats);
}

/// The dev profile's `-lineinfo` puts absolute paths into every output
/// (PTX `.file` lines, the cubin's `.debug_line`). Two checkouts at
/// different paths share one kernel cache: each one's outputs name only its
/// own paths. Without line info they still share every entry.
#[test]
fn line_info_never_names_another_checkout() {
    let Some(fx) = fixture(&["vector_add.cu"]) else {
        return;
    };
    let a_pkg = fx.root().join("a/pkg");
    let b_pkg = fx.root().join("b-somewhere-else/pkg");
    workspace_tests::copy_dir(&fx.pkg(), &a_pkg);
    workspace_tests::copy_dir(&fx.pkg(), &b_pkg);
    let build = |pkg: &Path, out: &str, kind: OutputKind, debug: &str| {
        let mut b = fx.build();
        b.env(
            Env::empty()
                .set(Var::CargoManifestDir, pkg)
                .set(Var::Debug, debug),
        )
        .out_dir(fx.root().join(out))
        .output(kind)
        .module_name(kind.as_str())
        .dir("cu");
        b.try_compile().unwrap()
    };
    let holds = |a: &Artifacts, needle: &Path| -> bool {
        let needle = needle.to_string_lossy().into_owned().into_bytes();
        a.kernels.iter().flat_map(|k| k.outputs.iter()).any(|p| {
            std::fs::read(p)
                .unwrap()
                .windows(needle.len())
                .any(|w| w == needle)
        })
    };
    for kind in [OutputKind::Ptx, OutputKind::Cubin, OutputKind::Fatbin] {
        let a = build(&a_pkg, &format!("dev-a-{}", kind.as_str()), kind, "true");
        let b = build(&b_pkg, &format!("dev-b-{}", kind.as_str()), kind, "true");
        assert_eq!(
            b.stats.compiled, 1,
            "{kind:?}: the second checkout compiles its own"
        );
        assert!(
            !holds(&b, &a_pkg),
            "{kind:?}: the second checkout's output names the first's path"
        );
        assert!(!holds(&a, &b_pkg), "{kind:?}");
        if kind == OutputKind::Ptx {
            assert!(
                holds(&a, &a_pkg) && holds(&b, &b_pkg),
                "{kind:?}: line info is there"
            );
        }
        // Each checkout's own rebuild is served from the cache.
        let again = build(&b_pkg, &format!("dev-b2-{}", kind.as_str()), kind, "true");
        assert_eq!(again.stats.from_cache, 1, "{kind:?}");
    }
    // Release builds (no line info) share across checkouts as before.
    let a = build(&a_pkg, "rel-a", OutputKind::Fatbin, "false");
    assert_eq!(a.stats.compiled, 1);
    let b = build(&b_pkg, "rel-b", OutputKind::Fatbin, "false");
    assert_eq!(b.stats.from_cache, 1);
}

#[test]
fn a_noop_rerun_is_quiet_and_the_manifest_small() {
    let Some(fx) = fixture(&["vector_add.cu", "nbody.cu", "stencil.cu"]) else {
        return;
    };
    std::fs::write(
        fx.pkg().join("cu/warn.cu"),
        "extern \"C\" __global__ void k_warn(int* o) { int unused_var; *o = 1; }\n",
    )
    .unwrap();
    let a = fx.build().dir("cu").try_compile().unwrap();
    assert!(
        a.warnings.iter().any(|w| w.contains("unused_var")),
        "{:?}",
        a.warnings
    );
    let a = fx.build().dir("cu").try_compile().unwrap();
    assert_eq!(a.stats.up_to_date, 4);
    assert!(
        !a.warnings.iter().any(|w| w.contains("unused_var")),
        "not re-printed: {:?}",
        a.warnings
    );
    // Every header is stored once, package paths relative.
    let manifest =
        std::fs::read_to_string(fx.out().join("cuda-build/kernels/manifest.json")).unwrap();
    assert_eq!(manifest.matches("vec_math.cuh").count(), 1, "{manifest}");
    assert!(
        !manifest.contains(&*fx.pkg().join("cu").to_string_lossy()),
        "{manifest}"
    );
}
