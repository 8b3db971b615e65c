//! `[package.metadata.cuda] prebuilt`: which kernel images a crate ships
//! (what `cargo cuda prebuild` builds), and whether shipped images are used.
//!
//! ```toml
//! [package.metadata.cuda]
//! prebuilt = { arch = "80;86;89;90", targets = ["x86_64-unknown-linux-gnu"], profiles = ["dev", "release"], policy = "prefer" }
//! # or only the policy:
//! prebuilt = "never"
//! ```
//!
//! The policy is the same setting as `CUDA_BUILD_PREBUILT` (the variable wins):
//! `prefer` (the default) uses every shipped image that matches what the build
//! would compile and compiles the rest, `never` always compiles, `require`
//! fails if anything would have to be compiled.

use std::path::Path;

use crate::Error;

/// Whether a build uses the kernel images its package ships.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// Use every matching shipped image, compile the rest.
    #[default]
    Prefer,
    /// Always compile.
    Never,
    /// Fail if anything would have to be compiled.
    Require,
}

impl Policy {
    /// The spellings, as `CUDA_BUILD_PREBUILT` and the metadata take them.
    pub const NAMES: [&'static str; 3] = ["prefer", "never", "require"];

    /// Parses `prefer`, `never` or `require` (any case, trimmed).
    pub fn parse(s: &str) -> Option<Policy> {
        match s.trim().to_ascii_lowercase().as_str() {
            "prefer" => Some(Policy::Prefer),
            "never" => Some(Policy::Never),
            "require" => Some(Policy::Require),
            _ => None,
        }
    }

    /// The spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Prefer => "prefer",
            Policy::Never => "never",
            Policy::Require => "require",
        }
    }
}

/// The `prebuilt` key: what to prebuild, and the policy.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Prebuilt {
    /// `arch`: the arch set the images are built for (any spelling `arch` parses).
    pub arch: Option<String>,
    /// `targets`: target triples (static libraries are per target; device-only
    /// outputs are the same for every target). Empty: the build machine's.
    pub targets: Vec<String>,
    /// `profiles`: cargo profiles to build in (`dev`, `release`, or a custom
    /// one); profile flags such as `-lineinfo` change the images. Empty: both
    /// `dev` and `release`.
    pub profiles: Vec<String>,
    /// `policy`: `prefer`, `never` or `require` (None: not set here).
    pub policy: Option<Policy>,
}

/// Reads the `prebuilt` value: a policy string, or a table.
pub(crate) fn parse(value: &toml::Value, path: &Path) -> Result<Prebuilt, Error> {
    let bad =
        |key: &str, expected: &str, example: &str| super::invalid(path, key, expected, example);
    let policy = |key: &str, v: &toml::Value| -> Result<Policy, Error> {
        v.as_str()
            .and_then(Policy::parse)
            .ok_or_else(|| bad(key, "`prefer`, `never` or `require`", "\"prefer\""))
    };
    let table_example = "{ arch = \"80;86;89;90\", targets = [\"x86_64-unknown-linux-gnu\"] }";
    let t = match value {
        toml::Value::String(_) => {
            return Ok(Prebuilt {
                policy: Some(policy("prebuilt", value)?),
                ..Prebuilt::default()
            })
        }
        toml::Value::Table(t) => t,
        _ => return Err(bad("prebuilt", "a policy string or a table", table_example)),
    };
    let strings = |key: &str, example: &str| -> Result<Vec<String>, Error> {
        match t.get(key) {
            None => Ok(Vec::new()),
            Some(toml::Value::Array(items)) => items
                .iter()
                .map(|i| match i.as_str().map(str::trim) {
                    Some(s) if !s.is_empty() => Ok(s.to_string()),
                    _ => Err(bad(
                        &format!("prebuilt.{key}"),
                        "an array of non-empty strings",
                        example,
                    )),
                })
                .collect(),
            Some(_) => Err(bad(
                &format!("prebuilt.{key}"),
                "an array of strings",
                example,
            )),
        }
    };
    let arch = match t.get("arch") {
        None => None,
        Some(toml::Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Some(toml::Value::Array(_)) => Some(strings("arch", "[\"80\", \"90\"]")?.join(",")),
        Some(toml::Value::Integer(n)) => Some(n.to_string()),
        Some(_) => return Err(bad("prebuilt.arch", "an arch list", "\"80;86;89;90\"")),
    };
    if let Some(a) = &arch {
        crate::arch::parse_arch_list(a).map_err(|e| {
            bad("prebuilt.arch", "an arch list", "\"80;86;89;90\"").with_detail(e.message)
        })?;
    }
    if let Some(extra) = t
        .keys()
        .find(|k| !["arch", "targets", "profiles", "policy"].contains(&k.as_str()))
    {
        return Err(bad(
            "prebuilt",
            &format!(
                "a table of arch, targets, profiles and policy (`{}` is not one of them)",
                extra.escape_debug()
            ),
            table_example,
        ));
    }
    Ok(Prebuilt {
        arch,
        targets: strings("targets", "[\"x86_64-unknown-linux-gnu\"]")?,
        profiles: strings("profiles", "[\"dev\", \"release\"]")?,
        policy: t
            .get("policy")
            .map(|v| policy("prebuilt.policy", v))
            .transpose()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<Prebuilt, Error> {
        let v: toml::Table = text.parse().unwrap();
        parse(&v["prebuilt"], Path::new("/x/Cargo.toml"))
    }

    #[test]
    fn forms() {
        assert_eq!(
            p("prebuilt = \"never\"").unwrap().policy,
            Some(Policy::Never)
        );
        let t = p("prebuilt = { arch = \"80;90\", targets = [\"x86_64-unknown-linux-gnu\"], policy = \"Require\" }")
            .unwrap();
        assert_eq!(t.arch.as_deref(), Some("80;90"));
        assert_eq!(t.targets, ["x86_64-unknown-linux-gnu"]);
        assert_eq!(t.policy, Some(Policy::Require));
        assert!(t.profiles.is_empty());
        assert_eq!(
            p("prebuilt = { arch = [\"80\", \"90\"] }")
                .unwrap()
                .arch
                .as_deref(),
            Some("80,90")
        );
    }

    #[test]
    fn bad_values_name_the_key() {
        for (text, says) in [
            ("prebuilt = \"sometimes\"", "`prebuilt`"),
            ("prebuilt = 3", "a policy string or a table"),
            ("prebuilt = { arch = \"sm_99x\" }", "`prebuilt.arch`"),
            ("prebuilt = { targets = \"x\" }", "`prebuilt.targets`"),
            (
                "prebuilt = { archs = \"80\" }",
                "`archs` is not one of them",
            ),
            ("prebuilt = { policy = \"always\" }", "`prebuilt.policy`"),
        ] {
            let e = p(text).unwrap_err();
            assert_eq!(e.code, "metadata-invalid");
            assert!(e.message.contains(says), "{text}: {e}");
            assert!(e.message.contains("/x/Cargo.toml"), "{e}");
        }
    }
}
