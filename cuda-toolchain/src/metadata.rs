//! `[package.metadata.cuda]` in Cargo.toml: what a project asks of its CUDA build.
//!
//! ```toml
//! [package.metadata.cuda]
//! toolkit = ">=12.4"          # a semver requirement on the toolkit (nvcc) version
//! arch = "80;90"              # the arch list (any spelling `arch` parses), or ["sm_80", "sm_90"]
//! fallback-arch = "80"        # used when no GPU can be detected
//! cutlass = "4.2"             # CUTLASS/CuTe from the nvidia-cutlass wheel: the newest 4.2.x; "4.2.0" pins
//! # cutlass = { commit = "7d49e6c7e2f8896c47f586706e67e1fb215529dc" }   # a commit: the release with its headers (3.5.0.0)
//! # cutlass = { git = "https://github.com/NVIDIA/cutlass", commit = "<full hash>" }   # any commit, fetched with git
//!
//! [package.metadata.cuda.header-deps]   # header-only dependencies, by name
//! mylib = { git = "https://github.com/org/mylib", commit = "<full 40-digit hash>" }
//! cute-dsl = { index = "nvidia-cutlass", version = "4.2" }
//! vendored = { path = "third_party/x/include" }   # relative to Cargo.toml
//! ```
//!
//! `prebuilt` (the kernel images a crate ships, and whether a build uses
//! them) is read by [`prebuilt`].
//!
//! Any other key is reported as a warning naming the nearest known key
//! ([`CudaMetadata::warnings`]): a misspelled `archs` must not be ignored in silence.

use std::path::{Path, PathBuf};

use crate::Error;

pub mod prebuilt;

/// Where a header-only dependency comes from (`Build::header_dep`, or
/// `[package.metadata.cuda.header-deps]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderSource {
    /// A local directory of headers (a vendored submodule); used as an include dir.
    Path(PathBuf),
    /// A git repository at a full commit hash, read from the store
    /// (`cargo cuda deps fetch` puts it there).
    Git {
        /// Repository URL.
        url: String,
        /// The full commit hash.
        commit: String,
    },
    /// A package on the index at a version (`4.2` matches 4.2.0.0), read from the store.
    Index {
        /// Package name, e.g. `nvidia-cutlass`.
        package: String,
        /// Version or version prefix.
        version: String,
    },
}

/// Whether `commit` is a full commit hash (40 hex digits, or 64 for SHA-256
/// repositories): a shorter one can become ambiguous as the repository grows.
pub fn is_full_commit(commit: &str) -> bool {
    matches!(commit.len(), 40 | 64) && commit.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The `[package.metadata.cuda]` table, all keys optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CudaMetadata {
    /// `toolkit`: the versions of the CUDA toolkit this project builds with.
    pub toolkit: Option<semver::VersionReq>,
    /// `arch`: the GPU targets (a string, or an array of strings joined with `,`).
    pub arch: Option<String>,
    /// `fallback-arch`: targets used when no GPU is detected.
    pub fallback_arch: Option<String>,
    /// `cutlass`: the CUTLASS version (`"4.2"`) that `cargo cuda deps fetch`
    /// puts in the store; for `cutlass = { commit = "…" }`, the exact release
    /// whose headers are that commit's (None when it comes from git).
    pub cutlass: Option<String>,
    /// `cutlass = { commit = "…" }` (or `{ git = …, commit = … }`): the commit
    /// as written, lowercase.
    pub cutlass_commit: Option<String>,
    /// Every header-only dependency, by name, in file order: `cutlass = "4.2"`
    /// (as `cutlass`, from `nvidia-cutlass`) and `[package.metadata.cuda.header-deps]`.
    /// A `path` is absolute (relative ones are from the Cargo.toml's directory).
    pub header_deps: Vec<(String, HeaderSource)>,
    /// `prebuilt`: the images `cargo cuda prebuild` ships, and the policy.
    pub prebuilt: Option<prebuilt::Prebuilt>,
    /// One line per unknown key, naming the file and the nearest known key.
    pub warnings: Vec<String>,
}

/// The keys `[package.metadata.cuda]` understands.
pub const KEYS: [&str; 8] = [
    "toolkit",
    "arch",
    "fallback-arch",
    "cutlass",
    "wrapper",
    "deploy",
    "header-deps",
    "prebuilt",
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
/// let md = cuda_toolchain::metadata::read(dir.path()).unwrap();
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
    let bad = |key: &str, expected: &str, example: &str| invalid(path, key, expected, example);
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
    let (cutlass, cutlass_commit, cutlass_source) = match table.get("cutlass") {
        None => (None, None, None),
        Some(toml::Value::String(s)) if is_version(s.trim()) => {
            let v = s.trim().to_string();
            let source = HeaderSource::Index {
                package: crate::cutlass::INDEX_PACKAGE.into(),
                version: v.clone(),
            };
            (Some(v), None, Some(source))
        }
        Some(toml::Value::Table(t)) => {
            let (source, commit) = cutlass_by_commit(t, &bad)?;
            let version = match &source {
                HeaderSource::Index { version, .. } => Some(version.clone()),
                _ => None,
            };
            (version, Some(commit), Some(source))
        }
        Some(_) => {
            return Err(bad(
                "cutlass",
                "a version string or a table with `commit`",
                "\"4.2\" or { commit = \"<full 40-digit hash>\" }",
            ))
        }
    };
    let mut header_deps = Vec::new();
    if let Some(source) = cutlass_source {
        header_deps.push(("cutlass".to_string(), source));
    }
    let base = path.parent().unwrap_or(Path::new("."));
    match table.get("header-deps") {
        None => {}
        Some(toml::Value::Table(deps)) => {
            for (name, value) in deps {
                let dep = header_dep(name, value, base, &bad)?;
                if header_deps.iter().any(|(n, _)| n == name) {
                    return Err(Error::new(
                        "metadata-invalid",
                        format!("header dependency `{name}` is declared twice in `{}`: by `cutlass = ...` and under [package.metadata.cuda.header-deps]", path.display()),
                    )
                    .with_help("keep one: `cutlass = \"4.2\"` is short for `cutlass = { index = \"nvidia-cutlass\", version = \"4.2\" }`"));
                }
                header_deps.push((name.clone(), dep));
            }
        }
        Some(_) => {
            return Err(bad(
                "header-deps",
                "a table",
                "{ mylib = { git = \"https://github.com/org/mylib\", commit = \"<full 40-digit hash>\" } }, or a [package.metadata.cuda.header-deps] section",
            ))
        }
    }
    let prebuilt = table
        .get("prebuilt")
        .map(|v| prebuilt::parse(v, path))
        .transpose()?;
    Ok(CudaMetadata {
        toolkit,
        arch: list("arch")?,
        fallback_arch: list("fallback-arch")?,
        cutlass,
        cutlass_commit,
        header_deps,
        prebuilt,
        warnings,
    })
}

/// `cutlass = { commit = "…" }` or `cutlass = { git = URL, commit = "…" }`:
/// a commit whose headers are a release on the index (see
/// [`crate::cutlass::COMMITS`]) becomes that exact release, fetched from the
/// index; another commit needs the git form, and is then fetched with git.
/// Returns the source and the commit.
fn cutlass_by_commit(
    t: &toml::Table,
    bad: &dyn Fn(&str, &str, &str) -> Error,
) -> Result<(HeaderSource, String), Error> {
    let git_form = format!(
        "{{ git = \"{}\", commit = \"<full 40-digit hash>\" }}",
        crate::cutlass::REPOSITORY
    );
    if let Some(extra) = t.keys().find(|k| !matches!(k.as_str(), "commit" | "git")) {
        return Err(bad(
            "cutlass",
            &format!(
                "a version or a table with `commit` (and `git`): `{}` is not one of them",
                extra.escape_debug()
            ),
            "{ commit = \"<full 40-digit hash>\" }",
        ));
    }
    let commit = match t.get("commit") {
        Some(toml::Value::String(c)) if is_full_commit(c.trim()) => c.trim().to_ascii_lowercase(),
        Some(toml::Value::String(c)) => {
            return Err(bad(
                "cutlass.commit",
                &format!(
                    "a full commit hash (40 hex digits): `{}` is short or not hex",
                    c.escape_debug()
                ),
                "\"<the 40 digits `git rev-parse <ref>` prints>\"",
            ))
        }
        _ => {
            return Err(bad(
                "cutlass",
                "complete: a table form needs `commit`",
                "{ commit = \"<full 40-digit hash>\" }",
            ))
        }
    };
    let url = match t.get("git") {
        None => None,
        Some(toml::Value::String(u)) if !u.trim().is_empty() => Some(u.trim().to_string()),
        Some(_) => {
            return Err(bad(
                "cutlass.git",
                "a repository URL",
                &format!("\"{}\"", crate::cutlass::REPOSITORY),
            ))
        }
    };
    let from_nvidia = url.as_deref().is_none_or(crate::cutlass::is_repository);
    match (crate::cutlass::release_for_commit(&commit), from_nvidia) {
        (Some(version), true) => Ok((
            HeaderSource::Index {
                package: crate::cutlass::INDEX_PACKAGE.into(),
                version: version.into(),
            },
            commit,
        )),
        (_, _) if url.is_some() => Ok((
            HeaderSource::Git {
                url: url.unwrap_or_default(),
                commit: commit.clone(),
            },
            commit,
        )),
        _ => Err(Error::new(
            "metadata-invalid",
            format!(
                "`cutlass = {{ commit = \"{commit}\" }}`: no CUTLASS release on the package index has this commit's headers (the index has nvidia-cutlass {}); this commit needs the git form",
                crate::cutlass::INDEX_RELEASES.join(", ")
            ),
        )
        .with_help(format!("write `cutlass = {}` with this commit: `cargo cuda deps fetch` then fetches it with git (or pin a release: `cutlass = \"3.5.0\"`)", git_form.replace("<full 40-digit hash>", &commit)))),
    }
}

/// A version or version prefix on the index: `4`, `4.2`, `4.2.0.0`.
fn is_version(v: &str) -> bool {
    !v.is_empty()
        && v.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// One entry of `[package.metadata.cuda.header-deps]`.
fn header_dep(
    name: &str,
    value: &toml::Value,
    base: &Path,
    bad: &dyn Fn(&str, &str, &str) -> Error,
) -> Result<HeaderSource, Error> {
    let key = format!("header-deps.{name}");
    let git_example =
        "{ git = \"https://github.com/org/mylib\", commit = \"<full 40-digit hash>\" }";
    let forms = "{ git = \"URL\", commit = \"<full hash>\" }, { index = \"nvidia-cutlass\", version = \"4.2\" } or { path = \"third_party/x/include\" }";
    // The name becomes a store directory and a macro (CUDA_BUILD_DEP_<NAME>).
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(bad(
            &format!("header-deps.\"{}\"", name.escape_debug()),
            "a usable dependency name (letters, digits, `-` and `_`)",
            git_example,
        ));
    }
    let Some(t) = value.as_table() else {
        return Err(bad(&key, "a table", forms));
    };
    let text = |field: &str, example: &str| -> Result<Option<String>, Error> {
        match t.get(field) {
            None => Ok(None),
            Some(toml::Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim().to_string())),
            Some(_) => Err(bad(
                &format!("{key}.{field}"),
                "a non-empty string",
                example,
            )),
        }
    };
    // A moving ref is refused by name: only a full commit pins the headers.
    for moving in ["rev", "branch", "tag"] {
        if t.contains_key(moving) {
            return Err(bad(
                &key,
                &format!("pinned: `{moving}` can move or be ambiguous"),
                git_example,
            )
            .with_help("pin the full commit hash instead (`git rev-parse <ref>` prints it)"));
        }
    }
    let kinds: Vec<&str> = ["git", "index", "path"]
        .into_iter()
        .filter(|k| t.contains_key(*k))
        .collect();
    let allowed: &[&str] = match kinds.as_slice() {
        ["git"] => &["git", "commit"],
        ["index"] => &["index", "version"],
        ["path"] => &["path"],
        [] => return Err(bad(&key, "a table with `git`, `index` or `path`", forms)),
        _ => {
            return Err(bad(
                &key,
                &format!("one source: it has {}", kinds.join(" and ")),
                forms,
            ))
        }
    };
    if let Some(extra) = t.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(bad(
            &key,
            &format!(
                "a table with {} (`{}` is not one of them)",
                allowed.join(" and "),
                extra.escape_debug()
            ),
            forms,
        ));
    }
    match kinds[0] {
        "git" => {
            let url = text("git", "\"https://github.com/org/mylib\"")?.unwrap_or_default();
            let Some(commit) = text("commit", "\"<full 40-digit hash>\"")? else {
                return Err(bad(
                    &key,
                    "pinned: a git dependency needs `commit`",
                    git_example,
                ));
            };
            if !is_full_commit(&commit) {
                return Err(bad(
                    &format!("{key}.commit"),
                    &format!("a full commit hash (40 hex digits): `{commit}` is short or not hex, and a short hash can become ambiguous"),
                    "\"<the 40 digits `git rev-parse <ref>` prints>\"",
                ));
            }
            Ok(HeaderSource::Git {
                url,
                commit: commit.to_ascii_lowercase(),
            })
        }
        "index" => {
            let package = text("index", "\"nvidia-cutlass\"")?.unwrap_or_default();
            let example = "{ index = \"nvidia-cutlass\", version = \"4.2\" }";
            match text("version", "\"4.2\"")? {
                Some(version) if is_version(&version) => {
                    Ok(HeaderSource::Index { package, version })
                }
                Some(_) => Err(bad(
                    &format!("{key}.version"),
                    "a version (`4.2` or `4.2.0.0`)",
                    "\"4.2\"",
                )),
                None => Err(bad(
                    &key,
                    "complete: an index dependency needs `version`",
                    example,
                )),
            }
        }
        _ => {
            let dir = text("path", "\"third_party/x/include\"")?.unwrap_or_default();
            Ok(HeaderSource::Path(base.join(dir)))
        }
    }
}

/// The `metadata-invalid` error for `key` in the manifest at `path`: what
/// was expected, and an example of a value that is.
pub(crate) fn invalid(path: &Path, key: &str, expected: &str, example: &str) -> Error {
    Error::new(
        "metadata-invalid",
        format!(
            "`{key}` under [package.metadata.cuda] in `{}` is not {expected}",
            path.display()
        ),
    )
    .with_help(format!("write it as `{key} = {example}`"))
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

    const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn header_deps_of_every_kind() {
        let md = p(&format!(
            "[package.metadata.cuda]\ncutlass = \"4.2\"\n[package.metadata.cuda.header-deps]\n\
             mylib = {{ git = \"https://example.invalid/mylib\", commit = \"{}\" }}\n\
             cute-dsl = {{ index = \"nvidia-cutlass\", version = \"3.8\" }}\n\
             vendored = {{ path = \"third_party/x/include\" }}\n",
            COMMIT.to_ascii_uppercase()
        ))
        .unwrap();
        assert_eq!(md.cutlass.as_deref(), Some("4.2"));
        assert!(md.warnings.is_empty(), "{:?}", md.warnings);
        let deps: std::collections::BTreeMap<_, _> = md.header_deps.into_iter().collect();
        assert_eq!(
            deps["cutlass"],
            HeaderSource::Index {
                package: "nvidia-cutlass".into(),
                version: "4.2".into()
            }
        );
        assert_eq!(
            deps["mylib"],
            HeaderSource::Git {
                url: "https://example.invalid/mylib".into(),
                commit: COMMIT.into()
            }
        );
        assert_eq!(
            deps["cute-dsl"],
            HeaderSource::Index {
                package: "nvidia-cutlass".into(),
                version: "3.8".into()
            }
        );
        assert_eq!(
            deps["vendored"],
            HeaderSource::Path(PathBuf::from("/x/third_party/x/include"))
        );
    }

    #[test]
    fn cutlass_by_commit_uses_the_release_with_the_same_headers() {
        let cutlass = |body: &str| p(&format!("[package.metadata.cuda]\ncutlass = {body}\n"));
        // A known commit (tag v3.5.0), bare or in the git form: the exact wheel.
        for body in [
            "{ commit = \"7D49E6C7E2F8896C47F586706E67E1FB215529DC\" }",
            "{ git = \"https://github.com/NVIDIA/cutlass.git\", commit = \"7d49e6c7e2f8896c47f586706e67e1fb215529dc\" }",
        ] {
            let md = cutlass(body).unwrap();
            assert_eq!(md.cutlass.as_deref(), Some("3.5.0.0"), "{body}");
            assert_eq!(
                md.cutlass_commit.as_deref(),
                Some("7d49e6c7e2f8896c47f586706e67e1fb215529dc")
            );
            assert_eq!(
                md.header_deps,
                [(
                    "cutlass".to_string(),
                    HeaderSource::Index {
                        package: "nvidia-cutlass".into(),
                        version: "3.5.0.0".into()
                    }
                )]
            );
        }
        // An unknown commit: the git form fetches it with git...
        let other = "7127592069c2fe01b041e174ba4345ef9b279671";
        let md = cutlass(&format!(
            "{{ git = \"https://github.com/NVIDIA/cutlass\", commit = \"{other}\" }}"
        ))
        .unwrap();
        assert_eq!(md.cutlass, None);
        assert!(
            matches!(&md.header_deps[0].1, HeaderSource::Git { commit, .. } if commit == other)
        );
        // ...a known commit of a fork too (its headers may differ)...
        let md = cutlass("{ git = \"https://github.com/me/cutlass\", commit = \"7d49e6c7e2f8896c47f586706e67e1fb215529dc\" }").unwrap();
        assert!(matches!(&md.header_deps[0].1, HeaderSource::Git { .. }));
        // ...and the bare form says plainly that it needs the git form.
        let e = cutlass(&format!("{{ commit = \"{other}\" }}")).unwrap_err();
        assert_eq!(e.code, "metadata-invalid");
        assert!(
            e.message.contains("needs the git form") && e.message.contains("3.5.0.0"),
            "{e}"
        );
        let help = e.help.join("\n");
        assert!(
            help.contains(&format!(
                "cutlass = {{ git = \"https://github.com/NVIDIA/cutlass\", commit = \"{other}\" }}"
            )),
            "{help}"
        );
        // Short hashes and unknown keys are refused by name.
        let e = cutlass("{ commit = \"7d49e6c\" }").unwrap_err();
        assert!(e.message.contains("`cutlass.commit`"), "{e}");
        let e = cutlass("{ tag = \"v3.5.0\" }").unwrap_err();
        assert!(e.message.contains("`tag`"), "{e}");
    }

    #[test]
    fn bad_header_deps_name_the_key_and_give_an_example() {
        let dep = |body: &str| {
            p(&format!(
                "[package.metadata.cuda.header-deps]\nmylib = {body}\n"
            ))
            .unwrap_err()
        };
        let e = dep("{ git = \"https://x/y\", commit = \"0123456\" }");
        assert_eq!(e.code, "metadata-invalid");
        assert!(
            e.message.contains("`header-deps.mylib.commit`")
                && e.message.contains("full commit hash")
                && e.message.contains("ambiguous"),
            "{e}"
        );
        assert!(e.help[0].contains("git rev-parse"), "{e}");
        let e = dep("{ git = \"https://x/y\" }");
        assert!(e.message.contains("needs `commit`"), "{e}");
        let e = dep("{ git = \"https://x/y\", branch = \"main\" }");
        assert!(e.message.contains("`branch` can move"), "{e}");
        let e = dep("{ git = \"https://x/y\", path = \"inc\" }");
        assert!(e.message.contains("one source"), "{e}");
        let e = dep("{ index = \"nvidia-cutlass\", version = \"latest\" }");
        assert!(e.message.contains("`header-deps.mylib.version`"), "{e}");
        assert!(e.help[0].contains("\"4.2\""), "{e}");
        let e = dep("{ index = \"nvidia-cutlass\" }");
        assert!(e.message.contains("needs `version`"), "{e}");
        let e = dep("{ path = \"inc\", version = \"1\" }");
        assert!(e.message.contains("`version` is not one of them"), "{e}");
        let e = dep("\"4.2\"");
        assert!(
            e.message.contains("`header-deps.mylib`") && e.message.contains("not a table"),
            "{e}"
        );
        assert!(e.help[0].contains("git = "), "{e}");
        let e = dep("{ url = \"https://x/y\" }");
        assert!(e.message.contains("`git`, `index` or `path`"), "{e}");
        let e =
            p("[package.metadata.cuda.header-deps]\n\"my lib\" = { path = \"x\" }\n").unwrap_err();
        assert!(e.message.contains("dependency name"), "{e}");
        let e = p("[package.metadata.cuda]\nheader-deps = 3\n").unwrap_err();
        assert!(e.message.contains("`header-deps`"), "{e}");
        let e = p("[package.metadata.cuda]\ncutlass = \"4.2\"\n[package.metadata.cuda.header-deps]\ncutlass = { index = \"nvidia-cutlass\", version = \"3.8\" }\n").unwrap_err();
        assert!(e.message.contains("declared twice"), "{e}");
        let e = p("[package.metadata.cuda]\ncutlass = \"newest\"\n").unwrap_err();
        assert!(e.message.contains("`cutlass`"), "{e}");
    }

    #[test]
    fn missing_manifest_is_an_error() {
        let e = read(Path::new("/nonexistent/dir")).unwrap_err();
        assert!(e.message.contains("/nonexistent/dir/Cargo.toml"), "{e}");
    }
}
