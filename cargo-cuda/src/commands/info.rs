//! `cargo cuda info`: the selected toolkit, the driver, the GPUs, the arch
//! plan and the workspace, for people and (`--json`) for scripts.

use serde::Serialize;

use super::toolkits::{toolkits_json, version_string, ToolkitJson};
use super::Context;
use crate::session::{Overrides, ProjectWants, Session};
use crate::style::Tone;
use crate::workspace::{CudaPackage, Workspace};
use cuda_toolchain::plan::ArchPlan;
use cuda_toolchain::toolkit::Discovery;

/// `cargo cuda info`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub selection: crate::cli::Selection,
    /// Print JSON: toolkit, toolkits, gpus, driver, arch, gencode.
    #[arg(long)]
    pub json: bool,
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
    /// Each CUDA package's header-only dependencies, resolved against the store.
    pub header_deps: Vec<HeaderDepJson>,
}

/// One header-only dependency of one package, as `info` shows it.
#[derive(Debug, Serialize)]
pub struct HeaderDepJson {
    /// The package that declares it.
    pub package: String,
    /// Its name (`cutlass`).
    pub name: String,
    /// `index`, `git` or `path`.
    pub source: &'static str,
    /// The index package, the git URL, or the directory.
    pub from: String,
    /// What was asked for: a version (`3.5`), a commit, or the path.
    pub requested: String,
    /// How the request is read (`"3.5" means the newest 3.5.x release…`), or
    /// which release a CUTLASS commit maps to.
    pub meaning: Option<String>,
    /// The exact version the store holds for it (the newest match), if any.
    pub resolved: Option<String>,
    /// Whether a build finds it: in the store (or, for a path, the directory exists).
    pub in_store: bool,
}

/// Each CUDA package's `[package.metadata.cuda]` header dependencies, looked
/// up in the store as a build script would (no network).
fn header_deps(session: &Session, workspace: Option<&Workspace>) -> Vec<HeaderDepJson> {
    use cuda_toolchain::metadata::HeaderSource;
    use cuda_toolchain::toolkit::store;
    let root = store::root(&session.env);
    let mut out = Vec::new();
    for p in workspace
        .map(|w| w.cuda_packages.as_slice())
        .unwrap_or_default()
    {
        let dir = p
            .manifest_path
            .parent()
            .unwrap_or(std::path::Path::new("."));
        let Ok(md) = cuda_toolchain::metadata::read(dir) else {
            continue; // reported by the project's own checks
        };
        for (name, source) in md.header_deps {
            let row = match &source {
                HeaderSource::Index { package, version } => {
                    let found = root
                        .as_deref()
                        .and_then(|r| store::find_header_dep(r, package, version));
                    let cutlass = package == cuda_toolchain::cutlass::INDEX_PACKAGE;
                    // `cutlass = { commit = … }` became this exact release.
                    let commit = md
                        .cutlass_commit
                        .clone()
                        .filter(|_| cutlass && name == "cutlass");
                    let meaning = match &commit {
                        Some(c) => Some(format!(
                            "commit {c} has the headers of nvidia-cutlass {version}, verified file by file"
                        )),
                        None if cutlass => cuda_toolchain::cutlass::request_meaning(version),
                        None => None,
                    };
                    HeaderDepJson {
                        package: p.name.clone(),
                        name,
                        source: "index",
                        from: package.clone(),
                        requested: commit.unwrap_or_else(|| version.clone()),
                        meaning,
                        in_store: found.is_some(),
                        resolved: found.map(|d| d.version),
                    }
                }
                HeaderSource::Git { url, commit } => {
                    let found = root
                        .as_deref()
                        .and_then(|r| store::find_git_dep(r, &name, commit));
                    HeaderDepJson {
                        package: p.name.clone(),
                        name,
                        source: "git",
                        from: url.clone(),
                        requested: commit.clone(),
                        meaning: None,
                        in_store: found.is_some(),
                        resolved: found.map(|d| d.version),
                    }
                }
                HeaderSource::Path(d) => HeaderDepJson {
                    package: p.name.clone(),
                    name,
                    source: "path",
                    from: d.display().to_string(),
                    requested: d.display().to_string(),
                    meaning: None,
                    in_store: d.is_dir(),
                    resolved: d.is_dir().then(|| d.display().to_string()),
                },
            };
            out.push(row);
        }
    }
    out
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
    let header_deps = header_deps(session, project.workspace.as_ref());
    InfoData {
        discovery,
        plan,
        workspace: project.workspace,
        unusable,
        warnings,
        header_deps,
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
    /// Each CUDA package's header-only dependencies and whether the store has them.
    header_deps: &'a [HeaderDepJson],
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
        header_deps: &data.header_deps,
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
pub fn exec(ctx: &Context, args: &Args) -> i32 {
    let (session, json) = (ctx.session(), args.json);
    let (style, err) = (&ctx.out(), &ctx.err());
    let data = gather(session, &args.selection.overrides());
    for w in &data.warnings {
        errln!("{}", err.warning(w));
    }
    let errors = data.errors();
    let code = i32::from(!errors.is_empty());
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&info_json(session, &data)).unwrap_or_default()
        );
        for e in &errors {
            errln!("{}", err.cuda_error(e));
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
        Err(e) => errln!("{}", err.cuda_error(e)),
    }
    if let Some(e) = &data.unusable {
        errln!("{}", err.cuda_error(e));
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
                        crate::session::arch_source_name(&plan.source)
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
        Some(Err(e)) => errln!("{}", err.cuda_error(e)),
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
    for d in &data.header_deps {
        let (tone, state) = match (&d.resolved, d.in_store) {
            (Some(v), true) if d.source == "path" => (Tone::Good, format!("directory {v}")),
            (Some(v), true) => (Tone::Good, format!("{v}, in the store")),
            _ if d.source == "path" => (Tone::Bad, "the directory does not exist".to_string()),
            _ => (
                Tone::Bad,
                "not in the store: run `cargo cuda deps fetch`".to_string(),
            ),
        };
        let asked = match d.source {
            "index" if d.requested.len() == 40 => format!("{} at commit {}", d.from, d.requested),
            "index" => format!("{} \"{}\"", d.from, d.requested),
            "git" => format!("git {} at {}", d.from, d.requested),
            _ => format!("path {}", d.from),
        };
        outln!(
            "{}",
            style.status(
                tone,
                "Header dep",
                &format!("{}: {} ({asked}) → {state}", d.package, d.name)
            )
        );
        if let Some(m) = &d.meaning {
            outln!("{:>12} {m}", "");
        }
    }
    code
}
