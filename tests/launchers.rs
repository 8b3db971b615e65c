//! Typed kernel launchers (`cuda_build::launchers`, feature `launchers`):
//! the generated signatures for every mapped type, the bad inputs, libclang
//! missing, a compile-fail check that a wrong argument does not compile, and
//! (on a GPU) the typed vectorAdd end to end.
//!
//! These need libclang. When the test command promised the toolchain
//! (`CARGO_CUDA_TEST_REQUIRE_NVCC=1`, set by scripts/test.sh) a missing
//! libclang fails them; under a plain `cargo test` they skip with one line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use cuda_toolchain::process::{run_command, Output};

use cuda_build::launchers::{generate, Generated};

/// Runs a child under a deadline (a stuck cargo must not hang the suite).
fn run(cmd: &mut Command, secs: u64) -> Output {
    run_command(cmd, Duration::from_secs(secs)).unwrap_or_else(|e| panic!("{e}"))
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/launchers")
        .join(name)
}

/// Generates, or returns None (after one line) when libclang is not here
/// and nothing promised it.
fn try_generate(
    sources: &[PathBuf],
    includes: &[PathBuf],
    defines: &[(String, Option<String>)],
) -> Option<Generated> {
    match generate(sources, includes, defines) {
        Ok(g) => Some(g),
        Err(e) if e.code == "libclang-not-found" && !workspace_tests::nvcc_promised() => {
            eprintln!("skipped: libclang not available (apt-get install libclang-dev): {e}");
            None
        }
        Err(e) => panic!("generate failed: {e}"),
    }
}

/// Launcher name → its parameter lines (`name: type`), without the three
/// every launcher starts with.
fn signatures(code: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for chunk in code.split("pub unsafe fn ").skip(1) {
        let name = chunk[..chunk.find('(').unwrap()].to_string();
        let params_text = &chunk[chunk.find("(\n").unwrap() + 2..chunk.find(") ->").unwrap()];
        let params: Vec<String> = params_text
            .lines()
            .map(|l| l.trim().trim_end_matches(',').to_string())
            .collect();
        assert_eq!(
            params[..3],
            [
                "stream: &::cudarc::driver::CudaStream",
                "func: &::cudarc::driver::CudaFunction",
                "cfg: ::cudarc::driver::LaunchConfig"
            ],
            "{name}"
        );
        out.insert(name, params[3..].to_vec());
    }
    out
}

fn code_for<'a>(g: &'a Generated, file: &str) -> &'a str {
    &g.code_per_source
        .iter()
        .find(|(p, _)| p.ends_with(file))
        .unwrap_or_else(|| panic!("no code for {file}: {g:?}"))
        .1
}

#[test]
fn every_mapped_type_gets_its_exact_rust_type() {
    let Some(g) = try_generate(&[fixture("types.cu")], &[], &[]) else {
        return;
    };
    assert!(g.notes.is_empty(), "{:#?}", g.notes);
    let sigs = signatures(code_for(&g, "types.cu"));
    let expect = |name: &str, params: &[&str]| {
        assert_eq!(
            sigs.get(name)
                .unwrap_or_else(|| panic!("no `{name}` in {sigs:#?}")),
            &params.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            "{name}"
        );
    };
    expect(
        "builtin_scalars",
        &[
            "b: bool",
            "c: ::core::ffi::c_char",
            "sc: i8",
            "uc: u8",
            "s: i16",
            "us: u16",
            "i: i32",
            "u: u32",
            "ui: u32",
            "l: ::core::ffi::c_long",
            "ul: ::core::ffi::c_ulong",
            "ll: i64",
            "ull: u64",
            "f: f32",
            "d: f64",
        ],
    );
    expect(
        "fixed_width",
        &[
            "a: i8",
            "b: u8",
            "c: i16",
            "d: u16",
            "e: i32",
            "f: u32",
            "g: i64",
            "h: u64",
            "n: usize",
            "p: isize",
            "ip: isize",
            "up: usize",
        ],
    );
    expect(
        "half_types",
        &[
            "x: &impl ::cudarc::driver::DevicePtr<::half::f16>",
            "y: &mut impl ::cudarc::driver::DevicePtrMut<::half::f16>",
            "h: ::half::f16",
            "bx: &impl ::cudarc::driver::DevicePtr<::half::bf16>",
            "by: &mut impl ::cudarc::driver::DevicePtrMut<::half::bf16>",
            "bh: ::half::bf16",
        ],
    );
    expect(
        "pointers",
        &[
            "r#in: &impl ::cudarc::driver::DevicePtr<f32>",
            "out: &mut impl ::cudarc::driver::DevicePtrMut<f32>",
            "d: &impl ::cudarc::driver::DevicePtr<f64>",
            "counts: &mut impl ::cudarc::driver::DevicePtrMut<i32>",
            "bytes: &impl ::cudarc::driver::DevicePtr<u8>",
            "lens: &mut impl ::cudarc::driver::DevicePtrMut<usize>",
        ],
    );
    expect(
        "typedefs",
        &[
            "x: &impl ::cudarc::driver::DevicePtr<f32>",
            "y: &mut impl ::cudarc::driver::DevicePtrMut<f32>",
            "a: f32",
        ],
    );
    expect("in_block", &["n: i32"]);
    // A __device__ function and a kernel only declared here get nothing.
    assert_eq!(sigs.len(), 6, "{:?}", sigs.keys());
}

#[test]
fn launcher_pushes_arguments_in_order_and_names_its_kernel() {
    let Some(g) = try_generate(&[fixture("vector_add.cu")], &[], &[]) else {
        return;
    };
    let code = code_for(&g, "vector_add.cu");
    assert!(
        code.contains("/// Launches the kernel `vectorAdd` ("),
        "{code}"
    );
    assert!(code.contains("vector_add.cu:2):"), "{code}");
    assert!(code.contains("load_function(\"vectorAdd\")"), "{code}");
    assert!(code.contains("/// # Safety\n"), "{code}");
    let pushes: Vec<&str> = code
        .lines()
        .filter(|l| l.trim_start().starts_with("__launch.arg("))
        .map(str::trim)
        .collect();
    assert_eq!(
        pushes,
        [
            "__launch.arg(&__ptr0);",
            "__launch.arg(&__ptr1);",
            "__launch.arg(&__ptr2);",
            "__launch.arg(&n);"
        ]
    );
    assert!(code.contains(
        "let (__ptr2, __guard2) = ::cudarc::driver::DevicePtrMut::device_ptr_mut(c, stream);"
    ));
}

#[test]
fn bad_kernels_are_noted_by_file_and_line_and_the_rest_still_generated() {
    let Some(g) = try_generate(&[fixture("bad.cu")], &[], &[]) else {
        return;
    };
    let note = |line: u32, kernel: &str| -> &str {
        let prefix = format!("bad.cu:{line}: kernel `{kernel}`");
        g.notes
            .iter()
            .find(|n| n.contains(&prefix))
            .unwrap_or_else(|| panic!("no note starting {prefix}: {:#?}", g.notes))
    };
    assert!(note(5, "byValueStruct").contains("`Params`, a struct passed by value"));
    assert!(note(6, "pointerToPointer").contains("`float **`, a pointer to a pointer"));
    assert!(note(7, "voidPointer").contains("a void pointer"));
    assert!(note(8, "enumByValue").contains("an enum"));
    assert!(note(9, "unknownType").contains("could not be parsed (unknown type name 'flaot')"));
    assert!(note(10, "brokenSyntax").contains("could not be parsed"));
    assert!(note(13, "templated").contains("is a template: skipped"));
    assert!(note(15, "cppLinkage").contains("C++ linkage (symbol `_Z10cppLinkagePfi`)"));
    assert_eq!(g.notes.len(), 8, "{:#?}", g.notes);
    // Every note names the file as given.
    let given = fixture("bad.cu").display().to_string();
    assert!(
        g.notes.iter().all(|n| n.starts_with(&given)),
        "{:#?}",
        g.notes
    );
    let sigs = signatures(code_for(&g, "bad.cu"));
    assert_eq!(sigs.keys().collect::<Vec<_>>(), ["good"]);
}

#[test]
fn duplicate_kernel_names_across_files_are_noted_with_both_places() {
    let Some(g) = try_generate(&[fixture("dup_a.cu"), fixture("dup_b.cu")], &[], &[]) else {
        return;
    };
    assert_eq!(g.notes.len(), 1, "{:#?}", g.notes);
    let n = &g.notes[0];
    assert!(
        n.contains("dup_b.cu:2: kernel `scale` is also defined at "),
        "{n}"
    );
    assert!(n.contains("dup_a.cu:1"), "{n}");
    // Each source's module still gets its own, with its own types.
    assert_eq!(
        signatures(code_for(&g, "dup_a.cu"))["scale"][0],
        "x: &mut impl ::cudarc::driver::DevicePtrMut<f32>"
    );
    assert_eq!(
        signatures(code_for(&g, "dup_b.cu"))["scale"][0],
        "x: &mut impl ::cudarc::driver::DevicePtrMut<f64>"
    );
}

#[test]
fn include_dirs_and_defines_are_honoured() {
    let include = vec![fixture("include")];
    let Some(g) = try_generate(&[fixture("with_include.cu")], &include, &[]) else {
        return;
    };
    assert!(g.notes.is_empty(), "{:#?}", g.notes);
    assert_eq!(
        signatures(code_for(&g, "with_include.cu"))["axpy"],
        [
            "a: f32",
            "x: &impl ::cudarc::driver::DevicePtr<f32>",
            "y: &mut impl ::cudarc::driver::DevicePtrMut<f32>",
            "n: u64"
        ]
    );
    let defines = vec![("USE_DOUBLE".to_string(), Some("1".to_string()))];
    let g = try_generate(&[fixture("with_include.cu")], &include, &defines).unwrap();
    assert_eq!(
        signatures(code_for(&g, "with_include.cu"))["axpy"][0],
        "a: f64"
    );
    // Without the include dir: a note that says what was not found.
    let g = try_generate(&[fixture("with_include.cu")], &[], &[]).unwrap();
    assert_eq!(g.notes.len(), 1, "{:#?}", g.notes);
    assert!(g.notes[0].contains("kernel `axpy`: its signature could not be parsed"));
    assert!(
        g.notes[0].contains("'project_types.h' file not found"),
        "{}",
        g.notes[0]
    );
    assert_eq!(code_for(&g, "with_include.cu"), "");
}

#[test]
fn real_toolkit_include_dir_does_not_break_parsing() {
    // nvcc users pass the toolkit's include dir; its real cuda_runtime.h must
    // not replace the prelude's (libclang cannot read it as plain C++).
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let Some(g) = try_generate(&[fixture("types.cu")], &[root.join("include")], &[]) else {
        return;
    };
    assert!(g.notes.is_empty(), "{:#?}", g.notes);
    assert_eq!(signatures(code_for(&g, "types.cu")).len(), 6);
}

#[test]
fn a_missing_source_is_an_error_naming_it() {
    let missing = fixture("no_such_file.cu");
    match generate(std::slice::from_ref(&missing), &[], &[]) {
        Err(e) if e.code == "libclang-not-found" && !workspace_tests::nvcc_promised() => {}
        Err(e) => {
            assert_eq!(e.code, "launchers-source-unreadable", "{e}");
            assert!(e.message.contains("no_such_file.cu"), "{e}");
            assert!(!e.help.is_empty());
        }
        Ok(g) => panic!("expected an error, got {g:?}"),
    }
}

/// Runs in a child process whose LIBCLANG_PATH is an empty directory
/// (clang-sys then looks nowhere else), so libclang cannot load.
#[test]
fn libclang_missing_is_an_error_that_says_how_to_install_it() {
    if std::env::var_os("LAUNCHERS_TEST_CHILD").is_some() {
        let e = generate(&[fixture("vector_add.cu")], &[], &[]).unwrap_err();
        println!("CHILD-ERROR-CODE={}", e.code);
        println!("{e}");
        return;
    }
    let empty = tempfile::tempdir().unwrap();
    let out = run(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "libclang_missing_is_an_error_that_says_how_to_install_it",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("LAUNCHERS_TEST_CHILD", "1")
            .env("LIBCLANG_PATH", empty.path()),
        120,
    );
    let stdout = &out.stdout;
    assert!(out.status.success(), "{stdout}\n{}", out.stderr);
    assert!(
        stdout.contains("CHILD-ERROR-CODE=libclang-not-found"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "LIBCLANG_PATH is set to `{}`",
            empty.path().display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("help: install it: `apt-get install libclang-dev`"),
        "{stdout}"
    );
    assert!(stdout.contains("help: or set LIBCLANG_PATH"), "{stdout}");
}

/// With LIBCLANG_PATH unset, libclang is found without clang-sys running
/// llvm-config on its own: here llvm-config hangs, and generation still ends
/// (our llvm-config run is killed after CUDA_BUILD_TIMEOUT, then the usual
/// directories are searched).
#[test]
fn a_hanging_llvm_config_does_not_hang_the_build() {
    if std::env::var_os("LAUNCHERS_TEST_CHILD").is_some() {
        match generate(&[fixture("vector_add.cu")], &[], &[]) {
            Ok(g) => println!("CHILD-OK launchers={}", g.code_per_source.len()),
            Err(e) => println!("CHILD-ERROR-CODE={}\n{e}", e.code),
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let llvm_config = dir.path().join("llvm-config");
    workspace_tests::write_script(&llvm_config, "exec sleep 300");
    let started = std::time::Instant::now();
    let out = run(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "a_hanging_llvm_config_does_not_hang_the_build",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("LAUNCHERS_TEST_CHILD", "1")
            .env_remove("LIBCLANG_PATH")
            .env("LLVM_CONFIG_PATH", &llvm_config)
            .env("CUDA_BUILD_TIMEOUT", "2"),
        120,
    );
    let stdout = &out.stdout;
    assert!(out.status.success(), "{stdout}\n{}", out.stderr);
    assert!(started.elapsed() < Duration::from_secs(60), "{stdout}");
    if stdout.contains("CHILD-ERROR-CODE=libclang-not-found") && !workspace_tests::nvcc_promised() {
        eprintln!("skipped: libclang not available");
        return;
    }
    assert!(stdout.contains("CHILD-OK launchers=1"), "{stdout}");
}

/// The fixture crate in tests/launchers-compile-fail, built against the
/// launchers generated for vector_add.cu and types.cu. Returns the crate dir.
fn prepare_fixture_crate() -> Option<PathBuf> {
    let g = try_generate(&[fixture("vector_add.cu"), fixture("types.cu")], &[], &[])?;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("launchers-compile-fail");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("launchers-compile-fail");
    let copy = |from: &str, to: &str| {
        let to = dir.join(to);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(src.join(from), &to).unwrap();
    };
    copy("Cargo.toml.in", "Cargo.toml");
    copy("half/Cargo.toml.in", "half/Cargo.toml");
    copy("half/src/lib.rs", "half/src/lib.rs");
    copy("src/lib.rs", "src/lib.rs");
    let _ = std::fs::remove_dir_all(dir.join("src/bin"));
    for entry in std::fs::read_dir(src.join("src/bin")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        copy(&format!("src/bin/{name}"), &format!("src/bin/{name}"));
    }
    // The workspace's lock file: the same cudarc, resolved offline.
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock"),
        dir.join("Cargo.lock"),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("generated")).unwrap();
    for (file, stem) in [("vector_add.cu", "vector_add"), ("types.cu", "types")] {
        std::fs::write(dir.join(format!("generated/{stem}.rs")), code_for(&g, file)).unwrap();
    }
    Some(dir)
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    // Not the workspace's target dir: no lock contention with the test run.
    cmd.env(
        "CARGO_TARGET_DIR",
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("launchers-target"),
    );
    cmd.env_remove("RUSTFLAGS");
    cmd
}

/// A diagnostic from `cargo check --message-format=json`: (bin, level, code, file, line).
type Diag = (String, String, String, String, u64);

fn check_diagnostics(dir: &Path) -> Vec<Diag> {
    let out = run(
        cargo().current_dir(dir).args([
            "check",
            "--offline",
            "--bins",
            "--keep-going",
            "--message-format=json",
        ]),
        1200,
    );
    let stdout = &out.stdout;
    let mut diags = Vec::new();
    for line in stdout.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if v["reason"] != "compiler-message" {
            continue;
        }
        let msg = &v["message"];
        let span = msg["spans"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["is_primary"] == true).or(s.first()));
        diags.push((
            v["target"]["name"].as_str().unwrap_or("").to_string(),
            msg["level"].as_str().unwrap_or("").to_string(),
            msg["code"]["code"].as_str().unwrap_or("").to_string(),
            span.and_then(|s| s["file_name"].as_str())
                .unwrap_or("")
                .to_string(),
            span.and_then(|s| s["line_start"].as_u64()).unwrap_or(0),
        ));
    }
    assert!(
        !diags.is_empty() || out.status.success(),
        "cargo check printed no diagnostics and failed:\n{}",
        out.stderr
    );
    diags
}

#[test]
fn wrong_argument_types_do_not_compile_and_the_right_call_does() {
    let Some(dir) = prepare_fixture_crate() else {
        return;
    };
    let diags = check_diagnostics(&dir);
    let errors = |bin: &str| -> Vec<&Diag> {
        diags
            .iter()
            .filter(|d| d.0 == bin && d.1 == "error" && !d.2.is_empty())
            .collect()
    };
    // The library (every mapped type's launcher) and the right call: no
    // errors and no warnings.
    let lib_and_good: Vec<&Diag> = diags
        .iter()
        .filter(|d| d.0 == "launchers_fixture" || d.0 == "good")
        .filter(|d| d.1 == "error" || d.1 == "warning")
        .collect();
    assert!(lib_and_good.is_empty(), "{lib_and_good:#?}");
    // Each bad call: its first error is on the line marked `// ERROR Exxxx`.
    let bins = std::fs::read_dir(dir.join("src/bin")).unwrap();
    let mut checked = 0;
    for entry in bins {
        let path = entry.unwrap().path();
        let bin = path.file_stem().unwrap().to_str().unwrap().to_string();
        if bin == "good" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let (line, code) = text
            .lines()
            .enumerate()
            .find_map(|(i, l)| {
                l.split("// ERROR ")
                    .nth(1)
                    .map(|c| (i as u64 + 1, c.trim()))
            })
            .unwrap_or_else(|| panic!("{bin}: no `// ERROR` marker"));
        let errs = errors(&bin);
        assert!(
            errs.iter()
                .any(|d| d.2 == code && d.3.ends_with(&format!("{bin}.rs")) && d.4 == line),
            "{bin}: expected {code} at line {line}, got {errs:#?}"
        );
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} compile-fail cases ran");
}

#[test]
fn typed_vector_add_runs_and_verifies_on_a_gpu() {
    if !workspace_tests::gpu_required("typed_vector_add_runs_and_verifies_on_a_gpu") {
        return;
    }
    let Some(nvcc) = workspace_tests::nvcc13() else {
        return;
    };
    let Some(dir) = prepare_fixture_crate() else {
        return;
    };
    let ptx = dir.join("vector_add.ptx");
    let out = run(
        Command::new(&nvcc)
            .args(["-ptx", "-arch=compute_75", "-o"])
            .arg(&ptx)
            .arg(fixture("vector_add.cu")),
        300,
    );
    assert!(out.status.success(), "{}", out.stderr);
    let out = run(
        cargo()
            .current_dir(&dir)
            .args(["run", "--offline", "--release", "--bin", "good", "--"])
            .arg(&ptx),
        1200,
    );
    let stdout = &out.stdout;
    assert!(out.status.success(), "{stdout}\n{}", out.stderr);
    assert!(
        stdout.contains("vectorAdd verified: 1048576 elements"),
        "{stdout}"
    );
}

#[test]
fn kernels_in_included_headers_are_found_once_per_including_source() {
    let sources = [fixture("uses_header_a.cu"), fixture("uses_header_b.cu")];
    let Some(g) = try_generate(&sources, &[fixture("include")], &[]) else {
        return;
    };
    // The same definition reached through two sources is no duplicate.
    assert!(g.notes.is_empty(), "{:#?}", g.notes);
    for (file, own) in [("uses_header_a.cu", "own_a"), ("uses_header_b.cu", "own_b")] {
        let code = code_for(&g, file);
        let sigs = signatures(code);
        assert_eq!(
            sigs.keys().map(String::as_str).collect::<Vec<_>>(),
            ["from_header", own],
            "{file}"
        );
        assert_eq!(
            sigs["from_header"],
            [
                "flags: &mut impl ::cudarc::driver::DevicePtrMut<u32>",
                "n: i32"
            ]
        );
        // Reported at the header's own file and line.
        assert!(code.contains("header_kernel.cuh:3):"), "{code}");
    }
}
