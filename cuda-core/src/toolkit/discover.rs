//! The discovery rules, candidate building and the choice among candidates.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::integrity::{self, Places};
use super::layout::{self, Profile};
use super::version::{self, ToolRunError};
use super::windows;
use super::{Discovery, FoundVia, Problem, Severity, Toolkit};
use crate::env::{Env, Var};
use crate::process::RunError;
use crate::Error;

/// What discovery should honour beyond the environment.
#[derive(Debug, Clone, Default)]
pub struct DiscoverOptions {
    /// The project's requirement (`[package.metadata.cuda] toolkit`).
    pub requirement: Option<semver::VersionReq>,
    /// A root given in code (`Build::toolkit`) or on the command line; wins over everything.
    pub explicit_root: Option<PathBuf>,
}

/// The variables that name a toolkit root, in precedence order.
pub(crate) const ROOT_VARS: [Var; 5] = [
    Var::CudaHome,
    Var::CudaPath,
    Var::CudaRoot,
    Var::CudaToolkitRootDir,
    Var::CudaToolkitRoot,
];

/// Problem codes that mean nvcc itself cannot be used.
const NVCC_UNUSABLE: [&str; 4] = [
    "nvcc-not-executable",
    "nvcc-timeout",
    "nvcc-failed",
    "nvcc-bad-version",
];

/// Finds every toolkit and chooses one. Errors only when an explicit setting
/// (an explicit root, `NVCC`, or the first set of `CUDA_HOME`…`CUDAToolkit_ROOT`)
/// is broken; everything else wrong is a [`Problem`] on a candidate.
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
/// let tk = cuda_core::toolkit::find(&cuda_core::env::Env::from_process())?;
/// println!("nvcc {} at {}", tk.version.unwrap(), tk.nvcc.display());
/// # Ok::<(), cuda_core::Error>(())
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
    // Each variable that named a usable toolkit: (name, resolved nvcc, root).
    let mut named: Vec<(&'static str, PathBuf, PathBuf)> = Vec::new();

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
                named.push(("NVCC", c.key.clone(), c.tk.root.clone()));
                s.push(c);
                explicit_used = true;
            }
            Err(e) if explicit_used => conflicts.push(ignored_setting(&what, e)),
            Err(e) => return Err(e),
        }
    }
    for var in ROOT_VARS {
        let Some(value) = env.get_os(var) else {
            continue;
        };
        let what = Setting::Var(var);
        match s.explicit_root_candidate(&what, value) {
            Ok(c) => {
                named.push((var.name(), c.key.clone(), c.tk.root.clone()));
                s.push(c);
                explicit_used = true;
            }
            Err(e) if explicit_used => conflicts.push(ignored_setting(&what, e)),
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
            sites.extend(site_packages_of(Path::new(prefix)));
        }
    }
    s.looked
        .push("VIRTUAL_ENV / CONDA_PREFIX site-packages".into());
    for site in &sites {
        s.search_site(site);
    }
    if all || s.cands.is_empty() {
        for site in python_sites(env) {
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

    conflicts.extend(variable_conflicts(&named));
    let (selected, reason) = choose(&s.cands, opts.requirement.as_ref(), &s.looked);
    if let (Some(i), Some((shown, key))) = (selected, &s.path_first) {
        let sel = &s.cands[i];
        if &sel.key != key {
            conflicts.push(Problem {
                code: "nvcc-path-mismatch",
                severity: Severity::Warning,
                message: format!(
                    "`nvcc` on PATH is `{}`, not the selected toolkit's `{}`; nvcc run by hand (and tools that use PATH) compile with another toolkit",
                    shown.display(),
                    sel.tk.nvcc.display()
                ),
                fix: Some(format!(
                    "put `{}` first on PATH (`cargo cuda env --shell` prints the line)",
                    sel.tk.nvcc.parent().unwrap_or(Path::new("")).display()
                )),
            });
        }
    }
    Ok(Discovery {
        candidates: s.cands.into_iter().map(|c| c.tk).collect(),
        selected,
        reason,
        conflicts,
    })
}

/// A lower-precedence explicit setting that is broken but not used.
fn ignored_setting(what: &Setting, e: Error) -> Problem {
    Problem {
        code: e.code,
        severity: Severity::Warning,
        message: format!(
            "{} (ignored: a higher-precedence setting is used)",
            e.message
        ),
        fix: e
            .help
            .first()
            .cloned()
            .or(Some(format!("unset {}", what.name()))),
    }
}

/// Which explicit setting a candidate came from, for messages.
enum Setting {
    Explicit,
    Var(Var),
}

impl Setting {
    fn name(&self) -> String {
        match self {
            Setting::Explicit => "the explicit toolkit root".into(),
            Setting::Var(v) => v.name().into(),
        }
    }
    fn found_via(&self) -> FoundVia {
        match self {
            Setting::Explicit => FoundVia::Explicit,
            Setting::Var(v) => FoundVia::EnvVar(v.name().into()),
        }
    }
    fn fix_hint(&self) -> String {
        match self {
            Setting::Explicit => "pass the toolkit's root directory (the one holding bin/nvcc)".into(),
            Setting::Var(v) => format!(
                "set {0} to the toolkit's root directory (the one holding bin/nvcc), e.g. `export {0}=/usr/local/cuda-13.0`, or unset it",
                v.name()
            ),
        }
    }
}

fn quoted(value: &OsStr) -> String {
    format!("`{}`", value.to_string_lossy())
}

impl Search<'_> {
    fn push(&mut self, c: Candidate) {
        if self.seen.insert(c.key.clone()) {
            self.cands.push(c);
        }
    }

    /// Validates a root given explicitly; every way it can be wrong is an error.
    fn explicit_root_candidate(
        &mut self,
        what: &Setting,
        value: &OsStr,
    ) -> Result<Candidate, Error> {
        let name = what.name();
        let bad = |msg: String| Error::new("cuda-home-invalid", msg).with_help(what.fix_hint());
        if value.to_string_lossy().trim().is_empty() {
            return Err(bad(format!(
                "{name} is set to an empty string; expected the CUDA toolkit's root directory"
            ))
            .with_help(format!(
                "an empty {name} is not the same as an unset one: `unset {name}`"
            )));
        }
        let root = PathBuf::from(value);
        if root.is_relative() {
            return Err(bad(format!(
                "{name} is the relative path {}; expected an absolute path (build scripts run in another directory)",
                quoted(value)
            )));
        }
        match std::fs::symlink_metadata(&root) {
            Err(_) => {
                return Err(bad(format!(
                    "{name} is set to {}, which does not exist",
                    quoted(value)
                )))
            }
            Ok(m) if m.file_type().is_symlink() && !root.exists() => {
                let target = std::fs::read_link(&root).unwrap_or_default();
                return Err(bad(format!(
                    "{name} is set to {}, a symlink to `{}`, which does not exist",
                    quoted(value),
                    target.display()
                )));
            }
            Ok(_) if root.is_file() => {
                let mut e = bad(format!(
                    "{name} is set to {}, which is a file; expected the toolkit's root directory",
                    quoted(value)
                ));
                if root.file_name() == Some(OsStr::new("nvcc")) {
                    e = e.with_help(format!("to name nvcc itself, use NVCC={}", root.display()));
                    if let Some(top) = root.parent().and_then(Path::parent) {
                        e = e.with_help(format!("or set {name}={}", top.display()));
                    }
                }
                return Err(e);
            }
            Ok(_) => {}
        }
        let nvcc = windows::nvcc_under(&root);
        if !nvcc.is_file() {
            let mut e = bad(format!(
                "{name} is set to {}, which has no bin/nvcc",
                quoted(value)
            ));
            if root.join("nvcc").is_file() {
                if let Some(parent) = root.parent() {
                    e = e.with_help(format!(
                        "it looks like the bin directory: set {name}={}",
                        parent.display()
                    ));
                }
            }
            for sub in wheel_dirs(&root.join("nvidia")) {
                e = e.with_help(format!(
                    "it looks like a Python site-packages: set {name}={}",
                    sub.display()
                ));
            }
            return Err(e);
        }
        let c = self.candidate(&nvcc, what.found_via(), Extras::default(), true);
        check_usable(&c, &name)?;
        Ok(c)
    }

    /// NVCC: a path to nvcc, or a bare name looked up on PATH.
    fn nvcc_var_candidate(&mut self, value: &OsStr) -> Result<Candidate, Error> {
        let text = value.to_string_lossy();
        let bad = |msg: String| {
            Error::new("cuda-home-invalid", msg).with_help(
                "set NVCC to the nvcc executable (e.g. `export NVCC=/usr/local/cuda-13.0/bin/nvcc`), or unset it",
            )
        };
        if text.trim().is_empty() {
            return Err(
                bad("NVCC is set to an empty string; expected the path of nvcc".into())
                    .with_help("an empty NVCC is not the same as an unset one: `unset NVCC`"),
            );
        }
        let path = PathBuf::from(value);
        let nvcc = if path.components().count() == 1 && path.is_relative() {
            match self.which(value) {
                Some(p) => p,
                None => {
                    return Err(bad(format!(
                        "NVCC is set to {}, which is not on PATH",
                        quoted(value)
                    )))
                }
            }
        } else if path.is_relative() {
            return Err(bad(format!(
                "NVCC is the relative path {}; expected an absolute path (build scripts run in another directory)",
                quoted(value)
            )));
        } else {
            path
        };
        if !nvcc.exists() {
            let mut e = bad(format!(
                "NVCC is set to {}, which does not exist",
                quoted(value)
            ));
            if text.contains(char::is_whitespace) {
                e = e.with_help("NVCC is one path, not a command line; to run nvcc under a compiler cache set CUDA_BUILD_WRAPPER=sccache");
            }
            return Err(e);
        }
        if nvcc.is_dir() {
            return Err(bad(format!(
                "NVCC is set to {}, which is a directory; expected the nvcc executable",
                quoted(value)
            ))
            .with_help(format!(
                "to name the toolkit root, use CUDA_HOME={}",
                nvcc.display()
            )));
        }
        let c = self.candidate(
            &nvcc,
            FoundVia::EnvVar("NVCC".into()),
            Extras::default(),
            true,
        );
        check_usable(&c, "NVCC")?;
        Ok(c)
    }

    fn which(&self, name: &OsStr) -> Option<PathBuf> {
        self.env.which(&name.to_string_lossy())
    }

    /// Toolkits from `cargo cuda toolkit install` (checked ones only: an
    /// `--unchecked` set is a deliberate test fixture, not a toolchain).
    fn search_store(&mut self) {
        let Some(store) = super::store::root(self.env) else {
            return;
        };
        self.looked
            .push(super::store::toolkits_dir(&store).display().to_string());
        for inst in super::store::installed(&store) {
            let Some(home) = inst.cuda_home.filter(|_| inst.record.checked) else {
                continue;
            };
            let c = self.candidate(
                &home.join("bin").join("nvcc"),
                FoundVia::Installed(store.clone()),
                Extras::default(),
                false,
            );
            self.push(c);
        }
    }

    fn search_path(&mut self) {
        self.looked.push("nvcc on PATH".into());
        let Some(path) = self.env.get_os(Var::Path).map(|p| p.to_os_string()) else {
            return;
        };
        for dir in std::env::split_paths(&path) {
            if !dir.is_absolute() {
                continue;
            }
            let Some(nvcc) = windows::exe_in(&dir, "nvcc") else {
                continue;
            };
            let real = std::fs::canonicalize(&nvcc).unwrap_or_else(|_| nvcc.clone());
            // ccache/sccache symlinks named nvcc run the *next* nvcc on PATH.
            let real_name = real
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if !real_name.starts_with("nvcc") {
                continue;
            }
            let mut c =
                self.candidate(&nvcc, FoundVia::Path(dir.clone()), Extras::default(), false);
            if self.path_first.is_none() {
                self.path_first = Some((nvcc.clone(), c.key.clone()));
            }
            let link_dir_has_profile = dir.join("nvcc.profile").is_file();
            if real != nvcc && !link_dir_has_profile && c.tk.nvcc == real {
                c.tk.problems.push(Problem {
                    code: "nvcc-symlink",
                    severity: Severity::Warning,
                    message: format!(
                        "`{}` is a symlink to `{}`; nvcc reads nvcc.profile from the directory it is started from, so run by this name it finds no headers (cuda-build runs the real file)",
                        nvcc.display(),
                        real.display()
                    ),
                    fix: Some(format!(
                        "put `{}` on PATH instead of the symlink",
                        real.parent().unwrap_or(Path::new("")).display()
                    )),
                });
            }
            self.push(c);
        }
    }

    fn search_fixed(&mut self) {
        let env = self.env;
        // /usr/local/cuda: usually a symlink (update-alternatives) to one versioned install.
        let usr_local = env.sys_path("/usr/local/cuda");
        self.looked.push(usr_local.display().to_string());
        if let Ok(meta) = std::fs::symlink_metadata(&usr_local) {
            if meta.file_type().is_symlink() && !usr_local.exists() {
                let target = std::fs::read_link(&usr_local).unwrap_or_default();
                let nvcc = usr_local.join("bin").join("nvcc");
                self.push(Candidate {
                    key: nvcc.clone(),
                    explicit: false,
                    tk: Toolkit {
                        root: usr_local.clone(),
                        nvcc,
                        version: None,
                        found_via: FoundVia::UsrLocalCuda(target.clone()),
                        include_dirs: Vec::new(),
                        lib_dirs: Vec::new(),
                        problems: vec![Problem {
                            code: "toolkit-broken-link",
                            severity: Severity::Error,
                            message: format!(
                                "`{}` is a symlink to `{}`, which does not exist (a toolkit was removed without its link)",
                                usr_local.display(),
                                target.display()
                            ),
                            fix: Some(format!(
                                "point it at an installed toolkit (`sudo ln -sfn /usr/local/cuda-X.Y {}`), or remove it",
                                usr_local.display()
                            )),
                        }],
                    },
                });
            } else {
                let nvcc = usr_local.join("bin").join("nvcc");
                if nvcc.is_file() {
                    let target = std::fs::canonicalize(&usr_local).unwrap_or(usr_local.clone());
                    let c = self.candidate(
                        &nvcc,
                        FoundVia::UsrLocalCuda(target),
                        Extras::default(),
                        false,
                    );
                    self.push(c);
                }
            }
        }
        // Versioned installs, newest first.
        let local = env.sys_path("/usr/local");
        self.looked
            .push(local.join("cuda-X.Y").display().to_string());
        let mut versioned: Vec<(semver::Version, PathBuf)> = std::fs::read_dir(&local)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let v = version::parse_loose(name.strip_prefix("cuda-")?)?;
                Some((v, e.path()))
            })
            .collect();
        versioned.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for (_, root) in versioned {
            let nvcc = root.join("bin").join("nvcc");
            if nvcc.is_file() {
                let c = self.candidate(&nvcc, FoundVia::Versioned, Extras::default(), false);
                self.push(c);
            }
        }
        let opt = env.sys_path("/opt/cuda");
        self.looked.push(opt.display().to_string());
        let nvcc = opt.join("bin").join("nvcc");
        if nvcc.is_file() {
            let c = self.candidate(&nvcc, FoundVia::OptCuda, Extras::default(), false);
            self.push(c);
        }
        // Debian/Ubuntu: nvcc and cicc under /usr/lib/nvidia-cuda-toolkit, the rest in /usr.
        let distro = env.sys_path("/usr/lib/nvidia-cuda-toolkit");
        self.looked.push(distro.display().to_string());
        let nvcc = distro.join("bin").join("nvcc");
        if nvcc.is_file() {
            let extras = Extras {
                include_dirs: vec![env.sys_path("/usr/include")],
                lib_dirs: vec![env.sys_path("/usr/lib/x86_64-linux-gnu")],
                tool_dirs: vec![distro.join("bin"), env.sys_path("/usr/bin")],
            };
            let c = self.candidate(&nvcc, FoundVia::Distro, extras, false);
            self.push(c);
        }
    }

    /// Wheels in one site-packages directory.
    fn search_site(&mut self, site: &Path) {
        let nvidia = site.join("nvidia");
        for dir in wheel_dirs(&nvidia) {
            let nvcc = windows::nvcc_under(&dir);
            let c = self.candidate(
                &nvcc,
                FoundVia::PythonWheel(site.to_path_buf()),
                Extras::default(),
                false,
            );
            self.push(c);
        }
        // The split layout (CUDA 11/12 wheels): one directory per component.
        let split = nvidia.join("cuda_nvcc");
        let nvcc = split.join("bin").join("nvcc");
        if nvcc.is_file() {
            let extras = Extras {
                include_dirs: ["cuda_nvcc", "cuda_runtime", "cuda_cccl", "cuda_crt"]
                    .iter()
                    .map(|c| nvidia.join(c).join("include"))
                    .collect(),
                lib_dirs: vec![nvidia.join("cuda_runtime").join("lib")],
                tool_dirs: vec![split.join("bin"), split.join("nvvm").join("bin")],
            };
            let c = self.candidate(
                &nvcc,
                FoundVia::PythonWheel(site.to_path_buf()),
                extras,
                false,
            );
            self.push(c);
        }
    }

    fn search_conda(&mut self, prefix: &Path) {
        let targets = prefix.join("targets").join("x86_64-linux");
        let extras = Extras {
            include_dirs: vec![targets.join("include"), prefix.join("include")],
            lib_dirs: vec![targets.join("lib"), prefix.join("lib")],
            tool_dirs: vec![prefix.join("nvvm").join("bin")],
        };
        let found = [
            prefix.join("bin").join("nvcc"),
            targets.join("bin").join("nvcc"),
        ]
        .into_iter()
        .find(|p| p.is_file());
        if let Some(nvcc) = found {
            let c = self.candidate(&nvcc, FoundVia::Conda(prefix.to_path_buf()), extras, false);
            self.push(c);
        } else if let Some((nvcc, include_dirs, lib_dirs)) = windows::conda_library(prefix) {
            let extras = Extras {
                include_dirs,
                lib_dirs,
                tool_dirs: vec![prefix.join("Library").join("nvvm").join("bin")],
            };
            let c = self.candidate(&nvcc, FoundVia::Conda(prefix.to_path_buf()), extras, false);
            self.push(c);
        }
    }

    /// Builds a candidate from an nvcc path: layout, version, integrity.
    fn candidate(
        &self,
        nvcc: &Path,
        found_via: FoundVia,
        extras: Extras,
        explicit: bool,
    ) -> Candidate {
        let env = self.env;
        let real = std::fs::canonicalize(nvcc).unwrap_or_else(|_| nvcc.to_path_buf());
        let real_dir = real.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut problems = Vec::new();

        // Version first: a wrapper script is only asked for a dry run if nvcc works at all.
        let nvcc_out = if crate::fsutil::is_executable(&real) {
            Some(version::cached_output(env, &real, &["--version"]))
        } else {
            problems.push(Problem {
                code: "nvcc-not-executable",
                severity: Severity::Error,
                message: format!("`{}` is not executable", real.display()),
                fix: Some(crate::fsutil::not_executable_fix(&real, "nvcc")),
            });
            None
        };
        let mut nvcc_version = None;
        match &nvcc_out {
            Some(Ok(text)) => match version::parse_tool_version(text) {
                Some(v) => nvcc_version = Some(v),
                None => problems.push(Problem {
                    code: "nvcc-bad-version",
                    severity: Severity::Error,
                    message: format!(
                        "`{} --version` printed no `Cuda compilation tools, release X.Y, VX.Y.Z` line: {}",
                        real.display(),
                        first_line(text)
                    ),
                    fix: Some("this is not a working nvcc: reinstall the toolkit, or point NVCC/CUDA_HOME at another one".into()),
                }),
            },
            Some(Err(e)) => problems.push(run_problem(&real, e)),
            None => {}
        }

        // Layout: nvcc.profile next to the real nvcc, else a dry run (wrapper scripts).
        let shown_nvcc = real.clone();
        let mut key = real.clone();
        let profile = match layout::read_profile(&real_dir) {
            Some(p) => Some(p),
            None if nvcc_version.is_some() && version::is_script(&real) => {
                let dry = version::cached_output(
                    env,
                    &real,
                    &[
                        "-v",
                        "--dryrun",
                        "-c",
                        "cuda_build_probe.cu",
                        "-o",
                        "cuda_build_probe.o",
                    ],
                )
                .ok()
                .and_then(|t| layout::parse_dryrun(&t));
                // The wrapper stays the nvcc we run; the real binary is its identity.
                if let Some(here) = dry.as_ref().and_then(|p| p.here.clone()) {
                    key = std::fs::canonicalize(here.join("nvcc")).unwrap_or(key);
                }
                dry
            }
            None => None,
        };
        let profile = profile.unwrap_or_else(|| {
            if nvcc_version.is_some() {
                problems.push(Problem {
                    code: "toolkit-incomplete",
                    severity: Severity::Warning,
                    message: format!(
                        "no nvcc.profile next to `{}`; assuming the toolkit root is `{}`",
                        real.display(),
                        real_dir.parent().unwrap_or(Path::new("")).display()
                    ),
                    fix: Some(
                        "reinstall the toolkit: nvcc needs bin/nvcc.profile to find its headers"
                            .into(),
                    ),
                });
            }
            Profile::default()
        });
        let root = profile
            .top
            .clone()
            .or_else(|| real_dir.parent().map(Path::to_path_buf))
            .unwrap_or_default();

        // Version files, cross-checked against nvcc.
        let mut file_version = None;
        let mut version_json = None;
        let json_path = root.join("version.json");
        if let Ok(text) = std::fs::read_to_string(&json_path) {
            match version::parse_version_json(&text) {
                Ok(j) => {
                    if let (Some(n), Some(jn)) = (&nvcc_version, &j.nvcc) {
                        if n != jn {
                            problems.push(mismatch(&json_path, "cuda_nvcc", jn, n));
                        }
                    } else if let (Some(n), Some(jc)) = (&nvcc_version, &j.cuda) {
                        if (n.major, n.minor) != (jc.major, jc.minor) {
                            problems.push(mismatch(&json_path, "cuda", jc, n));
                        }
                    }
                    file_version = j.nvcc.clone().or(j.cuda.clone());
                    version_json = Some(j);
                }
                Err(why) => problems.push(Problem {
                    code: "toolkit-version-json",
                    severity: if nvcc_version.is_some() { Severity::Warning } else { Severity::Error },
                    message: format!("`{}` is malformed: {why}", json_path.display()),
                    fix: Some(format!(
                        "restore it from the toolkit installer or delete it (nvcc --version is used instead): `{}`",
                        json_path.display()
                    )),
                }),
            }
        } else if let Ok(text) = std::fs::read_to_string(root.join("version.txt")) {
            file_version = version::parse_version_txt(&text);
            if let (Some(n), Some(t)) = (&nvcc_version, &file_version) {
                if (n.major, n.minor) != (t.major, t.minor) {
                    problems.push(mismatch(&root.join("version.txt"), "CUDA Version", t, n));
                }
            }
        }

        let mut include_dirs = Vec::new();
        for d in profile.include_dirs.iter().chain(&extras.include_dirs) {
            if d.is_dir() && !include_dirs.contains(d) {
                include_dirs.push(d.clone());
            }
        }
        if profile.include_dirs.is_empty() && extras.include_dirs.is_empty() {
            let d = root.join("include");
            if d.is_dir() {
                include_dirs.push(d);
            }
        }
        let mut lib_dirs = Vec::new();
        let target = layout::target_dir(&root);
        let guesses = [
            root.join("lib64"),
            root.join("lib"),
            root.join(&target).join("lib"),
        ];
        for d in profile
            .lib_dirs
            .iter()
            .chain(&extras.lib_dirs)
            .chain(guesses.iter())
        {
            let has_cudart = std::fs::read_dir(d)
                .map(|it| {
                    it.flatten()
                        .any(|e| e.file_name().to_string_lossy().starts_with("libcudart"))
                })
                .unwrap_or(false);
            if has_cudart && !d.ends_with("stubs") && !lib_dirs.contains(d) {
                lib_dirs.push(d.clone());
            }
        }

        let mut tk = Toolkit {
            root: root.clone(),
            nvcc: shown_nvcc,
            version: nvcc_version.or(file_version),
            found_via,
            include_dirs,
            lib_dirs,
            problems,
        };
        // Tools and release checks only make sense for an nvcc that runs.
        if !tk.problems.iter().any(|p| NVCC_UNUSABLE.contains(&p.code)) {
            let mut tool_dirs = profile.path_dirs.clone();
            tool_dirs.extend(profile.cicc_dir.clone());
            tool_dirs.extend(extras.tool_dirs);
            let (site, wheel_dir) = wheel_site(&root);
            let places = Places {
                tool_dirs,
                site,
                wheel_dir,
                version_json,
            };
            let found = integrity::check(env, &tk, &places);
            tk.problems.extend(found);
        }
        Candidate { tk, key, explicit }
    }
}

fn mismatch(file: &Path, field: &str, said: &semver::Version, nvcc: &semver::Version) -> Problem {
    Problem {
        code: "toolkit-version-mismatch",
        severity: Severity::Warning,
        message: format!(
            "`{}` says {field} {said}, but nvcc says {nvcc}: files from two installs are mixed in one directory",
            file.display()
        ),
        fix: Some("reinstall the toolkit into a clean directory".into()),
    }
}

fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(nothing)");
    let mut s: String = line.chars().take(120).collect();
    if line.chars().count() > 120 {
        s.push('…');
    }
    format!("`{s}`")
}

fn run_problem(nvcc: &Path, e: &ToolRunError) -> Problem {
    match e {
        ToolRunError::Run(RunError::TimedOut { after, .. }) => Problem {
            code: "nvcc-timeout",
            severity: Severity::Error,
            message: format!(
                "`{} --version` did not answer within {:.1} s and was killed",
                nvcc.display(),
                after.as_secs_f64()
            ),
            fix: Some("this nvcc hangs (a wrapper waiting on input or a license/network check?): fix or replace it, or raise CUDA_BUILD_TIMEOUT (seconds)".into()),
        },
        ToolRunError::Run(RunError::PermissionDenied(_)) => Problem {
            code: "nvcc-not-executable",
            severity: Severity::Error,
            message: format!("`{}` is not executable (permission denied)", nvcc.display()),
            fix: Some(crate::fsutil::not_executable_fix(nvcc, "nvcc")),
        },
        ToolRunError::Run(other) => Problem {
            code: "nvcc-failed",
            severity: Severity::Error,
            message: format!("`{} --version` could not run: {other}", nvcc.display()),
            fix: Some("reinstall the toolkit (the nvcc binary is damaged or for another platform)".into()),
        },
        ToolRunError::Failed { status, output } => Problem {
            code: "nvcc-failed",
            severity: Severity::Error,
            message: format!(
                "`{} --version` failed ({status}): {}",
                nvcc.display(),
                first_line(output)
            ),
            fix: Some("reinstall the toolkit, or point NVCC/CUDA_HOME at a working one".into()),
        },
    }
}

/// An explicit setting whose nvcc does not run is an error, not a candidate.
fn check_usable(c: &Candidate, setting: &str) -> Result<(), Error> {
    if let Some(p) =
        c.tk.problems
            .iter()
            .find(|p| NVCC_UNUSABLE.contains(&p.code))
    {
        let mut e = Error::new(p.code, format!("{setting}: {}", p.message));
        if let Some(fix) = &p.fix {
            e = e.with_help(fix.clone());
        }
        return Err(e.with_help(format!(
            "or unset {setting} to let cuda-build search for a toolkit"
        )));
    }
    Ok(())
}

/// Wheel toolkit dirs with a bin/nvcc: `nvidia/cu13`, `nvidia/cu12`…, newest first.
fn wheel_dirs(nvidia: &Path) -> Vec<PathBuf> {
    let mut out: Vec<(u32, PathBuf)> = std::fs::read_dir(nvidia)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let n: u32 = name.strip_prefix("cu")?.parse().ok()?;
            windows::exe_in(&e.path().join("bin"), "nvcc").map(|_| (n, e.path()))
        })
        .collect();
    out.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
    out.into_iter().map(|(_, p)| p).collect()
}

/// For a root inside `site/nvidia/<dir>`, the site and `<dir>`.
fn wheel_site(root: &Path) -> (Option<PathBuf>, String) {
    let parent = root.parent();
    if parent.and_then(Path::file_name) == Some(OsStr::new("nvidia")) {
        let dir = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        (parent.and_then(Path::parent).map(Path::to_path_buf), dir)
    } else {
        (None, String::new())
    }
}

/// `lib/python3.*/site-packages` (and lib64, Windows' Lib) under a prefix.
fn site_packages_of(prefix: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for lib in ["lib", "lib64"] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(prefix.join(lib))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
            .map(|e| e.path().join("site-packages"))
            .filter(|p| p.is_dir())
            .collect();
        found.sort();
        for p in found {
            let canon = std::fs::canonicalize(&p).unwrap_or(p.clone());
            if !out
                .iter()
                .any(|o| std::fs::canonicalize(o).ok().as_ref() == Some(&canon))
            {
                out.push(p);
            }
        }
    }
    let win = prefix.join("Lib").join("site-packages");
    if win.is_dir() {
        out.push(win);
    }
    out
}

/// Asks the active python for its site-packages (a few ms of startup; only when needed).
fn python_sites(env: &Env) -> Vec<PathBuf> {
    let python = match env.get_nonempty(Var::CudaBuildPython) {
        Some(p) => PathBuf::from(p),
        None => match env.which("python3") {
            Some(p) => p,
            None => return Vec::new(),
        },
    };
    let code =
        "import site,sys\nfor p in site.getsitepackages()+[site.getusersitepackages()]: print(p)";
    let timeout = crate::process::timeout_from_env(env, std::time::Duration::from_secs(5));
    match crate::process::run(&python, ["-c", code], timeout) {
        Ok(out) if out.status.success() => out
            .stdout
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_dir())
            .collect(),
        _ => Vec::new(),
    }
}

/// NVCC, CUDA_HOME, CUDA_PATH… naming different toolkits (the first one wins).
fn variable_conflicts(named: &[(&'static str, PathBuf, PathBuf)]) -> Vec<Problem> {
    let Some((first, first_key, first_root)) = named.first() else {
        return Vec::new();
    };
    named[1..]
        .iter()
        .filter(|(_, key, _)| key != first_key)
        .map(|(other, _, other_root)| Problem {
            code: "toolkit-env-conflict",
            severity: Severity::Warning,
            message: format!(
                "{first} names the toolkit at `{}` but {other} names `{}`; {first} wins, but tools that read {other} use the other one",
                first_root.display(),
                other_root.display(),
            ),
            fix: Some(if *first == "NVCC" {
                format!("point {other} at `{}`, or unset {other}", first_root.display())
            } else {
                format!("make them agree (`export {other}=\"${first}\"`) or unset {other}")
            }),
        })
        .collect()
}

/// Picks a candidate; returns its index (or none) and why.
fn choose(
    cands: &[Candidate],
    req: Option<&semver::VersionReq>,
    looked: &[String],
) -> (Option<usize>, String) {
    let describe = |c: &Candidate| {
        format!(
            "{} ({}, found via {})",
            c.tk.root.display(),
            c.tk.version
                .as_ref()
                .map_or("unknown version".into(), |v| v.to_string()),
            via_name(&c.tk.found_via)
        )
    };
    if cands.is_empty() {
        return (
            None,
            format!(
                "no CUDA toolkit was found (looked at: {})",
                looked.join(", ")
            ),
        );
    }
    if let Some(i) = cands.iter().position(|c| c.explicit) {
        let c = &cands[i];
        let via = via_name(&c.tk.found_via);
        if let Some(req) = req {
            match &c.tk.version {
                Some(v) if req.matches(v) => {}
                other => {
                    return (
                        None,
                        format!(
                            "{via} names CUDA {}, which does not satisfy the project's requirement `{req}`",
                            other.as_ref().map_or("of unknown version".into(), |v| v.to_string())
                        ),
                    )
                }
            }
        }
        return (Some(i), format!("{via} is set (an explicit setting wins)"));
    }
    if let Some(req) = req {
        let best = cands
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                !c.tk.is_broken() && c.tk.version.as_ref().is_some_and(|v| req.matches(v))
            })
            // Newest wins; among equals, the earlier rule.
            .max_by(|(ia, a), (ib, b)| a.tk.version.cmp(&b.tk.version).then(ib.cmp(ia)));
        return match best {
            Some((i, c)) => (
                Some(i),
                format!(
                    "newest usable toolkit that satisfies the project's requirement `{req}`: {}",
                    describe(c)
                ),
            ),
            None => {
                let why: Vec<String> = cands
                    .iter()
                    .map(|c| {
                        let verdict = match &c.tk.version {
                            _ if c.tk.is_broken() => "broken".to_string(),
                            Some(v) if req.matches(v) => "matches".into(),
                            Some(_) => format!("does not match `{req}`"),
                            None => "version unknown".into(),
                        };
                        format!("{}: {verdict}", describe(c))
                    })
                    .collect();
                (
                    None,
                    format!(
                        "no installed toolkit satisfies the project's requirement `{req}`; found {}",
                        why.join("; ")
                    ),
                )
            }
        };
    }
    match cands.iter().position(|c| !c.tk.is_broken()) {
        Some(i) => {
            let skipped: Vec<String> = cands[..i].iter().map(describe).collect();
            let mut reason = format!(
                "first usable toolkit in precedence order (found via {})",
                via_name(&cands[i].tk.found_via)
            );
            if !skipped.is_empty() {
                reason.push_str(&format!("; skipped broken: {}", skipped.join(", ")));
            }
            (Some(i), reason)
        }
        None => (
            None,
            format!(
                "every toolkit found is broken: {}",
                cands.iter().map(describe).collect::<Vec<_>>().join(", ")
            ),
        ),
    }
}

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
