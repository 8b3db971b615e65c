//! The catalogue of diagnosis codes, each with a long explanation (what it
//! means, how to confirm it, how to fix it), like `rustc --explain`.
//!
//! Codes are stable: once published, a code keeps its meaning. New causes get
//! new codes.
//!
//! ```
//! use cuda_toolchain::diagnose::codes;
//! let doc = codes::lookup("ptx-too-new-for-driver").unwrap();
//! assert!(doc.explanation.contains("Fix"));
//! assert!(codes::all().iter().all(|d| codes::lookup(d.code).is_some()));
//! ```

use super::Layer;

/// Declares [`Code`]: one variant per code the diagnosis engine gives, with
/// its stable kebab-case spelling.
macro_rules! diagnosis_codes {
    ($($variant:ident = $text:literal,)*) => {
        /// A code the diagnosis engine gives. Its spelling ([`Code::as_str`]) is
        /// stable and names a [`CodeDoc`]; [`Code::Other`] carries a code of
        /// cuda-build's own errors echoed in a log (`error[nvcc-failed]: ...`).
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $(
                #[doc = concat!("`", $text, "`")]
                $variant,
            )*
            /// A catalogued code of cuda-build's own errors, as written in the log.
            Other(&'static str),
        }

        impl Code {
            /// Every code the engine itself gives (without [`Code::Other`]).
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];

            /// The stable kebab-case spelling.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $text,)*
                    Code::Other(s) => s,
                }
            }
        }
    };
}

diagnosis_codes! {
    NvccNotFound = "nvcc-not-found",
    CudaHomeInvalid = "cuda-home-invalid",
    ToolkitIncomplete = "toolkit-incomplete",
    PtxasTooOld = "ptxas-too-old",
    ToolkitUnsupportedByCrate = "toolkit-unsupported-by-crate",
    SccacheNvccFailed = "sccache-nvcc-failed",
    ArchTooNewForNvcc = "arch-too-new-for-nvcc",
    ArchDroppedByNvcc = "arch-dropped-by-nvcc",
    ArchInvalid = "arch-invalid",
    ArchFeatureNeedsHigherTarget = "arch-feature-needs-higher-target",
    ArchNotDetected = "arch-not-detected",
    ComputeCapQueryUnsupported = "compute-cap-query-unsupported",
    HostCompilerUnsupported = "host-compiler-unsupported",
    HostCompilerNotFound = "host-compiler-not-found",
    NoKernelImageForDevice = "no-kernel-image-for-device",
    PtxTooNewForDriver = "ptx-too-new-for-driver",
    PtxJitFailed = "ptx-jit-failed",
    PtxJitCompilerMissing = "ptx-jit-compiler-missing",
    KernelNotFound = "kernel-not-found",
    InvalidKernelImage = "invalid-kernel-image",
    OutOfMemory = "out-of-memory",
    IllegalAddress = "illegal-address",
    LaunchOutOfResources = "launch-out-of-resources",
    CudaInitFailed = "cuda-init-failed",
    CudaUnknownError = "cuda-unknown-error",
    DriverTooOld = "driver-too-old",
    DriverNotLoaded = "driver-not-loaded",
    DriverLibraryMismatch = "driver-library-mismatch",
    LibcudaNotFound = "libcuda-not-found",
    LibcudaStub = "libcuda-stub",
    NvmlNotFound = "nvml-not-found",
    ForwardCompatUnsupported = "forward-compat-unsupported",
    SystemNotReady = "system-not-ready",
    NoDeviceVisible = "no-device-visible",
    InvalidDeviceOrdinal = "invalid-device-ordinal",
    DeviceUnavailable = "device-unavailable",
    CudaRuntimeLibNotFound = "cuda-runtime-lib-not-found",
    DeviceFunctionUnresolved = "device-function-unresolved",
    NvccUnknownOption = "nvcc-unknown-option",
    CompilerKilled = "compiler-killed",
    CudaBackendNotBuilt = "cuda-backend-not-built",
    Bf16KernelUnavailable = "bf16-kernel-unavailable",
    ContainerDeviceMissing = "container-device-missing",
    ContainerRuntimeMissing = "container-runtime-missing",
    TorchCudaVersionMismatch = "torch-cuda-version-mismatch",
    NouveauHoldsGpu = "nouveau-holds-gpu",
    GpuUnsupportedByDriver = "gpu-unsupported-by-driver",
    MsbuildCudaIntegrationMissing = "msbuild-cuda-integration-missing",
    FrameworkLibNotFound = "framework-lib-not-found",
    LibraryOpUnsupported = "library-op-unsupported",
    CudaDependencyFetchFailed = "cuda-dependency-fetch-failed",
    DriverStateLost = "driver-state-lost",
    CudaObjectNotPic = "cuda-object-not-pic",
    KernelExceedsTargetLimit = "kernel-exceeds-target-limit",
    MathConstantsUndefined = "math-constants-undefined",
    CxxStandardTooOld = "cxx-standard-too-old",
    CudaCompiledAsCpp = "cuda-compiled-as-cpp",
}

impl Code {
    /// The code with this spelling (case-insensitive): an engine code, or
    /// [`Code::Other`] for another catalogued code.
    pub fn parse(s: &str) -> Option<Code> {
        let s = s.trim();
        if let Some(c) = Code::ALL
            .iter()
            .find(|c| c.as_str().eq_ignore_ascii_case(s))
        {
            return Some(*c);
        }
        lookup(s).map(|d| Code::Other(d.code))
    }

    /// Its documentation in the catalogue.
    pub fn doc(self) -> Option<&'static CodeDoc> {
        lookup(self.as_str())
    }

    /// The layer of the stack it is about.
    pub fn layer(self) -> Layer {
        self.doc().map_or(Layer::Run, |d| d.layer)
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl PartialEq<str> for Code {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<Code> for &str {
    fn eq(&self, other: &Code) -> bool {
        *self == other.as_str()
    }
}

/// The documentation of one diagnosis code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CodeDoc {
    /// The stable kebab-case code.
    pub code: &'static str,
    /// A one-line title.
    pub title: &'static str,
    /// The layer of the stack it is about.
    pub layer: Layer,
    /// What it means, how to confirm it, how to fix it (plain text, several paragraphs).
    pub explanation: &'static str,
}

/// Every documented code, in catalogue order (see [`Layer`] for the grouping).
pub fn all() -> &'static [CodeDoc] {
    CODES
}

/// Codes a reader of one should also know: near neighbours whose names or
/// messages are easy to confuse. Each group is symmetric: every member
/// points at the others.
const SEE_ALSO: &[&[&str]] = &[
    &[
        "kernel-not-found",
        "bf16-kernel-unavailable",
        "no-kernel-image-for-device",
    ],
    &[
        "cuda-runtime-lib-not-found",
        "framework-lib-not-found",
        "libcuda-not-found",
    ],
    &["framework-lib-not-found", "cuda-backend-not-built"],
    &["toolkit-unsupported-by-crate", "toolkit-requirement"],
    &["driver-state-lost", "cuda-unknown-error", "illegal-address"],
    &["library-op-unsupported", "arch-feature-needs-higher-target"],
    &["cuda-dependency-fetch-failed", "header-dep-missing"],
    &["ptx-too-new-for-driver", "ptx-jit-failed", "driver-too-old"],
    &[
        "arch-too-new-for-nvcc",
        "arch-dropped-by-nvcc",
        "arch-invalid",
    ],
    &[
        "no-device-visible",
        "driver-not-loaded",
        "container-device-missing",
    ],
    &["out-of-memory", "compiler-killed"],
];

/// The codes to see also from `code` (its near neighbours), in catalogue order.
pub fn see_also(code: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = SEE_ALSO
        .iter()
        .filter(|g| g.contains(&code))
        .flat_map(|g| g.iter().copied())
        .filter(|c| *c != code)
        .collect();
    out.sort_by_key(|c| CODES.iter().position(|d| d.code == *c));
    out.dedup();
    out
}

/// Every documented code of one layer, in catalogue order.
pub fn in_layer(layer: Layer) -> impl Iterator<Item = &'static CodeDoc> {
    CODES.iter().filter(move |d| d.layer == layer)
}

/// The documentation of one code, if it exists.
pub fn lookup(code: &str) -> Option<&'static CodeDoc> {
    let code = code.trim();
    CODES.iter().find(|d| d.code.eq_ignore_ascii_case(code))
}

const fn doc(
    code: &'static str,
    layer: Layer,
    title: &'static str,
    explanation: &'static str,
) -> CodeDoc {
    CodeDoc {
        code,
        title,
        layer,
        explanation,
    }
}

use Layer::*;

const CODES: &[CodeDoc] = &[
    // ---------------------------------------------------------------- toolkit
    doc(
        "nvcc-not-found",
        Toolkit,
        "No CUDA toolkit (nvcc) was found",
        "\
nvcc, the CUDA compiler, could not be found or started. Messages: `nvcc: command not found`,
`'nvcc' is not recognized as an internal or external command`, `No CMAKE_CUDA_COMPILER could be
found`, `CUDA_HOME environment variable is not set`, or cuda-build's own `error[nvcc-not-found]`.

Confirm: `cargo cuda toolkits` lists every toolkit cuda-build can see and why each was or was not
chosen. `ls /usr/local/cuda*/bin/nvcc` shows the usual installs.

Fix:
  - If a toolkit is installed, point CUDA_HOME (or NVCC) at it: CUDA_HOME=/usr/local/cuda-12.4.
  - Otherwise install one: NVIDIA's runfile/deb (`cuda-toolkit-13-0`), conda (`cuda-nvcc`),
    or the Python wheels, pinned to one release (`pip install nvidia-cuda-nvcc==13.0.88
    nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85`).
  - The driver alone (nvidia-smi works) is not a toolkit: it has no nvcc.",
    ),
    doc(
        "install-unknown-version",
        Toolkit,
        "The package index has no CUDA compiler of that version",
        "\
`cargo cuda toolkit install VERSION` found no nvidia-cuda-nvcc wheel matching VERSION (for this
platform) on the index, or an `--unchecked` pin names a version the index does not have.

Confirm: `cargo cuda toolkit install latest` shows what the index resolves to; the error lists the
releases there.

Fix: the error lists the releases the index has; install one of them (`cargo cuda toolkit install
latest`). Check --index-url / UV_INDEX_URL / PIP_INDEX_URL when the list looks wrong.",
    ),
    doc(
        "install-partial-release",
        Toolkit,
        "The index has only part of that CUDA release",
        "\
The index carries some of the release's wheels but not a complete compiler: the 12.x and 11.x
wheels (nvidia-cuda-nvcc-cu12/-cu11) ship ptxas, nvvm and the crt headers but no nvcc driver, or a
13.x nvcc has no nvidia-nvvm / nvidia-cuda-crt of the same version. A compiler mixed from two
releases fails in ptxas, so nothing is installed.

Confirm: the error names the wheel that is there and the one that is missing.

Fix: choose a complete release (`cargo cuda toolkit install latest`). For a complete 12.x use
NVIDIA's redistributable archives (redistrib_12.X.Y.json), the runfile or distro packages, or
conda's cuda-nvcc. For test fixtures, `--unchecked --name NAME PKG==VER...` installs exactly the
wheels named.",
    ),
    doc(
        "install-network",
        Toolkit,
        "A download from the package index failed",
        "\
The index or a file could not be fetched: no connection, a timeout, an HTTP error, or a
connection that closed before the whole file arrived (`after N of M bytes`). Nothing was
installed; partial downloads are deleted.

Confirm: `curl -I` the URL the message names, with the same proxy variables.

Fix: check the network and the index URL (the message names the setting it came from); behind a
proxy set HTTPS_PROXY (NO_PROXY for exceptions). Then rerun the same command.",
    ),
    doc(
        "install-sha256-mismatch",
        Toolkit,
        "A downloaded file does not match the index's sha256",
        "\
The bytes received differ from the sha256 the index publishes for the file: a proxy or mirror
changed it, or the index is wrong. The file is deleted and nothing is installed.

Confirm: the message shows both hashes; `sha256sum` of a file fetched by other means.

Fix: retry; if it persists, use another index (--index-url) or check the proxy (HTTPS_PROXY).",
    ),
    doc(
        "install-disk-full",
        Toolkit,
        "The disk holding the toolkit store is full",
        "\
Writing a download or unpacking a wheel failed with ENOSPC (or a quota). A CUDA 13.0 compiler
needs about 100 MB of downloads and 270 MB unpacked. Nothing was installed.

Confirm: `df -h` on the store's directory (`cargo cuda toolkit list` prints it).

Fix: free space, or point CARGO_CUDA_HOME at a directory on a bigger disk.",
    ),
    doc(
        "install-store-readonly",
        Toolkit,
        "The toolkit store is not writable",
        "\
The store (CARGO_CUDA_HOME, else $XDG_DATA_HOME/cargo-cuda, else ~/.local/share/cargo-cuda) is on
a read-only file system or not writable by this user.

Confirm: `touch $CARGO_CUDA_HOME/x`, or `mount | grep` the store's file system.

Fix: set CARGO_CUDA_HOME to a writable directory.",
    ),
    doc(
        "install-io",
        Toolkit,
        "An I/O error in the toolkit store",
        "\
A file operation in the store failed for another reason than a full or read-only disk. Nothing
was installed; a later install starts clean.

Confirm: the message names the path and the OS error.

Fix: check the path the message names, then rerun.",
    ),
    doc(
        "install-bad-index",
        Toolkit,
        "The package index did not answer like a package index",
        "\
The index URL answered with something that is not a PEP 691 JSON or PEP 503 HTML package page:
typically a captive portal or proxy login page, or a URL that is not an index.

Confirm: open the index URL in a browser, or `curl -H 'Accept: application/vnd.pypi.simple.v1+json'
URL/nvidia-cuda-nvcc/`.

Fix: check --index-url / UV_INDEX_URL / PIP_INDEX_URL (a \"simple\" URL such as
https://pypi.org/simple) and the network (sign in, set HTTPS_PROXY).",
    ),
    doc(
        "install-bad-proxy",
        Toolkit,
        "A proxy variable is not a proxy URL",
        "\
HTTPS_PROXY / HTTP_PROXY (or the lowercase forms) could not be parsed as a proxy URL.

Confirm: `echo $HTTPS_PROXY $HTTP_PROXY`.

Fix: set it to a URL such as http://proxy.example:3128, or unset it.",
    ),
    doc(
        "install-bad-version",
        Toolkit,
        "The version argument is not a CUDA version",
        "\
`cargo cuda toolkit install` takes `latest`, a major (`13`), a minor (`13.0`) or an exact compiler
version (`13.0.88`); with --unchecked, wheels as NAME==VERSION.

Confirm: `cargo cuda toolkit install --help`.

Fix: give the version in one of those forms.",
    ),
    doc(
        "install-bad-component",
        Toolkit,
        "Unknown optional component in --with",
        "\
--with takes a comma-separated list of cublas, nvrtc, curand, nvjitlink.

Confirm: `cargo cuda toolkit install --help`.

Fix: use one of those names.",
    ),
    doc(
        "install-bad-name",
        Toolkit,
        "Unusable store name for an --unchecked set",
        "\
--unchecked needs --name NAME: letters, digits, `.`, `_`, `-`, not starting with `.`.

Confirm: `cargo cuda toolkit list` shows the names in use.

Fix: pass a plain name such as `--name mixed`.",
    ),
    doc(
        "install-bad-wheel",
        Toolkit,
        "A downloaded wheel is not a valid zip",
        "\
The file matched the index's sha256 but cannot be unpacked, so the index serves a broken file.
Nothing was installed.

Confirm: `unzip -l` on the file the message names.

Fix: report it to the index's owner, or use another index (--index-url).",
    ),
    doc(
        "install-incomplete",
        Toolkit,
        "The unpacked wheels are not a complete compiler",
        "\
After unpacking, a part every compile needs is missing (bin/nvcc, ptxas, fatbinary, nvlink,
nvvm/bin/cicc, cuda_runtime.h, the crt or CCCL headers), or nvcc does not run or reports
another version. Nothing was installed.

Confirm: the message names the missing part or nvcc's answer.

Fix: install another version (`cargo cuda toolkit install latest`).",
    ),
    doc(
        "install-offline",
        Toolkit,
        "The toolkit is not in the store and the network is off",
        "\
--offline or CARGO_NET_OFFLINE=true allow only what the store already has.

Confirm: `cargo cuda toolkit list`; `echo $CARGO_NET_OFFLINE`.

Fix: run the same install once with network (for CI: in a step before the offline one), or
prefetch on a connected machine and copy the store (CARGO_CUDA_HOME).",
    ),
    doc(
        "toolkit-not-installed",
        Toolkit,
        "No toolkit of that name in the store",
        "\
`cargo cuda toolkit remove NAME` names no entry of the store.

Confirm: `cargo cuda toolkit list`.

Fix: use a name `cargo cuda toolkit list` shows.",
    ),
    doc(
        "toolkit-store-unknown",
        Toolkit,
        "No toolkit store location",
        "\
CARGO_CUDA_HOME, XDG_DATA_HOME and HOME are all unset, so there is no default store.

Confirm: `echo $CARGO_CUDA_HOME $XDG_DATA_HOME $HOME`.

Fix: set CARGO_CUDA_HOME to the directory that should hold installed toolkits.",
    ),
    doc(
        "header-dep-missing",
        Compile,
        "A header-only dependency is not in the store",
        "\
Build::cutlass / Build::header_dep name a package that `cargo cuda deps fetch` has not fetched
into the store (CARGO_CUDA_HOME, else $XDG_DATA_HOME/cargo-cuda, else ~/.local/share/cargo-cuda),
or a local path that is not a directory. A build script fetches one only with cuda-build's
`fetch` feature and never when CARGO_NET_OFFLINE is set or on docs.rs.

Confirm: `ls $CARGO_CUDA_HOME/deps` (or ~/.local/share/cargo-cuda/deps).

Fix: run `cargo cuda deps fetch` once with network (CI: before the offline step), turn on
cuda-build's `fetch` feature so plain `cargo build` fetches it, or `git submodule update --init`
for a vendored path.",
    ),
    doc(
        "header-dep-requirement",
        Compile,
        "The build does not meet a header dependency's requirements",
        "\
CUTLASS 3.x/4.x needs C++17 and, for most of its paths, sm_80 or newer; the build sets an older
C++ standard or its arch plan includes older targets.

Confirm: the message names the C++ standard or the arch targets below the minimum;
`cargo cuda info` shows the arch plan.

Fix: drop `.std(\"14\")` (nvcc's default is C++17) and target sm_80+ only
(CUDA_ARCHS=\"80;90\"), or compile the older archs from sources that do not use the dependency.",
    ),
    doc(
        "header-dep-bad-commit",
        Compile,
        "A git header dependency is not pinned to a full commit, or the commit cannot be fetched",
        "\
Git header dependencies are pinned by full commit hash (40 hex digits): a short hash can become
ambiguous as the repository grows, and a branch or tag can move. The fetch fails when the commit
is not in the repository at that URL (not pushed, or a typo).

Confirm: `git ls-remote URL` and `git rev-parse <ref>` in a clone.

Fix: pin the full hash that `git rev-parse` prints, and check the URL.",
    ),
    doc(
        "cuda-home-invalid",
        Toolkit,
        "CUDA_HOME (or a sibling variable) points at no toolkit",
        "\
A variable that selects the toolkit (NVCC, CUDA_HOME, CUDA_PATH, CUDA_TOOLKIT_PATH, CUDA_ROOT,
CUDA_TOOLKIT_ROOT_DIR) names a directory that does not exist or has no bin/nvcc. An explicit
setting wins over every other search, so a stale value breaks the build even when another
toolkit is installed. CMake's CUDACXX naming something other than a working nvcc is only a
warning: cuda-build skips it.

Confirm: `echo $CUDA_HOME; ls $CUDA_HOME/bin/nvcc`, and `cargo cuda env`.

Fix: set the variable to the directory that holds bin/nvcc (the one `cargo cuda toolkits`
lists), or unset it to let discovery choose.",
    ),
    doc(
        "toolkit-incomplete",
        Toolkit,
        "The CUDA toolkit is missing a component, or mixes releases",
        "\
The toolkit nvcc belongs to lacks a part the compile needs, or its parts come from different
CUDA releases. Typical messages:
  - `fatal error: nv/target: No such file or directory` (the CCCL headers: nv/, cuda/std, cub,
    thrust are a separate component: cuda-cccl, or the nvidia-cuda-cccl wheel);
  - `fatal error: cuda_runtime.h: No such file or directory` (nvcc runs without its include dir:
    a broken nvcc.profile, a copied nvcc, or the cudart component is missing);
  - `ptxas /tmp/tmpxft_..., line 9; fatal   : Unsupported .version 9.5; current version is '9.0'`
    inside one nvcc run: nvcc's own cicc (nvvm) is from a newer release than its ptxas. This is
    what `pip install nvidia-cuda-nvcc==13.0.88` gives when the nvvm wheel resolves to 13.5;
  - `cicc: not found`, `cannot find -lcudart`, missing libdevice.

Confirm: `cargo cuda doctor` checks the toolkit's layout and component versions;
`ls $CUDA_HOME/include/nv/target $CUDA_HOME/include/cuda_runtime.h`;
`$CUDA_HOME/nvvm/bin/cicc --version` vs `nvcc --version`.

Fix: install the missing component for the same release (apt `cuda-cccl-13-0`,
`cuda-cudart-dev-13-0`; pip `nvidia-cuda-cccl==13.0.*`), or pin every wheel to one release
(`pip install 'nvidia-cuda-nvcc==13.0.*' 'nvidia-nvvm==13.0.*' 'nvidia-cuda-crt==13.0.*'`).",
    ),
    doc(
        "ptxas-too-old",
        Toolkit,
        "ptxas is older than the compiler that wrote the PTX",
        "\
ptxas refused a PTX file whose `.version` is newer than it knows:
`ptxas va.ptx, line 9; fatal   : Unsupported .version 9.0; current version is '7.8'`. Each CUDA
release emits one PTX ISA version (12.8: 8.7, 12.9: 8.8, 13.0: 9.0) and its ptxas accepts up to
that version. The PTX here came from a newer nvcc/NVRTC than this ptxas.

Confirm: `head -20 file.ptx | grep .version` and `ptxas --version`.

Fix: assemble with the ptxas of the release that wrote the PTX (or newer), or regenerate the PTX
with the older toolkit. At run time the same mismatch against the driver's JIT is
ptx-too-new-for-driver; inside one nvcc run it is toolkit-incomplete (mixed releases).",
    ),
    // ---------------------------------------------------------- build config
    doc(
        "arch-too-new-for-nvcc",
        Compile,
        "This nvcc does not know the requested GPU architecture",
        "\
nvcc rejected an architecture it predates: `nvcc fatal   : Unsupported gpu architecture
'compute_89'` or `nvcc fatal   : Value 'sm_89' is not defined for option 'gpu-architecture'`.
Each architecture first appears in one CUDA release: sm_89/sm_90 in 11.8, sm_90a in 12.0,
sm_100/sm_120 in 12.8, sm_103/sm_121 in 12.9, sm_110 in 13.0. An architecture no release knows
(sm_200) is most likely a typo.

Confirm: `nvcc --list-gpu-arch` prints what this nvcc supports; `nvcc --version` its release.

Fix: use a newer toolkit (set CUDA_HOME to it), or remove the architecture from the arch list
(CUDA_ARCHS, [package.metadata.cuda] arch, Build::arch).",
    ),
    doc(
        "arch-dropped-by-nvcc",
        Compile,
        "This nvcc no longer targets the requested GPU architecture",
        "\
nvcc rejected an architecture that older releases supported: `nvcc fatal   : Unsupported gpu
architecture 'sm_70'`. CUDA 11.0 dropped sm_30; 12.0 dropped sm_35/sm_37; 13.0 dropped Maxwell,
Pascal and Volta (sm_50 to sm_72). CUDA 13.0 targets sm_75 and newer.

Confirm: `nvcc --list-gpu-code`; `nvidia-smi --query-gpu=name,compute_cap --format=csv`.

Fix: if you still need that GPU, build with the last toolkit that targets it (CUDA 12.9 for
sm_50..sm_72, 11.8 for sm_35/sm_37) and a driver that supports that toolkit; otherwise drop the
architecture from the arch list (CUDA_ARCHS, [package.metadata.cuda] arch).",
    ),
    doc(
        "arch-invalid",
        Compile,
        "nvcc was given something that is not an architecture name",
        "\
nvcc rejected an architecture value that is not a well-formed name at all: `compute_80+PTX`
(CMake's `80+PTX` spelling passed straight to nvcc), `compute_` (an empty variable), `[sm_61]`
(brackets copied from documentation), or `arch`. nvcc wants `sm_XY`, `compute_XY` or `lto_XY`,
optionally with an `a`/`f` suffix.

Confirm: look at the -arch / -gencode values in the failing command line (`cargo cuda build -v`).

Fix: write the arch list in one of the accepted forms (CUDA_ARCHS=80;86+PTX is parsed by
cuda-build, which then passes nvcc proper -gencode flags), or fix the variable that came out empty.",
    ),
    doc(
        "arch-feature-needs-higher-target",
        Compile,
        "The code uses an instruction the compile target lacks",
        "\
ptxas refused an instruction that the target architecture does not have:
  - `Feature 'cp.async.bulk' requires .target sm_90 or higher`,
  - `Feature '.bf16' requires .target sm_80 or higher`,
  - `Instruction 'wgmma.fence' not supported on .target 'sm_90'`: wgmma, setmaxnreg and tcgen05
    exist only in the arch-specific targets (sm_90a, sm_100a); plain sm_90 lacks them.
Usually one entry of the arch list (often a fallback such as sm_75) is lower than the code needs.

Confirm: the ptxas line names the feature and the target it needs; check which -gencode
produced it (`cargo cuda build -v`).

Fix: raise that target (CUDA_ARCHS=90a for wgmma, 90 for cp.async.bulk, 80 for bf16), or guard
the code with `#if __CUDA_ARCH__ >= 900` (and `__CUDA_ARCH_FEAT_SM90_ALL` for 90a features) so
lower targets compile a fallback.",
    ),
    doc(
        "arch-not-detected",
        Compile,
        "No GPU was visible to choose the architecture from",
        "\
The build asked for the architecture of the local GPU (`-arch=native`, CMake's detection, or
cuda-build's default) and none was visible: `nvcc warning : Cannot find valid GPU for
'-arch=native', default arch is used`. Common on CI, in docker build, and on machines whose
driver is broken; nvcc then falls back to its default architecture, which may not match the GPU
the program will run on.

Confirm: `nvidia-smi -L`; `cargo cuda doctor`.

Fix: name the architecture explicitly: CUDA_ARCHS=86 (or 80;86;90, or `all-major`),
[package.metadata.cuda] arch = \"86\", or Build::arch(\"86\").",
    ),
    // ---------------------------------------------------------- host compiler
    doc(
        "host-compiler-unsupported",
        Compile,
        "nvcc does not accept this host compiler version",
        "\
nvcc's include/crt/host_config.h refuses host compilers newer (or older) than the release was
tested with: `#error -- unsupported GNU version! gcc versions later than 15 are not supported!`,
`unsupported clang version! clang version must be less than 21`, or `unsupported Microsoft
Visual Studio version!`. Limits: CUDA 12.4-12.6 accept gcc <= 13, 12.8/12.9 gcc <= 14, 13.x gcc
<= 15.

Confirm: `g++ --version` (or the compiler in NVCC_CCBIN / -ccbin) against the limit in the message.

Fix: install a supported compiler and point nvcc at it: NVCC_CCBIN=g++-13 (or Build::ccbin),
or use a newer CUDA toolkit. `-allow-unsupported-compiler` skips the check at your own risk.",
    ),
    doc(
        "host-compiler-not-found",
        Compile,
        "nvcc could not run its host compiler",
        "\
nvcc needs a host C++ compiler (g++, clang++ or cl.exe) and could not start it:
`nvcc fatal   : Failed to preprocess host compiler properties.` after `g++-15: No such file or
directory`, or `nvcc fatal   : Cannot find compiler 'cl.exe' in PATH`.

Confirm: `which g++` (or the NVCC_CCBIN / -ccbin value); on Windows run from a
\"Developer Command Prompt\" or check `where cl`.

Fix: install a host compiler (`apt install g++`, Visual Studio's C++ workload), or fix
NVCC_CCBIN / -ccbin to name one that exists.",
    ),
    // --------------------------------------------------------------- runtime
    doc(
        "no-kernel-image-for-device",
        Load,
        "The binary has no code for this GPU's architecture",
        "\
The driver found no SASS for the GPU's architecture and no PTX it could JIT:
`CUDA_ERROR_NO_BINARY_FOR_GPU` (209), `cudaErrorNoKernelImageForDevice`, \"no kernel image is
available for execution on the device\", or PyTorch's \"with CUDA capability sm_120 is not
compatible with the current PyTorch installation\". SASS for sm_XY runs only on X.Y and later
minors of the same major (sm_80 runs on 8.6, not on 9.0); PTX runs on any later GPU if the
driver can JIT it.

Confirm: `nvidia-smi --query-gpu=name,compute_cap --format=csv` for the GPU; `cuobjdump
--list-elf --list-ptx <binary>` for what the binary holds.

Fix: add the GPU's architecture to the arch list (CUDA_ARCHS=120), or embed PTX for the newest
architecture (120+PTX) so newer GPUs can JIT it. If the toolkit is too old for the GPU, use a
newer one. Other causes: a fatbin stripped of its PTX, an old cached build, or the PTX JIT
disabled (CUDA_DISABLE_PTX_JIT=1).",
    ),
    doc(
        "ptx-too-new-for-driver",
        Load,
        "The driver cannot JIT PTX from a newer toolkit",
        "\
The module carries PTX whose ISA version is newer than the installed driver's JIT understands:
`CUDA_ERROR_UNSUPPORTED_PTX_VERSION` (222), \"the provided PTX was compiled with an unsupported
toolchain.\", or the JIT log `ptxas application ptx input, line 9; fatal   : Unsupported
.version 8.7; current version is '8.4'`. A driver JITs PTX up to the ISA of the CUDA version it
supports (R535: CUDA 12.2, ISA 8.2; R570: 12.8, ISA 8.7; R580: 13.0, ISA 9.0). Minor-version
compatibility covers SASS, not PTX.

Confirm: `nvidia-smi` shows the driver's CUDA version; `grep .version` in the PTX (or the
toolkit's release) shows the ISA.

Fix: build SASS for the GPU's exact architecture (CUDA_ARCHS=89) so no JIT is needed, build
with a toolkit no newer than the driver's CUDA version, or upgrade the driver.",
    ),
    doc(
        "ptx-jit-failed",
        Load,
        "The driver's PTX JIT compilation failed",
        "\
The driver tried to JIT-compile PTX and failed: `CUDA_ERROR_INVALID_PTX` (218), \"a PTX JIT
compilation failed\", or JIT disabled (223). Causes: PTX from a newer toolkit on drivers that
report 218 instead of 222, PTX that uses instructions the GPU lacks, hand-written PTX with
errors, or CUDA_DISABLE_PTX_JIT=1.

Confirm: load the module with the JIT error log enabled (CU_JIT_ERROR_LOG_BUFFER) or run
`ptxas -arch=sm_XY file.ptx` with the driver's CUDA version.

Fix: ship SASS for the GPU so no JIT is needed; if the log says `Unsupported .version`, see
ptx-too-new-for-driver.",
    ),
    doc(
        "ptx-jit-compiler-missing",
        Driver,
        "The driver's PTX JIT library is missing",
        "\
`CUDA_ERROR_JIT_COMPILER_NOT_FOUND` (221), \"PTX JIT compiler library not found\": libcuda
could not load libnvidia-ptxjitcompiler.so.1. Typical in containers whose runtime mounted
libcuda but not the JIT library, or after a partial driver install.

Confirm: `ldconfig -p | grep ptxjitcompiler`.

Fix: install the driver's full user-space libraries (or use the NVIDIA container toolkit with
`--gpus all`, NVIDIA_DRIVER_CAPABILITIES=compute,utility), or ship SASS so no JIT is needed.",
    ),
    doc(
        "kernel-not-found",
        Load,
        "The module has no kernel of the requested name (a name or mangling mismatch)",
        "\
`CUDA_ERROR_NOT_FOUND` (500), \"named symbol not found\": the module has no function by that
name. C++ kernels are name-mangled unless declared `extern \"C\"`; templates need an explicit
instantiation. This is a lookup by name through the driver API (cuModuleGetFunction). The same
words from the runtime API (`cudaErrorSymbolNotFound` at a CUDA_CHECK) usually mean the binary
has no code for this GPU: no-kernel-image-for-device. A bf16 kernel compiled out for an older
GPU is bf16-kernel-unavailable.

Confirm: `cuobjdump -symbols <fatbin>` or the generated module's ENTRIES list.

Fix: declare the kernel `extern \"C\" __global__`, or load it by its mangled name.",
    ),
    doc(
        "invalid-kernel-image",
        Load,
        "The driver rejected the module image",
        "\
`CUDA_ERROR_INVALID_IMAGE` (200): the bytes passed to cuModuleLoadData are not a valid cubin,
fatbin or PTX for this driver: a truncated file, a host object, or a cubin for another
architecture.

Confirm: `file`/`cuobjdump --list-elf` on the image.

Fix: load the artifact cuda-build generated (IMAGE in the generated module), and rebuild.",
    ),
    doc(
        "out-of-memory",
        Run,
        "The GPU ran out of memory",
        "\
`CUDA_ERROR_OUT_OF_MEMORY` (2), `cudaErrorMemoryAllocation`, \"out of memory\". The allocation
did not fit in free device memory, which other processes may be using.

Confirm: `nvidia-smi` shows memory in use and by whom.

Fix: allocate less (smaller batches), free buffers earlier, or use a GPU with more memory.",
    ),
    doc(
        "illegal-address",
        Run,
        "A kernel accessed memory it must not",
        "\
`CUDA_ERROR_ILLEGAL_ADDRESS` (700) \"an illegal memory access was encountered\", misaligned
address (716), or \"unspecified launch failure\" (719): a kernel faulted. The context is
unusable afterwards; every later call returns the same error.

Confirm: `compute-sanitizer ./program` names the kernel, thread and address.

Fix: check index bounds and buffer sizes passed to the kernel.",
    ),
    doc(
        "launch-out-of-resources",
        Run,
        "The kernel launch asked for more than the GPU has",
        "\
`CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES` (701), \"too many resources requested for launch\": block
size times registers per thread, or shared memory, exceeds the GPU's limits.

Confirm: compile with `-Xptxas -v` to see registers per thread.

Fix: launch smaller blocks, or cap registers with __launch_bounds__ / -maxrregcount.",
    ),
    doc(
        "cuda-init-failed",
        Run,
        "CUDA failed to initialise",
        "\
`CUDA_ERROR_NOT_INITIALIZED` (3) / cudaErrorInitializationError, \"initialization error\".
Causes: CUDA used in a child after fork(), a driver that failed to start, or a missing
/dev/nvidia-uvm.

Confirm: run `nvidia-smi` and a minimal CUDA program in the same environment.

Fix: initialise CUDA after fork (or use spawn), and see driver-not-loaded when nvidia-smi fails.",
    ),
    doc(
        "cuda-unknown-error",
        Run,
        "CUDA reported an unknown error",
        "\
`CUDA_ERROR_UNKNOWN` (999), \"unknown error\". It has many causes, most of them in the driver:
the nvidia_uvm module not loaded, /dev/nvidia-uvm missing in a container, a GPU left in a bad
state after suspend, or a driver/library mismatch.

Confirm: `ls -l /dev/nvidia*`; `dmesg | grep -i nvrm`; `nvidia-smi`.

Fix: `sudo modprobe nvidia_uvm` (or reload it after suspend), restart the container with the GPU
devices, or reboot.",
    ),
    // ---------------------------------------------------------------- driver
    doc(
        "driver-too-old",
        Driver,
        "The driver is older than the CUDA runtime needs",
        "\
`cudaErrorInsufficientDriver` (35), \"CUDA driver version is insufficient for CUDA runtime
version\", or PyTorch's \"The NVIDIA driver on your system is too old\". The program's CUDA
runtime (libcudart) is from a newer major than the driver supports (CUDA 13.x needs R580+,
12.x needs >= 525.60.13, 11.x >= 450.80.02), or it calls an API newer than the driver (36).

Confirm: `nvidia-smi` shows the driver version and the highest CUDA it supports.

Fix: upgrade the driver, or build with a toolkit whose major the driver supports.",
    ),
    doc(
        "driver-not-loaded",
        Driver,
        "The NVIDIA kernel driver is not running",
        "\
`NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver`, NVML \"Driver
Not Loaded\", or modprobe's \"Key was rejected by service\". The user-space libraries are
installed but the kernel module is not loaded: Secure Boot refused an unsigned module, DKMS did
not rebuild it for the running kernel, or nouveau holds the GPU.

Confirm: `lsmod | grep nvidia`; `dmesg | grep -i nvidia`; `mokutil --sb-state`.

Fix: rebuild/install the module for the running kernel (`sudo dkms autoinstall`), enroll the
MOK key or disable Secure Boot, blacklist nouveau, then reboot.",
    ),
    doc(
        "driver-library-mismatch",
        Driver,
        "The driver's libraries and kernel module are different versions",
        "\
`Failed to initialize NVML: Driver/library version mismatch`, `CUDA_ERROR_SYSTEM_DRIVER_MISMATCH`
(803) \"system has unsupported display driver / cuda driver combination\", or dmesg's \"NVRM: API
mismatch\". The driver's user-space libraries were upgraded but the old kernel module is still
loaded (or a container mounts libraries from another version).

Confirm: `cat /proc/driver/nvidia/version` (kernel module) vs the NVML/libcuda version.

Fix: reboot (or unload and reload the nvidia modules) after a driver upgrade; in containers,
do not install a driver inside the image.",
    ),
    doc(
        "libcuda-not-found",
        Driver,
        "libcuda, the driver's CUDA library (not a toolkit library), could not be loaded",
        "\
`libcuda.so.1: cannot open shared object file: No such file or directory`, `cannot find
-lcuda`, or cudarc's \"Unable to dynamically load the cuda shared library\". libcuda comes with
the driver, not the toolkit. No driver is installed, or (in containers) the runtime did not
mount it: docker without `--gpus all` or without the NVIDIA container toolkit. On WSL it lives in
/usr/lib/wsl/lib.

Confirm: `ldconfig -p | grep libcuda`; `nvidia-smi`.

Fix: install the NVIDIA driver; run containers with `--gpus all`; on WSL add /usr/lib/wsl/lib to
LD_LIBRARY_PATH. Do not point LD_LIBRARY_PATH at the toolkit's lib/stubs (see libcuda-stub).",
    ),
    doc(
        "libcuda-stub",
        Driver,
        "The program loaded the toolkit's stub libcuda",
        "\
`CUDA_ERROR_STUB_LIBRARY` (34), \"CUDA driver is a stub library\": the loader picked
<toolkit>/lib64/stubs/libcuda.so, which exists only so programs can link without a driver. It
fails every call at run time.

Confirm: `ldd ./program | grep libcuda`; check LD_LIBRARY_PATH for a `stubs` directory.

Fix: remove the stubs directory from LD_LIBRARY_PATH / rpath and install the real driver.",
    ),
    doc(
        "nvml-not-found",
        Driver,
        "nvidia-smi could not find libnvidia-ml.so",
        "\
`NVIDIA-SMI couldn't find libnvidia-ml.so library in your system.` NVML ships with the driver;
it is missing from the loader path: a container started without the utility capability, a
WSL or SSH session with a different LD_LIBRARY_PATH, or no driver at all.

Confirm: `ldconfig -p | grep nvidia-ml`.

Fix: install the driver, or start the container with NVIDIA_DRIVER_CAPABILITIES=compute,utility
and `--gpus all`; on WSL use /usr/lib/wsl/lib/nvidia-smi.",
    ),
    doc(
        "forward-compat-unsupported",
        Driver,
        "A forward-compatibility libcuda was loaded on a GPU that does not support it",
        "\
`CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE` (804), \"forward compatibility was attempted on non
supported HW\": the cuda-compat package (a newer libcuda for an older kernel driver) works only
on data-center GPUs. Common in CUDA containers on desktop GPUs.

Confirm: `ldd ./program | grep libcuda` shows /usr/local/cuda/compat.

Fix: remove /usr/local/cuda/compat from LD_LIBRARY_PATH (or ld.so.conf) and upgrade the host
driver instead.",
    ),
    doc(
        "system-not-ready",
        Driver,
        "The system is not ready for CUDA work",
        "\
`CUDA_ERROR_SYSTEM_NOT_READY` (802): a required daemon is not running, typically the NVIDIA
Fabric Manager on NVSwitch systems (HGX/DGX).

Confirm: `systemctl status nvidia-fabricmanager`.

Fix: install and start nvidia-fabricmanager of exactly the driver's version.",
    ),
    // ----------------------------------------------------------- environment
    doc(
        "no-device-visible",
        Driver,
        "No CUDA GPU is visible to the program",
        "\
`CUDA_ERROR_NO_DEVICE` (100), \"no CUDA-capable device is detected\", or nvidia-smi's \"No devices
were found\". The driver loaded but shows no GPU: CUDA_VISIBLE_DEVICES is empty or wrong, a
container was started without GPUs, /dev/nvidia* is not accessible, or the machine has none.

Confirm: `echo $CUDA_VISIBLE_DEVICES`; `ls -l /dev/nvidia*`; `nvidia-smi -L`.

Fix: unset or correct CUDA_VISIBLE_DEVICES; run containers with `--gpus all`; add the user to
the group owning /dev/nvidia* (often `video`).",
    ),
    doc(
        "invalid-device-ordinal",
        Run,
        "The program asked for a GPU index that does not exist",
        "\
`CUDA_ERROR_INVALID_DEVICE` (101), \"invalid device ordinal\": a device index at or above the
number of visible GPUs. CUDA_VISIBLE_DEVICES renumbers the GPUs from 0.

Confirm: `nvidia-smi -L`; `echo $CUDA_VISIBLE_DEVICES`.

Fix: use an index below the visible count, or widen CUDA_VISIBLE_DEVICES.",
    ),
    doc(
        "device-unavailable",
        Run,
        "The GPU is busy or unavailable",
        "\
`CUDA_ERROR_DEVICE_UNAVAILABLE` (46), \"CUDA-capable device(s) is/are busy or unavailable\": the
GPU is in exclusive-process compute mode and in use, or it is prohibited.

Confirm: `nvidia-smi -q -d COMPUTE` and the process list in `nvidia-smi`.

Fix: wait for (or stop) the other process, or `sudo nvidia-smi -c DEFAULT`.",
    ),
    doc(
        "cuda-runtime-lib-not-found",
        Load,
        "A CUDA toolkit library (libcudart, libcublas, libnvrtc, ...) is not found at link or load time",
        "\
The linker (`cannot find -lcudart`) or the loader (`libcudart.so.12: cannot open shared object
file`) could not find a toolkit library. At link time the toolkit's lib directory is not on
the search path; at run time the program was linked against a toolkit library that is not
installed or not on LD_LIBRARY_PATH on this machine.

Confirm: `ldd ./program | grep 'not found'`.

Fix: link statically (cudart_static), add the toolkit's lib64 directory to LD_LIBRARY_PATH or
the rpath, or install the matching runtime (apt `cuda-cudart-13-0`, pip
`nvidia-cuda-runtime`). Unlike framework-lib-not-found (a framework's own CUDA library, such as
libtorch_cuda), these libraries come with the CUDA toolkit; the driver's libcuda is
libcuda-not-found.",
    ),
    doc("device-function-unresolved", Link, "A kernel calls a device function defined in another file", "\
The device code calls a __device__ function whose definition is not in the same .cu file:
`ptxas fatal   : Unresolved extern function '_Z6helperf'` (compiled without relocatable
device code), or `nvlink error   : Undefined reference to '_Z6helperf' in 'a.o'` (the device link
found no file that defines it). Without -rdc every .cu file is compiled on its own, so a call
across files cannot be resolved. The host linker's `undefined reference to
`__cudaRegisterLinkedBinary_...'` is the other half: objects compiled with -rdc were linked
without the device-link step (`nvcc -dlink`), whose output defines that symbol.

Confirm: `cu++filt _Z6helperf` names the function; grep the sources for its definition.

Fix: compile with relocatable device code and a device link step (Build::rdc(true), nvcc
-rdc=true), and make sure the file that defines the function is part of the same build;
or move the function into a header (as `__device__ inline`) so each file has its own copy.
A mismatch between extern \"C\" and C++ names gives the same error."),
    doc("kernel-exceeds-target-limit", Compile, "A kernel needs more static shared memory or parameter space than ptxas allows", "\
ptxas checks two limits on every kernel, for every target, whatever GPU will run it:
`ptxas error   : Entry function '_Z4tileILi128EEvPf' uses too much shared data (0xc400 bytes,
0xc000 max)`: statically declared `__shared__` memory is limited to 48 KB per block on every
architecture since sm_20 (16 KB on sm_1x); and `uses too much parameter space (0x1100 bytes,
0x1000 max)`: kernel parameters were limited to 4 KB until CUDA 12.1, which raised the limit to
32,764 bytes on sm_70 and newer. A project's kernel that hits the first was sized for other
architectures, precisions or tile settings than the ones built.

Confirm: `cu++filt` on the name ptxas gives shows the kernel and its template arguments; the
hex counts are bytes used and allowed.

Fix: shared memory: build the configuration the project supports for this architecture, or
update it; in your own kernel, move the array to dynamic shared memory (`extern __shared__`, the
size as the launch's third parameter) and above 48 KB raise cudaFuncAttributeMaxDynamicSharedMemorySize
(up to 96 KB on sm_70, 64 KB on sm_75, 163 KB on sm_80, 99 KB on sm_86/sm_89, 227 KB on sm_90).
Parameters: CUDA 12.1 or newer with sm_70+ targets only, or pass the data through device memory
(a pointer, or `__constant__` memory)."),
    doc("cuda-compiled-as-cpp", Compile, "CUDA source was compiled as plain C++", "\
A host C++ compiler read CUDA code: g++'s `error: '__global__' does not name a type` (or
`__device__`), clang's `unknown type name '__global__'`. Only nvcc's CUDA front end knows these
keywords. nvcc compiles a .cpp or .cc file as plain C++ unless given `-x cu`, and a C++ compiler
(g++, clang++, cl.exe, a build script's cc without its CUDA mode) given a .cu file does the same.

Confirm: the failing command compiles the file with g++/clang++/cl, or with nvcc on a .cpp file
without `-x cu`.

Fix: rename the file to .cu, or pass `-x cu` before it (CMake: set_source_files_properties(...
PROPERTIES LANGUAGE CUDA)); compile .cu files with nvcc (cc-rs: `.cuda(true)`)."),
    doc("cxx-standard-too-old", Compile, "A CUDA library header needs a newer C++ standard than the file is compiled with", "\
A header of the toolkit's libraries refuses the C++ standard: CUDA 13's CCCL says `#error CUB
requires at least C++17` (Thrust's and libcu++'s say the same), older Thrust `#error C++11 is
required for this Thrust feature`. The toolkit is fine: the build passes an older `-std`
(`-std=c++14`, CMAKE_CUDA_STANDARD 14), or none, and nvcc takes its host compiler's default
(C++14 for MSVC, g++ before 11 and clang before 16).

Confirm: the nvcc command line's `-std=`; `CMAKE_CUDA_STANDARD` in the CMake files.

Fix: compile the .cu files, and the C++ sources sharing their headers, with `-std=c++17`
(Build::std(\"17\"); CMake CUDA_STANDARD 17 with CUDA_STANDARD_REQUIRED ON), or stay on a
toolkit older than CUDA 13, which still accepts C++14 with a deprecation warning."),
    doc("math-constants-undefined", Compile, "The M_* math constants (M_PI, M_SQRT1_2, ...) are not defined for this compiler", "\
A CUDA source uses `M_PI`, `M_SQRT1_2`, `M_2_SQRTPI` or another `M_*` constant, and the compiler
does not know it: cudafe++'s `error: identifier \"M_PI\" is undefined`, MSVC's `error C2065:
'M_PI': undeclared identifier` (translated in other languages; C2065 stays), g++'s `'M_PI' was
not declared in this scope`. These constants are not standard C or C++: glibc's math.h defines
them; MSVC's math.h only when `_USE_MATH_DEFINES` is defined before its first inclusion; NVRTC
(kernels compiled at run time) has no math.h. nvcc's host pass includes math.h (through
cuda_runtime.h) before the source's own lines, so a `#define _USE_MATH_DEFINES` in the .cu file
comes too late.

Confirm: the build runs on Windows with cl.exe as nvcc's host compiler, or the kernel is
compiled by NVRTC.

Fix: define `_USE_MATH_DEFINES` for the whole compile (`-D_USE_MATH_DEFINES`;
Build::define(\"_USE_MATH_DEFINES\", None); CMake add_compile_definitions), as candle-kernels does
for MSVC; or define the constant where it is missing, or use a standard one (C++20
std::numbers::pi, CUDA's CUDART_PI_F from math_constants.h)."),
    doc("nvcc-unknown-option", Compile, "nvcc was given an option or argument it cannot use", "\
nvcc refused an option: `nvcc fatal   : Unknown option '-Wall'`. Host-compiler flags such as
-Wall, -fPIC, -march=native are not nvcc options; nvcc passes them on only when wrapped.
Or nvcc took a word for a second input file: `Don't know what to do with 'Files/NVIDIA'`, `A
single input file is required for a non-link phase when an outputfile is specified`: a path
with a space split in two, or an option's value without its option.

Confirm: `nvcc --help | grep -- <option>`.

Fix: wrap host-compiler flags: `-Xcompiler=-Wall,-fPIC` (Build::flag(\"-Xcompiler=-Wall\")); for
linker flags use -Xlinker. Check NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS for stray flags. Pass
every argument as one element (never through a shell), or use paths without spaces."),
    doc("compiler-killed", Compile, "A compiler process was killed or ran out of memory, usually for lack of host memory", "\
nvcc reports that one of its stages was killed: `nvcc error   : 'cicc' died due to signal 9 (Kill
signal)` (also cudafe++ or ptxas), or `c++: fatal error: Killed signal terminated program
cc1plus`. Signal 9 during a compile almost always means the kernel's out-of-memory killer
stopped it: heavy template code (CUTLASS, CUB, thrust) needs gigabytes per file, and parallel
builds multiply that. A build script that reports a failed nvcc with empty output (cudaforge's
`message: \"nvcc error:\\n\\n\"`, bindgen_cuda's empty `# stdout` / `# stderr`) shows the same
thing without the signal: nvcc always says why it rejects a file, so it died first; on Windows
this is seen with a few dozen nvcc processes started at once. A compiler that runs out of
memory without being killed says so itself: `catastrophic error: out of memory` (cudafe++ and
cicc), `ptxas fatal   : Memory allocation failure`, MSVC's C1060 `compiler is out of heap space`.

Confirm: `dmesg | grep -i -E 'killed process|out of memory'`; watch `free -h` during the build;
run the failed nvcc command alone (it succeeds when parallelism or memory was the cause).

Fix: run fewer compiles at once, with the knob of the builder that runs them. cargo's -j
(CARGO_BUILD_JOBS) bounds only build scripts that use its jobserver; cudaforge runs its own
pool (CUDAFORGE_THREADS=1, or RAYON_NUM_THREADS; default half the cores), bindgen_cuda one nvcc
per physical core (RAYON_NUM_THREADS=1); PyTorch extensions follow MAX_JOBS, and setups that
pass nvcc `--threads` (flash-attention's NVCC_THREADS) multiply each job's memory; CMake:
`cmake --build <dir> -j 2`. Or add RAM or swap, or split the largest .cu files; in containers
raise the memory limit. cuda-build plans its compiles within a memory budget (80% of MemAvailable or of the cgroup's
limit; CUDA_BUILD_MEMORY_BUDGET sets it) and compiles a file killed beside others again, alone;
its error `error[compiler-killed]: nvcc was killed while it compiled ...` means the file did not
fit even alone. Lower the budget when other build scripts or programs use memory at the same
time: each build script keeps its own."),
    doc("toolkit-unsupported-by-crate", Toolkit, "A crate (cudarc, candle, ...) does not support the installed CUDA version", "\
A crate that ships its own CUDA bindings chose them by the installed toolkit's version and has
none for it: cudarc's build script panics with `Unsupported cuda toolkit version: `12.6`. Please
raise a github issue.` (the version may be written `12060`). The toolkit is newer (sometimes
older) than the crate release that the dependency tree pins; the toolkit itself is fine.

Confirm: `nvcc --version` for the toolkit; `cargo tree -i cudarc` for the crate release and who
pulls it in; the crate's changelog for the first release that supports that CUDA version.

Fix: update the crate (`cargo update -p cudarc`, or a newer candle / mistral.rs that depends on
a newer cudarc); or build against a toolkit the crate supports (point CUDA_HOME at it, or
`cargo cuda build`, which picks a detected toolkit and exports CUDA_HOME for build scripts);
cudarc also reads CUDARC_CUDA_VERSION (e.g. 12040) to choose its bindings explicitly. Unlike
toolkit-requirement (cuda-build's own version requirement, from this project), the limit here is
the other crate's."),
    doc("sccache-nvcc-failed", Compile, "sccache failed while wrapping nvcc", "\
The compile went through sccache (as RUSTC_WRAPPER, CUDA_BUILD_WRAPPER or a build script's
compiler wrapper), and sccache's own nvcc handling failed, not nvcc: `sccache: Compiler killed
by signal 126`, or `sccache: error: Failed to open file for hashing:
/tmp/sccache_nvccXXXX/x.module_id`. Older sccache releases run nvcc's stages themselves
(`nvcc --dryrun`) and lose the intermediate files some CUDA versions write. nvcc is installed.

Confirm: build once without the wrapper (`CUDA_BUILD_WRAPPER= cargo build`, or unset
RUSTC_WRAPPER / SCCACHE for that build) and compare; `sccache --version`.

Fix: unset CUDA_BUILD_WRAPPER (or the wrapper setting your build script honours) so nvcc runs
directly, or upgrade sccache to a release with fixed nvcc support."),
    doc("compute-cap-query-unsupported", Driver, "nvidia-smi is too old to report the compute capability", "\
A build script asked nvidia-smi for the GPU's compute capability (`nvidia-smi
--query-gpu=compute_cap --format=csv`, as candle's and bindgen_cuda's build scripts do) and
nvidia-smi answered `Field \"compute_cap\" is not a valid field to query.`: the field exists only
in drivers from the 510 branch on. The build script then cannot choose a GPU architecture.

Confirm: `nvidia-smi --version` (driver below 510); `nvidia-smi -q | grep -i 'product name'`
for the GPU, whose compute capability NVIDIA's tables give.

Fix: set the architecture yourself: CUDA_COMPUTE_CAP=86 (what candle and bindgen_cuda read),
or `cargo cuda build`, which sets CUDA_COMPUTE_CAP from the driver API; or upgrade the driver."),
    doc("cuda-backend-not-built", Load, "The library in use (libtorch, ONNX Runtime, llama.cpp, ...) was built without CUDA", "\
The framework runs, but the binary it loaded has no CUDA support, so asking for the GPU fails:
`Torch not compiled with CUDA enabled`, tch-rs's `Could not run 'aten::empty_strided' with
arguments from the 'CUDA' backend` (a CPU-only libtorch), ort's `CUDA execution provider is not
enabled in this build` (the CPU-only ONNX Runtime was downloaded). The driver and GPU may be fine.

Confirm: which library file is loaded (LIBTORCH, `ldd`, ORT_DYLIB_PATH) and whether it is a CUDA
build (libtorch_cuda.so next to libtorch.so; onnxruntime_providers_cuda).

Fix: install or download the CUDA build of the library (libtorch for your CUDA version, ort with
its `cuda` feature or a CUDA ONNX Runtime), and point the crate at it (LIBTORCH, ORT_DYLIB_PATH);
for tch-rs also make sure libtorch_cuda is linked (`-Wl,--no-as-needed`)."),
    doc("bf16-kernel-unavailable", Load, "A bf16 kernel was compiled out for this GPU: it exists only for sm_80 and newer", "\
A kernel that uses bfloat16 is not in the module loaded on this GPU: candle compiles its bf16
kernels only for `__CUDA_ARCH__ >= 800`, so on a pre-Ampere GPU (T4 = 7.5, 2080 Ti = 7.5, P100 =
6.0) loading `cast_f32_bf16` or `is_u32_bf16` fails with `DriverError(CUDA_ERROR_NOT_FOUND,
\"named symbol not found\")`. A build for the lowest of several GPUs does the same.

Confirm: `nvidia-smi --query-gpu=name,compute_cap --format=csv` (below 8.0); the kernel name in
the message ends in bf16.

Fix: run the model in f16 or f32 (`--dtype f16`), or use a GPU with compute capability 8.0 or
newer; with mixed GPUs build for the newer one (CUDA_COMPUTE_CAP=89, or `cargo cuda build`).
Unlike kernel-not-found, the name is right: the kernel exists in the source and was compiled out
for this architecture."),
    doc("container-device-missing", Driver, "The GPU device nodes are missing for the container", "\
The container runtime was asked to pass the GPU in and the device node does not exist on the
host: `lstat /dev/nvidia0: no such file or directory`, `stat failed: /dev/nvidiactl`,
`/dev/nvidia-uvm` missing. The nvidia kernel module creates these nodes; without a loaded driver
(or on a Jetson, a WSL host, a machine without an NVIDIA GPU) they are absent.

Confirm: `ls -l /dev/nvidia*` on the host; `nvidia-smi` on the host; `lsmod | grep nvidia`.

Fix: install and load the NVIDIA driver on the host (`sudo modprobe nvidia nvidia-uvm`, or
`nvidia-modprobe -u -c=0`), or stop passing devices the host does not have (drop the --device
flags; on Jetson use the runtime's own device list)."),
    doc("container-runtime-missing", Driver, "Docker has no NVIDIA runtime for --gpus", "\
Docker was asked for GPUs (`--gpus all`, or a compose `deploy.resources` GPU reservation) and has
no device driver for them: `could not select device driver \"\" with capabilities: [[gpu]]`. The
NVIDIA Container Toolkit is not installed or not registered with Docker, or the machine has no
NVIDIA GPU at all.

Confirm: `nvidia-ctk --version`; `docker info | grep -i runtime`; `nvidia-smi` on the host.

Fix: install the NVIDIA Container Toolkit and register it (`sudo nvidia-ctk runtime configure
--runtime=docker && sudo systemctl restart docker`); on a machine without a GPU drop `--gpus`
and use the CPU image."),
    doc("torch-cuda-version-mismatch", Toolkit, "The CUDA toolkit differs from the one PyTorch was built with", "\
A PyTorch C++/CUDA extension build (torch.utils.cpp_extension) found an nvcc whose CUDA version
differs from the one PyTorch was compiled with, and refused: `The detected CUDA version (11.8)
mismatches the version that was used to compile PyTorch (12.4)`.

Confirm: `nvcc --version` and `python -c 'import torch; print(torch.version.cuda)'`.

Fix: point CUDA_HOME at a toolkit of PyTorch's CUDA version (`cargo cuda toolkits` lists the
installed ones), or install the PyTorch build for your toolkit's CUDA version."),
    doc("nouveau-holds-gpu", Driver, "Another driver (nouveau) holds the GPU, so the nvidia module cannot use it", "\
The kernel log shows the nvidia module loaded but unable to take the GPU: `NVRM: No NVIDIA
graphics adapter probed!`, `NVRM: The NVIDIA probe routine was not called for 1 device(s)`,
`NVRM: nouveau, rivafb, nvidiafb or rivatv was loaded and obtained ownership of the NVIDIA
device(s)`, or the installer's `The Nouveau kernel driver is currently in use`.

Confirm: `lsmod | grep nouveau`; `lspci -k -d 10de:` shows which driver is in use.

Fix: blacklist nouveau (`/etc/modprobe.d/blacklist-nouveau.conf` with `blacklist nouveau` and
`options nouveau modeset=0`), rebuild the initramfs (`sudo update-initramfs -u`), reboot."),
    doc("gpu-unsupported-by-driver", Driver, "The loaded NVIDIA kernel driver does not support this GPU", "\
The nvidia module loaded and refused the GPU: the open kernel modules need a GPU with a GSP
(Turing and newer) and print `NVRM: ... is not supported by open nvidia.ko because it does not
include the required GPU System Processor`; a legacy GPU on a driver branch that dropped it
gives `NVRM: The NVIDIA ... GPU ... is supported through the NVIDIA ... Legacy drivers`.

Confirm: `dmesg | grep NVRM`; `lspci -nn -d 10de:` for the GPU's PCI ID, and NVIDIA's
supported-GPU list of the driver release.

Fix: install the proprietary kernel module for pre-Turing GPUs (not the -open one), or the
driver branch that still supports the GPU."),
    doc("msbuild-cuda-integration-missing", Toolkit, "Visual Studio has no CUDA build integration", "\
CMake's Visual Studio generator found the CUDA toolkit but not its MSBuild integration files:
`No CUDA toolset found.` The CUDA installer copies them into Visual Studio's
BuildCustomizations folder only for the Visual Studio versions installed at that time.

Confirm: look for `CUDA 12.x.props` in `<VS>\\MSBuild\\Microsoft\\VC\\v170\\BuildCustomizations`.

Fix: rerun the CUDA installer with the Visual Studio Integration component, or copy the files
from `<CUDA>\\extras\\visual_studio_integration\\MSBuildExtensions`; or use the Ninja generator
(`-G Ninja` with CUDACXX pointing at nvcc)."),
    doc("framework-lib-not-found", Load, "A framework's own CUDA library (libtorch_cuda, ggml-cuda, ONNX Runtime providers) is not on the loader's path", "\
The program needs the CUDA part of a framework it links or loads, and the loader cannot find it:
`libtorch_cuda.so: cannot open shared object file` (tch-rs and libtorch),
`Failed to load library libonnxruntime_providers_shared.so` / `_cuda.so` (ort's CUDA execution
provider), `libggml-cuda.so` (llama.cpp bindings). These come with the framework, not with the
CUDA toolkit: the toolkit's lib64 on LD_LIBRARY_PATH does not help. The framework's library
directory is missing from the loader's path, or the files were not copied next to the binary.

Confirm: `ldd ./program | grep 'not found'`; `ls $LIBTORCH/lib` (libtorch_cuda.so should be
there); for ort, `ls target/<profile>/` next to the binary.

Fix: add the framework's library directory to LD_LIBRARY_PATH (libtorch: `$LIBTORCH/lib`, not
`$LIBTORCH`) or link with an rpath to it; for ort, let it copy the provider libraries next to
the binary (its `copy-dylibs` feature) and link with the rpath `$ORIGIN`
(`-C link-args=-Wl,-rpath,$ORIGIN`), or point ORT_DYLIB_PATH at the full ONNX Runtime.
Unlike cuda-runtime-lib-not-found (a toolkit library such as libcudart or libcublas), the missing
file ships with the framework; a framework without the file at all is cuda-backend-not-built."),
    doc("library-op-unsupported", Run, "A CUDA math library (cuBLAS, cuDNN, cuFFT) does not support this operation on this GPU or data type", "\
A math library refused the call before running it: `CUBLAS_STATUS_NOT_SUPPORTED`,
`CUBLAS_STATUS_ARCH_MISMATCH`, `CUDNN_STATUS_NOT_SUPPORTED`, `CUDNN_STATUS_ARCH_MISMATCH`,
`CUFFT_NOT_SUPPORTED`. The GPU lacks the data type or unit the call needs (bf16 and tf32 need
sm_80, fp16 tensor cores sm_70, fp8 sm_89), the library release is too old for the GPU (or has
dropped it), or this combination of types, layouts and sizes is not implemented. A CUDA
translation layer on a non-NVIDIA GPU (ZLUDA) reports the same for what it cannot map.

Confirm: `nvidia-smi --query-gpu=name,compute_cap --format=csv` for the GPU; the dtype of the
call (the log names cublasGemmEx's CUDA_R_16BF / CUDA_R_16F, or the tensor's dtype); the
library's version (`ls /usr/local/cuda/lib64/libcublas.so.*`, `pip show nvidia-cublas-cu12`).

Fix: run in a dtype the GPU has (f32 or f16 below sm_80), update the library (a CUDA 12.8+ cuBLAS
for Blackwell), or change the unsupported shape or layout (contiguous tensors, a supported
algorithm). See also arch-feature-needs-higher-target for the same limit at compile time."),
    doc("cuda-dependency-fetch-failed", Compile, "A build step could not download a CUDA dependency (CUTLASS, cuDNN, a toolkit)", "\
A build script or CMake step fetches a CUDA dependency while building and the fetch failed:
cudaforge's `GitOperationFailed(\"git clone failed ...\")` for CUTLASS, candle-flash-attn's
`Failed to clone cutlass repository`, `fatal: unable to access 'https://github.com/NVIDIA/cutlass'`,
FetchContent's `Failed to clone repository`, a download of cuDNN or a toolkit that timed out.
Nothing is wrong with the toolkit; the build never got the dependency's sources.

Confirm: run the fetch by hand (`git clone https://github.com/NVIDIA/cutlass`); `git --version`
(an `os error 2` / `No such file or directory` means git itself is not installed, as in slim
build containers); proxy variables (HTTPS_PROXY) and whether the build runs offline.

Fix: install git (or curl) in the build environment, let it reach github.com (or a proxy), or
point the build at a copy fetched beforehand (the crate's CUTLASS_DIR-style variable, a vendored
or git-submodule checkout); in CI, cache the dependency. See also header-dep-missing for
dependencies cuda-build itself pins."),
    doc("cuda-object-not-pic", Link, "CUDA objects built without -fPIC were linked into a position-independent binary or library", "\
The linker refused a relocation in an object nvcc produced: `relocation R_X86_64_32 against
`.rodata' can not be used when making a PIE object; recompile with -fPIE`, or rust-lld's
`relocation R_X86_64_PC32 cannot be used against symbol ...; recompile with -fPIC` with a
`.cu.o` or an nvcc temporary (`tmpxft_..._cudafe1.cpp`) as the referencing object. Rust links
position-independent executables on Linux, and shared libraries are always position-independent;
nvcc does not pass -fPIC to the host compiler unless told to.

Confirm: the object named in the error is a .cu object, or comes from a static library a build
script built with nvcc; `readelf -r obj.o | grep R_X86_64_32` shows absolute relocations.

Fix: compile every .cu with `-Xcompiler -fPIC` (cc-rs: `.flag(\"-Xcompiler\").flag(\"-fPIC\")`;
CMake: POSITION_INDEPENDENT_CODE ON) and the device-link step as well (`nvcc -dlink -Xcompiler
-fPIC`). As a stopgap, link the executable without PIE (`-C relocation-model=static`)."),
    doc("driver-state-lost", Driver, "The driver lost the GPU's state (after suspend/resume, a GPU reset or an Xid fault)", "\
The GPU and its driver were working, and now every CUDA call fails with errors that name no
cause: `unspecified launch failure` (719), `unknown error` (999), `all CUDA-capable devices are
busy or unavailable` (46), `CUDA_ERROR_LAUNCH_FAILED` even for trivial kernels. Typical after the
machine resumed from suspend or hibernation (the nvidia_uvm module loses its state), after a GPU
reset, or after an Xid error in the kernel log (`NVRM: Xid`, `GPU has fallen off the bus`).

Confirm: does a trivial CUDA program fail too (`nvidia-smi`, cuda-samples' deviceQuery,
`python -c \"import torch; torch.zeros(1).cuda()\"`)? If yes, it is the driver's state, not the
program; `dmesg | grep -i -E 'xid|nvrm'` shows faults; `journalctl -b | grep -i suspend` shows a
resume. If a trivial program works, the kernel itself faulted: see illegal-address.

Fix: reload the UVM module (`sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm`, with no CUDA
program running), or reboot; for laptops, enable NVIDIA's suspend services
(`nvidia-suspend.service`, `nvidia-resume.service`) with
`NVreg_PreserveVideoMemoryAllocations=1`. Repeated Xid 79 (fallen off the bus) points at power or
hardware."),
    // ------------------------------------ raised by cuda-build's own modules
    doc("nvcc-failed", Compile, "nvcc failed, and no known cause was recognised", "\
nvcc (or `nvcc --version`) exited with an error that matches none of the documented causes.
cuda-build shows nvcc's own output below the error.

Confirm: rerun the printed nvcc command by hand; `cargo cuda explain <log>` on its output.

Fix: read nvcc's first `error`/`fatal` line; if it is a compile error in your .cu file, fix
the source. If nvcc itself cannot start (a damaged install, a binary for another platform),
reinstall the toolkit."),
    doc("nvcc-not-executable", Toolkit, "nvcc exists but cannot be executed", "\
The file named as nvcc has no execute permission (or the file system is mounted noexec).

Confirm: `ls -l $(which nvcc)`; `mount | grep noexec`.

Fix: `chmod +x <toolkit>/bin/nvcc`, or reinstall the toolkit."),
    doc("nvcc-timeout", Compile, "nvcc did not finish in time", "\
nvcc (or `nvcc --version`) ran past cuda-build's deadline and was killed. A wrapper script
waiting on input, a license or network check, or a very large kernel can cause it.

Confirm: time the printed command by hand.

Fix: fix or replace the hanging wrapper; for genuinely long compiles raise
CUDA_BUILD_TIMEOUT (seconds)."),
    doc("nvcc-bad-version", Toolkit, "`nvcc --version` did not print a CUDA release", "\
The program named as nvcc answered `--version` without the `Cuda compilation tools, release
X.Y, VX.Y.Z` line: it is not a working nvcc (a stub, a wrapper that hides the output, or
another program).

Confirm: run `<nvcc> --version` by hand.

Fix: point NVCC or CUDA_HOME at a real toolkit, or reinstall it."),
    doc("nvcc-symlink", Toolkit, "nvcc is reached through a symlink outside its toolkit", "\
nvcc reads nvcc.profile from the directory it is started from. Run through a symlink such as
/usr/bin/nvcc -> /usr/local/cuda/bin/nvcc it finds no headers or libdevice, and compiles fail
with missing cuda_runtime.h.

Confirm: `ls -l $(which nvcc)`.

Fix: use the toolkit's own bin/nvcc (set CUDA_HOME to the toolkit root)."),
    doc("nvcc-path-mismatch", Toolkit, "The nvcc on PATH is not the toolkit cuda-build selected", "\
cuda-build selected one toolkit (for example from CUDA_HOME), but `nvcc` on PATH belongs to
another. Builds through cuda-build are consistent; nvcc run by hand, CMake, and other tools
that use PATH compile with the other toolkit.

Confirm: `which nvcc` and `cargo cuda toolkits`.

Fix: put the selected toolkit's bin first on PATH, or point CUDA_HOME at the one on PATH."),
    doc("toolkit-version-mismatch", Toolkit, "Files of two CUDA installs are mixed in one directory", "\
The toolkit's version.json (or version.txt) names another release than nvcc reports: a newer
install was unpacked over an older one, or components were copied between releases.

Confirm: `cat <toolkit>/version.json` against `nvcc --version`.

Fix: remove the directory and reinstall one release cleanly."),
    doc("toolkit-version-json", Toolkit, "The toolkit's version.json is malformed", "\
<toolkit>/version.json could not be read as JSON. cuda-build falls back to nvcc's own version;
other tools that read the file may fail.

Confirm: `python3 -m json.tool <toolkit>/version.json`.

Fix: reinstall the toolkit (the file is written by the installer)."),
    doc("toolkit-requirement", Toolkit, "No installed toolkit meets the version this project asks cuda-build for", "\
The crate asks for a toolkit version (`[package.metadata.cuda] toolkit = \"^12.4\"` or the
builder's requirement), and none of the toolkits found matches it. The error lists every
toolkit found with its version.

Confirm: `cargo cuda toolkits`.

Fix: install a matching toolkit and set CUDA_HOME to it, or relax the requirement. Unlike
toolkit-unsupported-by-crate (another crate's build script or bindings refusing the installed
CUDA), this requirement is the project's own, given to cuda-build."),
    doc("toolkit-env-conflict", Toolkit, "Two variables name different CUDA toolkits", "\
NVCC, CUDA_HOME, CUDA_PATH, CUDA_TOOLKIT_PATH, CUDACXX, CUDA_ROOT or CUDA_TOOLKIT_ROOT_DIR point
at different toolkits, or a crate of the build that looks for CUDA on its own (cudarc, NVIDIA's
cuda-bindings/cuda-core, a CMake build) would find another one. cuda-build follows its
precedence (NVCC, then CUDA_HOME, ...), but tools that read the other variable use the other
toolkit, so objects from two releases can end up in one program.

Confirm: `cargo cuda doctor` (toolkit.conflicts, toolkit.consumers).

Fix: set them to the same toolkit, or unset the stale one. `cargo cuda build` hands every crate
the selected toolkit; `cargo cuda env --write` does the same for plain cargo."),
    doc("toolkit-broken-link", Toolkit, "A toolkit symlink points at nothing", "\
A link such as /usr/local/cuda points at a toolkit that was removed.

Confirm: `ls -l /usr/local/cuda`.

Fix: repoint the link at an installed toolkit (`sudo ln -sfn /usr/local/cuda-12.4
/usr/local/cuda`, or `update-alternatives --config cuda`), or remove it."),
    doc("no-cuda-sources", Compile, "No .cu files were given to compile", "\
The builder was given a directory or glob that matches no .cu files, so there is nothing to
compile.

Confirm: list the directory named in the error.

Fix: add .cu files there, or point Build::dir / Build::glob at the directory that has them."),
    doc("write-failed", Compile, "A file could not be written", "\
cuda-build could not write an output (a kernel image, the generated module, a cache entry):
the directory is missing or read-only, or the disk is full.

Confirm: check the path named in the error, its permissions, and `df -h`.

Fix: free space or fix permissions; set OUT_DIR / CUDA_BUILD_CACHE_DIR to a writable place."),
    doc("nvcc-bad-output", Compile, "The compiler exited successfully but wrote a bad output", "\
nvcc (or the wrapper around it) exited 0, yet the file it was asked to write is missing,
truncated or not what the output kind needs (a fatbin without its header, a cubin that is not a
whole ELF file, PTX without `.version`/`.target`, an archive with no member). cuda-build checks
every output before it uses or caches it, so nothing was kept.

Confirm: run the command shown in the error by hand and look at the file it writes; check that
NVCC or CUDA_BUILD_WRAPPER names the real nvcc, and the free space in OUT_DIR.

Fix: point NVCC / CUDA_HOME at a real toolkit, unset a wrapper that swallows nvcc's output, or
free disk space."),
    doc("module-name-collision", Compile, "Two builds in one build script write the same module", "\
Two `Build`s given to `compile_all` (or run in one script) use the same module name, so one
generated `$OUT_DIR/<name>.rs` and manifest would overwrite the other.

Confirm: the error names both builds and the module name.

Fix: give each build its own `module_name(...)`."),
    doc("output-collision", Compile, "Two sources would write the same output file", "\
With a shared output directory or the source-stem file names (`output_names`), two sources
map to one output path (`a/x.cu` and `b/x.cu` both to `x.ptx`), and one would overwrite the other.

Confirm: the error names both sources and the output.

Fix: rename one source, exclude it, or keep the default per-module layout."),
    doc("output-overwrites-source", Compile, "An output location would overwrite sources", "\
The output directory chosen with `output_dir(...)` lies inside the package's sources, or an
output would replace a source file; cuda-build refuses rather than overwrite code.

Confirm: compare the output directory in the error with the source directories.

Fix: put outputs under OUT_DIR (the default) or another directory outside the sources."),
    doc("invalid-glob", Compile, "A source glob or exclude pattern does not parse", "\
A pattern given to `Build::glob` or `Build::exclude` is not a valid glob (an unclosed `[` or `{`).

Confirm: the error names the pattern and what is wrong with it.

Fix: correct the pattern; `**/*.cu` matches every .cu file below the package root."),
    doc("internal", Compile, "cuda-build hit a state it does not expect", "\
An invariant of cuda-build failed (a worker thread panicked, a result went missing). This is a
bug in cuda-build, not in your setup.

Confirm: rerun the build; the error says where it happened.

Fix: report it with the full output; meanwhile `CUDA_BUILD_NO_CACHE=1` or NUM_JOBS=1 may avoid it."),
    doc("libclang-not-found", Compile, "libclang, needed for the typed launchers, was not found", "\
The `launchers` feature parses the CUDA sources with libclang, and no libclang shared library
was found.

Confirm: `ldconfig -p | grep libclang`.

Fix: install it (`apt-get install libclang-dev`, or LLVM from your package manager) and set
LIBCLANG_PATH to its directory if it is not on the loader path, or disable the feature."),
    doc("invalid-argument", Compile, "A command-line argument is missing or invalid", "\
A `cargo cuda` option lacks its value or has one it cannot use (for example a log file that
cannot be read).

Confirm: `cargo cuda help <command>`.

Fix: pass the argument as the help shows."),
    doc("split-compile-invalid", Compile, "A split count that depends on the building machine", "\
`Build::split_compile(0)` (or `.file_split_compile(file, 0)`) would ask nvcc's `--split-compile 0`
for one part per CPU of whatever machine builds. The split count changes the bytes of the
output, so the same package would give different kernels on different machines, and the
kernel cache and shipped images could never match.

Confirm: the message names the call; `grep -n split_compile build.rs`.

Fix: give a fixed count (`.split_compile(4)`), the same on every machine; `1` turns
splitting off."),
    doc("timings-not-writable", Compile, "The kernel timings report cannot be written", "\
`cargo cuda build --timings` writes `cuda-timing.html` and `.json` beside cargo's own report in
`<target-dir>/cargo-timings`; that folder could not be created or written.

Confirm: `ls -ld <target-dir>/cargo-timings` (the message names it).

Fix: make the target directory writable, or pass `--target-dir` to one that is."),
    doc("toolkit-not-found", Toolkit, "A toolkit directory given explicitly does not exist", "\
A toolkit root given explicitly (`--toolkit`, Build::toolkit, or a variable) is not a
directory, or has no bin/nvcc.

Confirm: `ls <dir>/bin/nvcc`; `cargo cuda toolkits` lists what was found.

Fix: pass the toolkit root, the directory that holds bin/nvcc (e.g. /usr/local/cuda-13.0)."),
    doc("source-not-found", Compile, "A CUDA source file does not exist", "\
A .cu file given to the builder does not exist or is not a file.

Confirm: check the path named in the error; relative paths are taken from the package directory.

Fix: fix the path given to Build::file / files."),
    doc("include-dir-missing", Compile, "An include directory does not exist", "\
A directory given to Build::include does not exist, so headers in it cannot be found.

Confirm: check the path named in the error; relative paths are taken from the package directory.

Fix: fix the path, or create the directory."),
    doc("invalid-module-name", Compile, "The generated module's name is not valid", "\
Build::module_name must be letters, digits, `_` or `-`, because it names the generated
`$OUT_DIR/<name>.rs` file that the crate includes.

Confirm: look at the name in the error.

Fix: choose a plain name such as `kernels`."),
    doc("invalid-link-modifier", Link, "A static library's link modifier is not one rustc takes here", "\
Build::link_lib_modifier takes `+` or `-` followed by `bundle` or `whole-archive`, each at most
once. They go into the `cargo:rustc-link-lib=static:<modifiers>=<name>` line. `verbatim` is
refused because cuda-build names the archive file itself.

Confirm: the error quotes the modifier and says what is wrong with it.

Fix: use \"-bundle\" to keep the archive out of the rlib (the final link takes it from
OUT_DIR), or \"+whole-archive\" to keep objects nothing references."),
    doc("out-dir-unset", Compile, "OUT_DIR is not set", "\
The builder needs an output directory. Cargo sets OUT_DIR for build scripts; outside one,
nothing does.

Confirm: is the builder called from build.rs?

Fix: call cuda_build::Build from build.rs, or set Build::out_dir."),
    doc("out-dir-not-writable", Compile, "The output directory is not writable", "\
cuda-build could not write into the output directory (permissions, a read-only mount).

Confirm: `ls -ld <dir>` for the directory named in the error.

Fix: make it writable, or choose another with CARGO_TARGET_DIR / Build::out_dir."),
    doc("disk-full", Compile, "The disk filled up during the build", "\
nvcc or cuda-build got `No space left on device` while writing kernels or cache files.

Confirm: `df -h` on the target directory and on /tmp (nvcc writes temporaries there).

Fix: free space, or move CARGO_TARGET_DIR / TMPDIR / CUDA_BUILD_CACHE_DIR to a larger disk."),
    doc("archive-failed", Link, "`ar` could not build the static library", "\
OutputKind::StaticLib archives the device-linked objects with `ar`, which failed or is missing.

Confirm: `which ar`; check free space in OUT_DIR.

Fix: install binutils (ar), and check the free space in OUT_DIR."),
    doc("metadata-invalid", Compile, "[package.metadata.cuda] could not be read", "\
The package's Cargo.toml could not be read, or its [package.metadata.cuda] table has a value
of the wrong type (toolkit must be a version requirement, arch a string).

Confirm: look at the key named in the error.

Fix: correct the table, e.g. `toolkit = \"^12.4\"`, `arch = \"80;86;90\"`."),
    doc("launchers-feature-off", Compile, "Typed launchers were requested without the `launchers` feature", "\
Build::launchers(true) needs cuda-build's `launchers` feature (it parses the sources with
libclang).

Confirm: the [build-dependencies] entry for cuda-build.

Fix: `cuda-build = { version = \"...\", features = [\"launchers\"] }`, or drop launchers(true)."),
    doc("launchers-source-unreadable", Compile, "A CUDA source could not be read for the launchers", "\
Generating typed launchers reads each .cu file; one could not be read.

Confirm: check the path and its permissions.

Fix: fix the path given to the builder (file/files/dir/glob)."),
    doc("cargo-not-found", Compile, "cargo could not be started", "\
`cargo cuda` runs cargo (CARGO, or `cargo` on PATH), and it could not be started.

Confirm: `which cargo`; `echo $CARGO`.

Fix: install Rust with rustup, or point CARGO at a working cargo executable."),
    doc("cargo-failed", Compile, "Waiting for cargo failed", "\
`cargo cuda` started cargo but could not wait for it (the process was killed or the system
refused).

Confirm: rerun the same cargo command directly.

Fix: rerun; if it persists, run cargo directly and report the message."),
    doc("cargo-metadata-failed", Compile, "`cargo metadata` failed", "\
`cargo cuda` reads the workspace with `cargo metadata`, which failed: usually a broken
Cargo.toml or an offline registry.

Confirm: run `cargo metadata --format-version 1 --no-deps` in the same directory.

Fix: fix the error cargo prints (Cargo.toml syntax, missing dependency, network)."),
    doc("manifest-not-found", Compile, "--manifest-path does not name a Cargo.toml", "\
The path given to --manifest-path does not exist or is not a Cargo.toml.

Confirm: `ls <path>`.

Fix: pass the path of a package's or workspace's Cargo.toml."),
    doc("compile-failed", Compile, "A kernel compile produced no output", "\
nvcc reported success but produced no kernel image, so there is nothing to load.

Confirm: rerun with `cargo cuda build -v` and look at nvcc's command line and output.

Fix: check the source for an empty translation unit or a missing `__global__` function, and
the flags for an output kind that writes elsewhere."),
    doc("unknown-code", Compile, "Not a known diagnosis code", "\
`cargo cuda explain CODE` was given a code that is not in this catalogue.

Confirm: the error lists the nearest known codes, or every code when none is near.

Fix: check the spelling; codes are kebab-case, e.g. `ptx-too-new-for-driver`."),
    doc("invalid-size", Run, "A problem size given to the sample workload is unusable", "\
The sample workload (`cuda-workload`, run by `cargo cuda doctor` and by hand) was given a size
or iteration count it cannot use: not a number, zero, too small to time, not a multiple of the
kernels' vector width or SGEMM tile, or too large for 32-bit indices.

Confirm: the message names the flag (`--size`, `--gemm-size`, `--iters`) and the value.

Fix: use the value the help suggests: digits (`--size 268435456`), a binary suffix (`256Mi`)
or a power of two (`2^28`), rounded to the multiple the message names."),
    doc("prebuilt-mismatch", Compile, "A source must be compiled, but no compile is allowed", "\
The package ships prebuilt kernel images (`cuda-prebuilt/`, made by `cargo cuda prebuild`),
but none matches what this build would compile for the source named, and either no nvcc was
found or `CUDA_BUILD_PREBUILT=require` forbids compiling. A shipped image is used only when
every package-local input has the recorded content, the flags and defines are the same, the
requested arch plan is served by the shipped images (the run rules of `cargo cuda inspect`),
and, for static libraries, the target triple is the same.

Confirm: the message says what differs: an edited file, a flag, an arch that is not shipped
(it lists the shipped ones), a target; `cargo cuda inspect <package>/cuda-prebuilt` lists them.

Fix: undo the edit, set CUDA_ARCHS to a shipped arch, or install a CUDA toolkit
(`cargo cuda toolkit install 13.0`) so the source compiles; with `require`, set
CUDA_BUILD_PREBUILT=prefer to allow compiling."),
    doc("prebuilt-image-refused", Compile, "A shipped kernel image does not match its manifest", "\
The image a package ships under `cuda-prebuilt/images/` does not decompress to the bytes whose
SHA-256 its manifest records (a corrupt or altered file). It is never used and never cached:
with nvcc the source is compiled instead, without nvcc the build stops.

Confirm: `cargo cuda prebuild --verify` in the package reports the file; the message names it.

Fix: get the package again (`cargo clean`, or remove it from `~/.cargo/registry`); a crate
author runs `cargo cuda prebuild` again."),
    doc("prebuilt-manifest-invalid", Compile, "The prebuilt-image manifest cannot be read", "\
`cuda-prebuilt/manifest.jsonl` is not a manifest this cuda-build reads: a line is not JSON, a
field is missing, or its schema version is newer than this cuda-build understands.

Confirm: the message names the file and line.

Fix: run `cargo cuda prebuild` again with this cuda-build, or update cuda-build."),
    doc("prebuilt-policy-invalid", Compile, "CUDA_BUILD_PREBUILT has an unknown value", "\
CUDA_BUILD_PREBUILT takes `prefer` (use matching shipped images, compile the rest), `never`
(always compile) or `require` (fail if anything would be compiled).

Confirm: the message shows the value.

Fix: set one of the three values, or unset it (`prefer`)."),
    doc("prebuilt-verify-failed", Compile, "A shipped kernel image is not what its sources compile to", "\
`cargo cuda prebuild --verify` rebuilt every shipped image from the package's sources with the
recorded toolkit and compared the bytes; some differ, are missing, or do not match the manifest.

Confirm: the report names each file; a different host compiler than the recorded one (shown)
changes host code in static-library objects.

Fix: run `cargo cuda prebuild` again from the sources the package ships, with the toolkit
and host compiler the manifest records."),
    doc("prebuild-failed", Compile, "The package's build failed under `cargo cuda prebuild`", "\
`cargo cuda prebuild` runs the package's build (`cargo check`, once per profile, target and arch
set) to record its kernel images; one of those builds failed.

Confirm: the message shows cargo's output and the command to run the same build by hand.

Fix: fix the build error cargo shows (a kernel that does not compile for one of the archs, a
missing cross compiler for a target), or drop that arch or target from `prebuilt`."),
    doc("prebuilt-not-declared", Compile, "`cargo cuda prebuild` has no arch set to build for", "\
`cargo cuda prebuild` builds the package's kernels for a declared arch set and ships them; none
was given.

Confirm: Cargo.toml has no `prebuilt = { arch = ... }` under [package.metadata.cuda] and no
--arch was passed.

Fix: add `[package.metadata.cuda] prebuilt = { arch = \"80;86;89;90\" }`, or pass --arch."),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_kebab_case_and_documented() {
        let mut seen = std::collections::HashSet::new();
        for d in all() {
            assert!(seen.insert(d.code), "duplicate code {}", d.code);
            assert!(
                d.code
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{} is not kebab-case",
                d.code
            );
            assert!(
                d.explanation.contains("Confirm"),
                "{} lacks a Confirm paragraph",
                d.code
            );
            assert!(
                d.explanation.contains("Fix"),
                "{} lacks a Fix paragraph",
                d.code
            );
        }
    }

    #[test]
    fn every_engine_code_is_documented_and_parses_back() {
        for &c in Code::ALL {
            assert!(c.doc().is_some(), "{c} has no CodeDoc");
            assert_eq!(Code::parse(c.as_str()), Some(c));
        }
        assert_eq!(Code::parse("nvcc-failed"), Some(Code::Other("nvcc-failed")));
        assert_eq!(Code::parse("no-such-code"), None);
    }

    /// The list a user reads (`cargo cuda explain --list`): every summary is
    /// one line, every see-also names a real code and points back.
    #[test]
    fn summaries_are_one_line_and_see_also_is_symmetric() {
        for d in all() {
            assert!(
                !d.title.contains('\n') && d.title.len() <= 120 && !d.title.ends_with('.'),
                "{}: the one-line summary must be one short line: {:?}",
                d.code,
                d.title
            );
            for other in see_also(d.code) {
                assert!(
                    lookup(other).is_some(),
                    "{}: see also {other} is no code",
                    d.code
                );
                assert!(
                    see_also(other).contains(&d.code),
                    "{other} does not point back at {}",
                    d.code
                );
            }
        }
        for group in SEE_ALSO {
            for c in *group {
                assert!(lookup(c).is_some(), "SEE_ALSO names {c}, which is no code");
            }
        }
        // The pairs the issue found confusing say the difference and point at each other.
        for (a, b) in [
            ("bf16-kernel-unavailable", "kernel-not-found"),
            ("framework-lib-not-found", "cuda-runtime-lib-not-found"),
            ("toolkit-unsupported-by-crate", "toolkit-requirement"),
        ] {
            assert!(see_also(a).contains(&b), "{a} -> {b}");
            assert_ne!(lookup(a).unwrap().title, lookup(b).unwrap().title);
        }
        let layers: usize = Layer::ALL.iter().map(|l| in_layer(*l).count()).sum();
        assert_eq!(layers, all().len(), "every code is in exactly one layer");
    }

    #[test]
    fn lookup_is_case_insensitive_and_rejects_unknown() {
        assert_eq!(lookup("LIBCUDA-STUB").unwrap().code, "libcuda-stub");
        assert!(lookup("E0425").is_none());
    }
}
