//! Every environment variable `cuda-toolchain` and `cargo-cuda` read, in one place.
//!
//! Code never calls `std::env::var` directly: it asks an [`Env`] for a [`Var`].
//! That keeps the list below complete, lets build scripts emit
//! `cargo:rerun-if-env-changed` for every build input and nothing else
//! ([`Var::is_build_input`], [`emit_rerun_if_env_changed`]), lets every value
//! be checked against what it should look like ([`Env::check`]),
//! and lets tests run against a made-up environment and file-system root
//! without touching the process's own.

pub use crate::error::show_value;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

macro_rules! vars {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal, $role:ident, $kind:ident;)*) => {
        /// An environment variable read by this project.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Var {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Var {
            /// Every variable, in documentation order.
            pub const ALL: &'static [Var] = &[$(Var::$variant,)*];

            /// The variable's name, as set in the environment.
            pub fn name(self) -> &'static str {
                match self { $(Var::$variant => $name,)* }
            }

            /// One line on what the variable does.
            pub fn doc(self) -> &'static str {
                match self { $(Var::$variant => concat!($($doc),*).trim_start(),)* }
            }

            /// Whether a change of the variable can change what a build script
            /// produces. Only these are named in `cargo:rerun-if-env-changed`:
            /// a side channel (a progress file, colours, a cache location)
            /// that differs between `cargo` and `cargo cuda` must not make a
            /// build dirty.
            pub fn is_build_input(self) -> bool {
                match self { $(Var::$variant => Role::$role == Role::input,)* }
            }

            /// What a valid value looks like, for [`Env::check`].
            pub fn kind(self) -> Kind {
                match self { $(Var::$variant => Kind::$kind,)* }
            }
        }
    };
}

#[allow(non_camel_case_types)]
#[derive(PartialEq, Eq)]
enum Role {
    input,
    side,
}

/// The shape of a variable's value, checked by [`Env::check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum Kind {
    /// A file or directory path.
    path,
    /// A program: a path or a name looked up on PATH.
    program,
    /// An arch list (`80;90`, `sm_90a`, `native`).
    archs,
    /// PyTorch's arch list (`8.0;8.6+PTX`, `Ampere`).
    torch_archs,
    /// A switch: `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`.
    flag,
    /// A duration: seconds (`600`), or with a unit (`90s`, `500ms`, `10m`, `1h`).
    seconds,
    /// A positive whole number.
    count,
    /// An amount of memory: bytes, or with a unit (`8G`, `8GiB`, `8GB`, `512M`), or `unlimited`.
    bytes,
    /// Free text, not checked.
    free,
}

vars! {
    /// Path to the nvcc to use. Wins over every other toolkit setting.
    Nvcc = "NVCC", input, path;
    /// Root of the CUDA toolkit (holds bin/nvcc).
    CudaHome = "CUDA_HOME", input, path;
    /// Root of the CUDA toolkit (the Windows installer's name; also read on Linux).
    CudaPath = "CUDA_PATH", input, path;
    /// Root of the CUDA toolkit (NVIDIA's Rust crates' name: cuda-bindings and cuda-core read it before CUDA_HOME).
    CudaToolkitPath = "CUDA_TOOLKIT_PATH", input, path;
    /// CMake's CUDA compiler: the path of nvcc (arguments after it are CMake's, not read here); ignored with a warning when it names another compiler.
    Cudacxx = "CUDACXX", input, program;
    /// Root of the CUDA toolkit (older build systems' name).
    CudaRoot = "CUDA_ROOT", input, path;
    /// Root of the CUDA toolkit (FindCUDA.cmake's name).
    CudaToolkitRootDir = "CUDA_TOOLKIT_ROOT_DIR", input, path;
    /// Root of the CUDA toolkit (FindCUDAToolkit.cmake's name).
    CudaToolkitRoot = "CUDAToolkit_ROOT", input, path;
    /// Searched for nvcc after the explicit variables.
    Path = "PATH", input, free;
    /// An active Python virtual environment; its site-packages may hold nvidia-cuda-nvcc wheels.
    VirtualEnv = "VIRTUAL_ENV", input, path;
    /// An active conda environment; may hold a conda CUDA toolkit or wheels.
    CondaPrefix = "CONDA_PREFIX", input, path;
    /// The python whose site-packages are searched for CUDA wheels (default: python3 on PATH).
    CudaBuildPython = "CUDA_BUILD_PYTHON", input, program;
    /// This project's arch list, e.g. `80;90` or `sm_86,sm_90a` or `native`.
    CudaArchs = "CUDA_ARCHS", input, archs;
    /// CMake's arch list as -sys crates forward it to CMake (`80;90`, `80-real`, `80-virtual`, `native`, `all`, `all-major`); after CUDA_ARCHS, before CUDAARCHS. A value that is not an arch list is ignored with a warning.
    CmakeCudaArchitectures = "CMAKE_CUDA_ARCHITECTURES", input, archs;
    /// CMake's arch list variable, honoured for projects that already set it.
    CmakeCudaArchs = "CUDAARCHS", input, archs;
    /// PyTorch's arch list (`8.0;8.6+PTX`, `;` or spaces, names such as `Ampere`): `X.Y` is SASS only, `+PTX` adds PTX; after CUDAARCHS. A value that is not one is ignored with a warning.
    TorchCudaArchList = "TORCH_CUDA_ARCH_LIST", input, torch_archs;
    /// The compute capability read by candle-style crates, e.g. `90`.
    CudaComputeCap = "CUDA_COMPUTE_CAP", input, archs;
    /// Which GPUs the driver shows; detection honours it.
    CudaVisibleDevices = "CUDA_VISIBLE_DEVICES", input, free;
    /// Host compiler for nvcc (passed as -ccbin).
    NvccCcbin = "NVCC_CCBIN", input, path;
    /// Flags nvcc itself prepends to every command line; part of the cache key.
    NvccPrependFlags = "NVCC_PREPEND_FLAGS", input, free;
    /// Flags nvcc itself appends to every command line; part of the cache key.
    NvccAppendFlags = "NVCC_APPEND_FLAGS", input, free;
    /// Extra nvcc flags for every kernel (FindCUDA's and mistral.rs's name), split at spaces; an arch flag in it is dropped (the arch plan decides), with a warning when it contradicts the plan.
    CudaNvccFlags = "CUDA_NVCC_FLAGS", input, free;
    /// Where the persistent kernel cache lives (default: the user cache dir).
    CudaBuildCacheDir = "CUDA_BUILD_CACHE_DIR", side, path;
    /// Set to 1 to turn the persistent kernel cache off.
    CudaBuildNoCache = "CUDA_BUILD_NO_CACHE", side, flag;
    /// A Redis server as a shared tier behind the kernel cache, `redis://host:port[/db]` (or `redis://:password@host:port`); `cargo cuda build --sccache` sets it from SCCACHE_REDIS_ENDPOINT.
    CudaBuildCacheRedis = "CUDA_BUILD_CACHE_REDIS", side, free;
    /// sccache's Redis backend; `cargo cuda build --sccache` hands it to cuda-build as CUDA_BUILD_CACHE_REDIS when that is unset.
    SccacheRedisEndpoint = "SCCACHE_REDIS_ENDPOINT", side, free;
    /// sccache's local disk cache; `cargo cuda build --sccache` keeps cuda-build's kernel cache in `$SCCACHE_DIR/cuda-build` when CUDA_BUILD_CACHE_DIR is unset, so a shared SCCACHE_DIR shares both.
    SccacheDir = "SCCACHE_DIR", side, path;
    /// A compiler cache (e.g. `sccache`) to run nvcc under.
    CudaBuildWrapper = "CUDA_BUILD_WRAPPER", side, program;
    /// Cargo's compiler wrapper; when it names sccache, nvcc runs under it too.
    RustcWrapper = "RUSTC_WRAPPER", side, free;
    /// Seconds before a hung nvcc, nvidia-smi or driver probe is killed (default 3600 for nvcc, 10 for probes).
    CudaBuildTimeout = "CUDA_BUILD_TIMEOUT", side, seconds;
    /// File that cuda-build appends progress events to, read by `cargo cuda build`.
    CargoCudaProgress = "CARGO_CUDA_PROGRESS", side, free;
    /// The memory a build script's nvcc processes may use at once (`8G`, `16GiB`, `unlimited`); default: 80% of the smaller of MemAvailable and the cgroup's limit. Not a build input: it changes when compiles run, never what they produce.
    CudaBuildMemoryBudget = "CUDA_BUILD_MEMORY_BUDGET", side, bytes;
    /// A directory: each build script writes a report of its kernel compiles there (`cuda-timing-<package>.html` and `.json`); `cargo cuda build --timings` sets it to cargo's `cargo-timings` directory and merges them.
    CudaBuildTimings = "CUDA_BUILD_TIMINGS", side, path;
    /// Executable that answers the driver probe in a child process (set by `cargo cuda`).
    CargoCudaProbe = "CARGO_CUDA_PROBE", side, free;
    /// The arch plan `cargo cuda` resolved, handed to build scripts ([`HandedPlan`](crate::plan::HandedPlan));
    /// used only when it was made from the same inputs the build script sees.
    CargoCudaPlan = "CARGO_CUDA_PLAN", side, free;
    /// File-system root used instead of `/` for probing and discovery (for tests and chroots).
    CargoCudaSysroot = "CARGO_CUDA_SYSROOT", input, path;
    /// Set by docs.rs: build no kernels, generate an empty module.
    DocsRs = "DOCS_RS", input, free;
    /// Parallel jobs when cargo's jobserver is absent.
    NumJobs = "NUM_JOBS", side, count;
    /// Build scripts' output directory.
    OutDir = "OUT_DIR", side, free;
    /// The build script's package directory.
    CargoManifestDir = "CARGO_MANIFEST_DIR", side, free;
    /// The build script's package name (names its timings report).
    CargoPkgName = "CARGO_PKG_NAME", side, free;
    /// The build script's package version (names its module anchors: `Build::stable_module_ids`).
    CargoPkgVersion = "CARGO_PKG_VERSION", side, free;
    /// Home directory, for the default cache location.
    Home = "HOME", side, free;
    /// XDG cache directory, for the default cache location.
    XdgCacheHome = "XDG_CACHE_HOME", side, free;
    /// Where `cargo cuda toolkit install` keeps toolkits (default: `$XDG_DATA_HOME/cargo-cuda`, else `~/.local/share/cargo-cuda`).
    CargoCudaHome = "CARGO_CUDA_HOME", input, path;
    /// XDG data directory, for the default toolkit store.
    XdgDataHome = "XDG_DATA_HOME", side, path;
    /// uv's package index; `cargo cuda toolkit install` downloads from it (wins over PIP_INDEX_URL).
    UvIndexUrl = "UV_INDEX_URL", side, free;
    /// pip's package index; `cargo cuda toolkit install` downloads from it.
    PipIndexUrl = "PIP_INDEX_URL", side, free;
    /// Proxy for https downloads (`cargo cuda toolkit install`).
    HttpsProxy = "HTTPS_PROXY", side, free;
    /// Proxy for https downloads, lowercase spelling.
    HttpsProxyLower = "https_proxy", side, free;
    /// Proxy for http downloads.
    HttpProxy = "HTTP_PROXY", side, free;
    /// Proxy for http downloads, lowercase spelling.
    HttpProxyLower = "http_proxy", side, free;
    /// Hosts reached without the proxy (comma-separated suffixes, or `*`).
    NoProxy = "NO_PROXY", side, free;
    /// Hosts reached without the proxy, lowercase spelling.
    NoProxyLower = "no_proxy", side, free;
    /// Cargo's offline mode: `cargo cuda toolkit install` then uses only what is already in the store.
    CargoNetOffline = "CARGO_NET_OFFLINE", side, free;
    /// Colour control for `cargo cuda` output (always, never, auto).
    CargoTermColor = "CARGO_TERM_COLOR", side, free;
    /// Any value turns colour off.
    NoColor = "NO_COLOR", side, free;
    /// The cargo that `cargo cuda` runs (cargo sets it for subcommands).
    Cargo = "CARGO", side, free;
    /// Cargo's home (default `~/.cargo`); its config.toml's `[env]` is read like cargo does.
    CargoHome = "CARGO_HOME", side, path;
    /// cudarc's build-time CUDA version, e.g. `13000`; `cargo cuda` sets it.
    CudarcCudaVersion = "CUDARC_CUDA_VERSION", side, free;
    /// NVIDIA's Rust crates: the `targets/<dir>` tree of the toolkit to take headers from (`sbsa-linux`); `cargo cuda build --target` sets it for cross builds.
    CudaToolkitTargetDir = "CUDA_TOOLKIT_TARGET_DIR", side, free;
    /// Library search path; `cargo cuda env` extends it.
    LdLibraryPath = "LD_LIBRARY_PATH", side, free;
    /// Set on CI systems; detection then never guesses an arch silently.
    Ci = "CI", side, free;
    /// Directory (or file) of libclang, for the `launchers` feature; read by clang-sys.
    LibclangPath = "LIBCLANG_PATH", input, path;
    /// The llvm-config used to find libclang when LIBCLANG_PATH is unset (default: `llvm-config` on PATH).
    LlvmConfigPath = "LLVM_CONFIG_PATH", input, program;
    /// The target triple cargo builds for (set for build scripts); picks the host compiler and archiver, and `*-msvc` changes nvcc's host flags.
    Target = "TARGET", input, free;
    /// The triple of the machine running the build (set for build scripts).
    Host = "HOST", input, free;
    /// Host C++ compiler, read as cc reads it (also `CXX_<target>`, `HOST_CXX`, `TARGET_CXX`); nvcc gets it as -ccbin.
    Cxx = "CXX", input, program;
    /// Host C++ compiler when the target is the build machine (cc's name).
    HostCxx = "HOST_CXX", input, program;
    /// Host C++ compiler when cross-compiling (cc's name).
    TargetCxx = "TARGET_CXX", input, program;
    /// Archiver for static libraries, read as cc reads it (also `AR_<target>`, `HOST_AR`, `TARGET_AR`).
    Ar = "AR", input, program;
    /// Archiver when the target is the build machine (cc's name).
    HostAr = "HOST_AR", input, program;
    /// Archiver when cross-compiling (cc's name).
    TargetAr = "TARGET_AR", input, program;
    /// NVCC_CCBIN for builds whose target is the build machine (also `NVCC_CCBIN_<target>`).
    HostNvccCcbin = "HOST_NVCC_CCBIN", input, program;
    /// NVCC_CCBIN for cross builds.
    TargetNvccCcbin = "TARGET_NVCC_CCBIN", input, program;
    /// Cargo's profile debug setting (`true`/`false`/`0`-`2`); true adds nvcc's `-lineinfo`.
    Debug = "DEBUG", input, free;
    /// Cargo's profile opt-level (`0`-`3`, `s`, `z`); becomes the host compiler's `-O<n>`.
    OptLevel = "OPT_LEVEL", input, free;
    /// Cargo's rustflags for the target; `Preset::Cc` reads `-C target-cpu` from it, as cc does (cargo reruns on a change itself).
    CargoEncodedRustflags = "CARGO_ENCODED_RUSTFLAGS", side, free;
    /// Set to 1 for device debug code (`-G`, slow kernels) in builds where DEBUG is true.
    CudaBuildDeviceDebug = "CUDA_BUILD_DEVICE_DEBUG", input, flag;
    /// Set to 0 to ignore DEBUG and OPT_LEVEL (no `-lineinfo`, `-G` or host `-O` from the profile).
    CudaBuildProfileFlags = "CUDA_BUILD_PROFILE_FLAGS", input, flag;
    /// Windows: the Program Files directory searched for `NVIDIA GPU Computing Toolkit\CUDA\vX.Y`.
    ProgramFiles = "ProgramFiles", input, path;
    /// Whether the kernel images a package ships are used: `prefer` (default: matching ones, compile the rest), `never`, or `require` (fail if anything would compile); wins over `[package.metadata.cuda] prebuilt`.
    CudaBuildPrebuilt = "CUDA_BUILD_PREBUILT", input, free;
    /// Set by `cargo cuda prebuild`: the staging directory the package's build records its kernel images into.
    CudaBuildPrebuiltRecord = "CUDA_BUILD_PREBUILT_RECORD", side, path;
}

/// The variables that are build inputs ([`Var::is_build_input`]).
pub fn build_inputs() -> impl Iterator<Item = Var> {
    Var::ALL.iter().copied().filter(|v| v.is_build_input())
}

/// Variables whose names are made at run time: read as [`Env::get_named`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VarPattern {
    /// The name as a pattern, e.g. `CXX_<target>`.
    pub pattern: &'static str,
    /// The fixed part every such name starts with.
    pub prefix: &'static str,
    /// One line on what the variable does.
    pub doc: &'static str,
}

/// Every family of variables read under a computed name, in documentation order.
pub const PATTERNS: &[VarPattern] = &[
    VarPattern {
        pattern: "CXX_<target>",
        prefix: "CXX_",
        doc: "Host C++ compiler for one target, as cc reads it (`CXX_aarch64-unknown-linux-gnu` or `CXX_aarch64_unknown_linux_gnu`).",
    },
    VarPattern {
        pattern: "AR_<target>",
        prefix: "AR_",
        doc: "Archiver for one target, as cc reads it.",
    },
    VarPattern {
        pattern: "NVCC_CCBIN_<target>",
        prefix: "NVCC_CCBIN_",
        doc: "NVCC_CCBIN for one target; wins over NVCC_CCBIN and every CXX variable.",
    },
    VarPattern {
        pattern: "CUDA_PATH_V<major>_<minor>",
        prefix: "CUDA_PATH_V",
        doc: "Set by the Windows CUDA installer for each installed release (`CUDA_PATH_V12_4`); searched after CUDA_PATH.",
    },
];

/// The names cc reads for `base` when building for `target` on `host`, most
/// specific first: `BASE_<target>`, `BASE_<target_with_underscores>`,
/// `HOST_BASE` or `TARGET_BASE`, then `BASE`.
///
/// ```
/// let names = cuda_toolchain::env::target_names("CXX", "aarch64-unknown-linux-gnu", "x86_64-unknown-linux-gnu");
/// assert_eq!(names, ["CXX_aarch64-unknown-linux-gnu", "CXX_aarch64_unknown_linux_gnu", "TARGET_CXX", "CXX"]);
/// ```
pub fn target_names(base: &str, target: &str, host: &str) -> Vec<String> {
    let kind = if target == host { "HOST" } else { "TARGET" };
    vec![
        format!("{base}_{target}"),
        format!("{base}_{}", target.replace('-', "_")),
        format!("{kind}_{base}"),
        base.to_string(),
    ]
}

/// Every variable read, as the Markdown table in the crate's front page
/// (cuda-build's `src/env_vars.md`, checked against this list by a unit test).
/// Intra-doc links in the docs name this crate, so they work from cuda-build.
pub fn doc_table() -> String {
    let mut out = String::from("| variable | what it does |\n|---|---|\n");
    for v in Var::ALL {
        out.push_str(&format!(
            "| `{}` | {} |\n",
            v.name(),
            v.doc()
                .replace('|', "\\|")
                .replace("(crate::", "(cuda_toolchain::")
        ));
    }
    for p in PATTERNS {
        out.push_str(&format!(
            "| `{}` | {} |\n",
            p.pattern,
            p.doc.replace('|', "\\|")
        ));
    }
    out
}

/// The triple this code was compiled for, as far as `cfg` tells: the build
/// machine's, for callers that have no `TARGET`/`HOST` (cargo sets those
/// only for build scripts).
pub fn native_triple() -> String {
    let arch = std::env::consts::ARCH;
    match std::env::consts::OS {
        "windows" => format!("{arch}-pc-windows-msvc"),
        "macos" => format!("{arch}-apple-darwin"),
        "linux" => format!("{arch}-unknown-linux-gnu"),
        os => format!("{arch}-unknown-{os}"),
    }
}

/// Prints `cargo:rerun-if-env-changed=NAME` for every build input.
///
/// Build scripts call this once (cuda-build's `Build` does it for you).
pub fn emit_rerun_if_env_changed() {
    for var in build_inputs() {
        println!("cargo:rerun-if-env-changed={}", var.name());
    }
}

/// A view of the environment: variables plus a file-system root.
///
/// [`Env::from_process`] reads the real process environment. Tests build one
/// with [`Env::empty`] and [`Env::set`], and point [`Env::with_root`] at a
/// fake tree so that `/usr/local/cuda` or `/proc/driver/nvidia/version`
/// resolve inside it.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: BTreeMap<Var, OsString>,
    /// Variables of the [`PATTERNS`] families, by full name.
    named: BTreeMap<String, OsString>,
    root: Option<PathBuf>,
}

impl Env {
    /// The process's environment. `CARGO_CUDA_SYSROOT`, when set, becomes the root.
    pub fn from_process() -> Env {
        let mut env = Env::default();
        for &var in Var::ALL {
            if let Some(value) = std::env::var_os(var.name()) {
                env.vars.insert(var, value);
            }
        }
        for (name, value) in std::env::vars_os() {
            if let Some(name) = name.to_str() {
                if PATTERNS.iter().any(|p| name.starts_with(p.prefix)) {
                    env.named.insert(name.to_string(), value);
                }
            }
        }
        if let Some(root) = env.get_os(Var::CargoCudaSysroot) {
            if !root.is_empty() {
                env.root = Some(PathBuf::from(root));
            }
        }
        env
    }

    /// An environment with no variables set and `/` as its root.
    pub fn empty() -> Env {
        Env::default()
    }

    /// Sets a variable (builder style).
    pub fn set(mut self, var: Var, value: impl Into<OsString>) -> Env {
        self.vars.insert(var, value.into());
        self
    }

    /// Removes a variable (builder style).
    pub fn unset(mut self, var: Var) -> Env {
        self.vars.remove(&var);
        self
    }

    /// Uses `root` in place of `/` for fixed system paths.
    pub fn with_root(mut self, root: impl Into<PathBuf>) -> Env {
        self.root = Some(root.into());
        self
    }

    /// The raw value, if the variable is set (even to an empty string).
    pub fn get_os(&self, var: Var) -> Option<&OsStr> {
        self.vars.get(&var).map(|v| v.as_os_str())
    }

    /// The value as UTF-8, if set and valid UTF-8.
    pub fn get(&self, var: Var) -> Option<&str> {
        self.get_os(var).and_then(|v| v.to_str())
    }

    /// The value, treating an unset or all-whitespace variable as absent.
    pub fn get_nonempty(&self, var: Var) -> Option<&str> {
        self.get(var).filter(|v| !v.trim().is_empty())
    }

    /// Whether the variable is set to a true-ish value (`1`, `true`, `yes`, `on`).
    pub fn flag(&self, var: Var) -> bool {
        self.get(var).and_then(parse_flag).unwrap_or(false)
    }

    /// Maps an absolute system path (such as `/usr/local/cuda`) into this env's root.
    ///
    /// ```
    /// use cuda_toolchain::env::Env;
    /// let env = Env::empty().with_root("/tmp/fake");
    /// assert_eq!(env.sys_path("/usr/local/cuda"), std::path::Path::new("/tmp/fake/usr/local/cuda"));
    /// ```
    pub fn sys_path(&self, path: impl AsRef<Path>) -> PathBuf {
        let path = path.as_ref();
        match &self.root {
            Some(root) => root.join(path.strip_prefix("/").unwrap_or(path)),
            None => path.to_path_buf(),
        }
    }

    /// The file-system root in use (`/` unless overridden).
    pub fn root(&self) -> &Path {
        self.root.as_deref().unwrap_or(Path::new("/"))
    }

    /// The one cache directory of cuda-build (kernel objects, tool answers):
    /// `CUDA_BUILD_CACHE_DIR`, else an absolute `$XDG_CACHE_HOME/cuda-build`,
    /// else `$HOME/.cache/cuda-build`. `None` when none of these is set.
    pub fn cache_dir(&self) -> Option<PathBuf> {
        if let Some(dir) = self
            .get_os(Var::CudaBuildCacheDir)
            .filter(|v| !v.is_empty())
        {
            return Some(PathBuf::from(dir));
        }
        // The XDG spec says a relative value is invalid and must be ignored.
        if let Some(x) = self
            .get_os(Var::XdgCacheHome)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
        {
            return Some(x.join("cuda-build"));
        }
        self.get_os(Var::Home)
            .filter(|v| !v.is_empty())
            .map(|h| PathBuf::from(h).join(".cache").join("cuda-build"))
    }

    /// The first executable called `name` on this env's PATH; see [`Env::which_all`].
    pub fn which(&self, name: &str) -> Option<PathBuf> {
        self.which_all(name).into_iter().next()
    }

    /// Every executable called `name` on this env's PATH, in PATH order.
    ///
    /// The one PATH lookup of the workspace. Relative PATH entries (and empty
    /// ones, which mean ".") are skipped: they would run whatever the current
    /// directory holds. On Windows `which` also tries PATHEXT's extensions.
    pub fn which_all(&self, name: &str) -> Vec<PathBuf> {
        let Some(path) = self.get_os(Var::Path) else {
            return Vec::new();
        };
        let absolute: Vec<PathBuf> = std::env::split_paths(path)
            .filter(|d| d.is_absolute())
            .collect();
        let Ok(joined) = std::env::join_paths(&absolute) else {
            return Vec::new();
        };
        match which::which_in_all(name, Some(joined), self.root()) {
            Ok(found) => found.collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Sets a variable by name: a [`Var`]'s name or one of the [`PATTERNS`]
    /// (`CXX_aarch64-unknown-linux-gnu`, `CUDA_PATH_V12_4`). Other names are
    /// ignored, since nothing reads them.
    pub fn set_named(mut self, name: &str, value: impl Into<OsString>) -> Env {
        if let Some(var) = Var::ALL.iter().find(|v| v.name() == name) {
            self.vars.insert(*var, value.into());
        } else if PATTERNS.iter().any(|p| name.starts_with(p.prefix)) {
            self.named.insert(name.to_string(), value.into());
        }
        self
    }

    /// A variable by name: a [`Var`]'s name or one of the [`PATTERNS`].
    pub fn get_named(&self, name: &str) -> Option<&OsStr> {
        match Var::ALL.iter().find(|v| v.name() == name) {
            Some(var) => self.get_os(*var),
            None => self.named.get(name).map(|v| v.as_os_str()),
        }
    }

    /// The first of [`target_names`] that is set and not blank, with its name.
    pub fn get_for_target(&self, base: &str, target: &str, host: &str) -> Option<(String, &str)> {
        target_names(base, target, host)
            .into_iter()
            .find_map(|name| {
                let value = self.get_named(&name)?.to_str()?;
                (!value.trim().is_empty()).then_some((name, value))
            })
    }

    /// The set variables of the [`PATTERNS`] families, by name.
    pub fn iter_named(&self) -> impl Iterator<Item = (&str, &OsStr)> {
        self.named.iter().map(|(k, v)| (k.as_str(), v.as_os_str()))
    }

    /// Every variable that is set, with its value, for reports.
    pub fn iter(&self) -> impl Iterator<Item = (Var, &OsStr)> {
        self.vars.iter().map(|(k, v)| (*k, v.as_os_str()))
    }
}

/// What a `TORCH_CUDA_ARCH_LIST` value looks like (read by `interop::torch`).
pub const TORCH_ARCHS_EXPECTED: &str =
    "PyTorch's form: `X.Y` items (SASS only) or `X.Y+PTX` (SASS and PTX), separated by `;` or spaces, \
    or names such as `Ampere` or `Hopper`, e.g. `8.0;8.6+PTX`";

impl Kind {
    /// What a valid value looks like, in words.
    pub fn expected(self) -> &'static str {
        match self {
            Kind::path => "a path",
            Kind::program => "a program path or a name on PATH",
            Kind::archs => "an arch list such as `80;90`, `sm_90a` or `native`",
            Kind::torch_archs => TORCH_ARCHS_EXPECTED,
            Kind::flag => "`1` or `0` (also true/false, yes/no, on/off)",
            Kind::seconds => {
                "seconds such as `600`, or a number with a unit: `90s`, `500ms`, `10m`, `1h`"
            }
            Kind::count => "a whole number above 0, such as `4`",
            Kind::bytes => {
                "bytes such as `8589934592`, or a number with a unit: `8G` or `8GiB` (2^30), `8GB` (10^9), `512M`, or `unlimited`"
            }
            Kind::free => "any text",
        }
    }
}

/// Reads a switch: `1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off` (any case).
pub fn parse_flag(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Reads a duration: plain seconds (`600`, `2.5`) or a number with a unit
/// (`500ms`, `90s`, `10m`, `1h`). Zero, negative, non-finite and unparsable
/// values give `None`.
///
/// ```
/// use cuda_toolchain::env::parse_seconds;
/// use std::time::Duration;
/// assert_eq!(parse_seconds("10s"), Some(Duration::from_secs(10)));
/// assert_eq!(parse_seconds(" 2m "), Some(Duration::from_secs(120)));
/// assert_eq!(parse_seconds("-1"), None);
/// ```
pub fn parse_seconds(value: &str) -> Option<std::time::Duration> {
    let v = value.trim();
    let (number, scale) = if let Some(n) = v.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = v.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (v, 1.0)
    };
    let n: f64 = number.trim().parse().ok()?;
    let secs = n * scale;
    // NaN, zero and negative values are not durations.
    if secs.is_nan() || secs <= 0.0 {
        return None;
    }
    // `try_`: `1e30` or `inf` must not panic.
    std::time::Duration::try_from_secs_f64(secs).ok()
}

/// Reads an amount of memory in bytes: a whole number of bytes, or a
/// number with a unit: `K`/`M`/`G`/`T` and `KiB`…`TiB` are powers of 1024,
/// `KB`…`TB` powers of 1000 (any case); `unlimited` is `u64::MAX`. Zero is
/// not an amount.
///
/// ```
/// use cuda_toolchain::env::parse_bytes;
/// assert_eq!(parse_bytes("8G"), Some(8 << 30));
/// assert_eq!(parse_bytes("1.5GiB"), Some(3 << 29));
/// assert_eq!(parse_bytes("8GB"), Some(8_000_000_000));
/// assert_eq!(parse_bytes("unlimited"), Some(u64::MAX));
/// assert_eq!(parse_bytes("0"), None);
/// ```
pub fn parse_bytes(value: &str) -> Option<u64> {
    let v = value.trim().to_ascii_lowercase();
    if v == "unlimited" {
        return Some(u64::MAX);
    }
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (number, unit) = v.split_at(split);
    let scale: f64 = match unit.trim() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024f64.powi(2),
        "g" | "gib" => 1024f64.powi(3),
        "t" | "tib" => 1024f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        _ => return None,
    };
    let n: f64 = number.parse().ok()?;
    let bytes = n * scale;
    (bytes.is_finite() && bytes >= 1.0 && bytes < u64::MAX as f64).then(|| bytes.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_documented() {
        let mut names: Vec<_> = Var::ALL.iter().map(|v| v.name()).collect();
        names.sort();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "duplicate variable name");
        for var in Var::ALL {
            assert!(!var.doc().is_empty(), "{} has no doc", var.name());
        }
    }

    /// cuda-build's front page lists every variable: its `src/env_vars.md` is
    /// this list's table. `CUDA_BUILD_UPDATE_DOCS=1 cargo test -p cuda-toolchain env::`
    /// rewrites it.
    #[test]
    fn front_page_table_is_current() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cuda-build/src/env_vars.md");
        let want = format!(
            "\n# Environment variables\n\nEvery variable cuda-build reads (from [`env`](cuda_toolchain::env)):\n\n{}",
            // Rendered in cuda-build's docs, where this crate is `cuda_toolchain`.
            doc_table().replace("(crate::", "(cuda_toolchain::")
        );
        if std::env::var_os("CUDA_BUILD_UPDATE_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "cuda-build/src/env_vars.md is out of date: run CUDA_BUILD_UPDATE_DOCS=1 cargo test -p cuda-toolchain env::"
        );
    }

    #[test]
    fn per_target_names_follow_cc() {
        let env = Env::empty()
            .set(Var::Cxx, "g++")
            .set_named("TARGET_CXX", "t++")
            .set_named("CXX_aarch64_unknown_linux_gnu", "a++");
        let t = "aarch64-unknown-linux-gnu";
        let h = "x86_64-unknown-linux-gnu";
        assert_eq!(
            env.get_for_target("CXX", t, h),
            Some(("CXX_aarch64_unknown_linux_gnu".to_string(), "a++"))
        );
        assert_eq!(
            env.get_for_target("CXX", h, h),
            Some(("CXX".to_string(), "g++"))
        );
        let env = env
            .set_named("CUDA_PATH_V12_4", "C:/cuda")
            .set_named("UNRELATED", "x");
        assert_eq!(
            env.get_named("CUDA_PATH_V12_4"),
            Some(OsStr::new("C:/cuda"))
        );
        assert_eq!(env.get_named("UNRELATED"), None);
    }

    #[test]
    fn empty_string_counts_as_set_but_not_nonempty() {
        let env = Env::empty().set(Var::CudaHome, "");
        assert_eq!(env.get(Var::CudaHome), Some(""));
        assert_eq!(env.get_nonempty(Var::CudaHome), None);
    }

    /// Every kind of bad value gets one warning that names the variable,
    /// says what was expected, and never echoes 10 kB back.
    #[test]
    fn bad_values_are_named_never_silent() {
        let long = "x".repeat(10_000);
        let cases: &[(Var, &str, &str)] = &[
            (Var::CudaBuildTimeout, "ten", "is not a duration"),
            (Var::CudaBuildTimeout, "-1", "is not a duration"),
            (Var::CudaBuildTimeout, "0", "is not a duration"),
            (Var::CudaBuildTimeout, "10 minutes", "is not a duration"),
            (Var::CudaBuildTimeout, "", "is set but empty"),
            (Var::CudaBuildTimeout, &long, "is not a duration"),
            (Var::CudaBuildTimeout, "\u{663}\u{661}", "is not a duration"),
            (Var::CudaBuildNoCache, "maybe", "is not a switch"),
            (Var::CudaBuildNoCache, " ", "is set but empty"),
            (Var::CudaBuildCacheDir, "", "is set but empty"),
            (Var::CudaBuildCacheDir, "/tmp/a\nb", "control characters"),
            (Var::CudaBuildWrapper, "", "is set but empty"),
            (Var::CudaBuildPython, "", "is set but empty"),
            (Var::NumJobs, "-1", "not a positive whole number"),
            (Var::CudaArchs, "", "is set but empty"),
            (Var::CmakeCudaArchs, "", "is set but empty"),
            (Var::CudaComputeCap, "", "is set but empty"),
        ];
        for (var, value, says) in cases {
            let w = Env::empty().set(*var, value).check();
            assert_eq!(w.len(), 1, "{}={value:?}: {w:?}", var.name());
            assert!(w[0].starts_with(var.name()), "{w:?}");
            assert!(w[0].contains(says), "{}={value:?}: {w:?}", var.name());
            assert!(w[0].len() < 400, "the value is shortened: {}", w[0].len());
        }
        // A shadowed arch variable is checked too; the one in use fails the plan.
        let env = Env::empty()
            .set(Var::CudaArchs, "90")
            .set(Var::CudaComputeCap, "-1");
        let w = env.check();
        assert!(
            w.len() == 1 && w[0].contains("CUDA_COMPUTE_CAP=`-1` is not an arch list"),
            "{w:?}"
        );
        for good in [
            (Var::CudaBuildTimeout, "600"),
            (Var::CudaBuildTimeout, "10s"),
            (Var::CudaBuildTimeout, "500ms"),
            (Var::CudaBuildNoCache, "0"),
            (Var::NumJobs, "4"),
            (Var::CudaArchs, "80;90"),
        ] {
            assert!(
                Env::empty().set(good.0, good.1).check().is_empty(),
                "{good:?}"
            );
        }
    }

    #[test]
    fn only_build_inputs_are_tracked() {
        let inputs: Vec<&str> = build_inputs().map(Var::name).collect();
        for side in [
            "CARGO_CUDA_PROGRESS",
            "CARGO_CUDA_PROBE",
            "CARGO_CUDA_PLAN",
            "CARGO_TERM_COLOR",
            "NO_COLOR",
            "HOME",
            "CI",
            "CUDA_BUILD_TIMEOUT",
            // Read only to judge what cudarc and NVIDIA's crates see.
            "CUDARC_CUDA_VERSION",
            "CUDA_TOOLKIT_TARGET_DIR",
        ] {
            assert!(!inputs.contains(&side), "{side} is not a build input");
        }
        for input in [
            "NVCC",
            "CUDA_HOME",
            "CUDA_TOOLKIT_PATH",
            "CUDACXX",
            "CUDA_ARCHS",
            "CMAKE_CUDA_ARCHITECTURES",
            "TORCH_CUDA_ARCH_LIST",
            "CUDA_NVCC_FLAGS",
            "PATH",
            "NVCC_PREPEND_FLAGS",
        ] {
            assert!(inputs.contains(&input), "{input} is a build input");
        }
    }

    #[test]
    fn flag_parsing() {
        let env = Env::empty().set(Var::CudaBuildNoCache, "yes");
        assert!(env.flag(Var::CudaBuildNoCache));
        assert!(!env
            .set(Var::CudaBuildNoCache, "0")
            .flag(Var::CudaBuildNoCache));
    }
}
