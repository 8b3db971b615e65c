//! The kernel cache as `cargo cuda doctor` and `cargo cuda info` see it:
//! where its directory is, whether it is turned off, and whether its Redis
//! tier answers.

use crate::compile::incremental::cache;
use crate::compile::incremental::redis::{Client, Endpoint, EXPECTED};

/// Where the kernel cache lives and whether its remote tier answers, for
/// `cargo cuda doctor` and `cargo cuda info` (the build itself never waits
/// on this: a remote fault there only turns the tier off).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CacheStatus {
    /// The local cache directory (`CUDA_BUILD_CACHE_DIR`, else the per-user cache); None when off.
    pub dir: Option<std::path::PathBuf>,
    /// Why the local cache is off (`CUDA_BUILD_NO_CACHE`), if it is.
    pub disabled_by: Option<String>,
    /// `CUDA_BUILD_CACHE_REDIS` as shown (password masked); None when unset.
    pub remote: Option<String>,
    /// None: reachable (or unset); Some(why) when it is not usable.
    pub remote_problem: Option<String>,
}

/// The cache's status: the local directory and, when `CUDA_BUILD_CACHE_REDIS`
/// is set, one `GET` through the same client the build uses (2 s deadlines).
pub fn cache_status(env: &cuda_toolchain::env::Env) -> CacheStatus {
    use cuda_toolchain::env::Var;
    let disabled_by = env
        .flag(Var::CudaBuildNoCache)
        .then(|| Var::CudaBuildNoCache.name().to_string());
    let dir = cache::dir_for(env, None, false);
    let var = Var::CudaBuildCacheRedis;
    let not_utf8 = env.get_os(var).is_some_and(|v| v.to_str().is_none());
    let (remote, remote_problem) = match env.get_nonempty(var) {
        None if not_utf8 => (
            Some("(not valid UTF-8)".into()),
            Some(format!(
                "{} is not valid UTF-8, so it is ignored; expected {EXPECTED}",
                var.name()
            )),
        ),
        None => (None, None),
        Some(url) => match Endpoint::parse(url) {
            Err(why) => (
                // Never a password, in any shape the URL has.
                Some(
                    cuda_toolchain::redact::mask_credentials(url)
                        .chars()
                        .take(60)
                        .collect(),
                ),
                Some(format!("{why}; expected {EXPECTED}")),
            ),
            Ok(ep) => {
                let shown = ep.shown();
                let client = Client::new(ep);
                let problem = client.get("cuda-build:v1:status-probe").err();
                (Some(shown), problem)
            }
        },
    };
    CacheStatus {
        dir,
        disabled_by,
        remote,
        remote_problem,
    }
}
