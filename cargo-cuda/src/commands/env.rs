//! `cargo cuda env`: the toolchain environment of the selected toolkit, as
//! shell lines or written into `.cargo/config.toml`.

use std::path::PathBuf;

use super::Context;
use crate::session::{Overrides, Session};
use crate::style::{Style, Tone};
use crate::toolchain;

/// `cargo cuda env`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub selection: crate::cli::Selection,
    /// Print POSIX shell `export` lines (the default): `eval "$(cargo cuda env --shell)"`.
    #[arg(long, conflicts_with = "write")]
    pub shell: bool,
    /// Write CUDA_HOME, CUDA_PATH, CUDARC_CUDA_VERSION (and with --arch, CUDA_ARCHS and
    /// CUDA_COMPUTE_CAP) into the `[env]` table of the project's .cargo/config.toml, so
    /// plain `cargo`, rust-analyzer and IDEs use the same toolkit as `cargo cuda`.
    #[arg(long)]
    pub write: bool,
}

/// `cargo cuda env`: with `--shell` (the default), `export` lines for the
/// toolchain environment ([`toolchain::vars`]), exactly what `cargo cuda
/// build` with the same flags sets; with `--write`, the part cargo's `[env]`
/// can hold goes into the project's `.cargo/config.toml`, so plain `cargo`,
/// rust-analyzer and IDEs build with the same toolkit.
pub fn exec(ctx: &Context, args: &Args) -> i32 {
    let err = ctx.err();
    match print_or_write(ctx.session(), &args.selection.overrides(), args.write, &err) {
        Ok(()) => 0,
        Err(e) => {
            errln!("{}", err.cuda_error(&e));
            1
        }
    }
}

fn print_or_write(
    session: &Session,
    o: &Overrides,
    write: bool,
    err: &Style,
) -> Result<(), cuda_toolchain::Error> {
    let project = session.project(o.manifest_path.as_deref());
    let wants = project.wants?;
    for w in &wants.warnings {
        errln!("{}", err.warning(w));
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
    errln!(
        "{}",
        err.status(
            Tone::Good,
            "Wrote",
            &format!("[env] {} to {}", names.join(", "), file.display())
        )
    );
    Ok(())
}
