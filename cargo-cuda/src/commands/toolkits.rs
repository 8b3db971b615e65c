//! `cargo cuda toolkits`: every toolkit discovery found, its problems, and
//! which one is selected and why; and the JSON form of a toolkit that
//! `info --json` shares.

use serde::Serialize;

use super::Context;
use crate::session::{Overrides, Session};
use crate::style::{Style, Tone};
use cuda_toolchain::toolkit::{Discovery, Severity, Toolkit};

/// `cargo cuda toolkits`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub selection: crate::cli::Selection,
    /// Print the discovery as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The toolkit's version as text, when nvcc told it.
pub(super) fn version_string(t: &Toolkit) -> Option<String> {
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
    pub(super) fn new(t: &'a Toolkit, selected: bool) -> Self {
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
pub(super) fn toolkits_json(d: &Discovery) -> Vec<ToolkitJson<'_>> {
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
pub fn exec(ctx: &Context, args: &Args) -> i32 {
    let (session, json) = (ctx.session(), args.json);
    let (style, err) = (&ctx.out(), &ctx.err());
    let discovery = match discover(session, &args.selection.overrides()) {
        Ok(d) => d,
        Err(e) => {
            errln!("{}", err.cuda_error(&e));
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
            errln!("{}", err.cuda_error(e));
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
        errln!("{}", err.cuda_error(e));
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
