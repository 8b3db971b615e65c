//! `cargo cuda toolkits`, `info` and `env`: what was found, shown to people
//! and to scripts.

use std::path::PathBuf;

use serde::Serialize;

use crate::session::{Overrides, ProjectWants, Session};
use crate::style::{Style, Tone};
use crate::toolchain;
use crate::workspace::{CudaPackage, Workspace};
use cuda_toolchain::plan::ArchPlan;
use cuda_toolchain::plan::ArchSource;
use cuda_toolchain::toolkit::Discovery;
use cuda_toolchain::toolkit::Severity;
use cuda_toolchain::toolkit::Toolkit;

/// Where arch targets came from, in words.
pub fn source_name(s: &ArchSource) -> &'static str {
    match s {
        ArchSource::Explicit => "--arch",
        ArchSource::CudaArchs => "CUDA_ARCHS",
        ArchSource::CmakeCudaArchitectures => "CMAKE_CUDA_ARCHITECTURES",
        ArchSource::CmakeCudaArchs => "CUDAARCHS",
        ArchSource::TorchCudaArchList => "TORCH_CUDA_ARCH_LIST",
        ArchSource::CudaComputeCap => "CUDA_COMPUTE_CAP",
        ArchSource::CargoMetadata => "[package.metadata.cuda] arch",
        ArchSource::Detected => "detected GPUs",
        ArchSource::Fallback => "fallback arch",
    }
}

fn version_string(t: &Toolkit) -> Option<String> {
    t.version.as_ref().map(|v| v.to_string())
}

/// One toolkit in `toolkits --json` and `info --json`.
#[derive(Serialize)]
pub struct ToolkitJson<'a> {
    root: &'a std::path::Path,
    nvcc: &'a std::path::Path,
    version: Option<String>,
    found_via: String,
    selected: bool,
    problems: &'a [cuda_toolchain::toolkit::Problem],
}

impl<'a> ToolkitJson<'a> {
    fn new(t: &'a Toolkit, selected: bool) -> Self {
        ToolkitJson {
            root: &t.root,
            nvcc: &t.nvcc,
            version: version_string(t),
            found_via: t.found_via.to_string(),
            selected,
            problems: &t.problems,
        }
    }
}

/// Every candidate, the selected one marked.
fn toolkits_json(d: &Discovery) -> Vec<ToolkitJson<'_>> {
    d.candidates
        .iter()
        .enumerate()
        .map(|(i, t)| ToolkitJson::new(t, d.selected == Some(i)))
        .collect()
}

/// The `toolkits --json` document.
#[derive(Serialize)]
struct ToolkitsJson<'a> {
    toolkits: Vec<ToolkitJson<'a>>,
    selected: Option<usize>,
    reason: &'a str,
    conflicts: &'a [cuda_toolchain::toolkit::Problem],
}

/// `cargo cuda toolkits`: exits 1 when no usable toolkit is selected (the
/// error on stderr), 0 otherwise.
pub fn toolkits(session: &Session, o: &Overrides, json: bool, style: &Style, err: &Style) -> i32 {
    let discovery = match discover(session, o) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{}", err.cuda_error(&e));
            return 1;
        }
    };
    let unusable = discovery.clone().into_selected().err();
    let code = i32::from(unusable.is_some());
    if json {
        let out = ToolkitsJson {
            toolkits: toolkits_json(&discovery),
            selected: discovery.selected,
            reason: &discovery.reason,
            conflicts: &discovery.conflicts,
        };
        outln!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        if let Some(e) = &unusable {
            eprintln!("{}", err.cuda_error(e));
        }
        return code;
    }
    if discovery.candidates.is_empty() {
        outln!(
            "{}",
            style.status(Tone::Bad, "None", "no CUDA toolkit was found")
        );
    }
    for (i, t) in discovery.candidates.iter().enumerate() {
        let chosen = discovery.selected == Some(i);
        let (tone, word) = if chosen {
            (Tone::Good, "Selected")
        } else if t.is_broken() {
            (Tone::Bad, "Broken")
        } else {
            (Tone::Note, "Found")
        };
        let version = version_string(t).unwrap_or_else(|| "unknown version".into());
        outln!(
            "{}",
            style.status(
                tone,
                word,
                &format!("{version} at {} [{}]", t.root.display(), t.found_via)
            )
        );
        outln!("{:>12} nvcc: {}", "", t.nvcc.display());
        for p in &t.problems {
            print_problem(p, style, chosen);
        }
    }
    outln!();
    outln!("{}", style.status(Tone::Note, "Why", &discovery.reason));
    for c in &discovery.conflicts {
        print_problem(c, style, true);
    }
    if let Some(e) = &unusable {
        eprintln!("{}", err.cuda_error(e));
    }
    code
}

/// A toolkit's problem. Only a problem that fails this command is an
/// `error[...]`; an unused toolkit's errors are `problem[...]` (the command
/// still succeeds with the selected one).
fn print_problem(p: &cuda_toolchain::toolkit::Problem, style: &Style, counts: bool) {
    let (tone, word) = match p.severity {
        Severity::Error if counts => (Tone::Bad, "error"),
        Severity::Error => (Tone::Bad, "problem"),
        Severity::Warning => (Tone::Warn, "warning"),
    };
    outln!(
        "{:>12} {}: {}",
        "",
        style.paint(tone, &format!("{word}[{}]", p.code)),
        p.message
    );
    if let Some(fix) = &p.fix {
        outln!("{:>12}   = help: {fix}", "");
    }
}

fn discover(session: &Session, o: &Overrides) -> Result<Discovery, cuda_toolchain::Error> {
    let wants = session.project(o.manifest_path.as_deref()).wants?;
    session.discover(o, &wants)
}

/// Everything `info` reports, gathered once.
pub struct InfoData {
    /// Discovery (or why it failed).
    pub discovery: Result<Discovery, cuda_toolchain::Error>,
    /// The plan for the selected toolkit (or why it failed).
    pub plan: Option<Result<ArchPlan, cuda_toolchain::Error>>,
    /// The workspace, when cargo could describe it.
    pub workspace: Option<Workspace>,
    /// No usable toolkit selected (none found, requirement unmet, broken).
    pub unusable: Option<cuda_toolchain::Error>,
    /// Bad variable values and unknown metadata keys.
    pub warnings: Vec<String>,
}

impl InfoData {
    /// Every error `info` reports; any makes it exit 1.
    pub fn errors(&self) -> Vec<&cuda_toolchain::Error> {
        let mut out: Vec<&cuda_toolchain::Error> = Vec::new();
        out.extend(self.discovery.as_ref().err());
        out.extend(self.unusable.as_ref());
        if let Some(Err(e)) = &self.plan {
            out.push(e);
        }
        out
    }
}

/// Gathers discovery and the plan for the selected toolkit.
pub fn gather(session: &Session, o: &Overrides) -> InfoData {
    let project = session.project(o.manifest_path.as_deref());
    let discovery = project.wants.and_then(|wants| {
        let d = session.discover(o, &wants)?;
        Ok((d, wants))
    });
    let (discovery, wants) = match discovery {
        Ok((d, w)) => (Ok(d), w),
        Err(e) => (Err(e), ProjectWants::default()),
    };
    let plan = discovery
        .as_ref()
        .ok()
        .and_then(|d| d.selected.and_then(|i| d.candidates.get(i)))
        .map(|t| session.plan(t, o, &wants));
    let unusable = discovery
        .as_ref()
        .ok()
        .and_then(|d| d.clone().into_selected().err());
    let mut warnings = session.env.check();
    warnings.extend(wants.warnings.iter().cloned());
    InfoData {
        discovery,
        plan,
        workspace: project.workspace,
        unusable,
        warnings,
    }
}

/// One GPU in `info --json`.
#[derive(Serialize)]
struct GpuJson<'a> {
    index: u32,
    name: &'a str,
    compute_capability: String,
    total_memory: Option<u64>,
}

/// The driver in `info --json`.
#[derive(Serialize)]
struct DriverJson<'a> {
    version: Option<&'a str>,
    cuda_version: Option<String>,
    found_via: &'static str,
}

/// The workspace in `info --json`.
#[derive(Serialize)]
struct WorkspaceJson<'a> {
    root: &'a std::path::Path,
    cuda_packages: &'a [CudaPackage],
}

/// The `info --json` document.
#[derive(Serialize)]
pub struct InfoJson<'a> {
    toolkit: Option<ToolkitJson<'a>>,
    toolkits: Vec<ToolkitJson<'a>>,
    toolkit_reason: Option<&'a str>,
    gpus: Vec<GpuJson<'a>>,
    driver: Option<DriverJson<'a>>,
    arch: Option<cuda_toolchain::plan::PlanSummary>,
    gencode: Vec<String>,
    workspace: Option<WorkspaceJson<'a>>,
    sccache: crate::sccache::InfoJson,
    /// The kernel cache: local directory and the Redis tier's reachability.
    cache: cuda_build::compile::CacheStatus,
    errors: Vec<&'a cuda_toolchain::Error>,
    warnings: &'a [String],
}

/// The `info --json` document.
pub fn info_json<'a>(session: &'a Session, data: &'a InfoData) -> InfoJson<'a> {
    let probe = session.probe();
    let (toolkit, toolkits, reason) = match &data.discovery {
        Ok(d) => (
            d.selected_toolkit().map(|t| ToolkitJson::new(t, true)),
            toolkits_json(d),
            Some(d.reason.as_str()),
        ),
        Err(_) => (None, Vec::new(), None),
    };
    let gpus = probe
        .gpus
        .iter()
        .map(|g| GpuJson {
            index: g.index,
            name: &g.name,
            compute_capability: g.compute_capability.to_string(),
            total_memory: g.total_memory,
        })
        .collect();
    let driver = probe.driver.as_ref().map(|d| DriverJson {
        version: d.version.as_deref(),
        cuda_version: d.cuda_version.map(|(a, b)| format!("{a}.{b}")),
        found_via: d.found_via.name(),
    });
    let plan = match &data.plan {
        Some(Ok(plan)) => Some(plan),
        _ => None,
    };
    InfoJson {
        toolkit,
        toolkits,
        toolkit_reason: reason,
        gpus,
        driver,
        arch: plan.map(ArchPlan::summary),
        gencode: plan.map(ArchPlan::gencode_flags).unwrap_or_default(),
        workspace: data.workspace.as_ref().map(|w| WorkspaceJson {
            root: &w.root,
            cuda_packages: &w.cuda_packages,
        }),
        sccache: crate::sccache::info_json(&crate::sccache::current_state(
            &session.env,
            data.workspace.as_ref(),
        )),
        cache: cuda_build::compile::cache_status(&session.env),
        errors: data.errors(),
        warnings: &data.warnings,
    }
}

/// `cargo cuda info`: exits 1 when anything it reports is an error (no
/// usable toolkit, a bad arch setting, invalid metadata); the errors go to
/// stderr, and `--json` output carries them too (`"errors"`).
pub fn info(session: &Session, o: &Overrides, json: bool, style: &Style, err: &Style) -> i32 {
    let data = gather(session, o);
    for w in &data.warnings {
        eprintln!("{}", err.warning(w));
    }
    let errors = data.errors();
    let code = i32::from(!errors.is_empty());
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&info_json(session, &data)).unwrap_or_default()
        );
        for e in &errors {
            eprintln!("{}", err.cuda_error(e));
        }
        return code;
    }
    match &data.discovery {
        Ok(d) => match d.selected.and_then(|i| d.candidates.get(i)) {
            Some(t) => {
                let v = version_string(t).unwrap_or_else(|| "unknown version".into());
                outln!(
                    "{}",
                    style.status(
                        Tone::Good,
                        "Toolkit",
                        &format!("CUDA {v} at {}", t.root.display())
                    )
                );
                outln!("{:>12} found via {}: {}", "", t.found_via, d.reason);
                outln!("{:>12} nvcc: {}", "", t.nvcc.display());
                let others = d.candidates.len().saturating_sub(1);
                if others > 0 {
                    outln!(
                        "{:>12} {others} other toolkit(s): see `cargo cuda toolkits`",
                        ""
                    );
                }
            }
            None => outln!(
                "{}",
                style.status(
                    Tone::Bad,
                    "Toolkit",
                    &format!("none selected: {}", d.reason)
                )
            ),
        },
        Err(e) => eprintln!("{}", err.cuda_error(e)),
    }
    if let Some(e) = &data.unusable {
        eprintln!("{}", err.cuda_error(e));
    }
    let probe = session.probe();
    match &probe.driver {
        Some(d) => outln!(
            "{}",
            style.status(
                Tone::Good,
                "Driver",
                &format!(
                    "{} (supports CUDA {}) via {}",
                    d.version.as_deref().unwrap_or("unknown version"),
                    d.cuda_version
                        .map_or("?".to_string(), |(a, b)| format!("{a}.{b}")),
                    d.found_via.name()
                )
            )
        ),
        None => outln!(
            "{}",
            style.status(
                Tone::Warn,
                "Driver",
                "none found (no NVIDIA driver, or not visible here)"
            )
        ),
    }
    if probe.gpus.is_empty() {
        outln!("{}", style.status(Tone::Warn, "GPUs", "none visible"));
    }
    for g in &probe.gpus {
        outln!(
            "{}",
            style.status(
                Tone::Good,
                "GPU",
                &format!(
                    "#{} {} (compute capability {}.{})",
                    g.index, g.name, g.compute_capability.major, g.compute_capability.minor
                )
            )
        );
    }
    match &data.plan {
        Some(Ok(plan)) => {
            outln!(
                "{}",
                style.status(
                    Tone::Good,
                    "Arch",
                    &format!(
                        "{} (from {})",
                        plan.targets_display().join(" "),
                        source_name(&plan.source)
                    )
                )
            );
            for f in plan.gencode_flags() {
                outln!("{:>12} {f}", "");
            }
            for w in &plan.warnings {
                outln!("{:>12} {}", "", style.warning(w));
            }
        }
        Some(Err(e)) => eprintln!("{}", err.cuda_error(e)),
        None => {}
    }
    if let Some(w) = &data.workspace {
        let names: Vec<String> = w
            .cuda_packages
            .iter()
            .map(|p| format!("{} ({})", p.name, p.uses.join(", ")))
            .collect();
        let what = if names.is_empty() {
            "no package uses cuda-build or cudarc".to_string()
        } else {
            names.join(", ")
        };
        outln!(
            "{}",
            style.status(
                Tone::Good,
                "Workspace",
                &format!("{}: {what}", w.root.display())
            )
        );
    }
    code
}

/// `cargo cuda env`: with `--shell` (the default), `export` lines for the
/// toolchain environment ([`toolchain::vars`]), exactly what `cargo cuda
/// build` with the same flags sets; with `--write`, the part cargo's `[env]`
/// can hold goes into the project's `.cargo/config.toml`, so plain `cargo`,
/// rust-analyzer and IDEs build with the same toolkit.
pub fn env(session: &Session, o: &Overrides, write: bool, err: &Style) -> i32 {
    match env_inner(session, o, write, err) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{}", err.cuda_error(&e));
            1
        }
    }
}

fn env_inner(
    session: &Session,
    o: &Overrides,
    write: bool,
    err: &Style,
) -> Result<(), cuda_toolchain::Error> {
    let project = session.project(o.manifest_path.as_deref());
    let wants = project.wants?;
    for w in &wants.warnings {
        eprintln!("{}", err.warning(w));
    }
    let t = session.discover(o, &wants)?.into_selected()?;
    let plan = match &o.arch {
        Some(_) => Some(session.plan(&t, o, &wants)?),
        None => None,
    };
    let target = toolchain::Target {
        toolkit: Some(&t),
        arch: o.arch.as_deref().map(|a| (a, plan.as_ref())),
    };
    let vars = toolchain::vars(&target, &session.env);
    if !write {
        outln!(
            "# CUDA {} ({})",
            t.version.as_ref().map_or("?".into(), |v| v.to_string()),
            // A comment must stay one line, whatever the path holds.
            t.found_via
                .to_string()
                .replace(|c: char| c.is_control(), "?")
        );
        for l in toolchain::shell_lines(&vars) {
            outln!("{l}");
        }
        return Ok(());
    }
    // `[env]` replaces a value (it cannot prepend to PATH), and a config NVCC
    // would outrank a CUDA_HOME set later in a shell: write the root (in
    // every consumer's name), the cudarc version and the arch list only.
    let written: Vec<(&str, String)> = vars
        .iter()
        .filter(|v| {
            matches!(
                v.var,
                cuda_toolchain::env::Var::CudaHome
                    | cuda_toolchain::env::Var::CudaPath
                    | cuda_toolchain::env::Var::CudaToolkitPath
                    | cuda_toolchain::env::Var::Cudacxx
                    | cuda_toolchain::env::Var::CudarcCudaVersion
                    | cuda_toolchain::env::Var::CudaArchs
                    | cuda_toolchain::env::Var::CudaComputeCap
            )
        })
        .filter_map(|v| match &v.value {
            toolchain::Value::Set(s) => Some((v.var.name(), s.to_string_lossy().into_owned())),
            toolchain::Value::Prepend(_) => None,
        })
        .collect();
    let dir = project
        .workspace
        .as_ref()
        .map(|w| w.root.clone())
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."));
    let file = dir.join(".cargo").join("config.toml");
    crate::config::write_env(&file, &written)?;
    let names: Vec<&str> = written.iter().map(|(n, _)| *n).collect();
    eprintln!(
        "{}",
        err.status(
            Tone::Good,
            "Wrote",
            &format!("[env] {} to {}", names.join(", "), file.display())
        )
    );
    Ok(())
}
