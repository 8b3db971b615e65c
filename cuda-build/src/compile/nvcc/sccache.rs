//! sccache as nvcc's wrapper: is it sccache, which version, can it cache
//! nvcc, and what an nvcc command line needs to go through it correctly.
//!
//! sccache understands nvcc since 0.9: it replays `nvcc --dryrun` and caches
//! each cicc / ptxas step. Two facts shape how cuda-build runs it:
//!
//! * **The `.module_id` race (sccache 0.9 – 0.16 at least).** Outside `-c`
//!   mode (`-fatbin`, `-cubin`, `-ptx`) nvcc runs no cudafe++; the first cicc
//!   writes `<stem>.module_id` (`--gen_module_id_file`) and every other
//!   virtual arch's cicc reads it. sccache runs the per-arch groups in hash
//!   map order, so with two or more virtual archs a reader often runs first
//!   and the compile fails with
//!   `Failed to open file for hashing: ".../sccache_nvccXXXX/k.module_id"`
//!   (and `Compiler killed by signal 126`). cuda-build passes
//!   `-Xcicc --gen_module_id_file` then, so every cicc writes the file itself:
//!   the id is derived from the source, so the output is byte-identical to a
//!   plain nvcc run (checked by the tests) and the groups no longer depend on
//!   each other.
//! * **sccache's own failures are not compile errors.** When sccache fails
//!   for a reason of its own (its server cannot start, a storage backend is
//!   down), its output carries `sccache: error:` lines and no compiler
//!   message; cuda-build then compiles that source with plain nvcc and says
//!   so once, instead of failing the build or blaming the toolkit.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

/// The first sccache release that caches nvcc compiles (cicc / ptxas steps).
pub const MIN_VERSION_FOR_NVCC: semver::Version = semver::Version::new(0, 9, 0);

/// True when `wrapper` names sccache (by its file name: `sccache`, `sccache.exe`).
pub fn is_sccache(wrapper: &Path) -> bool {
    wrapper
        .file_stem()
        .map(|s| s.to_string_lossy().eq_ignore_ascii_case("sccache"))
        .unwrap_or(false)
}

/// What `sccache --version` said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The version it reported.
    pub version: semver::Version,
}

impl Probe {
    /// Whether this sccache caches nvcc compiles (version ≥ 0.9).
    pub fn caches_nvcc(&self) -> bool {
        self.version >= MIN_VERSION_FOR_NVCC
    }
}

/// Runs `<sccache> --version` (no server is started) and parses the answer.
///
/// The error says, in one sentence, why this sccache cannot be used.
pub fn probe(sccache: &Path, timeout: Duration) -> Result<Probe, String> {
    let out =
        cuda_toolchain::process::run(sccache, ["--version"], timeout).map_err(|e| e.to_string())?;
    let text = out.combined();
    if !out.status.success() {
        return Err(format!(
            "`{} --version` failed ({}): {}",
            sccache.display(),
            out.status,
            first_line(&text)
        ));
    }
    parse_version(&text)
        .map(|version| Probe { version })
        .ok_or_else(|| {
            format!(
                "`{} --version` printed `{}`, not `sccache X.Y.Z`",
                sccache.display(),
                first_line(&text)
            )
        })
}

/// The deadline of one nvcc run under sccache: `CUDA_BUILD_TIMEOUT` when
/// set, else 120 s (at most the plain deadline). sccache waits 60 s on each
/// cache read of a backend that stopped answering (a Redis killed
/// mid-build), so a two-arch compile would take minutes per source; past
/// this deadline cuda-build compiles with plain nvcc and stops using sccache
/// for the rest of the build script. Sources that genuinely take longer under
/// sccache (sccache-dist, huge kernels) need CUDA_BUILD_TIMEOUT raised.
pub(crate) fn stall_deadline(env: &cuda_toolchain::env::Env, timeout: Duration) -> Duration {
    if env
        .get_nonempty(cuda_toolchain::env::Var::CudaBuildTimeout)
        .is_some()
    {
        timeout
    } else {
        timeout.min(Duration::from_secs(120))
    }
}

/// How long a healthy sccache takes at most to answer `--show-stats`.
const SERVER_TIMEOUT: Duration = Duration::from_secs(15);

/// Asks the sccache server for its statistics (this starts nothing): a
/// server that is up answers at once, and with none up the client answers
/// alone. A port held by another program makes sccache wait forever, so
/// every compile would hang until cuda-build's deadline: that is caught here.
pub fn server_answers(sccache: &Path) -> Result<(), String> {
    let port = std::env::var("SCCACHE_SERVER_PORT").unwrap_or_else(|_| "4226 (default)".into());
    match cuda_toolchain::process::run(sccache, ["--show-stats"], SERVER_TIMEOUT) {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "`{} --show-stats` failed: {}",
            sccache.display(),
            first_line(&out.combined())
        )),
        Err(cuda_toolchain::process::RunError::TimedOut { .. }) => Err(format!(
            "the sccache server did not answer within {} s: another program may hold its port ({port} here; SCCACHE_SERVER_PORT chooses it); stop that program or choose another port",
            SERVER_TIMEOUT.as_secs()
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// Starts the sccache server unless one listens already, with a short,
/// stable temporary directory.
///
/// sccache starts its server on the first compile otherwise, from that
/// compile's environment: nvcc's TMPDIR is the job's own directory deep in
/// OUT_DIR, where the start-up socket's path is longer than a Unix socket
/// path may be ("path must be shorter than SUN_LEN", so every kernel fell
/// back to plain nvcc), and the server would keep a TMPDIR that is removed
/// with the job.
///
/// Best effort, so it returns nothing: `--start-server` with a server up
/// fails ("Address in use", or a timeout when its storage does not answer),
/// and whatever stops a real start also stops each compile, which then
/// says so and falls back to plain nvcc. A server seen listening on
/// 127.0.0.1:SCCACHE_SERVER_PORT (4226 by default) is left alone; one
/// whose port only a wrapper script sets costs one failed start.
pub fn start_server(sccache: &Path) {
    let port = std::env::var("SCCACHE_SERVER_PORT")
        .ok()
        .and_then(|p| p.trim().parse::<u16>().ok())
        .unwrap_or(4226);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    if std::env::var_os("SCCACHE_SERVER_UDS").is_none()
        && std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
    {
        return;
    }
    let mut cmd = std::process::Command::new(sccache);
    cmd.arg("--start-server").env("TMPDIR", short_temp_dir());
    let _ = cuda_toolchain::process::run_command(&mut cmd, SERVER_TIMEOUT);
}

/// The temporary directory sccache's server gets: this process's own when
/// its path is short enough for a socket inside it, else `/tmp`.
fn short_temp_dir() -> std::path::PathBuf {
    // sun_path holds 108 bytes; sccache adds a directory and a file name.
    const MAX: usize = 64;
    let own = std::env::temp_dir();
    if own.as_os_str().len() <= MAX && own.is_dir() {
        own
    } else {
        std::path::PathBuf::from("/tmp")
    }
}

/// `sccache 0.16.0` → 0.16.0 (the first line naming sccache).
pub fn parse_version(text: &str) -> Option<semver::Version> {
    text.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        if words.next()? != "sccache" {
            return None;
        }
        let v = words.next()?.trim_start_matches('v');
        semver::Version::parse(v).ok().or_else(|| {
            // "0.9" without a patch number.
            let mut parts = v.split('.').map(|p| p.parse::<u64>().ok());
            Some(semver::Version::new(parts.next()??, parts.next()??, 0))
        })
    })
}

/// Extra nvcc arguments that make `args` safe under sccache (see the module
/// docs: every cicc writes its own `.module_id` outside `-c` mode).
pub(crate) fn extra_args(args: &[OsString]) -> Vec<OsString> {
    let object_mode = args.iter().any(|a| {
        matches!(
            a.to_str(),
            Some("-c" | "--compile" | "-dc" | "--device-c" | "-dw" | "--device-w")
        )
    });
    if object_mode {
        Vec::new()
    } else {
        vec!["-Xcicc".into(), "--gen_module_id_file".into()]
    }
}

/// The `sccache:` line that shows a failure is sccache's own (its server,
/// its storage, its nvcc replay) rather than a compile error, if any.
pub(crate) fn own_failure(output: &str) -> Option<String> {
    let lines: Vec<&str> = output.lines().map(str::trim).collect();
    let compiler_error = lines
        .iter()
        .any(|l| !l.starts_with("sccache") && (l.contains("error") || l.contains("fatal")));
    let own = lines.iter().find(|l| {
        l.starts_with("sccache: error:")
            || l.starts_with("sccache: encountered fatal error")
            || l.starts_with("sccache: Compiler killed by signal")
    })?;
    // "Failed to open file for hashing" is the .module_id race: sccache's
    // even when cicc also printed something.
    if compiler_error && !output.contains("Failed to open file for hashing") {
        return None;
    }
    // The most specific line: the last "caused by", else the error itself.
    let cause = lines
        .iter()
        .rev()
        .find(|l| l.starts_with("sccache: caused by:") || l.starts_with("sccache: error:"))
        .unwrap_or(own);
    Some(cause.to_string())
}

fn first_line(s: &str) -> &str {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(is_sccache(Path::new("/usr/bin/sccache")));
        assert!(is_sccache(Path::new("sccache")));
        assert!(is_sccache(Path::new("C:/tools/SCCACHE.exe")));
        assert!(!is_sccache(Path::new("/usr/bin/ccache")));
        assert!(!is_sccache(Path::new("/usr/bin/sccache-dist")));
    }

    #[test]
    fn versions() {
        assert_eq!(
            parse_version("sccache 0.16.0\n"),
            Some(semver::Version::new(0, 16, 0))
        );
        assert_eq!(
            parse_version("sccache 0.9\n"),
            Some(semver::Version::new(0, 9, 0))
        );
        assert_eq!(parse_version("ccache version 4.8\n"), None);
        let old = Probe {
            version: semver::Version::new(0, 8, 2),
        };
        assert!(!old.caches_nvcc());
    }

    #[test]
    fn module_id_flag_only_outside_object_mode() {
        let fatbin: Vec<OsString> = vec!["-fatbin".into(), "-o".into(), "x".into()];
        assert_eq!(extra_args(&fatbin).len(), 2);
        let obj: Vec<OsString> = vec!["-c".into(), "-o".into(), "x.o".into()];
        assert!(extra_args(&obj).is_empty());
    }

    #[test]
    fn own_failures_are_told_from_compile_errors() {
        // Seen with sccache 0.16.0 and nvcc 13.0 (two virtual archs, -fatbin).
        let race = "sccache: Compiler killed by signal 126\nsccache: encountered fatal error\nsccache: error: Failed to open file for hashing: \"/tmp/sccache_nvccEVjPlg/saxpy.module_id\"\nsccache: caused by: failed to open file `/tmp/sccache_nvccEVjPlg/saxpy.module_id`: No such file or directory (os error 2)\n";
        assert!(own_failure(race).unwrap().contains("saxpy.module_id"));
        let compile = "k.cu(3): error: identifier \"y\" is undefined\n1 error detected in the compilation of \"k.cu\".\n";
        assert_eq!(own_failure(compile), None);
    }
}
