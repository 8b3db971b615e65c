//! Toolkit discovery: the rules in precedence order (`run`), built from
//! where candidates come from (`sources`), how explicit settings are
//! validated (`explicit`), how one nvcc is read into a [`Toolkit`]
//! (`candidate`), the choice among candidates (`choose`) and the text
//! that explains it (`explain`).

mod candidate;
mod choose;
mod explain;
mod explicit;
mod sources;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::windows;
use super::{Discovery, FoundVia, Toolkit};
use crate::env::{Env, Var};
use crate::Error;
use explicit::Setting;

pub(crate) use explain::via_name;

/// What discovery should honour beyond the environment.
#[derive(Debug, Clone, Default)]
pub struct DiscoverOptions {
    /// The project's requirement (`[package.metadata.cuda] toolkit`).
    pub requirement: Option<semver::VersionReq>,
    /// A root given in code (`Build::toolkit`) or on the command line; wins over everything.
    pub explicit_root: Option<PathBuf>,
}

/// The variables that name a toolkit after `NVCC`, in precedence order:
/// the two every tool reads (CUDA_HOME: PyTorch, NVIDIA's Rust crates,
/// cudarc; CUDA_PATH: the NVIDIA installers, CMake, cuda-pathfinder), then
/// the names one tool family reads (NVIDIA's Rust crates' CUDA_TOOLKIT_PATH,
/// CMake's CUDACXX, a path to nvcc), then the older build systems' roots.
/// Every one is a root except CUDACXX.
pub(crate) const TOOLKIT_VARS: [Var; 7] = [
    Var::CudaHome,
    Var::CudaPath,
    Var::CudaToolkitPath,
    Var::Cudacxx,
    Var::CudaRoot,
    Var::CudaToolkitRootDir,
    Var::CudaToolkitRoot,
];

/// Finds every toolkit and chooses one. Errors only when an explicit setting
/// (an explicit root, `NVCC`, or the first set of `CUDA_HOME`…`CUDAToolkit_ROOT`)
/// is broken; everything else wrong is a [`Problem`](super::Problem) on a candidate.
/// `CUDACXX` is CMake's: when it names no nvcc it is skipped with a warning.
/// Variables that name different toolkits give one warning that names them all.
pub fn discover(env: &Env, opts: &DiscoverOptions) -> Result<Discovery, Error> {
    run(env, opts, false)
}

/// Like [`discover`], but also asks the active python for its site-packages
/// even when cheaper rules found a toolkit (for listings such as `cargo cuda toolkits`).
pub fn discover_all(env: &Env, opts: &DiscoverOptions) -> Result<Discovery, Error> {
    run(env, opts, true)
}

/// The toolkit a build script should use: [`discover`] with the requirement
/// from `[package.metadata.cuda] toolkit` in `$CARGO_MANIFEST_DIR/Cargo.toml`.
///
/// ```no_run
/// let tk = cuda_toolchain::toolkit::find(&cuda_toolchain::env::Env::from_process())?;
/// println!("nvcc {} at {}", tk.version.unwrap(), tk.nvcc.display());
/// # Ok::<(), cuda_toolchain::Error>(())
/// ```
pub fn find(env: &Env) -> Result<Toolkit, Error> {
    let mut opts = DiscoverOptions::default();
    if let Some(dir) = env.get_nonempty(Var::CargoManifestDir) {
        opts.requirement = crate::metadata::read(Path::new(dir))?.toolkit;
    }
    discover(env, &opts)?.into_selected()
}

/// A toolkit plus what discovery needs to know about it internally.
struct Candidate {
    tk: Toolkit,
    /// The resolved nvcc, for deduplication.
    key: PathBuf,
    /// Found by an explicit setting (explicit root, NVCC, a root variable).
    explicit: bool,
}

/// Extra places a layout keeps its parts that nvcc.profile does not mention.
#[derive(Default)]
struct Extras {
    include_dirs: Vec<PathBuf>,
    lib_dirs: Vec<PathBuf>,
    tool_dirs: Vec<PathBuf>,
}

struct Search<'a> {
    env: &'a Env,
    cands: Vec<Candidate>,
    seen: HashSet<PathBuf>,
    /// The first real nvcc on PATH (what a shell runs), for the conflict check.
    path_first: Option<(PathBuf, PathBuf)>,
    looked: Vec<String>,
}

fn run(env: &Env, opts: &DiscoverOptions, all: bool) -> Result<Discovery, Error> {
    let mut s = Search {
        env,
        cands: Vec::new(),
        seen: HashSet::new(),
        path_first: None,
        looked: Vec::new(),
    };
    let mut conflicts = Vec::new();
    let mut explicit_used = false;
    // Each variable that named a usable toolkit, in precedence order.
    let mut named: Vec<explicit::Named> = Vec::new();

    if let Some(root) = &opts.explicit_root {
        let what = Setting::Explicit;
        let c = s.explicit_root_candidate(&what, root.as_os_str())?;
        s.push(c);
        explicit_used = true;
    }
    if let Some(value) = env.get_os(Var::Nvcc) {
        let what = Setting::Var(Var::Nvcc);
        match s.nvcc_var_candidate(value) {
            Ok(c) => {
                named.push(explicit::Named::of(Var::Nvcc, &c));
                s.push(c);
                explicit_used = true;
            }
            Err(e) if explicit_used => conflicts.push(explicit::ignored_setting(&what, e)),
            Err(e) => return Err(e),
        }
    }
    for var in TOOLKIT_VARS {
        let Some(value) = env.get_os(var) else {
            continue;
        };
        if var == Var::Cudacxx {
            // CMake's: a value naming another compiler is CMake's business.
            match s.cudacxx_candidate(value) {
                Ok(Some(c)) => {
                    named.push(explicit::Named::of(var, &c));
                    s.push(c);
                    explicit_used = true;
                }
                Ok(None) => {}
                Err(p) => conflicts.push(p),
            }
            continue;
        }
        let what = Setting::Var(var);
        match s.explicit_root_candidate(&what, value) {
            Ok(c) => {
                named.push(explicit::Named::of(var, &c));
                s.push(c);
                explicit_used = true;
            }
            Err(e) if explicit_used => conflicts.push(explicit::ignored_setting(&what, e)),
            Err(e) => return Err(e),
        }
    }
    // Windows: the installer's per-release variables (not explicit settings:
    // the installer sets them, so a stale one is skipped, not an error).
    for (name, root) in windows::cuda_path_versioned(env) {
        let nvcc = windows::nvcc_under(&root);
        if nvcc.is_file() {
            let c = s.candidate(&nvcc, FoundVia::EnvVar(name), Extras::default(), false);
            s.push(c);
        }
    }
    s.search_store();
    s.search_path();
    s.search_fixed();
    for root in windows::program_files_roots(env) {
        let nvcc = windows::nvcc_under(&root);
        if nvcc.is_file() {
            let c = s.candidate(&nvcc, FoundVia::Versioned, Extras::default(), false);
            s.push(c);
        }
    }
    let mut sites = Vec::new();
    for var in [Var::VirtualEnv, Var::CondaPrefix] {
        if let Some(prefix) = env.get_nonempty(var) {
            sites.extend(sources::site_packages_of(Path::new(prefix)));
        }
    }
    s.looked
        .push("VIRTUAL_ENV / CONDA_PREFIX site-packages".into());
    for site in &sites {
        s.search_site(site);
    }
    if all || s.cands.is_empty() {
        for site in sources::python_sites(env) {
            if !sites.contains(&site) {
                s.search_site(&site);
                sites.push(site);
            }
        }
        s.looked.push("the active python's site-packages".into());
    }
    if let Some(prefix) = env.get_nonempty(Var::CondaPrefix) {
        s.search_conda(Path::new(prefix));
    }

    conflicts.extend(explicit::variable_conflicts(&named));
    let (selected, reason) = choose::choose(&s.cands, opts.requirement.as_ref(), &s.looked);
    if let (Some(i), Some(first)) = (selected, &s.path_first) {
        conflicts.extend(choose::path_conflict(&s.cands[i], first));
    }
    Ok(Discovery {
        candidates: s.cands.into_iter().map(|c| c.tk).collect(),
        selected,
        reason,
        conflicts,
    })
}

impl Search<'_> {
    fn push(&mut self, c: Candidate) {
        if self.seen.insert(c.key.clone()) {
            self.cands.push(c);
        }
    }
}
