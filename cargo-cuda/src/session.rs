//! One run's view of the machine: the environment, the probe (run at most
//! once), toolkit discovery and the arch plan, shared by every command.

use std::cell::OnceCell;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cuda_toolchain::env::Env;
use cuda_toolchain::plan::ArchPlan;
use cuda_toolchain::probe::ProbeReport;
use cuda_toolchain::toolkit::Discovery;
use cuda_toolchain::toolkit::Toolkit;
use cuda_toolchain::Error;

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
    /// Unknown keys and other things to warn about.
    pub warnings: Vec<String>,
}

impl ProjectWants {
    /// Reads and combines the metadata of the packages in `manifest_dirs`.
    pub fn read(manifest_dirs: &[PathBuf]) -> Result<ProjectWants, Error> {
        let mut wants = ProjectWants::default();
        let mut comparators = Vec::new();
        let mut archs: Vec<String> = Vec::new();
        let mut fallbacks: Vec<String> = Vec::new();
        for dir in manifest_dirs {
            let m = cuda_toolchain::metadata::read(dir)?;
            if let Some(req) = m.toolkit {
                comparators.extend(req.comparators);
            }
            archs.extend(m.arch);
            fallbacks.extend(m.fallback_arch);
            wants.warnings.extend(m.warnings);
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
    pub fn probe_options(&self) -> cuda_toolchain::probe::ProbeOptions {
        cuda_toolchain::probe::ProbeOptions {
            timeout: cuda_toolchain::process::timeout_from_env(&self.env, Duration::from_secs(10)),
            child_exe: std::env::current_exe().ok(),
            ..Default::default()
        }
    }

    /// The driver, GPUs and platform (probed once).
    pub fn probe(&self) -> &ProbeReport {
        self.probe
            .get_or_init(|| cuda_toolchain::probe::probe(&self.env, &self.probe_options()))
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
        let opts = cuda_toolchain::toolkit::DiscoverOptions {
            requirement: wants.requirement.clone(),
            explicit_root: o.toolkit.clone(),
        };
        cuda_toolchain::toolkit::discover(&self.env, &opts)
    }

    /// The `CARGO_CUDA_PLAN` value for `plan`, made by [`Session::plan`] with
    /// these settings: what a build script of a package with the same
    /// settings would plan, so it can skip planning.
    pub fn handed_plan(
        &self,
        toolkit: &Toolkit,
        o: &Overrides,
        wants: &ProjectWants,
        plan: &ArchPlan,
    ) -> String {
        let mut plan = plan.clone();
        if o.arch.is_some() {
            // `--arch` is CUDA_ARCHS to the build script.
            plan.source = cuda_toolchain::plan::ArchSource::CudaArchs;
        }
        cuda_toolchain::plan::HandedPlan::new(
            &self.plan_env(o),
            toolkit,
            &Self::arch_inputs(wants),
            &plan,
        )
        .encode()
    }

    /// The environment a build script plans in: `--arch` is its CUDA_ARCHS,
    /// and a plan handed to us is not ours to reuse.
    fn plan_env(&self, o: &Overrides) -> Env {
        let env = self
            .env
            .clone()
            .unset(cuda_toolchain::env::Var::CargoCudaPlan);
        match &o.arch {
            Some(arch) => env.set(cuda_toolchain::env::Var::CudaArchs, arch),
            None => env,
        }
    }

    fn arch_inputs(wants: &ProjectWants) -> cuda_toolchain::plan::ArchInputs {
        cuda_toolchain::plan::ArchInputs {
            explicit: None,
            metadata: wants.arch.clone(),
            fallback: wants.fallback_arch.clone(),
        }
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
        let env = self.plan_env(o);
        let inputs = Self::arch_inputs(wants);
        let detect = || self.probe().gpus.clone();
        let plan =
            cuda_toolchain::plan::plan_for_toolkit(&env, toolkit, &inputs, &detect).map(|mut p| {
                if o.arch.is_some() {
                    p.source = cuda_toolchain::plan::ArchSource::Explicit; // shown as `--arch`
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

/// Where arch targets came from, in words.
pub fn arch_source_name(s: &cuda_toolchain::plan::ArchSource) -> &'static str {
    match s {
        cuda_toolchain::plan::ArchSource::Explicit => "--arch",
        cuda_toolchain::plan::ArchSource::CudaArchs => "CUDA_ARCHS",
        cuda_toolchain::plan::ArchSource::CmakeCudaArchitectures => "CMAKE_CUDA_ARCHITECTURES",
        cuda_toolchain::plan::ArchSource::CmakeCudaArchs => "CUDAARCHS",
        cuda_toolchain::plan::ArchSource::TorchCudaArchList => "TORCH_CUDA_ARCH_LIST",
        cuda_toolchain::plan::ArchSource::CudaComputeCap => "CUDA_COMPUTE_CAP",
        cuda_toolchain::plan::ArchSource::CargoMetadata => "[package.metadata.cuda] arch",
        cuda_toolchain::plan::ArchSource::Detected => "detected GPUs",
        cuda_toolchain::plan::ArchSource::Fallback => "fallback arch",
    }
}

#[cfg(test)]
mod tests {
    use cuda_toolchain::arch::Arch;
    use cuda_toolchain::plan::{ArchPlan, ArchSource};

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
    fn arch_list_reproduces_the_plan() {
        assert_eq!(plan(&[80, 90], Some(90)).to_arch_list(), "80-real;90");
        assert_eq!(plan(&[75], Some(86)).to_arch_list(), "75-real;86-virtual");
        assert_eq!(plan(&[86], None).to_arch_list(), "86-real");
        let reparsed = cuda_toolchain::arch::parse_arch_list("80-real;90").unwrap();
        assert_eq!(reparsed.to_string(), "80-real;90");
    }
}
