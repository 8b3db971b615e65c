//! Pass 2: turn the matched lines into diagnoses, with causes and fixes
//! computed from the facts tables and from what was detected (the
//! [`Context`]): the toolkit that ran, other installed toolkits, the driver,
//! the GPUs, the platform.

use super::codes::Code;
use super::defaults::default_text;
use super::scan::{Fact, Hit, HostKind, Scan};
use super::view::{push_unique, vs, Finding, View};
use super::{Context, Diagnosis, Layer};
use crate::arch::{Arch, ComputeCapability, Variant};
use crate::facts::{self, CudaVersion};

/// Most evidence lines kept per diagnosis.
const MAX_EVIDENCE_LINES: usize = 6;

/// Runs pass 2.
pub(crate) fn explain(scan: Scan, ctx: &Context) -> Vec<Diagnosis> {
    let view = View { ctx, scan: &scan };
    let mut findings: Vec<Finding> = Vec::new();
    for hit in &scan.hits {
        let (code, confidence) = resolve(hit, &view);
        let Hit {
            offset,
            evidence,
            fact,
            ..
        } = hit;
        match findings.iter_mut().find(|f| f.code == code) {
            Some(f) => {
                if f.evidence.len() < MAX_EVIDENCE_LINES && !f.evidence.contains(evidence) {
                    f.evidence.push(evidence.clone());
                }
                if f.facts.len() < 16 && !f.facts.contains(fact) {
                    f.facts.push(fact.clone());
                }
                f.confidence = f.confidence.max(confidence);
            }
            None => findings.push(Finding {
                code,
                offset: *offset,
                evidence: vec![evidence.clone()],
                facts: vec![fact.clone()],
                confidence,
            }),
        }
    }
    context_findings(&view, &mut findings);
    rank_native_with_real_arch(&mut findings);
    let mut out: Vec<(usize, Diagnosis)> = findings
        .iter()
        .map(|f| (f.offset, build(f, &view)))
        .collect();
    cross_check(&mut out);
    out.sort_by(|a, b| {
        b.1.confidence
            .total_cmp(&a.1.confidence)
            .then(a.0.cmp(&b.0))
    });
    out.into_iter().map(|(_, d)| d).collect()
}

/// Causes the probe saw on this machine that explain the runtime errors in
/// the log (which names only the symptom): a stub libcuda, a kernel module
/// that does not match the driver's libraries.
fn context_findings(view: &View, findings: &mut Vec<Finding>) {
    log_version_mismatch(view, findings);
    let Some(platform) = view.platform() else {
        return;
    };
    let symptom = findings
        .iter()
        .any(|f| matches!(f.code.layer(), Layer::Driver | Layer::Load | Layer::Run));
    if !symptom {
        return;
    }
    let mut add = |code: Code, evidence: String| {
        if let Some(f) = findings.iter_mut().find(|f| f.code == code) {
            push_unique(&mut f.evidence, evidence);
            f.confidence = f.confidence.max(0.9);
        } else {
            findings.push(Finding {
                code,
                offset: usize::MAX,
                evidence: vec![evidence],
                facts: vec![Fact::None],
                confidence: 0.8,
            });
        }
    };
    if platform.libcuda_stub {
        let path = platform
            .libcuda
            .as_ref()
            .map_or_else(|| "libcuda".to_string(), |p| p.display().to_string());
        add(
            Code::LibcudaStub,
            format!("(probe) the libcuda loaded here, {path}, is the toolkit's stub"),
        );
    }
    // One reading of the probe, shared with `cargo cuda doctor`.
    if let Some(report) = view.ctx.probe.as_ref() {
        if let crate::probe::NvmlVerdict::Mismatch {
            libraries,
            kernel_module,
            ..
        } = crate::probe::nvml_verdict(report)
        {
            add(
                Code::DriverLibraryMismatch,
                format!(
                    "(probe) kernel module {}, driver libraries {}",
                    kernel_module.as_deref().unwrap_or("?"),
                    libraries.as_deref().unwrap_or("?")
                ),
            );
        }
    }
}

/// The log itself shows a kernel module of one driver version and user-space
/// driver packages of another.
fn log_version_mismatch(view: &View, findings: &mut Vec<Finding>) {
    let (Some((k, k_line)), Some((u, u_line))) = (&view.scan.kernel_module, &view.scan.user_driver)
    else {
        return;
    };
    let (a, b) = (
        facts::parse_driver_version(k),
        facts::parse_driver_version(u),
    );
    let differ = matches!((a, b), (Some(a), Some(b)) if a.iter().zip(&b).any(|(x, y)| x != y));
    if !differ
        || findings
            .iter()
            .any(|f| f.code == Code::DriverLibraryMismatch)
    {
        return;
    }
    findings.push(Finding {
        code: Code::DriverLibraryMismatch,
        offset: 0,
        evidence: vec![k_line.clone(), u_line.clone()],
        facts: vec![Fact::Note(
            "The log shows the loaded kernel module and the installed user-space driver packages at different versions: the driver was upgraded (or partly upgraded) without reloading the module.",
        )],
        confidence: 0.85,
    });
}

/// Decides the code of facts that need the whole log or the context.
fn resolve(hit: &Hit, view: &View) -> (Code, f32) {
    if let Some(r) = super::build_oom::resolve(hit, view) {
        return r;
    }
    if let Some(r) = super::optional_gpu::resolve(hit, view) {
        return r;
    }
    match &hit.fact {
        Fact::PtxVersion { jit, nvcc_tmp, .. } | Fact::PtxTarget { jit, nvcc_tmp, .. } => {
            if *jit {
                (Code::PtxTooNewForDriver, 0.95)
            } else if view.scan.jit_context && !*nvcc_tmp {
                (Code::PtxTooNewForDriver, 0.85)
            } else if *nvcc_tmp {
                (Code::ToolkitIncomplete, 0.9)
            } else {
                (Code::PtxasTooOld, 0.8)
            }
        }
        Fact::Arch { name, .. } => resolve_arch(name, view.nvcc_version()).0,
        // A kernel file named for an arch (`..._sm80.cu`) failing to compile
        // means "built for a lower target" only when the log shows one.
        Fact::Feature { feature, needs, .. } if feature.starts_with("the kernels of ") => {
            let needs: u32 = needs.trim_start_matches("sm_").parse().unwrap_or(0);
            let lower = view.scan.lowest_cmd_arch.is_some_and(|a| a < needs);
            (hit.code, if lower { 0.8 } else { 0.4 })
        }
        // candle compiles its bf16 kernels only for sm_80 and newer: a missing
        // symbol in a bf16 / candle log is that kernel on an older GPU.
        Fact::Cuda { err, .. } if err.code() == Code::KernelNotFound && view.scan.bf16_context => {
            (Code::Bf16KernelUnavailable, hit.confidence)
        }
        // The runtime API finds no symbol when the binary has no code for
        // this GPU (its module never loaded); the driver API's lookup by
        // name is a name problem.
        Fact::Cuda { err, .. }
            if err.code() == Code::KernelNotFound && runtime_api_symbol(&hit.evidence) =>
        {
            (Code::NoKernelImageForDevice, 0.45)
        }
        // `unspecified launch failure` alone cannot tell a kernel fault from
        // a driver that lost its state; a resume or an Xid in the log can.
        Fact::Cuda { err, .. } if err.num == 719 => match view.scan.driver_fault {
            Some(_) => (Code::DriverStateLost, 0.7),
            None => (Code::IllegalAddress, 0.4),
        },
        Fact::Cuda { err, .. }
            if matches!(err.num, 999 | 46) && view.scan.driver_fault.is_some() =>
        {
            (Code::DriverStateLost, 0.65)
        }
        // An unknown error while loading PTX: usually PTX newer than the driver.
        Fact::Cuda { err, .. } if err.code() == Code::CudaUnknownError && view.scan.jit_context => {
            (Code::PtxTooNewForDriver, 0.45)
        }
        _ if hit.code == Code::CudaUnknownError && view.scan.jit_context => {
            (Code::PtxTooNewForDriver, 0.45)
        }
        _ => (hit.code, hit.confidence),
    }
}

/// A `named symbol not found` reported through the runtime API (a
/// `cudaError` name, a CUDA_CHECK at a .cu file) rather than a driver-API
/// lookup by name (`CUDA_ERROR_NOT_FOUND`, cuModuleGetFunction).
fn runtime_api_symbol(line: &str) -> bool {
    let driver = [
        "CUDA_ERROR_NOT_FOUND",
        "DriverError",
        "cuModuleGetFunction",
        "cuModuleGetGlobal",
        "get_func",
        "module_get_function",
        "load_function",
    ]
    .iter()
    .any(|k| line.contains(k));
    let runtime = [
        "cudaErrorSymbolNotFound",
        ".cu:",
        ".cu(",
        ".cuh:",
        ".cuh(",
        "file ",
        "cudaGetLastError",
        "cudaPeekAtLastError",
        "getLastCudaError",
        "cudaLaunch",
    ]
    .iter()
    .any(|k| line.contains(k));
    runtime && !driver
}

/// What is known about an architecture nvcc rejected.
#[derive(Debug, Clone, Copy)]
enum ArchVerdict {
    /// No release targets it (typo, or newer than the tables).
    Unknown,
    /// This nvcc predates it.
    TooNew { first: CudaVersion },
    /// This nvcc dropped it.
    Dropped { last: CudaVersion },
    /// The tables say this nvcc supports it (the nvcc that ran is not the one detected?).
    Contradiction,
    /// Without the nvcc version: it was dropped at some point, or is too new.
    Either {
        first: CudaVersion,
        last: Option<CudaVersion>,
    },
}

/// The last CUDA release that targeted Fermi (sm_20/sm_21): CUDA 9.0 removed it
/// (CUDA 9.0 release notes, "Fermi architecture support has been removed").
const FERMI_LAST: CudaVersion = (8, 0);

fn parse_arch_name(name: &str) -> Option<Arch> {
    // nvcc's own spelling only: sm_/compute_/lto_ + digits + optional a/f.
    let name = name.trim();
    let bare = ["sm_", "compute_", "lto_"]
        .iter()
        .find_map(|p| name.strip_prefix(p))?;
    let digits = bare.trim_end_matches(['a', 'f']);
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || bare.len() > digits.len() + 1
    {
        return None;
    }
    Arch::parse(bare).ok()
}

fn resolve_arch(name: &str, nvcc: Option<CudaVersion>) -> ((Code, f32), ArchVerdict) {
    // `-arch=native` is valid from nvcc 11.6: an nvcc that rejects the value
    // predates it. (`compute_native`, from an old CMake, is a bad name.)
    if name.trim() == "native" {
        let first = facts::NVCC_ARCH_NATIVE_FIRST;
        return match nvcc {
            Some(v) if v >= first => ((Code::ArchTooNewForNvcc, 0.5), ArchVerdict::Contradiction),
            _ => (
                (Code::ArchTooNewForNvcc, 0.9),
                ArchVerdict::TooNew { first },
            ),
        };
    }
    let Some(arch) = parse_arch_name(name) else {
        return ((Code::ArchInvalid, 0.85), ArchVerdict::Unknown);
    };
    let Some((first, last)) = facts::arch_variant_first_last(arch) else {
        // Fermi (sm_2x) and older predate the tables: removed in CUDA 9.0.
        if arch.cc.major < 3 && arch.variant == Variant::Plain {
            return (
                (Code::ArchDroppedByNvcc, 0.85),
                ArchVerdict::Dropped { last: FERMI_LAST },
            );
        }
        return ((Code::ArchTooNewForNvcc, 0.6), ArchVerdict::Unknown);
    };
    match nvcc {
        Some(v) if v < first => (
            (Code::ArchTooNewForNvcc, 0.95),
            ArchVerdict::TooNew { first },
        ),
        Some(v) if last.is_some_and(|l| v > l) => (
            (Code::ArchDroppedByNvcc, 0.95),
            ArchVerdict::Dropped {
                last: last.unwrap_or(v),
            },
        ),
        Some(_) => {
            let code = if last.is_some() {
                Code::ArchDroppedByNvcc
            } else {
                Code::ArchTooNewForNvcc
            };
            ((code, 0.5), ArchVerdict::Contradiction)
        }
        None if last.is_some() => (
            (Code::ArchDroppedByNvcc, 0.75),
            ArchVerdict::Either { first, last },
        ),
        None => (
            (Code::ArchTooNewForNvcc, 0.8),
            ArchVerdict::Either { first, last },
        ),
    }
}

fn arch_list_hint() -> &'static str {
    "CUDA_ARCHS, [package.metadata.cuda] arch, or Build::arch"
}

fn base(f: &Finding) -> Diagnosis {
    let doc = f.code.doc();
    Diagnosis {
        code: f.code,
        title: doc.map_or_else(|| f.code.to_string(), |d| d.title.to_string()),
        evidence: f.evidence.clone(),
        cause: String::new(),
        fix: Vec::new(),
        layer: doc.map_or(Layer::Run, |d| d.layer),
        confidence: f.confidence,
        alternatives: Vec::new(),
    }
}

/// How a code's cause and fixes are written.
pub(super) enum Explainer {
    /// Reads the facts and what was detected on the machine.
    Custom(fn(&Finding, &View, &mut Diagnosis)),
    /// The code's default text (`defaults.rs`), after its facts' notes.
    Default,
}

/// Every code's explainer. The match names every code, so a new code does
/// not compile until it has one, or `Default` and a text in defaults.rs (a
/// test checks that text exists).
pub(super) fn explainer(code: Code) -> Explainer {
    use Explainer::{Custom, Default};
    match code {
        Code::ArchTooNewForNvcc | Code::ArchDroppedByNvcc | Code::ArchInvalid => {
            Custom(arch_rejected_by_compiler)
        }
        Code::ArchFeatureNeedsHigherTarget => Custom(feature),
        Code::ArchNotDetected => Custom(arch_not_detected),
        Code::ToolkitIncomplete => Custom(toolkit_incomplete),
        Code::PtxasTooOld => Custom(ptxas_too_old),
        Code::HostCompilerUnsupported => Custom(host_unsupported),
        Code::HostCompilerNotFound => Custom(|f, _, d| host_not_found(f, d)),
        Code::NvccNotFound => Custom(nvcc_not_found),
        Code::CudaHomeInvalid => Custom(cuda_home_invalid),
        Code::NoKernelImageForDevice => Custom(no_kernel_image),
        Code::PtxTooNewForDriver => Custom(ptx_too_new),
        Code::PtxJitFailed => Custom(ptx_jit_failed),
        Code::DriverTooOld => Custom(driver_too_old),
        Code::DriverNotLoaded => Custom(driver_not_loaded),
        Code::DriverLibraryMismatch => Custom(driver_mismatch),
        Code::LibcudaNotFound | Code::NvmlNotFound | Code::PtxJitCompilerMissing => {
            Custom(lib_missing)
        }
        Code::LibcudaStub => Custom(libcuda_stub),
        Code::NoDeviceVisible => Custom(|_, v, d| no_device(v, d)),
        Code::CudaUnknownError => Custom(|_, v, d| unknown_error(v, d)),
        Code::CudaRuntimeLibNotFound => Custom(runtime_lib),
        Code::FrameworkLibNotFound => Custom(|f, _, d| framework_lib(f, d)),
        Code::DeviceFunctionUnresolved => Custom(|f, _, d| unresolved(f, d)),
        Code::NvccUnknownOption => Custom(|f, _, d| unknown_option(f, d)),
        Code::ToolkitUnsupportedByCrate => Custom(toolkit_unsupported_by_crate),
        Code::SccacheNvccFailed => Custom(|_, _, d| sccache_nvcc(d)),
        Code::ComputeCapQueryUnsupported => Custom(|_, v, d| compute_cap_query(v, d)),
        Code::Bf16KernelUnavailable => Custom(|_, v, d| bf16_kernel(v, d)),
        Code::LibraryOpUnsupported => Custom(super::library_status::explain),
        Code::CudaDependencyFetchFailed => Custom(super::fetch::explain),
        Code::DriverStateLost => Custom(super::driver_state::explain),
        Code::CudaObjectNotPic => Custom(super::link_pic::explain),
        Code::KernelExceedsTargetLimit => Custom(super::kernel_limits::explain),
        Code::MathConstantsUndefined => Custom(super::math_constants::explain),
        Code::CxxStandardTooOld => Custom(super::cxx_standard::explain),
        Code::CudaCompiledAsCpp => Custom(super::cuda_as_cpp::explain),
        Code::IllegalAddress => Custom(super::driver_state::explain_launch_failure),
        Code::CompilerKilled => Custom(|_, v, d| super::build_oom::explain(v, d)),
        Code::CudaBackendNotBuilt
        | Code::ContainerDeviceMissing
        | Code::ContainerRuntimeMissing
        | Code::TorchCudaVersionMismatch
        | Code::NouveauHoldsGpu
        | Code::GpuUnsupportedByDriver
        | Code::MsbuildCudaIntegrationMissing
        | Code::OutOfMemory
        | Code::LaunchOutOfResources
        | Code::CudaInitFailed
        | Code::KernelNotFound
        | Code::InvalidKernelImage
        | Code::ForwardCompatUnsupported
        | Code::SystemNotReady
        | Code::InvalidDeviceOrdinal
        | Code::DeviceUnavailable => Default,
        // cuda-build's own errors carry their message and help (Fact::Own).
        Code::Other(_) => Default,
    }
}

fn arch_rejected_by_compiler(f: &Finding, view: &View, d: &mut Diagnosis) {
    arch_rejected(f, view, d);
    // NVRTC at run time, not nvcc at build time.
    if f.evidence.iter().any(|e| e.contains("NVRTC_ERROR")) {
        d.cause = match d.cause.strip_prefix("nvcc") {
            Some(rest) => format!("The libnvrtc the program loaded{rest}"),
            None => d
                .cause
                .replacen("nvcc", "the libnvrtc the program loaded", 1),
        };
        d.alternatives.push("NVRTC names no option in this error; the architecture is the usual one, with an older CUDA's libnvrtc found first on the library path (`ldd`, LD_LIBRARY_PATH, PATH on Windows).".into());
    }
}

fn build(f: &Finding, view: &View) -> Diagnosis {
    let mut d = base(f);
    if let Explainer::Custom(explain) = explainer(f.code) {
        explain(f, view, &mut d);
    }
    compute_cap_fixes(f, view, &mut d);
    super::optional_gpu::annotate(f, view, &mut d);
    // Facts every code shares: notes, CUDA error names, cuda-build's own errors.
    let mut by_number_only = true;
    let mut any_cuda = false;
    for fact in &f.facts {
        match fact {
            Fact::Note(n) if d.cause.is_empty() => d.cause = n.to_string(),
            Fact::Text(t) if d.cause.is_empty() && f.code == Code::CudaHomeInvalid => {
                d.cause = t.clone()
            }
            Fact::Note(n) => push_unique(&mut d.alternatives, n.to_string()),
            Fact::Cuda { err, by_number } => {
                any_cuda = true;
                by_number_only &= *by_number;
                if d.cause.is_empty() {
                    d.cause = format!(
                        "A CUDA call failed with {}: {}.",
                        err.label(),
                        lower_first(&d.title)
                    );
                }
            }
            Fact::Own { message, help } => {
                if d.cause.is_empty() {
                    d.cause = message.clone();
                }
                // cuda-build's own help knows the exact setting: it goes first.
                let mut fixes = help.clone();
                for f in d.fix.drain(..) {
                    push_unique(&mut fixes, f);
                }
                d.fix = fixes;
            }
            _ => {}
        }
    }
    let other_evidence = f
        .facts
        .iter()
        .any(|x| !matches!(x, Fact::Cuda { .. } | Fact::None | Fact::Note(_)));
    if any_cuda && by_number_only && !other_evidence {
        d.confidence = d.confidence.min(0.5);
        push_unique(
            &mut d.alternatives,
            "Only the error number was seen: check that it is a CUresult/cudaError_t value and not another library's code.".into(),
        );
    }
    let defaults = default_text(d.code);
    if d.cause.is_empty() {
        d.cause = defaults
            .as_ref()
            .map_or_else(|| format!("{}.", d.title), |t| t.cause.to_string());
    }
    if d.fix.is_empty() {
        d.fix.extend(
            defaults
                .iter()
                .flat_map(|t| t.fixes.iter())
                .map(|f| f.to_string()),
        );
    }
    if d.fix.is_empty() {
        d.fix.push(format!(
            "see `cargo cuda explain {}` for how to confirm and fix this",
            d.code
        ));
    }
    if let Some(crate_name) = view
        .scan
        .build_script
        .as_ref()
        .filter(|_| f.code != Code::ToolkitUnsupportedByCrate)
    {
        if matches!(d.layer, Layer::Toolkit | Layer::Compile | Layer::Link) {
            d.cause = format!("{} (in the build script of `{crate_name}`)", d.cause);
        }
    }
    d.confidence = d.confidence.clamp(0.0, 1.0);
    d
}

/// One nvcc rejecting `native` (as `-arch=native`, or pasted into
/// `compute_native`) and a real architecture (`compute_86`) is an nvcc too
/// old for the real one: that is the finding to lead with.
fn rank_native_with_real_arch(findings: &mut [Finding]) {
    let is_native = |x: &Fact| matches!(x, Fact::Arch { name, .. } if name.contains("native"));
    let Some(new) = findings.iter().position(|f| {
        f.code == Code::ArchTooNewForNvcc
            && f.facts
                .iter()
                .any(|x| matches!(x, Fact::Arch { .. }) && !is_native(x))
    }) else {
        return;
    };
    let mut native_seen = findings[new].facts.iter().any(is_native);
    for f in findings.iter_mut().filter(|f| f.code == Code::ArchInvalid) {
        let native_only = f.facts.iter().any(is_native)
            && f.facts
                .iter()
                .all(|x| is_native(x) || !matches!(x, Fact::Arch { .. }));
        if native_only {
            f.confidence *= 0.6;
            native_seen = true;
        }
    }
    if !native_seen {
        return;
    }
    let f = &mut findings[new];
    // The real architecture first: it names the release needed.
    f.facts.sort_by_key(|x| is_native(x));
    f.confidence = f.confidence.max(0.9);
    if !f.facts.iter().any(|x| matches!(x, Fact::Note(_))) {
        f.facts.push(Fact::Note("The same nvcc rejected `native` and a real architecture: it is too old for the real one, and `-arch=native` needs nvcc 11.6 or newer."));
    }
}

/// Whether the log shows a build script (bindgen_cuda, candle-kernels,
/// cudaforge, TEI) choosing the GPU architecture itself.
fn arch_from_build_script(f: &Finding, view: &View) -> bool {
    view.scan.build_script.is_some()
        || f.facts.iter().any(|x| {
            matches!(x, Fact::Note(n) if n.contains("build script") || n.contains("nvidia-smi") || n.contains("candle"))
        })
}

/// The cuda-build way around another tool's arch detection: CUDA_COMPUTE_CAP,
/// which `cargo cuda build` sets from the driver API (no nvidia-smi needed).
fn compute_cap_fixes(f: &Finding, view: &View, d: &mut Diagnosis) {
    let relevant = match f.code {
        Code::ArchNotDetected | Code::ComputeCapQueryUnsupported => true,
        Code::ArchTooNewForNvcc | Code::NoKernelImageForDevice => {
            f.facts.iter().any(|x| matches!(x, Fact::GpuArch(_))) && arch_from_build_script(f, view)
        }
        _ => false,
    };
    if !relevant || !arch_from_build_script(f, view) && f.code != Code::ComputeCapQueryUnsupported {
        return;
    }
    let cc = view
        .gpus()
        .iter()
        .map(|g| g.compute_capability.number())
        .max()
        .map_or_else(|| "86".to_string(), |n| n.to_string());
    let what = view.scan.build_script.as_deref().map_or_else(
        || "the build script".to_string(),
        |c| format!("the build script of `{c}`"),
    );
    // Another tool's build script chose the arch: its way round goes first.
    let ours = [
        format!("set the GPU architecture for {what}: CUDA_COMPUTE_CAP={cc} (candle, bindgen_cuda, cudaforge and text-embeddings-inference read it instead of asking nvidia-smi)"),
        "or build with `cargo cuda build`, which reads the GPUs through the driver API and sets CUDA_COMPUTE_CAP and CUDA_ARCHS for every build script".to_string(),
    ];
    d.fix.retain(|f| !ours.contains(f));
    d.fix.splice(0..0, ours);
}

fn toolkit_unsupported_by_crate(f: &Finding, view: &View, d: &mut Diagnosis) {
    let version = f.facts.iter().find_map(|x| match x {
        Fact::Text(v) => Some(v.as_str()),
        _ => None,
    });
    // cudarc writes 12.6 or 12060.
    let shown = version.map(|v| match v.parse::<u32>() {
        Ok(n) if n >= 1000 => format!("{}.{}", n / 1000, (n % 1000) / 10),
        _ => v.to_string(),
    });
    let krate = view
        .scan
        .build_script
        .as_deref()
        .and_then(|c| c.split_whitespace().next())
        .unwrap_or("cudarc");
    let note = f.facts.iter().find_map(|x| match x {
        Fact::Note(n) => Some(*n),
        _ => None,
    });
    d.cause = match note {
        // What the rule read (a missing function, a symbol) says more.
        Some(n) => n.to_string(),
        None => format!(
            "The build script of `{krate}` has no bindings for CUDA {}: the installed toolkit is newer (or older) than that crate release supports. The toolkit is fine; the crate is too old for it.",
            shown.as_deref().unwrap_or("(this version)")
        ),
    };
    d.fix.push(format!("update the crate: `cargo update -p {krate}` (or a newer candle / mistral.rs release that depends on a newer {krate})"));
    d.fix.extend(view.use_toolkit_fixes(|_| true, ""));
    d.fix.push("or build against a toolkit the crate supports: point CUDA_HOME at it, or `cargo cuda build`, which picks a detected toolkit and exports CUDA_HOME for build scripts".into());
    if krate == "cudarc" {
        d.fix.push("cudarc also reads CUDARC_CUDA_VERSION (e.g. 12040) to use the bindings of a release it supports".into());
    }
}

fn bf16_kernel(view: &View, d: &mut Diagnosis) {
    d.cause = "A bf16 kernel is missing from the loaded module: candle (and crates built like it) compiles bf16 kernels only for sm_80 and newer, and this GPU, or the architecture the kernels were built for, is older.".into();
    let old: Vec<String> = view
        .gpus()
        .iter()
        .filter(|g| g.compute_capability.major < 8)
        .map(|g| format!("{} (sm_{})", g.name, g.compute_capability.number()))
        .collect();
    if !old.is_empty() {
        d.cause.push_str(&format!(" Here: {}.", old.join(", ")));
    }
    d.fix.push(
        "run the model in f16 or f32 (e.g. `--dtype f16`) on GPUs below compute capability 8.0"
            .into(),
    );
    d.fix.push("with several GPUs, build for the newest one: CUDA_COMPUTE_CAP=89 (or `cargo cuda build`, which sets it from the driver) and run on it (CUDA_VISIBLE_DEVICES)".into());
    d.alternatives.push("kernel-not-found: a kernel that is not bf16 and missing for another reason (name mangling, wrong module).".into());
}

fn sccache_nvcc(d: &mut Diagnosis) {
    d.fix.push("unset CUDA_BUILD_WRAPPER (or stop the build script from running nvcc through sccache) so nvcc runs directly; nvcc itself is installed".into());
    d.fix.push(
        "or upgrade sccache: releases with fixed nvcc support keep nvcc's intermediate files"
            .into(),
    );
    d.alternatives.push("If the same build fails without sccache, read that log instead: it shows nvcc's own error.".into());
}

fn compute_cap_query(view: &View, d: &mut Diagnosis) {
    d.cause = "nvidia-smi here is too old to report the compute capability (`--query-gpu=compute_cap` needs the 510 driver branch or newer), so the build script that asked it could not choose a GPU architecture.".into();
    if let Some(v) = view.driver_version() {
        push_unique(&mut d.alternatives, format!("The driver here is {v}."));
    }
    d.fix.push(
        "or upgrade the driver to the 510 branch or newer, whose nvidia-smi reports compute_cap"
            .into(),
    );
}

fn cuda_home_invalid(f: &Finding, view: &View, d: &mut Diagnosis) {
    let list = f.facts.iter().find_map(|x| match x {
        Fact::Text(t) => Some(t.as_str()),
        _ => None,
    });
    if let Some(t) = list {
        d.cause = t.to_string();
        d.fix.push("set CUDA_HOME to exactly one toolkit root (e.g. CUDA_HOME=/usr/local/cuda-12.1); put the other paths on PATH or LD_LIBRARY_PATH instead".into());
    }
    nvcc_not_found(f, view, d);
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_lowercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

fn arch_rejected(f: &Finding, view: &View, d: &mut Diagnosis) {
    let nvcc = view.nvcc_version();
    let names: Vec<&str> = f
        .facts
        .iter()
        .filter_map(|x| match x {
            Fact::Arch { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    let Some(name) = names.first().copied() else {
        return;
    };
    let (_, verdict) = resolve_arch(name, nvcc);
    let this = nvcc.map_or_else(|| "this nvcc".to_string(), |v| format!("nvcc {}", vs(v)));
    let arch = parse_arch_name(name);
    let cc = arch.map(|a| a.cc);
    let sm = arch.map_or_else(|| name.to_string(), |a| a.sm_name());
    if name.trim() == "native" && matches!(verdict, ArchVerdict::TooNew { .. }) {
        let first = vs(facts::NVCC_ARCH_NATIVE_FIRST);
        let this = nvcc.map_or_else(|| "This nvcc".to_string(), |v| format!("nvcc {}", vs(v)));
        d.cause = format!("{this} predates `-arch=native` (nvcc {first} and newer build for the GPUs of the machine that compiles): it takes `native` for an architecture name it does not know.");
        d.fix.push(format!(
            "name the architecture explicitly instead of native (CUDA_ARCHS=86, or `80;86;90`) via {}; `nvidia-smi --query-gpu=compute_cap --format=csv` shows the GPU's",
            arch_list_hint()
        ));
        d.fix.extend(view.use_toolkit_fixes(
            |v| v >= facts::NVCC_ARCH_NATIVE_FIRST,
            " and accepts -arch=native",
        ));
        d.fix.push(format!("or install CUDA {first} or newer"));
        return;
    }
    if d.code == Code::ArchInvalid && name.contains("native") {
        d.cause = format!("`{name}` is not an architecture: `native` is only valid as the whole value (`-arch=native`, nvcc {} and newer), and a build script pasted it into `compute_<arch>` / `sm_<arch>`.", vs(facts::NVCC_ARCH_NATIVE_FIRST));
        d.fix.push(format!(
            "name the architecture explicitly (CUDA_ARCHS=86, or `80;86;90`) via {}",
            arch_list_hint()
        ));
        d.fix.push(format!(
            "or pass `-arch=native` as it is (nvcc {} or newer) instead of building `{name}` from it",
            vs(facts::NVCC_ARCH_NATIVE_FIRST)
        ));
        return;
    }
    if d.code == Code::ArchInvalid {
        d.cause = format!("`{name}` is not an architecture name: nvcc wants sm_XY, compute_XY or lto_XY (e.g. sm_86, compute_90a).");
        d.fix.push(format!(
            "fix the value that produced `{name}`: CUDA_ARCHS=80;86+PTX (cuda-build turns it into proper -gencode flags), or `-gencode arch=compute_80,code=[sm_80,compute_80]` for nvcc directly"
        ));
        d.alternatives.push("An empty or unexpanded variable in a build script gives the same message (`compute_`, `sm_$ARCH`).".into());
        return;
    }
    match verdict {
        ArchVerdict::Unknown => {
            d.cause = format!("{this} does not know `{name}`, and no CUDA release in cuda-build's tables targets it.");
            d.fix.push(format!(
                "check `{name}` for a typo (e.g. sm_90, sm_90a, sm_120) in {}",
                arch_list_hint()
            ));
            d.alternatives.push(format!(
                "If `{name}` is a brand-new architecture, a newer toolkit than cuda-build knows may support it: `nvcc --list-gpu-arch` on that toolkit tells."
            ));
        }
        ArchVerdict::TooNew { first } => {
            d.cause = format!(
                "{this} predates `{name}`: {sm} needs CUDA {} or newer.",
                vs(first)
            );
            d.fix
                .extend(view.use_toolkit_fixes(|v| v >= first, &format!(" and targets {sm}")));
            d.fix.push(format!(
                "install CUDA {} or newer, or remove {sm} from the arch list ({})",
                vs(first),
                arch_list_hint()
            ));
        }
        ArchVerdict::Dropped { last } => {
            d.cause = format!(
                "{this} no longer targets `{name}`: CUDA {} was the last release that did.",
                vs(last)
            );
            d.fix.extend(view.use_toolkit_fixes(
                |v| {
                    v <= last
                        && cc
                            .is_some_and(|c| facts::arch_first_last(c).is_some_and(|(f, _)| f <= v))
                },
                &format!(" and still targets {sm}"),
            ));
            let lowest = nvcc.and_then(|v| facts::archs_for_toolkit(v).first().copied());
            let keep = lowest.map_or(String::new(), |l| {
                format!(
                    " (CUDA {} targets sm_{} and newer)",
                    vs(nvcc.unwrap_or_default()),
                    l.number()
                )
            });
            d.fix.push(format!(
                "remove {sm} from the arch list ({}) if no GPU you run on needs it{keep}",
                arch_list_hint()
            ));
            d.fix.push(format!(
                "to keep {sm}, build with CUDA {} or older",
                vs(last)
            ));
        }
        ArchVerdict::Contradiction => {
            d.cause = format!(
                "nvcc rejected `{name}`, although CUDA {} should target it by cuda-build's tables.",
                nvcc.map(vs).unwrap_or_default()
            );
            d.alternatives.push("The nvcc that ran may not be the toolkit cuda-build detected (check NVCC, CUDA_HOME and PATH with `cargo cuda toolkits`).".into());
            d.fix.push(format!("run `nvcc --version` and `nvcc --list-gpu-arch` with the nvcc the build used, and remove {sm} from the arch list if it is not listed"));
        }
        ArchVerdict::Either { first, last } => match last {
            Some(last) => {
                d.cause = format!(
                        "nvcc rejected `{name}`. {sm} was targeted by CUDA {} to {}; a newer nvcc has dropped it.",
                        vs(first),
                        vs(last)
                    );
                d.alternatives.push(format!(
                        "arch-too-new-for-nvcc, if this nvcc is older than CUDA {}: `nvcc --version` tells them apart.",
                        vs(first)
                    ));
                d.fix.push(format!(
                    "remove {sm} from the arch list ({}), or build with CUDA {} to {}",
                    arch_list_hint(),
                    vs(first),
                    vs(last)
                ));
            }
            None => {
                d.cause = format!(
                    "nvcc rejected `{name}`: {sm} needs CUDA {} or newer.",
                    vs(first)
                );
                d.alternatives.push(
                    "A typo in the arch list gives the same message: check the spelling.".into(),
                );
                d.fix
                    .extend(view.use_toolkit_fixes(|v| v >= first, &format!(" and targets {sm}")));
                d.fix.push(format!(
                    "use CUDA {} or newer, or remove {sm} from the arch list ({})",
                    vs(first),
                    arch_list_hint()
                ));
            }
        },
    }
    for other in names.iter().skip(1) {
        push_unique(
            &mut d.alternatives,
            format!("nvcc also rejected `{other}`."),
        );
    }
    gpu_arch_hint(view, nvcc, d);
}

/// "Your GPU is sm_86: CUDA_ARCHS=86 builds exactly for it."
fn gpu_arch_hint(view: &View, nvcc: Option<CudaVersion>, d: &mut Diagnosis) {
    let gpus = view.gpus();
    if gpus.is_empty() {
        return;
    }
    let mut ccs: Vec<ComputeCapability> = gpus.iter().map(|g| g.compute_capability).collect();
    ccs.sort();
    ccs.dedup();
    let list = ccs
        .iter()
        .map(|c| c.number().to_string())
        .collect::<Vec<_>>()
        .join(";");
    let ok = nvcc.is_none_or(|v| ccs.iter().all(|c| facts::toolkit_supports(v, c.arch())));
    if ok {
        d.fix.push(format!(
            "the GPUs here are {}: CUDA_ARCHS={list} builds for exactly them",
            view.gpu_list()
        ));
    } else {
        d.fix.push(format!(
            "the GPUs here are {}, and CUDA {} cannot target all of them: choose a toolkit that can",
            view.gpu_list(),
            nvcc.map(vs).unwrap_or_default()
        ));
    }
}

fn feature(f: &Finding, view: &View, d: &mut Diagnosis) {
    let mut features = Vec::new();
    let mut needs: Option<(Arch, bool)> = None;
    let mut lacking_target: Option<Arch> = None;
    for fact in &f.facts {
        if let Fact::Feature {
            feature,
            needs: n,
            arch_specific,
            target,
        } = fact
        {
            push_unique(&mut features, format!("`{feature}`"));
            if let Some(t) = target.as_deref().and_then(parse_arch_name) {
                lacking_target = Some(t);
            }
            if let Some(a) = parse_arch_name(n) {
                if needs.is_none_or(|(b, _)| a.cc > b.cc) {
                    needs = Some((a, *arch_specific));
                }
            }
        }
    }
    let what = features.join(", ");
    let Some((arch, specific)) = needs else {
        d.cause = format!("ptxas refused {what}: the target architecture lacks it.");
        return;
    };
    let num = arch.to_string();
    if let Some(t) = lacking_target.filter(|t| t.cc != arch.cc) {
        // e.g. wgmma on sm_120: no target of that GPU has it.
        d.cause = format!(
            "{what} exist only on {}; {} has no such instruction, on any target.",
            arch.sm_name(),
            t.sm_name()
        );
        d.fix.push(format!(
            "do not build this kernel for {} (Build::file_arch for this file), or give {} its own code path with `#if __CUDA_ARCH__` guards",
            t.sm_name(),
            t.sm_name()
        ));
        d.fix.push(format!(
            "build the {what} code only for {} (CUDA_ARCHS={num} for that kernel)",
            arch.sm_name()
        ));
        return;
    }
    if specific || arch.variant != Variant::Plain {
        let plain = arch.with_variant(Variant::Plain).sm_name();
        d.cause = format!(
            "{what} {} only on the arch-specific target {}; plain {plain} (and compute_{} PTX) lack {}.",
            if features.len() > 1 { "exist" } else { "exists" },
            arch.sm_name(),
            arch.cc.number(),
            if features.len() > 1 { "them" } else { "it" }
        );
        d.fix.push(format!(
            "build this kernel for {}: CUDA_ARCHS={num} (or Build::file_arch for this file; nvcc: -gencode arch={},code={})",
            arch.sm_name(),
            arch.compute_name(),
            arch.sm_name()
        ));
        d.fix.push(format!(
            "{} code runs only on compute capability {}.{} GPUs; to build other targets too, guard the code with `#if defined(__CUDA_ARCH_FEAT_SM{}_ALL)`",
            arch.sm_name(),
            arch.cc.major,
            arch.cc.minor,
            arch.cc.number()
        ));
        d.alternatives.push(format!(
            "Some nvcc versions emit compute_{0} PTX for -arch={1}; if {1} was already requested, use -gencode arch={2},code={1} explicitly.",
            arch.cc.number(),
            arch.sm_name(),
            arch.compute_name()
        ));
    } else {
        d.cause = format!(
            "{what} {} {} or newer, but the code was compiled for a lower target (often a fallback entry of the arch list).",
            if features.len() > 1 { "need" } else { "needs" },
            arch.sm_name()
        );
        // The lower target is often the GPU itself (a crate's bf16 kernels
        // on a T4): raising the target then builds code it cannot run.
        d.fix.push(format!(
            "if the lower target is a GPU you run on, that GPU lacks {what}: guard the code with `#if __CUDA_ARCH__ >= {}0` and give it a fallback, or use a crate (or a release, or feature set) that supports that GPU",
            arch.cc.number()
        ));
        d.fix.push(format!(
            "if every GPU you run on is {} or newer, raise the lowest architecture to {} (CUDA_ARCHS={num})",
            arch.sm_name(),
            arch.sm_name()
        ));
    }
    if let Some(v) = view.nvcc_version() {
        if !facts::toolkit_supports(v, arch) {
            if let Some((first, _)) = facts::arch_variant_first_last(arch) {
                d.fix.push(format!(
                    "CUDA {} cannot target {}: it needs CUDA {} or newer",
                    vs(v),
                    arch.sm_name(),
                    vs(first)
                ));
            }
        }
    }
    let gpus = view.gpus();
    let lacking: Vec<String> = gpus
        .iter()
        .filter(|g| {
            g.compute_capability < arch.cc
                || (arch.variant != Variant::Plain && g.compute_capability != arch.cc)
        })
        .map(|g| format!("{} (sm_{})", g.name, g.compute_capability.number()))
        .collect();
    if !lacking.is_empty() {
        d.fix.push(format!(
            "{} cannot run {}: keep a fallback code path for it",
            lacking.join(", "),
            arch.sm_name()
        ));
    } else if !gpus.is_empty() {
        gpu_arch_hint(view, view.nvcc_version(), d);
    }
}

fn arch_not_detected(_f: &Finding, view: &View, d: &mut Diagnosis) {
    d.fix.push(format!(
        "name the architecture explicitly: CUDA_ARCHS=86 (or `80;86;90`, `all-major`) via {}",
        arch_list_hint()
    ));
    if !view.gpus().is_empty() {
        gpu_arch_hint(view, view.nvcc_version(), d);
    } else {
        d.fix.push("`nvidia-smi --query-gpu=name,compute_cap --format=csv` on the machine that will run the program gives its architecture".into());
    }
}

fn ptx_pair(f: &Finding) -> Option<((u32, u32), (u32, u32))> {
    f.facts.iter().find_map(|x| match x {
        Fact::PtxVersion { ptx, current, .. } => Some((*ptx, *current)),
        _ => None,
    })
}

fn cuda_of_isa(isa: (u32, u32)) -> String {
    match facts::cuda_for_ptx_isa(isa) {
        Some(v) if facts::ptx_isa_for_cuda(v) == Some(isa) => format!("CUDA {}", vs(v)),
        Some(v) => format!("CUDA {} or newer", vs(v)),
        None => "a CUDA release newer than cuda-build knows".into(),
    }
}

fn toolkit_incomplete(f: &Finding, view: &View, d: &mut Diagnosis) {
    // The release to pin to: nvcc's own, else the one its ptxas belongs to.
    let release = view.nvcc_version().or_else(|| {
        ptx_pair(f).map(|(_, current)| current).and_then(|c| {
            facts::cuda_for_ptx_isa(c).filter(|v| facts::ptx_isa_for_cuda(*v) == Some(c))
        })
    });
    let rel = release.map_or_else(|| "<release>".to_string(), |v| format!("{}-{}", v.0, v.1));
    let wheel = view
        .toolkit()
        .is_some_and(|t| matches!(t.found_via, crate::toolkit::FoundVia::PythonWheel(_)));
    let pip_rel = release.map_or_else(|| "<release>".to_string(), |v| format!("{}.{}.*", v.0, v.1));
    for fact in &f.facts {
        match fact {
            Fact::Header(h) => {
                let cccl = ["nv/", "cuda/", "cub/", "thrust/"]
                    .iter()
                    .any(|p| h.starts_with(p));
                if cccl {
                    push_unique(&mut d.fix, format!(
                        "`{h}` is part of CCCL: install it for the same release (apt: cuda-cccl-{rel}; pip: nvidia-cuda-cccl=={pip_rel}; conda: cuda-cccl)"
                    ));
                    if d.cause.is_empty() {
                        d.cause = format!("The toolkit's headers lack `{h}`: its CCCL component (nv/, cuda/std, cub, thrust) is not installed.");
                    }
                } else {
                    let root = view.toolkit().map(|t| t.root.join("include").join(h));
                    if d.cause.is_empty() {
                        d.cause = format!("`{h}` was not found: nvcc is running without the toolkit's include directory, or that component is not installed.");
                    }
                    if let Some(root) = root {
                        push_unique(&mut d.fix, format!("check that {} exists; if it does, nvcc is not using its own nvcc.profile (a copied or wrapped nvcc)", root.display()));
                    }
                    push_unique(&mut d.fix, format!("install the headers of the same release (apt: cuda-cudart-dev-{rel} or the library's -dev package; pip: nvidia-cuda-runtime=={pip_rel})"));
                    push_unique(
                        &mut d.alternatives,
                        format!(
                            "If `{h}` is your own header, add its directory with Build::include."
                        ),
                    );
                }
            }
            Fact::PtxVersion { ptx, current, .. } => {
                d.cause = format!(
                    "Inside one nvcc run, its front end (cicc/nvvm, {}) wrote PTX ISA {} but its ptxas ({}) reads at most ISA {}: the toolkit mixes components of two releases.",
                    cuda_of_isa(*ptx),
                    vs(*ptx),
                    cuda_of_isa(*current),
                    vs(*current)
                );
                if wheel || view.toolkit().is_none() {
                    push_unique(&mut d.fix, format!(
                        "with the pip wheels, pin every component to one release: pip install 'nvidia-cuda-nvcc=={pip_rel}' 'nvidia-nvvm=={pip_rel}' 'nvidia-cuda-crt=={pip_rel}'"
                    ));
                }
                push_unique(&mut d.fix, "reinstall the toolkit so nvcc, nvvm (cicc) and ptxas come from the same release; `cargo cuda doctor` lists each component's version".into());
                d.alternatives.push("If nvcc was given a .ptx file you wrote or generated elsewhere, this is ptxas-too-old instead.".into());
            }
            Fact::Note(n) if n.contains("libdevice") => {
                // Usually another nvcc ran (a distribution's /usr/bin/nvcc,
                // a copied binary), not a toolkit with a missing file.
                push_unique(&mut d.fix, "run the toolkit's own nvcc: put its bin/ first on PATH (`export PATH=/usr/local/cuda/bin:$PATH`) or set CUDA_HOME; `which -a nvcc` lists the others, and a distribution's /usr/bin/nvcc or a copied nvcc lacks the paths its nvcc.profile sets".into());
                if f.evidence.iter().any(|e| e.contains("/usr/bin/nvcc")) {
                    push_unique(&mut d.alternatives, "The log names /usr/bin/nvcc: that is the distribution's package (nvidia-cuda-toolkit) or a link, not NVIDIA's toolkit under /usr/local/cuda.".into());
                }
            }
            Fact::PtxTarget { target, .. } => {
                push_unique(&mut d.fix, "reinstall the toolkit so nvcc, nvvm (cicc) and ptxas come from the same release".into());
                if d.cause.is_empty() {
                    d.cause = format!("nvcc's ptxas does not know `.target {target}` that its own front end emitted: the toolkit mixes releases.");
                }
            }
            _ => {}
        }
    }
    if let Some(t) = view.toolkit() {
        let related = [
            "toolkit-incomplete",
            "toolkit-version-mismatch",
            "nvcc-symlink",
        ];
        for p in t.problems.iter().filter(|p| related.contains(&p.code)) {
            push_unique(
                &mut d.fix,
                match &p.fix {
                    Some(fix) => format!("{} ({fix})", p.message),
                    None => p.message.clone(),
                },
            );
        }
    }
    if d.fix.is_empty() {
        let root = view.toolkit().map_or_else(
            || "the toolkit".to_string(),
            |t| t.root.display().to_string(),
        );
        d.fix.push(format!(
            "`cargo cuda doctor` checks {root}'s components; reinstall the missing one for the same release (apt: cuda-nvcc-{rel}; pip: nvidia-nvvm=={pip_rel} for cicc)"
        ));
        d.fix.push("run the toolkit's own bin/nvcc (not a copy or a symlink elsewhere), so it finds its nvcc.profile".into());
    }
}

fn ptxas_too_old(f: &Finding, view: &View, d: &mut Diagnosis) {
    if let Some((ptx, current)) = ptx_pair(f) {
        d.cause = format!(
            "This ptxas reads PTX ISA up to {} ({}), and the PTX is ISA {} (written by {}).",
            vs(current),
            cuda_of_isa(current),
            vs(ptx),
            cuda_of_isa(ptx)
        );
        if let Some(need) = facts::cuda_for_ptx_isa(ptx) {
            d.fix
                .extend(view.use_toolkit_fixes(|v| v >= need, " and its ptxas reads it"));
            d.fix.push(format!("assemble with the ptxas of CUDA {} or newer, or regenerate the PTX with the older toolkit", vs(need)));
        }
    } else if let Some(t) = f.facts.iter().find_map(|x| match x {
        Fact::PtxTarget { target, .. } => Some(target),
        _ => None,
    }) {
        d.cause = format!("This ptxas does not know `.target {t}`: it is older than the compiler that wrote the PTX.");
        match parse_arch_name(t).and_then(facts::arch_variant_first_last) {
            Some((first, _)) => {
                d.cause = format!(
                    "This ptxas does not know `.target {t}`, which needs CUDA {} or newer: it is older than the compiler that wrote the PTX.",
                    vs(first)
                );
                d.fix.extend(
                    view.use_toolkit_fixes(|v| v >= first, &format!(" and its ptxas knows {t}")),
                );
                d.fix.push(format!(
                    "assemble with the ptxas of CUDA {} or newer",
                    vs(first)
                ));
            }
            None => d
                .fix
                .push("use the ptxas of the release that wrote the PTX, or newer".into()),
        }
    }
    if let Some(n) = f.facts.iter().find_map(|x| match x {
        Fact::GpuArch(n) => Some(*n),
        _ => None,
    }) {
        d.fix.push(format!("give XLA a ptxas that knows sm_{n}: `pip install -U nvidia-cuda-nvcc-cu12` (JAX's cuda12 extra), or put the bin directory of a CUDA toolkit that targets sm_{n} first on PATH"));
    }
    d.alternatives.push("If this came from a program loading PTX at run time, it is ptx-too-new-for-driver (the driver's JIT is the old ptxas).".into());
}

fn host_unsupported(f: &Finding, view: &View, d: &mut Diagnosis) {
    let Some((kind, limit)) = f.facts.iter().find_map(|x| match x {
        Fact::Host { kind, limit } => Some((*kind, *limit)),
        _ => None,
    }) else {
        return;
    };
    let nvcc = view.nvcc_version();
    let limits = nvcc.and_then(facts::host_compiler_limits);
    let cuda = nvcc.map_or_else(|| "nvcc".to_string(), |v| format!("CUDA {}", vs(v)));
    match kind {
        HostKind::Gcc | HostKind::Clang => {
            let (name, bin) = if kind == HostKind::Gcc {
                ("gcc", "g++")
            } else {
                ("clang", "clang++")
            };
            let max = limit.or_else(|| {
                limits.map(|l| {
                    if kind == HostKind::Gcc {
                        l.gcc_max
                    } else {
                        l.clang_max
                    }
                })
            });
            match max {
                Some(max) => {
                    d.cause = format!("{cuda}'s host_config.h accepts {name} up to {max}, and the host compiler nvcc ran is newer.");
                    d.fix.push(format!("install {bin}-{max} (or older) and point nvcc at it: NVCC_CCBIN={bin}-{max} (or Build::ccbin(\"{bin}-{max}\"))"));
                    let better = view.use_toolkit_fixes(
                        |v| {
                            facts::host_compiler_limits(v).is_some_and(|l| {
                                (if kind == HostKind::Gcc {
                                    l.gcc_max
                                } else {
                                    l.clang_max
                                }) > max
                            })
                        },
                        &format!(" and accepts a newer {name}"),
                    );
                    d.fix.extend(better);
                }
                None => {
                    d.cause = format!("{cuda}'s host_config.h does not accept this {name} version.")
                }
            }
        }
        HostKind::Msvc => {
            d.cause = format!(
                "{cuda}'s host_config.h does not accept this Visual Studio (cl.exe) version."
            );
            if let Some((lo, hi)) = limits.and_then(|l| l.msvc) {
                d.fix.push(format!("use a Visual Studio whose _MSC_VER is {lo}..={hi}, from its Developer Command Prompt"));
            } else {
                d.fix.push("use the Visual Studio version the message names, from its Developer Command Prompt".into());
            }
        }
        HostKind::Icx => {
            d.cause = "nvcc does not accept Intel ICX as host compiler.".into();
            d.fix
                .push("use cl.exe (Windows) or g++ (Linux) as host compiler: NVCC_CCBIN".into());
        }
        HostKind::AppleClang => {
            // A macOS CUDA's own list of Xcode versions: this machine's
            // limits do not apply, nor does a newer toolkit.
            d.cause = "nvcc refused Xcode's Apple clang: CUDA on macOS ended with CUDA 10.2, and each release accepted only the Xcode versions it was tested with, so a newer Xcode's clang is refused.".into();
            d.fix.push("install the Xcode (or Command Line Tools) version the CUDA release notes name, and select it with `sudo xcode-select -s /Applications/Xcode_<version>.app`".into());
            d.fix
                .push("or build on Linux or Windows, where current CUDA releases run".into());
            return;
        }
        HostKind::Target { unix } => {
            // The compiler's target, not its version: no newer CUDA and no
            // -allow-unsupported-compiler changes it.
            d.cause = "nvcc checked what its host compiler builds for, and it is not a platform this CUDA release supports: on Windows, a 32-bit cl.exe (an x86 developer prompt; CUDA 12 and newer build 64-bit only) or MinGW/MSYS g++ (nvcc on Windows takes only MSVC); on Linux or macOS, a host compiler this CUDA release does not know (an old clang, a cross compiler).".into();
            let windows = "on Windows, build from the \"x64 Native Tools Command Prompt for VS\" (vcvars64.bat), with MSVC's 64-bit cl.exe first on PATH; not from MSYS2/MinGW or an x86 prompt".to_string();
            let linux = "on Linux, point nvcc at the distribution's g++: NVCC_CCBIN=g++ (or Build::ccbin(\"g++\"), -ccbin g++)".to_string();
            d.fix.extend(if unix {
                [linux, windows]
            } else {
                [windows, linux]
            });
            d.alternatives.push("`nvcc -v` shows the host compiler nvcc ran; `cl` alone prints its target (`for x86` or `for x64`).".into());
            return;
        }
    }
    d.fix.push("or use a newer CUDA toolkit; as a last resort NVCC_APPEND_FLAGS=-allow-unsupported-compiler skips the check (unsupported: it can miscompile)".into());
    d.alternatives.push("If NVCC_CCBIN or -ccbin is set, nvcc used that compiler, not the one on PATH: check which one ran with `nvcc -v`.".into());
}

fn host_not_found(f: &Finding, d: &mut Diagnosis) {
    let prog = f.facts.iter().find_map(|x| match x {
        Fact::MissingProgram(p) => Some(p.clone()),
        _ => None,
    });
    let windows = f
        .evidence
        .iter()
        .any(|e| e.contains("cl.exe") || e.contains("Visual Studio"));
    match prog {
        Some(p) => {
            d.cause = format!("nvcc could not run its host compiler `{p}`: it does not exist.");
            d.fix.push(format!("install `{p}`, or point NVCC_CCBIN (or Build::ccbin / -ccbin) at a compiler that exists (`which g++`)"));
        }
        None if windows => {
            d.cause = "nvcc could not find the MSVC host compiler (cl.exe).".into();
            d.fix.push("run the build from a \"x64 Native Tools Command Prompt for VS\", or set NVCC_CCBIN to cl.exe's full path".into());
        }
        None if f.facts.iter().any(|x| matches!(x, Fact::Note(_))) => {
            // The rule's note says which part is missing (gcc without cc1plus).
            d.fix.push("install the C++ compiler: `apt install g++` (Debian, Ubuntu), `dnf install gcc-c++` (Fedora, RHEL), or set NVCC_CCBIN to a g++ that is complete".into());
        }
        None => {
            d.cause = "nvcc could not run its host compiler: none is installed, or -ccbin / NVCC_CCBIN names one that does not exist.".into();
            d.fix.push(
                "install g++ (apt install g++) or set NVCC_CCBIN to an existing host compiler"
                    .into(),
            );
            d.alternatives.push("The compiler may exist but fail to start: `nvcc -v` shows the exact command nvcc ran.".into());
        }
    }
}

fn nvcc_not_found(_f: &Finding, view: &View, d: &mut Diagnosis) {
    let found = view.use_toolkit_fixes(|_| true, "");
    if found.is_empty() {
        if let Some(t) = view.toolkit() {
            d.fix.push(format!(
                "cuda-build detects a toolkit at {}: set CUDA_HOME={} for the tool that failed",
                t.root.display(),
                t.root.display()
            ));
        }
    }
    d.fix.extend(found);
    d.fix.push("set CUDA_HOME (or NVCC) to the toolkit root, or install one (NVIDIA's cuda-toolkit package, conda's cuda-nvcc, or pip's nvidia-cuda-nvcc)".into());
    d.fix
        .push("`cargo cuda toolkits` lists every toolkit cuda-build can see".into());
}

fn gpu_sms(f: &Finding, view: &View) -> Vec<ComputeCapability> {
    let mut ccs: Vec<ComputeCapability> =
        view.gpus().iter().map(|g| g.compute_capability).collect();
    for fact in &f.facts {
        if let Fact::GpuArch(n) = fact {
            ccs.push(ComputeCapability::new(n / 10, n % 10));
        }
    }
    ccs.sort();
    ccs.dedup();
    ccs
}

fn no_kernel_image(f: &Finding, view: &View, d: &mut Diagnosis) {
    let ccs = gpu_sms(f, view);
    let only_98 = f
        .facts
        .iter()
        .all(|x| matches!(x, Fact::Cuda { err, .. } if err.num == 98));
    let only_500 = f
        .facts
        .iter()
        .all(|x| matches!(x, Fact::Cuda { err, .. } if err.num == 500));
    if only_500 {
        d.confidence = d.confidence.min(0.45);
        d.alternatives.push("kernel-not-found: through the runtime API `named symbol not found` usually means the binary has no code for this GPU (its module never loaded); check `nvidia-smi --query-gpu=compute_cap --format=csv` against the build's architectures (`cuobjdump --list-elf <binary>`). If this GPU's architecture is there, a symbol really is missing.".into());
    }
    if only_98 {
        d.confidence = d.confidence.min(0.6);
        d.alternatives.push("\"invalid device function\" (98) also means the kernel is not in the module or was called through the wrong symbol (kernel-not-found).".into());
    }
    if ccs.is_empty() {
        d.cause = "The binary holds no SASS for the GPU's architecture and no PTX the driver can JIT for it.".into();
        d.fix.push("add the GPU's architecture to the arch list (CUDA_ARCHS=<cc>, from `nvidia-smi --query-gpu=compute_cap --format=csv`), or embed PTX for the newest arch (e.g. `90+PTX`)".into());
    } else {
        let list = ccs
            .iter()
            .map(|c| format!("sm_{}", c.number()))
            .collect::<Vec<_>>()
            .join(", ");
        let nums = ccs
            .iter()
            .map(|c| c.number().to_string())
            .collect::<Vec<_>>()
            .join(";");
        d.cause = format!("The binary holds no SASS for {list} (the GPU here) and no PTX the driver can JIT for it.");
        d.fix.push(format!(
            "build for the GPU: CUDA_ARCHS={nums} (or add `{}+PTX` so newer GPUs can JIT)",
            ccs.last().map_or(0, |c| c.number())
        ));
        if let Some(v) = view.nvcc_version() {
            for cc in &ccs {
                match facts::arch_first_last(*cc) {
                    Some((first, _)) if v < first => {
                        d.fix.push(format!(
                            "CUDA {} cannot target sm_{}: it needs CUDA {} or newer",
                            vs(v),
                            cc.number(),
                            vs(first)
                        ));
                        d.fix.extend(view.use_toolkit_fixes(
                            |t| t >= first,
                            &format!(" and targets sm_{}", cc.number()),
                        ));
                    }
                    Some((_, Some(last))) if v > last => {
                        d.fix.push(format!("CUDA {} no longer targets sm_{} (last: CUDA {}): build with an older toolkit", vs(v), cc.number(), vs(last)));
                        d.fix.extend(view.use_toolkit_fixes(
                            |t| t <= last,
                            &format!(" and targets sm_{}", cc.number()),
                        ));
                    }
                    _ => {}
                }
            }
        }
    }
    d.alternatives.push("A stale binary: an old build or cache without this architecture (rebuild with `cargo clean -p <crate>`).".into());
    d.alternatives.push("A fatbin whose PTX was stripped, or PTX JIT disabled by CUDA_DISABLE_PTX_JIT=1: `cuobjdump --list-elf --list-ptx <binary>` shows what it holds.".into());
    d.alternatives.push(
        "PTX present but too new for the driver gives ptx-too-new-for-driver (222) instead.".into(),
    );
}

fn ptx_too_new(f: &Finding, view: &View, d: &mut Diagnosis) {
    let (ptx, current) = match ptx_pair(f) {
        Some((p, c)) => (Some(p), Some(c)),
        None => (
            view.nvcc_version().and_then(facts::ptx_isa_for_cuda),
            view.driver_cuda().and_then(facts::ptx_isa_for_cuda),
        ),
    };
    let branch = view.driver_branch();
    let driver = branch
        .as_ref()
        .map_or_else(|| "The driver".to_string(), |b| format!("Your driver {b}"));
    let sms: Vec<String> = view
        .gpus()
        .iter()
        .map(|g| format!("sm_{}", g.compute_capability.number()))
        .collect();
    let sass = if sms.is_empty() {
        "build SASS for the GPU's exact architecture (CUDA_ARCHS=<cc>) so no JIT is needed"
            .to_string()
    } else {
        let mut s = sms.clone();
        s.dedup();
        format!(
            "build SASS for {} (CUDA_ARCHS={}) so no JIT is needed",
            s.join(", "),
            s.iter()
                .map(|x| x.trim_start_matches("sm_"))
                .collect::<Vec<_>>()
                .join(";")
        )
    };
    match (ptx, current) {
        (Some(p), Some(c)) => {
            d.cause = format!(
                "{driver} JITs PTX up to ISA {}, and this PTX is {} ({}).",
                vs(c),
                vs(p),
                cuda_of_isa(p)
            );
            let need = facts::cuda_for_ptx_isa(p).and_then(facts::min_driver_branch_for_cuda);
            let upgrade = need.map_or_else(
                || "upgrade the driver".to_string(),
                |b| format!("upgrade the driver to >= {b}"),
            );
            d.fix.push(format!("{sass}, or {upgrade}"));
            if let Some(dc) = view.driver_cuda().or_else(|| facts::cuda_for_ptx_isa(c)) {
                d.fix.extend(
                    view.use_toolkit_fixes(
                        |v| v <= dc,
                        " and its PTX is old enough for this driver",
                    ),
                );
                d.fix.push(format!(
                    "or build with a toolkit no newer than CUDA {} (what the driver supports)",
                    vs(dc)
                ));
            }
        }
        (None, Some(c)) => {
            let dc = view.driver_cuda().or_else(|| facts::cuda_for_ptx_isa(c));
            let upto = dc.map_or_else(String::new, |v| format!(" (CUDA {})", vs(v)));
            d.cause = format!(
                "{driver} JITs PTX up to ISA {}{upto}; this PTX comes from a newer toolkit.",
                vs(c)
            );
            let newest = dc.map_or_else(
                || "the driver's CUDA version".to_string(),
                |v| format!("CUDA {}", vs(v)),
            );
            d.fix.push(format!(
                "{sass}, or build with a toolkit no newer than {newest}, or upgrade the driver"
            ));
            if let Some(dc) = dc {
                d.fix.extend(
                    view.use_toolkit_fixes(
                        |v| v <= dc,
                        " and its PTX is old enough for this driver",
                    ),
                );
            }
        }
        _ => {
            d.cause = format!("{driver}'s PTX JIT is older than the toolkit that wrote the PTX.");
            d.fix.push(format!("{sass}, or upgrade the driver, or build with a toolkit no newer than the driver's CUDA version (`nvidia-smi`)"));
        }
    }
    // A hint (the error named no cause): say so, and how to decide.
    if f.confidence < 0.5 {
        if let Some(n) = f.facts.iter().find_map(|x| match x {
            Fact::Note(n) => Some(*n),
            _ => None,
        }) {
            d.cause = n.to_string();
        }
        d.fix.insert(0, "decide first: `nvidia-smi` shows the driver's CUDA version; the PTX's `.version` line (or the toolkit that built it) must not be newer".into());
    }
}

fn ptx_jit_failed(f: &Finding, view: &View, d: &mut Diagnosis) {
    if f.facts
        .iter()
        .any(|x| matches!(x, Fact::Cuda { err, .. } if err.num == 223))
    {
        d.cause = "PTX JIT compilation is disabled (CUDA_DISABLE_PTX_JIT=1?), and the binary has no SASS for this GPU.".into();
        d.fix
            .push("unset CUDA_DISABLE_PTX_JIT, or build SASS for the GPU (CUDA_ARCHS=<cc>)".into());
        return;
    }
    d.confidence = d.confidence.min(0.7);
    d.cause = "The driver failed to JIT-compile the module's PTX for this GPU.".into();
    if let (Some(t), Some(dc)) = (view.nvcc_version(), view.driver_cuda()) {
        if t > dc {
            d.alternatives.insert(0, format!(
                "Likely ptx-too-new-for-driver: the PTX comes from CUDA {} but the driver supports CUDA {}; older drivers report 218 for that.",
                vs(t),
                vs(dc)
            ));
        }
    } else {
        d.alternatives.push("ptx-too-new-for-driver, if the PTX comes from a newer toolkit than the driver (compare `nvidia-smi`'s CUDA version with the toolkit).".into());
    }
    d.alternatives.push("PTX that uses instructions the GPU lacks (check the JIT error log, CU_JIT_ERROR_LOG_BUFFER).".into());
    d.fix.push("build SASS for the GPU (CUDA_ARCHS=<cc>) so no JIT is needed, and read the JIT error log for the exact line".into());
}

fn driver_too_old(f: &Finding, view: &View, d: &mut Diagnosis) {
    if f.facts
        .iter()
        .any(|x| matches!(x, Fact::Cuda { err, .. } if err.num == 36))
    {
        d.cause = "The program calls a CUDA API newer than the installed driver provides.".into();
    }
    let toolkit = view.nvcc_version();
    let dc = view.driver_cuda();
    let dv = view.driver_version();
    let need = toolkit.and_then(|v| {
        facts::min_driver_for_toolkit(&semver::Version::new(v.0 as u64, v.1 as u64, 0))
    });
    let floor = toolkit.and_then(|v| facts::mvc_floor(v.0));
    match (dv, dc, toolkit) {
        (Some(dv), Some(dc), Some(t)) => {
            d.cause = format!(
                "Your driver {dv} supports CUDA up to {}, and the program's CUDA runtime is {}.",
                vs(dc),
                vs(t)
            );
            let min = floor
                .or(need)
                .map_or_else(String::new, |m| format!(" to >= {m}"));
            d.fix.push(format!("upgrade the driver{min}"));
            d.fix.extend(
                view.use_toolkit_fixes(|v| v.0 < t.0 || v <= dc, " and the driver supports it"),
            );
            d.fix.push(format!(
                "or build with a toolkit the driver supports (CUDA {} or older)",
                vs(dc)
            ));
        }
        (dv, Some(dc), None) => {
            let who = dv.map_or_else(|| "The driver".to_string(), |v| format!("Your driver {v}"));
            d.cause = format!(
                "{who} supports CUDA up to {}, and the program's CUDA runtime (libcudart) is newer.",
                vs(dc)
            );
            d.fix.push(format!(
                "upgrade the driver to one that supports the program's CUDA, or build with CUDA {} or older",
                vs(dc)
            ));
            d.fix
                .extend(view.use_toolkit_fixes(|v| v <= dc, " and the driver supports it"));
        }
        _ => {
            if d.cause.is_empty() {
                d.cause = "The installed driver is older than the program's CUDA runtime (libcudart) requires.".into();
            }
            d.fix.push("upgrade the driver (`nvidia-smi` shows the highest CUDA it supports), or build with a toolkit of a major the driver supports".into());
        }
    }
    d.alternatives.push("In a container, the image's CUDA may be newer than the host driver: the host driver is what counts.".into());
}

fn driver_not_loaded(_f: &Finding, view: &View, d: &mut Diagnosis) {
    if view.wsl() {
        d.fix.push("on WSL the driver is the Windows one: update the NVIDIA driver in Windows and do not install a Linux driver inside WSL".into());
        return;
    }
    if let Some(p) = view.platform() {
        let missing: Vec<String> = p
            .device_nodes
            .iter()
            .filter(|n| !n.exists)
            .map(|n| n.path.display().to_string())
            .collect();
        if !missing.is_empty() {
            push_unique(
                &mut d.evidence,
                format!("(probe) missing device nodes: {}", missing.join(", ")),
            );
        }
        if p.kernel_module_version.is_none() {
            push_unique(
                &mut d.evidence,
                "(probe) /proc/driver/nvidia/version is absent: no nvidia kernel module is loaded"
                    .into(),
            );
        }
    }
    if view.in_container().is_some() {
        d.fix.push("inside a container the host's driver is used: check `nvidia-smi` on the host, and start the container with `--gpus all`".into());
    }
    d.fix.push("check `lsmod | grep nvidia` and `dmesg | grep -i nvidia`; rebuild the module for the running kernel (`sudo dkms autoinstall`), handle Secure Boot (enroll the MOK key), then reboot".into());
    d.alternatives.push("libcuda-not-found gives similar symptoms in programs: if `nvidia-smi` works, the kernel driver is fine.".into());
}

fn driver_mismatch(f: &Finding, view: &View, d: &mut Diagnosis) {
    // 803 alone (no NVML "Driver/library version mismatch") has other causes too.
    let only_803 = f
        .facts
        .iter()
        .all(|x| matches!(x, Fact::Cuda { err, .. } if err.num == 803));
    if only_803 {
        d.confidence = d.confidence.min(0.65);
        d.alternatives.push("A forward-compatibility libcuda (cuda-compat, /usr/local/cuda/compat) on LD_LIBRARY_PATH that does not fit the kernel driver: remove it from the path.".into());
        d.alternatives.push("A driver too old for the program, or a container image that ships its own libcuda: `nvidia-smi` on the host and `ldd <program> | grep libcuda` tell them apart.".into());
    }
    if let Some(p) = view.platform() {
        if let (Some(k), Some(n)) = (&p.kernel_module_version, &p.nvml_version) {
            d.cause = format!("The loaded kernel module is {k} but the driver's libraries are {n}: the driver was upgraded without a reboot.");
        }
    }
    if d.cause.is_empty() {
        d.cause = "The driver's user-space libraries and the loaded kernel module are different versions, typically after a driver upgrade without a reboot.".into();
    }
    d.fix.push("reboot (or unload and reload the modules: `sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia`)".into());
    if view.in_container().is_some() {
        d.fix.push("in a container, do not install driver packages in the image: the host's libraries are mounted in".into());
    }
}

/// The library a finding names, and whether the linker (not the loader) missed it.
fn library_fact(f: &Finding) -> (Option<String>, bool) {
    let name = f.facts.iter().find_map(|x| match x {
        Fact::Library { name, .. } => Some(name.clone()),
        _ => None,
    });
    let link_time = f.facts.iter().any(|x| {
        matches!(
            x,
            Fact::Library {
                link_time: true,
                ..
            }
        )
    });
    (name, link_time)
}

/// The host linker found no definition of a CUDA API function: the library
/// that has it is not on the link line at all (no `rustc-link-lib`), which a
/// search path does not fix.
fn unlinked_symbol(f: &Finding, d: &mut Diagnosis) -> bool {
    let (Some(sym), (Some(lib), true)) = (f.symbol(), library_fact(f)) else {
        return false;
    };
    let name = lib.trim_start_matches("lib");
    d.cause = format!("The program calls `{sym}`, and nothing on the link line defines it: `{lib}` ({name}.lib on Windows) is not linked.");
    d.fix.push(format!("link it: `cargo:rustc-link-lib={name}` in the build script (or -l{name}), with its directory on the search path: `cargo:rustc-link-search=native=<toolkit>/lib64` (`<toolkit>\\lib\\x64` on Windows)"));
    if name == "cuda" {
        d.fix.push("on a machine without a driver, link against the toolkit's stub (`lib64/stubs`), or load libcuda at run time instead (cudarc's dynamic loading)".into());
    }
    d.alternatives.push("If the library is linked, the link order is wrong: with static libraries, the library must come after the objects that use it.".into());
    true
}

fn lib_missing(f: &Finding, view: &View, d: &mut Diagnosis) {
    if unlinked_symbol(f, d) {
        return;
    }
    let (lib, link_time) = library_fact(f);
    if link_time && d.code == Code::LibcudaNotFound {
        d.cause = "The linker could not find libcuda.so: it comes with the driver, and this machine has none (or not on the linker's path).".into();
        let stubs = view.toolkit().map_or_else(
            || "<toolkit>/lib64/stubs".to_string(),
            |t| {
                t.lib_dirs
                    .first()
                    .unwrap_or(&t.root.join("lib64"))
                    .join("stubs")
                    .display()
                    .to_string()
            },
        );
        d.fix.push(format!("to link without a driver, add the toolkit's stub directory at link time only: cargo:rustc-link-search=native={stubs}"));
        d.fix.push(
            "or load libcuda at run time instead of linking it (cudarc's dynamic-loading feature)"
                .into(),
        );
        d.alternatives.push("Never put the stubs directory on LD_LIBRARY_PATH at run time: that gives libcuda-stub.".into());
        return;
    }
    if let Some(lib) = &lib {
        d.cause = format!(
            "`{lib}` (part of the NVIDIA driver, not the toolkit) is not on the loader's path."
        );
    }
    if let Some(c) = view.in_container() {
        d.fix.push(format!("inside a {c} container: start it with `--gpus all` (NVIDIA container toolkit) and NVIDIA_DRIVER_CAPABILITIES=compute,utility"));
    }
    if view.wsl() {
        d.fix.push(
            "on WSL the driver's libraries are in /usr/lib/wsl/lib: add it to LD_LIBRARY_PATH"
                .into(),
        );
    }
    if let Some(p) = view.platform().and_then(|p| p.libcuda.as_ref()) {
        d.alternatives.push(format!(
            "cuda-build's probe did load {}: the failing program runs with another LD_LIBRARY_PATH, user or container",
            p.display()
        ));
        d.confidence = d.confidence.min(0.7);
    }
    d.fix.push("install the NVIDIA driver (`nvidia-smi` must work); `ldconfig -p | grep -E 'libcuda|nvidia-ml'` shows what the loader sees".into());
    if d.code == Code::PtxJitCompilerMissing {
        d.fix
            .push("or build SASS for the GPU so no PTX JIT is needed".into());
    }
}

fn libcuda_stub(f: &Finding, view: &View, d: &mut Diagnosis) {
    let (seen, _) = library_fact(f);
    if let Some(p) = view.platform().and_then(|p| p.libcuda.as_ref()) {
        d.cause = format!(
            "The program loaded {}, the toolkit's link-time stub, instead of the driver's libcuda.",
            p.display()
        );
        if let Some(dir) = p.parent() {
            d.fix.push(format!(
                "remove {} from LD_LIBRARY_PATH (and from any rpath)",
                dir.display()
            ));
        }
    } else {
        d.cause = match seen {
            Some(seen) => format!("The program loaded `{seen}`, the toolkit's link-time stub, instead of the driver's libcuda."),
            None => "The program loaded the toolkit's link-time stub libcuda (lib64/stubs) instead of the driver's.".into(),
        };
        d.fix
            .push("remove the toolkit's `stubs` directory from LD_LIBRARY_PATH and rpath".into());
    }
    d.fix
        .push("install the real driver if the machine has none (`nvidia-smi` must work)".into());
}

fn no_device(view: &View, d: &mut Diagnosis) {
    d.cause = default_text(Code::NoDeviceVisible)
        .map(|t| t.cause)
        .unwrap_or_default()
        .into();
    if let Some(p) = view.platform() {
        let bad: Vec<String> = p
            .device_nodes
            .iter()
            .filter(|n| n.exists && !(n.readable && n.writable))
            .map(|n| n.path.display().to_string())
            .collect();
        if !bad.is_empty() {
            d.fix.push(format!(
                "this user cannot open {}: add it to the group that owns them (often `video`)",
                bad.join(", ")
            ));
        }
    }
    if !view.gpus().is_empty() {
        d.alternatives.push(format!(
            "cuda-build's probe sees {}: the failing program runs with CUDA_VISIBLE_DEVICES set, or in another container",
            view.gpu_list()
        ));
    }
    if view.in_container().is_some() {
        d.fix
            .push("start the container with `--gpus all` (NVIDIA container toolkit)".into());
    }
    d.fix.push(
        "check CUDA_VISIBLE_DEVICES (unset it or list valid indices) and `nvidia-smi -L`".into(),
    );
}

fn unknown_error(view: &View, d: &mut Diagnosis) {
    d.confidence = d.confidence.min(0.35);
    d.cause = "CUDA reported an unknown error (999), which has several driver-level causes.".into();
    let uvm_missing = view.platform().is_some_and(|p| {
        p.device_nodes
            .iter()
            .any(|n| n.path.ends_with("nvidia-uvm") && !n.exists)
    });
    if uvm_missing {
        d.confidence = 0.6;
        d.cause = "CUDA reported an unknown error, and /dev/nvidia-uvm is missing: the nvidia_uvm module is not loaded.".into();
        d.fix
            .push("sudo modprobe nvidia_uvm (or `nvidia-modprobe -u -c=0`)".into());
    }
    d.alternatives.push("nvidia_uvm not loaded or stuck after suspend/resume: `sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm`.".into());
    d.alternatives.push("driver-library-mismatch after a driver upgrade: `nvidia-smi` says \"Driver/library version mismatch\".".into());
    d.alternatives
        .push("A container without /dev/nvidia-uvm: start it with `--gpus all`.".into());
    d.fix.push("check `ls -l /dev/nvidia*`, `dmesg | grep -i nvrm` and `nvidia-smi`; a reboot clears most driver states".into());
}

fn runtime_lib(f: &Finding, view: &View, d: &mut Diagnosis) {
    if unlinked_symbol(f, d) {
        return;
    }
    let (lib, link_time) = library_fact(f);
    let lib = lib.unwrap_or_else(|| "a CUDA library".into());
    let dirs = view
        .toolkit()
        .map(|t| {
            t.lib_dirs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(":")
        })
        .filter(|s| !s.is_empty());
    if link_time {
        d.cause = format!("The linker could not find `{lib}`: the toolkit's library directory is not on the link search path.");
        let dir = dirs.clone().unwrap_or_else(|| "<toolkit>/lib64".into());
        d.fix.push(format!("put {dir} on the linker's search path: `cargo:rustc-link-search=native={dir}` in a build script, `-L{dir}` or LIBRARY_PATH for make, CMake and setup.py builds"));
        if lib.contains("culibos") {
            d.alternatives.push("culibos ships only with Linux toolkits (libculibos.a): a build script must not ask for it on Windows.".into());
        }
    } else {
        d.cause = format!("The program needs `{lib}` from a CUDA toolkit, and the loader cannot find it on this machine.");
        d.fix.push(match &dirs {
            Some(dirs) => format!("add {dirs} to LD_LIBRARY_PATH (or the rpath), or link the library statically"),
            None => "install the matching CUDA runtime libraries and add their directory to LD_LIBRARY_PATH, or link statically".into(),
        });
        if let Some(major) = lib.split(".so.").nth(1).and_then(|v| v.split('.').next()) {
            d.alternatives.push(format!("The version in the name (`{lib}`) must match: it needs CUDA {major}'s library, which a toolkit of another major version does not provide."));
        }
    }
}

/// A framework's CUDA library: the fix is the framework's directory, not
/// the toolkit's.
fn framework_lib(f: &Finding, d: &mut Diagnosis) {
    let (lib, link_time) = library_fact(f);
    let note = f.facts.iter().find_map(|x| match x {
        Fact::Note(n) => Some(*n),
        _ => None,
    });
    let lib = lib.unwrap_or_else(|| "a framework's CUDA library".into());
    let name = lib.to_ascii_lowercase();
    let (framework, dir_fix) = if ["torch", "c10", "caffe2"].iter().any(|p| name.contains(p)) {
        (
            "libtorch",
            "add libtorch's lib directory to the loader's path: `export LD_LIBRARY_PATH=$LIBTORCH/lib:$LD_LIBRARY_PATH` (the `lib` folder, not libtorch's root; with LIBTORCH_USE_PYTORCH=1, torch's own `lib` in site-packages)",
        )
    } else if name.contains("onnxruntime") {
        (
            "ONNX Runtime",
            "let ort copy its provider libraries next to the binary (its `copy-dylibs` feature) and link with the rpath `$ORIGIN` (`-C link-args=-Wl,-rpath,$ORIGIN`), or point ORT_DYLIB_PATH at a full CUDA build of ONNX Runtime with its providers beside it",
        )
    } else if name.contains("bitsandbytes") {
        (
            "bitsandbytes",
            "upgrade bitsandbytes (`pip install -U bitsandbytes`): current releases ship their CUDA library for every supported CUDA version and for Windows; `python -m bitsandbytes` prints what it found and loaded",
        )
    } else if name.contains("ggml") || name.contains("llama") {
        (
            "llama.cpp (ggml)",
            "add the directory the ggml libraries were built into to LD_LIBRARY_PATH, or build them statically",
        )
    } else {
        (
            "the framework",
            "add the framework's library directory to LD_LIBRARY_PATH, or link with an rpath to it",
        )
    };
    if link_time {
        d.cause = format!("The linker could not find `{lib}`, the CUDA part of {framework}: its library directory is not on the link search path.");
        d.fix.push(format!("add cargo:rustc-link-search=native=<{framework}'s lib directory>, or set the variable the crate reads for it (LIBTORCH for tch-rs)"));
    } else {
        d.cause = format!("The program needs `{lib}`, the CUDA part of {framework}, and the loader cannot find it: it ships with {framework}, not with the CUDA toolkit.");
        d.fix.push(dir_fix.to_string());
        d.fix
            .push("`ldd ./program | grep 'not found'` lists every library still missing".into());
    }
    // The rule read a report that names no file (bitsandbytes' setup line):
    // its note says how to find out which.
    if let Some(n) = note.filter(|_| lib.contains('*')) {
        d.cause = n.to_string();
    }
    d.alternatives.push(format!("If {framework}'s directory has no `{lib}` at all, the CPU-only build was installed: that is cuda-backend-not-built."));
}

fn unresolved(f: &Finding, d: &mut Diagnosis) {
    let no_dlink = f
        .facts
        .iter()
        .any(|x| matches!(x, Fact::Note(n) if n.contains("device-link step")));
    if no_dlink {
        d.fix.push("add the device link: `nvcc -dlink -arch=<the same archs> -o dlink.o a.o b.o`, then link dlink.o with the objects and libcudadevrt (-lcudadevrt); or let nvcc do the final link; cuda-build's Build::rdc(true) runs the device link itself".into());
        d.fix.push("CMake: set CUDA_RESOLVE_DEVICE_SYMBOLS ON on the static library (or link it into an executable or shared library that does the device link)".into());
        d.fix.push(
            "or compile without -rdc when no file calls another file's device functions".into(),
        );
        return;
    }
    let sym = f.symbol().unwrap_or("the function");
    let mangled = sym.starts_with("_Z");
    d.fix.push(format!(
        "compile with relocatable device code and a device link (Build::rdc(true); nvcc -rdc=true), with the file that defines `{sym}` in the same build"
    ));
    d.fix.push(format!(
        "or define `{sym}` in a header as `__device__ inline`, so every .cu file has its own copy"
    ));
    if mangled {
        d.fix.push(format!("`cu++filt {sym}` shows its C++ name; an `extern \"C\"` declaration in one file and a C++ definition in another do not match"));
    }
    d.alternatives.push(
        "The function may be declared but never defined anywhere: grep the sources for its body."
            .into(),
    );
}

fn unknown_option(f: &Finding, d: &mut Diagnosis) {
    if let Some(word) = f.text() {
        stray_argument(word, d);
        return;
    }
    let opt = f.symbol().unwrap_or("the option");
    if facts::nvcc_knows_option(opt) {
        d.cause = format!("`{opt}` is an nvcc option in current releases (nvcc 13.0 knows it): the nvcc that ran is older than the release that added it.");
        d.fix.push("use a newer toolkit: `nvcc --version` shows the one that ran, `cargo cuda toolkits` lists the installed ones (select one with CUDA_HOME, or `cargo cuda build --toolkit`)".into());
        d.fix.push(format!("or leave `{opt}` out for this nvcc"));
        d.alternatives.push("The nvcc on PATH may be an older install than the toolkit you meant: check `which -a nvcc`.".into());
        return;
    }
    d.cause = format!("nvcc does not know `{opt}`: it is not an nvcc option.");
    if opt.starts_with("-W") || opt.starts_with("-f") || opt.starts_with("-m") {
        d.fix.push(format!("`{opt}` is a host-compiler flag: pass it as `-Xcompiler={opt}` (Build::flag(\"-Xcompiler={opt}\"))"));
    } else {
        d.fix.push(format!("check `nvcc --help` for the spelling of `{opt}`; host-compiler flags go through -Xcompiler, linker flags through -Xlinker"));
    }
    d.fix.push("check NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS and the flags given to the builder for stray options".into());
}

/// nvcc took a word of its command line for another input file.
fn stray_argument(word: &str, d: &mut Diagnosis) {
    let named = if word.is_empty() {
        String::new()
    } else {
        format!(" (`{word}`)")
    };
    d.cause = format!("nvcc was given a word it can only read as a second input file{named}: a path with a space split in two (`C:\\Program Files\\...`, a home directory with a space), or an option's value given without its option.");
    d.fix.push("pass every argument as one element, never through a shell or a string split at spaces (Build::flag per argument; CMake: quote the path), or move the toolkit, sources and build directory to paths without spaces".into());
    d.fix.push("check NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS, CUDA_HOME and the -I paths for an unquoted space".into());
}

/// Lowers the confidence of codes that are probably consequences of another.
fn cross_check(out: &mut [(usize, Diagnosis)]) {
    let has = |code: Code, out: &[(usize, Diagnosis)]| out.iter().any(|(_, d)| d.code == code);
    let rules: &[(Code, &[Code])] = &[
        (
            Code::DriverLibraryMismatch,
            &[
                Code::NoDeviceVisible,
                Code::CudaInitFailed,
                Code::CudaUnknownError,
                Code::DriverNotLoaded,
                Code::NvmlNotFound,
            ],
        ),
        (
            Code::PtxTooNewForDriver,
            &[Code::PtxJitFailed, Code::NoKernelImageForDevice],
        ),
        (
            Code::LibcudaStub,
            &[
                Code::NoDeviceVisible,
                Code::DriverNotLoaded,
                Code::CudaInitFailed,
            ],
        ),
        (
            Code::LibcudaNotFound,
            &[
                Code::DriverNotLoaded,
                Code::NoDeviceVisible,
                Code::CudaInitFailed,
            ],
        ),
        (
            Code::DriverNotLoaded,
            &[
                Code::NoDeviceVisible,
                Code::CudaInitFailed,
                Code::CudaUnknownError,
            ],
        ),
        (Code::HostCompilerNotFound, &[Code::ToolkitIncomplete]),
        // sccache's nvcc handling fails with messages that look like a
        // missing or killed nvcc.
        (
            Code::SccacheNvccFailed,
            &[
                Code::NvccNotFound,
                Code::CompilerKilled,
                Code::ToolkitIncomplete,
            ],
        ),
        // An nvidia-smi without the compute_cap field is why detection failed.
        (Code::ComputeCapQueryUnsupported, &[Code::ArchNotDetected]),
        // An empty or colon-joined CUDA_HOME is why nvcc was not found.
        (Code::CudaHomeInvalid, &[Code::NvccNotFound]),
        // A too-old toolkit version is the cause; the crate's own
        // messages about it are not.
        (Code::ToolkitUnsupportedByCrate, &[Code::NvccNotFound]),
    ];
    // Warnings earlier in the log that cause a later symptom: with the
    // symptom present, the warning is the diagnosis.
    let causal_warnings: &[(Code, &[Code])] = &[(
        Code::PtxasTooOld,
        &[
            Code::KernelNotFound,
            Code::NoKernelImageForDevice,
            Code::Bf16KernelUnavailable,
            Code::PtxJitFailed,
            Code::IllegalAddress,
        ],
    )];
    for &(cause, effects) in causal_warnings {
        if out.iter().any(|(_, d)| effects.contains(&d.code)) {
            for (_, d) in out.iter_mut().filter(|(_, d)| d.code == cause) {
                d.confidence = d.confidence.max(0.75);
            }
        }
    }
    for &(cause, effects) in rules.iter().chain(causal_warnings) {
        if !has(cause, out) {
            continue;
        }
        for (_, d) in out.iter_mut() {
            if effects.contains(&d.code) {
                d.confidence *= 0.6;
                push_unique(
                    &mut d.alternatives,
                    format!("Probably a consequence of {cause}, also found in this log."),
                );
            }
        }
    }
    // Wrappers ("nvcc failed", "compile failed") step back when the log also
    // shows what made them fail.
    let wrappers = ["nvcc-failed", "compile-failed", "cargo-failed"];
    if out
        .iter()
        .any(|(_, d)| !wrappers.contains(&d.code.as_str()))
    {
        for (_, d) in out
            .iter_mut()
            .filter(|(_, d)| wrappers.contains(&d.code.as_str()))
        {
            d.confidence *= 0.4;
            push_unique(
                &mut d.alternatives,
                "The other diagnoses found in this log say why it failed.".into(),
            );
        }
    }
}
