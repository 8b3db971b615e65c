//! Build steps that fetch a CUDA dependency (CUTLASS, cuDNN, a toolkit) and
//! fail: cudaforge's `GitOperationFailed("git clone failed ...")`,
//! candle-flash-attn's `Failed to clone cutlass repository`, git's own
//! `fatal: unable to access`, a failed download. The toolkit is fine; the
//! build never got the dependency.

use super::codes::Code;
use super::scan::{Fact, LineCx};
use super::view::{push_unique, Finding, View};
use super::Diagnosis;

/// CUDA dependencies build scripts fetch, as they appear in names and URLs.
const DEPENDENCIES: &[(&str, &str)] = &[
    ("cutlass", "CUTLASS"),
    ("cudnn", "cuDNN"),
    ("nccl", "NCCL"),
    ("cccl", "CCCL"),
    ("flashinfer", "FlashInfer"),
    ("flash-attention", "FlashAttention"),
    ("nvidia/cub", "CUB"),
    ("cuda-toolkit", "a CUDA toolkit"),
    ("cuda_toolkit", "a CUDA toolkit"),
    ("nvidia-cuda", "a CUDA wheel"),
    ("developer.download.nvidia.com", "an NVIDIA download"),
];

/// A fetch that failed, in git's, a builder's or a downloader's words.
const FAILED: &[&str] = &[
    "gitoperationfailed",
    "git clone failed",
    "failed to clone",
    "clone of '",
    "unable to access 'http",
    "could not resolve host",
    "failed to download",
    "download failed",
    "error downloading",
    "failed to fetch",
];

pub(crate) fn extract(cx: &mut LineCx) {
    let lower = cx.line.to_ascii_lowercase();
    let named = DEPENDENCIES
        .iter()
        .find(|(k, _)| lower.contains(k))
        .map(|(_, d)| *d);
    if !FAILED.iter().any(|w| lower.contains(w)) {
        // `Cloning cutlass from https://...`: remember what is being fetched,
        // for a failure that does not name it (cudaforge's GitOperationFailed).
        if let Some(dep) =
            named.filter(|_| lower.contains("cloning ") || lower.contains("fetching "))
        {
            cx.scan.fetching = Some(dep);
        }
        return;
    }
    let dep = match named.or(cx.scan.fetching) {
        Some(dep) => dep,
        // cudaforge fetches CUDA dependencies only.
        None if lower.contains("gitoperationfailed") => {
            "a CUDA dependency (CUTLASS or another that cudaforge fetches)"
        }
        None => return,
    };
    // A submodule clone that a retry then checked out is not a failure.
    let retried = cx.after.contains("Retry scheduled") && cx.after.contains("checked out");
    let conf = if retried { 0.3 } else { 0.8 };
    let near: String = cx
        .after
        .lines()
        .take(6)
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase();
    let text = format!("{lower} {near}");
    let reason = if text.contains("os error 2")
        || text.contains("executable not found")
        || text.contains("no such file or directory")
        || text.contains("git: not found")
        || text.contains("program not found")
    {
        "git could not be started (os error 2): git is not installed in the build environment"
    } else if text.contains("could not resolve host")
        || text.contains("unable to access")
        || text.contains("timed out")
        || text.contains("connection")
    {
        "the network (or a proxy) did not let the build reach the server"
    } else if text.contains("could not read username")
        || text.contains("authentication")
        || text.contains("permission denied")
    {
        "the server asked for credentials, or the URL is wrong"
    } else {
        "the fetch command failed"
    };
    cx.hit_as(
        Code::CudaDependencyFetchFailed,
        Fact::Text(format!("{dep}: {reason}")),
        conf,
    );
}

/// `cuda-dependency-fetch-failed`.
pub(super) fn explain(f: &Finding, view: &View, d: &mut Diagnosis) {
    let what = f.facts.iter().find_map(|x| match x {
        Fact::Text(t) => Some(t.as_str()),
        _ => None,
    });
    let (dep, reason) = what
        .and_then(|t| t.split_once(": "))
        .unwrap_or(("a CUDA dependency", "the fetch command failed"));
    let by = view.scan.build_script.as_deref().map_or_else(
        || "The build".to_string(),
        |c| format!("The build script of `{c}`"),
    );
    d.cause = format!("{by} downloads {dep} while building, and the download failed: {reason}. The CUDA toolkit is not the problem.");
    if reason.starts_with("git could not be started") {
        d.fix.push(
            "install git in the build environment (`apt-get install -y git` in the build image)"
                .into(),
        );
    }
    d.fix.push(format!("fetch {dep} by hand once (`git clone https://github.com/NVIDIA/cutlass` for CUTLASS) to see git's own error; set HTTPS_PROXY if the network needs one"));
    d.fix.push(format!("or point the build at a copy fetched beforehand (the crate's variable for it, a vendored or submodule checkout of {dep}); in CI, cache it"));
    push_unique(
        &mut d.alternatives,
        "header-dep-missing: cuda-build's own pinned header dependencies report a missing or unpinned copy under that code.".into(),
    );
}
