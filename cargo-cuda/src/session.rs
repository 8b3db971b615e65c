//! One run's view of the machine: the environment, the probe (run at most
//! once), toolkit discovery and the arch plan, shared by every command.

use std::cell::OnceCell;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cb::{self, ArchPlan, Discovery, Env, Error, ProbeReport, Toolkit};

/// Settings a command may override on the command line.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--toolkit DIR`.
    pub toolkit: Option<PathBuf>,
    /// `--arch ARCHS`.
    pub arch: Option<String>,
    /// `--manifest-path PATH`.
    pub manifest_path: Option<PathBuf>,
}

/// What `[package.metadata.cuda]` of the relevant packages asks for.
#[derive(Debug, Clone, Default)]
pub struct ProjectWants {
    /// The toolkit requirement (all packages' requirements combined).
    pub requirement: Option<semver::VersionReq>,
    /// `arch`, when the packages agree on one.
    pub arch: Option<String>,
    /// `fallback_arch`, when the packages agree on one.
    pub fallback_arch: Option<String>,
    /// Packages whose `arch` settings differ (then no single arch is exported).
    pub arch_conflict: bool,
}

impl ProjectWants {
    /// Reads and combines the metadata of the packages in `manifest_dirs`.
    pub fn read(manifest_dirs: &[PathBuf]) -> Result<ProjectWants, Error> {
        let mut wants = ProjectWants::default();
        let mut comparators = Vec::new();
        let mut archs: Vec<String> = Vec::new();
        let mut fallbacks: Vec<String> = Vec::new();
        for dir in manifest_dirs {
            let m = cb::read_metadata(dir)?;
            if let Some(req) = m.toolkit {
                comparators.extend(req.comparators);
            }
            archs.extend(m.arch);
            fallbacks.extend(m.fallback_arch);
        }
        if !comparators.is_empty() {
            wants.requirement = Some(semver::VersionReq { comparators });
        }
        archs.sort();
        archs.dedup();
        fallbacks.sort();
        fallbacks.dedup();
        wants.arch_conflict = archs.len() > 1;
        if archs.len() == 1 {
            wants.arch = archs.pop();
        }
        if fallbacks.len() == 1 {
            wants.fallback_arch = fallbacks.pop();
        }
        Ok(wants)
    }

    /// The metadata of the package at `--manifest-path` or in the current directory, if any.
    pub fn for_current(manifest_path: Option<&Path>) -> Result<ProjectWants, Error> {
        let dir = match manifest_path {
            Some(p) => p.parent().map(Path::to_path_buf).unwrap_or_default(),
            None => PathBuf::from("."),
        };
        if dir.join("Cargo.toml").is_file() {
            ProjectWants::read(&[dir])
        } else {
            Ok(ProjectWants::default())
        }
    }
}

/// The workspace (when cargo could describe it) and what its CUDA packages ask for.
pub struct Project {
    /// `cargo metadata --no-deps`, when cargo ran and understood the manifest.
    pub workspace: Option<crate::workspace::Workspace>,
    /// The combined `[package.metadata.cuda]` of the packages that use CUDA
    /// (or of the package in the current directory when there is no workspace).
    pub wants: Result<ProjectWants, Error>,
}

/// The environment plus lazily computed, cached facts about the machine.
pub struct Session {
    /// The process environment.
    pub env: Env,
    probe: OnceCell<ProbeReport>,
}

impl Session {
    /// A session over the process environment.
    pub fn new(env: Env) -> Session {
        Session {
            env,
            probe: OnceCell::new(),
        }
    }

    /// Probe options: the driver probe runs in a child (`cargo-cuda __probe-driver`),
    /// so a crashing or hanging libcuda cannot take us down.
    pub fn probe_options(&self) -> cb::ProbeOptions {
        cb::ProbeOptions {
            timeout: cuda_build::process::timeout_from_env(&self.env, Duration::from_secs(10)),
            child_exe: std::env::current_exe().ok(),
            ..Default::default()
        }
    }

    /// The driver, GPUs and platform (probed once).
    pub fn probe(&self) -> &ProbeReport {
        self.probe
            .get_or_init(|| cb::probe(&self.env, &self.probe_options()))
    }

    /// The workspace and its CUDA settings. Best effort: outside a cargo
    /// project, or without cargo, the workspace is `None`.
    pub fn project(&self, manifest_path: Option<&Path>) -> Project {
        let workspace = crate::workspace::find_cargo(&self.env)
            .ok()
            .and_then(|cargo| crate::workspace::load(&self.env, &cargo, manifest_path).ok());
        let wants = match &workspace {
            Some(w) => {
                let dirs: Vec<PathBuf> = w
                    .cuda_packages
                    .iter()
                    .filter_map(|p| p.manifest_path.parent().map(Path::to_path_buf))
                    .collect();
                ProjectWants::read(&dirs)
            }
            None => ProjectWants::for_current(manifest_path),
        };
        Project { workspace, wants }
    }

    /// Toolkit discovery with the command-line and project settings.
    pub fn discover(&self, o: &Overrides, wants: &ProjectWants) -> Result<Discovery, Error> {
        if let Some(root) = &o.toolkit {
            check_toolkit_flag(root)?;
        }
        let opts = cb::DiscoverOptions {
            requirement: wants.requirement.clone(),
            explicit_root: o.toolkit.clone(),
        };
        cb::discover(&self.env, &opts)
    }

    /// The arch plan for `toolkit`; detection (when needed) uses the cached probe.
    pub fn plan(
        &self,
        toolkit: &Toolkit,
        o: &Overrides,
        wants: &ProjectWants,
    ) -> Result<ArchPlan, Error> {
        // `--arch` reaches build scripts as CUDA_ARCHS, so plan it as exactly
        // that: the same precedence, and messages that name the flag.
        let env = match &o.arch {
            Some(arch) => self.env.clone().set(cuda_build::env::Var::CudaArchs, arch),
            None => self.env.clone(),
        };
        let inputs = cb::ArchInputs {
            explicit: None,
            metadata: wants.arch.clone(),
            fallback: wants.fallback_arch.clone(),
        };
        let detect = || self.probe().gpus.clone();
        let plan = cb::plan_for_toolkit(&env, toolkit, &inputs, &detect).map(|mut p| {
            if o.arch.is_some() {
                p.source = cb::ArchSource::Explicit; // shown as `--arch`
            }
            p
        });
        plan.map_err(|mut e| {
            if o.arch.is_some() {
                e.message = e
                    .message
                    .replace("(from CUDA_ARCHS)", "(from --arch, which sets CUDA_ARCHS)");
            }
            e
        })
    }
}

/// `--toolkit` must name an existing directory; say so in the flag's terms.
fn check_toolkit_flag(root: &Path) -> Result<(), Error> {
    if root.is_dir() {
        Ok(())
    } else {
        Err(Error::new(
            "toolkit-not-found",
            format!("--toolkit `{}` is not a directory", root.display()),
        )
        .with_help(
            "pass the toolkit root, the directory that holds bin/nvcc (e.g. /usr/local/cuda-13.0)",
        ))
    }
}

/// The plan as a `CUDA_ARCHS` value that reproduces it exactly:
/// SASS-only archs as `NN-real`, the PTX arch as `NN` (or `NN-virtual`).
///
/// ```text
/// sass [80, 90], ptx 90  ->  80-real;90
/// ```
pub fn plan_to_cuda_archs(plan: &ArchPlan) -> String {
    let mut items: Vec<String> = Vec::new();
    for a in &plan.sass {
        if plan.ptx.as_ref() == Some(a) {
            items.push(a.to_string());
        } else {
            items.push(format!("{a}-real"));
        }
    }
    if let Some(p) = &plan.ptx {
        if !plan.sass.contains(p) {
            items.push(format!("{p}-virtual"));
        }
    }
    items.join(";")
}

/// candle-style `CUDA_COMPUTE_CAP`: the single highest compute capability, as a number (`90`).
pub fn compute_cap(plan: &ArchPlan) -> Option<u32> {
    plan.sass
        .iter()
        .chain(plan.ptx.iter())
        .map(|a| a.cc.number())
        .max()
}

/// CUDA versions cudarc 0.19 has bindings for (its build.rs list); it
/// panics on any other `CUDARC_CUDA_VERSION`, so we only set one of these.
const CUDARC_VERSIONS: &[(u64, u64)] = &[
    (11, 4),
    (11, 5),
    (11, 6),
    (11, 7),
    (11, 8),
    (12, 0),
    (12, 1),
    (12, 2),
    (12, 3),
    (12, 4),
    (12, 5),
    (12, 6),
    (12, 8),
    (12, 9),
    (13, 0),
    (13, 1),
    (13, 2),
    (13, 3),
    (13, 4),
];

/// `CUDARC_CUDA_VERSION` for a toolkit version (`13.0.88` → `13000`), when cudarc supports it.
pub fn cudarc_version(v: &semver::Version) -> Option<String> {
    CUDARC_VERSIONS
        .contains(&(v.major, v.minor))
        .then(|| format!("{}0{}0", v.major, v.minor))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuda_build::arch::Arch;
    use cuda_build::plan::ArchSource;

    fn plan(sass: &[u32], ptx: Option<u32>) -> ArchPlan {
        let a = |n: u32| Arch::new(n / 10, n % 10);
        ArchPlan {
            sass: sass.iter().map(|&n| a(n)).collect(),
            ptx: ptx.map(a),
            source: ArchSource::Explicit,
            warnings: vec![],
        }
    }

    #[test]
    fn cuda_archs_reproduces_the_plan() {
        assert_eq!(plan_to_cuda_archs(&plan(&[80, 90], Some(90))), "80-real;90");
        assert_eq!(
            plan_to_cuda_archs(&plan(&[75], Some(86))),
            "75-real;86-virtual"
        );
        assert_eq!(plan_to_cuda_archs(&plan(&[86], None)), "86-real");
        let reparsed = cuda_build::arch::parse_arch_list("80-real;90").unwrap();
        assert_eq!(reparsed.to_string(), "80-real;90");
    }

    #[test]
    fn compute_cap_is_the_highest() {
        assert_eq!(compute_cap(&plan(&[80, 90], Some(90))), Some(90));
        assert_eq!(compute_cap(&plan(&[75], Some(86))), Some(86));
        assert_eq!(compute_cap(&plan(&[], None)), None);
    }

    #[test]
    fn cudarc_version_only_for_supported_releases() {
        let v = |s: &str| semver::Version::parse(s).unwrap();
        assert_eq!(cudarc_version(&v("13.0.88")).as_deref(), Some("13000"));
        assert_eq!(cudarc_version(&v("12.9.86")).as_deref(), Some("12090"));
        assert_eq!(cudarc_version(&v("11.8.89")).as_deref(), Some("11080"));
        assert_eq!(
            cudarc_version(&v("12.7.0")),
            None,
            "cudarc has no 12.7 bindings"
        );
        assert_eq!(cudarc_version(&v("11.2.0")), None);
        assert_eq!(cudarc_version(&v("13.5.0")), None);
    }
}
