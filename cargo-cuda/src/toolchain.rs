//! The one toolchain environment: the variables that point every tool at
//! the selected toolkit (and, with `--arch`, at one arch list).
//!
//! `cargo cuda env --shell` exports exactly this set, `cargo cuda env
//! --write` puts the part cargo's `[env]` can hold into `.cargo/config.toml`,
//! and `cargo cuda build --toolkit DIR`/`--arch A` sets it for cargo. The
//! toolkit part names the toolkit in every consumer's own variable
//! ([`consumers::handoff_all`]: NVIDIA's CUDA_TOOLKIT_PATH, CMake's CUDACXX,
//! cudarc's CUDARC_CUDA_VERSION).
//!
//! Without those flags the wrapper sets only what a crate of the build
//! would otherwise get wrong ([`handoff_for_build`]): build scripts that
//! agree resolve the same toolkit and plan on their own, so `cargo build`
//! and `cargo cuda build` see one environment and nothing rebuilds when
//! switching. [`child_env`] is all `cargo cuda` hands cargo: this set for
//! the flags given, plus side channels that are not build inputs.

use std::ffi::OsString;
use std::path::PathBuf;

use cuda_toolchain::env::Env;
use cuda_toolchain::env::Var;
use cuda_toolchain::interop::consumers::{self, Assessment};
use cuda_toolchain::plan::ArchPlan;
use cuda_toolchain::toolkit::Toolkit;

use crate::session::{Overrides, ProjectWants, Session};
use crate::style::{Style, Tone};

/// How a variable gets its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// Replaces any previous value.
    Set(OsString),
    /// Directories put in front of the variable's current list.
    Prepend(Vec<PathBuf>),
}

/// One variable of the toolchain environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolchainVar {
    /// Which variable.
    pub var: Var,
    /// Its value.
    pub value: Value,
}

/// What to point the environment at.
pub struct Target<'a> {
    /// The toolkit (`None`: leave the toolkit variables alone).
    pub toolkit: Option<&'a Toolkit>,
    /// An arch list as the user wrote it, and the plan made from it.
    pub arch: Option<(&'a str, Option<&'a ArchPlan>)>,
}

/// The toolchain variables for `target`, in a fixed order.
pub fn vars(target: &Target<'_>, env: &Env) -> Vec<ToolchainVar> {
    let mut out = Vec::new();
    let mut set = |var: Var, value: OsString| {
        out.push(ToolchainVar {
            var,
            value: Value::Set(value),
        })
    };
    if let Some(t) = target.toolkit {
        let root = t.root.clone().into_os_string();
        set(Var::CudaHome, root.clone());
        set(Var::CudaPath, root.clone());
        set(Var::Nvcc, t.nvcc.clone().into_os_string());
        // Other spellings only where already set: a stale value would contradict us.
        for var in [Var::CudaRoot, Var::CudaToolkitRootDir, Var::CudaToolkitRoot] {
            if env.get_os(var).is_some() {
                set(var, root.clone());
            }
        }
        // Each consumer's own name for it: NVIDIA's crates, CMake, cudarc.
        for (var, value) in consumers::handoff_all(t, None) {
            set(var, value);
        }
    }
    if let Some((spec, plan)) = target.arch {
        set(Var::CudaArchs, spec.into());
        if let Some(cc) = plan.and_then(compute_cap) {
            set(Var::CudaComputeCap, cc.to_string().into());
        }
    }
    if let Some(t) = target.toolkit {
        let mut bins: Vec<PathBuf> = t.nvcc.parent().map(PathBuf::from).into_iter().collect();
        let root_bin = t.root.join("bin");
        if !bins.contains(&root_bin) {
            bins.push(root_bin);
        }
        out.push(ToolchainVar {
            var: Var::Path,
            value: Value::Prepend(bins),
        });
        let mut libs = t.lib_dirs.clone();
        if libs.is_empty() {
            libs.extend(
                ["lib64", "lib"]
                    .iter()
                    .map(|d| t.root.join(d))
                    .filter(|d| d.is_dir()),
            );
        }
        if !libs.is_empty() {
            out.push(ToolchainVar {
                var: Var::LdLibraryPath,
                value: Value::Prepend(libs),
            });
        }
    }
    out
}

/// The variables as `(name, value)` for a child process: prepended lists
/// are joined with the current value from `env`, without duplicates.
pub fn for_child(vars: &[ToolchainVar], env: &Env) -> Vec<(&'static str, OsString)> {
    vars.iter()
        .filter_map(|v| match &v.value {
            Value::Set(s) => Some((v.var.name(), s.clone())),
            Value::Prepend(dirs) => {
                let mut all = dirs.clone();
                let old = env.get_os(v.var).unwrap_or_default();
                all.extend(
                    std::env::split_paths(old)
                        .filter(|d| !d.as_os_str().is_empty() && !dirs.contains(d))
                        .collect::<Vec<_>>(),
                );
                std::env::join_paths(&all).ok().map(|p| (v.var.name(), p))
            }
        })
        .collect()
}

/// What `cargo cuda` adds to cargo's environment.
///
/// Without `--toolkit`/`--arch`: only side channels, which are not build
/// inputs ([`cuda_toolchain::env::Var::is_build_input`]), so a build stays fresh
/// when switching between `cargo build` and `cargo cuda build`: the progress
/// file, the driver-probe helper, and the plan we made (which a build script
/// uses only when it was made from the inputs it sees). With those flags,
/// the toolchain environment for them ([`vars`]), exactly what
/// `cargo cuda env --shell` with the same flags exports.
pub fn child_env(
    toolkit: &Toolkit,
    plan: Option<&ArchPlan>,
    overrides: &Overrides,
    env: &cuda_toolchain::env::Env,
    progress: Option<&std::path::Path>,
    handed_plan: Option<String>,
) -> Vec<(&'static str, OsString)> {
    let target = Target {
        toolkit: overrides.toolkit.is_some().then_some(toolkit),
        arch: overrides.arch.as_deref().map(|a| (a, plan)),
    };
    let mut vars = for_child(&vars(&target, env), env);
    if let Some(p) = progress {
        vars.push((Var::CargoCudaProgress.name(), p.as_os_str().to_owned()));
    }
    if let Ok(exe) = std::env::current_exe() {
        vars.push((Var::CargoCudaProbe.name(), exe.into_os_string()));
    }
    if let Some(h) = handed_plan {
        vars.push((Var::CargoCudaPlan.name(), h.into()));
    }
    vars
}

/// The variables as POSIX shell lines (`export NAME=value`; lists are
/// prepended to the shell's own value at eval time).
pub fn shell_lines(vars: &[ToolchainVar]) -> Vec<String> {
    vars.iter()
        .map(|v| {
            let name = v.var.name();
            match &v.value {
                Value::Set(s) => export(name, &s.to_string_lossy()),
                Value::Prepend(dirs) => {
                    let quoted: Vec<String> =
                        dirs.iter().map(|d| quote(&d.to_string_lossy())).collect();
                    format!(
                        "export {name}={}\"${{{name}:+:${name}}}\"",
                        quoted.join(":")
                    )
                }
            }
        })
        .collect()
}

/// Quotes `s` for bash and zsh ([`cuda_toolchain::process::shell_quote`]).
///
/// ```text
/// /usr/local/cuda      -> /usr/local/cuda
/// /opt/my cuda         -> '/opt/my cuda'
/// it's                 -> 'it'\''s'
/// ```
fn quote(s: &str) -> String {
    cuda_toolchain::process::shell_quote(s)
}

/// `export NAME=value`, with the value quoted.
fn export(name: &str, value: &str) -> String {
    format!("export {name}={}", quote(value))
}

/// candle-style `CUDA_COMPUTE_CAP`: the single highest compute capability, as a number (`90`).
pub fn compute_cap(plan: &ArchPlan) -> Option<u32> {
    plan.sass
        .iter()
        .chain(plan.ptx.iter())
        .map(|a| a.cc.number())
        .max()
}

/// What `cargo cuda build` (without `--toolkit`) hands the build so that
/// every crate that finds CUDA on its own sees `toolkit`: the variables of
/// each crate of the graph that would see another one (nothing for those
/// that agree, so switching to plain cargo stays fresh). Says once which
/// crate would have seen what, and warns about variables that disagree.
/// With `--toolkit`, [`vars`] already names it everywhere; only a cross
/// build's `CUDA_TOOLKIT_TARGET_DIR` is added.
pub fn handoff_for_build(
    session: &Session,
    toolkit: &Toolkit,
    overrides: &Overrides,
    wants: &ProjectWants,
    workspace_root: Option<&std::path::Path>,
    cargo_args: &[OsString],
    style: &Style,
) -> Vec<(&'static str, OsString)> {
    // Disagreeing CUDA variables: one warning naming them all (discovery's
    // answers are cached, so asking again costs milliseconds).
    if let Ok(d) = session.discover(overrides, wants) {
        for p in d
            .conflicts
            .iter()
            .filter(|p| matches!(p.code, "toolkit-env-conflict" | "cuda-home-invalid"))
        {
            crate::errln!("{}", style.warning(&p.message));
        }
    }
    let (args, target) = crate::graph::metadata_args(cargo_args);
    let build_target = crate::graph::build_target(target.clone());
    if overrides.toolkit.is_some() {
        return consumers::handoff_all(toolkit, Some(&build_target))
            .into_iter()
            .filter(|(v, _)| *v == Var::CudaToolkitTargetDir)
            .map(|(v, value)| (v.name(), value))
            .collect();
    }
    if workspace_root.and_then(crate::graph::lock_names_consumers) == Some(false) {
        return Vec::new();
    }
    let packages = crate::workspace::find_cargo(&session.env)
        .and_then(|cargo| crate::graph::packages(&session.env, &cargo, &args, target.as_deref()));
    let packages = match packages {
        Ok(p) => p,
        Err(e) => {
            crate::errln!(
                "{}",
                style.warning(&format!(
                    "{}; the crates that look for CUDA on their own get nothing from cargo cuda",
                    e.message
                ))
            );
            return Vec::new();
        }
    };
    let assessed = consumers::assess(&packages, toolkit, &session.env, &build_target);
    for a in assessed.iter().filter(|a| !a.agrees) {
        if let Some(why) = &a.blocked {
            crate::errln!("{}", style.warning(&format!("{}: {why}", a.package)));
        }
        if !a.handoff.is_empty() {
            crate::errln!("{}", style.status(Tone::Note, "CUDA", &handoff_note(a)));
        }
    }
    consumers::handoff(&assessed)
        .into_iter()
        .map(|(v, value)| (v.name(), value))
        .collect()
}

/// `cuda-bindings 0.5.0 would see … (via …); handing it CUDA_TOOLKIT_PATH=…`.
fn handoff_note(a: &Assessment) -> String {
    let given: Vec<String> = a
        .handoff
        .iter()
        .map(|(v, value)| format!("{}={}", v.name(), value.to_string_lossy()))
        .collect();
    format!(
        "{} would see {} (via {}); this build hands it {} (`cargo cuda env --write` makes plain cargo do the same)",
        a.package,
        describe_seen(&a.seen),
        a.seen.via,
        given.join(" ")
    )
}

/// What a consumer sees, in a few words: `CUDA 13.3 at /usr/local/cuda-13.3`, `no toolkit (…)`.
pub fn describe_seen(seen: &consumers::Seen) -> String {
    match (&seen.release, &seen.root, &seen.failure) {
        (_, _, Some(why)) => format!("no usable toolkit ({why})"),
        (Some((a, b)), Some(root), None) => format!("CUDA {a}.{b} at {}", root.display()),
        (Some((a, b)), None, None) => format!("CUDA {a}.{b}"),
        (None, Some(root), None) => format!("`{}`", root.display()),
        (None, None, None) => "an unknown toolkit".into(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A CUDA 13.0 toolkit at /opt/cuda-13.0 (nothing on disk).
    pub(crate) fn toolkit() -> Toolkit {
        Toolkit {
            root: PathBuf::from("/opt/cuda-13.0"),
            nvcc: PathBuf::from("/opt/cuda-13.0/bin/nvcc"),
            version: Some(semver::Version::new(13, 0, 88)),
            found_via: cuda_toolchain::toolkit::FoundVia::Explicit,
            include_dirs: vec![],
            lib_dirs: vec![PathBuf::from("/opt/cuda-13.0/lib64")],
            problems: vec![],
        }
    }

    /// sm_80 and sm_90 SASS plus compute_90 PTX, from CUDA_ARCHS.
    pub(crate) fn plan() -> ArchPlan {
        ArchPlan {
            sass: vec![
                cuda_toolchain::arch::Arch::new(8, 0),
                cuda_toolchain::arch::Arch::new(9, 0),
            ],
            ptx: Some(cuda_toolchain::arch::Arch::new(9, 0)),
            source: cuda_toolchain::plan::ArchSource::CudaArchs,
            warnings: vec![],
        }
    }

    /// The value a child gets for `name`, if it is set.
    pub(crate) fn value_of(vars: &[(&'static str, OsString)], name: &str) -> Option<String> {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.to_string_lossy().into_owned())
    }

    #[test]
    fn child_env_points_everything_at_one_toolkit() {
        let tk = toolkit();
        let plan = plan();
        let env = Env::empty()
            .set(Var::Path, "/usr/bin:/opt/cuda-12.4/bin")
            .set(Var::CudaRoot, "/opt/cuda-12.4");
        let target = Target {
            toolkit: Some(&tk),
            arch: Some(("80;90", Some(&plan))),
        };
        let vars = for_child(&vars(&target, &env), &env);
        let get = |k: &str| value_of(&vars, k);
        assert_eq!(get("CUDA_HOME").as_deref(), Some("/opt/cuda-13.0"));
        assert_eq!(get("CUDA_PATH").as_deref(), Some("/opt/cuda-13.0"));
        assert_eq!(get("CUDA_ROOT").as_deref(), Some("/opt/cuda-13.0"));
        assert_eq!(get("NVCC").as_deref(), Some("/opt/cuda-13.0/bin/nvcc"));
        assert_eq!(
            get("PATH").as_deref(),
            Some("/opt/cuda-13.0/bin:/usr/bin:/opt/cuda-12.4/bin")
        );
        assert_eq!(
            get("CUDA_ARCHS").as_deref(),
            Some("80;90"),
            "as the user wrote it"
        );
        assert_eq!(get("CUDA_COMPUTE_CAP").as_deref(), Some("90"));
        assert_eq!(get("CUDARC_CUDA_VERSION").as_deref(), Some("13000"));
        assert_eq!(
            get("LD_LIBRARY_PATH").as_deref(),
            Some("/opt/cuda-13.0/lib64")
        );
        assert_eq!(
            get("CUDA_TOOLKIT_ROOT_DIR"),
            None,
            "unset spellings stay unset"
        );
    }

    /// The shell lines and the child environment are one list: every
    /// variable the wrapper would set is exported, and nothing else.
    #[test]
    fn shell_exports_exactly_what_a_child_gets() {
        let tk = toolkit();
        let env = Env::empty().set(Var::Path, "/usr/bin");
        let target = Target {
            toolkit: Some(&tk),
            arch: None,
        };
        let v = vars(&target, &env);
        let mut child: Vec<&str> = for_child(&v, &env).iter().map(|(n, _)| *n).collect();
        let mut shell: Vec<String> = shell_lines(&v)
            .iter()
            .map(|l| l["export ".len()..l.find('=').unwrap()].to_string())
            .collect();
        child.sort();
        shell.sort();
        assert_eq!(child, shell);
        assert!(shell_lines(&v)
            .contains(&"export PATH=/opt/cuda-13.0/bin\"${PATH:+:$PATH}\"".to_string()));
    }

    #[test]
    fn no_toolkit_and_no_arch_is_no_variable() {
        let target = Target {
            toolkit: None,
            arch: None,
        };
        assert!(vars(&target, &Env::empty()).is_empty());
    }

    #[test]
    fn compute_cap_is_the_highest() {
        assert_eq!(compute_cap(&plan()), Some(90));
    }

    #[test]
    fn the_toolkit_part_names_it_in_every_consumers_variable() {
        let tk = toolkit();
        let target = Target {
            toolkit: Some(&tk),
            arch: None,
        };
        let vars = for_child(&vars(&target, &Env::empty()), &Env::empty());
        let get = |k: &str| value_of(&vars, k);
        assert_eq!(get("CUDA_TOOLKIT_PATH").as_deref(), Some("/opt/cuda-13.0"));
        assert_eq!(get("CUDACXX").as_deref(), Some("/opt/cuda-13.0/bin/nvcc"));
        assert_eq!(get("CUDA_TOOLKIT_TARGET_DIR"), None, "not a cross build");
    }

    /// No flags: only side channels, none of them a build input, so the
    /// build scripts see what plain `cargo build` gives them.
    #[test]
    fn without_flags_only_side_channels_are_set() {
        let env = cuda_toolchain::env::Env::empty().set(Var::Path, "/usr/bin");
        let vars = child_env(
            &toolkit(),
            None,
            &Overrides::default(),
            &env,
            Some(std::path::Path::new("/tmp/p.jsonl")),
            Some("{}".into()),
        );
        let names: Vec<&str> = vars.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            ["CARGO_CUDA_PROGRESS", "CARGO_CUDA_PROBE", "CARGO_CUDA_PLAN"]
        );
        for (n, _) in &vars {
            let var = Var::ALL.iter().find(|v| v.name() == *n).unwrap();
            assert!(!var.is_build_input(), "{n} would make builds dirty");
        }
    }

    #[test]
    fn flags_set_the_toolchain_for_them() {
        let env = cuda_toolchain::env::Env::empty().set(Var::Path, "/usr/bin");
        let o = Overrides {
            toolkit: Some(PathBuf::from("/opt/cuda-13.0")),
            arch: Some("80;90".into()),
            manifest_path: None,
        };
        let vars = child_env(&toolkit(), Some(&plan()), &o, &env, None, None);
        let get = |k: &str| value_of(&vars, k);
        assert_eq!(get("CUDA_HOME").as_deref(), Some("/opt/cuda-13.0"));
        assert_eq!(get("NVCC").as_deref(), Some("/opt/cuda-13.0/bin/nvcc"));
        assert_eq!(get("PATH").as_deref(), Some("/opt/cuda-13.0/bin:/usr/bin"));
        assert_eq!(get("CUDA_ARCHS").as_deref(), Some("80;90"));
        assert_eq!(get("CUDA_COMPUTE_CAP").as_deref(), Some("90"));
        assert_eq!(get("CUDARC_CUDA_VERSION").as_deref(), Some("13000"));
    }

    #[test]
    fn quotes_only_when_needed() {
        assert_eq!(
            quote("/usr/local/cuda-13.0/bin"),
            "/usr/local/cuda-13.0/bin"
        );
        assert_eq!(quote("/opt/my cuda"), "'/opt/my cuda'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("$(rm -rf /)"), "'$(rm -rf /)'");
        assert_eq!(quote("a\nb"), "'a\nb'");
    }

    #[test]
    fn round_trips_through_sh() {
        let nasty = "a b'c\"d$e`f\\g\nh*";
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(format!("printf %s {}", quote(nasty)))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), nasty);
    }
}
