//! Cargo's `[env]` configuration: read like cargo reads it, so the wrapper
//! resolves the toolkit build scripts will see; and written by `cargo cuda
//! env --write`, so plain `cargo`, rust-analyzer and IDEs see it too.
//!
//! Cargo looks for `.cargo/config.toml` (or the older `.cargo/config`) in the
//! current directory and each parent, then in `$CARGO_HOME`; a deeper file
//! wins. An `[env]` entry does not replace a variable already set in the
//! process environment unless it says `force = true`; `relative = true`
//! makes a path relative to the directory holding `.cargo/`.

use std::path::{Path, PathBuf};

use cuda_toolchain::env::Env;
use cuda_toolchain::env::Var;
use cuda_toolchain::Error;

/// One `[env]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvEntry {
    /// The variable's name.
    pub name: String,
    /// Its value (made absolute when `relative = true`).
    pub value: String,
    /// `force = true`: wins over the process environment.
    pub force: bool,
}

/// The config files cargo reads from `cwd`, most important first.
fn config_files(cwd: &Path, env: &Env) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in cwd.ancestors() {
        for name in ["config.toml", "config"] {
            let f = dir.join(".cargo").join(name);
            if f.is_file() {
                files.push(f);
                break;
            }
        }
    }
    let home = env
        .get_nonempty(Var::CargoHome)
        .map(PathBuf::from)
        .or_else(|| {
            env.get_nonempty(Var::Home)
                .map(|h| Path::new(h).join(".cargo"))
        });
    if let Some(home) = home {
        let f = home.join("config.toml");
        if f.is_file() && !files.contains(&f) {
            files.push(f);
        }
    }
    files
}

/// The `[env]` entries cargo applies when run in `cwd` (the first file that
/// sets a name wins). Unreadable files are skipped: cargo reports them itself.
pub fn env_entries(cwd: &Path, env: &Env) -> Vec<EnvEntry> {
    let mut out: Vec<EnvEntry> = Vec::new();
    for file in config_files(cwd, env) {
        let Some(table) = std::fs::read_to_string(&file)
            .ok()
            .and_then(|t| t.parse::<toml_edit::DocumentMut>().ok())
        else {
            continue;
        };
        let Some(entries) = table.get("env").and_then(|e| e.as_table_like()) else {
            continue;
        };
        let base = file
            .parent()
            .and_then(Path::parent)
            .unwrap_or(Path::new("/"));
        for (name, item) in entries.iter() {
            if out.iter().any(|e| e.name == name) {
                continue;
            }
            let (value, force, relative) = if let Some(s) = item.as_str() {
                (s.to_string(), false, false)
            } else if let Some(t) = item.as_table_like() {
                let Some(v) = t.get("value").and_then(|v| v.as_str()) else {
                    continue;
                };
                let flag = |k: &str| t.get(k).and_then(|v| v.as_bool()).unwrap_or(false);
                (v.to_string(), flag("force"), flag("relative"))
            } else {
                continue;
            };
            let value = if relative {
                base.join(value).to_string_lossy().into_owned()
            } else {
                value
            };
            out.push(EnvEntry {
                name: name.to_string(),
                value,
                force,
            });
        }
    }
    out
}

/// `env` with the `[env]` entries cargo would apply to build scripts.
pub fn apply(env: Env, entries: &[EnvEntry]) -> Env {
    let mut env = env;
    for e in entries {
        let Some(var) = Var::ALL.iter().copied().find(|v| v.name() == e.name) else {
            continue;
        };
        if e.force || env.get_os(var).is_none() {
            env = env.set(var, &e.value);
        }
    }
    env
}

/// Sets `vars` in the `[env]` table of `file` (created if missing), keeping
/// the rest of the file as it was; written to a temporary file, then renamed.
pub fn write_env(file: &Path, vars: &[(&str, String)]) -> Result<(), Error> {
    let bad = |what: String| {
        // The flag cannot be carried out; a dedicated code would need a CodeDoc in diagnose/codes.rs.
        Error::new("invalid-argument", what)
            .with_help("fix or remove the file, or set the variables in your shell: eval \"$(cargo cuda env --shell)\"")
    };
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(bad(format!("cannot read `{}`: {e}", file.display()))),
    };
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e| bad(format!("`{}` is not valid TOML: {e}", file.display())))?;
    let env = doc
        .entry("env")
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
    let Some(env) = env.as_table_like_mut() else {
        return Err(bad(format!(
            "`[env]` in `{}` is not a table",
            file.display()
        )));
    };
    for (name, value) in vars {
        env.insert(name, toml_edit::value(value.as_str()));
    }
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|e| bad(format!("cannot create `{}`: {e}", dir.display())))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| bad(format!("cannot write in `{}`: {e}", dir.display())))?;
    std::io::Write::write_all(&mut tmp, doc.to_string().as_bytes())
        .map_err(|e| bad(format!("cannot write `{}`: {e}", file.display())))?;
    tmp.persist(file)
        .map_err(|e| bad(format!("cannot write `{}`: {}", file.display(), e.error)))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_env_like_cargo_and_writes_it_back() {
        let d = tempfile::tempdir().unwrap();
        let sub = d.path().join("crate/src");
        std::fs::create_dir_all(&sub).unwrap();
        let outer = d.path().join(".cargo/config.toml");
        std::fs::create_dir_all(outer.parent().unwrap()).unwrap();
        std::fs::write(
            &outer,
            "# keep me\n[build]\njobs = 1\n[env]\nCUDA_HOME = \"/outer\"\nCUDA_ARCHS = { value = \"86\", force = true }\nNVCC = { value = \"tk/bin/nvcc\", relative = true }\n",
        )
        .unwrap();
        let inner = d.path().join("crate/.cargo/config.toml");
        write_env(&inner, &[("CUDA_HOME", "/inner".into())]).unwrap();
        let entries = env_entries(&sub, &Env::empty());
        let get = |n: &str| entries.iter().find(|e| e.name == n).cloned().unwrap();
        assert_eq!(get("CUDA_HOME").value, "/inner", "the deeper file wins");
        assert!(get("CUDA_ARCHS").force);
        assert_eq!(
            get("NVCC").value,
            d.path().join("tk/bin/nvcc").to_string_lossy()
        );
        let env = apply(
            Env::empty()
                .set(Var::CudaArchs, "70")
                .set(Var::CudaHome, "/shell"),
            &entries,
        );
        assert_eq!(env.get(Var::CudaArchs), Some("86"), "force wins");
        assert_eq!(env.get(Var::CudaHome), Some("/shell"), "the process wins");
        // Writing keeps what was there.
        write_env(&outer, &[("CUDARC_CUDA_VERSION", "13000".into())]).unwrap();
        let text = std::fs::read_to_string(&outer).unwrap();
        assert!(
            text.contains("# keep me") && text.contains("jobs = 1"),
            "{text}"
        );
        assert!(text.contains("CUDARC_CUDA_VERSION = \"13000\""), "{text}");
        assert!(text.contains("CUDA_HOME = \"/outer\""), "{text}");
    }

    #[test]
    fn a_broken_config_is_a_clear_error() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("config.toml");
        std::fs::write(&f, "env = 3\n").unwrap();
        let e = write_env(&f, &[("CUDA_HOME", "/x".into())]).unwrap_err();
        assert!(e.message.contains("is not a table"), "{e}");
        std::fs::write(&f, "[env\n").unwrap();
        let e = write_env(&f, &[("CUDA_HOME", "/x".into())]).unwrap_err();
        assert!(e.message.contains("not valid TOML"), "{e}");
    }
}
