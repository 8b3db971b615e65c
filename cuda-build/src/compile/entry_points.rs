//! The entry points: [`Build::compile`] / [`Build::try_compile`] and
//! [`compile_all`] / [`try_compile_all`]. Each build is prepared
//! (`settings/prepare.rs`), the engine runs them all in one job pool
//! (`run/pool.rs`), and their `cargo:` lines are printed here, each once.

use crate::compile::output::artifacts::Artifacts;
use crate::compile::run::pool;
use crate::compile::settings::builder::Build;
use cuda_toolchain::env::Env;
use cuda_toolchain::Error;
use std::collections::HashSet;
use std::sync::Mutex;

impl Build {
    /// Builds everything; on failure panics with the full explained error,
    /// as `cc::Build::compile` does (cargo shows it; a test can catch it
    /// with `std::panic::catch_unwind`). Several builds in one script share
    /// one job pool with [`compile_all`].
    pub fn compile(&self) -> Artifacts {
        compile_all([self]).remove(0)
    }

    /// Builds everything, returning the error instead of exiting, so a crate
    /// can make CUDA optional.
    pub fn try_compile(&self) -> Result<Artifacts, Error> {
        try_compile_all([self]).map(|mut v| v.remove(0))
    }
}

/// Builds several [`Build`]s with one job pool, then prints their `cargo:`
/// lines once. On failure prints every error and panics with them, as
/// `cc::Build::compile` does (catchable with `std::panic::catch_unwind`).
///
/// ```no_run
/// use cuda_build::compile::{Build, OutputKind};
/// let mut ptx = Build::new();
/// ptx.dir("src/ptx").output(OutputKind::Ptx).module_name("ptx");
/// let mut lib = Build::new();
/// lib.dir("src/lib").output(OutputKind::StaticLib).module_name("lib");
/// let [ptx, lib]: [_; 2] = cuda_build::compile_all([&ptx, &lib]).try_into().unwrap();
/// ```
pub fn compile_all<'a>(builds: impl IntoIterator<Item = &'a Build>) -> Vec<Artifacts> {
    let builds: Vec<&Build> = builds.into_iter().collect();
    let outcomes = build_all(&builds);
    let mut ok = Vec::new();
    let mut failed: Vec<String> = Vec::new();
    for (b, (result, lines)) in builds.iter().zip(outcomes) {
        match result {
            Ok(a) => {
                print_cargo(b, &lines);
                ok.push(a);
            }
            Err(e) => {
                // Cargo reruns a failed build script whatever it printed, and
                // shows all of its stdout: hundreds of rerun-if-changed lines
                // would bury the error. Only the warnings are worth keeping.
                let warnings: Vec<String> = lines
                    .into_iter()
                    .filter(|l| l.starts_with("warning="))
                    .collect();
                print_cargo(b, &warnings);
                // As cc does: the message on stderr for cargo, then an unwind
                // that carries it (no panic-hook noise; catchable).
                let message = e.to_string();
                eprintln!("{message}");
                failed.push(message);
            }
        }
    }
    if !failed.is_empty() {
        std::panic::resume_unwind(Box::new(failed.join("\n\n")));
    }
    ok
}

/// [`compile_all`] returning the first error instead of exiting (every
/// build's `cargo:` lines are printed, so cargo still reruns the script
/// when an input changes).
pub fn try_compile_all<'a>(
    builds: impl IntoIterator<Item = &'a Build>,
) -> Result<Vec<Artifacts>, Error> {
    let builds: Vec<&Build> = builds.into_iter().collect();
    let outcomes = build_all(&builds);
    let mut out = Vec::new();
    let mut first_err = None;
    for (b, (result, lines)) in builds.iter().zip(outcomes) {
        print_cargo(b, &lines);
        match result {
            Ok(a) => out.push(a),
            Err(e) => first_err = first_err.or(Some(e)),
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// `cargo:` lines already printed by this process: several builds share
/// sources, headers and every `rerun-if-env-changed`.
static PRINTED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

fn print_cargo(b: &Build, lines: &[String]) {
    let b = &b.spec;
    if !b.emit_cargo {
        return;
    }
    use std::io::Write;
    let mut printed = PRINTED.lock().unwrap_or_else(|e| e.into_inner());
    let printed = printed.get_or_insert_with(HashSet::new);
    // One write: stdout is line-buffered, and a build prints ~1,500 lines.
    let mut text = String::new();
    for l in lines {
        if (!b.cargo_warnings && l.starts_with("warning="))
            || (!b.cargo_metadata && l.starts_with("rustc-link-"))
        {
            continue;
        }
        if printed.insert(l.clone()) {
            text.push_str("cargo:");
            // A warning may quote a setting's value: never its password.
            match l.strip_prefix("warning=") {
                Some(w) => {
                    text.push_str("warning=");
                    text.push_str(&cuda_toolchain::redact::mask_credentials(w));
                }
                None => text.push_str(l),
            }
            text.push('\n');
        }
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Each build first resolves what its cc-style settings imply (toolkit,
/// host compiler, archiver, profile flags, arch flags given as flags; see
/// `settings/prepare.rs`); the engine then runs them all in one pool.
fn build_all(builds: &[&Build]) -> Vec<(Result<Artifacts, Error>, Vec<String>)> {
    let prepared = builds
        .iter()
        .map(|b| {
            let env = b.spec.env.clone().unwrap_or_else(Env::from_process);
            let p = b.prepared(&env);
            (env, p)
        })
        .collect();
    pool::build_all(prepared)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_module_name_and_missing_out_dir() {
        let e = Build::new()
            .env(Env::empty())
            .file("x.cu")
            .try_compile()
            .unwrap_err();
        assert_eq!(e.code, "out-dir-unset");
        let e = Build::new()
            .env(Env::empty())
            .out_dir("/tmp")
            .module_name("../x")
            .try_compile()
            .unwrap_err();
        assert_eq!(e.code, "invalid-module-name");
    }
}
