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
/// Returns the units that were not fresh.
pub fn build(mut cmd: Command, what: &str) -> Vec<String> {
    let out = cmd.arg("--message-format=json").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what} failed:\n{stderr}");
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
