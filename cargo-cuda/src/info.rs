//! `cargo cuda toolkits`, `info` and `env`: what was found, shown to people
//! and to scripts.

use serde_json::{json, Value};

use crate::cb::{self, ArchPlan, ArchSource, Discovery, Severity, Toolkit};
use crate::session::{Overrides, ProjectWants, Session};
use crate::shell;
use crate::style::{Style, Tone};
use crate::workspace::Workspace;

/// Where arch targets came from, in words.
pub fn source_name(s: &ArchSource) -> &'static str {
    match s {
        ArchSource::Explicit => "--arch",
        ArchSource::CudaArchs => "CUDA_ARCHS",
        ArchSource::CmakeCudaArchs => "CUDAARCHS",
        ArchSource::CudaComputeCap => "CUDA_COMPUTE_CAP",
        ArchSource::CargoMetadata => "[package.metadata.cuda] arch",
        ArchSource::Detected => "detected GPUs",
        ArchSource::Fallback => "fallback arch",
    }
}

fn version_string(t: &Toolkit) -> Option<String> {
    t.version.as_ref().map(|v| v.to_string())
}

fn toolkit_json(t: &Toolkit, selected: bool) -> Value {
    json!({
        "root": t.root,
        "nvcc": t.nvcc,
        "version": version_string(t),
        "found_via": t.found_via.to_string(),
        "selected": selected,
        "problems": t.problems,
    })
}

/// Every candidate, the selected one marked.
fn toolkits_json(d: &Discovery) -> Vec<Value> {
    d.candidates
        .iter()
        .enumerate()
        .map(|(i, t)| toolkit_json(t, d.selected == Some(i)))
        .collect()
}

/// `cargo cuda toolkits`.
pub fn toolkits(session: &Session, o: &Overrides, json: bool, style: &Style) -> i32 {
    let discovery = match discover(session, o) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{}", style.cuda_error(&e));
            return 1;
        }
    };
    if json {
        let out = json!({
            "toolkits": toolkits_json(&discovery),
            "selected": discovery.selected,
            "reason": discovery.reason,
            "conflicts": discovery.conflicts,
        });
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return if discovery.selected.is_some() { 0 } else { 1 };
    }
    if discovery.candidates.is_empty() {
        println!(
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
        println!(
            "{}",
            style.status(
                tone,
                word,
                &format!("{version} at {} [{}]", t.root.display(), t.found_via)
            )
        );
        println!("{:>12} nvcc: {}", "", t.nvcc.display());
        for p in &t.problems {
            print_problem(p, style);
        }
    }
    println!();
    println!("{}", style.status(Tone::Note, "Why", &discovery.reason));
    for c in &discovery.conflicts {
        print_problem(c, style);
    }
    if discovery.selected.is_some() {
        0
    } else {
        1
    }
}

fn print_problem(p: &cb::Problem, style: &Style) {
    let (tone, word) = match p.severity {
        Severity::Error => (Tone::Bad, "error"),
        Severity::Warning => (Tone::Warn, "warning"),
    };
    println!(
        "{:>12} {}: {}",
        "",
        style.paint(tone, &format!("{word}[{}]", p.code)),
        p.message
    );
    if let Some(fix) = &p.fix {
        println!("{:>12}   = help: {fix}", "");
    }
}

fn discover(session: &Session, o: &Overrides) -> Result<Discovery, cb::Error> {
    let wants = session.project(o.manifest_path.as_deref()).wants?;
    session.discover(o, &wants)
}

/// Everything `info` reports, gathered once.
pub struct InfoData {
    /// Discovery (or why it failed).
    pub discovery: Result<Discovery, cb::Error>,
    /// The plan for the selected toolkit (or why it failed).
    pub plan: Option<Result<ArchPlan, cb::Error>>,
    /// The workspace, when cargo could describe it.
    pub workspace: Option<Workspace>,
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
    InfoData {
        discovery,
        plan,
        workspace: project.workspace,
    }
}

/// The `info --json` document.
pub fn info_json(session: &Session, data: &InfoData) -> Value {
    let probe = session.probe();
    let (toolkit, toolkits, reason) = match &data.discovery {
        Ok(d) => (
            d.selected_toolkit().map(|t| toolkit_json(t, true)),
            toolkits_json(d),
            Some(d.reason.clone()),
        ),
        Err(_) => (None, Vec::new(), None),
    };
    let gpus: Vec<Value> = probe
        .gpus
        .iter()
        .map(|g| {
            json!({
                "index": g.index,
                "name": g.name,
                "compute_capability": format!("{}.{}", g.compute_capability.major, g.compute_capability.minor),
                "total_memory": g.total_memory,
            })
        })
        .collect();
    let driver = probe.driver.as_ref().map(|d| {
        json!({
            "version": d.version,
            "cuda_version": d.cuda_version.map(|(a, b)| format!("{a}.{b}")),
            "found_via": d.found_via.name(),
        })
    });
    let (arch, gencode) = match &data.plan {
        Some(Ok(plan)) => (
            json!({
                "targets": cb::targets_display(plan),
                "ptx": plan.ptx.as_ref().map(|a| a.compute_name()),
                "found_via": source_name(&plan.source),
                "warnings": plan.warnings,
            }),
            json!(cb::gencode_flags(plan)),
        ),
        _ => (Value::Null, json!([])),
    };
    let mut errors: Vec<Value> = Vec::new();
    if let Err(e) = &data.discovery {
        errors.push(json!(e));
    }
    if let Some(Err(e)) = &data.plan {
        errors.push(json!(e));
    }
    json!({
        "toolkit": toolkit,
        "toolkits": toolkits,
        "toolkit_reason": reason,
        "gpus": gpus,
        "driver": driver,
        "arch": arch,
        "gencode": gencode,
        "workspace": data.workspace.as_ref().map(|w| json!({
            "root": w.root,
            "cuda_packages": w.cuda_packages,
        })),
        "sccache": crate::sccache::info_json(&crate::sccache::current_state(
            &session.env,
            data.workspace.as_ref()
        )),
        "errors": errors,
    })
}

/// `cargo cuda info`.
pub fn info(session: &Session, o: &Overrides, json: bool, style: &Style) -> i32 {
    let data = gather(session, o);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&info_json(session, &data)).unwrap_or_default()
        );
        return 0;
    }
    match &data.discovery {
        Ok(d) => match d.selected.and_then(|i| d.candidates.get(i)) {
            Some(t) => {
                let v = version_string(t).unwrap_or_else(|| "unknown version".into());
                println!(
                    "{}",
                    style.status(
                        Tone::Good,
                        "Toolkit",
                        &format!("CUDA {v} at {}", t.root.display())
                    )
                );
                println!("{:>12} found via {}: {}", "", t.found_via, d.reason);
                println!("{:>12} nvcc: {}", "", t.nvcc.display());
                let others = d.candidates.len().saturating_sub(1);
                if others > 0 {
                    println!(
                        "{:>12} {others} other toolkit(s): see `cargo cuda toolkits`",
                        ""
                    );
                }
            }
            None => println!(
                "{}",
                style.status(
                    Tone::Bad,
                    "Toolkit",
                    &format!("none selected: {}", d.reason)
                )
            ),
        },
        Err(e) => println!("{}", style.cuda_error(e)),
    }
    let probe = session.probe();
    match &probe.driver {
        Some(d) => println!(
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
        None => println!(
            "{}",
            style.status(
                Tone::Warn,
                "Driver",
                "none found (no NVIDIA driver, or not visible here)"
            )
        ),
    }
    if probe.gpus.is_empty() {
        println!("{}", style.status(Tone::Warn, "GPUs", "none visible"));
    }
    for g in &probe.gpus {
        println!(
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
            println!(
                "{}",
                style.status(
                    Tone::Good,
                    "Arch",
                    &format!(
                        "{} (from {})",
                        cb::targets_display(plan).join(" "),
                        source_name(&plan.source)
                    )
                )
            );
            for f in cb::gencode_flags(plan) {
                println!("{:>12} {f}", "");
            }
            for w in &plan.warnings {
                println!("{:>12} {}", "", style.warning(w));
            }
        }
        Some(Err(e)) => println!("{}", style.cuda_error(e)),
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
        println!(
            "{}",
            style.status(
                Tone::Good,
                "Workspace",
                &format!("{}: {what}", w.root.display())
            )
        );
    }
    0
}

/// The `export` lines for the selected toolkit.
pub fn env_lines(t: &Toolkit) -> Vec<String> {
    let root = t.root.to_string_lossy();
    let mut lines = vec![
        shell::export("CUDA_HOME", &root),
        shell::export("CUDA_PATH", &root),
    ];
    let bin = t
        .nvcc
        .parent()
        .map(|p| p.to_path_buf())
        .unwrap_or_else(|| t.root.join("bin"));
    lines.push(format!(
        "export PATH={}:\"$PATH\"",
        shell::quote(&bin.to_string_lossy())
    ));
    let mut libs: Vec<String> = t
        .lib_dirs
        .iter()
        .map(|d| d.to_string_lossy().into_owned())
        .collect();
    if libs.is_empty() {
        libs.extend(
            ["lib64", "lib"]
                .iter()
                .map(|d| t.root.join(d))
                .filter(|d| d.is_dir())
                .map(|d| d.to_string_lossy().into_owned()),
        );
    }
    if !libs.is_empty() {
        let quoted: Vec<String> = libs.iter().map(|l| shell::quote(l)).collect();
        lines.push(format!(
            "export LD_LIBRARY_PATH={}\"${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\"",
            quoted.join(":")
        ));
    }
    lines
}

/// `cargo cuda env --shell`.
pub fn env(session: &Session, o: &Overrides, style: &Style) -> i32 {
    let selected = discover(session, o).and_then(cb::into_selected);
    match selected {
        Ok(t) => {
            println!(
                "# CUDA {} ({})",
                t.version.as_ref().map_or("?".into(), |v| v.to_string()),
                // A comment must stay one line, whatever the path holds.
                t.found_via
                    .to_string()
                    .replace(|c: char| c.is_control(), "?")
            );
            for l in env_lines(&t) {
                println!("{l}");
            }
            0
        }
        Err(e) => {
            eprintln!("{}", style.cuda_error(&e));
            1
        }
    }
}
