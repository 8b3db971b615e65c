//! Builds with `--message-format=json` and what they say about freshness.

use std::process::Command;

/// Every unit cargo built, with whether it was fresh, from cargo's JSON messages.
pub fn units(stdout: &str) -> Vec<(String, bool)> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["reason"] == "compiler-artifact")
        .map(|v| {
            let name = format!(
                "{} ({})",
                v["package_id"].as_str().unwrap_or("?"),
                v["target"]["kind"]
            );
            (name, v["fresh"] == true)
        })
        .collect()
}

/// Runs a build (`cmd` already has its arguments up to the manifest) with
/// `--message-format=json`; panics with the output unless it succeeds.
/// Returns cargo's JSON messages and its stderr.
fn messages(mut cmd: Command, what: &str) -> (String, String) {
    let out = cmd.arg("--message-format=json").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{what} failed:\n{stderr}");
    (stdout, stderr)
}

/// The OUT_DIR of `package`'s build script, as a build (`cmd`, as for
/// [`build`]) reports it.
pub fn out_dir(cmd: Command, package: &str) -> std::path::PathBuf {
    let (stdout, _) = messages(cmd, "the build");
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| {
            v["reason"] == "build-script-executed"
                && v["package_id"]
                    .as_str()
                    .is_some_and(|p| p.contains(package))
        })
        .and_then(|v| v["out_dir"].as_str().map(std::path::PathBuf::from))
        .unwrap_or_else(|| panic!("no OUT_DIR for {package} in:\n{stdout}"))
}

/// Runs a build (`cmd` already has its arguments up to the manifest) with
/// `--message-format=json`; panics with the output unless it succeeds.
/// Returns the units that were not fresh.
pub fn build(cmd: Command, what: &str) -> Vec<String> {
    let (stdout, stderr) = messages(cmd, what);
    let units = units(&stdout);
    assert!(
        !units.is_empty(),
        "{what}: no units in the output:\n{stdout}\n{stderr}"
    );
    units
        .into_iter()
        .filter(|(_, fresh)| !fresh)
        .map(|(n, _)| n)
        .collect()
}

/// Cargo's reason for a rebuild, when it says (`-v` prints `Dirty …`).
pub fn why_dirty(mut cmd: Command) -> String {
    let out = cmd.arg("-v").output().unwrap();
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains("Dirty"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `event file` pairs of a `CARGO_CUDA_PROGRESS` file (one JSON object
/// per line), in order; empty when the file does not exist.
pub fn progress_events(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            format!(
                "{} {}",
                v["event"].as_str().unwrap(),
                v["file"].as_str().unwrap()
            )
        })
        .collect()
}
