//! One source as a job: its nvcc arguments (paths relative to the package,
//! so outputs do not depend on where the checkout lives), its outputs, and
//! the flags key that, with its inputs' contents, decides whether it must
//! be compiled again. The plan stage makes jobs (`job_args.rs`).

use std::ffi::OsString;
use std::path::PathBuf;

/// Extra arguments of one nvcc call, and its output's role (file name in the cache).
pub(crate) type Call = (Vec<OsString>, String);

/// One source to build.
pub(crate) struct Job {
    pub source: PathBuf,
    /// The source as nvcc is given it: relative to the package when inside it.
    pub source_arg: PathBuf,
    pub display: String,
    pub name: String,
    /// The arch targets this job compiles (`sm_80`, `compute_90`; a PTX
    /// build's job has one whatever the plan's SASS).
    pub archs: Vec<String>,
    /// Arguments shared by every nvcc call for this source (no output, no arch for cubins).
    pub args: Vec<OsString>,
    /// Per-call extra arguments and the output role (file name in the cache).
    pub calls: Vec<Call>,
    /// Final output path for each role.
    pub outputs: Vec<(String, PathBuf)>,
    pub flags_key: String,
    /// The build's include dirs (absolute), for the pool's work estimate.
    pub includes: Vec<PathBuf>,
    /// nvcc's `--split-compile` count (1: not split): the job slots it takes.
    pub split: u32,
    /// The module anchor's symbol, pre-included into every call
    /// (`Build::stable_module_ids`; see `module_anchor.rs`).
    pub anchor: Option<String>,
}
