//! [`Build::flag_if_supported`](crate::compile::Build::flag_if_supported): asks nvcc
//! whether it accepts a flag, by preprocessing an empty source with it
//! (`nvcc <flag> -E -x cu`): nvcc checks its own options, and the host
//! compiler checks what `-Xcompiler` passes on. Answers are kept per nvcc,
//! version, host compiler and flag in a small JSON file.

use cuda_toolchain::env::Env;
use cuda_toolchain::toolkit::Toolkit;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

pub(crate) struct FlagProbe {
    nvcc: PathBuf,
    ccbin: Option<PathBuf>,
    tag: String,
    timeout: Duration,
    cache: Option<PathBuf>,
    answers: Mutex<BTreeMap<String, bool>>,
}

impl FlagProbe {
    pub(crate) fn new(
        env: &Env,
        tk: &Toolkit,
        ccbin: Option<&Path>,
        cache: Option<PathBuf>,
    ) -> FlagProbe {
        let answers = cache
            .as_ref()
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        FlagProbe {
            nvcc: tk.nvcc.clone(),
            ccbin: ccbin.map(Path::to_path_buf),
            tag: format!(
                "{}|{}|{}",
                tk.nvcc.display(),
                tk.version
                    .as_ref()
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
                ccbin.map(|c| c.display().to_string()).unwrap_or_default()
            ),
            timeout: cuda_toolchain::process::timeout_from_env(env, Duration::from_secs(60)),
            cache,
            answers: Mutex::new(answers),
        }
    }

    /// Whether nvcc accepts `flag` (a flag nvcc cannot be asked about counts as unsupported).
    pub(crate) fn supported(&self, flag: &str) -> bool {
        let key = format!("{}|{flag}", self.tag);
        if let Some(&known) = self
            .answers
            .lock()
            .ok()
            .and_then(|a| a.get(&key).copied())
            .as_ref()
        {
            return known;
        }
        let Some(answer) = self.ask(flag) else {
            return false;
        };
        if let Ok(mut a) = self.answers.lock() {
            a.insert(key, answer);
            if let (Some(path), Ok(bytes)) = (&self.cache, serde_json::to_vec_pretty(&*a)) {
                if let Some(dir) = path.parent() {
                    let _ = std::fs::create_dir_all(dir);
                }
                let _ = cuda_toolchain::fsutil::write_atomic(path, &bytes);
            }
        }
        answer
    }

    /// None when the probe itself could not run (no temp dir, nvcc missing).
    fn ask(&self, flag: &str) -> Option<bool> {
        let dir = tempdir()?;
        let src = dir.join("probe.cu");
        std::fs::write(&src, "int main() { return 0; }\n").ok()?;
        let mut args: Vec<std::ffi::OsString> = Vec::new();
        if let Some(c) = &self.ccbin {
            args.push("-ccbin".into());
            args.push(c.into());
        }
        args.push(flag.into());
        args.extend(["-E".into(), "-x".into(), "cu".into()]);
        args.push(src.clone().into());
        args.push("-o".into());
        args.push(dir.join("probe.ii").into());
        let out = cuda_toolchain::process::run(&self.nvcc, &args, self.timeout);
        let _ = std::fs::remove_dir_all(&dir);
        Some(out.ok()?.status.success())
    }
}

/// A fresh private directory under the system temp dir.
fn tempdir() -> Option<PathBuf> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "cuda-build-flag-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}
