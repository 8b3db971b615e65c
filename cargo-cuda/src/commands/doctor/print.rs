//! The report as people read it.

use crate::style::{Style, Tone};

use super::{Report, Status};

/// Prints the report like cargo: status words right-aligned, evidence and help indented.
pub fn print(report: &Report, style: &Style) {
    let mut layer = "";
    for c in &report.checks {
        if c.layer != layer {
            layer = c.layer;
            outln!("{}", style.bold(&format!("[{layer}]")));
        }
        let (tone, word) = match c.status {
            Status::Pass => (Tone::Good, "ok"),
            Status::Warn => (Tone::Warn, "warning"),
            Status::Fail => (Tone::Bad, "FAIL"),
            Status::Skip => (Tone::Dim, "skip"),
        };
        outln!(
            "{} {} {}",
            style.status(tone, word, &style.bold(c.id)),
            " ".repeat(22usize.saturating_sub(c.id.len())),
            c.summary
        );
        if c.status != Status::Skip {
            for e in &c.evidence {
                outln!("{:>12}   {}", "", e);
            }
        }
        let documented = c
            .code
            .filter(|code| cuda_toolchain::diagnose::codes::lookup(code).is_some());
        if let Some(code) = documented.filter(|_| matches!(c.status, Status::Fail | Status::Warn)) {
            outln!("{:>12}   = explain: cargo cuda explain {code}", "");
        }
        if let Some(fix) = c
            .fix
            .as_ref()
            .filter(|_| matches!(c.status, Status::Fail | Status::Warn))
        {
            outln!("{:>12}   = {}: {fix}", "", style.bold("help"));
        }
    }
    let count = |s| report.checks.iter().filter(|c| c.status == s).count();
    let (fail, warn, pass, skip) = (
        count(Status::Fail),
        count(Status::Warn),
        count(Status::Pass),
        count(Status::Skip),
    );
    let summary =
        format!("doctor: {pass} passed, {warn} warning(s), {fail} failed, {skip} skipped");
    if fail > 0 {
        outln!("{}", style.status(Tone::Bad, "Failed", &summary));
    } else {
        outln!("{}", style.status(Tone::Good, "Finished", &summary));
    }
}
