//! The rules: one entry per message pattern, as data.
//!
//! A rule names its code, the literal texts that make a line worth reading
//! (its triggers), the extractor that reads such a line, and a real example
//! line. The scanner's prefilter is built from every rule's triggers, and a
//! line is handed only to the rules whose triggers it contains, so a rule
//! cannot be silently dead; a unit test runs every rule on its example.
//! The layer comes from the code ([`Code::layer`]); the explainer that turns
//! a code's facts into causes and fixes is chosen by the code in `explain`.
//!
//! Adding a pattern: one entry here (a new code also goes in `codes.rs`),
//! plus a corpus case in tests/corpus.

use super::codes::Code;
use super::scan::{Fact, HostKind, LineCx};
use super::words::{has_word, lib_code};
use super::{
    build_oom, cuda_as_cpp, cxx_standard, driver_state, fetch, fp_types, frameworks, jit_warnings,
    kernel_limits, library_status, link_pic, math_constants, memory, message_variants,
    optional_gpu, ptx_load, toolkit_paths, windows_loader,
};
use crate::cuda_errors;

/// Where a rule's trigger literals come from.
pub(crate) enum Triggers {
    /// Listed in the rule.
    Listed(&'static [&'static str]),
    /// Derived from another table (the CUDA error names and messages).
    Derived(fn() -> &'static [&'static str]),
}

impl Triggers {
    pub(crate) fn literals(&self) -> &'static [&'static str] {
        match self {
            Triggers::Listed(l) => l,
            Triggers::Derived(f) => f(),
        }
    }
}

/// One pattern.
pub(crate) struct Rule {
    /// A short name for test messages.
    #[cfg_attr(not(test), allow(dead_code))]
    pub name: &'static str,
    /// The code it gives; `None` for rules that only record context (versions,
    /// the build script). Some rules refine it from the line (the library
    /// named, the program not found).
    pub code: Option<Code>,
    /// Literal texts, one of which a line must contain (case-sensitive).
    pub triggers: Triggers,
    /// Reads a normalised line; records hits through the context.
    pub extract: fn(&mut LineCx),
    /// A real line this rule recognises (a unit test runs it).
    #[cfg_attr(not(test), allow(dead_code))]
    pub example: &'static str,
}

use Triggers::Listed;

macro_rules! rule {
    ($name:literal, $code:expr, [$($t:literal),+ $(,)?], $extract:expr, $example:literal $(,)?) => {
        Rule {
            name: $name,
            code: $code,
            triggers: Listed(&[$($t),+]),
            extract: $extract,
            example: $example,
        }
    };
}

/// Every rule, in the order they read a line: context first, then causes,
/// then the CUDA error table (which skips a code a rule above already gave).
pub(crate) static RULES: &[Rule] = &[
    // ------------------------------------------------------------- context
    rule!("versions", None, ["Cuda compilation tools, release", "Driver Version:", "KMD Version:"],
        context_versions, "| NVIDIA-SMI 535.129.03   Driver Version: 535.129.03   CUDA Version: 12.2 |"),
    rule!("build-script", None,
        ["failed to run custom build command", "--- stderr", "nvcc error while compiling", "error occurred: Command", "process didn't exit successfully"],
        context_build_script, "error: failed to run custom build command for `candle-kernels v0.8.0`"),
    rule!("driver-versions", None,
        ["Kernel Module", "ii  nvidia-smi", "ii  libnvidia-compute", "ii  nvidia-utils", "ii  nvidia-driver"],
        context_driver_versions, "NVRM version: NVIDIA UNIX x86_64 Kernel Module  520.56.06  Thu Oct  6 21:38:55 UTC 2022"),
    rule!("jit-context", None, ["cuModuleLoad", "load_module", "cuLinkAddData", "application ptx input"],
        context_jit, "cuModuleLoadData failed"),
    // ------------------------------------------------- cuda-build's own errors
    rule!("own-error", Some(Code::Other("nvcc-failed")), ["error["], own_error,
        "error[nvcc-not-found]: no CUDA toolkit found"),
    // ---------------------------------------------------- wrappers (sccache)
    rule!("sccache-nvcc", Some(Code::SccacheNvccFailed),
        ["sccache: Compiler killed by signal", "Failed to open file for hashing", "sccache_nvcc"],
        sccache_nvcc, "sccache: error: Failed to open file for hashing: /tmp/sccache_nvccXYZ/x.module_id: No such file or directory (os error 2)"),
    // ------------------------------------------------- device link, options
    rule!("unresolved-extern", Some(Code::DeviceFunctionUnresolved), ["Unresolved extern function"],
        unresolved_extern, "ptxas fatal   : Unresolved extern function '_Z6helperf'"),
    rule!("host-link-undefined", Some(Code::CudaRuntimeLibNotFound),
        ["undefined reference to `", "unresolved external symbol", "error: undefined symbol: "],
        host_link_undefined, "main.o: undefined reference to `cudaMalloc'"),
    rule!("nvlink-undefined", Some(Code::DeviceFunctionUnresolved), ["Undefined reference to"],
        nvlink_undefined, "nvlink error   : Undefined reference to '_Z6helperf' in 'a.o'"),
    rule!("nvcc-stray-argument", Some(Code::NvccUnknownOption),
        ["Don't know what to do with", "A single input file is required for a non-link phase"],
        nvcc_stray_argument, "nvcc fatal   : Don't know what to do with 'Files/NVIDIA'"),
    rule!("nvcc-unknown-option", Some(Code::NvccUnknownOption), ["Unknown option"],
        nvcc_unknown_option, "nvcc fatal   : Unknown option '-Wall'"),
    rule!("nvcc-silent-failure", Some(Code::CompilerKilled), ["nvcc error"],
        nvcc_silent_failure, r#"Error: CompilationFailed { path: "src/affine.cu", message: "nvcc error:\n\n" }"#),
    rule!("compiler-killed", Some(Code::CompilerKilled),
        ["died due to signal", "Killed signal terminated program", "Killed"],
        compiler_killed, "nvcc error   : 'cicc' died due to signal 9 (Kill signal)"),
    // ------------------------------------------------------- architectures
    rule!("command-archs", None, ["-architecture=", "-arch="], command_archs,
        "--std=c++17 --gpu-architecture=sm_89 -DCUDA"),
    rule!("nvrtc-invalid-option", Some(Code::ArchInvalid), ["NVRTC_ERROR_INVALID_OPTION"],
        nvrtc_invalid_option, "--gpu-architecture=sm_89\nFailed invoking compiler: NVRTC_ERROR_INVALID_OPTION"),
    rule!("nvcc-arch-rejected", Some(Code::ArchInvalid),
        ["Unsupported gpu architecture", "is not defined for option 'gpu-"],
        nvcc_arch_rejected, "nvcc fatal   : Unsupported gpu architecture 'compute_89'"),
    rule!("arch-native-no-gpu", Some(Code::ArchNotDetected), ["Cannot find valid GPU for"],
        arch_native_no_gpu, "nvcc warning : Cannot find valid GPU for '-arch=native', default arch is used"),
    rule!("cmake-arch", Some(Code::ArchNotDetected),
        ["CMAKE_CUDA_ARCHITECTURES must be non-empty", "Failed to detect a default CUDA architecture"],
        cmake_arch, "CMAKE_CUDA_ARCHITECTURES must be non-empty if set."),
    rule!("compute-cap-detection", Some(Code::ArchNotDetected),
        ["compute cap", "Compute cap", "`nvidia-smi` failed", "nvidia-smi failed", "compute_cap", "no gpu codes parsed from nvcc"],
        compute_cap_detection, "Could not get Cuda compute cap: `nvidia-smi` failed. Ensure that you have CUDA installed and that `nvidia-smi` is in your PATH."),
    rule!("nvcc-cannot-target", Some(Code::ArchTooNewForNvcc), ["cannot target gpu arch"],
        nvcc_cannot_target, "nvcc cannot target gpu arch 89. Available nvcc targets are [35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87]."),
    rule!("compute-cap-mismatch", Some(Code::NoKernelImageForDevice),
        ["is not compatible with compile time compute cap", "is not compatible with the current PyTorch installation"],
        compute_cap_mismatch, "Runtime compute cap 75 is not compatible with compile time compute cap 80"),
    // --------------------------------------------------------------- ptxas
    rule!("ptx-version", Some(Code::PtxasTooOld), ["Unsupported .version"], ptx_version,
        "ptxas fatal   : Unsupported .version 9.0; current version is '8.4'"),
    rule!("ptx-target", Some(Code::PtxasTooOld), ["Unsupported .target"], ptx_target,
        "ptxas fatal   : Unsupported .target 'sm_90'"),
    rule!("cuda-as-cpp", Some(Code::CudaCompiledAsCpp), ["__global__", "__device__", "__shared__", "__constant__"],
        cuda_as_cpp::extract, "kern.cpp:1:1: error: ‘__global__’ does not name a type"),
    rule!("cxx-standard", Some(Code::CxxStandardTooOld), ["requires at least C++", " is required for this Thrust"],
        cxx_standard::extract, "cub/util_cpp_dialect.cuh:88:8: error: #error CUB requires at least C++17. Define CCCL_IGNORE_DEPRECATED_CPP_DIALECT to suppress this message."),
    rule!("math-constants", Some(Code::MathConstantsUndefined), ["\"M_", "'M_", "`M_"],
        math_constants::extract, "D:\\candle\\src\\unary.cu(34): error: identifier \"M_2_SQRTPI\" is undefined"),
    rule!("kernel-limit", Some(Code::KernelExceedsTargetLimit), ["uses too much shared data", "uses too much parameter space", "Formal parameter space overflowed"],
        kernel_limits::extract, "ptxas error   : Entry function '_Z4tileILi128EEvPf' uses too much shared data (0xc400 bytes, 0xc000 max)"),
    rule!("arch-feature", Some(Code::ArchFeatureNeedsHigherTarget),
        ["requires .target", "not supported on .target"], arch_feature,
        "ptxas error   : Feature 'cp.async.bulk' requires .target sm_90 or higher"),
    rule!("bf16-below-sm80", Some(Code::ArchFeatureNeedsHigherTarget),
        ["incomplete type", "no suitable user-defined conversion from", "no suitable conversion function from",
         "is not allowed"],
        bf16_below_sm80, "error: no suitable user-defined conversion from \"nv_bfloat162\" to \"__half2\" exists"),
    // ------------------------------------------------------- host compiler
    rule!("host-unsupported", Some(Code::HostCompilerUnsupported),
        ["unsupported GNU version", "unsupported clang version", "unsupported Microsoft Visual Studio version", "unsupported Intel ICX",
         "Host compiler targets unsupported OS", "of the host compiler"],
        host_unsupported, "#error -- unsupported GNU version! gcc versions later than 12 are not supported!"),
    rule!("host-preprocess", Some(Code::HostCompilerNotFound), ["Failed to preprocess host compiler properties"],
        host_preprocess, "nvcc fatal   : Failed to preprocess host compiler properties."),
    rule!("host-not-found", Some(Code::HostCompilerNotFound),
        ["Cannot find compiler", "Could not set up the environment for Microsoft Visual Studio", "cannot find a supported version of Microsoft Visual Studio",
         "cl.exe"],
        host_not_found, "nvcc fatal   : Cannot find compiler 'cl.exe' in PATH"),
    rule!("host-front-end-missing", Some(Code::HostCompilerNotFound),
        ["error trying to exec 'cc1plus'", "error trying to exec 'cc1'", "cannot execute 'cc1plus'", "cannot execute ‘cc1plus’"],
        host_front_end_missing, "gcc: error trying to exec 'cc1plus': execvp: No such file or directory"),
    rule!("host-tool-missing", Some(Code::HostCompilerNotFound),
        ["++: not found", "gcc: not found", "++: command not found", "gcc: command not found"],
        host_tool_missing, "sh: 1: x86_64-linux-gnu-g++: not found"),
    // ------------------------------------------------------------- toolkit
    rule!("libdevice-missing", Some(Code::ToolkitIncomplete),
        ["Path to libdevice library not specified", "libdevice not found", "Cannot find libdevice"],
        libdevice_missing, "nvcc fatal   : Path to libdevice library not specified"),
    rule!("toolkit-tool-missing", Some(Code::ToolkitIncomplete),
        ["cicc: not found", "ptxas: not found", "fatbinary: not found", "nvlink: not found", "cudafe++: not found",
         "cicc: command not found", "is not recognized"],
        toolkit_tool_missing, "sh: 1: cicc: not found"),
    rule!("header-missing", Some(Code::ToolkitIncomplete),
        ["No such file or directory", "No file or directory", "file not found", "Cannot open include file", "cannot open source file"],
        header_missing, "fatal error: cuda_runtime.h: No such file or directory"),
    rule!("library-missing", Some(Code::CudaRuntimeLibNotFound),
        ["cannot open shared object file", "cannot find -l", "Could not load dynamic library", "dynamically load the",
         "lib under the names", "nvcuda.dll", "libnvidia-ml.so", "NVML Shared Library Not Found",
         "cannot open input file", "unable to find library -l", "Unable to find `include/",
         "could not find native static library", "load library", "Could not load \"", "specified module could not be found",
         "LNK1181", "failed to load builtins", "libnvrtc-builtins", "nvrtc-builtins64",
         "LoadLibrary failed with error 126"],
        library_missing, "libcudart.so.12: cannot open shared object file: No such file or directory"),
    rule!("libcuda-stub", Some(Code::LibcudaStub), ["stubs/libcuda.so", "stubs\\libcuda", "stubs/libcuda"],
        libcuda_stub, "Loaded /usr/local/cuda/lib64/stubs/libcuda.so"),
    rule!("nvcc-missing", Some(Code::NvccNotFound),
        ["nvcc: command not found", "nvcc: not found", "'nvcc' is not recognized", "No CMAKE_CUDA_COMPILER could be found",
         "CUDA_HOME environment variable is not set", "find nvcc", "nvcc not found", "nvcc cannot be found",
         "nvcc was not found", "find a cuda installation", "find a CUDA installation", "nvcc: No such file",
         "nvcc: No file", "nvcc binary could not be", "Is `nvcc` installed", "Cuda compiler not found",
         "CUDA compiler not found"],
        nvcc_missing, "/bin/sh: 1: nvcc: not found"),
    rule!("program-not-found", Some(Code::NvccNotFound),
        ["kind: NotFound", "os error 2)", "Os { code: 2"],
        program_not_found, "thread 'main' panicked at build.rs:10:5: `nvcc` failed: Os { code: 2, kind: NotFound, message: \"No such file or directory\" }"),
    rule!("cuda-home-list", Some(Code::CudaHomeInvalid),
        ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", ":/usr/local/cuda", ":/opt/cuda"],
        cuda_home_list, "CUDA_HOME=/usr/local/cuda:/usr/local/cuda-12.1"),
    rule!("binding-version-lacks-function", Some(Code::ToolkitUnsupportedByCrate), ["::sys_"],
        binding_version_lacks_function,
        "error[E0599]: no method named `cuMemAdvise_v2` found for reference `&'static driver::sys::sys_12010::Lib` in the current scope"),
    rule!("toolkit-unsupported-by-crate", Some(Code::ToolkitUnsupportedByCrate),
        ["Unsupported cuda toolkit version", "Unsupported CUDA toolkit version", "Unsupported CUDA version"],
        toolkit_unsupported_by_crate, "Unsupported cuda toolkit version: `12.6`. Please raise a github issue."),
    // -------------------------------------------------- driver, nvidia-smi
    rule!("driver-not-running", Some(Code::DriverNotLoaded),
        ["kernel driver does not appear to be running", "communicate with the NVIDIA driver", "DRIVER_NOT_LOADED",
         "Driver Not Loaded", "driver not loaded", "Key was rejected by service", "Module nvidia not found",
         "Found no NVIDIA driver", "Nouveau kernel driver"],
        driver_not_running, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."),
    rule!("kernel-log", Some(Code::NouveauHoldsGpu), ["NVRM:"], kernel_log,
        "NVRM: No NVIDIA graphics adapter probed!"),
    rule!("driver-mismatch", Some(Code::DriverLibraryMismatch),
        ["Driver/library version mismatch", "RM_VERSION_MISMATCH", "API mismatch"],
        driver_mismatch, "Failed to initialize NVML: Driver/library version mismatch"),
    rule!("driver-too-old", Some(Code::DriverTooOld),
        ["NVIDIA driver on your system is too old", "unsupported CUDA version:", "unsatisfied condition: cuda>=",
         "requirement error: unsatisfied"],
        driver_too_old, "nvidia-container-cli: requirement error: unsupported CUDA version: driver 11.4 < image 12.1"),
    rule!("no-devices-found", Some(Code::NoDeviceVisible), ["No devices were found"],
        no_devices_found, "No devices were found"),
    rule!("container-device", Some(Code::ContainerDeviceMissing), ["/dev/nvidia"],
        container_device, "lstat /dev/nvidia0: no such file or directory"),
    rule!("container-runtime", Some(Code::ContainerRuntimeMissing),
        ["could not select device driver", "unknown or invalid runtime name: nvidia", "unknown runtime specified nvidia"],
        container_runtime, "docker: Error response from daemon: could not select device driver \"\" with capabilities: [[gpu]]."),
    rule!("cuda-backend-not-built", Some(Code::CudaBackendNotBuilt),
        ["not compiled with CUDA enabled", "from the 'CUDA' backend", "execution provider is not enabled in this build",
         "without ATen_cuda library"],
        cuda_backend_not_built, "AssertionError: Torch not compiled with CUDA enabled"),
    rule!("torch-cuda-mismatch", Some(Code::TorchCudaVersionMismatch),
        ["mismatches the version that was used to compile"],
        torch_cuda_mismatch, "The detected CUDA version (11.8) mismatches the version that was used to compile PyTorch (12.4). Please make sure to use the same CUDA versions."),
    rule!("missing-symbol", Some(Code::DriverTooOld),
        ["Expected symbol in library", "undefined symbol: cu", "undefined symbol: nvrtc"],
        missing_symbol, "Expected symbol in library: DlSym { desc: \"/lib/x86_64-linux-gnu/libcuda.so.1: undefined symbol: cuLogsCurrent\" }"),
    rule!("msbuild-cuda", Some(Code::MsbuildCudaIntegrationMissing), ["No CUDA toolset found"],
        msbuild_cuda, "CMake Error: No CUDA toolset found."),
    rule!("nvrtc-arch", Some(Code::ArchTooNewForNvcc), ["invalid value for --gpu-architecture"],
        nvrtc_arch, "nvrtc: error: invalid value for --gpu-architecture (-arch)"),
    rule!("half-intrinsic-below-sm80", Some(Code::ArchFeatureNeedsHigherTarget), ["identifier \"__hm"],
        half_intrinsic, "compatibility.cuh(11): error: identifier \"__hmax\" is undefined"),
    rule!("arch-named-file", Some(Code::ArchFeatureNeedsHigherTarget), ["detected in the compilation of"],
        arch_named_file, "1 error detected in the compilation of \"kernels/flash_fwd_hdim256_bf16_sm80.cu\"."),
    rule!("gcc11-std-function", Some(Code::HostCompilerUnsupported), ["parameter packs not expanded with"],
        gcc11_std_function, "/usr/include/c++/11/bits/std_function.h:435:145: error: parameter packs not expanded with '...':"),
    rule!("bf16-context", None, ["bf16", "candle"], context_bf16, "when loading cast_f32_bf16"),
    // ------------------------------------ families with their own files
    rule!("driver-fault", Some(Code::DriverStateLost),
        ["suspend", "Suspend", "resume", "Resume", "hibernat", "Hibernat", "wake from", "woke from", "systemd-sleep", "Xid", "fallen off the bus"],
        driver_state::context, "NVRM: Xid (PCI:0000:01:00): 79, pid=1234, GPU has fallen off the bus."),
    rule!("dependency-fetch", Some(Code::CudaDependencyFetchFailed),
        ["Cloning ", "Fetching ", "GitOperationFailed", "git clone failed", "Failed to clone", "failed to clone", "clone of '", "unable to access 'http",
         "Could not resolve host", "could not resolve host", "Failed to download", "failed to download", "Download failed",
         "download failed", "Error downloading", "error downloading", "Failed to fetch", "failed to fetch"],
        fetch::extract, "Error: Failed to clone cutlass repository: No such file or directory (os error 2)"),
    Rule {
        name: "library-status",
        code: Some(Code::LibraryOpUnsupported),
        triggers: Triggers::Derived(library_status::trigger_literals),
        extract: library_status::extract,
        example: "Error: Cuda(Cublas(CublasError(CUBLAS_STATUS_NOT_SUPPORTED)))",
    },
    rule!("built-without-cuda", Some(Code::CudaBackendNotBuilt),
        ["without CUDA", "without cuda", "with CUDA", "with cuda", "CUDA support", "cuda support", "CUDA Support", "GPU support",
         "gpu support", "GPU offload", "CUDA backend", "cuda backend", "CUDA-enabled", "CUDAExecutionProvider", "CPU version",
         "not compiled with", "not built with"],
        frameworks::not_built, "Error: the candle crate has not been built with cuda support"),
    rule!("framework-setup", Some(Code::FrameworkLibNotFound),
        ["CUDA Setup failed despite GPU being available", "Required library version not found", "libcudart.so not found in any environmental path"],
        frameworks::bnb_setup, "RuntimeError: CUDA Setup failed despite GPU being available. Please run the following command to get more information:"),
    rule!("malformed-toolkit-path", Some(Code::CudaHomeInvalid),
        ["bin/nvcc", "bin\\nvcc", "bin/ptxas", "bin\\ptxas"],
        toolkit_paths::extract, "FileNotFoundError: [Errno 2] No such file or directory: '/usr/local/cuda-12.1:/bin/nvcc'"),
    rule!("ptx-load-unknown", Some(Code::PtxTooNewForDriver), ["PTX", "ptx", "UnknownError"],
        ptx_load::extract, "ERROR kaspacuda::worker] Error loading PTX: \"unknown error\""),
    rule!("allocation-generic-error", Some(Code::OutOfMemory),
        ["invalid argument", "INVALID_VALUE", "InvalidValue", "unknown error", "CUDA_ERROR_UNKNOWN",
         "Allocating", "allocating", "Tried to allocate", "cudaMalloc", "cuMemAlloc"],
        memory::extract, "cuMemSetAccess(base, size, &desc, 1) failed with error CUDA_ERROR_INVALID_VALUE during allocation"),
    Rule {
        name: "build-context",
        code: None,
        triggers: Listed(build_oom::CONTEXT_TRIGGERS),
        extract: build_oom::context,
        example: "   Compiling cuda-kernels v0.1.0",
    },
    Rule {
        name: "kernel-builder",
        code: None,
        triggers: Listed(build_oom::BUILDER_TRIGGERS),
        extract: build_oom::builder,
        example: "warning: candle-kernels@0.11.1: Using 16 threads for compilation",
    },
    Rule {
        name: "killed-for-memory",
        code: Some(Code::CompilerKilled),
        triggers: Listed(build_oom::TRIGGERS),
        extract: build_oom::extract,
        example: "killed out of memory",
    },
    Rule {
        name: "compiler-out-of-host-memory",
        code: Some(Code::CompilerKilled),
        triggers: Listed(build_oom::COMPILER_OOM_TRIGGERS),
        extract: build_oom::compiler_out_of_memory,
        example: "csrc/attention/attention_kernels.cu(68): catastrophic error: out of memory",
    },
    Rule {
        name: "gpu-optional-notice",
        code: None,
        triggers: Listed(optional_gpu::TRIGGERS),
        extract: optional_gpu::context,
        example: "I tensorflow/stream_executor/cuda/cudart_stub.cc:29] Ignore above cudart dlerror if you do not have a GPU set up on your machine.",
    },
    rule!("no-cuda-implementation", Some(Code::CudaBackendNotBuilt), ["no cuda implementation for"],
        frameworks::no_cuda_impl, "Error: Cuda(\"no cuda implementation for rms-norm\")"),
    rule!("cuda-provider-not-offered", Some(Code::CudaBackendNotBuilt),
        ["invalid choice", "Available providers", "available providers", "available execution providers", "Available execution providers"],
        frameworks::provider_choices, "run.py: error: argument --execution-provider: invalid choice: 'cuda' (choose from 'azure', 'cpu')"),
    rule!("cuda-available-false", Some(Code::CudaBackendNotBuilt),
        ["is_available", "cuda available", "Cuda available", "CUDA available", "CUDA Available", "Cuda Available", "cuda_if_available"],
        frameworks::available_false, "println!(\"Cuda available: {:?}\", Cuda::is_available());\n> false"),
    rule!("jit-compiler-warnings", Some(Code::PtxasTooOld),
        ["ptxas does not support CC", "ptxas too old", "No PTX compilation provider is available", "Couldn't find a suitable version of ptxas"],
        jit_warnings::extract, "W external/xla/xla/stream_executor/gpu/asm_compiler.cc:231] Falling back to the CUDA driver for PTX compilation; ptxas does not support CC 9.0"),
    rule!("wmma-fragment", Some(Code::ArchFeatureNeedsHigherTarget), ["incomplete type"],
        fp_types::wmma_fragment, "default_program(26): error: incomplete type \"nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 8, float, void>\" is not allowed"),
    rule!("half-operators", Some(Code::ArchFeatureNeedsHigherTarget), ["no instance of overloaded function", "no operator"],
        fp_types::half_operators, "error: no instance of overloaded function \"atomicAdd\" matches the argument list (__nv_bfloat16 *, __nv_bfloat16)"),
    rule!("windows-loader", Some(Code::CudaRuntimeLibNotFound),
        ["which is missing", " is missing", "-1073741515", "3221225781", "0xC0000135", "0xc0000135"],
        windows_loader::extract, "FAIL : Error loading \"C:\\x\\onnxruntime_providers_cuda.dll\" which depends on \"cublasLt64_12.dll\" which is missing."),
    rule!("cuda-object-not-pic", Some(Code::CudaObjectNotPic),
        ["recompile with -fPIC", "recompile with -fPIE", "when making a PIE object", "when making a shared object"],
        link_pic::extract, "/usr/bin/ld: kernels.cu.o: relocation R_X86_64_32 against `.rodata' can not be used when making a PIE object; recompile with -fPIE"),
    rule!("cuda-error-number-loose", Some(Code::OutOfMemory),
        ["CUDA error", "CUDA Error", "cuda error", "CUDA ERROR", "Cuda error", "Cuda Error"],
        message_variants::loose_number, "CUDA error! 2"),
    Rule {
        name: "error-string-variants",
        code: Some(Code::NoKernelImageForDevice),
        triggers: Triggers::Derived(message_variants::trigger_literals),
        extract: message_variants::extract,
        example: "RuntimeError: No kernel image is available for execution on the device",
    },
    // ------------------------------------------------------------- CUDA errors
    Rule {
        name: "cuda-error",
        code: Some(Code::CudaUnknownError),
        triggers: Triggers::Derived(cuda_errors::trigger_literals),
        extract: cuda_error,
        example: "Error: DriverError(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, \"the provided PTX was compiled with an unsupported toolchain.\")",
    },
];

// ---------------------------------------------------------------- helpers

/// The text between the first `quote` after `key` and the next one.
pub(crate) fn quoted_after<'a>(line: &'a str, key: &str, quote: char) -> Option<&'a str> {
    let rest = &line[line.find(key)? + key.len()..];
    let rest = &rest[rest.find(quote)? + quote.len_utf8()..];
    let end = rest.find(quote)?;
    Some(&rest[..end])
}

/// The word after `key` and a quote that a cut log never closed (`'compute_61`).
fn unclosed_quote_after<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let rest = &line[line.find(key)? + key.len()..];
    let rest = &rest[rest.find('\'')? + 1..];
    let n = rest
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    (n > 0 && rest[n..].trim().is_empty()).then(|| &rest[..n])
}

/// `8.7` → (8, 7).
pub(crate) fn parse_version(s: &str) -> Option<(u32, u32)> {
    let s = s.trim().trim_matches(|c| c == '\'' || c == '"' || c == '`');
    let (a, b) = s.split_once('.')?;
    let b: String = b.chars().take_while(|c| c.is_ascii_digit()).collect();
    Some((a.trim().parse().ok()?, b.parse().ok()?))
}

fn number_after(line: &str, key: &str) -> Option<u32> {
    let rest = line[line.find(key)? + key.len()..].trim_start();
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .take(6)
        .collect();
    digits.parse().ok()
}

/// Header names that belong to the CUDA toolkit (so a missing one means the
/// toolkit, not the user's project, is incomplete).
fn is_cuda_header(h: &str) -> bool {
    let h = h.trim_start_matches("./");
    [
        "nv/",
        "cuda/",
        "cub/",
        "thrust/",
        "crt/",
        "cuda_",
        "cuda.h",
        "cudaTypedefs",
        "cooperative_groups",
        "cublas",
        "cufft",
        "curand",
        "cusparse",
        "cusolver",
        "nvrtc",
        "nvtx3/",
        "nvToolsExt",
        "nvJitLink",
    ]
    .iter()
    .any(|p| h.starts_with(p))
        || [
            "mma.h",
            "sm_20_atomic_functions.h",
            "device_functions.h",
            "driver_types.h",
            "vector_types.h",
            "host_defines.h",
            "builtin_types.h",
        ]
        .contains(&h)
}

/// The CUDA part of a framework (not of the toolkit) by its library name:
/// a `cuda` or `nvrtc` word in the name (`libtorch_cuda.so`, `libc10_cuda.so`,
/// `libggml-cuda.so`, `libcaffe2_nvrtc.so`) or ONNX Runtime's provider
/// libraries, which its CUDA execution provider loads.
fn is_framework_cuda_lib(lib: &str) -> bool {
    let base = lib.rsplit(['/', '\\']).next().unwrap_or(lib);
    let base = base.strip_prefix("lib").unwrap_or(base);
    let stem = base.split('.').next().unwrap_or(base);
    let words: Vec<&str> = stem.split(['_', '-']).collect();
    words.len() > 1 && words.iter().any(|w| *w == "cuda" || *w == "nvrtc")
        || stem.starts_with("onnxruntime_providers_")
}

/// A framework's own core library (not its CUDA part): `libonnxruntime.so`
/// (ort links it dynamically with its `cuda` feature), libtorch's
/// `libtorch_cpu.so` / `libc10.so`, ggml's and llama.cpp's shared libraries.
fn is_framework_core_lib(lib: &str) -> bool {
    let base = lib.rsplit(['/', '\\']).next().unwrap_or(lib);
    let base = base.strip_prefix("lib").unwrap_or(base);
    let stem = base.split('.').next().unwrap_or(base);
    [
        "onnxruntime",
        "torch",
        "torch_cpu",
        "torch_global_deps",
        "c10",
        "ggml",
        "ggml-base",
        "llama",
        "whisper",
    ]
    .contains(&stem)
}

/// The arch-specific target an instruction refused on `target` belongs to.
/// wgmma exists only on sm_90a (not on any Blackwell, sm_120 included);
/// tcgen05 only on the sm_10x `a` targets; anything else on `target` + `a`.
fn arch_specific_home(feature: &str, target: &str) -> String {
    let on_10x = target.starts_with("sm_10");
    if feature.starts_with("wgmma") {
        "sm_90a".to_string()
    } else if feature.starts_with("tcgen05") && !on_10x {
        "sm_100a".to_string()
    } else if target.ends_with('a') || target.ends_with('f') {
        target.to_string()
    } else {
        format!("{target}a")
    }
}

/// The program a "not found" error is about: the name in backquotes or
/// quotes before `failed`, or the last path component before the error.
fn program_before(line: &str, at: usize) -> Option<String> {
    let head = &line[..at];
    let known = [
        "nvidia-smi",
        "nvcc",
        "sccache",
        "cicc",
        "ptxas",
        "fatbinary",
        "nvlink",
        "cl.exe",
        "clang++",
        "clang",
        "g++",
        "gcc",
        "c++",
        "cc",
        "cmake",
    ];
    // The last known program named before the error, as a whole word.
    known
        .iter()
        .filter_map(|p| {
            let b = head.as_bytes();
            head.match_indices(p)
                .filter(|(i, _)| {
                    let before = i.checked_sub(1).map(|j| b[j]);
                    let after = b.get(i + p.len()).copied();
                    !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
                        && !after.is_some_and(|c| {
                            c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'+'
                        })
                })
                .map(|(i, _)| (i, *p))
                .last()
        })
        .max_by_key(|(i, p)| (*i, p.len()))
        .map(|(_, p)| p.to_string())
}

// ------------------------------------------------------------- extractors

fn context_versions(cx: &mut LineCx) {
    let l = cx.line;
    if let Some(v) = l
        .find("Cuda compilation tools, release")
        .and_then(|p| parse_version(&l[p + 31..]))
    {
        cx.scan.nvcc_release = Some(v);
    }
    for key in ["Driver Version:", "KMD Version:"] {
        if let Some(p) = l.find(key) {
            let v: String = l[p + key.len()..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            if !v.is_empty() && !l.contains("CUDA Driver Version") {
                cx.scan.smi_driver = Some(v);
            }
            if let Some(q) = l
                .find("CUDA Version:")
                .or_else(|| l.find("CUDA UMD Version:"))
            {
                let rest = &l[q..];
                let rest = &rest[rest.find(':').map_or(0, |c| c + 1)..];
                cx.scan.smi_cuda = parse_version(rest.split_whitespace().next().unwrap_or(""));
            }
        }
    }
}

fn context_build_script(cx: &mut LineCx) {
    let l = cx.line;
    if let Some(name) = quoted_after(l, "failed to run custom build command for", '`') {
        cx.scan.build_script = Some(name.to_string());
    } else if let Some(p) = l.find("failed to run custom build command for ") {
        // Some logs lose the backquotes: `for cudarc v0.11.4`.
        let name: String = l[p + 39..].trim().to_string();
        if !name.is_empty() {
            cx.scan.build_script = Some(name);
        }
    }
    cx.state.in_build_error = true;
}

/// The kernel module's version (/proc/driver/nvidia/version) and the user
/// space's (dpkg's nvidia-smi, libnvidia-compute): when both are in the log and
/// differ, that is a driver/library mismatch.
fn context_driver_versions(cx: &mut LineCx) {
    let l = cx.line;
    let version_after = |key: &str| -> Option<String> {
        let p = l.find(key)? + key.len();
        let v: String = l[p..]
            .trim_start()
            .chars()
            .skip_while(|c| !c.is_ascii_digit())
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        (v.matches('.').count() >= 1).then_some(v)
    };
    if l.contains("Kernel Module") {
        if let Some(v) = version_after("Kernel Module") {
            cx.scan.kernel_module = Some((v, super::scan::evidence(l)));
        }
    } else if let Some(key) = [
        "ii  nvidia-smi",
        "ii  libnvidia-compute",
        "ii  nvidia-utils",
        "ii  nvidia-driver",
    ]
    .iter()
    .find(|k| l.starts_with(**k))
    {
        // `ii  nvidia-smi     525.85.12-1  amd64 ...`: the version is the second column.
        let rest = &l[key.len()..];
        // The package name may go on (`libnvidia-compute-525:amd64`).
        let column = usize::from(!rest.starts_with(char::is_whitespace));
        let v: String = rest
            .split_whitespace()
            .nth(column)
            .unwrap_or("")
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        if v.contains('.') {
            cx.scan.user_driver = Some((v, super::scan::evidence(l)));
        }
    }
}

fn context_jit(cx: &mut LineCx) {
    cx.scan.jit_context = true;
}

fn own_error(cx: &mut LineCx) {
    let l = cx.line;
    let Some(p) = l.find("error[") else { return };
    let rest = &l[p + 6..];
    let Some(close) = rest.find("]:") else { return };
    if let Some(code) = Code::parse(&rest[..close]) {
        let message = rest[close + 2..].trim().to_string();
        let fact = Fact::Own {
            message,
            help: Vec::new(),
        };
        cx.hit_as(code, fact, 0.9);
    }
}

fn sccache_nvcc(cx: &mut LineCx) {
    let l = cx.line;
    let hashing = l.contains("Failed to open file for hashing")
        && (l.contains("sccache_nvcc") || l.contains("sccache"));
    let killed = l.contains("sccache: Compiler killed by signal");
    if hashing {
        cx.hit(Fact::Note("sccache ran nvcc's stages itself and lost one of nvcc's intermediate files (the `.module_id` in its sccache_nvcc temp directory): sccache's nvcc support failed, not nvcc."), 0.95);
    } else if killed {
        cx.hit(Fact::Note("sccache started the compiler and it was killed by a signal (126: the command could not be executed): sccache's nvcc handling failed, not the toolkit."), 0.9);
    }
}

fn unresolved_extern(cx: &mut LineCx) {
    if let Some(sym) = quoted_after(cx.line, "Unresolved extern function", '\'') {
        let sym = sym.to_string();
        cx.hit(Fact::Symbol(sym), 0.9);
        cx.hit(Fact::Note("ptxas could not resolve a device function: it is defined in another .cu file, and the file was compiled without relocatable device code (-rdc)."), 0.9);
    }
}

/// The host linker missing a CUDA API function (`undefined reference to
/// `cudaMalloc'`, MSVC's `unresolved external symbol cuGetErrorString`):
/// the library that defines it is not linked. Driver API (`cu*`) is
/// libcuda / cuda.lib; `cuda*` and `__cuda*` are cudart; the others by prefix.
fn host_link_undefined(cx: &mut LineCx) {
    let l = cx.line;
    if l.contains("nvlink") {
        return; // device code: the nvlink rule
    }
    let sym = if let Some(p) = l.find("undefined reference to `") {
        &l[p + 24..]
    } else if let Some(p) = l
        .find("error: undefined symbol: ")
        .filter(|_| !l.contains("symbol lookup error"))
    {
        // lld's and mold's wording (`mold: error: undefined symbol: ncclGroupEnd`).
        l[p + 25..].trim_start().trim_start_matches(['`', '\''])
    } else if let Some(p) = l.find("unresolved external symbol") {
        l[p + 26..].trim_start().trim_start_matches(['"', '_'])
    } else {
        return;
    };
    let sym: String = sym
        .trim_start_matches('_')
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    // Defined by nvcc's device-link output, not by any library.
    if sym.starts_with("cudaRegisterLinkedBinary") {
        cx.hit_as(
            Code::DeviceFunctionUnresolved,
            Fact::Note("Objects compiled with relocatable device code (-rdc=true, or CMake's CUDA_SEPARABLE_COMPILATION) were linked without the device-link step: `__cudaRegisterLinkedBinary_*` is defined by the object `nvcc -dlink` writes, not by libcudart."),
            0.9,
        );
        return;
    }
    let lib = [
        ("cublasLt", "cublasLt"),
        ("cublas", "cublas"),
        ("cufft", "cufft"),
        ("curand", "curand"),
        ("cusparse", "cusparse"),
        ("cusolver", "cusolver"),
        ("cudnn", "cudnn"),
        ("nvrtc", "nvrtc"),
        ("nccl", "nccl"),
        ("cuda", "cudart"),
    ]
    .iter()
    .find(|(p, _)| {
        sym.starts_with(p) && sym[p.len()..].starts_with(|c: char| c.is_ascii_uppercase())
    })
    .map(|(_, lib)| *lib)
    .or_else(|| {
        // The driver API: cu + an upper-case letter (cuInit, cuGetErrorString).
        (sym.starts_with("cu") && sym[2..].starts_with(|c: char| c.is_ascii_uppercase()))
            .then_some("cuda")
    });
    let Some(lib) = lib else { return };
    let code = if lib == "cuda" {
        Code::LibcudaNotFound
    } else {
        Code::CudaRuntimeLibNotFound
    };
    cx.hit_as(
        code,
        Fact::Library {
            name: format!("lib{lib}"),
            link_time: true,
        },
        0.8,
    );
    cx.hit_as(code, Fact::Symbol(sym), 0.8);
}

/// The architectures a command line asks for (`--gpu-architecture=sm_89`,
/// `-arch=compute_80`): the lowest `sm_` one, for builds that fail below a
/// file's own target ([`arch_named_file`]), and the last one named, for a
/// compiler that rejects its options without naming one
/// ([`nvrtc_invalid_option`]).
fn command_archs(cx: &mut LineCx) {
    let l = cx.line;
    for key in ["-architecture=", "-arch="] {
        for (p, _) in l.match_indices(key) {
            let arch: String = l[p + key.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if let Some(n) = arch.strip_prefix("sm_").and_then(|n| n.parse::<u32>().ok()) {
                let low = cx.scan.lowest_cmd_arch.map_or(n, |m| m.min(n));
                cx.scan.lowest_cmd_arch = Some(low);
            }
            if arch.starts_with("sm_") || arch.starts_with("compute_") {
                cx.scan.arch_option = Some(arch);
            }
        }
    }
}

/// NVRTC refusing its options names none; with an architecture on the
/// option line before it, that is the likely one: the libnvrtc loaded is
/// older than the architecture (NVRTC knows the same targets as its nvcc).
fn nvrtc_invalid_option(cx: &mut LineCx) {
    if let Some(arch) = cx.scan.arch_option.clone() {
        cx.hit(
            Fact::Arch {
                name: arch,
                option: "gpu-architecture".into(),
            },
            0.7,
        );
    }
}

fn nvlink_undefined(cx: &mut LineCx) {
    if !cx.line.contains("nvlink") {
        return;
    }
    if let Some(sym) = quoted_after(cx.line, "Undefined reference to", '\'') {
        let sym = sym.to_string();
        cx.hit(Fact::Symbol(sym), 0.85);
        cx.hit(Fact::Note("The device link found no definition of a device function: the file that defines it is not part of this link, or its name differs (extern \"C\" versus C++)."), 0.85);
    }
}

fn nvcc_unknown_option(cx: &mut LineCx) {
    if !cx.line.contains("nvcc") {
        return;
    }
    if let Some(opt) = quoted_after(cx.line, "Unknown option", '\'') {
        let opt = opt.to_string();
        cx.hit(Fact::Symbol(opt), 0.9);
    }
}

/// nvcc took a word for a second input file: `Don't know what to do with
/// 'Files/NVIDIA'` names it; `A single input file is required for a
/// non-link phase` does not.
fn nvcc_stray_argument(cx: &mut LineCx) {
    let l = cx.line;
    // The second wording is nvcc's alone; the first needs nvcc named.
    if !l.contains("nvcc") && !l.contains("A single input file is required for a non-link phase") {
        return;
    }
    let word = quoted_after(l, "Don't know what to do with", '\'').unwrap_or("");
    cx.hit(Fact::Text(word.to_string()), 0.85);
}

fn compiler_killed(cx: &mut LineCx) {
    let l = cx.line;
    if l.contains("sccache") {
        return; // sccache's own signal report has its own rule
    }
    if l.contains("died due to signal 9") || l.contains("Killed signal terminated program") {
        cx.hit(Fact::None, 0.8);
        return;
    }
    // A bare `Killed` (the shell's report for a child the OOM killer stopped),
    // as bindgen_cuda and cc print a failed nvcc's stderr. Alone it is weak:
    // inside a build script's error block it is the compiler.
    let bare = l.trim_matches(['`', '"', '\'']) == "Killed"
        || l.ends_with(": Killed")
        || (has_word(l, "Killed")
            && ["nvcc", "cicc", "ptxas", "cc1plus", "cudafe"]
                .iter()
                .any(|p| l.contains(p))
            && !l.contains("killed by"));
    if bare {
        let conf = if cx.state.in_build_error { 0.8 } else { 0.45 };
        cx.hit(Fact::Note("A compiler process printed only `Killed`: the kernel stopped it, almost always the out-of-memory killer during a heavy nvcc compile."), conf);
    }
}

/// A build script reporting a failed nvcc whose captured output is empty:
/// cudaforge's `message: "nvcc error:\n\n"`, bindgen_cuda's `# stdout` and
/// `# stderr` blocks with nothing under them, or a printed `Output` with
/// `stdout: "", stderr: ""`. nvcc always says why it rejects input, so a
/// silent failure is a process that died (killed, out of memory, or one of
/// too many parallel nvcc processes).
fn nvcc_silent_failure(cx: &mut LineCx) {
    let l = cx.line;
    let Some(p) = l.find("nvcc error") else {
        return;
    };
    let rest = &l[p..];
    let only_blank_escapes = |s: &str| {
        s.replace("\\n", "")
            .replace("\\r", "")
            .replace("\\t", "")
            .trim()
            .is_empty()
    };
    // cudaforge: the message is a Debug string, closed on the same line.
    let debug_message = rest
        .strip_prefix("nvcc error:")
        .and_then(|m| m.find('"').map(|q| &m[..q]))
        .is_some_and(only_blank_escapes);
    // bindgen_cuda's `{output:?}` form.
    let debug_output = rest.contains("stdout: \"\"") && rest.contains("stderr: \"\"");
    let blocks = rest.starts_with("nvcc error while compiling") && empty_output_blocks(cx.after);
    if debug_message || debug_output || blocks {
        let conf = if cx.state.in_build_error { 0.65 } else { 0.6 };
        cx.hit(Fact::Note("nvcc failed and printed nothing, on stdout or stderr. nvcc always says why it rejects a file, so the process died before it could: killed (out of memory), or one of too many nvcc processes started at once by the build script."), conf);
        cx.hit(Fact::Note("Run the nvcc command alone: if it succeeds, the build's parallelism is the cause (seen on Windows with about 24 nvcc processes at once)."), conf);
    }
}

/// Whether bindgen_cuda's `# stdout` / `# stderr` blocks below its error
/// line are both empty (blank or `(empty)`), up to the next log line.
fn empty_output_blocks(after: &str) -> bool {
    let mut seen = (false, false);
    for raw in after.lines().skip(1).take(40) {
        let line = raw.trim();
        match line {
            "# stdout" => seen.0 = true,
            "# stderr" => seen.1 = true,
            "" | "(empty)" => {}
            _ if line.starts_with("# CLI") => {}
            // After an empty stderr block the log goes on (cargo, rustc,
            // make); any other line is what nvcc printed.
            _ if seen.1 => {
                return seen.0
                    && [
                        "note: ",
                        "warning: ",
                        "error: ",
                        "error[",
                        "Error: ",
                        "stack backtrace",
                        "thread '",
                        "Caused by",
                        "--- ",
                        "make",
                        "ninja: ",
                        "Compiling ",
                    ]
                    .iter()
                    .any(|p| line.starts_with(p))
            }
            _ => return false,
        }
    }
    seen.0 && seen.1
}

fn nvcc_arch_rejected(cx: &mut LineCx) {
    let l = cx.line;
    let found = if let Some(name) = quoted_after(l, "Unsupported gpu architecture", '\'')
        .or_else(|| unclosed_quote_after(l, "Unsupported gpu architecture"))
    {
        Some((name, "gpu-architecture"))
    } else if l.contains("is not defined for option 'gpu-") {
        // nvcc writes `Value` or `value`.
        quoted_after(l, "alue", '\'').zip(quoted_after(l, "for option", '\''))
    } else {
        None
    };
    let Some((name, option)) = found else { return };
    // `compute_` / `sm_` with no number: a build script's arch detection
    // produced nothing and the empty value reached nvcc.
    if matches!(name.trim(), "" | "compute_" | "sm_" | "lto_") {
        cx.hit_as(
            Code::ArchNotDetected,
            Fact::Note("nvcc was given an architecture with no number (`compute_`): the tool that built the flag detected no GPU architecture (its nvidia-smi query failed or returned nothing) and passed the empty value on."),
            0.85,
        );
        return;
    }
    let fact = Fact::Arch {
        name: name.to_string(),
        option: option.to_string(),
    };
    // The code depends on the nvcc version (the whole log or the context).
    cx.hit_as(Code::ArchInvalid, fact, 0.9);
}

fn arch_native_no_gpu(cx: &mut LineCx) {
    cx.hit(Fact::Note("nvcc found no GPU for -arch=native and fell back to its default architecture, which may not be the GPU the program runs on."), 0.85);
}

fn cmake_arch(cx: &mut LineCx) {
    cx.hit(
        Fact::Note("CMake could not determine which GPU architectures to build for."),
        0.8,
    );
}

/// Build scripts that ask nvidia-smi for the compute capability (candle's,
/// bindgen_cuda's, cudaforge's, mistral.rs's) and fail.
fn compute_cap_detection(cx: &mut LineCx) {
    let l = cx.line;
    // bindgen_cuda asks `nvcc --list-gpu-code` for the targets and parsed
    // none: the nvcc found is too old to list them (CUDA 9 answers the
    // option with an error), older than the crate supports.
    if l.contains("no gpu codes parsed from nvcc") {
        cx.hit_as(
            Code::ToolkitUnsupportedByCrate,
            Fact::Note("The build script asked nvcc for the GPU targets it supports (`nvcc --list-gpu-code`) and got none: the nvcc it found is too old for that option and for the crate. `nvcc --version` shows which nvcc that is; point CUDA_HOME (and PATH) at a current toolkit."),
            0.8,
        );
        return;
    }
    if l.contains("is not a valid field to query") {
        if l.contains("compute_cap") {
            cx.hit_as(Code::ComputeCapQueryUnsupported, Fact::None, 0.9);
        }
        return;
    }
    let lower = l.to_ascii_lowercase();
    let detection = (lower.contains("get cuda compute cap")
        || lower.contains("get compute cap")
        || lower.contains("detect compute cap")
        || lower.contains("compute_cap"))
        && (lower.contains("could not") || lower.contains("failed") || lower.contains("unable"));
    let smi_failed = l.contains("`nvidia-smi` failed") || l.contains("nvidia-smi failed");
    if !(detection || smi_failed) {
        return;
    }
    let not_found = l.contains("kind: NotFound")
        || l.contains("os error 2)")
        || l.contains("Os { code: 2")
        || l.contains("No such file or directory");
    let note = if not_found {
        "The build script runs `nvidia-smi --query-gpu=compute_cap` to choose the GPU architecture, and nvidia-smi is not installed or not on PATH (the io::Error NotFound / os error 2 is about starting nvidia-smi, not a CUDA error)."
    } else {
        "The build script (candle-kernels, bindgen_cuda, cudaforge, mistral.rs) runs `nvidia-smi --query-gpu=compute_cap` to choose the GPU architecture, and that query failed: no nvidia-smi here (a Jetson, a container or CI machine without the driver), or no GPU visible."
    };
    cx.hit(Fact::Note(note), 0.85);
}

fn nvcc_cannot_target(cx: &mut LineCx) {
    let l = cx.line;
    let Some(arch) = number_after(l, "cannot target gpu arch") else {
        return;
    };
    cx.hit(Fact::GpuArch(arch), 0.9);
    cx.hit(Fact::Note("The build script (bindgen_cuda / cudaforge) detected the GPU's compute capability and asked nvcc (`nvcc --list-gpu-code`) for its targets: this nvcc predates the GPU and cannot target it."), 0.9);
}

fn compute_cap_mismatch(cx: &mut LineCx) {
    let l = cx.line;
    if l.contains("is not compatible with compile time compute cap") {
        let runtime = number_after(l, "compute cap");
        let fact = runtime.map_or(Fact::None, Fact::GpuArch);
        cx.hit(fact, 0.9);
        cx.hit(Fact::Note("The program was compiled for one GPU architecture (its build read CUDA_COMPUTE_CAP or the build machine's GPU) and runs on a GPU of another: text-embeddings-inference and candle kernels are built for exactly one compute capability."), 0.9);
    } else if l.contains("is not compatible with the current PyTorch installation") {
        let fact = number_after(l, "CUDA capability sm_").map_or(Fact::None, Fact::GpuArch);
        cx.hit(fact, 0.85);
    }
}

fn ptx_version(cx: &mut LineCx) {
    let l = cx.line;
    let Some(p) = l.find("Unsupported .version") else {
        return;
    };
    let rest = &l[p + 20..];
    let ptx = parse_version(rest.split(';').next().unwrap_or(""));
    let current = quoted_after(rest, "current version is", '\'').and_then(parse_version);
    if let (Some(ptx), Some(current)) = (ptx, current) {
        let fact = Fact::PtxVersion {
            ptx,
            current,
            jit: l.contains("application ptx input"),
            nvcc_tmp: l.contains("tmpxft_"),
        };
        cx.hit(fact, 0.9);
    }
}

fn ptx_target(cx: &mut LineCx) {
    let l = cx.line;
    if let Some(target) = quoted_after(l, "Unsupported .target", '\'') {
        let fact = Fact::PtxTarget {
            target: target.to_string(),
            jit: l.contains("application ptx input"),
            nvcc_tmp: l.contains("tmpxft_"),
        };
        cx.hit(fact, 0.8);
    }
}

fn arch_feature(cx: &mut LineCx) {
    let l = cx.line;
    for key in ["Feature '", "Instruction '", "Modifier '"] {
        let Some(p) = l.find(key) else { continue };
        let rest = &l[p + key.len()..];
        let Some(q) = rest.find('\'') else { continue };
        let feature = rest[..q].to_string();
        let after = &rest[q + 1..];
        if let Some(r) = after.find("requires .target") {
            let needs: String = after[r + 16..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !needs.is_empty() {
                let fact = Fact::Feature {
                    feature,
                    needs,
                    arch_specific: false,
                    target: None,
                };
                cx.hit(fact, 0.95);
            }
        } else if let Some(target) = quoted_after(after, "not supported on .target", '\'') {
            let needs = arch_specific_home(&feature, target);
            let fact = Fact::Feature {
                feature,
                needs,
                arch_specific: true,
                target: Some(target.to_string()),
            };
            cx.hit(fact, 0.9);
        }
        break;
    }
}

/// bf16 code compiled for a target below sm_80: the wmma bf16 fragments are
/// declared only from sm_80 on ("incomplete type"), and the bf16 intrinsics'
/// types do not convert where the code expects them (`nv_bfloat162` to
/// `__half2`). A compile error, not a missing toolkit piece.
fn bf16_below_sm80(cx: &mut LineCx) {
    let l = cx.line;
    let bf16 = l.contains("bfloat16") || l.contains("bfloat162") || l.contains("__nv_bf16");
    if !bf16 {
        // `incomplete type is not allowed` with the declaration below it: a
        // wmma fragment whose element type (bf16, tf32: sm_80) the target lacks.
        let fragment_below = l.contains("incomplete type is not allowed")
            && cx
                .after
                .lines()
                .skip(1)
                .find(|n| !n.trim().is_empty())
                .is_some_and(|n| n.contains("fragment<"));
        if fragment_below {
            let fact = Fact::Feature {
                feature: "wmma fragments of this element type".to_string(),
                needs: "sm_80".to_string(),
                arch_specific: false,
                target: None,
            };
            cx.hit(fact, 0.6);
        }
        return;
    }
    // `incomplete type "nvcuda::wmma::fragment<..., __nv_bfloat16, ...>" is not
    // allowed`, which long types wrap onto a second line.
    let wmma_incomplete =
        (l.contains("incomplete type") || l.contains("is not allowed")) && l.contains("wmma");
    let conversion = l.contains("no suitable user-defined conversion from")
        || l.contains("no suitable conversion function from");
    if wmma_incomplete || conversion {
        let feature = if wmma_incomplete {
            "wmma bf16 fragments"
        } else {
            "bf16 arithmetic (nv_bfloat162)"
        };
        let fact = Fact::Feature {
            feature: feature.to_string(),
            needs: "sm_80".to_string(),
            arch_specific: false,
            target: None,
        };
        cx.hit(fact, 0.8);
    }
}

fn host_unsupported(cx: &mut LineCx) {
    let l = cx.line;
    let (kind, limit) = if l.contains("unsupported GNU version") {
        (HostKind::Gcc, number_after(l, "versions later than"))
    } else if l.contains("unsupported clang version") {
        (
            HostKind::Clang,
            number_after(l, "less than").map(|n| n.saturating_sub(1)),
        )
    } else if l.contains("unsupported Microsoft Visual Studio version") {
        (HostKind::Msvc, number_after(l, "and "))
    } else if l.contains("of the host compiler") && l.contains("is not supported") {
        // nvcc's own check: `The version ('90000') of the host compiler
        // ('Apple clang') is not supported`.
        let Some(name) = quoted_after(l, "of the host compiler", '\'') else {
            return;
        };
        let kind = if name.contains("Apple clang") {
            HostKind::AppleClang
        } else if name.to_ascii_lowercase().contains("clang") {
            HostKind::Clang
        } else if name.contains("gcc") || name.contains("GNU") {
            HostKind::Gcc
        } else {
            return;
        };
        (kind, None)
    } else if l.contains("Host compiler targets unsupported OS") {
        // Most reports are from Windows (a 32-bit cl.exe, MinGW); a Unix
        // build shows its paths or make around the line.
        let near = format!("{l}\n{}", cx.after);
        let unix = ["/usr/", "/home/", "/bin/", "make: ", "make[", "-ccbin"]
            .iter()
            .any(|k| near.contains(k))
            && !near.contains(":\\");
        (HostKind::Target { unix }, None)
    } else {
        (HostKind::Icx, None)
    };
    cx.hit(Fact::Host { kind, limit }, 0.95);
}

fn host_preprocess(cx: &mut LineCx) {
    match cx.state.missing_program.take() {
        Some(p) => cx.hit(Fact::MissingProgram(p), 0.95),
        None => cx.hit(Fact::None, 0.7),
    }
}

fn host_not_found(cx: &mut LineCx) {
    let l = cx.line;
    if l.contains("cl.exe") && !l.contains("Cannot find compiler") {
        // Any wording of "cl.exe is not on PATH" (a tool's, or a person's).
        let lower = l.to_ascii_lowercase();
        let missing = [
            "not found",
            "cannot find",
            "could not find",
            "can't find",
            "not in path",
            "is not recognized",
        ]
        .iter()
        .any(|w| lower.contains(w));
        if missing {
            cx.hit(Fact::None, 0.85);
        }
        return;
    }
    if l.contains("cannot find a supported version of Microsoft Visual Studio") {
        cx.hit(Fact::Note("nvcc found no Visual Studio it supports: none is installed with the C++ workload, or the installed one is newer than this nvcc accepts (run from a Developer Command Prompt of a supported version, or use a newer CUDA)."), 0.85);
    } else {
        cx.hit(Fact::None, 0.9);
    }
}

fn host_front_end_missing(cx: &mut LineCx) {
    cx.hit(
        Fact::Note("The gcc driver nvcc ran is installed without its C++ compiler proper: `cc1plus` comes with the g++ package of the same version (gcc-c++ on Fedora and RHEL), and nvcc compiles its host code as C++. A gcc-N beside a g++ of another version gives the same error."),
        0.9,
    );
}

fn host_tool_missing(cx: &mut LineCx) {
    let l = cx.line;
    for tool in ["g++", "gcc", "c++", "clang++"] {
        for tail in [": not found", ": command not found"] {
            let Some(p) = l
                .find(tail)
                .filter(|&p| l[..p].ends_with(tool))
                .map(|p| p - tool.len())
            else {
                continue;
            };
            // "x86_64-linux-gnu-g++: not found" too, but not "nvcc: not found".
            let prefix_ok = p == 0
                || !l.as_bytes()[p - 1].is_ascii_alphanumeric()
                || l.as_bytes()[p - 1] == b'-';
            if prefix_ok {
                let prog = l[..p + tool.len()]
                    .rsplit([' ', ':'])
                    .next()
                    .unwrap_or(tool)
                    .to_string();
                cx.hit(Fact::MissingProgram(prog), 0.75);
                return;
            }
        }
    }
}

fn libdevice_missing(cx: &mut LineCx) {
    cx.hit(
        Fact::Note("nvcc could not find libdevice (nvvm/libdevice/libdevice.10.bc), the device math library cicc links into every kernel. Usually another nvcc than the toolkit's own ran (a distribution's /usr/bin/nvcc, a copied binary) without the nvcc.profile that sets NVVMIR_LIBRARY_DIR; else the nvvm component is missing or split from nvcc (a conda or pip install of part of the toolkit)."),
        0.9,
    );
}

fn toolkit_tool_missing(cx: &mut LineCx) {
    let l = cx.line;
    for tool in ["cicc", "ptxas", "fatbinary", "nvlink", "cudafe++"] {
        let shell = [": not found", ": command not found"]
            .iter()
            .any(|t| l.find(t).is_some_and(|p| l[..p].ends_with(tool)));
        if shell || l.contains(&format!("'{tool}' is not recognized")) {
            let note = if tool == "cicc" {
                "nvcc could not run cicc (nvvm/bin): the nvvm component is missing, or nvcc runs without its nvcc.profile (a copied or wrapped nvcc)."
            } else {
                "nvcc could not run one of its own programs from the toolkit's bin directory: the toolkit is incomplete, or nvcc runs without its nvcc.profile."
            };
            cx.hit(Fact::Note(note), 0.9);
            return;
        }
    }
}

fn header_missing(cx: &mut LineCx) {
    let l = cx.line;
    let header = if let Some(p) = l.find("fatal error: ") {
        let rest = &l[p + 13..];
        if let Some(q) = rest
            .find(": No such file or directory")
            .or_else(|| rest.find(": No file or directory"))
        {
            Some(rest[..q].trim().to_string())
        } else {
            quoted_after(rest, "", '\'')
                .filter(|_| rest.contains("file not found"))
                .map(str::to_string)
        }
    } else if let Some(h) = quoted_after(l, "Cannot open include file:", '\'') {
        Some(h.to_string())
    } else {
        quoted_after(l, "cannot open source file", '"').map(str::to_string)
    };
    if let Some(h) = header {
        let h = h
            .trim_start_matches(['<', '"'])
            .trim_end_matches(['>', '"'])
            .to_string();
        if is_cuda_header(&h) {
            cx.hit(Fact::Header(h), 0.9);
        }
        return;
    }
    // `g++-15: No such file or directory` before nvcc's "Failed to preprocess
    // host compiler properties": remember the program.
    if !l.contains("cannot open shared object file") {
        let prog = l
            .strip_suffix("No such file or directory")
            .or_else(|| l.strip_suffix("No file or directory"))
            .map(|s| s.trim_end_matches([' ', ':']));
        if let Some(prog) = prog.filter(|p| !p.is_empty() && !p.contains(' ')) {
            cx.state.missing_program = Some(prog.to_string());
        }
    }
}

fn library_missing(cx: &mut LineCx) {
    let l = cx.line;
    let mut found: Vec<(String, bool, f32)> = Vec::new();
    if let Some(p) = l.find(": cannot open shared object file") {
        // `[libcuda.so](http://libcuda.so/)`: a log pasted through markdown.
        let lib = l[..p]
            .rsplit([' ', ':', '\'', '"', '('])
            .next()
            .unwrap_or("")
            .trim_matches(|c| "[]()/\\".contains(c))
            .to_string();
        found.push((lib, false, 0.9));
    }
    if let Some(p) = l.find("cannot find -l") {
        let lib: String = l[p + 14..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-' || *c == '.')
            .collect();
        found.push((format!("lib{lib}"), true, 0.85));
    }
    // A loader wrapper's own words: `Unable to load library 'x.so'`, `Could
    // not load "nvrtc64_70.dll"`, `Failed to load library x.so`.
    for key in ["load library", "Could not load"] {
        let name = quoted_after(l, key, '\'').or_else(|| quoted_after(l, key, '"'));
        if let Some(lib) =
            name.filter(|n| n.contains(".so") || n.ends_with(".dll") || n.ends_with(".dylib"))
        {
            found.push((lib.to_string(), false, 0.85));
        }
    }
    // Windows' error 126, in any wording: the DLL named on the line.
    if l.contains("specified module could not be found") {
        if let Some(dll) = l
            .split(['"', '\'', ' ', '\\', '/', '(', ')'])
            .find(|w| w.to_ascii_lowercase().ends_with(".dll"))
        {
            found.push((dll.to_string(), false, 0.85));
        }
    }
    // MSVC's LNK1181 in any language: the quoted .lib.
    if l.contains("LNK1181") {
        if let Some(lib) = l
            .split(['\'', '"', '`'])
            .find(|w| w.to_ascii_lowercase().ends_with(".lib") && !w.contains(' '))
        {
            found.push((format!("lib{}", lib.trim_end_matches(".lib")), true, 0.85));
        }
    }
    // NVRTC without its builtins library beside it (pip, conda, a copied DLL).
    if l.contains("nvrtc") && l.contains("failed to load builtins") {
        found.push(("libnvrtc-builtins.so".to_string(), false, 0.85));
    } else if l.contains("nvrtc-builtins")
        && [
            "failed to open",
            "Make sure that",
            "could not",
            "cannot",
            "not found",
        ]
        .iter()
        .any(|w| l.contains(w))
    {
        let name = l
            .split([' ', '\'', '"', '`', '/', '\\'])
            .find(|w| w.contains("nvrtc-builtins"))
            .unwrap_or("libnvrtc-builtins.so")
            .trim_end_matches(['.', ',', ':']);
        found.push((name.to_string(), false, 0.85));
    }
    // rustc, for `cargo:rustc-link-lib=static=<name>` with no such archive.
    if let Some(lib) = quoted_after(l, "could not find native static library", '`') {
        found.push((format!("lib{lib}"), true, 0.85));
    }
    // The same words without the code (lld, a quoted fragment).
    if let Some(lib) =
        quoted_after(l, "cannot open input file", '\'').filter(|_| !l.contains("LNK1181"))
    {
        let lib = lib.trim_end_matches(".lib");
        found.push((format!("lib{lib}"), true, 0.85));
    }
    if let Some(p) = l.find("unable to find library -l") {
        let lib: String = l[p + 25..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-' || *c == '.')
            .collect();
        found.push((format!("lib{lib}"), true, 0.85));
    }
    // cudarc's build script looking for a header: Unable to find `include/cudnn.h` under any of.
    if let Some(p) = l.find("Unable to find `include/") {
        let name: String = l[p + 24..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        found.push((format!("lib{name}"), true, 0.85));
    }
    if l.contains("LoadLibrary failed with error 126") {
        let name = l
            .split(['"', '\'', ' ', '\\', '/'])
            .find(|w| w.ends_with(".dll"))
            .unwrap_or("a CUDA library");
        if name.contains("cuda") || name.contains("cudnn") || name.contains("cublas") {
            cx.hit_as(
                Code::CudaRuntimeLibNotFound,
                Fact::Library {
                    name: name.to_string(),
                    link_time: false,
                },
                0.8,
            );
        }
    }
    if let Some(lib) = quoted_after(l, "Could not load dynamic library", '\'') {
        found.push((lib.to_string(), false, 0.85));
    }
    // cudarc: Unable to dynamically load the "cuda" shared library.
    if let Some(name) =
        quoted_after(l, "dynamically load the", '"').filter(|_| l.contains("shared library"))
    {
        found.push((format!("lib{name}.so"), false, 0.85));
    }
    // cudarc: Unable to find curand lib under the names ["curand", "curand64_12", ...].
    if let Some(p) = l.find(" lib under the names") {
        let name = l[..p].rsplit([' ', '`', '"']).next().unwrap_or("");
        if !name.is_empty() {
            found.push((format!("lib{name}.so"), false, 0.85));
        }
    }
    for (lib, link_time, confidence) in found {
        if lib.contains("stubs/") || lib.contains("stubs\\") {
            continue; // the stub rule reads it
        }
        let code = lib_code(&lib)
            .or_else(|| is_framework_cuda_lib(&lib).then_some(Code::FrameworkLibNotFound));
        // A framework's core library (ONNX Runtime, libtorch, ggml) missing at
        // load: its CUDA build is linked dynamically, so the loader must find it.
        let (code, confidence) = match code {
            Some(c) => (Some(c), confidence),
            // At load time only: a static archive missing at link time is the
            // framework's own build setup, not its CUDA part.
            None => (
                (!link_time && is_framework_core_lib(&lib)).then_some(Code::FrameworkLibNotFound),
                confidence.min(0.7),
            ),
        };
        if let Some(code) = code {
            let fact = Fact::Library {
                name: lib,
                link_time,
            };
            cx.hit_as(code, fact, confidence);
        }
    }
    let library = |name: &str| Fact::Library {
        name: name.into(),
        link_time: false,
    };
    if l.contains("nvcuda.dll")
        && (l.contains("not found") || l.contains("could not") || l.contains("cannot"))
    {
        cx.hit_as(Code::LibcudaNotFound, library("nvcuda.dll"), 0.8);
    }
    if l.contains("find libnvidia-ml.so") || l.contains("NVML Shared Library Not Found") {
        cx.hit_as(Code::NvmlNotFound, library("libnvidia-ml.so"), 0.9);
    }
}

/// The toolkit's stub libcuda (for linking only) loaded, or named in a failed
/// load: the program reached the stub instead of the driver's libcuda.
fn libcuda_stub(cx: &mut LineCx) {
    let l = cx.line;
    let Some(p) = l.find("stubs/libcuda").or_else(|| l.find("stubs\\libcuda")) else {
        return;
    };
    let loader = [
        "Mapped",
        "mapped",
        "Loaded",
        "loaded",
        "dlopen",
        "DlOpen",
        "Using",
        "using",
        "load",
        "Load",
        "open",
        "undefined symbol",
    ]
    .iter()
    .any(|w| l.contains(w));
    let bare_path = l.starts_with('/') && !l.contains(' ');
    if !(loader || bare_path) {
        return;
    }
    let start = l[..p].rfind([' ', '\'', '"', '`']).map_or(0, |q| q + 1);
    let name = l[start..]
        .split(|c: char| c.is_whitespace() || c == ':' || c == '"' || c == '\'')
        .next()
        .unwrap_or("stubs/libcuda.so")
        .to_string();
    let confidence = if loader { 0.8 } else { 0.6 };
    let fact = Fact::Library {
        name,
        link_time: false,
    };
    cx.hit(fact, confidence);
}

fn nvcc_missing(cx: &mut LineCx) {
    let l = cx.line;
    if l.contains("sccache") {
        return; // sccache's temp files, not nvcc
    }
    if l.contains("CUDA_HOME environment variable is not set") {
        cx.hit(Fact::Note("PyTorch/setuptools could not find a toolkit: CUDA_HOME is unset and nvcc is not on PATH."), 0.8);
        return;
    }
    if l.contains("find a cuda installation") || l.contains("find a CUDA installation") {
        cx.hit(Fact::Note("The build script found no CUDA toolkit (no CUDA_HOME / CUDA_PATH, no nvcc on PATH)."), 0.85);
        return;
    }
    // The shell was given `$(CUDA_HOME)/bin/nvcc` with an empty or
    // colon-joined CUDA_HOME: `/bin/nvcc`, `:/usr/local/cuda/bin/nvcc`.
    for tail in [": not found", ": No such file", ": No file"] {
        let Some(p) = l.find(&format!("nvcc{tail}")) else {
            continue;
        };
        let path = l[..p + 4].rsplit([' ', '\'', '"']).next().unwrap_or("");
        if path == "/bin/nvcc" || path.starts_with(':') || path.contains("::") {
            let note = if path == "/bin/nvcc" {
                "nvcc was run as `/bin/nvcc`: the toolkit variable in front of `/bin/nvcc` (CUDA_HOME, CUDA_PATH) was empty."
            } else {
                "nvcc was run by a path that starts with or contains `:`: CUDA_HOME holds several paths joined by colons (or a stray colon), and the build used it as one directory."
            };
            cx.hit_as(Code::CudaHomeInvalid, Fact::Note(note), 0.85);
            return;
        }
    }
    // The shell could not start nvcc at the path it was given.
    if let Some(p) = l
        .find("nvcc: No such file")
        .or_else(|| l.find("nvcc: No file"))
    {
        let path = l[..p + 4].rsplit([' ', '\'', '"']).next().unwrap_or("nvcc");
        let note = if path.contains('/') || path.contains('\\') {
            "A shell or build script ran nvcc by a path that does not exist: the toolkit is not installed there (CUDA_HOME or the script points at the wrong place)."
        } else {
            "nvcc could not be started: it is not installed or not on PATH."
        };
        cx.hit(Fact::Note(note), 0.85);
        return;
    }
    let says_missing = l.contains("nvcc: command not found")
        || l.contains("nvcc: not found")
        || l.contains("'nvcc' is not recognized")
        || l.contains("No CMAKE_CUDA_COMPILER could be found")
        || l.contains("nvcc not found")
        || l.contains("nvcc cannot be found")
        || l.contains("nvcc was not found")
        || l.contains("nvcc binary could not be")
        || l.contains("Is `nvcc` installed")
        || l.contains("Cuda compiler not found")
        || l.contains("CUDA compiler not found")
        || (l.contains("find nvcc")
            && [
                "Could not",
                "could not",
                "Failed to",
                "failed to",
                "Unable to",
                "unable to",
            ]
            .iter()
            .any(|w| l.contains(w)));
    if says_missing {
        cx.hit(Fact::None, 0.85);
    }
}

/// A Rust `io::Error` NotFound (`Os { code: 2, kind: NotFound }`, `(os error
/// 2)`): a program could not be started. The program named before it decides
/// the code; the number is never a CUDA error.
fn program_not_found(cx: &mut LineCx) {
    let l = cx.line;
    let Some(at) = ["Os { code: 2", "kind: NotFound", "os error 2)"]
        .iter()
        .filter_map(|k| l.find(k))
        .min()
    else {
        return;
    };
    if l.contains("sccache") || l.contains("Failed to open file") {
        return;
    }
    let Some(program) = program_before(l, at) else {
        return;
    };
    let in_build = cx.state.in_build_error || l.contains("compute");
    let note_smi = "nvidia-smi could not be started (io::Error NotFound): the NVIDIA driver's utilities are not installed here or not on PATH.";
    match program.as_str() {
        "nvcc" => cx.hit_as(
            Code::NvccNotFound,
            Fact::Note("nvcc could not be started (io::Error NotFound, os error 2): it is not on PATH and no CUDA_HOME / NVCC names a toolkit."),
            0.85,
        ),
        // Build scripts run nvidia-smi to read the compute capability;
        // compute-cap-detection may already have explained this line.
        "nvidia-smi" if in_build && cx.gave(Code::ArchNotDetected) => {}
        "nvidia-smi" if in_build => cx.hit_as(Code::ArchNotDetected, Fact::Note(note_smi), 0.8),
        "nvidia-smi" => cx.hit_as(Code::DriverNotLoaded, Fact::Note(note_smi), 0.6),
        "cicc" | "ptxas" | "fatbinary" | "nvlink" => cx.hit_as(
            Code::ToolkitIncomplete,
            Fact::Note("nvcc could not start one of its own programs: the toolkit is incomplete."),
            0.8,
        ),
        "cl.exe" | "clang++" | "clang" | "g++" | "gcc" | "c++" | "cc" => cx.hit_as(
            Code::HostCompilerNotFound,
            Fact::MissingProgram(program.clone()),
            0.8,
        ),
        _ => {}
    }
}

/// CUDA_HOME (or a sibling) holding several paths joined by `:`, as PATH
/// does: no tool splits it, so the toolkit is looked up under a path that
/// does not exist (`/usr/local/cuda:/usr/local/cuda-12.1/bin/nvcc`).
fn cuda_home_list(cx: &mut LineCx) {
    let l = cx.line;
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(
            r#"(?x)
            \b(?:CUDA_HOME|CUDA_PATH|CUDA_ROOT|CUDA_TOOLKIT_ROOT_DIR)\s*[=:]\s*["'`]?
                (?P<var>/[^\s:'"`;,]*:/[^\s'"`;,]*)
          | (?P<tool>/[^\s:'"`;,]*cuda[^\s:'"`;,]*:/[^\s:'"`;,]*cuda[^\s:'"`;,]*/bin/nvcc)\b"#,
        )
        .expect("valid regex")
    });
    let Some(m) = re.captures(l) else { return };
    let (list, conf) = match (m.name("var"), m.name("tool")) {
        (Some(v), _) => (v.as_str(), 0.85),
        (None, Some(t)) => (t.as_str(), 0.8),
        _ => return,
    };
    let note = format!("`{list}` is several paths joined by `:` (as in PATH), used as one toolkit directory: CUDA_HOME names exactly one toolkit root.");
    cx.hit(Fact::Text(note), conf);
}

/// rustc rejecting a call into a binding crate's bindings of one CUDA
/// release (cudarc's `sys::sys_12010::Lib`, CUDA 12.1): they lack a function
/// the crate calls, so the crate was built for a release it does not
/// support. Weak: a bug in the crate's version features reads the same.
fn binding_version_lacks_function(cx: &mut LineCx) {
    let l = cx.line;
    let missing = [
        "no method named `",
        "cannot find function `",
        "cannot find value `",
    ]
    .iter()
    .any(|p| l.contains(p));
    let Some(p) = l.find("::sys_").filter(|_| missing) else {
        return;
    };
    let digits: String = l[p + 6..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    if digits.len() != 5 {
        return;
    }
    cx.hit(Fact::Text(digits), 0.45);
    cx.hit(Fact::Note("The crate was compiled with its bindings for the CUDA release in the module name (sys_12010 is 12.1), and they lack a function it calls: that crate release needs another toolkit version than the one it built for (usually a newer one), or its CUDA-version feature names the wrong one."), 0.45);
}

fn toolkit_unsupported_by_crate(cx: &mut LineCx) {
    let l = cx.line;
    // `Unsupported CUDA version 10.1 < 11.4` from a build script's version
    // check (sppark); the container runtime's lower-case form is the driver's.
    if !l.contains("toolkit version") {
        if !(cx.state.in_build_error && l.contains(" < ")) {
            return;
        }
        let v: String = l[l.find("Unsupported CUDA version").map_or(0, |p| p + 24)..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let fact = if v.is_empty() {
            Fact::None
        } else {
            Fact::Text(v)
        };
        cx.hit(fact, 0.85);
        return;
    }
    let version = quoted_after(l, "toolkit version", '`')
        .map(str::to_string)
        .or_else(|| {
            let p = l.find("toolkit version:")?;
            let v: String = l[p + 16..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            (!v.is_empty()).then_some(v)
        });
    let fact = version.map_or(Fact::None, |v| {
        Fact::Text(v.trim_end_matches('.').to_string())
    });
    cx.hit(fact, 0.9);
}

fn driver_not_running(cx: &mut LineCx) {
    let l = cx.line;
    let (note, conf): (Option<&'static str>, f32) = if l
        .contains("kernel driver does not appear to be running")
    {
        (Some("The NVIDIA kernel module is not running on this host (/proc/driver/nvidia/version is missing)."), 0.85)
    } else if l.contains("communicate with the NVIDIA driver") {
        (None, 0.9)
    } else if l.contains("DRIVER_NOT_LOADED")
        || l.contains("Driver Not Loaded")
        || (l.contains("driver not loaded") && (l.contains("nvml") || l.contains("NVML")))
    {
        (None, 0.85)
    } else if l.contains("Key was rejected by service") {
        (Some("The kernel refused to load the nvidia module: Secure Boot rejects unsigned modules."), 0.85)
    } else if l.contains("Module nvidia not found") {
        (
            Some("No nvidia kernel module is built for the running kernel."),
            0.8,
        )
    } else if l.contains("Found no NVIDIA driver") {
        (Some("The program found no working NVIDIA driver (no libcuda, or the kernel module is not loaded)."), 0.6)
    } else if l.contains("Nouveau kernel driver") {
        (Some("The open-source nouveau driver holds the GPU, so the nvidia module cannot drive it: blacklist nouveau and reboot."), 0.85)
    } else {
        return;
    };
    cx.hit(note.map_or(Fact::None, Fact::Note), conf);
}

/// The kernel log (`dmesg`): NVRM lines say why the nvidia module has no GPU.
fn kernel_log(cx: &mut LineCx) {
    let l = cx.line;
    if l.contains("API mismatch") {
        return; // driver-mismatch reads it
    }
    if l.contains("No NVIDIA graphics adapter found") || l.contains("No NVIDIA GPU found") {
        cx.hit_as(
            Code::NoDeviceVisible,
            Fact::Note("The nvidia kernel module found no NVIDIA GPU on the PCI bus: the machine has none (or it is not passed through to this VM)."),
            0.85,
        );
        return;
    }
    let (code, note) = if l.contains("nouveau")
        || l.contains("No NVIDIA graphics adapter probed")
        || l.contains("No NVIDIA devices probed")
        || l.contains("probe routine was not called")
    {
        (Code::NouveauHoldsGpu, "The kernel log shows the nvidia module loaded but not probing the GPU: another driver (nouveau, rivafb, nvidiafb) obtained it first.")
    } else if l.contains("not supported by open")
        || l.contains("Legacy drivers")
        || l.contains("is not supported by the NVIDIA")
    {
        (Code::GpuUnsupportedByDriver, "The kernel log says the loaded nvidia module does not support this GPU (the open modules need a GSP, Turing or newer; legacy GPUs need a legacy branch).")
    } else if l.contains("probe routine failed") || l.contains("RmInitAdapter failed") {
        (Code::DriverNotLoaded, "The nvidia kernel module failed to initialise the GPU (see the lines around it in dmesg): a driver that does not support the GPU, a GPU fallen off the bus, or a firmware problem.")
    } else {
        return;
    };
    cx.hit_as(code, Fact::Note(note), 0.85);
}

fn driver_mismatch(cx: &mut LineCx) {
    let l = cx.line;
    if l.contains("Driver/library version mismatch") || l.contains("RM_VERSION_MISMATCH") {
        cx.hit(Fact::None, 0.95);
    } else if l.contains("API mismatch") && (l.contains("NVRM") || l.contains("kernel module")) {
        cx.hit(Fact::None, 0.9);
    }
}

fn driver_too_old(cx: &mut LineCx) {
    let l = cx.line;
    if l.contains("NVIDIA driver on your system is too old") {
        cx.hit(Fact::None, 0.9);
    } else if l.contains("unsupported CUDA version:")
        || l.contains("unsatisfied condition: cuda>=")
        || l.contains("requirement error: unsatisfied")
    {
        cx.hit(Fact::Note("The container runtime refused to start the image: the image requires a newer CUDA than the host driver supports (the image's NVIDIA_REQUIRE_CUDA)."), 0.9);
    }
}

fn no_devices_found(cx: &mut LineCx) {
    cx.hit(Fact::None, 0.75);
}

/// A GPU device node the container runtime (or a program) needs is missing.
fn container_device(cx: &mut LineCx) {
    let l = cx.line;
    let missing = [
        "no such file",
        "No such file",
        "does not exist",
        "not found",
    ]
    .iter()
    .any(|w| l.contains(w));
    let node = [
        "/dev/nvidia0",
        "/dev/nvidiactl",
        "/dev/nvidia-uvm",
        "/dev/nvidia-modeset",
    ]
    .iter()
    .any(|n| l.contains(n));
    if missing && node {
        cx.hit(Fact::Note("The GPU's device node is missing where the container runtime looked: on the host the nvidia module has not created /dev/nvidia* (no driver loaded, no NVIDIA GPU, or a Jetson/WSL host with other nodes), so it cannot be passed in."), 0.85);
    }
}

fn container_runtime(cx: &mut LineCx) {
    cx.hit(Fact::None, 0.9);
}

fn cuda_backend_not_built(cx: &mut LineCx) {
    let l = cx.line;
    let note = if l.contains("from the 'CUDA' backend") || l.contains("without ATen_cuda library") {
        "libtorch has no CUDA kernels registered: a CPU-only libtorch, or libtorch_cuda was not linked (tch-rs needs it linked explicitly)."
    } else if l.contains("execution provider") || l.contains("ONNX Runtime") {
        "The ONNX Runtime library in use was built without the CUDA execution provider (ort downloaded or found a CPU-only build), or its CUDA provider library could not be loaded."
    } else if l.contains("not compiled with CUDA enabled") {
        "The library (PyTorch/libtorch) in use is a CPU-only build."
    } else {
        return;
    };
    cx.hit(Fact::Note(note), 0.85);
}

fn torch_cuda_mismatch(cx: &mut LineCx) {
    cx.hit(Fact::None, 0.9);
}

/// A symbol missing from libcuda, libnvrtc or nvcuda.dll that a Rust binding
/// (cudarc) expects: the driver or toolkit is older (or newer) than it needs.
fn missing_symbol(cx: &mut LineCx) {
    let l = cx.line;
    if l.contains("stubs/") || l.contains("stubs\\") {
        return; // the stub rule reads it
    }
    let symbol = l.find("undefined symbol: ").map(|p| {
        l[p + 18..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect::<String>()
    });
    match symbol.as_deref() {
        Some(s) if s.starts_with("nvrtc") => cx.hit_as(
            Code::ToolkitUnsupportedByCrate,
            Fact::Note("The crate's NVRTC bindings expect a function this toolkit's libnvrtc does not have: the toolkit is newer (CUDA 13 removed some) or older than the crate release supports."),
            0.85,
        ),
        Some(s) if s.starts_with("cu") && (l.contains("libcuda") || l.contains("nvcuda")) => cx.hit(
            Fact::Note("The binding expects a driver API function that this driver's libcuda lacks: the driver is older than the CUDA version the binding was built for."),
            0.85,
        ),
        None if l.contains("GetProcAddress") && l.contains("code: 127") => cx.hit(
            Fact::Note("Windows could not find a driver API function in nvcuda.dll (error 127): the driver is older than the CUDA version the binding was built for."),
            0.75,
        ),
        _ => {}
    }
}

fn msbuild_cuda(cx: &mut LineCx) {
    cx.hit(Fact::None, 0.9);
}

fn nvrtc_arch(cx: &mut LineCx) {
    cx.hit(Fact::Note("NVRTC, the runtime compiler, was asked to compile for the GPU's architecture and does not know it: the NVRTC (toolkit, or the one bundled with PyTorch) is older than the GPU."), 0.85);
}

/// `__hmax` / `__hmin` on half types exist only from sm_80 on.
fn half_intrinsic(cx: &mut LineCx) {
    let l = cx.line;
    if !l.contains("is undefined") {
        return;
    }
    let Some(name) = quoted_after(l, "identifier", '"') else {
        return;
    };
    if name.starts_with("__hmax") || name.starts_with("__hmin") {
        let fact = Fact::Feature {
            feature: name.to_string(),
            needs: "sm_80".to_string(),
            arch_specific: false,
            target: None,
        };
        cx.hit(fact, 0.8);
    }
}

/// Kernels that name their architecture in the file name
/// (`flash_fwd_hdim256_bf16_sm80.cu`) failing to compile: built for a lower target.
fn arch_named_file(cx: &mut LineCx) {
    let l = cx.line;
    let Some(file) = quoted_after(l, "compilation of", '"') else {
        return;
    };
    let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let Some(p) = base.find("_sm") else { return };
    let digits: String = base[p + 3..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    if digits.len() >= 2 && digits.parse::<u32>().is_ok_and(|n| n >= 70) {
        let fact = Fact::Feature {
            feature: format!("the kernels of {base}"),
            needs: format!("sm_{digits}"),
            arch_specific: false,
            target: None,
        };
        cx.hit(fact, 0.7);
    }
}

/// g++ 11's <functional> under nvcc 11.x: a known incompatibility between the
/// two, fixed by another host compiler (or a newer CUDA).
fn gcc11_std_function(cx: &mut LineCx) {
    if cx.line.contains("std_function.h") {
        cx.hit(
            Fact::Host {
                kind: HostKind::Gcc,
                limit: None,
            },
            0.8,
        );
        cx.hit(Fact::Note("g++ 11's std_function.h does not compile under nvcc 11.x (\"parameter packs not expanded\"): this host compiler and nvcc do not work together."), 0.8);
    }
}

fn context_bf16(cx: &mut LineCx) {
    let l = cx.line;
    if l.contains("bf16") || l.contains("candle") {
        cx.scan.bf16_context = true;
    }
}

fn cuda_error(cx: &mut LineCx) {
    let mut errs = Vec::new();
    cuda_errors::find_in_line(cx.line, &mut errs);
    for (err, by_number) in errs {
        if matches!(err.code(), Code::PtxTooNewForDriver | Code::PtxJitFailed) {
            cx.scan.jit_context = true;
        }
        // Already explained more precisely by a rule above (e.g. the PyTorch line).
        if cx.gave(err.code()) {
            continue;
        }
        let confidence = if by_number { 0.5 } else { 0.85 };
        cx.hit_as(err.code(), Fact::Cuda { err, by_number }, confidence);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::scan;

    /// No rule is dead: every rule's triggers reach it through the prefilter,
    /// and its example line gives its code.
    #[test]
    fn every_rule_is_reachable_and_reads_its_example() {
        for (i, rule) in RULES.iter().enumerate() {
            let lits = rule.triggers.literals();
            assert!(!lits.is_empty(), "{} has no triggers", rule.name);
            for t in lits {
                assert!(
                    scan::rules_for(t).contains(&i),
                    "rule {}: trigger {t:?} does not reach it",
                    rule.name
                );
            }
            assert!(
                scan::rules_for(rule.example).contains(&i),
                "rule {}: its example has none of its triggers",
                rule.name
            );
            if let Some(code) = rule.code {
                if !matches!(code, Code::Other(_)) {
                    assert!(code.doc().is_some(), "{}: {code} undocumented", rule.name);
                }
            }
        }
    }

    #[test]
    fn examples_give_their_codes() {
        for rule in RULES {
            let s = scan::scan(rule.example);
            match rule.code {
                None => assert!(
                    s.hits.is_empty()
                        && (s.nvcc_release.is_some()
                            || s.smi_driver.is_some()
                            || s.build_script.is_some()
                            || s.jit_context
                            || s.bf16_context
                            || s.driver_fault.is_some()
                            || s.arch_option.is_some()
                            || s.kernel_module.is_some()
                            || s.building
                            || s.program_ran
                            || s.gpu_optional),
                    "context rule {} learnt nothing from its example",
                    rule.name
                ),
                Some(Code::Other(_)) => assert!(!s.hits.is_empty(), "{}", rule.name),
                // Arch and PTX facts get their code from the whole log; the
                // rule only has to produce a hit.
                Some(code) => assert!(
                    s.hits.iter().any(|h| h.code == code)
                        || matches!(
                            rule.name,
                            "nvcc-arch-rejected" | "ptx-version" | "ptx-target" | "cuda-error"
                        ),
                    "rule {}: example gave {:?}, not {code}",
                    rule.name,
                    s.hits.iter().map(|h| h.code).collect::<Vec<_>>()
                ),
            }
        }
    }

    #[test]
    fn program_not_found_names_the_program() {
        let l = "thread 'main' panicked: `nvidia-smi` failed: Os { code: 2, kind: NotFound, message: \"No such file or directory\" }";
        assert_eq!(
            program_before(l, l.find("Os {").unwrap()).as_deref(),
            Some("nvidia-smi")
        );
        let l = "error: failed to execute command: No such file or directory (os error 2) nvcc";
        assert_eq!(program_before(l, l.find("os error").unwrap()), None);
    }
}
