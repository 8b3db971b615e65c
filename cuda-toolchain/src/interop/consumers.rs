//! The crates and tools of one build that look for CUDA on their own: which
//! variables each reads and in which order (from their own sources), what
//! each will see in a given environment, and what to hand each so that it
//! sees the toolkit cuda-build selected.
//!
//! | consumer | reads, in order (source) |
//! |---|---|
//! | cuda-build | [`crate::toolkit::discover`]'s rules |
//! | cudarc 0.19 | `CUDARC_CUDA_VERSION`; a `cuda-XXXXX` feature; with `cuda-version-from-build-system`, `nvcc --version` of the nvcc on PATH; with `fallback-latest`, its newest bindings. Links (only with `dynamic-linking`/`static-linking`) from every set `CUDA_HOME`, `CUDA_PATH`, `CUDA_ROOT`, `CUDA_TOOLKIT_ROOT_DIR` (cudarc 0.19.10 `build.rs`) |
//! | NVIDIA's `cuda-bindings` 0.5 | `CUDA_TOOLKIT_PATH`, then `CUDA_HOME` (the first set, taken as is), else the first of `/usr/local/cuda-13.3`, `-13.2`, `-13`, `/usr/local/cuda`, `/opt/cuda` with a CUDA ≥ 13.0 `cuda.h`; headers from `include/`, then `targets/<dir>/include` for `CARGO_CFG_TARGET_ARCH` (`CUDA_TOOLKIT_TARGET_DIR` names the one `targets/` tree to use); bindgen over `cuda.h` and `curand.h` (cuda-bindings 0.5.0 `build.rs`, `toolkit_target.rs`, `wrapper.h`) |
//! | NVIDIA's `cuda-core` 0.5 | the same, without `/opt/cuda` in its fixed list (cuda-core 0.5.0 `build.rs`) |
//! | CMake (`enable_language(CUDA)`) | `CUDACXX` (first token), else `nvcc` on PATH, else `$CUDA_PATH/bin` (CMake's `CMakeDetermineCUDACompiler.cmake`); read on the first configure only, then cached |

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::env::{Env, Var};
use crate::toolkit::Toolkit;

/// A package of the dependency graph, as `cargo metadata` describes it:
/// the fields consumers are recognised by.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Package {
    /// The package name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// `repository` from its manifest.
    pub repository: Option<String>,
    /// The features enabled in this build (cargo's resolve).
    pub features: Vec<String>,
    /// Names of its normal dependencies.
    pub dependencies: Vec<String>,
    /// Names of its build dependencies.
    pub build_dependencies: Vec<String>,
    /// The directory of its Cargo.toml.
    pub manifest_dir: PathBuf,
}

/// cudarc's features that decide what it builds for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct CudarcFeatures {
    /// A `cuda-XXXXX` feature: the version is fixed.
    pub version: Option<(u32, u32)>,
    /// `cuda-version-from-build-system`: ask `nvcc --version` on PATH.
    pub from_build_system: bool,
    /// `fallback-latest`: its newest bindings when nvcc does not answer.
    pub fallback_latest: bool,
    /// `dynamic-linking` or `static-linking`: it links libraries from a toolkit root.
    pub links: bool,
}

/// Which of NVIDIA's crates (their build scripts differ a little).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum NvidiaCrate {
    /// `cuda-bindings`: bindgen over `cuda.h` and `curand.h`; fails without a toolkit.
    Bindings,
    /// `cuda-core`: reads `cuda.h` for one cfg; quietly skips without a toolkit.
    Core,
}

/// A build script that finds CUDA by its own rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Consumer {
    /// A package that builds kernels with cuda-build.
    CudaBuild,
    /// cudarc.
    Cudarc(CudarcFeatures),
    /// NVIDIA's Rust crates (NVIDIA/cuda-rust).
    Nvidia(NvidiaCrate),
    /// A build script that runs CMake on a CUDA project.
    Cmake,
}

impl Consumer {
    /// What it reads, in order, in one line.
    pub fn reads(&self) -> &'static str {
        match self {
            Consumer::CudaBuild => "NVCC, CUDA_HOME, CUDA_PATH, CUDA_TOOLKIT_PATH, CUDACXX, CUDA_ROOT, CUDA_TOOLKIT_ROOT_DIR, CUDAToolkit_ROOT, then the toolkit store, PATH and the usual install directories",
            Consumer::Cudarc(_) => "CUDARC_CUDA_VERSION, then a cuda-XXXXX feature, then `nvcc --version` on PATH (cuda-version-from-build-system), then its newest bindings (fallback-latest)",
            Consumer::Nvidia(NvidiaCrate::Bindings) => "CUDA_TOOLKIT_PATH, then CUDA_HOME, then /usr/local/cuda-13.3, -13.2, -13, /usr/local/cuda, /opt/cuda (CUDA >= 13.0); CUDA_TOOLKIT_TARGET_DIR picks targets/<dir>",
            Consumer::Nvidia(NvidiaCrate::Core) => "CUDA_TOOLKIT_PATH, then CUDA_HOME, then /usr/local/cuda-13.3, -13.2, -13, /usr/local/cuda (CUDA >= 13.0); CUDA_TOOLKIT_TARGET_DIR picks targets/<dir>",
            Consumer::Cmake => "CUDACXX, then nvcc on PATH, then $CUDA_PATH/bin (first configure only; CMake caches it)",
        }
    }

    /// A short name for listings: `cuda-build`, `cudarc`, `NVIDIA cuda-bindings`, `CMake`.
    pub fn label(&self) -> &'static str {
        match self {
            Consumer::CudaBuild => "cuda-build",
            Consumer::Cudarc(_) => "cudarc",
            Consumer::Nvidia(NvidiaCrate::Bindings) => "NVIDIA cuda-bindings",
            Consumer::Nvidia(NvidiaCrate::Core) => "NVIDIA cuda-core",
            Consumer::Cmake => "CMake",
        }
    }
}

/// Who reads a toolkit variable besides cuda-build, for messages
/// (`CUDA_TOOLKIT_PATH` → `NVIDIA's Rust crates, first`).
pub fn readers(var: Var) -> &'static str {
    match var {
        Var::Nvcc => "cuda-build",
        Var::CudaHome => "PyTorch, NVIDIA's Rust crates, cudarc",
        Var::CudaPath => "the NVIDIA installers, CMake, cuda-pathfinder, cudarc",
        Var::CudaToolkitPath => "NVIDIA's Rust crates, before CUDA_HOME",
        Var::Cudacxx => "CMake",
        Var::CudaRoot | Var::CudaToolkitRootDir => "cudarc, FindCUDA",
        Var::CudaToolkitRoot => "CMake's FindCUDAToolkit",
        _ => "other tools",
    }
}

/// What a package's build script is, as a CUDA consumer (none for most).
///
/// ```
/// use cuda_toolchain::interop::consumers::{classify, Consumer, NvidiaCrate, Package};
/// let p = Package { name: "cuda-bindings".into(), version: "0.5.0".into(),
///                   repository: Some("https://github.com/NVIDIA/cuda-rust".into()), ..Default::default() };
/// assert_eq!(classify(&p), Some(Consumer::Nvidia(NvidiaCrate::Bindings)));
/// ```
pub fn classify(p: &Package) -> Option<Consumer> {
    let nvidia_repo = p
        .repository
        .as_deref()
        .is_some_and(|r| r.contains("NVIDIA/cuda-rust"));
    match p.name.as_str() {
        "cudarc" => return Some(Consumer::Cudarc(cudarc_features(&p.features))),
        "cuda-bindings" => return Some(Consumer::Nvidia(NvidiaCrate::Bindings)),
        "cuda-core" if nvidia_repo => return Some(Consumer::Nvidia(NvidiaCrate::Core)),
        _ => {}
    }
    if p.build_dependencies.iter().any(|d| d == "cuda-build") {
        return Some(Consumer::CudaBuild);
    }
    if p.build_dependencies.iter().any(|d| d == "cmake") && cmake_uses_cuda(&p.manifest_dir) {
        return Some(Consumer::Cmake);
    }
    None
}

/// cudarc's version features from the enabled feature list.
pub fn cudarc_features(features: &[String]) -> CudarcFeatures {
    let mut f = CudarcFeatures::default();
    for name in features {
        match name.as_str() {
            "cuda-version-from-build-system" => f.from_build_system = true,
            "fallback-latest" => f.fallback_latest = true,
            "dynamic-linking" | "static-linking" => f.links = true,
            other => {
                if let Some(v) = other.strip_prefix("cuda-").and_then(parse_cudarc_number) {
                    f.version = Some(f.version.map_or(v, |old| old.max(v)));
                }
            }
        }
    }
    f
}

/// Whether a CMakeLists.txt of the package (its directory, three levels
/// deep) enables CUDA: `enable_language(CUDA)`, `project(… CUDA)`,
/// `find_package(CUDAToolkit)` or the old `find_package(CUDA)`.
fn cmake_uses_cuda(dir: &Path) -> bool {
    fn walk(dir: &Path, depth: u32, seen: &mut u32) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        for e in entries.flatten() {
            *seen += 1;
            if *seen > 2000 {
                return false;
            }
            let path = e.path();
            let name = e.file_name();
            if name == "CMakeLists.txt" {
                let text = std::fs::read(&path).unwrap_or_default();
                let text = String::from_utf8_lossy(&text[..text.len().min(512 * 1024)]);
                if text.contains("CUDA") {
                    return true;
                }
            } else if depth > 0
                && e.file_type().is_ok_and(|t| t.is_dir())
                && !name.to_string_lossy().starts_with('.')
                && name != "target"
                && walk(&path, depth - 1, seen)
            {
                return true;
            }
        }
        false
    }
    walk(dir, 3, &mut 0)
}

/// CUDA versions cudarc 0.19 has bindings for (`SUPPORTED_CUDA_VERSIONS`
/// in its build.rs, 0.19.10): its build script panics on any other
/// `CUDARC_CUDA_VERSION` or nvcc version. Newest first.
pub const CUDARC_VERSIONS: &[(u32, u32)] = &[
    (13, 4),
    (13, 3),
    (13, 2),
    (13, 1),
    (13, 0),
    (12, 9),
    (12, 8),
    (12, 6),
    (12, 5),
    (12, 4),
    (12, 3),
    (12, 2),
    (12, 1),
    (12, 0),
    (11, 8),
    (11, 7),
    (11, 6),
    (11, 5),
    (11, 4),
];

/// `CUDARC_CUDA_VERSION` for a release (`13.0` → `13000`), when cudarc has bindings for it.
///
/// ```
/// use cuda_toolchain::interop::consumers::cudarc_version;
/// assert_eq!(cudarc_version((13, 0)).as_deref(), Some("13000"));
/// assert_eq!(cudarc_version((12, 7)), None);
/// ```
pub fn cudarc_version(release: (u32, u32)) -> Option<String> {
    CUDARC_VERSIONS
        .contains(&release)
        .then(|| format!("{}0{}0", release.0, release.1))
}

/// `13000` → 13.0, as cudarc spells versions (`{major}0{minor}0`); only its own.
fn parse_cudarc_number(s: &str) -> Option<(u32, u32)> {
    CUDARC_VERSIONS
        .iter()
        .copied()
        .find(|r| cudarc_version(*r).as_deref() == Some(s))
}

/// The build being made: the target and the machine running it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildTarget {
    /// The target triple (`aarch64-unknown-linux-gnu`).
    pub triple: String,
    /// The build machine's triple.
    pub host: String,
}

impl BuildTarget {
    fn arch(&self) -> &str {
        self.triple.split('-').next().unwrap_or("")
    }

    fn is_cross(&self) -> bool {
        self.arch() != self.host.split('-').next().unwrap_or("")
    }

    /// NVIDIA's `targets/<dir>` names for this target, most specific first
    /// (cuda-bindings 0.5.0 `toolkit_target.rs`: only Linux has them).
    fn target_dirs(&self) -> &'static [&'static str] {
        if !self.triple.contains("-linux") || self.triple.contains("android") {
            return &[];
        }
        match self.arch() {
            "x86_64" => &["x86_64-linux"],
            "aarch64" => &["sbsa-linux", "aarch64-linux"],
            _ => &[],
        }
    }
}

/// What a consumer will see.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Seen {
    /// The toolkit root it uses (none when it only picks a version).
    pub root: Option<PathBuf>,
    /// The CUDA release it builds for.
    pub release: Option<(u32, u32)>,
    /// Which variable or rule decided.
    pub via: String,
    /// Why its build script fails, when it will.
    pub failure: Option<String>,
}

/// One consumer of the graph, judged against the selected toolkit.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Assessment {
    /// `name version` of the package.
    pub package: String,
    /// What kind of consumer it is.
    pub consumer: Consumer,
    /// What it will see in this environment.
    pub seen: Seen,
    /// Whether that is the selected toolkit (and it can build with it).
    pub agrees: bool,
    /// The variables that make it see the selected toolkit (empty when it
    /// already does, or when no variable can help).
    #[serde(serialize_with = "ser_vars")]
    pub handoff: Vec<(Var, OsString)>,
    /// Why it cannot build with the selected toolkit whatever is handed
    /// to it (a fixed cudarc feature, a missing header), with the fix.
    pub blocked: Option<String>,
}

fn ser_vars<S: serde::Serializer>(v: &[(Var, OsString)], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(v.len()))?;
    for (var, value) in v {
        m.serialize_entry(var.name(), &value.to_string_lossy())?;
    }
    m.end()
}

/// Judges every consumer among `packages` against `selected` in `env`
/// (the build scripts' environment: the process's plus cargo's `[env]`).
pub fn assess(
    packages: &[Package],
    selected: &Toolkit,
    env: &Env,
    target: &BuildTarget,
) -> Vec<Assessment> {
    let mut out = Vec::new();
    for p in packages {
        let Some(consumer) = classify(p) else {
            continue;
        };
        out.push(assess_one(
            format!("{} {}", p.name, p.version),
            consumer,
            selected,
            env,
            target,
        ));
    }
    out
}

/// Judges one consumer.
pub fn assess_one(
    package: String,
    consumer: Consumer,
    selected: &Toolkit,
    env: &Env,
    target: &BuildTarget,
) -> Assessment {
    let release = selected
        .version
        .as_ref()
        .map(|v| (v.major as u32, v.minor as u32));
    let (seen, agrees, handoff, blocked) = match consumer {
        Consumer::CudaBuild => (
            Seen {
                root: Some(selected.root.clone()),
                release,
                via: format!("its discovery ({})", selected.found_via),
                failure: None,
            },
            true,
            Vec::new(),
            None,
        ),
        Consumer::Cudarc(f) => {
            let seen = cudarc_sees(&f, env);
            let version_ok = seen.failure.is_none() && seen.release == release;
            let links_ok = !f.links
                || cudarc_link_roots(env)
                    .iter()
                    .all(|r| same_dir(r, &selected.root));
            let mut handoff = Vec::new();
            let mut blocked = None;
            if !version_ok {
                match (f.version, release.and_then(cudarc_version)) {
                    (Some(fixed), _) => blocked = Some(format!(
                        "its feature cuda-{} fixes CUDA {}.{} (a CUDARC_CUDA_VERSION would enable a second version): change the feature to match CUDA {}, or use cuda-version-from-build-system",
                        cudarc_version(fixed).unwrap_or_default(), fixed.0, fixed.1, show_release(release)
                    )),
                    (None, Some(v)) => handoff.push((Var::CudarcCudaVersion, OsString::from(v))),
                    (None, None) => blocked = Some(format!(
                        "cudarc 0.19 has no bindings for CUDA {}: select a toolkit it supports (11.4-12.6, 12.8-13.4)",
                        show_release(release)
                    )),
                }
            }
            if !links_ok {
                handoff.extend(link_handoff(env, selected));
            }
            (seen, version_ok && links_ok, handoff, blocked)
        }
        Consumer::Nvidia(which) => {
            let seen = nvidia_sees(which, env, target);
            let agrees_root = seen
                .root
                .as_ref()
                .is_some_and(|r| same_dir(r, &selected.root));
            let blocked = nvidia_cannot_use(which, selected, target);
            let mut handoff = Vec::new();
            if !agrees_root || seen.failure.is_some() {
                handoff.push((Var::CudaToolkitPath, selected.root.clone().into_os_string()));
            }
            if let Some(dir) = nvidia_target_dir(selected, target) {
                if env.get(Var::CudaToolkitTargetDir) != Some(dir) {
                    handoff.push((Var::CudaToolkitTargetDir, dir.into()));
                }
            }
            let agrees = handoff.is_empty() && seen.failure.is_none() && blocked.is_none();
            (seen, agrees, handoff, blocked)
        }
        Consumer::Cmake => {
            let seen = cmake_sees(env);
            let agrees = seen.failure.is_none()
                && seen
                    .root
                    .as_ref()
                    .is_some_and(|r| same_dir(r, &selected.root));
            let handoff = if agrees {
                Vec::new()
            } else {
                vec![(Var::Cudacxx, selected.nvcc.clone().into_os_string())]
            };
            (seen, agrees, handoff, None)
        }
    };
    Assessment {
        package,
        consumer,
        seen,
        agrees,
        handoff,
        blocked,
    }
}

/// The variables of every assessment that does not agree, once each (the
/// first value wins): what `cargo cuda build` hands the build.
pub fn handoff(assessments: &[Assessment]) -> Vec<(Var, OsString)> {
    let mut out: Vec<(Var, OsString)> = Vec::new();
    for a in assessments.iter().filter(|a| !a.agrees) {
        for (var, value) in &a.handoff {
            if !out.iter().any(|(v, _)| v == var) {
                out.push((*var, value.clone()));
            }
        }
    }
    out
}

/// Every consumer's variable for `selected`, whatever the graph holds:
/// what `cargo cuda env` writes and `--toolkit` sets. `CUDA_TOOLKIT_TARGET_DIR`
/// only for a cross build whose target tree the toolkit has.
pub fn handoff_all(selected: &Toolkit, target: Option<&BuildTarget>) -> Vec<(Var, OsString)> {
    let mut out = vec![
        (Var::CudaToolkitPath, selected.root.clone().into_os_string()),
        (Var::Cudacxx, selected.nvcc.clone().into_os_string()),
    ];
    let release = selected
        .version
        .as_ref()
        .map(|v| (v.major as u32, v.minor as u32));
    if let Some(v) = release.and_then(cudarc_version) {
        out.push((Var::CudarcCudaVersion, v.into()));
    }
    if let Some(dir) = target.and_then(|t| nvidia_target_dir(selected, t)) {
        out.push((Var::CudaToolkitTargetDir, dir.into()));
    }
    out
}

fn show_release(r: Option<(u32, u32)>) -> String {
    r.map_or("of unknown version".into(), |(a, b)| format!("{a}.{b}"))
}

/// Whether two paths name the same directory (symlinks resolved).
fn same_dir(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    canon(a) == canon(b)
}

/// The version and root an nvcc reports (`nvcc --version`, cached).
fn ask_nvcc(env: &Env, nvcc: &Path) -> Option<((u32, u32), PathBuf)> {
    let text = crate::toolkit::version::cached_output(env, nvcc, &["--version"]).ok()?;
    let v = crate::toolkit::version::parse_tool_version(&text)?;
    let real = std::fs::canonicalize(nvcc).unwrap_or_else(|_| nvcc.to_path_buf());
    let root = real.parent()?.parent()?.to_path_buf();
    Some(((v.major as u32, v.minor as u32), root))
}

fn cudarc_sees(f: &CudarcFeatures, env: &Env) -> Seen {
    if let Some(raw) = env.get_os(Var::CudarcCudaVersion) {
        let value = raw.to_string_lossy();
        return match parse_cudarc_number(&value) {
            Some(r) => Seen {
                release: Some(r),
                via: format!("CUDARC_CUDA_VERSION={value}"),
                ..Seen::default()
            },
            None => Seen {
                via: "CUDARC_CUDA_VERSION".into(),
                failure: Some(format!(
                    "CUDARC_CUDA_VERSION={} is not one of cudarc's versions (such as 13000): its build script panics",
                    crate::env::show_value(&value)
                )),
                ..Seen::default()
            },
        };
    }
    if let Some(r) = f.version {
        return Seen {
            release: Some(r),
            via: format!("its feature cuda-{}", cudarc_version(r).unwrap_or_default()),
            ..Seen::default()
        };
    }
    if !f.from_build_system {
        return Seen {
            via: "no version feature".into(),
            failure: Some("neither a cuda-XXXXX feature nor cuda-version-from-build-system is enabled: its build script panics".into()),
            ..Seen::default()
        };
    }
    let asked = env.which("nvcc").map(|n| (ask_nvcc(env, &n), n));
    match asked {
        Some((Some((r, root)), nvcc)) if CUDARC_VERSIONS.contains(&r) => Seen {
            root: Some(root),
            release: Some(r),
            via: format!("`nvcc --version` of {} (PATH)", nvcc.display()),
            failure: None,
        },
        Some((Some((r, root)), nvcc)) => Seen {
            root: Some(root),
            release: Some(r),
            via: format!("`nvcc --version` of {} (PATH)", nvcc.display()),
            failure: Some(format!(
                "cudarc 0.19 has no bindings for CUDA {}.{}: its build script panics",
                r.0, r.1
            )),
        },
        _ if f.fallback_latest => Seen {
            release: Some(CUDARC_VERSIONS[0]),
            via: "fallback-latest (no nvcc on PATH answered)".into(),
            ..Seen::default()
        },
        _ => Seen {
            via: "cuda-version-from-build-system".into(),
            failure: Some(
                "no nvcc on PATH answers `nvcc --version` and fallback-latest is off: its build script panics"
                    .into(),
            ),
            ..Seen::default()
        },
    }
}

/// The roots cudarc links from when it links (every set one of its variables).
fn cudarc_link_roots(env: &Env) -> Vec<PathBuf> {
    [
        Var::CudaHome,
        Var::CudaPath,
        Var::CudaRoot,
        Var::CudaToolkitRootDir,
    ]
    .iter()
    .filter_map(|v| env.get_nonempty(*v))
    .map(PathBuf::from)
    .collect()
}

/// Points every set link variable of cudarc (or CUDA_HOME) at the selected root.
fn link_handoff(env: &Env, selected: &Toolkit) -> Vec<(Var, OsString)> {
    let set: Vec<Var> = [
        Var::CudaHome,
        Var::CudaPath,
        Var::CudaRoot,
        Var::CudaToolkitRootDir,
    ]
    .into_iter()
    .filter(|v| env.get_nonempty(*v).is_some())
    .collect();
    let vars = if set.is_empty() {
        vec![Var::CudaHome]
    } else {
        set
    };
    vars.into_iter()
        .map(|v| (v, selected.root.clone().into_os_string()))
        .collect()
}

/// `#define CUDA_VERSION 13000` in a cuda.h → (13, 0).
fn cuda_h_release(cuda_h: &Path) -> Option<(u32, u32)> {
    let text = std::fs::read_to_string(cuda_h).ok()?;
    text.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        match (w.next(), w.next(), w.next()) {
            (Some("#define"), Some("CUDA_VERSION"), Some(v)) => {
                let n: u32 = v.parse().ok()?;
                Some((n / 1000, (n % 1000) / 10))
            }
            _ => None,
        }
    })
}

/// NVIDIA's include candidates under a root: `CUDA_TOOLKIT_TARGET_DIR`'s
/// tree alone when set, else `include/` then the target's `targets/<dir>/include`.
fn nvidia_includes(root: &Path, env: &Env, target: &BuildTarget) -> Vec<PathBuf> {
    if let Some(dir) = env.get_nonempty(Var::CudaToolkitTargetDir) {
        return vec![root.join("targets").join(dir.trim()).join("include")];
    }
    let mut out = vec![root.join("include")];
    out.extend(
        target
            .target_dirs()
            .iter()
            .map(|d| root.join("targets").join(d).join("include")),
    );
    out
}

/// NVIDIA's floor: `MIN_CUDA_VERSION = 13000`.
const NVIDIA_MIN: (u32, u32) = (13, 0);

/// Checks one root the way NVIDIA's build scripts do: a `cuda.h` in an
/// include candidate, of CUDA 13.0 or newer.
fn nvidia_validate(root: &Path, env: &Env, target: &BuildTarget) -> Result<(u32, u32), String> {
    if !root.is_dir() {
        return Err(format!("`{}` is not a directory", root.display()));
    }
    let candidates = nvidia_includes(root, env, target);
    let Some(cuda_h) = candidates
        .iter()
        .map(|d| d.join("cuda.h"))
        .find(|h| h.is_file())
    else {
        return Err(format!("`{}` has no cuda.h", root.display()));
    };
    match cuda_h_release(&cuda_h) {
        Some(r) if r >= NVIDIA_MIN => Ok(r),
        Some(r) => Err(format!(
            "`{}` is CUDA {}.{}, below the 13.0 these crates require",
            root.display(),
            r.0,
            r.1
        )),
        None => Err(format!("`{}` declares no CUDA_VERSION", cuda_h.display())),
    }
}

fn nvidia_sees(which: NvidiaCrate, env: &Env, target: &BuildTarget) -> Seen {
    for var in [Var::CudaToolkitPath, Var::CudaHome] {
        let Some(value) = env.get_os(var) else {
            continue;
        };
        let root = PathBuf::from(value);
        if value.is_empty() {
            return Seen {
                via: format!("{} (set but empty)", var.name()),
                failure: Some(format!(
                    "{} is set to an empty string: its build script stops",
                    var.name()
                )),
                ..Seen::default()
            };
        }
        return match nvidia_validate(&root, env, target) {
            Ok(r) => Seen {
                root: Some(root),
                release: Some(r),
                via: var.name().to_string(),
                failure: None,
            },
            Err(why) => Seen {
                root: Some(root),
                release: None,
                via: var.name().to_string(),
                failure: Some(format!("{}: {why}", var.name())),
            },
        };
    }
    let fixed: &[&str] = match which {
        NvidiaCrate::Bindings => &[
            "/usr/local/cuda-13.3",
            "/usr/local/cuda-13.2",
            "/usr/local/cuda-13",
            "/usr/local/cuda",
            "/opt/cuda",
        ],
        NvidiaCrate::Core => &[
            "/usr/local/cuda-13.3",
            "/usr/local/cuda-13.2",
            "/usr/local/cuda-13",
            "/usr/local/cuda",
        ],
    };
    for dir in fixed {
        let root = env.sys_path(dir);
        if let Ok(r) = nvidia_validate(&root, env, target) {
            return Seen {
                root: Some(root),
                release: Some(r),
                via: format!("{dir} (first usable entry of its fixed list; CUDA_TOOLKIT_PATH and CUDA_HOME are unset)"),
                failure: None,
            };
        }
    }
    Seen {
        via: "its fixed list (CUDA_TOOLKIT_PATH and CUDA_HOME are unset)".into(),
        failure: Some(match which {
            NvidiaCrate::Bindings => "no CUDA 13.0+ toolkit in /usr/local/cuda-13.3, -13.2, -13, /usr/local/cuda or /opt/cuda: its build script stops".into(),
            NvidiaCrate::Core => "no CUDA 13.0+ toolkit in its fixed list: it builds without its multicast API".into(),
        }),
        ..Seen::default()
    }
}

/// For a cross build, the `targets/<dir>` of the selected toolkit that holds
/// the target's headers (what `CUDA_TOOLKIT_TARGET_DIR` should name).
fn nvidia_target_dir(selected: &Toolkit, target: &BuildTarget) -> Option<&'static str> {
    if !target.is_cross() {
        return None;
    }
    target.target_dirs().iter().copied().find(|d| {
        selected
            .root
            .join("targets")
            .join(d)
            .join("include")
            .join("cuda.h")
            .is_file()
    })
}

/// Why NVIDIA's crate cannot build with `selected` even when pointed at it.
fn nvidia_cannot_use(
    which: NvidiaCrate,
    selected: &Toolkit,
    target: &BuildTarget,
) -> Option<String> {
    let env = Env::empty();
    let dir = nvidia_target_dir(selected, target);
    let env = match dir {
        Some(d) => env.set(Var::CudaToolkitTargetDir, d),
        None => env,
    };
    if let Err(why) = nvidia_validate(&selected.root, &env, target) {
        return Some(format!(
            "{why}: NVIDIA's crates need a CUDA 13.0+ toolkit with cuda.h"
        ));
    }
    if target.is_cross() && dir.is_none() && !target.target_dirs().is_empty() {
        return Some(format!(
            "`{}` has no targets/{}/include: NVIDIA's crates would bind the build machine's headers; install the target's CUDA cross package",
            selected.root.display(),
            target.target_dirs().join(" or targets/")
        ));
    }
    if which == NvidiaCrate::Bindings {
        let include = nvidia_includes(&selected.root, &env, target)
            .into_iter()
            .find(|d| d.join("cuda.h").is_file())?;
        if !include.join("curand.h").is_file() {
            return Some(format!(
                "cuda-bindings binds curand.h, which `{}` lacks: install the cuRAND headers (`cargo cuda toolkit install {} --with curand`, or the distribution's libcurand-dev)",
                include.display(),
                selected
                    .version
                    .as_ref()
                    .map_or("13.0".to_string(), |v| format!("{}.{}", v.major, v.minor))
            ));
        }
    }
    None
}

fn cmake_sees(env: &Env) -> Seen {
    if let Some(value) = env.get_nonempty(Var::Cudacxx) {
        let program = PathBuf::from(value.split_whitespace().next().unwrap_or(value));
        let found = if program.components().count() == 1 {
            env.which(&program.to_string_lossy())
        } else {
            program.is_file().then(|| program.clone())
        };
        let Some(path) = found else {
            return Seen {
                via: "CUDACXX".into(),
                failure: Some(format!(
                    "CUDACXX names `{}`, which does not exist: CMake stops (\"Could not find compiler set in environment variable CUDACXX\")",
                    program.display()
                )),
                ..Seen::default()
            };
        };
        return match ask_nvcc(env, &path) {
            Some((r, root)) => Seen {
                root: Some(root),
                release: Some(r),
                via: format!("CUDACXX ({})", path.display()),
                failure: None,
            },
            None => Seen {
                via: format!("CUDACXX ({}, not nvcc)", path.display()),
                ..Seen::default()
            },
        };
    }
    let nvcc = env.which("nvcc").map(|p| (p, "nvcc on PATH")).or_else(|| {
        let p = PathBuf::from(env.get_nonempty(Var::CudaPath)?)
            .join("bin")
            .join("nvcc");
        p.is_file().then_some((p, "$CUDA_PATH/bin/nvcc"))
    });
    match nvcc {
        Some((path, how)) => match ask_nvcc(env, &path) {
            Some((r, root)) => Seen {
                root: Some(root),
                release: Some(r),
                via: format!("{how} ({})", path.display()),
                failure: None,
            },
            None => Seen {
                via: format!("{how} ({})", path.display()),
                failure: Some(format!("`{} --version` does not answer like nvcc", path.display())),
                ..Seen::default()
            },
        },
        None => Seen {
            via: "CUDACXX, PATH and CUDA_PATH".into(),
            failure: Some("CUDACXX is unset and no nvcc is on PATH or in $CUDA_PATH/bin: CMake finds no CUDA compiler".into()),
            ..Seen::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cudarc_features_are_read() {
        let f = |names: &[&str]| {
            cudarc_features(&names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        };
        let got = f(&[
            "std",
            "driver",
            "cuda-version-from-build-system",
            "fallback-latest",
            "dynamic-loading",
        ]);
        assert_eq!(
            got,
            CudarcFeatures {
                version: None,
                from_build_system: true,
                fallback_latest: true,
                links: false
            }
        );
        assert_eq!(f(&["cuda-12080", "dynamic-linking"]).version, Some((12, 8)));
        assert!(f(&["cuda-12080", "dynamic-linking"]).links);
        assert_eq!(f(&["cuda-12070"]).version, None, "not a cudarc version");
    }

    #[test]
    fn cudarc_numbers_round_trip() {
        for r in CUDARC_VERSIONS {
            assert_eq!(parse_cudarc_number(&cudarc_version(*r).unwrap()), Some(*r));
        }
        assert_eq!(parse_cudarc_number("1300"), None);
    }

    #[test]
    fn target_dirs_follow_nvidias_table() {
        let t = |triple: &str| BuildTarget {
            triple: triple.into(),
            host: "x86_64-unknown-linux-gnu".into(),
        };
        assert_eq!(
            t("x86_64-unknown-linux-gnu").target_dirs(),
            ["x86_64-linux"]
        );
        assert_eq!(
            t("aarch64-unknown-linux-gnu").target_dirs(),
            ["sbsa-linux", "aarch64-linux"]
        );
        assert!(t("aarch64-linux-android").target_dirs().is_empty());
        assert!(t("x86_64-pc-windows-msvc").target_dirs().is_empty());
        assert!(t("aarch64-unknown-linux-gnu").is_cross());
        assert!(!t("x86_64-unknown-linux-musl").is_cross());
    }
}
