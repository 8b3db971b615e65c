//! `cargo cuda explain`: logs (file or stdin) and codes, text and JSON, exit codes.

mod common;

use std::io::Write;
use std::process::Stdio;

use common::{cargo_cuda, json, text, workspace_root};

fn explain_stdin(input: &str, args: &[&str]) -> std::process::Output {
    let mut child = cargo_cuda()
        .arg("explain")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// Every real-tool log in the corpus, through the CLI, gives its expected code first.
#[test]
fn corpus_logs_give_their_codes_through_the_cli() {
    let dir = workspace_root().join("tests/corpus/real");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("txt") {
            continue;
        }
        let body = std::fs::read_to_string(&path).unwrap();
        let Some(expect) = body.lines().find_map(|l| l.strip_prefix("# expect: ")) else {
            continue;
        };
        let out = cargo_cuda()
            .arg("explain")
            .arg(&path)
            .arg("--json")
            .output()
            .unwrap();
        let v = json(&out);
        let diags = v["diagnoses"].as_array().unwrap();
        if expect.trim() == "none" {
            assert!(diags.is_empty(), "{}: {v:#}", path.display());
            assert_eq!(out.status.code(), Some(0));
            continue;
        }
        // `# expect: TOP[, OTHER...]`: the first code is the top diagnosis.
        let top = expect.split(',').next().unwrap_or("").trim();
        assert_eq!(
            diags.first().map(|d| d["code"].clone()),
            Some(top.into()),
            "{}: {v:#}",
            path.display()
        );
        assert_eq!(out.status.code(), Some(1), "{}", path.display());
        for key in ["code", "title", "evidence", "cause", "fix"] {
            assert!(diags[0].get(key).is_some(), "missing {key}: {:#}", diags[0]);
        }
        assert!(diags[0]["fix"].is_array());
        n += 1;
    }
    assert!(n >= 5, "expected corpus logs in {}", dir.display());
}

/// The real nvcc 13.0 refusing sm_70, piped through stdin inside cargo's build-script wrapper.
#[test]
fn real_nvcc_error_from_stdin() {
    let Some(nvcc) = workspace_tests::nvcc13() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cu = dir.path().join("k.cu");
    std::fs::write(&cu, "__global__ void k() {}\n").unwrap();
    let out = std::process::Command::new(&nvcc)
        .args(["-arch=sm_70", "-c"])
        .arg(&cu)
        .arg("-o")
        .arg(dir.path().join("k.o"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let nvcc_err = String::from_utf8_lossy(&out.stderr);
    let log = format!(
        "   Compiling vector-add v0.1.0\r\n\x1b[1m\x1b[31merror\x1b[0m: failed to run custom build command for `vector-add v0.1.0`\r\n\
         --- stderr\r\n{nvcc_err}\r\n"
    );
    let out = explain_stdin(&log, &["-"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("arch-dropped-by-nvcc"), "{stdout}");
    assert!(
        stdout.contains("sm_70"),
        "the evidence line is shown: {stdout}"
    );
}

#[test]
fn nothing_recognised_exits_0_and_says_so() {
    let out = explain_stdin("   Compiling foo v0.1.0\n    Finished dev profile\n", &[]);
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout.trim(), "no known CUDA failure found");
    let out = explain_stdin("all good\n", &["--json"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json(&out)["diagnoses"], serde_json::json!([]));
}

#[test]
fn explain_code_prints_the_long_explanation() {
    let out = cargo_cuda()
        .args(["explain", "ptx-too-new-for-driver"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.starts_with("ptx-too-new-for-driver: "), "{stdout}");
    assert!(
        stdout.lines().count() > 5,
        "the long explanation follows the title: {stdout}"
    );
    assert!(stdout.contains("Fix"), "{stdout}");
}

#[test]
fn unknown_code_lists_close_matches() {
    let out = cargo_cuda()
        .args(["explain", "nvcc-not-fund"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("`nvcc-not-fund` is not a known diagnosis code"),
        "{stderr}"
    );
    assert!(stderr.contains("did you mean: nvcc-not-found"), "{stderr}");
}

#[test]
fn missing_log_file_is_a_clear_error() {
    let out = cargo_cuda()
        .args(["explain", "/nonexistent/build.log"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    // Bad input: 2 (1 means "read the log, found nothing").
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("could not read log file `/nonexistent/build.log`"),
        "{stderr}"
    );
}

/// Fixes use this machine's toolkit (CUDA_HOME here); `--no-detect` leaves
/// it out, for a log pasted from another machine.
#[test]
fn fixes_use_the_detected_toolkit_unless_told_not_to() {
    let Some(root) = workspace_tests::cu13_root() else {
        return;
    };
    let log = "nvcc fatal   : Unsupported gpu architecture 'compute_70'\n";
    let run = |args: &[&str]| {
        let mut child = cargo_cuda()
            .arg("explain")
            .args(args)
            .arg("--json")
            .arg("-")
            .env("CUDA_HOME", &root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(log.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", text(&out).1);
        let v = json(&out);
        assert_eq!(v["diagnoses"][0]["code"], "arch-dropped-by-nvcc", "{v:#}");
        v["diagnoses"][0]["fix"].to_string()
    };
    let detected = run(&[]);
    assert!(
        detected.contains("CUDA 13.0 targets sm_75 and newer"),
        "{detected}"
    );
    let generic = run(&["--no-detect"]);
    assert!(!generic.contains("CUDA 13.0"), "{generic}");
}

/// A reader that stops early (`| head -1`) ends the output quietly: no panic
/// message, and the exit code still says what was found.
#[test]
fn closed_stdout_pipe_ends_quietly() {
    let log = "nvcc fatal   : Unsupported gpu architecture 'compute_70'\n".repeat(3)
        + "CUDA error: no kernel image is available for execution on the device\n"
        + "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n";
    let mut child = cargo_cuda()
        .args(["explain", "-", "--no-detect"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the read end of stdout before the command writes anything.
    drop(child.stdout.take());
    child
        .stdin
        .take()
        .unwrap()
        .write_all(log.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
}

/// Binary garbage, invalid UTF-8 and NUL bytes are read as text: nothing
/// found, exit 0, no panic.
#[test]
fn binary_input_finds_nothing() {
    let mut bytes: Vec<u8> = (0..=255u8).cycle().take(1 << 16).collect();
    bytes.extend_from_slice(b"\xff\xfe\x00\x00 \xc3\x28 plain words\n");
    let mut child = cargo_cuda()
        .args(["explain", "-", "--no-detect"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert_eq!(stdout.trim(), "no known CUDA failure found");
}

/// The text report holds the diagnoses and nothing else: the log itself is
/// not echoed back (a 100 MB log would come back whole).
#[test]
fn text_report_does_not_echo_the_log() {
    let log =
        "unrelated-marker-line-7f3a\nnvcc fatal   : Unsupported gpu architecture 'compute_70'\n";
    let out = explain_stdin(log, &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("error[arch-dropped-by-nvcc]") || stdout.contains("error[arch-"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("unrelated-marker-line-7f3a"),
        "the log was echoed:\n{stdout}"
    );
}

/// `--list`: every code once, grouped by layer in the order a program meets
/// them, each with a one-line summary; the count matches the catalogue.
#[test]
fn list_prints_every_code_grouped_by_layer() {
    let out = cargo_cuda().args(["explain", "--list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let (t, _) = text(&out);
    let headings: Vec<&str> = t
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.is_empty() && !l.contains("codes;"))
        .collect();
    assert_eq!(
        headings,
        ["driver", "toolkit", "compile", "link", "load", "run"]
    );
    let all = cuda_toolchain::diagnose::codes::all();
    for d in all {
        let lines: Vec<&str> = t
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(d.code))
            .collect();
        assert_eq!(lines.len(), 1, "{} listed {} times", d.code, lines.len());
        assert!(lines[0].contains(d.title), "{}", lines[0]);
    }
    assert!(t.contains(&format!("{} codes;", all.len())), "{t}");

    let out = cargo_cuda()
        .args(["explain", "--list", "--json"])
        .output()
        .unwrap();
    let v = json(&out);
    assert_eq!(v["count"], all.len());
    let layers = v["layers"].as_array().unwrap();
    let names: Vec<&str> = layers
        .iter()
        .map(|l| l["layer"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["driver", "toolkit", "compile", "link", "load", "run"]
    );
    let listed: usize = layers
        .iter()
        .map(|l| l["codes"].as_array().unwrap().len())
        .sum();
    assert_eq!(listed, all.len());
    let pair = layers
        .iter()
        .flat_map(|l| l["codes"].as_array().unwrap())
        .find(|c| c["code"] == "bf16-kernel-unavailable")
        .unwrap();
    assert!(pair["see_also"]
        .as_array()
        .unwrap()
        .contains(&"kernel-not-found".into()));
    assert!(!pair["summary"].as_str().unwrap().is_empty());

    // A code's own page names its neighbours.
    let out = cargo_cuda()
        .args(["explain", "framework-lib-not-found"])
        .output()
        .unwrap();
    let (page, _) = text(&out);
    assert!(
        page.lines()
            .any(|l| l.starts_with("See also:") && l.contains("cuda-runtime-lib-not-found")),
        "{page}"
    );
    // --list takes no log.
    let out = cargo_cuda()
        .args(["explain", "--list", "build.log"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
