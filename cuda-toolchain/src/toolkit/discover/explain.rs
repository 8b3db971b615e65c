//! The text that explains discovery: rule names, and the errors when no
//! toolkit (or only a broken one) can be used.

use crate::toolkit::{Discovery, FoundVia, Problem, Severity, Toolkit};
use crate::Error;

/// A short name for the rule that found a toolkit (`CUDA_HOME`, `PATH (/usr/bin)`).
pub(crate) fn via_name(via: &FoundVia) -> String {
    match via {
        FoundVia::Explicit => "explicit root".into(),
        FoundVia::EnvVar(name) => name.clone(),
        FoundVia::Installed(store) => format!("cargo cuda toolkit install ({})", store.display()),
        FoundVia::Path(dir) => format!("PATH ({})", dir.display()),
        FoundVia::UsrLocalCuda(target) => format!("/usr/local/cuda → {}", target.display()),
        FoundVia::Versioned => "versioned install".into(),
        FoundVia::OptCuda => "/opt/cuda".into(),
        FoundVia::Distro => "distro package (nvidia-cuda-toolkit)".into(),
        FoundVia::PythonWheel(site) => format!("Python wheels ({})", site.display()),
        FoundVia::Conda(prefix) => format!("conda ({})", prefix.display()),
    }
}

impl Discovery {
    /// The chosen toolkit, if any.
    pub fn selected_toolkit(&self) -> Option<&Toolkit> {
        self.selected.and_then(|i| self.candidates.get(i))
    }

    /// The chosen toolkit, or an error that lists what was found and why none fits.
    ///
    /// A chosen toolkit with an error-level [`Problem`] (say, a mixed release)
    /// is an error here, so builds stop before the first compile with the fix.
    pub fn into_selected(self) -> Result<Toolkit, Error> {
        let listing = || {
            self.candidates
                .iter()
                .map(|t| {
                    let mut line = format!(
                        "{} ({}, via {})",
                        t.nvcc.display(),
                        t.version
                            .as_ref()
                            .map_or("unknown version".into(), |v| v.to_string()),
                        via_name(&t.found_via)
                    );
                    for p in t.problems.iter().filter(|p| p.severity == Severity::Error) {
                        line.push_str(&format!("\n    {}: {}", p.code, p.message));
                    }
                    line
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        // `get`: the fields are public, so the index may not come from `discover`.
        if let Some((i, tk)) = self
            .selected
            .and_then(|i| Some((i, self.candidates.get(i)?)))
        {
            if let Some(p) = tk.problems.iter().find(|p| p.severity == Severity::Error) {
                return Err(broken_error(tk, p));
            }
            let mut candidates = self.candidates;
            return Ok(candidates.swap_remove(i));
        }
        if self.candidates.is_empty() {
            return Err(Error::new("nvcc-not-found", "no CUDA toolkit (nvcc) was found")
                .with_detail(self.reason.clone())
                .with_help("without root or Python: `cargo cuda toolkit install 13.0` (a verified CUDA 13.0 compiler in the per-user store, found automatically)")
                .with_help("install the CUDA toolkit (https://developer.nvidia.com/cuda-downloads) and set CUDA_HOME to its root, e.g. /usr/local/cuda-13.0")
                .with_help("or, in a Python venv: pip install nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85"));
        }
        if self.candidates.iter().all(Toolkit::is_broken) {
            let tk = &self.candidates[0];
            // `all(is_broken)` on a non-empty list: the first has an error.
            let Some(p) = tk.problems.iter().find(|p| p.severity == Severity::Error) else {
                return Err(Error::new("nvcc-not-found", self.reason.clone()));
            };
            let mut e = broken_error(tk, p);
            if self.candidates.len() > 1 {
                e = e.with_detail(format!("every toolkit found is broken:\n{}", listing()));
            }
            return Err(e);
        }
        Err(Error::new("toolkit-requirement", self.reason.clone())
            .with_detail(format!("toolkits found:\n{}", listing()))
            .with_help(
                "install one into the per-user store: `cargo cuda toolkit install <VERSION>` with a version that satisfies the requirement (or `cargo cuda build --install`)",
            )
            .with_help(
                "or install a toolkit that satisfies the requirement and set CUDA_HOME to its root",
            )
            .with_help("or change `toolkit` under [package.metadata.cuda] in Cargo.toml"))
    }
}

fn broken_error(tk: &Toolkit, p: &Problem) -> Error {
    let mut e = Error::new(
        p.code,
        format!(
            "the CUDA toolkit at `{}` (via {}) cannot compile: {}",
            tk.root.display(),
            via_name(&tk.found_via),
            p.message
        ),
    );
    if let Some(fix) = &p.fix {
        e = e.with_help(fix.clone());
    }
    let others: Vec<String> = tk
        .problems
        .iter()
        .filter(|q| *q != p && q.severity == Severity::Error)
        .map(|q| format!("{}: {}", q.code, q.message))
        .collect();
    if !others.is_empty() {
        e = e.with_detail(others.join("\n"));
    }
    e
}
