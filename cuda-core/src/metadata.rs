//! `[package.metadata.cuda]` in Cargo.toml: what a project asks of its CUDA build.
//!
//! ```toml
//! [package.metadata.cuda]
//! toolkit = ">=12.4"          # a semver requirement on the toolkit (nvcc) version
//! arch = "80;90"              # the arch list (any spelling `arch` parses), or ["sm_80", "sm_90"]
//! fallback-arch = "80"        # used when no GPU can be detected
//! ```
//!
//! Any other key is reported as a warning naming the nearest known key
//! ([`CudaMetadata::warnings`]): a misspelled `archs` must not be ignored in silence.

use std::path::Path;

use crate::Error;

/// The `[package.metadata.cuda]` table, all keys optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CudaMetadata {
    /// `toolkit`: the versions of the CUDA toolkit this project builds with.
    pub toolkit: Option<semver::VersionReq>,
    /// `arch`: the GPU targets (a string, or an array of strings joined with `,`).
    pub arch: Option<String>,
    /// `fallback-arch`: targets used when no GPU is detected.
    pub fallback_arch: Option<String>,
    /// `cutlass`: the CUTLASS version (`"4.2"`) that `cargo cuda deps fetch` puts in the store.
    pub cutlass: Option<String>,
    /// One line per unknown key, naming the file and the nearest known key.
    pub warnings: Vec<String>,
}

/// The keys `[package.metadata.cuda]` understands.
pub const KEYS: [&str; 6] = [
    "toolkit",
    "arch",
    "fallback-arch",
    "cutlass",
    "wrapper",
    "deploy",
];

/// The known key nearest to `key` (edit distance at most 3, or the same
/// letters with `_` for `-`), for "did you mean" hints.
pub fn nearest_key(key: &str) -> Option<&'static str> {
    let k = key.to_ascii_lowercase().replace('_', "-");
    KEYS.iter()
        .map(|known| (edit_distance(&k, known), *known))
        .filter(|(d, _)| *d <= 3)
        .min()
        .map(|(_, known)| known)
}

/// Levenshtein distance over chars (the keys are a few bytes long).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Reads `[package.metadata.cuda]` from `manifest_dir/Cargo.toml`.
///
/// A manifest without the table gives the default (nothing required). A
/// table with a key of the wrong type or an invalid requirement is an error
/// (`metadata-invalid`) naming the file and the key.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("Cargo.toml"),
///     "[package]\nname = \"k\"\n[package.metadata.cuda]\ntoolkit = \">=12.4\"\narch = [\"sm_80\", \"sm_90\"]\n").unwrap();
/// let md = cuda_core::metadata::read(dir.path()).unwrap();
/// assert!(md.toolkit.unwrap().matches(&semver::Version::new(13, 0, 88)));
/// assert_eq!(md.arch.as_deref(), Some("sm_80,sm_90"));
/// ```
pub fn read(manifest_dir: &Path) -> Result<CudaMetadata, Error> {
    let path = manifest_dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        Error::new(
            "metadata-invalid",
            format!("cannot read `{}`: {e}", path.display()),
        )
        .with_help("CARGO_MANIFEST_DIR must name the package directory that holds Cargo.toml")
    })?;
    parse(&text, &path)
}

fn parse(text: &str, path: &Path) -> Result<CudaMetadata, Error> {
    let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        Error::new(
            "metadata-invalid",
            format!("`{}` is not valid TOML", path.display()),
        )
        .with_detail(e.to_string())
        .with_help("fix the TOML syntax (cargo itself will report the same error)")
    })?;
    let Some(table) = doc
        .get("package")
        .and_then(|p| p.get("metadata"))
        .and_then(|m| m.get("cuda"))
    else {
        return Ok(CudaMetadata::default());
    };
    let bad = |key: &str, expected: &str, example: &str| {
        Error::new(
            "metadata-invalid",
            format!(
                "`{key}` under [package.metadata.cuda] in `{}` is not {expected}",
                path.display()
            ),
        )
        .with_help(format!("write it as `{key} = {example}`"))
    };
    let Some(table) = table.as_table() else {
        return Err(Error::new(
            "metadata-invalid",
            format!(
                "[package.metadata.cuda] in `{}` is not a table",
                path.display()
            ),
        )
        .with_help(
            "write it as a table: `[package.metadata.cuda]` followed by `toolkit = \">=12.4\"`",
        ));
    };
    let toolkit = match table.get("toolkit") {
        None => None,
        Some(toml::Value::String(s)) => Some(semver::VersionReq::parse(s.trim()).map_err(|e| {
            bad("toolkit", "a semver requirement", "\">=12.4\"").with_detail(format!("`{s}`: {e}"))
        })?),
        Some(_) => return Err(bad("toolkit", "a string", "\">=12.4\"")),
    };
    let list = |key: &str| -> Result<Option<String>, Error> {
        let example = "\"80;90\" or [\"sm_80\", \"sm_90\"]";
        match table.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(toml::Value::Array(items)) => {
                let parts: Option<Vec<String>> = items
                    .iter()
                    .map(|i| match i {
                        toml::Value::String(s) => Some(s.clone()),
                        toml::Value::Integer(n) => Some(n.to_string()),
                        _ => None,
                    })
                    .collect();
                parts
                    .map(|p| Some(p.join(",")))
                    .ok_or_else(|| bad(key, "a string or an array of strings", example))
            }
            Some(toml::Value::Integer(n)) => Ok(Some(n.to_string())),
            Some(_) => Err(bad(key, "a string or an array of strings", example)),
        }
    };
    let warnings = table
        .keys()
        .filter(|k| !KEYS.contains(&k.as_str()))
        .map(|k| {
            let hint = match nearest_key(k) {
                Some(near) => format!("did you mean `{near}`?"),
                None => format!("known keys: {}", KEYS.join(", ")),
            };
            format!(
                "unknown key `{}` under [package.metadata.cuda] in `{}` is ignored; {hint}",
                k.escape_debug(),
                path.display()
            )
        })
        .collect();
    Ok(CudaMetadata {
        toolkit,
        arch: list("arch")?,
        fallback_arch: list("fallback-arch")?,
        cutlass: match table.get("cutlass") {
            None => None,
            Some(toml::Value::String(s)) => Some(s.trim().to_string()),
            Some(_) => return Err(bad("cutlass", "a string", "\"4.2\"")),
        },
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<CudaMetadata, Error> {
        parse(text, Path::new("/x/Cargo.toml"))
    }

    #[test]
    fn absent_table_is_default() {
        assert_eq!(
            p("[package]\nname = \"a\"\n").unwrap(),
            CudaMetadata::default()
        );
    }

    #[test]
    fn reads_all_keys() {
        let md = p(
            "[package.metadata.cuda]\ntoolkit = \"12.4\"\narch = \"80;90\"\nfallback-arch = 80\n",
        )
        .unwrap();
        let req = md.toolkit.unwrap();
        assert!(req.matches(&semver::Version::new(12, 6, 0)));
        assert!(!req.matches(&semver::Version::new(13, 0, 88)));
        assert_eq!(md.arch.as_deref(), Some("80;90"));
        assert_eq!(md.fallback_arch.as_deref(), Some("80"));
    }

    #[test]
    fn bad_values_name_key_and_file() {
        let e = p("[package.metadata.cuda]\ntoolkit = \"twelve\"\n").unwrap_err();
        assert_eq!(e.code, "metadata-invalid");
        assert!(
            e.message.contains("`toolkit`") && e.message.contains("/x/Cargo.toml"),
            "{e}"
        );
        assert!(e.help[0].contains(">=12.4"));
        let e = p("[package.metadata.cuda]\ntoolkit = 12\n").unwrap_err();
        assert!(e.message.contains("not a string"), "{e}");
        let e = p("[package.metadata.cuda]\narch = [true]\n").unwrap_err();
        assert!(e.message.contains("`arch`"), "{e}");
        let e = p("[package.metadata]\ncuda = 3\n").unwrap_err();
        assert!(e.message.contains("not a table"), "{e}");
        let e = p("[package\n").unwrap_err();
        assert!(e.message.contains("not valid TOML"), "{e}");
    }

    #[test]
    fn unknown_keys_are_warned_about_with_the_nearest_key() {
        let md = p("[package.metadata.cuda]\narchs = \"80\"\ntoolkt = \"12\"\nfallback_arch = \"80\"\ncolour = 1\n").unwrap();
        assert_eq!(md.arch, None, "a misspelled key is not read");
        let w = md.warnings.join("\n");
        assert!(
            w.contains("unknown key `archs`") && w.contains("did you mean `arch`?"),
            "{w}"
        );
        assert!(
            w.contains("`toolkt`") && w.contains("did you mean `toolkit`?"),
            "{w}"
        );
        assert!(
            w.contains("`fallback_arch`") && w.contains("did you mean `fallback-arch`?"),
            "{w}"
        );
        assert!(
            w.contains("`colour`") && w.contains("known keys: toolkit, arch, fallback-arch"),
            "{w}"
        );
        assert!(w.contains("/x/Cargo.toml"), "{w}");
        assert!(p("[package.metadata.cuda]\narch = \"80\"\n")
            .unwrap()
            .warnings
            .is_empty());
    }

    #[test]
    fn missing_manifest_is_an_error() {
        let e = read(Path::new("/nonexistent/dir")).unwrap_err();
        assert!(e.message.contains("/nonexistent/dir/Cargo.toml"), "{e}");
    }
}
