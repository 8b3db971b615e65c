//! From `13.0` to a consistent set of wheels: one compiler release
//! (nvcc, nvvm and crt of exactly the same version), the runtime and CCCL of
//! the same CUDA minor, and optional libraries from the same release day.

use std::collections::BTreeMap;

use cuda_toolchain::Error;
use semver::Version;

use crate::source::{Artifact, Source};

/// What the user asked for: `latest`, `13`, `13.0` or `13.0.88`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spec {
    /// The newest complete release.
    Latest,
    /// A major (`13`), a minor (`13.0`) or an exact compiler version (`13.0.88`).
    Prefix(Vec<u64>),
}

impl Spec {
    /// Parses a version argument; the error names what is accepted.
    pub fn parse(text: &str) -> Result<Spec, Error> {
        let t = text.trim();
        if t.eq_ignore_ascii_case("latest") {
            return Ok(Spec::Latest);
        }
        let parts: Option<Vec<u64>> = t.split('.').map(|p| p.parse().ok()).collect();
        match parts {
            Some(p) if (1..=3).contains(&p.len()) => Ok(Spec::Prefix(p)),
            _ => Err(Error::new(
                "install-bad-version",
                format!("`{text}` is not a CUDA version"),
            )
            .with_help("give `latest`, a major (`13`), a minor (`13.0`) or an exact compiler version (`13.0.88`)")),
        }
    }

    /// Whether a compiler version matches.
    pub fn matches(&self, v: &Version) -> bool {
        match self {
            Spec::Latest => true,
            Spec::Prefix(p) => p
                .iter()
                .zip([v.major, v.minor, v.patch])
                .all(|(a, b)| *a == b),
        }
    }

    fn major(&self) -> Option<u64> {
        match self {
            Spec::Latest => None,
            Spec::Prefix(p) => p.first().copied(),
        }
    }
}

impl std::fmt::Display for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Spec::Latest => f.write_str("latest"),
            Spec::Prefix(p) => {
                let s: Vec<String> = p.iter().map(u64::to_string).collect();
                f.write_str(&s.join("."))
            }
        }
    }
}

/// How a component's versions relate to the compiler's.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Versioning {
    /// Exactly the compiler's version (nvcc, nvvm and crt are built together).
    Compiler,
    /// Its own patch numbers within the compiler's major.minor (runtime, cccl, nvrtc, nvjitlink).
    SameMinor,
    /// Its own numbering (cuBLAS 13.0.2.14, cuRAND 10.4.0.35): the one published with the compiler.
    ReleaseDay,
}

/// A component of the toolkit: its package (13.x names) and `version.json` key.
struct Component {
    key: &'static str,
    package: &'static str,
    json_key: &'static str,
    versioning: Versioning,
}

const REQUIRED: [Component; 5] = [
    Component {
        key: "nvcc",
        package: "nvidia-cuda-nvcc",
        json_key: "cuda_nvcc",
        versioning: Versioning::Compiler,
    },
    Component {
        key: "nvvm",
        package: "nvidia-nvvm",
        json_key: "libnvvm",
        versioning: Versioning::Compiler,
    },
    Component {
        key: "crt",
        package: "nvidia-cuda-crt",
        json_key: "cuda_crt",
        versioning: Versioning::Compiler,
    },
    Component {
        key: "runtime",
        package: "nvidia-cuda-runtime",
        json_key: "cuda_cudart",
        versioning: Versioning::SameMinor,
    },
    Component {
        key: "cccl",
        package: "nvidia-cuda-cccl",
        json_key: "cuda_cccl",
        versioning: Versioning::SameMinor,
    },
];

const OPTIONAL: [Component; 4] = [
    Component {
        key: "cublas",
        package: "nvidia-cublas",
        json_key: "libcublas",
        versioning: Versioning::ReleaseDay,
    },
    Component {
        key: "nvrtc",
        package: "nvidia-cuda-nvrtc",
        json_key: "cuda_nvrtc",
        versioning: Versioning::SameMinor,
    },
    Component {
        key: "curand",
        package: "nvidia-curand",
        json_key: "libcurand",
        versioning: Versioning::ReleaseDay,
    },
    Component {
        key: "nvjitlink",
        package: "nvidia-nvjitlink",
        json_key: "libnvjitlink",
        versioning: Versioning::SameMinor,
    },
];

/// The optional component names `--with` accepts.
pub fn optional_names() -> Vec<&'static str> {
    OPTIONAL.iter().map(|c| c.key).collect()
}

/// Checks `--with` names; the error lists the accepted ones.
pub fn check_with(with: &[String]) -> Result<(), Error> {
    for w in with {
        if !OPTIONAL.iter().any(|c| c.key == w) {
            return Err(Error::new(
                "install-bad-component",
                format!("`--with {w}`: there is no optional component `{w}`"),
            )
            .with_help(format!("choose from: {}", optional_names().join(", "))));
        }
    }
    Ok(())
}

/// One chosen file, with the `version.json` key it is listed under.
#[derive(Debug, Clone)]
pub struct Chosen {
    /// `version.json` key (`cuda_nvcc`, `libnvvm`…).
    pub json_key: String,
    /// The file.
    pub artifact: Artifact,
}

/// A consistent set of files to install.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The compiler version (nvcc = nvvm = crt).
    pub release: Version,
    /// The files, required components first.
    pub files: Vec<Chosen>,
}

/// A version that is a plain release (no `rc`), parsed leniently (`13.3.3.3.1` → 13.3.3).
fn release_version(text: &str) -> Option<Version> {
    if text.chars().any(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    cuda_toolchain::toolkit::version::parse_loose(text)
}

/// Days since 1970-01-01 of an ISO date (`2025-09-04T...`).
fn day_number(iso: &str) -> Option<i64> {
    let mut it = iso.get(..10)?.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, d) = (it.next()??, it.next()??, it.next()??);
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

/// Files of a package grouped by exact version string, releases only.
fn by_version(files: Vec<Artifact>) -> BTreeMap<String, Vec<Artifact>> {
    let mut m: BTreeMap<String, Vec<Artifact>> = BTreeMap::new();
    for f in files {
        m.entry(f.version.clone()).or_default().push(f);
    }
    m
}

fn newest<'a>(
    versions: impl Iterator<Item = (&'a String, &'a Vec<Artifact>)>,
) -> Option<&'a Artifact> {
    versions
        .filter_map(|(v, files)| Some((release_version(v)?, v, files.first()?)))
        .max_by(|a, b| {
            a.0.cmp(&b.0)
                .then(a.1.len().cmp(&b.1.len()))
                .then(a.1.cmp(b.1))
        })
        .map(|(_, _, f)| f)
}

/// Resolves `spec` (plus `with`) to one consistent set of wheels on `source`.
pub fn resolve(source: &dyn Source, spec: &Spec, with: &[String]) -> Result<Resolved, Error> {
    check_with(with)?;
    let index = source.name();
    let nvcc = by_version(source.files(REQUIRED[0].package)?);
    let mut compilers: Vec<(Version, &String)> = nvcc
        .keys()
        .filter_map(|v| Some((release_version(v)?, v)))
        .filter(|(v, _)| spec.matches(v))
        .collect();
    // An exact `13.4.46rc1`-style request is honoured as typed.
    if let Spec::Prefix(p) = spec {
        if compilers.is_empty() && p.len() == 3 {
            compilers.extend(nvcc.keys().filter_map(|v| {
                let parsed = cuda_toolchain::toolkit::version::parse_loose(v)?;
                spec.matches(&parsed).then_some((parsed, v))
            }));
        }
    }
    compilers.sort_by(|a, b| b.0.cmp(&a.0));
    if compilers.is_empty() {
        return Err(not_on_index(source, spec, &nvcc)?);
    }
    let mut others: BTreeMap<&str, BTreeMap<String, Vec<Artifact>>> = BTreeMap::new();
    for c in REQUIRED[1..]
        .iter()
        .chain(OPTIONAL.iter().filter(|c| with.iter().any(|w| w == c.key)))
    {
        others.insert(c.package, by_version(source.files(c.package)?));
    }
    let mut first_gap: Option<String> = None;
    'release: for (release, text) in &compilers {
        let mut files = vec![Chosen {
            json_key: REQUIRED[0].json_key.into(),
            artifact: nvcc[*text][0].clone(),
        }];
        let day = nvcc[*text][0].uploaded.as_deref().and_then(day_number);
        let wanted = REQUIRED[1..]
            .iter()
            .chain(OPTIONAL.iter().filter(|c| with.iter().any(|w| w == c.key)));
        for c in wanted {
            let versions = &others[c.package];
            let pick = match c.versioning {
                Versioning::Compiler => versions.get(*text).and_then(|f| f.first()),
                Versioning::SameMinor => newest(versions.iter().filter(|(v, _)| {
                    release_version(v)
                        .is_some_and(|v| v.major == release.major && v.minor == release.minor)
                })),
                Versioning::ReleaseDay => {
                    let on_day = |max_gap: i64| {
                        newest(versions.iter().filter(move |(_, f)| {
                            let d = f
                                .first()
                                .and_then(|a| a.uploaded.as_deref())
                                .and_then(day_number);
                            matches!((d, day), (Some(d), Some(day)) if (day - d).abs() <= max_gap)
                        }))
                    };
                    on_day(2).or_else(|| {
                        // Else the newest published before the compiler.
                        newest(versions.iter().filter(|(_, f)| {
                            let d = f
                                .first()
                                .and_then(|a| a.uploaded.as_deref())
                                .and_then(day_number);
                            matches!((d, day), (Some(d), Some(day)) if d <= day)
                        }))
                    })
                }
            };
            match pick {
                Some(a) => files.push(Chosen {
                    json_key: c.json_key.into(),
                    artifact: a.clone(),
                }),
                None => {
                    if first_gap.is_none() {
                        let need = match c.versioning {
                            Versioning::Compiler => format!("{}=={text}", c.package),
                            Versioning::SameMinor => {
                                format!("{}=={}.{}.*", c.package, release.major, release.minor)
                            }
                            Versioning::ReleaseDay => {
                                format!("{} published with nvcc {text}", c.package)
                            }
                        };
                        first_gap = Some(need);
                    }
                    continue 'release;
                }
            }
        }
        return Ok(Resolved {
            release: release.clone(),
            files,
        });
    }
    let newest = &compilers[0].1;
    Err(Error::new(
        "install-partial-release",
        format!(
            "CUDA {spec} is on the index `{index}` only in part: nvidia-cuda-nvcc {newest} is there, but not {} (for a runnable linux-{} wheel)",
            first_gap.unwrap_or_default(),
            std::env::consts::ARCH
        ),
    )
    .with_help("a compiler mixed from two releases fails in ptxas, so nothing was installed; choose another version (`cargo cuda toolkit install latest`)")
    .with_help("to install exactly the packages you name anyway: `cargo cuda toolkit install --unchecked --name NAME PKG==VERSION...`"))
}

/// The error for a spec with no matching nvcc: unknown, or a release whose
/// wheels hold only part of a compiler (12.x, 11.x).
fn not_on_index(
    source: &dyn Source,
    spec: &Spec,
    nvcc: &BTreeMap<String, Vec<Artifact>>,
) -> Result<Error, Error> {
    let index = source.name();
    let mut have: Vec<Version> = nvcc.keys().filter_map(|v| release_version(v)).collect();
    have.sort();
    let minors: Vec<String> = {
        let mut m: Vec<String> = have
            .iter()
            .map(|v| format!("{}.{}", v.major, v.minor))
            .collect();
        m.dedup();
        m
    };
    if let Some(major) = spec.major().filter(|&m| m <= 12) {
        let split = format!("nvidia-cuda-nvcc-cu{major}");
        let parts = by_version(source.files(&split)?);
        if let Some(v) = parts
            .keys()
            .filter_map(|v| release_version(v).map(|p| (p, v)))
            .filter(|(p, _)| spec.matches(p))
            .max_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, v)| v.clone())
        {
            return Ok(Error::new(
                "install-partial-release",
                format!(
                    "CUDA {spec} is on the index `{index}` only in part: `{split}=={v}` ships ptxas, nvvm and the crt headers, but no nvcc driver; only the CUDA 13.x wheels form a complete compiler"
                ),
            )
            .with_help(format!(
                "for a complete CUDA {spec}: NVIDIA's redistributable archives (https://developer.download.nvidia.com/compute/cuda/redist/, per-release manifest redistrib_{major}.X.Y.json), the runfile or distro installer, or conda's `cuda-nvcc={spec}` package"
            ))
            .with_help(format!(
                "for its ptxas alone (version-gate tests): `cargo cuda toolkit install --unchecked --name cu{major} {split}=={v}`"
            ))
            .with_help(format!("complete compilers here: {}", minors.join(", "))));
        }
    }
    Ok(Error::new(
        "install-unknown-version",
        format!("the index `{index}` has no CUDA compiler (nvidia-cuda-nvcc) matching `{spec}`"),
    )
    .with_help(if minors.is_empty() {
        "the index has no nvidia-cuda-nvcc wheels for this platform at all: check --index-url / UV_INDEX_URL / PIP_INDEX_URL".to_string()
    } else {
        format!(
            "available: {} (newest {}); e.g. `cargo cuda toolkit install {}`",
            minors.join(", "),
            have.last().map(Version::to_string).unwrap_or_default(),
            minors.last().cloned().unwrap_or_default()
        )
    }))
}

/// Looks up exact `name==version` pins (the `--unchecked` mode).
pub fn exact(source: &dyn Source, pins: &[(String, String)]) -> Result<Vec<Chosen>, Error> {
    let mut out = Vec::new();
    for (name, version) in pins {
        let files = source.files(name)?;
        let Some(a) = files.iter().find(|a| &a.version == version) else {
            let mut have: Vec<&str> = files.iter().map(|a| a.version.as_str()).collect();
            have.dedup();
            return Err(Error::new(
                "install-unknown-version",
                format!(
                    "the index `{}` has no runnable wheel `{name}=={version}`",
                    source.name()
                ),
            )
            .with_help(if have.is_empty() {
                format!("the index has no wheels of `{name}` for this platform")
            } else {
                format!("versions there: {}", have.join(", "))
            }));
        };
        out.push(Chosen {
            json_key: name.replace('-', "_"),
            artifact: a.clone(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        assert_eq!(Spec::parse("latest").unwrap(), Spec::Latest);
        assert_eq!(Spec::parse("13.0").unwrap(), Spec::Prefix(vec![13, 0]));
        let e = Spec::parse("13.x").unwrap_err();
        assert_eq!(e.code, "install-bad-version");
        assert!(Spec::parse("13.0")
            .unwrap()
            .matches(&Version::new(13, 0, 88)));
        assert!(!Spec::parse("13.0")
            .unwrap()
            .matches(&Version::new(13, 1, 80)));
        assert!(Spec::parse("1.2.3.4").is_err());
    }

    #[test]
    fn days() {
        assert_eq!(day_number("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            day_number("2025-09-04T10:00:00Z").unwrap() - day_number("2025-08-04").unwrap(),
            31
        );
        assert_eq!(day_number("junk"), None);
    }
}
