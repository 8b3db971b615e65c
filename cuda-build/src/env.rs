//! Every environment variable `cuda-build` and `cargo-cuda` read, in one place.
//!
//! Code never calls `std::env::var` directly: it asks an [`Env`] for a [`Var`].
//! That keeps the list below complete, lets build scripts emit
//! `cargo:rerun-if-env-changed` for every variable ([`emit_rerun_if_env_changed`]),
//! and lets tests run against a made-up environment and file-system root
//! without touching the process's own.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

macro_rules! vars {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal;)*) => {
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
        }
    };
}

vars! {
    /// Path to the nvcc to use. Wins over every other toolkit setting.
    Nvcc = "NVCC";
    /// Root of the CUDA toolkit (holds bin/nvcc).
    CudaHome = "CUDA_HOME";
    /// Root of the CUDA toolkit (the Windows installer's name; also read on Linux).
    CudaPath = "CUDA_PATH";
    /// Root of the CUDA toolkit (older build systems' name).
    CudaRoot = "CUDA_ROOT";
    /// Root of the CUDA toolkit (FindCUDA.cmake's name).
    CudaToolkitRootDir = "CUDA_TOOLKIT_ROOT_DIR";
    /// Root of the CUDA toolkit (FindCUDAToolkit.cmake's name).
    CudaToolkitRoot = "CUDAToolkit_ROOT";
    /// Searched for nvcc after the explicit variables.
    Path = "PATH";
    /// An active Python virtual environment; its site-packages may hold nvidia-cuda-nvcc wheels.
    VirtualEnv = "VIRTUAL_ENV";
    /// An active conda environment; may hold a conda CUDA toolkit or wheels.
    CondaPrefix = "CONDA_PREFIX";
    /// The python whose site-packages are searched for CUDA wheels (default: python3 on PATH).
    CudaBuildPython = "CUDA_BUILD_PYTHON";
    /// This project's arch list, e.g. `80;90` or `sm_86,sm_90a` or `native`.
    CudaArchs = "CUDA_ARCHS";
    /// CMake's arch list variable, honoured for projects that already set it.
    CmakeCudaArchs = "CUDAARCHS";
    /// The compute capability read by candle-style crates, e.g. `90`.
    CudaComputeCap = "CUDA_COMPUTE_CAP";
    /// Which GPUs the driver shows; detection honours it.
    CudaVisibleDevices = "CUDA_VISIBLE_DEVICES";
    /// Host compiler for nvcc (passed as -ccbin).
    NvccCcbin = "NVCC_CCBIN";
    /// Flags nvcc itself prepends to every command line; part of the cache key.
    NvccPrependFlags = "NVCC_PREPEND_FLAGS";
    /// Flags nvcc itself appends to every command line; part of the cache key.
    NvccAppendFlags = "NVCC_APPEND_FLAGS";
    /// Where the persistent kernel cache lives (default: the user cache dir).
    CudaBuildCacheDir = "CUDA_BUILD_CACHE_DIR";
    /// Set to 1 to turn the persistent kernel cache off.
    CudaBuildNoCache = "CUDA_BUILD_NO_CACHE";
    /// A compiler cache (e.g. `sccache`) to run nvcc under.
    CudaBuildWrapper = "CUDA_BUILD_WRAPPER";
    /// Cargo's compiler wrapper; when it names sccache, nvcc runs under it too.
    RustcWrapper = "RUSTC_WRAPPER";
    /// Seconds before a hung nvcc, nvidia-smi or driver probe is killed (default 300 for nvcc, 10 for probes).
    CudaBuildTimeout = "CUDA_BUILD_TIMEOUT";
    /// File that cuda-build appends progress events to, read by `cargo cuda build`.
    CargoCudaProgress = "CARGO_CUDA_PROGRESS";
    /// Executable that answers the driver probe in a child process (set by `cargo cuda`).
    CargoCudaProbe = "CARGO_CUDA_PROBE";
    /// File-system root used instead of `/` for probing and discovery (for tests and chroots).
    CargoCudaSysroot = "CARGO_CUDA_SYSROOT";
    /// Set by docs.rs: build no kernels, generate an empty module.
    DocsRs = "DOCS_RS";
    /// Parallel jobs when cargo's jobserver is absent.
    NumJobs = "NUM_JOBS";
    /// Build scripts' output directory.
    OutDir = "OUT_DIR";
    /// The build script's package directory.
    CargoManifestDir = "CARGO_MANIFEST_DIR";
    /// Home directory, for the default cache location.
    Home = "HOME";
    /// XDG cache directory, for the default cache location.
    XdgCacheHome = "XDG_CACHE_HOME";
    /// Where `cargo cuda toolkit install` keeps toolkits (default: `$XDG_DATA_HOME/cargo-cuda`, else `~/.local/share/cargo-cuda`).
    CargoCudaHome = "CARGO_CUDA_HOME";
    /// XDG data directory, for the default toolkit store.
    XdgDataHome = "XDG_DATA_HOME";
    /// uv's package index; `cargo cuda toolkit install` downloads from it (wins over PIP_INDEX_URL).
    UvIndexUrl = "UV_INDEX_URL";
    /// pip's package index; `cargo cuda toolkit install` downloads from it.
    PipIndexUrl = "PIP_INDEX_URL";
    /// Proxy for https downloads (`cargo cuda toolkit install`).
    HttpsProxy = "HTTPS_PROXY";
    /// Proxy for https downloads, lowercase spelling.
    HttpsProxyLower = "https_proxy";
    /// Proxy for http downloads.
    HttpProxy = "HTTP_PROXY";
    /// Proxy for http downloads, lowercase spelling.
    HttpProxyLower = "http_proxy";
    /// Hosts reached without the proxy (comma-separated suffixes, or `*`).
    NoProxy = "NO_PROXY";
    /// Hosts reached without the proxy, lowercase spelling.
    NoProxyLower = "no_proxy";
    /// Cargo's offline mode: `cargo cuda toolkit install` then uses only what is already in the store.
    CargoNetOffline = "CARGO_NET_OFFLINE";
    /// Colour control for `cargo cuda` output (always, never, auto).
    CargoTermColor = "CARGO_TERM_COLOR";
    /// Any value turns colour off.
    NoColor = "NO_COLOR";
    /// The cargo that `cargo cuda` runs (cargo sets it for subcommands).
    Cargo = "CARGO";
    /// cudarc's build-time CUDA version, e.g. `13000`; `cargo cuda` sets it.
    CudarcCudaVersion = "CUDARC_CUDA_VERSION";
    /// Library search path; `cargo cuda env` extends it.
    LdLibraryPath = "LD_LIBRARY_PATH";
    /// Set on CI systems; detection then never guesses an arch silently.
    Ci = "CI";
    /// Directory (or file) of libclang, for the `launchers` feature; read by clang-sys.
    LibclangPath = "LIBCLANG_PATH";
    /// The llvm-config used to find libclang when LIBCLANG_PATH is unset (default: `llvm-config` on PATH).
    LlvmConfigPath = "LLVM_CONFIG_PATH";
}

/// Prints `cargo:rerun-if-env-changed=NAME` for every variable this project reads.
///
/// Build scripts call this once (the [`crate::Build`] builder does it for you).
pub fn emit_rerun_if_env_changed() {
    for var in Var::ALL {
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
        matches!(
            self.get(var)
                .map(|v| v.trim().to_ascii_lowercase())
                .as_deref(),
            Some("1" | "true" | "yes" | "on")
        )
    }

    /// Maps an absolute system path (such as `/usr/local/cuda`) into this env's root.
    ///
    /// ```
    /// use cuda_build::env::Env;
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

    /// Every variable that is set, with its value, for reports.
    pub fn iter(&self) -> impl Iterator<Item = (Var, &OsStr)> {
        self.vars.iter().map(|(k, v)| (*k, v.as_os_str()))
    }
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

    #[test]
    fn empty_string_counts_as_set_but_not_nonempty() {
        let env = Env::empty().set(Var::CudaHome, "");
        assert_eq!(env.get(Var::CudaHome), Some(""));
        assert_eq!(env.get_nonempty(Var::CudaHome), None);
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
