//! The host toolchain: the C++ compiler nvcc gets as `-ccbin` and the
//! archiver for static libraries, chosen the way the `cc` crate chooses them.
//!
//! Precedence for the compiler: [`Build::ccbin`](crate::compile::Build::ccbin), then
//! `NVCC_CCBIN_<target>` / `TARGET_NVCC_CCBIN` / `HOST_NVCC_CCBIN` /
//! `NVCC_CCBIN`, then whatever `cc::Build` picks for the triple (`CXX_<target>`,
//! `HOST_CXX`/`TARGET_CXX`, `CXX`, the target's cross-compiler prefix such
//! as `aarch64-linux-gnu-g++`, cl.exe through the Visual Studio lookup).
//! The archiver is cc's as well (`AR_<target>`, `TARGET_AR`, `AR`, the
//! target's prefixed `ar`, `lib.exe` for MSVC).
//!
//! cc reads the variables from the [`Env`] the build was given (never from
//! the process behind its back), through cc's environment snapshot.

use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::Error;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One chosen tool and which setting chose it (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostTool {
    /// The program (resolved on the Env's PATH when it was a bare name).
    pub path: PathBuf,
    /// `Build::ccbin`, `NVCC_CCBIN_aarch64-unknown-linux-gnu`, `CXX`, or `cc's default for <triple>`.
    pub from: String,
}

/// The target and build-machine triples: TARGET and HOST as cargo sets them
/// for build scripts, else the machine this code runs on.
pub(crate) fn triples(env: &Env) -> (String, String) {
    let native = cuda_toolchain::env::native_triple();
    let host = env
        .get_nonempty(Var::Host)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| native.clone());
    let target = env
        .get_nonempty(Var::Target)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| host.clone());
    (target, host)
}

/// A `cc::Build` for `triple`, reading variables from `env` only.
fn cc_build(env: &Env, triple: &str, host: &str, scratch: &Path) -> cc::Build {
    let mut vars: Vec<(OsString, OsString)> = env
        .iter()
        .map(|(v, value)| (OsString::from(v.name()), value.to_os_string()))
        .collect();
    vars.extend(
        env.iter_named()
            .map(|(n, value)| (OsString::from(n), value.to_os_string())),
    );
    let mut b = cc::Build::new();
    // Hidden in cc's docs, but the one way to make cc read a given
    // environment instead of the process's (cc >= 1.11).
    b.set_envs_snapshot(vars);
    b.cpp(true)
        .target(triple)
        .host(host)
        .opt_level(0)
        .debug(false)
        .out_dir(scratch)
        .cargo_metadata(false)
        .cargo_warnings(false)
        .cargo_debug(false)
        .cargo_output(false)
        .emit_rerun_if_env_changed(false);
    b
}

/// Looks a program name up on the Env's PATH (through the one PATH lookup,
/// [`Env::which`]); paths are kept if they exist.
fn resolve(env: &Env, program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 || program.is_absolute() {
        return program.exists().then(|| program.to_path_buf());
    }
    env.which(program.to_str()?)
}

/// The host compiler for nvcc's `-ccbin`, for `triple` (the target for
/// static libraries, the build machine for device-only outputs). None: let
/// nvcc use its own default (nothing set, and cc's default is not on PATH).
/// cc probes in `scratch`; what it found is remembered in `memo_dir`.
pub(crate) fn compiler(
    env: &Env,
    builder_ccbin: Option<&Path>,
    triple: &str,
    host: &str,
    scratch: &Path,
    memo_dir: &Path,
) -> Result<Option<HostTool>, Error> {
    if let Some(c) = builder_ccbin {
        let path = resolve(env, c).unwrap_or_else(|| c.to_path_buf());
        return Ok(Some(HostTool {
            path,
            from: "Build::ccbin".into(),
        }));
    }
    if let Some((name, value)) = env.get_for_target("NVCC_CCBIN", triple, host) {
        let given = PathBuf::from(value.trim());
        let path = resolve(env, &given).unwrap_or(given);
        return Ok(Some(HostTool { path, from: name }));
    }
    let set_by = env.get_for_target("CXX", triple, host).map(|(n, _)| n);
    let memo = Memo::open(memo_dir);
    let key = memo_key(env, &["cc", triple, host]);
    let name = match memo.get(&key).map(PathBuf::from) {
        Some(name) => name,
        None => {
            let tool = cc_build(env, triple, host, scratch)
                .try_get_compiler()
                .map_err(|e| {
                    Error::new(
                        "host-compiler-not-found",
                        format!("cc found no C++ compiler for `{triple}`: {e}"),
                    )
                    .with_help(format!(
                        "set CXX_{} (or NVCC_CCBIN) to the host C++ compiler for that target",
                        triple.replace('-', "_")
                    ))
                })?;
            let name = tool.path().to_path_buf();
            memo.put(&key, &name.to_string_lossy());
            name
        }
    };
    match (resolve(env, &name), set_by) {
        (Some(path), Some(var)) => Ok(Some(HostTool { path, from: var })),
        (Some(path), None) => Ok(Some(HostTool {
            path,
            from: format!("cc's default for {triple}"),
        })),
        (None, Some(var)) => Err(Error::new(
            "host-compiler-not-found",
            format!(
                "{var} names `{}`, which is not an executable file or a program on PATH",
                name.display()
            ),
        )
        .with_help(format!(
            "point {var} at the host C++ compiler (e.g. /usr/bin/g++-13), or unset it"
        ))),
        (None, None) if triple != host => Err(Error::new(
            "host-compiler-not-found",
            format!(
                "cross-compiling for `{triple}` needs its C++ compiler `{}`, which is not on PATH",
                name.display()
            ),
        )
        .with_help(format!(
            "install the cross compiler (Debian/Ubuntu: `apt install g++-{}`), or set CXX_{} to it",
            debian_cross_name(triple),
            triple.replace('-', "_")
        ))),
        (None, None) => Ok(None),
    }
}

/// The host compiler a [`Build`](crate::compile::Build) without `.ccbin()` hands nvcc
/// as `-ccbin` for device code (fatbin, cubin, PTX outputs are built for the
/// build machine, `HOST`), by the engine's own rule: `NVCC_CCBIN[_<triple>]`,
/// then cc's `CXX` rules for the triple. `Ok(None)`: nothing set and cc's
/// default is not on PATH, so nvcc falls back to its own default. For
/// `cargo cuda doctor`; check it with [`check_host_compiler`].
pub fn host_compiler(env: &Env) -> Result<Option<HostTool>, Error> {
    let (_, host) = triples(env);
    // cc needs a scratch directory; the memo there spares the next doctor run the probe.
    let scratch = env
        .cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("host-compiler");
    let _ = std::fs::create_dir_all(&scratch);
    compiler(env, None, &host, &host, &scratch, &scratch)
}

/// Checks a compiler from [`host_compiler`] against `toolkit`'s limits as a
/// build does: `Err` when nvcc would refuse it, else notes (empty: within
/// the limits; otherwise why the verdict is unsure or a warning).
pub fn check_host_compiler(
    env: &Env,
    tool: &HostTool,
    toolkit: &semver::Version,
) -> Result<Vec<String>, Error> {
    check_version(env, tool, toolkit, &[], None)
}

/// `aarch64-unknown-linux-gnu` → `aarch64-linux-gnu` (Debian's package suffix).
fn debian_cross_name(triple: &str) -> String {
    let parts: Vec<&str> = triple.split('-').collect();
    match parts.as_slice() {
        [arch, _vendor, os, env] => format!("{arch}-{os}-{env}"),
        _ => triple.to_string(),
    }
}

/// The archiver for `triple` (cc's choice: `AR_<target>`, `TARGET_AR`, `AR`,
/// the target's prefixed `ar`, `lib.exe` for MSVC).
pub(crate) fn archiver(
    env: &Env,
    triple: &str,
    host: &str,
    scratch: &Path,
) -> Result<HostTool, Error> {
    let set_by = env.get_for_target("AR", triple, host).map(|(n, _)| n);
    let cmd = cc_build(env, triple, host, scratch)
        .try_get_archiver()
        .map_err(|e| {
            Error::new(
                "archive-failed",
                format!("cc found no archiver for `{triple}`: {e}"),
            )
            .with_help(format!(
                "set AR_{} (or AR) to the archiver",
                triple.replace('-', "_")
            ))
        })?;
    let name = PathBuf::from(cmd.get_program());
    match resolve(env, &name) {
        Some(path) => Ok(HostTool {
            path,
            from: set_by.unwrap_or_else(|| format!("cc's default for {triple}")),
        }),
        None => match set_by {
            Some(var) => Err(Error::new(
                "archive-failed",
                format!(
                    "{var} names `{}`, which is not an executable file or a program on PATH",
                    name.display()
                ),
            )
            .with_help(format!(
                "point {var} at an archiver (ar, llvm-ar), or unset it"
            ))),
            // Not on the Env's PATH (a test's empty Env): the child's own PATH decides.
            None => Ok(HostTool {
                path: name,
                from: format!("cc's default for {triple}"),
            }),
        },
    }
}

/// Whether `ar`-style arguments (`crs out.a objs…`) or lib.exe's (`/OUT:`).
pub(crate) fn archiver_args(archiver: &Path, out: &Path, objects: &[PathBuf]) -> Vec<OsString> {
    let stem = archiver
        .file_stem()
        .map(|s| s.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let mut args: Vec<OsString> = if stem == "lib" || stem == "llvm-lib" {
        let mut out_arg = OsString::from("/OUT:");
        out_arg.push(out);
        vec!["/nologo".into(), out_arg]
    } else {
        vec!["crs".into(), out.into()]
    };
    args.extend(objects.iter().map(|o| o.clone().into_os_string()));
    args
}

/// Checks the compiler's real version against the toolkit's limits: an error
/// when nvcc would refuse it (unless `-allow-unsupported-compiler` is among
/// the flags), a warning when unsure.
pub(crate) fn check_version(
    env: &Env,
    tool: &HostTool,
    toolkit: &semver::Version,
    flags: &[String],
    memo_dir: Option<&Path>,
) -> Result<Vec<String>, Error> {
    let allowed = flags
        .iter()
        .any(|f| f.trim_start_matches('-') == "allow-unsupported-compiler");
    // The verdict depends on the compiler binary itself: keyed by its size
    // and mtime, so replacing it (an upgrade, `update-alternatives`) asks again.
    let memo = memo_dir.map(Memo::open);
    let key = std::fs::metadata(&tool.path).ok().and_then(|m| {
        let mtime = m
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        Some(memo_key(
            env,
            &[
                "version",
                &tool.path.to_string_lossy(),
                &tool.from,
                &m.len().to_string(),
                &mtime.as_nanos().to_string(),
                &toolkit.to_string(),
                &allowed.to_string(),
            ],
        ))
    });
    if let (Some(memo), Some(key)) = (&memo, &key) {
        if let Some(notes) = memo.get(key).and_then(|t| serde_json::from_str(&t).ok()) {
            return Ok(notes);
        }
    }
    let notes = check_version_uncached(env, tool, toolkit, allowed)?;
    if let (Some(memo), Some(key), Ok(text)) = (&memo, &key, serde_json::to_string(&notes)) {
        memo.put(key, &text);
    }
    Ok(notes)
}

fn check_version_uncached(
    env: &Env,
    tool: &HostTool,
    toolkit: &semver::Version,
    allowed: bool,
) -> Result<Vec<String>, Error> {
    let timeout = cuda_toolchain::process::timeout_from_env(env, Duration::from_secs(10));
    let hc = match cuda_toolchain::compat::identify_host_compiler(&tool.path, timeout) {
        Ok(hc) => hc,
        Err(e) => {
            return Ok(vec![format!(
                "cuda-build: could not check the host compiler `{}` (from {}) against CUDA {toolkit}'s limits: {}",
                tool.path.display(),
                tool.from,
                e.message
            )])
        }
    };
    let verdict = cuda_toolchain::compat::host_compiler_ok(&hc, toolkit);
    match verdict.status {
        cuda_toolchain::compat::Status::Pass => Ok(Vec::new()),
        cuda_toolchain::compat::Status::Fail if !allowed => {
            let mut e = Error::new(
                "host-compiler-unsupported",
                format!("{} (chosen by {})", verdict.reason, tool.from),
            );
            if let Some(fix) = verdict.fix {
                e = e.with_help(fix);
            }
            Err(e.with_help(format!(
                "or choose another compiler with Build::ccbin, NVCC_CCBIN or {}",
                if tool.from.starts_with("CXX") || tool.from.ends_with("_CXX") {
                    tool.from.clone()
                } else {
                    "CXX".to_string()
                }
            )))
        }
        _ => Ok(vec![format!(
            "cuda-build: {} (chosen by {})",
            verdict.reason, tool.from
        )]),
    }
}

/// What cc and the version probe found, remembered across build-script runs
/// (in the kernel cache's directory, so a clean build or another package
/// does not ask again; else in the build's scratch directory). Detecting
/// costs four compiler runs (cc's `-E` family probe and `-?`, then
/// `--version` and `-dumpfullversion`), about 55 ms per build: most of a
/// rerun that compiles nothing. Keys cover every variable cc could read
/// (side channels excepted) and the triples, so any change asks again; the
/// version verdict is keyed by the compiler file's size and mtime too.
struct Memo {
    path: PathBuf,
    entries: std::sync::Mutex<std::collections::BTreeMap<String, String>>,
}

impl Memo {
    fn open(dir: &Path) -> Memo {
        let path = dir.join("detected.json");
        let entries = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        Memo {
            path,
            entries: std::sync::Mutex::new(entries),
        }
    }

    fn get(&self, key: &str) -> Option<String> {
        self.entries.lock().ok()?.get(key).cloned()
    }

    /// Best effort: a memo that cannot be written only costs the probe next time.
    fn put(&self, key: &str, value: &str) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        // Bounded: old keys (other environments) are dropped first-in first-out
        // by key order, which is as good as any for a memo.
        while entries.len() >= 64 {
            let Some(k) = entries.keys().next().cloned() else {
                break;
            };
            entries.remove(&k);
        }
        entries.insert(key.to_string(), value.to_string());
        if let Ok(bytes) = serde_json::to_vec(&*entries) {
            let _ = cuda_toolchain::fsutil::write_atomic_unsynced(&self.path, &bytes);
        }
    }
}

/// A memo key: the parts, then every variable of the Env that is not a side
/// channel (they change on every `cargo cuda build` and never change the
/// compiler cc picks).
fn memo_key(env: &Env, parts: &[&str]) -> String {
    let mut k = crate::compile::incremental::hash::KeyHasher::new("host-memo-v1");
    for p in parts {
        k.str(p);
    }
    let mut vars: Vec<(String, OsString)> = env
        .iter()
        .filter(|(v, _)| v.is_build_input())
        .map(|(v, value)| (v.name().to_string(), value.to_os_string()))
        .chain(
            env.iter_named()
                .map(|(n, value)| (n.to_string(), value.to_os_string())),
        )
        .collect();
    vars.sort();
    for (name, value) in vars {
        k.str(&name).str(&value.to_string_lossy());
    }
    k.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triples_default_to_host_then_native() {
        let env = Env::empty().set(Var::Host, "x86_64-unknown-linux-gnu");
        assert_eq!(
            triples(&env),
            (
                "x86_64-unknown-linux-gnu".to_string(),
                "x86_64-unknown-linux-gnu".to_string()
            )
        );
        let env = env.set(Var::Target, "aarch64-unknown-linux-gnu");
        assert_eq!(triples(&env).0, "aarch64-unknown-linux-gnu");
    }

    #[test]
    fn nvcc_ccbin_is_read_per_target_and_beats_cxx() {
        let dir = tempfile::tempdir().unwrap();
        let t = "aarch64-unknown-linux-gnu";
        let h = "x86_64-unknown-linux-gnu";
        let env = Env::empty()
            .set(Var::Cxx, "/usr/bin/g++")
            .set(Var::NvccCcbin, "/plain/g++")
            .set_named("NVCC_CCBIN_aarch64_unknown_linux_gnu", "/cross/g++");
        let c = compiler(&env, None, t, h, dir.path(), dir.path())
            .unwrap()
            .unwrap();
        assert_eq!(c.path, PathBuf::from("/cross/g++"));
        assert_eq!(c.from, "NVCC_CCBIN_aarch64_unknown_linux_gnu");
        // Another target falls back to the plain variable.
        let c = compiler(&env, None, h, h, dir.path(), dir.path())
            .unwrap()
            .unwrap();
        assert_eq!(c.from, "NVCC_CCBIN");
        // The builder wins over everything.
        let c = compiler(
            &env,
            Some(Path::new("/b/clang++")),
            t,
            h,
            dir.path(),
            dir.path(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.from, "Build::ccbin");
    }

    #[test]
    fn a_missing_cxx_is_an_error_naming_the_variable() {
        let dir = tempfile::tempdir().unwrap();
        let h = "x86_64-unknown-linux-gnu";
        let env = Env::empty().set(Var::Cxx, "/nonexistent/g++-99");
        let e = compiler(&env, None, h, h, dir.path(), dir.path()).unwrap_err();
        assert_eq!(e.code, "host-compiler-not-found");
        assert!(
            e.message.starts_with("CXX names `/nonexistent/g++-99`"),
            "{e}"
        );
        let env = Env::empty().set(Var::Path, dir.path());
        let e = compiler(
            &env,
            None,
            "aarch64-unknown-linux-gnu",
            h,
            dir.path(),
            dir.path(),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("apt install g++-aarch64-linux-gnu"),
            "{e}"
        );
    }

    /// What the doctor shows is the engine's choice for the build machine.
    #[test]
    fn the_public_choice_is_the_engines() {
        let env = Env::empty().set(Var::Path, "/nonexistent");
        // Nothing set, cc's default not on PATH: no -ccbin, nvcc's own default.
        assert_eq!(host_compiler(&env).unwrap(), None);
        let env = env.set(Var::NvccCcbin, "/plain/g++");
        let tool = host_compiler(&env).unwrap().unwrap();
        assert_eq!(
            (tool.path, tool.from.as_str()),
            (PathBuf::from("/plain/g++"), "NVCC_CCBIN")
        );
        let e = host_compiler(&Env::empty().set(Var::Cxx, "/nonexistent/g++")).unwrap_err();
        assert_eq!(e.code, "host-compiler-not-found");
        assert!(e.message.starts_with("CXX names `/nonexistent/g++`"), "{e}");
    }

    #[test]
    fn lib_exe_gets_its_own_arguments() {
        let objs = [PathBuf::from("a.o")];
        let a = archiver_args(Path::new("lib.exe"), Path::new("k.lib"), &objs);
        assert_eq!(a, ["/nologo", "/OUT:k.lib", "a.o"]);
        let a = archiver_args(Path::new("/usr/bin/llvm-ar"), Path::new("k.a"), &objs);
        assert_eq!(a, ["crs", "k.a", "a.o"]);
    }
}
