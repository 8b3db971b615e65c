//! Finding CUDA toolkits: every candidate, where it came from, its version,
//! and what is wrong with it; then choosing one.
//!
//! # Precedence
//!
//! Candidates are collected in this order (the order of [`FoundVia`]), and
//! deduplicated by the resolved path of their nvcc (the first rule keeps it):
//!
//! 1. an explicit root given in code ([`DiscoverOptions::explicit_root`]);
//! 2. `NVCC` (a path to nvcc, or a bare name looked up on `PATH`);
//! 3. `CUDA_HOME`, `CUDA_PATH`, `CUDA_ROOT`, `CUDA_TOOLKIT_ROOT_DIR`, `CUDAToolkit_ROOT`;
//! 4. toolkits installed by `cargo cuda toolkit install` in the store
//!    ([`store::root`]), newest first (only checked, one-release installs);
//! 5. every `nvcc` on `PATH`, symlinks resolved (a distro `/usr/bin/nvcc`);
//!    compiler-cache wrappers (`/usr/lib/ccache/nvcc → ccache`) are skipped;
//! 6. `/usr/local/cuda` (reported with its symlink target);
//! 7. every `/usr/local/cuda-X.Y`, newest first, then `/opt/cuda`;
//! 8. Debian/Ubuntu's `/usr/lib/nvidia-cuda-toolkit` (headers in `/usr/include`);
//! 9. Python wheels (`site-packages/nvidia/cu13`, or the split
//!    `nvidia/cuda_nvcc` + `nvidia/cuda_runtime` + `nvidia/cuda_cccl` layout)
//!    in `VIRTUAL_ENV`, `CONDA_PREFIX`, and — only when nothing was found so
//!    far, or for [`discover_all`] — the active python's site-packages
//!    (`CUDA_BUILD_PYTHON`, else `python3` on `PATH`);
//! 10. a conda toolkit in `CONDA_PREFIX` (headers in `targets/x86_64-linux`).
//!
//! Windows layouts ([`windows`]) join these rules: `nvcc.exe` wherever
//! `nvcc` is looked for, `CUDA_PATH_VX_Y` (after 3), the installer's
//! `Program Files\NVIDIA GPU Computing Toolkit\CUDA\vX.Y` (after 6),
//! wheels in `Lib\site-packages` (8) and conda's `Library\bin` (9).
//!
//! # Choosing
//!
//! An explicit setting (1–3) always wins, and when it is broken (missing
//! directory, relative path, nvcc that hangs or crashes…) [`discover`]
//! returns an error rather than quietly using another toolkit. Otherwise a
//! project requirement (`[package.metadata.cuda] toolkit = ">=12.4"`) picks
//! the newest usable toolkit that satisfies it; otherwise the first usable
//! toolkit in precedence order is chosen.
//!
//! # Where the parts are
//!
//! nvcc finds its headers, libraries and tools through `bin/nvcc.profile`
//! (`TOP`, `INCLUDES`, `LIBRARIES`, `PATH`). We read that file the way nvcc
//! does ([`layout`]), and only when there is none (a wrapper script) ask
//! `nvcc -v --dryrun`. Each candidate is then checked ([`Problem`]s with
//! code `toolkit-incomplete`): cicc, ptxas,
//! fatbinary and nvlink present and executable; `cuda_runtime.h` and the
//! CCCL headers present; nvcc, cicc and ptxas from one release.
//!
//! ```no_run
//! use cuda_toolchain::{env::Env, toolkit};
//! let found = toolkit::discover(&Env::from_process(), &Default::default())?;
//! for tk in &found.candidates {
//!     println!("{} {:?} via {:?}", tk.root.display(), tk.version, tk.found_via);
//! }
//! let tk = found.into_selected()?;
//! # Ok::<(), cuda_toolchain::Error>(())
//! ```

mod discover;
mod integrity;
pub mod layout;
pub mod store;
pub mod version;
pub mod windows;

pub use discover::{discover, discover_all, find, DiscoverOptions};

use std::path::PathBuf;

/// The rule that found a toolkit, in precedence order.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "rule", content = "detail")]
pub enum FoundVia {
    /// Given in code (`Build::toolkit_root`) or by `--toolkit`.
    Explicit,
    /// One of NVCC, CUDA_HOME, CUDA_PATH, CUDA_ROOT, CUDA_TOOLKIT_ROOT_DIR, CUDAToolkit_ROOT (the name).
    EnvVar(String),
    /// Installed by `cargo cuda toolkit install` (the store directory).
    Installed(PathBuf),
    /// nvcc found on PATH (the PATH entry it was found in).
    Path(PathBuf),
    /// The /usr/local/cuda symlink (its target).
    UsrLocalCuda(PathBuf),
    /// A versioned install such as /usr/local/cuda-12.4.
    Versioned,
    /// /opt/cuda (Arch Linux and others).
    OptCuda,
    /// Debian/Ubuntu's nvidia-cuda-toolkit (/usr/lib/nvidia-cuda-toolkit).
    Distro,
    /// Python wheels (nvidia/cu13 or nvidia/cuda_nvcc) in a site-packages dir (which one).
    PythonWheel(PathBuf),
    /// A conda environment (CONDA_PREFIX).
    Conda(PathBuf),
}

impl std::fmt::Display for FoundVia {
    /// A short name for the rule: `CUDA_HOME`, `PATH (/usr/bin)`, `/usr/local/cuda → /usr/local/cuda-12.4`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&discover::via_name(self))
    }
}

/// How bad a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; the toolkit still works.
    Warning,
    /// Compiles with this toolkit will fail.
    Error,
}

/// Something wrong with a toolkit or with the environment around it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    /// Diagnosis code (e.g. `toolkit-incomplete`).
    pub code: &'static str,
    /// Warning or error.
    pub severity: Severity,
    /// What is wrong, naming the file or variable.
    pub message: String,
    /// How to fix it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// One CUDA toolkit found on this machine.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Toolkit {
    /// The toolkit root (what CUDA_HOME should be), as nvcc itself sees it.
    pub root: PathBuf,
    /// The nvcc executable.
    pub nvcc: PathBuf,
    /// The toolkit version (`13.0.88`), if it could be read.
    pub version: Option<semver::Version>,
    /// The rule that found it.
    pub found_via: FoundVia,
    /// Header directories nvcc uses (cuda_runtime.h, CCCL).
    pub include_dirs: Vec<PathBuf>,
    /// Library directories (libcudart).
    pub lib_dirs: Vec<PathBuf>,
    /// What is wrong with it.
    pub problems: Vec<Problem>,
}

impl Toolkit {
    /// Whether any problem is an error (compiles would fail).
    pub fn is_broken(&self) -> bool {
        self.problems.iter().any(|p| p.severity == Severity::Error)
    }
}

/// Every toolkit found, and which one was chosen.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Discovery {
    /// All candidates, in precedence order, deduplicated by resolved nvcc.
    pub candidates: Vec<Toolkit>,
    /// Index into `candidates` of the chosen toolkit.
    pub selected: Option<usize>,
    /// Why that one was chosen (or why none was).
    pub reason: String,
    /// Problems of the environment rather than one toolkit (CUDA_HOME vs CUDA_PATH, PATH's nvcc not selected).
    pub conflicts: Vec<Problem>,
}
