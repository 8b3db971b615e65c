//! Integration tests: the diagnosis engine.
//!
//! - The corpus (tests/corpus/real: what the real tools print here, made by
//!   tests/corpus/regenerate.sh; tests/corpus/public: messages quoted from
//!   public bug reports): every file's expected code comes first.
//! - Live: the real nvcc 13.0, the mixed-release toolkit and ptxas 12.9/11.8
//!   are run again and their fresh output must diagnose the same way.
//! - Context: fixes name what was detected (toolkits, driver, GPUs).
//! - Robustness: ANSI, CRLF, cargo wrapping; arbitrary bytes never panic.

use std::path::{Path, PathBuf};
use std::process::Command;

use cuda_toolchain::arch::ComputeCapability;
use cuda_toolchain::diagnose::{codes, diagnose, render, Context, Diagnosis, Layer};
use cuda_toolchain::probe::{DriverInfo, GpuInfo, Platform, ProbeMethod, ProbeReport};
use cuda_toolchain::toolkit::{FoundVia, Toolkit};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// One corpus file: expected codes (the first must rank first), source,
/// body, and optionally words the top diagnosis's first fix must contain
/// (`# fix:`, for a fix that must follow the log, such as a builder's knob).
struct Entry {
    path: PathBuf,
    expect: Vec<String>,
    source: String,
    fix: Option<String>,
    body: String,
}

fn read_entry(path: &Path) -> Entry {
    let text = std::fs::read_to_string(path).unwrap();
    let (mut expect, mut source, mut fix) = (Vec::new(), String::new(), None);
    let mut body_start = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        offset += line.len();
        let l = line.trim_end();
        if let Some(e) = l.strip_prefix("# expect:") {
            expect = e
                .split(',')
                .map(|c| c.trim().to_string())
                .filter(|c| !c.is_empty())
                .collect();
        } else if let Some(s) = l.strip_prefix("# source:") {
            source = s.trim().to_string();
        } else if let Some(f) = l.strip_prefix("# fix:") {
            fix = Some(f.trim().to_string());
        } else if l == "# ---" {
            body_start = Some(offset);
            break;
        }
    }
    let start =
        body_start.unwrap_or_else(|| panic!("{}: no `# ---` line ends the header", path.display()));
    Entry {
        path: path.to_path_buf(),
        expect,
        source,
        fix,
        body: text[start..].to_string(),
    }
}

fn entries(sub: &str) -> Vec<Entry> {
    let Ok(dir) = std::fs::read_dir(corpus_dir().join(sub)) else {
        return Vec::new();
    };
    let mut paths: Vec<_> = dir
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    paths.sort();
    paths.iter().map(|p| read_entry(p)).collect()
}

fn codes_of(found: &[Diagnosis]) -> Vec<&'static str> {
    found.iter().map(|d| d.code.as_str()).collect()
}

/// Checks one corpus file; returns what is wrong with it, if anything.
/// `# expect: none` (negative cases): no diagnosis at confidence >= 0.5.
fn check_entry(e: &Entry) -> Result<(), String> {
    let name = e.path.display();
    if e.expect.is_empty() {
        return Err(format!("{name}: header names no expected code"));
    }
    if e.source.is_empty() {
        return Err(format!("{name}: header names no source"));
    }
    let found = diagnose(&e.body, &Context::default());
    let got = codes_of(&found);
    if e.expect == ["none"] {
        let confident: Vec<String> = found
            .iter()
            .filter(|d| d.confidence >= 0.5)
            .map(|d| {
                format!(
                    "{} ({:.2}) from {:?}",
                    d.code,
                    d.confidence,
                    d.evidence.first()
                )
            })
            .collect();
        if !confident.is_empty() {
            return Err(format!("{name}: negative case diagnosed as {confident:?}"));
        }
        return Ok(());
    }
    for code in &e.expect {
        if codes::lookup(code).is_none() {
            return Err(format!("{name}: `{code}` is not a documented code"));
        }
    }
    if got.first().copied() != Some(e.expect[0].as_str()) {
        return Err(format!(
            "{name}: expected `{}` first, got {got:?}",
            e.expect[0]
        ));
    }
    for code in &e.expect[1..] {
        if !got.contains(&code.as_str()) {
            return Err(format!("{name}: expected `{code}` too, got {got:?}"));
        }
    }
    let top = &found[0];
    if top.evidence.is_empty() || top.cause.is_empty() || top.fix.is_empty() {
        return Err(format!("{name}: incomplete diagnosis {top:?}"));
    }
    if let Some(words) = &e.fix {
        if !top.fix[0].contains(words.as_str()) {
            return Err(format!(
                "{name}: the first fix should name `{words}`: {:?}",
                top.fix[0]
            ));
        }
    }
    // Evidence is text of the input, not made up.
    let body = e.body.replace('\r', "");
    if !top
        .evidence
        .iter()
        .any(|ev| body.contains(ev.trim_matches('…')))
    {
        return Err(format!(
            "{name}: evidence {:?} is not a line of the input",
            top.evidence
        ));
    }
    Ok(())
}

/// Checks every file of some corpus folders and fails once, listing every
/// failing file with its reason.
fn check_all(subs: &[&str], min: usize, check_source: impl Fn(&Entry) -> Result<(), String>) {
    let mut n = 0;
    let mut failures = Vec::new();
    for sub in subs {
        for e in entries(sub) {
            n += 1;
            if let Err(msg) = check_source(&e).and_then(|()| check_entry(&e)) {
                failures.push(msg);
            }
        }
    }
    assert!(n >= min, "tests/corpus/{subs:?} has only {n} files");
    assert!(
        failures.is_empty(),
        "{} of {n} corpus files fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn cites_a_url(e: &Entry) -> Result<(), String> {
    if e.source.contains("https://") || e.source.contains("http://") {
        Ok(())
    } else {
        Err(format!("{}: source must cite a URL", e.path.display()))
    }
}

#[test]
fn corpus_real_tool_output() {
    check_all(&["real"], 15, |e| {
        if e.source.contains("real tool output") {
            Ok(())
        } else {
            Err(format!("{}: not marked real tool output", e.path.display()))
        }
    });
}

#[test]
fn corpus_public_reports() {
    check_all(&["public"], 10, cites_a_url);
}

/// Logs whose evidence cannot decide between causes. Two kinds:
/// - an arch rejected by an nvcc too old for it, or by one that has dropped
///   it (the same words; the threads' cause here is the first): the engine
///   must not be confident and must name the other cause with the way to
///   tell them apart (`nvcc --version`);
/// - a message several causes print (`unspecified launch failure` alone):
///   the top diagnosis stays below 0.5 and the confirmed cause (`# expect:`)
///   is named, as a diagnosis or an alternative.
#[test]
fn corpus_ambiguous_cases_name_both_causes() {
    let mut n = 0;
    for e in entries("ambiguous") {
        n += 1;
        let name = e.path.display().to_string();
        cites_a_url(&e).unwrap();
        let found = diagnose(&e.body, &Context::default());
        let top = found
            .first()
            .unwrap_or_else(|| panic!("{name}: nothing found"));
        let pair = ["arch-too-new-for-nvcc", "arch-dropped-by-nvcc"];
        if pair.contains(&e.expect[0].as_str()) {
            assert!(pair.contains(&top.code.as_str()), "{name}: {top:?}");
            assert!(top.confidence < 0.9, "{name}: over-confident {top:?}");
            let other = pair.iter().find(|c| **c != top.code.as_str()).unwrap();
            assert!(
                top.alternatives
                    .iter()
                    .any(|a| a.contains(other) && a.contains("nvcc --version")),
                "{name}: the other cause `{other}` is not named: {:?}",
                top.alternatives
            );
            assert_eq!(
                e.expect[0], "arch-too-new-for-nvcc",
                "{name}: the thread's cause"
            );
        } else {
            assert!(top.confidence < 0.5, "{name}: over-confident {top:?}");
            let cause = e.expect[0].as_str();
            assert!(
                found.iter().any(|d| d.code.as_str() == cause
                    || d.alternatives.iter().any(|a| a.contains(cause))),
                "{name}: the confirmed cause `{cause}` is not named: {found:?}"
            );
        }
    }
    assert!(n >= 4, "tests/corpus/ambiguous has {n} files");
}

/// Logs quoted from Rust GPU projects' public issues (candle, mistral.rs,
/// cudarc, text-embeddings-inference, ...).
#[test]
fn corpus_rust_projects() {
    check_all(&["rust"], 1, cites_a_url);
}

/// Real outputs that must not produce a confident diagnosis: successful and
/// warnings-only builds, unrelated errors, logs with CUDA in paths.
#[test]
fn corpus_negative_cases() {
    let dir = corpus_dir().join("negative");
    if !dir.is_dir() {
        return; // the folder is created with its first case
    }
    check_all(&["negative"], 0, |e| {
        if e.expect == ["none"] {
            cites_a_url(e)
        } else {
            Err(format!(
                "{}: a negative case expects `none`",
                e.path.display()
            ))
        }
    });
}

/// Every corpus message still diagnoses the same way when cargo wraps it
/// (indented under `--- stderr`), coloured with ANSI codes, with CRLF endings.
#[test]
fn corpus_survives_cargo_wrapping_colour_and_crlf() {
    let mut failures = Vec::new();
    for e in entries("real")
        .into_iter()
        .chain(entries("public"))
        .chain(entries("rust"))
    {
        let mut wrapped = String::from(
            "   Compiling kernels v0.1.0 (C:\\work\\kernels)\r\nerror: failed to run custom build command for `kernels v0.1.0`\r\n\r\nCaused by:\r\n  --- stderr\r\n",
        );
        for line in e.body.lines() {
            wrapped.push_str(&format!("  \u{1b}[1m\u{1b}[31m{line}\u{1b}[0m\r\n"));
        }
        let found = diagnose(&wrapped, &Context::default());
        if found.first().map(|d| d.code.as_str()) != Some(e.expect[0].as_str()) {
            failures.push(format!(
                "{}: wrapped form diagnosed as {:?}",
                e.path.display(),
                codes_of(&found)
            ));
        } else if found[0]
            .evidence
            .iter()
            .any(|ev| ev.contains('\u{1b}') || ev.contains('\r'))
        {
            failures.push(format!("{}: ANSI or CR in evidence", e.path.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every code the issue asks for is documented and reachable from some corpus file.
#[test]
fn required_codes_are_documented_and_covered() {
    let required = [
        "nvcc-not-found",
        "toolkit-incomplete",
        "arch-too-new-for-nvcc",
        "arch-dropped-by-nvcc",
        "arch-feature-needs-higher-target",
        "arch-not-detected",
        "host-compiler-unsupported",
        "host-compiler-not-found",
        "no-kernel-image-for-device",
        "ptx-too-new-for-driver",
        "ptx-jit-failed",
        "driver-too-old",
        "driver-not-loaded",
        "driver-library-mismatch",
        "libcuda-not-found",
        "libcuda-stub",
        "no-device-visible",
    ];
    let mut covered = std::collections::BTreeSet::new();
    for e in entries("real").into_iter().chain(entries("public")) {
        covered.extend(e.expect);
    }
    for code in required {
        let doc = codes::lookup(code).unwrap_or_else(|| panic!("{code} is not documented"));
        assert!(
            doc.explanation.len() > 200,
            "{code}'s explanation is too short"
        );
        assert!(covered.contains(code), "no corpus file expects {code}");
    }
}

/// Every code that cuda-build, cargo-cuda, the kernels crate or the examples
/// raise has a long explanation, so `cargo cuda explain CODE` works for all of
/// them. The forms: `Error::new("code"`, `code: "code"` (a `Problem`),
/// `.code("code")` and `code = Some("code")` (doctor checks).
#[test]
fn every_code_raised_in_the_source_is_documented() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let re =
        regex::Regex::new(r#"(?:Error::new\(|code:|\.code\(|code = Some\()\s*"([a-z][a-z0-9-]+)""#)
            .unwrap();
    let mut files = Vec::new();
    let mut stack = vec![
        root.join("cuda-toolchain/src"),
        root.join("cuda-build/src"),
        root.join("cargo-cuda/src"),
        root.join("cuda-install/src"),
        root.join("kernels/src"),
        root.join("examples"),
    ];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                // A crate-local build folder holds generated code, not ours.
                if p.file_name().is_some_and(|n| n != "target") {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|e| e == "rs") {
                files.push(p);
            }
        }
    }
    assert!(
        files.len() > 10,
        "found only {} source files under {}",
        files.len(),
        root.display()
    );
    let mut missing = std::collections::BTreeSet::new();
    let mut seen = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for c in re.captures_iter(&text) {
            seen += 1;
            if codes::lookup(&c[1]).is_none() {
                missing.insert(format!(
                    "{} ({})",
                    &c[1],
                    f.strip_prefix(root).unwrap().display()
                ));
            }
        }
    }
    assert!(
        seen > 10,
        "the pattern found only {seen} codes: is it still right?"
    );
    assert!(
        missing.is_empty(),
        "codes without a CodeDoc in diagnose/codes.rs: {missing:?}"
    );
}

#[test]
fn wgmma_on_blackwell_is_not_sent_to_sm_120a() {
    // wgmma exists only on sm_90a: telling the user to build sm_120a would be wrong.
    let log = "ptxas error: Instruction 'wgmma.fence' not supported on .target 'sm_120'";
    let d = &diagnose(log, &Context::default())[0];
    assert_eq!(d.code, "arch-feature-needs-higher-target");
    assert!(
        d.cause.contains("only on sm_90a") && d.cause.contains("sm_120 has no such instruction"),
        "{}",
        d.cause
    );
    assert!(
        !d.fix
            .iter()
            .any(|f| f.contains("sm_120a") || f.contains("120a")),
        "{:?}",
        d.fix
    );
}

#[test]
fn wsl_and_device_nodes_shape_fixes() {
    let mut probe = machine("560.35.03", (12, 6), &[]);
    probe.platform = Platform {
        wsl: true,
        ..Platform::default()
    };
    let ctx = Context {
        probe: Some(probe),
        ..Context::default()
    };
    let d = &diagnose(
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
        &ctx,
    )[0];
    assert_eq!(d.code, "driver-not-loaded");
    assert!(
        d.fix[0].contains("WSL") && d.fix[0].contains("Windows"),
        "{:?}",
        d.fix
    );

    let mut probe = machine("580.65.06", (13, 0), &[]);
    probe.platform.device_nodes = vec![cuda_toolchain::probe::DeviceNode {
        path: PathBuf::from("/dev/nvidia0"),
        exists: true,
        readable: false,
        writable: false,
    }];
    let ctx = Context {
        probe: Some(probe),
        ..Context::default()
    };
    let d = &diagnose(
        "RuntimeError: CUDA error: no CUDA-capable device is detected",
        &ctx,
    )[0];
    assert_eq!(d.code, "no-device-visible");
    assert!(
        d.fix[0].contains("/dev/nvidia0") && d.fix[0].contains("group"),
        "{:?}",
        d.fix
    );
}

#[test]
fn a_wrapped_nvcc_error_ranks_below_its_cause() {
    let e = cuda_toolchain::Error::new(
        "nvcc-failed",
        "nvcc failed to compile `cu/va.cu` (exit status: 1)",
    )
    .with_detail("nvcc fatal   : Unsupported gpu architecture 'compute_89'")
    .with_help("see the explanation below");
    let log = format!(
        "error: failed to run custom build command for `kernels v0.1.0`\n  --- stderr\n  {}\n",
        e.to_string().replace('\n', "\n  ")
    );
    let found = diagnose(&log, &Context::default());
    assert_eq!(
        codes_of(&found),
        vec!["arch-too-new-for-nvcc", "nvcc-failed"],
        "{found:#?}"
    );
}

/// Driver API calls that print only a number are read too, and a code found by
/// its number alone is never more confident than one found by its name.
#[test]
fn bare_error_numbers_next_to_driver_calls() {
    for (line, code) in [
        ("cuModuleLoadData failed: 222", "ptx-too-new-for-driver"),
        (
            "CUresult 209 from cuModuleLoad",
            "no-kernel-image-for-device",
        ),
        ("cuInit returned 100", "no-device-visible"),
        (
            "F0101 caffe.cpp:42] Check failed: error == cudaSuccess (35 vs. 0)",
            "driver-too-old",
        ),
    ] {
        let found = diagnose(line, &Context::default());
        assert_eq!(codes_of(&found).first(), Some(&code), "{line}: {found:#?}");
        let by_name = diagnose(
            "DriverError(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, \"x\")",
            &Context::default(),
        );
        assert!(found[0].confidence <= by_name[0].confidence, "{line}");
    }
}

#[test]
fn cudarc_dynamic_loading_panics_name_the_library() {
    let cuda = "thread 'main' panicked at cudarc-0.16.4/src/lib.rs:98:5:\nUnable to dynamically load the \"cuda\" shared library - searched for library names: [\"cuda\", \"nvcuda\"]";
    let d = &diagnose(cuda, &Context::default())[0];
    assert_eq!(d.code, "libcuda-not-found");
    assert!(d.cause.contains("libcuda.so"), "{}", d.cause);
    let nvrtc = "Unable to dynamically load the \"nvrtc\" shared library";
    let d = &diagnose(nvrtc, &Context::default())[0];
    assert_eq!(d.code, "cuda-runtime-lib-not-found");
    assert!(d.cause.contains("libnvrtc.so"), "{}", d.cause);
}

#[test]
fn probed_causes_join_the_symptoms_in_the_log() {
    let mut probe = machine("580.65.06", (13, 0), &[]);
    probe.platform.libcuda = Some(PathBuf::from("/usr/local/cuda-13.0/lib64/stubs/libcuda.so"));
    probe.platform.libcuda_stub = true;
    let ctx = Context {
        probe: Some(probe),
        ..Context::default()
    };
    let found = diagnose(
        "RuntimeError: CUDA error: no CUDA-capable device is detected",
        &ctx,
    );
    assert_eq!(codes_of(&found)[0], "libcuda-stub", "{found:#?}");
    assert!(found[0].evidence[0].contains("/usr/local/cuda-13.0/lib64/stubs/libcuda.so"));
    assert!(
        found[0].fix[0].contains("/usr/local/cuda-13.0/lib64/stubs"),
        "{:?}",
        found[0].fix
    );

    let mut probe = machine("580.95.05", (13, 0), &[]);
    probe.platform.kernel_module_version = Some("580.65.06".into());
    probe.platform.nvml_version = Some("580.95.05".into());
    let ctx = Context {
        probe: Some(probe),
        ..Context::default()
    };
    let found = diagnose(
        "failed call to cuInit: CUDA_ERROR_UNKNOWN: unknown error",
        &ctx,
    );
    assert_eq!(codes_of(&found)[0], "driver-library-mismatch", "{found:#?}");
    assert!(
        found[0].cause.contains("580.65.06") && found[0].cause.contains("580.95.05"),
        "{}",
        found[0].cause
    );
    // nvidia-smi's short form of the same version is not a mismatch.
    let mut probe = machine("580.173.02", (13, 0), &[]);
    probe.platform.kernel_module_version = Some("580.173.02".into());
    probe.platform.nvml_version = Some("580.173".into());
    let ctx2 = Context {
        probe: Some(probe),
        ..Context::default()
    };
    let found = diagnose(
        "failed call to cuInit: CUDA_ERROR_UNKNOWN: unknown error",
        &ctx2,
    );
    assert_eq!(codes_of(&found), vec!["cuda-unknown-error"], "{found:#?}");
    // Nothing in the log: the probe alone does not invent a failure.
    assert!(diagnose("   Compiling foo v0.1.0", &ctx).is_empty());
}

#[test]
fn cause_codes_outrank_their_consequences() {
    let log = "Failed to initialize NVML: Driver/library version mismatch\n\
               RuntimeError: CUDA error: no CUDA-capable device is detected\n";
    let found = diagnose(log, &Context::default());
    assert_eq!(
        codes_of(&found),
        vec!["driver-library-mismatch", "no-device-visible"]
    );
    assert!(found[1]
        .alternatives
        .iter()
        .any(|a| a.contains("driver-library-mismatch")));
}

// ---------------------------------------------------------------- live tools

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("could not run {cmd:?}: {e}"));
    assert!(!out.status.success(), "{cmd:?} was expected to fail");
    String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout)
}

const KERNEL: &str = "extern \"C\" __global__ void va(float *c) { c[threadIdx.x] = 1.0f; }\n";

fn top(text: &str) -> &'static str {
    diagnose(text, &Context::default())
        .first()
        .map_or("<none>", |d| d.code.as_str())
}

#[test]
fn live_nvcc13_rejects_dropped_and_unknown_archs() {
    let Some(nvcc) = workspace_tests::nvcc13() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cu = dir.path().join("k.cu");
    std::fs::write(&cu, KERNEL).unwrap();
    let out = dir.path().join("k.cubin");
    for (arch, code) in [
        ("sm_70", "arch-dropped-by-nvcc"),
        ("sm_35", "arch-dropped-by-nvcc"),
        ("sm_200", "arch-too-new-for-nvcc"),
    ] {
        let text = run(Command::new(&nvcc)
            .arg(format!("-arch={arch}"))
            .arg("-cubin")
            .arg("-o")
            .arg(&out)
            .arg(&cu));
        assert_eq!(top(&text), code, "{arch}: {text}");
    }
    // With the version known (from `nvcc --version` in the log), the verdict is certain.
    let version = Command::new(&nvcc).arg("--version").output().unwrap();
    let text = String::from_utf8_lossy(&version.stdout).into_owned()
        + &run(Command::new(&nvcc)
            .arg("-arch=sm_70")
            .arg("-cubin")
            .arg("-o")
            .arg(&out)
            .arg(&cu));
    let d = &diagnose(&text, &Context::default())[0];
    assert_eq!(d.code, "arch-dropped-by-nvcc");
    assert!(d.confidence >= 0.9, "{d:?}");
    assert!(
        d.cause.contains("nvcc 13.0") && d.cause.contains("12.9"),
        "{}",
        d.cause
    );
}

#[test]
fn live_feature_gates_and_host_compiler() {
    let Some(nvcc) = workspace_tests::nvcc13() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wg = dir.path().join("wg.cu");
    std::fs::write(&wg, "extern \"C\" __global__ void f() { asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\"); }\n").unwrap();
    let text = run(Command::new(&nvcc)
        .args(["-arch=sm_90", "-cubin", "-o"])
        .arg(dir.path().join("wg.cubin"))
        .arg(&wg));
    let d = &diagnose(&text, &Context::default())[0];
    assert_eq!(d.code, "arch-feature-needs-higher-target", "{text}");
    assert!(
        d.fix[0].contains("sm_90a") && d.fix[0].contains("CUDA_ARCHS=90a"),
        "{:?}",
        d.fix
    );

    // host_config.h's real #error, through a host compiler that reports gcc 99.
    let wrapper = dir.path().join("g++");
    let force = dir.path().join("force.h");
    std::fs::write(&force, "#undef __GNUC__\n#define __GNUC__ 99\n").unwrap();
    workspace_tests::write_script(
        &wrapper,
        &format!("exec /usr/bin/g++ -include {} \"$@\"", force.display()),
    );
    let host = dir.path().join("h.cu");
    std::fs::write(&host, "#include <cstdio>\nint main() { return 0; }\n").unwrap();
    let text = run(Command::new(&nvcc)
        .arg("-ccbin")
        .arg(&wrapper)
        .args(["-c", "-o"])
        .arg(dir.path().join("h.o"))
        .arg(&host));
    let d = &diagnose(&text, &Context::default())[0];
    assert_eq!(d.code, "host-compiler-unsupported", "{text}");
    assert!(d.cause.contains("gcc up to 15"), "{}", d.cause);
    assert!(d.fix[0].contains("NVCC_CCBIN=g++-15"), "{:?}", d.fix);
}

#[test]
fn live_ptxas_and_mixed_toolkit() {
    let (Some(nvcc), Some(mixed)) = (workspace_tests::nvcc13(), workspace_tests::mixed_root())
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cu = dir.path().join("k.cu");
    std::fs::write(&cu, KERNEL).unwrap();
    let ptx = dir.path().join("k.ptx");
    let ok = Command::new(&nvcc)
        .args(["-arch=sm_90", "-ptx", "-o"])
        .arg(&ptx)
        .arg(&cu)
        .status()
        .unwrap();
    assert!(ok.success());
    for ptxas in [workspace_tests::ptxas12(), workspace_tests::ptxas11()]
        .into_iter()
        .flatten()
    {
        let text = run(Command::new(&ptxas)
            .arg("-arch=sm_90")
            .arg("-o")
            .arg(dir.path().join("k.cubin"))
            .arg(&ptx));
        let d = &diagnose(&text, &Context::default())[0];
        assert_eq!(d.code, "ptxas-too-old", "{text}");
        assert!(
            d.cause.contains("ISA 9.0") && d.cause.contains("CUDA 13.0"),
            "{}",
            d.cause
        );
    }
    let text = run(Command::new(mixed.join("bin/nvcc"))
        .args(["-arch=sm_89", "-cubin", "-o"])
        .arg(dir.path().join("m.cubin"))
        .arg(&cu));
    let d = &diagnose(&text, &Context::default())[0];
    assert_eq!(d.code, "toolkit-incomplete", "{text}");
    assert!(d.cause.contains("mixes components"), "{}", d.cause);
}

// ------------------------------------------------------------------- context

fn toolkit(root: &str, version: &str) -> Toolkit {
    Toolkit {
        root: PathBuf::from(root),
        nvcc: PathBuf::from(root).join("bin/nvcc"),
        version: Some(semver::Version::parse(version).unwrap()),
        found_via: FoundVia::Versioned,
        include_dirs: vec![PathBuf::from(root).join("include")],
        lib_dirs: vec![PathBuf::from(root).join("lib64")],
        problems: Vec::new(),
    }
}

fn machine(driver: &str, cuda: (u32, u32), gpus: &[(&str, u32, u32)]) -> ProbeReport {
    ProbeReport {
        driver: Some(DriverInfo {
            version: Some(driver.into()),
            cuda_version: Some(cuda),
            found_via: ProbeMethod::NvidiaSmi,
        }),
        gpus: gpus
            .iter()
            .enumerate()
            .map(|(i, (name, ma, mi))| GpuInfo {
                index: i as u32,
                name: name.to_string(),
                compute_capability: ComputeCapability::new(*ma, *mi),
                total_memory: None,
            })
            .collect(),
        method: Some(ProbeMethod::NvidiaSmi),
        attempts: Vec::new(),
        platform: Platform::default(),
    }
}

#[test]
fn ptx_too_new_fix_names_driver_isa_and_gpu() {
    let ctx = Context {
        toolkits: vec![
            toolkit("/usr/local/cuda-12.8", "12.8.93"),
            toolkit("/usr/local/cuda-12.2", "12.2.140"),
        ],
        selected: Some(0),
        probe: Some(machine("535.129.03", (12, 2), &[("NVIDIA L4", 8, 9)])),
    };
    let log = "thread 'main' panicked at src/main.rs:9:51:\ncalled `Result::unwrap()` on an `Err` value: \
               DriverError(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, \"the provided PTX was compiled with an unsupported toolchain.\")\n";
    let d = &diagnose(log, &ctx)[0];
    assert_eq!(d.code, "ptx-too-new-for-driver");
    assert_eq!(
        d.cause,
        "Your driver 535 JITs PTX up to ISA 8.2, and this PTX is 8.7 (CUDA 12.8)."
    );
    assert!(
        d.fix[0].contains("build SASS for sm_89 (CUDA_ARCHS=89)")
            && d.fix[0].contains("upgrade the driver to >= 570"),
        "{:?}",
        d.fix
    );
    assert!(
        d.fix.iter().any(
            |f| f.starts_with("CUDA 12.2 is installed at /usr/local/cuda-12.2")
                && f.ends_with("set CUDA_HOME=/usr/local/cuda-12.2")
        ),
        "{:?}",
        d.fix
    );
    // The same log without context: a generic but correct fix, no numbers made up.
    let d = &diagnose(log, &Context::default())[0];
    assert_eq!(d.code, "ptx-too-new-for-driver");
    assert!(
        !d.cause.contains("535") && !d.fix.iter().any(|f| f.contains(">= 570")),
        "{d:?}"
    );
}

#[test]
fn jit_log_numbers_come_from_the_log() {
    let log = "ptxas application ptx input, line 9; fatal   : Unsupported .version 8.7; current version is '8.4'\n\
               numba.cuda.cudadrv.driver.LinkerError: [222] Call to cuLinkAddData results in CUDA_ERROR_UNSUPPORTED_PTX_VERSION\n";
    let d = &diagnose(log, &Context::default())[0];
    assert_eq!(d.code, "ptx-too-new-for-driver");
    assert!(
        d.cause.contains("up to ISA 8.4") && d.cause.contains("8.7 (CUDA 12.8)"),
        "{}",
        d.cause
    );
    assert!(d.fix[0].contains(">= 570"), "{:?}", d.fix);
    assert_eq!(d.evidence.len(), 2);
}

#[test]
fn arch_verdict_uses_the_toolkit_version_and_other_toolkits() {
    let ctx = Context {
        toolkits: vec![
            toolkit("/opt/cuda-11.4", "11.4.3"),
            toolkit("/usr/local/cuda-12.4", "12.4.131"),
        ],
        selected: Some(0),
        probe: Some(machine(
            "550.54.15",
            (12, 4),
            &[("NVIDIA GeForce RTX 4090", 8, 9)],
        )),
    };
    let d = &diagnose(
        "nvcc fatal   : Unsupported gpu architecture 'compute_89'",
        &ctx,
    )[0];
    assert_eq!(d.code, "arch-too-new-for-nvcc");
    assert!(d.confidence >= 0.9);
    assert!(
        d.cause.contains("nvcc 11.4") && d.cause.contains("11.8"),
        "{}",
        d.cause
    );
    assert_eq!(d.fix[0], "CUDA 12.4 is installed at /usr/local/cuda-12.4 and targets sm_89: set CUDA_HOME=/usr/local/cuda-12.4");
    // sm_70 on CUDA 13: dropped, and the 12.x toolkit is offered.
    let ctx = Context {
        toolkits: vec![
            toolkit("/usr/local/cuda-13.0", "13.0.88"),
            toolkit("/usr/local/cuda-12.9", "12.9.86"),
        ],
        selected: Some(0),
        probe: None,
    };
    let d = &diagnose(
        "nvcc fatal   : Value 'sm_70' is not defined for option 'gpu-architecture'",
        &ctx,
    )[0];
    assert_eq!(d.code, "arch-dropped-by-nvcc");
    assert!(
        d.fix
            .iter()
            .any(|f| f.contains("set CUDA_HOME=/usr/local/cuda-12.9")),
        "{:?}",
        d.fix
    );
    assert!(
        d.fix.iter().any(|f| f.contains("targets sm_75 and newer")),
        "{:?}",
        d.fix
    );
}

#[test]
fn ambiguous_evidence_lowers_confidence_and_lists_alternatives() {
    // 209: missing arch, stale build or stripped fatbin.
    let d = &diagnose(
        "CUDA error: no kernel image is available for execution on the device",
        &Context::default(),
    )[0];
    assert_eq!(d.code, "no-kernel-image-for-device");
    assert!(d.alternatives.len() >= 2 && d.confidence < 0.9, "{d:?}");
    // 999.
    let d = &diagnose(
        "RuntimeError: CUDA error: unknown error",
        &Context::default(),
    )[0];
    assert_eq!(d.code, "cuda-unknown-error");
    assert!(d.confidence < 0.5 && d.alternatives.len() >= 2, "{d:?}");
    // 218 with a driver older than the toolkit: points at 222.
    let ctx = Context {
        toolkits: vec![toolkit("/usr/local/cuda-12.8", "12.8.0")],
        selected: Some(0),
        probe: Some(machine("535.129.03", (12, 2), &[])),
    };
    let d = &diagnose(
        "DriverError(CUDA_ERROR_INVALID_PTX, \"a PTX JIT compilation failed\")",
        &ctx,
    )[0];
    assert_eq!(d.code, "ptx-jit-failed");
    assert!(
        d.confidence <= 0.7 && d.alternatives[0].contains("ptx-too-new-for-driver"),
        "{d:?}"
    );
    // A bare number is weak evidence.
    let d = &diagnose("cuInit failed with CUDA error 100", &Context::default())[0];
    assert_eq!(d.code, "no-device-visible");
    assert!(d.confidence <= 0.5, "{d:?}");
    // An nvcc too old for -arch=native: not a typo, and not sent to a missing arch.
    let d = &diagnose(
        "nvcc fatal   : Unsupported gpu architecture 'compute_native'",
        &Context::default(),
    )[0];
    assert_eq!(d.code, "arch-invalid");
    assert!(
        d.cause.contains("-arch=native") && d.cause.contains("pasted"),
        "{}",
        d.cause
    );
    // Arch rejected, nvcc version unknown: dropped or too old, said so.
    let d = &diagnose(
        "nvcc fatal   : Unsupported gpu architecture 'compute_70'",
        &Context::default(),
    )[0];
    assert_eq!(d.code, "arch-dropped-by-nvcc");
    assert!(
        d.confidence < 0.9
            && d.alternatives
                .iter()
                .any(|a| a.contains("arch-too-new-for-nvcc")),
        "{d:?}"
    );
    // The same nvcc rejecting -arch=native and a real arch is too old for both.
    let found = diagnose(
        "nvcc fatal   : Unsupported gpu architecture 'compute_native'\nnvcc fatal   : Unsupported gpu architecture 'compute_86'\n",
        &Context::default(),
    );
    assert_eq!(found[0].code, "arch-too-new-for-nvcc", "{found:?}");
}

#[test]
fn host_compiler_fix_offers_a_toolkit_that_accepts_it() {
    let ctx = Context {
        toolkits: vec![
            toolkit("/usr/local/cuda-12.2", "12.2.140"),
            toolkit("/usr/local/cuda-12.8", "12.8.93"),
        ],
        selected: Some(0),
        probe: None,
    };
    let log = "/usr/local/cuda-12.2/include/crt/host_config.h:143:2: error: #error -- unsupported GNU version! gcc versions later than 12 are not supported! The nvcc flag '-allow-unsupported-compiler' can be used to override this version check; however, using an unsupported host compiler may cause compilation failure or incorrect run time execution. Use at your own risk.";
    let d = &diagnose(log, &ctx)[0];
    assert_eq!(d.code, "host-compiler-unsupported");
    assert!(d.fix[0].contains("NVCC_CCBIN=g++-12"), "{:?}", d.fix);
    assert!(
        d.fix.iter().any(|f| f
            .contains("CUDA 12.8 is installed at /usr/local/cuda-12.8 and accepts a newer gcc")),
        "{:?}",
        d.fix
    );
}

#[test]
fn msvc_form_with_windows_paths() {
    let ctx = Context {
        toolkits: vec![toolkit(
            "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v13.0",
            "13.0.88",
        )],
        selected: Some(0),
        probe: None,
    };
    let log = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v13.0\\include\\crt/host_config.h(164): fatal error C1189: #error:  -- unsupported Microsoft Visual Studio version! Only the versions between 2019 and 2022 (inclusive) are supported! The nvcc flag '-allow-unsupported-compiler' can be used to override this version check; however, using an unsupported host compiler may cause compilation failure or incorrect run time execution. Use at your own risk.\r\n";
    let d = &diagnose(log, &ctx)[0];
    assert_eq!(d.code, "host-compiler-unsupported");
    assert!(
        d.cause.contains("CUDA 13.0") && d.cause.contains("Visual Studio"),
        "{}",
        d.cause
    );
    let (lo, hi) = cuda_toolchain::facts::host_compiler_limits((13, 0))
        .unwrap()
        .msvc
        .unwrap();
    assert!(d.fix[0].contains(&format!("{lo}..={hi}")), "{:?}", d.fix);
}

#[test]
fn toolkit_problems_from_discovery_become_fixes() {
    let mut tk = toolkit("/opt/cuda", "12.6.85");
    tk.problems.push(cuda_toolchain::toolkit::Problem {
        code: "toolkit-incomplete",
        severity: cuda_toolchain::toolkit::Severity::Error,
        message: "`/opt/cuda/include/nv/target` is missing".into(),
        fix: Some("install cuda-cccl-12-6".into()),
    });
    let ctx = Context {
        toolkits: vec![tk],
        selected: Some(0),
        probe: None,
    };
    let log =
        "/opt/cuda/include/cuda_fp16.h:4100:10: fatal error: nv/target: No such file or directory";
    let d = &diagnose(log, &ctx)[0];
    assert_eq!(d.code, "toolkit-incomplete");
    assert!(
        d.fix[0].contains("cuda-cccl-12-6") && d.fix[0].contains("nvidia-cuda-cccl==12.6.*"),
        "{:?}",
        d.fix
    );
    assert!(
        d.fix
            .iter()
            .any(|f| f == "`/opt/cuda/include/nv/target` is missing (install cuda-cccl-12-6)"),
        "{:?}",
        d.fix
    );
}

#[test]
fn probe_platform_shapes_driver_fixes() {
    let mut probe = machine("580.65.06", (13, 0), &[]);
    probe.platform = Platform {
        container: Some("docker".into()),
        ..Platform::default()
    };
    let ctx = Context {
        probe: Some(probe),
        ..Context::default()
    };
    let d = &diagnose(
        "OSError: libcuda.so.1: cannot open shared object file: No such file or directory",
        &ctx,
    )[0];
    assert_eq!(d.code, "libcuda-not-found");
    assert!(
        d.fix[0].contains("docker container") && d.fix[0].contains("--gpus all"),
        "{:?}",
        d.fix
    );
    // Link time is a different problem with a different fix.
    let ctx = Context {
        toolkits: vec![toolkit("/usr/local/cuda-13.0", "13.0.88")],
        selected: Some(0),
        probe: None,
    };
    let d = &diagnose(
        "/usr/bin/ld: cannot find -lcuda: No such file or directory",
        &ctx,
    )[0];
    assert_eq!(d.code, "libcuda-not-found");
    assert!(
        d.fix[0].contains("/usr/local/cuda-13.0/lib64/stubs"),
        "{:?}",
        d.fix
    );
}

// --------------------------------------------------------------- robustness

#[test]
fn ansi_crlf_windows_paths_and_cargo_wrapping() {
    let log = "   Compiling kernels v0.1.0 (C:\\work\\kernels)\r\n\
               error: failed to run custom build command for `kernels v0.1.0 (C:\\work\\kernels)`\r\n\
               \r\n\
               Caused by:\r\n  process didn't exit successfully: `C:\\work\\target\\debug\\build\\kernels-1\\build-script-build` (exit code: 1)\r\n\
               \x20 --- stderr\r\n\
               \x20 \x1b[1m\x1b[31mnvcc fatal\x1b[0m   : Unsupported gpu architecture 'compute_89'\r\n";
    let found = diagnose(log, &Context::default());
    let d = &found[0];
    assert_eq!(d.code, "arch-too-new-for-nvcc");
    assert_eq!(
        d.evidence,
        vec!["nvcc fatal   : Unsupported gpu architecture 'compute_89'".to_string()]
    );
    assert!(
        d.cause
            .contains("build script of `kernels v0.1.0 (C:\\work\\kernels)`"),
        "{}",
        d.cause
    );
    let text = render(d);
    assert!(text.starts_with("error[arch-too-new-for-nvcc]: "), "{text}");
    assert!(
        text.contains("\n  = help: ") && !text.contains('\x1b') && !text.contains('\r'),
        "{text}"
    );
}

#[test]
fn own_errors_round_trip_with_their_help() {
    let e = cuda_toolchain::Error::new(
        "cuda-home-invalid",
        "CUDA_HOME is set to `/opt/cuda-12.9`, which does not exist",
    )
    .with_help("point CUDA_HOME at the directory that holds bin/nvcc, or unset it");
    let log = format!("warning: build failed\n{e}\n");
    let d = &diagnose(&log, &Context::default())[0];
    assert_eq!(d.code, "cuda-home-invalid");
    assert_eq!(d.layer, Layer::Toolkit);
    assert!(d.cause.contains("/opt/cuda-12.9"));
    assert_eq!(
        d.fix[0],
        "point CUDA_HOME at the directory that holds bin/nvcc, or unset it"
    );
    // rustc's own codes are not ours.
    assert!(diagnose(
        "error[E0425]: cannot find value `x` in this scope",
        &Context::default()
    )
    .is_empty());
}

#[test]
fn nothing_recognised_gives_nothing() {
    for text in [
        "",
        "\n\n",
        "   Compiling foo v0.1.0\n    Finished dev [unoptimized] target(s)",
        "error: could not compile `foo`",
        "out of memory in the allocator",
    ] {
        assert!(diagnose(text, &Context::default()).is_empty(), "{text:?}");
    }
}

/// Bad input: binary garbage, invalid UTF-8 (as the CLI reads it, lossily),
/// NUL bytes, a very long single line (a 64 MiB stand-in for 1 GB; the bench
/// runs the big one), and 10^6 trigger words on one line: no panic, bounded
/// output, and nothing found where nothing matches.
#[test]
fn bad_input_is_bounded_and_finds_nothing() {
    let garbage: Vec<u8> = (0..1u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let text = String::from_utf8_lossy(&garbage);
    assert!(
        diagnose(&text, &Context::default())
            .iter()
            .all(|d| d.confidence < 0.5),
        "garbage gave a confident diagnosis"
    );
    let nul = "\0".repeat(1 << 16) + "\0\0 exit status: 2 \0 /usr/local/cuda/lib64 \0";
    assert!(diagnose(&nul, &Context::default()).is_empty());
    // One 64 MiB line without a trigger, then the same with one in the middle.
    let half = "x".repeat(32 << 20);
    assert!(diagnose(&format!("{half}{half}"), &Context::default()).is_empty());
    let found = diagnose(
        &format!("{half} nvcc fatal   : Unsupported gpu architecture 'sm_35' {half}"),
        &Context::default(),
    );
    assert_eq!(
        found.first().map(|d| d.code.as_str()),
        Some("arch-dropped-by-nvcc")
    );
    assert!(found[0].evidence.iter().all(|e| e.len() < 1024));
    // 10^6 trigger words on one line: bounded evidence and diagnoses.
    let soup = "CUDA_ERROR_ cudaError CUDA error unknown error ".repeat(250_000);
    let found = diagnose(&soup, &Context::default());
    assert!(found.len() < 8, "{}", found.len());
    assert!(found
        .iter()
        .all(|d| d.evidence.len() <= 6 && d.evidence.iter().all(|e| e.len() < 1024)));
}

/// The message classes issue 11 lists, in the words the tools print: each
/// gives its code first, and numbers are read only in CUDA's shapes.
#[test]
fn issue_11_message_classes() {
    let cases: &[(&str, &str)] = &[
        // Rust wrappers.
        ("thread 'main' panicked at cudarc-0.11.9/src/driver/sys/mod.rs:51:9:\nUnable to find cuda lib under the names [\"cuda\", \"nvcuda\", \"cuda64\"]. Please open GitHub issue.", "libcuda-not-found"),
        ("  Unsupported cuda toolkit version: `12.6`. Please raise a github issue.", "toolkit-unsupported-by-crate"),
        ("error: failed to run custom build command for `candle-kernels v0.8.0`\n  --- stderr\n  thread 'main' panicked at bindgen_cuda-0.1.5/src/lib.rs:534:27:\n  `nvidia-smi` failed: Os { code: 2, kind: NotFound, message: \"No such file or directory\" }", "arch-not-detected"),
        ("thread 'main' panicked at bindgen_cuda-0.1.5/src/lib.rs:560:9:\nnvcc cannot target gpu arch 89. Available nvcc targets are [35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87].", "arch-too-new-for-nvcc"),
        ("Could not get Cuda compute cap: `nvidia-smi` failed. Ensure that you have CUDA installed and that `nvidia-smi` is in your PATH.", "arch-not-detected"),
        ("Error: Failed to get compute cap", "arch-not-detected"),
        ("Error: Cuda(NoBinaryForGpu)", "no-kernel-image-for-device"),
        ("Error: Could not start backend: Runtime compute cap 75 is not compatible with compile time compute cap 80", "no-kernel-image-for-device"),
        ("error: failed to run custom build command for `candle-flash-attn v0.8.0`\n  --- stderr\n  # stderr\n  Killed\n", "compiler-killed"),
        // Strict numbers.
        ("cudaHostRegister error: 35", "driver-too-old"),
        // Wording variants.
        ("NVIDIA-SMI has failed because it couldn\u{2018}t communicate with the NVIDIA driver.", "driver-not-loaded"),
        ("fatal error: cuda_runtime.h: No file or directory", "toolkit-incomplete"),
        ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Error 802: system not yet initialized", "system-not-ready"),
        // Layers.
        ("[   12.345] NVRM: No NVIDIA graphics adapter probed!", "nouveau-holds-gpu"),
        ("docker: Error response from daemon: failed to create shim: /dev/nvidia0 does not exist", "container-device-missing"),
        ("nvidia-container-cli: requirement error: unsupported CUDA version: driver 11.4 < image 12.1", "driver-too-old"),
        ("nvcc fatal   : nvcc cannot find a supported version of Microsoft Visual Studio. Only the versions 2017 to 2022 (inclusive) are supported!", "host-compiler-not-found"),
        ("/bin/sh: /usr/local/cuda/bin/nvcc: No such file or directory", "nvcc-not-found"),
        ("OSError: /usr/local/cuda/lib64/stubs/libcuda.so: cannot open shared object file: undefined symbol: cuInit", "libcuda-stub"),
        ("Field \"compute_cap\" is not a valid field to query.", "compute-cap-query-unsupported"),
        ("nvcc fatal   : Unsupported gpu architecture 'compute_'", "arch-not-detected"),
        ("export CUDA_HOME=/usr/local/cuda:/usr/local/cuda-12.1", "cuda-home-invalid"),
        // Source errors that mean the target is too low.
        ("kernel.cu(12): error: incomplete type \"nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __nv_bfloat16, nvcuda::wmma::row_major>\" is not allowed", "arch-feature-needs-higher-target"),
        ("kernel.cu(40): error: no suitable user-defined conversion from \"nv_bfloat162\" to \"__half2\" exists", "arch-feature-needs-higher-target"),
        // sccache's nvcc handling (issue 13), not a missing nvcc.
        ("sccache: error: Failed to open file for hashing: /tmp/sccache_nvccAbC/x.module_id: No such file or directory (os error 2)", "sccache-nvcc-failed"),
        ("sccache: Compiler killed by signal 126", "sccache-nvcc-failed"),
    ];
    for (log, code) in cases {
        let found = diagnose(log, &Context::default());
        assert_eq!(
            found.first().map(|d| d.code.as_str()),
            Some(*code),
            "{log}: {:?}",
            codes_of(&found)
        );
    }
    // Numbers that are not CUDA errors.
    for log in [
        "error[nvcc-failed]: nvcc failed (exit status: 2)",
        "thread 'main' panicked: `nvidia-smi` failed: Os { code: 2, kind: NotFound }",
        "src/cuda/kernels.rs:2:5: error: out of memory",
        "Compiling cudarc v0.11.9: unknown error",
    ] {
        let found = diagnose(log, &Context::default());
        assert!(
            !codes_of(&found).contains(&"out-of-memory")
                && !codes_of(&found).contains(&"cuda-unknown-error"),
            "{log}: {:?}",
            codes_of(&found)
        );
    }
    // A build script's nvidia-smi failure names the cuda-build way around it.
    let found = diagnose(cases[2].0, &Context::default());
    assert!(
        found[0].fix.iter().any(|f| f.contains("CUDA_COMPUTE_CAP"))
            && found[0].fix.iter().any(|f| f.contains("cargo cuda build")),
        "{:?}",
        found[0].fix
    );
    let found = diagnose(cases[25].0, &Context::default());
    assert!(
        found[0]
            .fix
            .iter()
            .any(|f| f.contains("CUDA_BUILD_WRAPPER")),
        "{:?}",
        found[0].fix
    );
}

#[test]
fn duplicates_collapse_into_one_diagnosis() {
    let line =
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n";
    let found = diagnose(&line.repeat(10_000), &Context::default());
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].evidence.len(), 1);
}

#[test]
fn every_code_renders() {
    for doc in codes::all() {
        let d = Diagnosis {
            code: codes::Code::parse(doc.code).unwrap(),
            title: doc.title.into(),
            evidence: vec!["x".into()],
            cause: "c".into(),
            fix: vec!["f".into()],
            layer: doc.layer,
            confidence: 0.5,
            alternatives: vec![],
        };
        let r = render(&d);
        assert!(r.contains(&format!("error[{}]", doc.code)) && r.contains("= help: f"));
    }
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    fn fragments() -> impl Strategy<Value = String> {
        let pieces = prop::sample::select(vec![
            "nvcc fatal   : Unsupported gpu architecture '",
            "Value '",
            "' is not defined for option 'gpu-",
            "Unsupported .version ",
            "; current version is '",
            "Feature '",
            "' requires .target ",
            "not supported on .target '",
            "error[",
            "]: ",
            "= help: ",
            "CUDA_ERROR_",
            "cudaError",
            "CUDA error ",
            "fatal error: ",
            ": No such file or directory",
            "cannot open shared object file",
            "cannot find -l",
            "gcc versions later than ",
            "unsupported GNU version",
            "Driver Version:",
            "CUDA Version:",
            "\x1b[",
            "\x1b]",
            "\r",
            "\n",
            "'",
            "`",
            "é",
            "9",
            ".",
            "sm_",
            "tmpxft_",
            "failed to run custom build command for `",
            "Could not load dynamic library '",
            "Unable to dynamically load the \"",
            "\" shared library",
            "libcuda.so.1",
            "nvcuda.dll",
            "Instruction '",
            "wgmma.fence",
            "DriverError(",
            "NVIDIA-SMI has failed",
        ]);
        prop::collection::vec(pieces, 0..40).prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
            let text = String::from_utf8_lossy(&bytes);
            for d in diagnose(&text, &Context::default()) {
                prop_assert!(codes::lookup(d.code.as_str()).is_some());
                prop_assert!((0.0..=1.0).contains(&d.confidence));
            }
        }

        #[test]
        fn trigger_soup_never_panics(text in fragments()) {
            for d in diagnose(&text, &Context::default()) {
                prop_assert!(codes::lookup(d.code.as_str()).is_some(), "{}", d.code);
                prop_assert!(!d.fix.is_empty());
                let _ = render(&d);
            }
        }
    }
}

#[test]
fn a_frameworks_cuda_library_is_told_from_a_toolkit_library() {
    let top = |log: &str| {
        diagnose(log, &Context::default())
            .into_iter()
            .find(|d| d.confidence >= 0.5)
    };
    for (log, lib) in [
        ("./app: error while loading shared libraries: libc10_cuda.so: cannot open shared object file: No such file or directory", "libc10_cuda.so"),
        ("OSError: libggml-cuda.so: cannot open shared object file: No such file or directory", "libggml-cuda.so"),
        ("Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.12: cannot open shared object file", "libcublasLt.so.12"),
    ] {
        let d = top(log).unwrap_or_else(|| panic!("no diagnosis for {log}"));
        let want = if lib.starts_with("libcublas") {
            "cuda-runtime-lib-not-found"
        } else {
            "framework-lib-not-found"
        };
        assert_eq!(d.code, want, "{log}: {d:?}");
        assert!(d.cause.contains(lib), "{d:?}");
    }
    // At link time the fix is a search path, not the loader's.
    let d =
        top("  = note: /usr/bin/ld: cannot find -ltorch_cuda: No such file or directory").unwrap();
    assert_eq!(d.code, "framework-lib-not-found");
    assert!(
        d.fix.iter().any(|f| f.contains("rustc-link-search")),
        "{d:?}"
    );
    // A library without a CUDA word is nobody's CUDA problem.
    for log in [
        "error: libLLVM-7.so: cannot open shared object file: No such file or directory",
        "./app: error while loading shared libraries: libssl.so.1.1: cannot open shared object file",
        "./app: error while loading shared libraries: libcudaq.so: cannot open shared object file",
    ] {
        assert!(top(log).is_none(), "{log}: {:?}", diagnose(log, &Context::default()));
    }
}

#[test]
fn nvcc_failing_without_a_word_is_told_from_nvcc_reporting_an_error() {
    let codes = |log: &str| -> Vec<String> {
        diagnose(log, &Context::default())
            .into_iter()
            .filter(|d| d.confidence >= 0.5)
            .map(|d| d.code.to_string())
            .collect()
    };
    // bindgen_cuda's three shapes, and cudaforge's, with nothing captured.
    for log in [
        "nvcc error while compiling \"src/affine.cu\":\n\n# stdout\n\n\n# stderr\n\n\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n",
        "nvcc error while compiling \"src\\\\affine.cu\":\n\n# CLI \"nvcc\" \"--ptx\" \n\n# stdout\n(empty)\n\n# stderr\n(empty)\n",
        "nvcc error while compiling \"src/cast.cu\": Output { status: ExitStatus(unix_wait_status(256)), stdout: \"\", stderr: \"\" }",
        "Error: CompilationFailed { path: \"src/affine.cu\", message: \"nvcc error:\\n\\n\" }",
    ] {
        assert_eq!(codes(log), ["compiler-killed"], "{log}");
    }
    // nvcc said something: that is the diagnosis, not a silent death.
    for log in [
        "nvcc error while compiling \"src/affine.cu\":\n\n# stdout\n\n\n# stderr\nsrc/affine.cu(3): error: identifier \"x\" is undefined\n",
        "nvcc error while compiling \"src/affine.cu\":\n\n# stdout\nsrc/affine.cu(3): error C2065: 'x': undeclared identifier\n\n# stderr\n\n",
        "Error: CompilationFailed { path: \"src/affine.cu\", message: \"nvcc error:\\nsrc/affine.cu(3): error: expected a \\\";\\\"\\n\" }",
        "nvcc error while compiling \"src/affine.cu\":",
    ] {
        assert!(
            !codes(log).contains(&"compiler-killed".to_string()),
            "{log}: {:?}",
            codes(log)
        );
    }
}

#[test]
fn the_readme_counts_every_code() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .unwrap();
    let n = codes::all().len();
    assert!(
        readme.contains(&format!("({n} stable codes)")),
        "README.md's command table should say ({n} stable codes)"
    );
}

#[test]
fn an_option_newer_than_the_nvcc_is_told_from_a_host_flag() {
    let d = &diagnose("nvcc fatal   : Unknown option 'std'", &Context::default())[0];
    assert_eq!(d.code, "nvcc-unknown-option");
    assert!(d.cause.contains("older than the release"), "{d:?}");
    let d = &diagnose(
        "nvcc fatal   : Unknown option '--threads'",
        &Context::default(),
    )[0];
    assert!(d.cause.contains("older than the release"), "{d:?}");
    // A host-compiler flag is not an nvcc option in any release.
    let d = &diagnose("nvcc fatal   : Unknown option '-Wall'", &Context::default())[0];
    assert!(d.cause.contains("not an nvcc option"), "{d:?}");
    assert!(d.fix[0].contains("-Xcompiler=-Wall"), "{d:?}");
}

#[test]
fn a_bindings_module_without_a_function_is_a_weak_version_hint() {
    let log = "error[E0599]: no method named `cuMemAdvise_v2` found for reference `&'static driver::sys::sys_12010::Lib` in the current scope";
    let d = &diagnose(log, &Context::default())[0];
    assert_eq!(d.code, "toolkit-unsupported-by-crate");
    assert!(d.confidence < 0.5, "a crate bug reads the same: {d:?}");
    assert!(d.cause.contains("12.1"), "{d:?}");
    // Not a versioned module: nothing.
    let other = "error[E0599]: no method named `foo` found for reference `&'static candle_core::sys::Lib` in the current scope";
    assert!(diagnose(other, &Context::default()).is_empty());
}

#[test]
fn a_cuda_function_missing_at_link_time_names_the_library_to_link() {
    for (log, code, lib) in [
        ("main.cpp:(.text+0x1a): undefined reference to `cudaMalloc'", "cuda-runtime-lib-not-found", "libcudart"),
        ("kernel.obj : error LNK2019: unresolved external symbol __cudaRegisterFatBinary referenced in function", "cuda-runtime-lib-not-found", "libcudart"),
        ("LNK2019: unresolved external symbol cuGetErrorString", "libcuda-not-found", "libcuda"),
        ("gemm.o: undefined reference to `cublasSgemm_v2'", "cuda-runtime-lib-not-found", "libcublas"),
    ] {
        let d = &diagnose(log, &Context::default())[0];
        assert_eq!(d.code, code, "{log}: {d:?}");
        assert!(d.cause.contains(lib) && d.cause.contains("not linked"), "{d:?}");
    }
    // Not a CUDA API function: nothing (curl, a user's `cu_helper`, nvlink's device link).
    for log in [
        "main.o: undefined reference to `curl_easy_init'",
        "main.o: undefined reference to `cu_helper'",
        "nvlink error   : Undefined reference to '_Z6helperf' in 'a.o'",
    ] {
        assert!(
            diagnose(log, &Context::default())
                .iter()
                .all(|d| d.code != "cuda-runtime-lib-not-found" && d.code != "libcuda-not-found"),
            "{log}"
        );
    }
}

#[test]
fn loader_messages_in_other_words_and_languages_name_the_library() {
    for (log, code) in [
        ("fatal   : Unable to load library 'libnvidia-ptxjitcompiler.so.535.104.05'", "ptx-jit-compiler-missing"),
        ("GpuArrayException: b'Could not load \"nvrtc64_120_0.dll\": The specified module could not be found.\\r\\n'", "cuda-runtime-lib-not-found"),
        ("OSError: [WinError 126] The specified module could not be found. Error loading \"C:\\\\x\\\\cublas64_12.dll\"", "cuda-runtime-lib-not-found"),
        ("LINK : fatal error LNK1181: impossible d'ouvrir le fichier en entrée 'cudart.lib'", "cuda-runtime-lib-not-found"),
        ("nvrtc: error: failed to load builtins for compute_89.", "cuda-runtime-lib-not-found"),
        ("error: could not find native static library `cudart_static`, perhaps an -L flag is missing?", "cuda-runtime-lib-not-found"),
    ] {
        let d = &diagnose(log, &Context::default())[0];
        assert_eq!(d.code, code, "{log}: {d:?}");
    }
    // The same words for a library that is not CUDA's: nothing.
    for log in [
        "OSError: [WinError 126] The specified module could not be found. Error loading \"C:\\\\x\\\\zlib1.dll\"",
        "LINK : fatal error LNK1181: cannot open input file 'ssl.lib'",
        "fatal: Unable to load library 'libfoo.so.1'",
    ] {
        assert!(
            diagnose(log, &Context::default()).iter().all(|d| d.confidence < 0.5),
            "{log}: {:?}",
            diagnose(log, &Context::default())
        );
    }
}

#[test]
fn nvrtc_rejecting_its_options_points_at_the_architecture_before_it() {
    let log = "--std=c++17 --gpu-architecture=sm_89 -DCUDA\nFailed invoking compiler for CUDA C++ program: NVRTC_ERROR_INVALID_OPTION";
    let d = &diagnose(log, &Context::default())[0];
    assert_eq!(d.code, "arch-too-new-for-nvcc", "{d:?}");
    assert!(
        d.cause.starts_with("The libnvrtc") && d.cause.contains("11.8"),
        "{d:?}"
    );
    // Without an architecture on an option line, nothing to point at.
    let alone = "Failed invoking compiler for CUDA C++ program: NVRTC_ERROR_INVALID_OPTION";
    assert!(diagnose(alone, &Context::default())
        .iter()
        .all(|d| !d.code.as_str().starts_with("arch-")));
}

/// Scores a blind set (a folder of files in the corpus format, plus an
/// optional `# rust: yes` header line) by the corpus rule and prints a
/// table: `DIAG_BLIND_SET=/path cargo test -p workspace-tests --test
/// diagnose score_blind_set -- --ignored --nocapture`. A positive is right
/// when the top code is the expected one; a negative (`none`) when nothing
/// reaches 0.5. Calibration: of the tops at >= 0.5, how many are right; of
/// the positives below 0.5, how many name the expected code anywhere.
#[test]
#[ignore = "a helper for blind sets outside the repository"]
fn score_blind_set() {
    let Ok(dir) = std::env::var("DIAG_BLIND_SET") else {
        eprintln!("set DIAG_BLIND_SET to a folder of labelled logs");
        return;
    };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    paths.sort();
    let (mut n, mut right, mut rust_n, mut rust_right) = (0, 0, 0, 0);
    let (mut pos, mut pos_right, mut neg, mut neg_right) = (0, 0, 0, 0);
    let (mut confident, mut confident_right, mut unsure, mut unsure_named) = (0, 0, 0, 0);
    let mut confident_wrong = 0;
    for p in &paths {
        let e = read_entry(p);
        let rust = std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .any(|l| l.trim() == "# rust: yes");
        let found = diagnose(&e.body, &Context::default());
        let expect = e.expect[0].as_str();
        let top = found.first();
        let ok = if expect == "none" {
            neg += 1;
            let ok = found.iter().all(|d| d.confidence < 0.5);
            neg_right += usize::from(ok);
            ok
        } else {
            pos += 1;
            let ok = top.is_some_and(|d| d.code.as_str() == expect);
            pos_right += usize::from(ok);
            ok
        };
        n += 1;
        right += usize::from(ok);
        if rust {
            rust_n += 1;
            rust_right += usize::from(ok);
        }
        match top {
            Some(d) if d.confidence >= 0.5 => {
                confident += 1;
                confident_right += usize::from(ok);
                confident_wrong += usize::from(!ok);
            }
            _ if expect != "none" => {
                unsure += 1;
                let named = found.iter().any(|d| {
                    d.code.as_str() == expect || d.alternatives.iter().any(|a| a.contains(expect))
                });
                unsure_named += usize::from(named);
            }
            _ => {}
        }
        let got: Vec<String> = found
            .iter()
            .map(|d| format!("{}@{:.2}", d.code, d.confidence))
            .collect();
        println!(
            "{} {:<28} {:<4} expect {:<34} got {}",
            if ok { "ok  " } else { "MISS" },
            p.file_stem().unwrap().to_string_lossy(),
            if rust { "rust" } else { "" },
            expect,
            got.join(", ")
        );
    }
    println!("\nright {right}/{n}; rust {rust_right}/{rust_n}; positives {pos_right}/{pos}; negatives {neg_right}/{neg}");
    println!("confident (>= 0.5): {confident_right}/{confident} right ({confident_wrong} wrong); below 0.5: {unsure_named}/{unsure} name the cause");
}

// ---------------------------------------------------------------- issue 31
// One test per class of message: the class in several wordings, and look-
// alikes that must stay silent (nothing at 0.5 or above).

/// The top diagnosis and its confidence; `None` when nothing was found.
fn top_of(text: &str) -> Option<(&'static str, f32)> {
    diagnose(text, &Context::default())
        .first()
        .map(|d| (d.code.as_str(), d.confidence))
}

/// Nothing at 0.5 or above.
fn silent(text: &str) -> bool {
    diagnose(text, &Context::default())
        .iter()
        .all(|d| d.confidence < 0.5)
}

/// Whether any diagnosis or alternative names `code`.
fn names(text: &str, code: &str) -> bool {
    diagnose(text, &Context::default())
        .iter()
        .any(|d| d.code.as_str() == code || d.alternatives.iter().any(|a| a.contains(code)))
}

#[test]
fn built_without_cuda_in_any_frameworks_words() {
    for log in [
        "Error: the candle crate has not been built with cuda support",
        "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.",
        "UserWarning: Specified provider 'CUDAExecutionProvider' is not in available provider names.Available providers: 'AzureExecutionProvider, CPUExecutionProvider'",
        "xgboost.core.XGBoostError: [10:02:11] XGBoost version not compiled with GPU support.",
    ] {
        let (code, conf) = top_of(log).unwrap_or_else(|| panic!("nothing for {log}"));
        assert_eq!(code, "cuda-backend-not-built", "{log}");
        assert!(conf >= 0.5, "{log}: {conf}");
    }
    for log in [
        "PyTorch 2.3.0 was built with CUDA 12.1 and cuDNN 8.9",
        "-- Build with CUDA support: ON",
        "Compiled with CUDA support: yes",
        "-- Building without CUDA support (set GGML_CUDA=ON to enable)",
    ] {
        assert!(silent(log), "{log}: {:?}", top_of(log));
    }
}

#[test]
fn ptx_that_fails_to_load_without_naming_the_driver_error() {
    for log in [
        " ERROR kaspacuda::worker] Error loading PTX: \"unknown error\"",
        "let module = Module::from_ptx(&ptx, &[]).unwrap();\nthread 'main' panicked at src/main.rs:12:80:\ncalled `Result::unwrap()` on an `Err` value: UnknownError",
    ] {
        let found = diagnose(log, &Context::default());
        assert_eq!(found[0].code, "ptx-too-new-for-driver", "{log}");
        assert!(found[0].confidence < 0.5, "{log}: a hint, not a verdict");
        assert!(found[0].cause.contains("nvidia-smi"), "{:?}", found[0].cause);
    }
    // Loading PTX that works, and an unknown error with no PTX in sight.
    assert!(diagnose(
        "Loading PTX from target/kernels.ptx (12 kernels)",
        &Context::default()
    )
    .is_empty());
    // cust's bare UnknownError: the same hint, naming the driver states too.
    let bare = "called `Result::unwrap()` on an `Err` value: UnknownError";
    assert_eq!(top_of(bare).map(|t| t.0), Some("ptx-too-new-for-driver"));
    assert!(silent(bare) && names(bare, "cuda-unknown-error"));
    // An unknown error that is not a wrapper's enum is not read as one.
    assert!(diagnose("Unknown Error: check your settings", &Context::default()).is_empty());
}

#[test]
fn windows_loader_messages_and_dll_exit_codes_name_the_library() {
    let dep = r#"2026-07-18T10:30:43.500030Z ERROR ort::ep: An error occurred when attempting to register `CUDAExecutionProvider`: FAIL : Error loading "F:\x\onnxruntime_providers_cuda.dll" which depends on "cublasLt64_12.dll" which is missing."#;
    let d = &diagnose(dep, &Context::default())[0];
    assert_eq!(d.code, "cuda-runtime-lib-not-found");
    assert!(d.cause.contains("cublasLt64_12.dll"), "{}", d.cause);
    let exit = r#"WARN llama_cpp_server::supervisor: llama-server <embedding> exited with status code -1073741515, args: `Command { std: "C:\\tabby_x86_64-windows-msvc-cuda117\\llama-server.exe" }`"#;
    let (code, conf) = top_of(exit).unwrap();
    assert_eq!((code, conf >= 0.5), ("cuda-runtime-lib-not-found", true));
    // The same exit code with nothing CUDA about it is only a hint; a
    // missing file that is no library is nothing.
    assert!(silent("process exited with code 3221225781 (0xC0000135)"));
    assert!(diagnose(
        "Error: the file \"config.toml\" which is missing",
        &Context::default()
    )
    .is_empty());
}

#[test]
fn cuda_objects_without_pic_in_a_pie_link() {
    let lld = "  = note: rust-lld: error: relocation R_X86_64_PC32 cannot be used against symbol 'std::cerr'; recompile with -fPIC\n          >>> defined in /usr/lib/gcc/x86_64-linux-gnu/10/libstdc++.so\n          >>> referenced by tmpxft_00002e57_00000000-6_msm.cudafe1.cpp\n";
    let ld = "/usr/bin/ld: /tmp/out/kernels.cu.o: relocation R_X86_64_32 against `.rodata' can not be used when making a PIE object; recompile with -fPIE";
    for log in [lld, ld] {
        let d = &diagnose(log, &Context::default())[0];
        assert_eq!(d.code, "cuda-object-not-pic", "{log}");
        assert!(d.confidence >= 0.5 && d.fix[0].contains("-Xcompiler -fPIC"));
    }
    // The same error for a host object is not CUDA's.
    assert!(silent("/usr/bin/ld: libfoo.a(bar.o): relocation R_X86_64_32 against `.rodata' can not be used when making a PIE object; recompile with -fPIE"));
}

#[test]
fn cuda_error_numbers_after_other_punctuation() {
    let (code, conf) = top_of("CUDA error! 2").unwrap();
    assert_eq!(code, "out-of-memory");
    assert!(conf <= 0.5, "by number only");
    assert_eq!(
        top_of("Cuda Error - 700 in kernel").map(|t| t.0),
        Some("illegal-address")
    );
    // Versions, line numbers and words are not error numbers.
    assert!(diagnose("CUDA error - 12.2 toolkit", &Context::default()).is_empty());
    assert!(diagnose("CUDA error! see the log above", &Context::default()).is_empty());
}

#[test]
fn out_of_memory_reported_as_another_error_in_an_allocation() {
    for log in [
        "cudaMalloc(&buf, bytes) failed: invalid argument",
        "cuMemSetAccess(m_base_address + m_size, n_bytes_to_allocate, &access_desc, 1) failed with error CUDA_ERROR_INVALID_VALUE while growing the allocation",
    ] {
        let (code, conf) = top_of(log).unwrap();
        assert_eq!(code, "out-of-memory", "{log}");
        assert!(conf < 0.5, "a bad size reads the same: {conf}");
    }
    // Not an allocation, and an allocation that worked.
    assert!(diagnose(
        "cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost) failed: invalid argument",
        &Context::default()
    )
    .iter()
    .all(|d| d.code != "out-of-memory"));
    assert!(diagnose("allocated 2.00 GiB for the KV cache", &Context::default()).is_empty());
}

#[test]
fn a_warning_before_the_symptom_is_the_diagnosis() {
    let warning = "2023-09-26 23:49:25.317379: W external/xla/xla/stream_executor/gpu/asm_compiler.cc:231] Falling back to the CUDA driver for PTX compilation; ptxas does not support CC 9.0\n";
    let symptom = "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Could not find the corresponding function: cudaErrorSymbolNotFound : named symbol not found\n";
    let found = diagnose(&format!("{warning}{symptom}"), &Context::default());
    assert_eq!(found[0].code, "ptxas-too-old", "{:?}", codes_of(&found));
    assert!(found[0].confidence >= 0.5);
    assert!(
        found[0].fix.iter().any(|f| f.contains("sm_90")),
        "{:?}",
        found[0].fix
    );
    // The warning alone: XLA goes on with the driver; a hint only.
    assert!(silent(warning));
    assert!(names(warning, "ptxas-too-old"));
}

#[test]
fn half_and_bf16_types_a_target_lacks_in_the_front_ends_words() {
    // tf32 wmma fragments (burn/cubecl through NVRTC on a GTX 1650).
    let tf32 = "default_program(26): error: incomplete type \"nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 8, float, void>\" is not allowed";
    let d = &diagnose(tf32, &Context::default())[0];
    assert_eq!(d.code, "arch-feature-needs-higher-target");
    assert!(d.cause.contains("sm_80"), "{}", d.cause);
    // atomicAdd on __half below sm_70, with the target on the command line.
    let atomic = "nvcc -arch=sm_61 -c k.cu\nk.cu(12): error: no instance of overloaded function \"atomicAdd\" matches the argument list\n            argument types are: (__half *, __half)\n";
    let (code, conf) = top_of(atomic).unwrap();
    assert_eq!(code, "arch-feature-needs-higher-target");
    assert!(conf >= 0.5);
    // Incomplete for every target (a layout on an accumulator), and a
    // conversion ambiguity that is the code's: silent.
    assert!(silent("default_program(45): error: incomplete type \"nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float, nvcuda::wmma::row_major>\" is not allowed"));
    assert!(silent("k.cu(3): error: more than one conversion function from \"__half\" to a built-in type applies:"));
    assert!(silent("k.cu(9): error: no operator \"+\" matches these operands\n            operand types are: Vec3 + int\n"));
}

#[test]
fn nvrtc_builtins_missing_in_any_wording() {
    for log in [
        "nvrtc: error: failed to open libnvrtc-builtins.so.11.6",
        "RuntimeError: nvrtc: error: failed to open libnvrtc-builtins.so.11.1.\n  Make sure that libnvrtc-builtins.so.11.1 is installed correctly.",
        "numba.cuda.cudadrv.error.NvrtcError: Failed to call nvrtcCompileProgram: NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
        "Exception: Error compiling program: nvrtc: error: failed to load builtins",
    ] {
        let d = &diagnose(log, &Context::default())[0];
        assert_eq!(d.code, "cuda-runtime-lib-not-found", "{log}");
        assert!(d.cause.contains("builtins"), "{log}: {}", d.cause);
    }
    assert!(silent(
        "\tlibnvrtc-builtins.so.12.4 => /usr/local/cuda/lib64/libnvrtc-builtins.so.12.4 (0x00007f)"
    ));
}

#[test]
fn math_library_statuses_say_what_they_mean_for_the_gpu() {
    let cases = [
        ("Error: Cuda(Cublas(CublasError(CUBLAS_STATUS_NOT_SUPPORTED)))", "library-op-unsupported", true),
        ("RuntimeError: CUDA error: CUBLAS_STATUS_ARCH_MISMATCH when calling `cublasGemmEx( handle, opa, opb, m, n, k, &falpha, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, &fbeta, c, CUDA_R_16BF, ldc, CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`", "library-op-unsupported", true),
        ("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`", "out-of-memory", true),
        ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED", "out-of-memory", false),
        ("RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`", "no-kernel-image-for-device", false),
    ];
    for (log, code, confident) in cases {
        let d = &diagnose(log, &Context::default())[0];
        assert_eq!(d.code, code, "{log}");
        assert_eq!(d.confidence >= 0.5, confident, "{log}: {}", d.confidence);
    }
    let bf16 = &diagnose(cases[1].0, &Context::default())[0];
    assert!(
        bf16.fix
            .iter()
            .any(|f| f.contains("bf16") && f.contains("sm_80")),
        "{:?}",
        bf16.fix
    );
    // Source code that names the statuses is not a failure.
    assert!(diagnose(
        "  case CUBLAS_STATUS_NOT_SUPPORTED: return \"CUBLAS_STATUS_NOT_SUPPORTED\";",
        &Context::default()
    )
    .is_empty());
    assert!(diagnose(
        "if (status == CUDNN_STATUS_NOT_SUPPORTED) { fallback(); }",
        &Context::default()
    )
    .is_empty());
}

#[test]
fn framework_setup_messages_name_the_library_behind_them() {
    let bare = "RuntimeError: \n        CUDA Setup failed despite GPU being available. Inspect the CUDA SETUP outputs above to fix your environment!";
    let found = diagnose(bare, &Context::default());
    assert_eq!(found[0].code, "framework-lib-not-found");
    assert!(
        found[0].confidence < 0.5,
        "the bare line cannot say which library"
    );
    assert!(
        found[0].cause.contains("python -m bitsandbytes"),
        "{}",
        found[0].cause
    );
    let named = "CUDA SETUP: Required library version not found: libbitsandbytes_cuda121.so. Maybe you need to compile it from source?\nCUDA Setup failed despite GPU being available.";
    let d = &diagnose(named, &Context::default())[0];
    assert_eq!(d.code, "framework-lib-not-found");
    assert!(
        d.confidence >= 0.5 && d.cause.contains("libbitsandbytes_cuda121.so"),
        "{d:?}"
    );
    assert!(d
        .fix
        .iter()
        .any(|f| f.contains("pip install -U bitsandbytes")));
    // bitsandbytes finding its libraries is not a failure.
    assert!(diagnose("CUDA SETUP: CUDA runtime path found: /usr/local/cuda/lib64/libcudart.so\nCUDA SETUP: Loading binary /x/libbitsandbytes_cuda121.so...", &Context::default()).is_empty());
}

#[test]
fn error_strings_in_other_cases_and_wrappers() {
    for (log, code) in [
        (
            "RuntimeError: No kernel image is available for execution on the device",
            "no-kernel-image-for-device",
        ),
        (
            "CUDA Error: Too Many Resources Requested For Launch",
            "launch-out-of-resources",
        ),
        (
            "[ggml] CUDA ERROR: AN ILLEGAL MEMORY ACCESS WAS ENCOUNTERED",
            "illegal-address",
        ),
        (
            "Error: The provided PTX was compiled with an unsupported toolchain.",
            "ptx-too-new-for-driver",
        ),
    ] {
        assert_eq!(top_of(log).map(|t| t.0), Some(code), "{log}");
    }
    // Generic strings in other cases still need CUDA on the line.
    assert!(diagnose(
        "java.lang.OutOfMemoryError: Out Of Memory",
        &Context::default()
    )
    .is_empty());
    assert!(diagnose(
        "Unknown Error while parsing config.yaml",
        &Context::default()
    )
    .is_empty());
}

#[test]
fn malformed_toolkit_paths_inside_another_tools_error() {
    for log in [
        "FileNotFoundError: [Errno 2] No such file or directory: '/usr/local/cuda-12.1:/bin/nvcc'",
        "FileNotFoundError: [Errno 2] No such file or directory: '\"/usr/local/cuda\"/bin/nvcc'",
        "subprocess.CalledProcessError: Command '[':/usr/local/cuda/bin/nvcc', '-V']' returned non-zero exit status 127.",
    ] {
        let d = &diagnose(log, &Context::default())[0];
        assert_eq!(d.code, "cuda-home-invalid", "{log}");
        assert!(d.confidence >= 0.5, "{log}");
    }
    for log in [
        "FileNotFoundError: [Errno 2] No such file or directory: '/usr/local/cuda/bin/nvcc'",
        "\"C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.4\\bin\\nvcc.exe\" -gencode=arch=compute_86,code=\\\"sm_86,compute_86\\\" -x cu -c k.cu",
        "error MSB3721: The command \"\"C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.6\\bin\\nvcc.exe\" -gencode=arch=compute_86,code=\\\"compute_86,compute_86\\\"\" exited with code 1.",
    ] {
        assert!(diagnose(log, &Context::default()).iter().all(|d| d.code != "cuda-home-invalid"), "{log}");
    }
}

#[test]
fn build_script_fetches_of_cuda_dependencies_that_fail() {
    for log in [
        "warning: mistralrs-quant@0.8.23: Cloning cutlass from https://github.com/NVIDIA/cutlass.git\nError: GitOperationFailed(\"git clone failed with status: exit status: 128\")",
        "Error: GitOperationFailed(\"git clone failed: git executable not found in PATH. Please install git and retry. Original error: No such file or directory (os error 2)\")",
        "fatal: unable to access 'https://github.com/NVIDIA/cutlass.git/': Could not resolve host: github.com",
        "  Error: Failed to clone cutlass repository\n\n  Caused by:\n      No such file or directory (os error 2)",
    ] {
        let d = &diagnose(log, &Context::default())[0];
        assert_eq!(d.code, "cuda-dependency-fetch-failed", "{log}");
        assert!(d.confidence >= 0.5, "{log}");
    }
    let git = &diagnose("  Error: Failed to clone cutlass repository\n\n  Caused by:\n      No such file or directory (os error 2)", &Context::default())[0];
    assert!(git.fix[0].contains("install git"), "{:?}", git.fix);
    for log in [
        "warning: candle-flash-attn-v3@0.9.2: Cloning cutlass from https://github.com/NVIDIA/cutlass.git",
        "fatal: unable to access 'https://github.com/serde-rs/serde.git/': Could not resolve host: github.com",
        "error: failed to download `serde v1.0.200`",
    ] {
        assert!(silent(log), "{log}: {:?}", top_of(log));
    }
}

#[test]
fn undecidable_launch_failures_give_candidates_and_the_check_between_them() {
    let bare = "RuntimeError: CUDA error: unspecified launch failure";
    let found = diagnose(bare, &Context::default());
    assert!(found[0].confidence < 0.5, "{:?}", found[0]);
    assert!(names(bare, "driver-state-lost") && names(bare, "illegal-address"));
    assert!(
        found[0]
            .fix
            .iter()
            .any(|f| f.contains("trivial CUDA program")),
        "{:?}",
        found[0].fix
    );
    // With a resume from suspend in the log it is the driver's state.
    let resumed = format!(
        "Jul 20 09:12:01 host systemd-sleep[2211]: System returned from sleep state.\n{bare}"
    );
    let (code, conf) = top_of(&resumed).unwrap();
    assert_eq!((code, conf >= 0.5), ("driver-state-lost", true));
    // A precise fault is a fault.
    let (code, conf) = top_of("CUDA error: an illegal memory access was encountered").unwrap();
    assert_eq!((code, conf >= 0.5), ("illegal-address", true));
    // "Resuming from checkpoint" is not a resume from suspend.
    assert_eq!(
        top_of(&format!("Resuming training from checkpoint-500\n{bare}")).map(|t| t.0),
        Some("illegal-address")
    );
}

#[test]
fn a_missing_symbol_through_the_runtime_api_is_a_missing_architecture() {
    let runtime = "CUDA error cudaErrorSymbolNotFound [/home/u/stdexec/include/nvexec/stream/bulk.cuh:239]: named symbol not found";
    let found = diagnose(runtime, &Context::default());
    assert_eq!(found[0].code, "no-kernel-image-for-device");
    assert!(found[0].confidence < 0.5);
    assert!(names(runtime, "kernel-not-found"));
    // The driver API's lookup by name is the name.
    let driver = "CUDA Error CUDA_ERROR_NOT_FOUND: named symbol not found while calling module_get_function (cuModuleGetFunction)";
    assert_eq!(top_of(driver).map(|t| t.0), Some("kernel-not-found"));
}

#[test]
fn a_generic_error_just_after_an_allocation_is_memory() {
    let log = "INFO mistralrs_core::paged_attention: Allocating 24576 MB for PagedAttention KV cache per GPU\nError: DriverError(CUDA_ERROR_INVALID_VALUE, \"invalid argument\")\n";
    let (code, conf) = top_of(log).unwrap();
    assert_eq!(code, "out-of-memory");
    assert!(conf < 0.5);
    // Far from any allocation, or an allocation that is fine: nothing.
    let far = format!(
        "INFO Allocating 24576 MB for the KV cache\n{}Error: DriverError(CUDA_ERROR_INVALID_VALUE, \"invalid argument\")\n",
        "INFO step done\n".repeat(400)
    );
    assert!(diagnose(&far, &Context::default())
        .iter()
        .all(|d| d.code != "out-of-memory"));
    assert!(diagnose(
        "INFO Allocating 512 MB for the KV cache\nINFO Model loaded.",
        &Context::default()
    )
    .is_empty());
}

#[test]
fn a_build_script_that_finds_no_gpu_codes_in_nvcc_has_an_old_nvcc() {
    let log = "thread 'main' panicked at 'Could not get Cuda compute cap: no gpu codes parsed from nvcc', /home/u/.cargo/git/checkouts/candle-0c2b4fa9e5801351/8d8f48c/candle-kernels/build.rs:106:41";
    let d = &diagnose(log, &Context::default())[0];
    assert_eq!(d.code, "toolkit-unsupported-by-crate");
    assert!(d.cause.contains("--list-gpu-code"), "{}", d.cause);
    // nvidia-smi failing is still arch detection.
    let smi = "Could not get Cuda compute cap: `nvidia-smi` failed. Ensure that you have CUDA installed and that `nvidia-smi` is in your PATH.";
    assert_eq!(top_of(smi).map(|t| t.0), Some("arch-not-detected"));
}

#[test]
fn a_build_killed_for_host_memory_in_any_wording() {
    // The kill in the words around it, in a log that shows a build.
    for log in [
        "killed out of memory\nNVCC_PREPEND_FLAGS=\"-t 1\" cargo build --release --features \"cuda flash-attn\" --jobs 1",
        "   Compiling candle-kernels v0.9.1\nerror: failed to run custom build command for `candle-kernels v0.9.1`\nCaused by:\n  process didn't exit successfully: `/x/build-script-build` (signal: 9, SIGKILL: kill)",
        "[ 42%] Building CUDA object CMakeFiles/ggml.dir/ggml-cuda.cu.o\n[ 3120.4] Out of memory: Killed process 4242 (cicc) total-vm:23456kB",
        "Building wheel for flash-attn (setup.py) ... error\nvirtual memory exhausted: Cannot allocate memory",
    ] {
        let (code, conf) = top_of(log).unwrap_or(("", 0.0));
        assert_eq!((code, conf >= 0.5), ("compiler-killed", true), "{log}");
    }
    // A program killed while running is the program's memory: a hint at
    // most, never a confident compiler diagnosis.
    for log in [
        "   Compiling app v0.1.0\n    Finished `release` profile [optimized] target(s) in 41.02s\n     Running `target/release/app`\nLoading model...\nkilled (out of memory)",
        "$ python train.py\nKilled\n[ 881.2] Out of memory: Killed process 1234 (python)",
        "container exited with code 137",
    ] {
        assert!(
            top_of(log).is_none_or(|(_, c)| c < 0.5),
            "{log}: {:?}",
            top_of(log)
        );
    }
    // The GPU's own out-of-memory is not the host's.
    let gpu = "cargo build --release\nError: DriverError(CUDA_ERROR_OUT_OF_MEMORY, \"out of memory\") ... killed";
    assert_eq!(top_of(gpu).unwrap().0, "out-of-memory");
}

#[test]
fn a_cuda_request_answered_with_a_list_that_lacks_cuda() {
    for log in [
        "run.py: error: argument --execution-provider: invalid choice: 'cuda' (choose from 'azure', 'cpu')",
        "UserWarning: Specified provider 'CUDAExecutionProvider' is not in available provider names.Available providers: 'AzureExecutionProvider, CPUExecutionProvider'",
    ] {
        let (code, conf) = top_of(log).unwrap();
        assert_eq!((code, conf >= 0.5), ("cuda-backend-not-built", true), "{log}");
    }
    // A list that has CUDA, or a request for something else, says nothing.
    assert!(silent(
        "error: argument --execution-provider: invalid choice: 'rocm' (choose from 'cpu', 'cuda')"
    ));
    assert!(silent(
        "error: argument --mode: invalid choice: 'fast' (choose from 'slow', 'cuda')"
    ));
    assert!(silent("Available providers: ['TensorrtExecutionProvider', 'CUDAExecutionProvider', 'CPUExecutionProvider']"));
    // Another option's own choices are only a hint.
    let other = "error: argument --device: invalid choice: 'cuda' (choose from 'cpu', 'mps')";
    assert!(top_of(other).is_some_and(|(c, p)| c == "cuda-backend-not-built" && p < 0.5));
}

#[test]
fn a_framework_answering_false_to_cuda_is_a_hint_with_its_checks() {
    for log in [
        "    println!(\"Cuda available: {:?}\", Cuda::is_available());\n    > false",
        "tch::Cuda::is_available() returns false",
        "Device::cuda_if_available() is false",
        ">>> torch.cuda.is_available()\nFalse",
        "print(torch.cuda.is_available()) # False",
    ] {
        let d = &diagnose(log, &Context::default());
        assert!(!d.is_empty(), "{log}");
        assert_eq!(d[0].code, "cuda-backend-not-built", "{log}");
        assert!(d[0].confidence < 0.5, "{log}");
        let text = format!("{} {}", d[0].cause, d[0].alternatives.join(" "));
        assert!(text.contains("nvidia-smi"), "{log}: {text}");
    }
    // True, or the check in code, says nothing.
    for log in [
        ">>> torch.cuda.is_available()\nTrue",
        "device = \"cuda\" if torch.cuda.is_available() else \"cpu\"",
        "In [2]: torch.cuda.is_available()\nOut[2]: True",
        "let device = Device::cuda_if_available(0)?;",
    ] {
        assert!(silent(log), "{log}: {:?}", top_of(log));
    }
}

#[test]
fn a_frameworks_notices_for_a_machine_without_cuda_are_hints_with_the_question() {
    let cpu_only = "2021-04-08 16:04:52.091563: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory\n2021-04-08 16:04:52.091586: I tensorflow/stream_executor/cuda/cudart_stub.cc:29] Ignore above cudart dlerror if you do not have a GPU set up on your machine.\n2021-04-08 16:04:53.390411: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load dynamic library 'libcuda.so.1'; dlerror: libcuda.so.1: cannot open shared object file: No such file or directory\n2021-04-08 16:04:53.390433: I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:156] kernel driver does not appear to be running on this host (xps13): /proc/driver/nvidia/version does not exist";
    let d = diagnose(cpu_only, &Context::default());
    assert!(d.iter().all(|d| d.confidence < 0.5), "{d:?}");
    assert!(
        d[0].alternatives.iter().any(|a| a.contains("nvidia-smi")),
        "{:?}",
        d[0]
    );
    // Without TensorFlow's "ignore" notice the same library line is the failure.
    let gpu_expected = "2021-04-08 16:04:52.091563: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory\n2021-04-08 16:04:55.1: W tensorflow/core/common_runtime/gpu/gpu_device.cc:1766] Cannot dlopen some GPU libraries. Skipping registering GPU devices...";
    let (code, conf) = top_of(gpu_expected).unwrap();
    assert_eq!((code, conf >= 0.5), ("cuda-runtime-lib-not-found", true));
    // A program's own error line in such a log keeps its confidence.
    let own = format!("{cpu_only}\nRuntimeError: CUDA error: out of memory");
    assert_eq!(top_of(&own).unwrap().0, "out-of-memory");
}

#[test]
fn candles_missing_cuda_op_is_a_crate_built_without_its_cuda_feature() {
    let (code, conf) = top_of("Error: Cuda(\"no cuda implementation for rms-norm\")").unwrap();
    assert_eq!((code, conf >= 0.5), ("cuda-backend-not-built", true));
    assert!(silent(
        "Error: Metal(\"no metal implementation for rms-norm\")"
    ));
}

#[test]
fn lld_and_mold_undefined_cuda_library_symbols_are_a_library_not_linked() {
    for log in [
        "mold: error: undefined symbol: ncclGroupEnd",
        "ld.lld: error: undefined symbol: cublasLtMatmul",
    ] {
        let (code, conf) = top_of(log).unwrap();
        assert_eq!(
            (code, conf >= 0.5),
            ("cuda-runtime-lib-not-found", true),
            "{log}"
        );
    }
    assert!(silent("mold: error: undefined symbol: my_helper_fn"));
    assert!(silent("ld.lld: error: undefined symbol: ZSTD_compress"));
}

#[test]
fn a_frameworks_core_library_missing_at_load() {
    let log = "target/release/rust_ort: error while loading shared libraries: libonnxruntime.so.1.17.3: cannot open shared object file: No such file or directory";
    let (code, conf) = top_of(log).unwrap();
    assert_eq!((code, conf >= 0.5), ("framework-lib-not-found", true));
    assert!(silent("./app: error while loading shared libraries: libzstd.so.1: cannot open shared object file: No such file or directory"));
}

#[test]
fn double_atomics_need_sm60_and_a_cpu_builds_warning_is_a_hint() {
    let log = "error: no instance of overloaded function \"atomicAdd\" matches the argument list\n            argument types are: (double *, double)";
    let (code, conf) = top_of(log).unwrap();
    assert_eq!(
        (code, conf >= 0.5),
        ("arch-feature-needs-higher-target", true)
    );
    // Other operand mismatches are the program's type errors.
    assert!(silent("error: no instance of overloaded function \"atomicAdd\" matches the argument list\n            argument types are: (float *, double)"));
    assert!(silent("error: no instance of overloaded function \"atomicAdd\" matches the argument list\n            argument types are: (int *, float)"));
    // A CPU build's warning that it ignores GPU options is a hint; the same
    // words as the error are the diagnosis.
    let warn = "2024-10-24T08:12:44.085157Z  WARN llama_cpp_server::supervisor: <embedding>: warning: not compiled with GPU offload support, --gpu-layers option will be ignored";
    assert!(top_of(warn).is_some_and(|(c, p)| c == "cuda-backend-not-built" && p < 0.5));
    let err = "AssertionError: Torch not compiled with CUDA enabled";
    assert!(top_of(err).is_some_and(|(c, p)| c == "cuda-backend-not-built" && p >= 0.5));
}

#[test]
fn a_host_compiler_for_another_target_gets_its_platform_fix_first() {
    let windows = "tmpxft_000075f0_00000000-2.cpp\nnvcc fatal   : Host compiler targets unsupported OS.\nerror: command 'C:\\\\Program Files\\\\NVIDIA GPU Computing Toolkit\\\\CUDA\\\\v10.0\\\\bin\\\\nvcc.exe' failed with exit status 1\n";
    let linux = "nvcc -c -o layer_gpu.o -ccbin clang++ src/layer/layer_impl.cu\nnvcc fatal   : Host compiler targets unsupported OS.\nmake: *** [layer_gpu.o] Error 1\n";
    for (log, first) in [(windows, "x64 Native Tools"), (linux, "NVCC_CCBIN=g++")] {
        let d = &diagnose(log, &Context::default())[0];
        assert_eq!(d.code.as_str(), "host-compiler-unsupported", "{log}");
        assert!(d.fix[0].contains(first), "{log}: {:?}", d.fix);
        // A target is not a version: no newer toolkit or version override is offered.
        assert!(
            !d.fix
                .iter()
                .any(|f| f.contains("allow-unsupported-compiler")),
            "{:?}",
            d.fix
        );
    }
}

#[test]
fn live_kernel_limits_are_explained_with_the_counts() {
    let Some(nvcc) = workspace_tests::nvcc13() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "__global__ void k(float *o) { __shared__ float t[12289]; t[threadIdx.x] = 1; __syncthreads(); o[threadIdx.x] = t[threadIdx.x + 1]; }\n",
            "49156 bytes, where the limit is 49152",
        ),
        (
            "struct Big { float v[8200]; };\n__global__ void k(Big b, float *o) { o[threadIdx.x] = b.v[threadIdx.x]; }\n",
            "32808 bytes, where the limit is 32764",
        ),
    ];
    for (i, (source, counts)) in cases.into_iter().enumerate() {
        let cu = dir.path().join(format!("k{i}.cu"));
        std::fs::write(&cu, source).unwrap();
        let text = run(Command::new(&nvcc)
            .arg("-arch=sm_90")
            .arg("-c")
            .arg("-o")
            .arg(dir.path().join("k.o"))
            .arg(&cu));
        let d = &diagnose(&text, &Context::default())[0];
        assert_eq!(d.code.as_str(), "kernel-exceeds-target-limit", "{text}");
        assert!(d.cause.contains(counts), "{text}\n{}", d.cause);
    }
}
