//! `toolkit.consumers`: the crates of the build that look for CUDA on their
//! own ([`cuda_toolchain::interop::consumers`] knows what each reads), which
//! toolkit each will see under plain `cargo build` and why, and the ones
//! that would see another toolkit than cuda-build's.

use cuda_toolchain::interop::consumers;
use cuda_toolchain::toolkit::Toolkit;

use super::{Check, Status};
use crate::session::{Overrides, Session};
use crate::toolchain::describe_seen;

pub(super) fn consumers_check(
    session: &Session,
    overrides: &Overrides,
    selected: Option<&Toolkit>,
) -> Check {
    let id = "toolkit.consumers";
    let Some(selected) = selected else {
        return Check::new(
            id,
            Status::Skip,
            "no toolkit is selected, so there is nothing to agree on",
        );
    };
    let args: Vec<String> = overrides
        .manifest_path
        .iter()
        .flat_map(|p| ["--manifest-path".to_string(), p.display().to_string()])
        .collect();
    let packages = crate::workspace::find_cargo(&session.env)
        .and_then(|cargo| crate::graph::packages(&session.env, &cargo, &args, None));
    let packages = match packages {
        Ok(p) => p,
        Err(e) => {
            return Check::new(
                id,
                Status::Skip,
                format!("the crates of the build are unknown ({})", e.message),
            )
        }
    };
    let target = crate::graph::build_target(None);
    let assessed = consumers::assess(&packages, selected, &session.env, &target);
    if assessed.is_empty() {
        return Check::new(
            id,
            Status::Pass,
            "no crate of the build looks for CUDA on its own",
        );
    }
    let differ: Vec<&consumers::Assessment> = assessed.iter().filter(|a| !a.agrees).collect();
    let blocked: Vec<&consumers::Assessment> =
        assessed.iter().filter(|a| a.blocked.is_some()).collect();
    let summary = if differ.is_empty() {
        format!(
            "all {} crate(s) that look for CUDA see CUDA {} at {}",
            assessed.len(),
            selected
                .version
                .as_ref()
                .map_or("?".into(), |v| v.to_string()),
            selected.root.display()
        )
    } else {
        let names: Vec<&str> = differ.iter().map(|a| a.package.as_str()).collect();
        format!(
            "{} of {} crate(s) that look for CUDA would not use the selected toolkit under plain cargo: {}",
            differ.len(),
            assessed.len(),
            names.join(", ")
        )
    };
    let status = match (blocked.is_empty(), differ.is_empty()) {
        (false, _) => Status::Fail,
        (true, false) => Status::Warn,
        (true, true) => Status::Pass,
    };
    let mut c = Check::new(id, status, summary);
    for a in &assessed {
        c = c.evidence(format!(
            "{} ({}): {}, via {}{}",
            a.package,
            a.consumer.label(),
            describe_seen(&a.seen),
            a.seen.via,
            if a.agrees { "" } else { " [differs]" }
        ));
    }
    if let Some(b) = blocked.first() {
        c.fix = b
            .blocked
            .as_ref()
            .map(|why| format!("{}: {why}", b.package));
        c.code = Some("toolkit-env-conflict");
    } else if !differ.is_empty() {
        let vars: Vec<String> = consumers::handoff(&assessed)
            .iter()
            .map(|(v, value)| format!("{}={}", v.name(), value.to_string_lossy()))
            .collect();
        c.fix = Some(format!(
            "`cargo cuda build` hands them {}; for plain cargo, rust-analyzer and IDEs run `cargo cuda env --write`",
            vars.join(" ")
        ));
        c.code = Some("toolkit-env-conflict");
    }
    c
}
