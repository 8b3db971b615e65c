//! Explicit settings (an explicit root, `NVCC`, `CUDA_HOME`…): each one is
//! validated, and every way it can be wrong is an error naming the setting.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::candidate::NVCC_UNUSABLE;
use super::sources::wheel_dirs;
use super::{Candidate, Extras, Search};
use crate::env::Var;
use crate::toolkit::{windows, FoundVia, Problem, Severity};
use crate::Error;

/// A lower-precedence explicit setting that is broken but not used.
pub(super) fn ignored_setting(what: &Setting, e: Error) -> Problem {
    Problem {
        code: e.code,
        severity: Severity::Warning,
        message: format!(
            "{} (ignored: a higher-precedence setting is used)",
            e.message
        ),
        fix: e
            .help
            .first()
            .cloned()
            .or(Some(format!("unset {}", what.name()))),
    }
}

/// Which explicit setting a candidate came from, for messages.
pub(super) enum Setting {
    Explicit,
    Var(Var),
}

impl Setting {
    fn name(&self) -> String {
        match self {
            Setting::Explicit => "the explicit toolkit root".into(),
            Setting::Var(v) => v.name().into(),
        }
    }
    fn found_via(&self) -> FoundVia {
        match self {
            Setting::Explicit => FoundVia::Explicit,
            Setting::Var(v) => FoundVia::EnvVar(v.name().into()),
        }
    }
    fn fix_hint(&self) -> String {
        match self {
            Setting::Explicit => "pass the toolkit's root directory (the one holding bin/nvcc)".into(),
            Setting::Var(v) => format!(
                "set {0} to the toolkit's root directory (the one holding bin/nvcc), e.g. `export {0}=/usr/local/cuda-13.0`, or unset it",
                v.name()
            ),
        }
    }
}

fn quoted(value: &OsStr) -> String {
    format!("`{}`", value.to_string_lossy())
}

impl Search<'_> {
    /// Validates a root given explicitly; every way it can be wrong is an error.
    pub(super) fn explicit_root_candidate(
        &mut self,
        what: &Setting,
        value: &OsStr,
    ) -> Result<Candidate, Error> {
        let name = what.name();
        let bad = |msg: String| Error::new("cuda-home-invalid", msg).with_help(what.fix_hint());
        if value.to_string_lossy().trim().is_empty() {
            return Err(bad(format!(
                "{name} is set to an empty string; expected the CUDA toolkit's root directory"
            ))
            .with_help(format!(
                "an empty {name} is not the same as an unset one: `unset {name}`"
            )));
        }
        let root = PathBuf::from(value);
        if root.is_relative() {
            return Err(bad(format!(
                "{name} is the relative path {}; expected an absolute path (build scripts run in another directory)",
                quoted(value)
            )));
        }
        match std::fs::symlink_metadata(&root) {
            Err(_) => {
                return Err(bad(format!(
                    "{name} is set to {}, which does not exist",
                    quoted(value)
                )))
            }
            Ok(m) if m.file_type().is_symlink() && !root.exists() => {
                let target = std::fs::read_link(&root).unwrap_or_default();
                return Err(bad(format!(
                    "{name} is set to {}, a symlink to `{}`, which does not exist",
                    quoted(value),
                    target.display()
                )));
            }
            Ok(_) if root.is_file() => {
                let mut e = bad(format!(
                    "{name} is set to {}, which is a file; expected the toolkit's root directory",
                    quoted(value)
                ));
                if root.file_name() == Some(OsStr::new("nvcc")) {
                    e = e.with_help(format!("to name nvcc itself, use NVCC={}", root.display()));
                    if let Some(top) = root.parent().and_then(Path::parent) {
                        e = e.with_help(format!("or set {name}={}", top.display()));
                    }
                }
                return Err(e);
            }
            Ok(_) => {}
        }
        let nvcc = windows::nvcc_under(&root);
        if !nvcc.is_file() {
            let mut e = bad(format!(
                "{name} is set to {}, which has no bin/nvcc",
                quoted(value)
            ));
            if root.join("nvcc").is_file() {
                if let Some(parent) = root.parent() {
                    e = e.with_help(format!(
                        "it looks like the bin directory: set {name}={}",
                        parent.display()
                    ));
                }
            }
            for sub in wheel_dirs(&root.join("nvidia")) {
                e = e.with_help(format!(
                    "it looks like a Python site-packages: set {name}={}",
                    sub.display()
                ));
            }
            return Err(e);
        }
        let c = self.candidate(&nvcc, what.found_via(), Extras::default(), true);
        check_usable(&c, &name)?;
        Ok(c)
    }

    /// NVCC: a path to nvcc, or a bare name looked up on PATH.
    pub(super) fn nvcc_var_candidate(&mut self, value: &OsStr) -> Result<Candidate, Error> {
        let text = value.to_string_lossy();
        let bad = |msg: String| {
            Error::new("cuda-home-invalid", msg).with_help(
                "set NVCC to the nvcc executable (e.g. `export NVCC=/usr/local/cuda-13.0/bin/nvcc`), or unset it",
            )
        };
        if text.trim().is_empty() {
            return Err(
                bad("NVCC is set to an empty string; expected the path of nvcc".into())
                    .with_help("an empty NVCC is not the same as an unset one: `unset NVCC`"),
            );
        }
        let path = PathBuf::from(value);
        let nvcc = if path.components().count() == 1 && path.is_relative() {
            match self.which(value) {
                Some(p) => p,
                None => {
                    return Err(bad(format!(
                        "NVCC is set to {}, which is not on PATH",
                        quoted(value)
                    )))
                }
            }
        } else if path.is_relative() {
            return Err(bad(format!(
                "NVCC is the relative path {}; expected an absolute path (build scripts run in another directory)",
                quoted(value)
            )));
        } else {
            path
        };
        if !nvcc.exists() {
            let mut e = bad(format!(
                "NVCC is set to {}, which does not exist",
                quoted(value)
            ));
            if text.contains(char::is_whitespace) {
                e = e.with_help("NVCC is one path, not a command line; to run nvcc under a compiler cache set CUDA_BUILD_WRAPPER=sccache");
            }
            return Err(e);
        }
        if nvcc.is_dir() {
            return Err(bad(format!(
                "NVCC is set to {}, which is a directory; expected the nvcc executable",
                quoted(value)
            ))
            .with_help(format!(
                "to name the toolkit root, use CUDA_HOME={}",
                nvcc.display()
            )));
        }
        let c = self.candidate(
            &nvcc,
            FoundVia::EnvVar("NVCC".into()),
            Extras::default(),
            true,
        );
        check_usable(&c, "NVCC")?;
        Ok(c)
    }

    fn which(&self, name: &OsStr) -> Option<PathBuf> {
        self.env.which(&name.to_string_lossy())
    }
}

/// An explicit setting whose nvcc does not run is an error, not a candidate.
fn check_usable(c: &Candidate, setting: &str) -> Result<(), Error> {
    if let Some(p) =
        c.tk.problems
            .iter()
            .find(|p| NVCC_UNUSABLE.contains(&p.code))
    {
        let mut e = Error::new(p.code, format!("{setting}: {}", p.message));
        if let Some(fix) = &p.fix {
            e = e.with_help(fix.clone());
        }
        return Err(e.with_help(format!(
            "or unset {setting} to let cuda-build search for a toolkit"
        )));
    }
    Ok(())
}

/// A variable that named a usable toolkit.
pub(super) struct Named {
    var: Var,
    /// The resolved nvcc (what makes two toolkits the same).
    key: PathBuf,
    root: PathBuf,
    version: Option<semver::Version>,
}

impl Named {
    pub(super) fn of(var: Var, c: &Candidate) -> Named {
        Named {
            var,
            key: c.key.clone(),
            root: c.tk.root.clone(),
            version: c.tk.version.clone(),
        }
    }
}

/// NVCC, CUDA_HOME, CUDA_TOOLKIT_PATH, CUDACXX… naming different toolkits:
/// one warning that names every variable, the toolkit and release each
/// names, which one wins here, and who reads the others.
pub(super) fn variable_conflicts(named: &[Named]) -> Vec<Problem> {
    let Some(first) = named.first() else {
        return Vec::new();
    };
    // Groups of variables naming one toolkit, in precedence order.
    let mut groups: Vec<Vec<&Named>> = Vec::new();
    for n in named {
        match groups.iter_mut().find(|g| g[0].key == n.key) {
            Some(g) => g.push(n),
            None => groups.push(vec![n]),
        }
    }
    if groups.len() < 2 {
        return Vec::new();
    }
    let names = |g: &[&Named]| -> String {
        let v: Vec<&str> = g.iter().map(|n| n.var.name()).collect();
        match v.as_slice() {
            [one] => one.to_string(),
            [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
            [] => String::new(),
        }
    };
    let described: Vec<String> = groups
        .iter()
        .map(|g| {
            format!(
                "{} {} `{}` (CUDA {})",
                names(g),
                if g.len() == 1 { "names" } else { "name" },
                g[0].root.display(),
                g[0].version
                    .as_ref()
                    .map_or("of unknown version".to_string(), |v| v.to_string())
            )
        })
        .collect();
    let losers: Vec<&Named> = groups[1..].iter().flatten().copied().collect();
    let readers: Vec<String> = losers
        .iter()
        .map(|n| {
            format!(
                "{} ({})",
                n.var.name(),
                crate::interop::consumers::readers(n.var)
            )
        })
        .collect();
    let loser_names: Vec<&str> = losers.iter().map(|n| n.var.name()).collect();
    vec![Problem {
        code: "toolkit-env-conflict",
        severity: Severity::Warning,
        message: format!(
            "the CUDA variables name {} different toolkits: {}. {} wins here, but the tools that read {} use another toolkit",
            groups.len(),
            described.join("; "),
            first.var.name(),
            readers.join(", "),
        ),
        fix: Some(format!(
            "point every one at `{}` (`cargo cuda env --write` records it for cargo, or `eval \"$(cargo cuda env --shell)\"`), or unset {}",
            first.root.display(),
            loser_names.join(" ")
        )),
    }]
}

impl Search<'_> {
    /// CMake's CUDACXX: the path of nvcc, optionally followed by arguments
    /// (CMake passes those on; they are not read here). `Ok(None)` when it is
    /// blank ([`crate::env::Env::check`] says so); a warning when it names
    /// no working nvcc (CMake may compile CUDA with clang, so it is not an
    /// error here).
    pub(super) fn cudacxx_candidate(
        &mut self,
        value: &OsStr,
    ) -> Result<Option<Candidate>, Problem> {
        let text = value.to_string_lossy();
        let Some(first) = text.split_whitespace().next() else {
            return Ok(None);
        };
        let warn = |msg: String| {
            Problem {
            code: "cuda-home-invalid",
            severity: Severity::Warning,
            message: format!(
                "{msg}; expected the path of nvcc (e.g. CUDACXX=/usr/local/cuda-13.0/bin/nvcc), so cuda-build ignores CUDACXX"
            ),
            fix: Some(
                "point CUDACXX at the selected nvcc (`cargo cuda env --write` does), or unset it".into(),
            ),
        }
        };
        let given = PathBuf::from(first);
        let path = if given.components().count() == 1 && given.is_relative() {
            match self.which(OsStr::new(first)) {
                Some(p) => p,
                None => {
                    return Err(warn(format!(
                        "CUDACXX={} names `{first}`, which is not on PATH",
                        quoted(value)
                    )))
                }
            }
        } else if given.is_relative() {
            return Err(warn(format!(
                "CUDACXX={} is a relative path (build scripts run in another directory)",
                quoted(value)
            )));
        } else {
            given
        };
        if !path.is_file() {
            return Err(warn(format!(
                "CUDACXX={} names `{}`, which is not a file",
                quoted(value),
                path.display()
            )));
        }
        let c = self.candidate(
            &path,
            FoundVia::EnvVar("CUDACXX".into()),
            Extras::default(),
            true,
        );
        if let Some(p) =
            c.tk.problems
                .iter()
                .find(|p| NVCC_UNUSABLE.contains(&p.code))
        {
            return Err(warn(format!(
                "CUDACXX={} is not a working nvcc ({})",
                quoted(value),
                p.message
            )));
        }
        Ok(Some(c))
    }
}
