//! Pass 1: find the lines that matter and pull facts out of them.
//!
//! One linear pass: a single multi-literal regex (the `regex` crate never
//! backtracks) finds candidate lines; only those lines are normalised (ANSI
//! colour codes, CR, indentation) and read by the rules below, which use
//! plain substring searches. Input of any size and content is fine.

use super::cuda_errors::{self, CudaError};
use std::sync::OnceLock;

/// What a matched line says, beyond its code.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Fact {
    /// Nothing more than the code.
    None,
    /// A sentence that explains this particular form of the message.
    Note(&'static str),
    /// nvcc rejected an architecture (`sm_70`, `compute_89`) given to an option.
    Arch { name: String, option: String },
    /// ptxas (or the driver JIT) refused PTX `.version ptx`; it knows up to `current`.
    PtxVersion {
        ptx: (u32, u32),
        current: (u32, u32),
        jit: bool,
        nvcc_tmp: bool,
    },
    /// ptxas does not know `.target`.
    PtxTarget {
        target: String,
        jit: bool,
        nvcc_tmp: bool,
    },
    /// An instruction needs a higher target (`sm_90`) or the arch-specific one (`sm_90a`).
    Feature {
        feature: String,
        needs: String,
        arch_specific: bool,
        /// The target that lacks it (`sm_90`), when ptxas names it.
        target: Option<String>,
    },
    /// host_config.h refused the host compiler.
    Host { kind: HostKind, limit: Option<u32> },
    /// A header was not found.
    Header(String),
    /// A shared library was not found (at link time or load time).
    Library { name: String, link_time: bool },
    /// A CUresult / cudaError_t, found by name or message (or only by number).
    Cuda {
        err: &'static CudaError,
        by_number: bool,
    },
    /// cuda-build's own `error[code]: message` with its `= help:` lines.
    Own { message: String, help: Vec<String> },
    /// A GPU's architecture named in the message (PyTorch's "sm_120 is not compatible").
    GpuArch(u32),
    /// The host compiler path that does not exist.
    MissingProgram(String),
    /// A symbol or option named by the message (`_Z6helperf`, `-Wall`).
    Symbol(String),
}

/// Host compiler families host_config.h checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HostKind {
    Gcc,
    Clang,
    Msvc,
    Icx,
}

/// One matched line.
#[derive(Debug, Clone)]
pub(crate) struct Hit {
    /// The diagnosis code; empty until resolved for facts that need the whole log.
    pub code: &'static str,
    /// Byte offset of the line (orders diagnoses that tie).
    pub offset: usize,
    /// The normalised line.
    pub evidence: String,
    pub fact: Fact,
    /// How sure this line alone makes us.
    pub confidence: f32,
}

/// Everything pass 1 found.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    pub hits: Vec<Hit>,
    /// `Cuda compilation tools, release 12.4` seen in the log.
    pub nvcc_release: Option<(u32, u32)>,
    /// nvidia-smi's banner: driver version and CUDA version.
    pub smi_driver: Option<String>,
    pub smi_cuda: Option<(u32, u32)>,
    /// `failed to run custom build command for `crate v1.0``.
    pub build_script: Option<String>,
    /// The log shows a module being loaded / JIT-compiled (so ptxas messages are the driver's).
    pub jit_context: bool,
    /// Hits kept per (code, fact kind), to bound memory on huge logs.
    kept: Vec<(&'static str, std::mem::Discriminant<Fact>, u32)>,
}

/// Literal texts that make a line worth reading. Keep them specific: every
/// line with one of them is normalised and run through all rules.
const TRIGGERS: &[&str] = &[
    // versions and context
    "Cuda compilation tools, release",
    "Driver Version:",
    "KMD Version:",
    "failed to run custom build command",
    "cuModuleLoad",
    "load_module",
    "cuLinkAddData",
    "cuModuleLoadData",
    "error[",
    // nvcc arch
    "Unsupported gpu architecture",
    "is not defined for option 'gpu-",
    "Cannot find valid GPU for",
    "CMAKE_CUDA_ARCHITECTURES must be non-empty",
    "Failed to detect a default CUDA architecture",
    // ptxas
    "Unresolved extern function",
    "Undefined reference to",
    "Unknown option",
    "died due to signal",
    "Killed signal terminated program",
    "Unsupported .version",
    "Unsupported .target",
    "requires .target",
    "not supported on .target",
    // host compiler
    "unsupported GNU version",
    "unsupported clang version",
    "unsupported Microsoft Visual Studio version",
    "unsupported Intel ICX",
    "Failed to preprocess host compiler properties",
    "Cannot find compiler",
    "Could not set up the environment for Microsoft Visual Studio",
    "cicc: not found",
    "ptxas: not found",
    "fatbinary: not found",
    "nvlink: not found",
    "cudafe++: not found",
    "cicc: command not found",
    "'cicc' is not recognized",
    "++: not found",
    "gcc: not found",
    "++: command not found",
    "gcc: command not found",
    // files
    "No such file or directory",
    "file not found",
    "Cannot open include file",
    "cannot open source file",
    "cannot open shared object file",
    "cannot find -l",
    "Could not load dynamic library",
    "shared library",
    "nvcuda.dll",
    "libnvidia-ml.so",
    // nvcc missing
    "nvcc: command not found",
    "nvcc: not found",
    "'nvcc' is not recognized",
    "No CMAKE_CUDA_COMPILER could be found",
    "CUDA_HOME environment variable is not set",
    "find nvcc",
    "nvcc not found",
    "nvcc cannot be found",
    "nvcc was not found",
    "find a cuda installation",
    "find a CUDA installation",
    "kernel driver does not appear to be running",
    "stubs/libcuda.so",
    // driver and nvidia-smi
    "couldn't communicate with the NVIDIA driver",
    "Driver Not Loaded",
    "DRIVER_NOT_LOADED",
    "Key was rejected by service",
    "Module nvidia not found",
    "Found no NVIDIA driver",
    "Driver/library version mismatch",
    "RM_VERSION_MISMATCH",
    "API mismatch",
    "NVIDIA driver on your system is too old",
    "No devices were found",
    "is not compatible with the current PyTorch installation",
    // CUDA errors: names and message strings
    "CUDA_ERROR_",
    "cudaError",
    "CUDA error",
    "CUDA Error",
    "cuda error",
    "CUresult",
    // driver API calls that report a bare number (`cuInit returned 100`)
    "cuInit",
    "cuModule",
    "cuLaunch",
    "cuCtx",
    "cudaSuccess (",
    "CudaAPIError",
    "out of memory",
    "initialization error",
    "stub library",
    "CUDA driver version is insufficient",
    "requires a newer CUDA driver",
    "busy or unavailable",
    "invalid device function",
    "CUDA-capable device",
    "invalid device ordinal",
    "device kernel image is invalid",
    "no kernel image is available",
    "PTX JIT",
    "unsupported toolchain",
    "named symbol not found",
    "illegal memory access",
    "too many resources requested",
    "misaligned address",
    "unspecified launch failure",
    "system not yet initialized",
    "unsupported display driver",
    "forward compatibility was attempted",
    "unknown error",
];

fn trigger_regex() -> &'static regex::Regex {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    RE.get_or_init(|| {
        let alternation: Vec<String> = TRIGGERS.iter().map(|t| regex::escape(t)).collect();
        // Only escaped literals: compiles to a literal automaton; cannot fail.
        regex::Regex::new(&alternation.join("|")).expect("trigger literals form a valid regex")
    })
}

/// The longest evidence line kept (long lines are cut around the match).
const MAX_EVIDENCE: usize = 400;

/// Runs pass 1 over the whole text.
pub(crate) fn scan(text: &str) -> Scan {
    let mut scan = Scan::default();
    let mut state = LineState::default();
    let re = trigger_regex();
    let mut next_unread = 0usize;
    for m in re.find_iter(text) {
        if m.start() < next_unread {
            continue; // this line was already read
        }
        let start = text[..m.start()].rfind('\n').map_or(0, |p| p + 1);
        let end = text[m.end()..]
            .find('\n')
            .map_or(text.len(), |p| m.end() + p);
        next_unread = end + 1;
        // A line seen before adds nothing (diagnoses collapse duplicates);
        // skipping it keeps logs that repeat one error fast.
        let line = &text[start..end];
        if state.seen.len() < MAX_SEEN_LINES {
            if !state.seen.insert(hash_line(line)) {
                continue;
            }
        } else if state.seen.contains(&hash_line(line)) {
            continue;
        }
        let before = scan.hits.len();
        read_line(&text[start..end], start, &mut scan, &mut state);
        // cuda-build's own errors: attach the `= help:` lines that follow.
        let own = scan.hits[before..]
            .iter()
            .position(|h| matches!(h.fact, Fact::Own { .. }));
        if let Some(i) = own {
            let helps = following_help_lines(&text[end.min(text.len())..]);
            if let Fact::Own { help, .. } = &mut scan.hits[before + i].fact {
                *help = helps;
            }
        }
    }
    scan
}

/// How many distinct candidate lines are remembered to skip repeats.
const MAX_SEEN_LINES: usize = 1 << 16;

/// Most hits kept per code (and fact kind); diagnoses show a few lines anyway.
const MAX_HITS_PER_KIND: u32 = 64;

fn hash_line(line: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    line.hash(&mut h);
    h.finish()
}

#[derive(Default)]
struct LineState {
    /// Hashes of the candidate lines read so far.
    seen: std::collections::HashSet<u64>,
    /// The previous `X: No such file or directory` that was not a header.
    missing_program: Option<String>,
}

fn following_help_lines(rest: &str) -> Vec<String> {
    let mut helps = Vec::new();
    for raw in rest.lines().skip(1).take(24) {
        let line = normalise(raw);
        if let Some(h) = line.strip_prefix("= help:") {
            helps.push(h.trim().to_string());
        } else if !(line.starts_with('|') || line.starts_with("= ") || line.is_empty()) {
            break;
        }
    }
    helps
}

/// Strips ANSI escape sequences, CR, and surrounding blanks.
pub(crate) fn normalise(raw: &str) -> String {
    let raw = raw.trim_end_matches(['\r', '\n']);
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            match chars.peek() {
                // CSI: ESC [ params final-byte(@..~)
                Some('[') => {
                    chars.next();
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC: ESC ] ... BEL or ESC \
                Some(']') => {
                    chars.next();
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                _ => {
                    chars.next();
                }
            }
        } else if c != '\r' {
            out.push(c);
        }
    }
    let trimmed = out.trim();
    if trimmed.len() == out.len() {
        out
    } else {
        trimmed.to_string()
    }
}

fn evidence_of(line: &str) -> String {
    if line.len() <= MAX_EVIDENCE {
        return line.to_string();
    }
    let at = trigger_regex().find(line).map_or(0, |m| m.start());
    let mut from = at.saturating_sub(MAX_EVIDENCE / 4);
    while !line.is_char_boundary(from) {
        from -= 1;
    }
    let mut to = (from + MAX_EVIDENCE).min(line.len());
    while !line.is_char_boundary(to) {
        to -= 1;
    }
    let mut s = String::new();
    if from > 0 {
        s.push('…');
    }
    s.push_str(&line[from..to]);
    if to < line.len() {
        s.push('…');
    }
    s
}

/// The text between the first `open` after `key` and the next `close`.
fn quoted_after<'a>(line: &'a str, key: &str, quote: char) -> Option<&'a str> {
    let rest = &line[line.find(key)? + key.len()..];
    let rest = &rest[rest.find(quote)? + quote.len_utf8()..];
    let end = rest.find(quote)?;
    Some(&rest[..end])
}

/// `8.7` → (8, 7).
fn parse_version(s: &str) -> Option<(u32, u32)> {
    let s = s.trim().trim_matches(|c| c == '\'' || c == '"');
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
    h.starts_with("nv/")
        || h.starts_with("cuda/")
        || h.starts_with("cub/")
        || h.starts_with("thrust/")
        || h.starts_with("crt/")
        || h.starts_with("cuda_")
        || h.starts_with("cuda.h")
        || h.starts_with("cudaTypedefs")
        || h.starts_with("cooperative_groups")
        || h.starts_with("cublas")
        || h.starts_with("cufft")
        || h.starts_with("curand")
        || h.starts_with("cusparse")
        || h.starts_with("cusolver")
        || h.starts_with("nvrtc")
        || h.starts_with("nvtx3/")
        || h.starts_with("nvToolsExt")
        || h.starts_with("nvJitLink")
        || h == "mma.h"
        || h == "sm_20_atomic_functions.h"
        || h == "device_functions.h"
        || h == "driver_types.h"
        || h == "vector_types.h"
        || h == "host_defines.h"
        || h == "builtin_types.h"
}

fn lib_code(lib: &str) -> Option<&'static str> {
    let base = lib.rsplit(['/', '\\']).next().unwrap_or(lib);
    let base = base.trim_start_matches("lib");
    if base.starts_with("cuda.so")
        || base == "cuda"
        || base.starts_with("cuda.dll")
        || base.starts_with("nvcuda")
    {
        Some("libcuda-not-found")
    } else if base.starts_with("nvidia-ml") || base.starts_with("nvml") {
        Some("nvml-not-found")
    } else if base.starts_with("nvidia-ptxjitcompiler") {
        Some("ptx-jit-compiler-missing")
    } else if [
        "cudart",
        "cublas",
        "cublasLt",
        "nvrtc",
        "cufft",
        "curand",
        "cusparse",
        "cusolver",
        "nvJitLink",
        "nvToolsExt",
        "cudnn",
        "nccl",
        "npp",
        "nvjpeg",
    ]
    .iter()
    .any(|p| base.starts_with(p))
    {
        Some("cuda-runtime-lib-not-found")
    } else {
        None
    }
}

fn hit(
    scan: &mut Scan,
    code: &'static str,
    offset: usize,
    line: &str,
    fact: Fact,
    confidence: f32,
) {
    let kind = std::mem::discriminant(&fact);
    match scan
        .kept
        .iter_mut()
        .find(|(c, k, _)| *c == code && *k == kind)
    {
        Some((_, _, n)) if *n >= MAX_HITS_PER_KIND => return,
        Some((_, _, n)) => *n += 1,
        None => scan.kept.push((code, kind, 1)),
    }
    scan.hits.push(Hit {
        code,
        offset,
        evidence: evidence_of(line),
        fact,
        confidence,
    });
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

fn read_line(raw: &str, offset: usize, scan: &mut Scan, state: &mut LineState) {
    let line = normalise(raw);
    let line = line.as_str();
    let l = line;
    let n = scan.hits.len();

    // --- versions and context (no hits) ---------------------------------
    if let Some(v) = l
        .find("Cuda compilation tools, release")
        .and_then(|p| parse_version(&l[p + 31..]))
    {
        scan.nvcc_release = Some(v);
    }
    for key in ["Driver Version:", "KMD Version:"] {
        if let Some(p) = l.find(key) {
            let v: String = l[p + key.len()..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            if !v.is_empty() && !l.contains("CUDA Driver Version") {
                scan.smi_driver = Some(v);
            }
            if let Some(q) = l
                .find("CUDA Version:")
                .or_else(|| l.find("CUDA UMD Version:"))
            {
                let rest = &l[q..];
                let rest = &rest[rest.find(':').map_or(0, |c| c + 1)..];
                scan.smi_cuda = parse_version(rest.split_whitespace().next().unwrap_or(""));
            }
        }
    }
    if let Some(name) = quoted_after(l, "failed to run custom build command for", '`') {
        scan.build_script = Some(name.to_string());
    }
    if l.contains("cuModuleLoad")
        || l.contains("load_module")
        || l.contains("application ptx input")
        || l.contains("cuLinkAddData")
    {
        scan.jit_context = true;
    }

    // --- cuda-build's own errors ----------------------------------------
    if let Some(p) = l.find("error[") {
        let rest = &l[p + 6..];
        if let Some(close) = rest.find("]:") {
            if let Some(doc) = super::codes::lookup(&rest[..close]) {
                let message = rest[close + 2..].trim().to_string();
                hit(
                    scan,
                    doc.code,
                    offset,
                    l,
                    Fact::Own {
                        message,
                        help: Vec::new(),
                    },
                    0.9,
                );
            }
        }
    }

    // --- device link, options, killed stages -----------------------------
    if let Some(sym) = quoted_after(l, "Unresolved extern function", '\'') {
        let note = "ptxas could not resolve a device function: it is defined in another .cu file, and the file was compiled without relocatable device code (-rdc).";
        let fact = Fact::Symbol(sym.to_string());
        hit(scan, "device-function-unresolved", offset, l, fact, 0.9);
        hit(
            scan,
            "device-function-unresolved",
            offset,
            l,
            Fact::Note(note),
            0.9,
        );
    } else if l.contains("nvlink") {
        if let Some(sym) = quoted_after(l, "Undefined reference to", '\'') {
            let note = "The device link found no definition of a device function: the file that defines it is not part of this link, or its name differs (extern \"C\" versus C++).";
            hit(
                scan,
                "device-function-unresolved",
                offset,
                l,
                Fact::Symbol(sym.to_string()),
                0.85,
            );
            hit(
                scan,
                "device-function-unresolved",
                offset,
                l,
                Fact::Note(note),
                0.85,
            );
        }
    }
    if l.contains("nvcc") && l.contains("Unknown option") {
        if let Some(opt) = quoted_after(l, "Unknown option", '\'') {
            hit(
                scan,
                "nvcc-unknown-option",
                offset,
                l,
                Fact::Symbol(opt.to_string()),
                0.9,
            );
        }
    }
    if l.contains("died due to signal 9") || l.contains("Killed signal terminated program") {
        hit(scan, "compiler-killed", offset, l, Fact::None, 0.8);
    }

    // --- nvcc: architectures ---------------------------------------------
    if l.contains("rchitecture")
        || l.contains("ARCHITECTURES")
        || l.contains("gpu-")
        || l.contains("valid GPU")
    {
        if let Some(name) = quoted_after(l, "Unsupported gpu architecture", '\'') {
            let fact = Fact::Arch {
                name: name.to_string(),
                option: "gpu-architecture".into(),
            };
            hit(scan, "", offset, l, fact, 0.9);
        } else if l.contains("is not defined for option 'gpu-") {
            if let (Some(name), Some(option)) = (
                quoted_after(l, "Value", '\''),
                quoted_after(l, "for option", '\''),
            ) {
                let fact = Fact::Arch {
                    name: name.to_string(),
                    option: option.to_string(),
                };
                hit(scan, "", offset, l, fact, 0.9);
            }
        }
        if l.contains("Cannot find valid GPU for") {
            let note =
                "nvcc found no GPU for -arch=native and fell back to its default architecture, \
                    which may not be the GPU the program runs on.";
            hit(scan, "arch-not-detected", offset, l, Fact::Note(note), 0.85);
        }
        if l.contains("CMAKE_CUDA_ARCHITECTURES must be non-empty")
            || l.contains("Failed to detect a default CUDA architecture")
        {
            let note = "CMake could not determine which GPU architectures to build for.";
            hit(scan, "arch-not-detected", offset, l, Fact::Note(note), 0.8);
        }
    }

    // --- ptxas -------------------------------------------------------------
    if l.contains(".version") || l.contains(".target") {
        let jit_line = l.contains("application ptx input");
        let nvcc_tmp = l.contains("tmpxft_");
        if let Some(p) = l.find("Unsupported .version") {
            let rest = &l[p + 20..];
            let ptx = parse_version(rest.split(';').next().unwrap_or(""));
            let current = quoted_after(rest, "current version is", '\'').and_then(parse_version);
            if let (Some(ptx), Some(current)) = (ptx, current) {
                hit(
                    scan,
                    "",
                    offset,
                    l,
                    Fact::PtxVersion {
                        ptx,
                        current,
                        jit: jit_line,
                        nvcc_tmp,
                    },
                    0.9,
                );
            }
        }
        if let Some(target) = quoted_after(l, "Unsupported .target", '\'') {
            let fact = Fact::PtxTarget {
                target: target.to_string(),
                jit: jit_line,
                nvcc_tmp,
            };
            hit(scan, "", offset, l, fact, 0.8);
        }
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
                    hit(
                        scan,
                        "arch-feature-needs-higher-target",
                        offset,
                        l,
                        fact,
                        0.95,
                    );
                }
            } else if let Some(target) = quoted_after(after, "not supported on .target", '\'') {
                let needs = arch_specific_home(&feature, target);
                let fact = Fact::Feature {
                    feature,
                    needs,
                    arch_specific: true,
                    target: Some(target.to_string()),
                };
                hit(
                    scan,
                    "arch-feature-needs-higher-target",
                    offset,
                    l,
                    fact,
                    0.9,
                );
            }
            break;
        }
    }

    // --- host compiler -----------------------------------------------------
    if l.contains("unsupported")
        || l.contains("ompiler")
        || l.contains("not found")
        || l.contains("Visual Studio")
    {
        if l.contains("unsupported GNU version") {
            let fact = Fact::Host {
                kind: HostKind::Gcc,
                limit: number_after(l, "versions later than"),
            };
            hit(scan, "host-compiler-unsupported", offset, l, fact, 0.95);
        } else if l.contains("unsupported clang version") {
            let limit = number_after(l, "less than").map(|n| n.saturating_sub(1));
            hit(
                scan,
                "host-compiler-unsupported",
                offset,
                l,
                Fact::Host {
                    kind: HostKind::Clang,
                    limit,
                },
                0.95,
            );
        } else if l.contains("unsupported Microsoft Visual Studio version") {
            let limit = number_after(l, "and ");
            hit(
                scan,
                "host-compiler-unsupported",
                offset,
                l,
                Fact::Host {
                    kind: HostKind::Msvc,
                    limit,
                },
                0.95,
            );
        } else if l.contains("unsupported Intel ICX") {
            hit(
                scan,
                "host-compiler-unsupported",
                offset,
                l,
                Fact::Host {
                    kind: HostKind::Icx,
                    limit: None,
                },
                0.95,
            );
        }
        if l.contains("Failed to preprocess host compiler properties") {
            let fact = match state.missing_program.take() {
                Some(p) => Fact::MissingProgram(p),
                None => Fact::None,
            };
            let conf = if matches!(fact, Fact::MissingProgram(_)) {
                0.95
            } else {
                0.7
            };
            hit(scan, "host-compiler-not-found", offset, l, fact, conf);
        }
        if l.contains("Cannot find compiler")
            || l.contains("Could not set up the environment for Microsoft Visual Studio")
        {
            hit(scan, "host-compiler-not-found", offset, l, Fact::None, 0.9);
        }
        let tools: &[&str] = if l.contains("not found") {
            &["g++", "gcc", "c++", "clang++"]
        } else {
            &[]
        };
        for &tool in tools {
            for tail in [": not found", ": command not found"] {
                let Some(p) = l
                    .find(tail)
                    .filter(|&p| l[..p].ends_with(tool))
                    .map(|p| p - tool.len())
                else {
                    continue;
                };
                {
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
                        hit(
                            scan,
                            "host-compiler-not-found",
                            offset,
                            l,
                            Fact::MissingProgram(prog),
                            0.75,
                        );
                    }
                }
            }
        }
    }

    // --- toolkit programs nvcc could not run -------------------------------
    if l.contains("not found") || l.contains("not recognized") {
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
                hit(scan, "toolkit-incomplete", offset, l, Fact::Note(note), 0.9);
                break;
            }
        }
    }

    // --- missing files -----------------------------------------------------
    if l.contains("No such file")
        || l.contains("not found")
        || l.contains("annot ")
        || l.contains("load")
        || l.contains("nvcuda")
        || l.contains("libnvidia-ml")
        || l.contains("NVML")
    {
        let header = if let Some(p) = l.find("fatal error: ") {
            let rest = &l[p + 13..];
            if let Some(q) = rest.find(": No such file or directory") {
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
        let mut header_seen = false;
        if let Some(h) = header {
            let h = h
                .trim_start_matches(['<', '"'])
                .trim_end_matches(['>', '"'])
                .to_string();
            header_seen = true;
            if is_cuda_header(&h) {
                hit(scan, "toolkit-incomplete", offset, l, Fact::Header(h), 0.9);
            }
        }
        if !header_seen
            && l.ends_with("No such file or directory")
            && !l.contains("cannot open shared object file")
        {
            if let Some(prog) = l
                .strip_suffix("No such file or directory")
                .map(|s| s.trim_end_matches([' ', ':']))
            {
                if !prog.is_empty() && !prog.contains(' ') {
                    state.missing_program = Some(prog.to_string());
                }
            }
        }
        // A library the loader or the linker could not find: its name picks the code.
        let missing_lib = |scan: &mut Scan, lib: String, link_time: bool, confidence: f32| {
            if let Some(code) = lib_code(&lib) {
                let fact = Fact::Library {
                    name: lib,
                    link_time,
                };
                hit(scan, code, offset, l, fact, confidence);
            }
        };
        if let Some(p) = l.find(": cannot open shared object file") {
            let lib = l[..p]
                .rsplit([' ', ':', '\'', '"', '('])
                .next()
                .unwrap_or("")
                .to_string();
            missing_lib(scan, lib, false, 0.9);
        }
        if let Some(p) = l.find("cannot find -l") {
            let lib: String = l[p + 14..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-' || *c == '.')
                .collect();
            missing_lib(scan, format!("lib{lib}"), true, 0.85);
        }
        if let Some(lib) = quoted_after(l, "Could not load dynamic library", '\'') {
            missing_lib(scan, lib.to_string(), false, 0.85);
        }
        // cudarc: Unable to dynamically load the "cuda" shared library (also "nvrtc", "cublas", ...).
        if let Some(name) =
            quoted_after(l, "dynamically load the", '"').filter(|_| l.contains("shared library"))
        {
            missing_lib(scan, format!("lib{name}.so"), false, 0.85);
        }
        if l.contains("nvcuda.dll")
            && (l.contains("not found") || l.contains("could not") || l.contains("cannot"))
        {
            hit(
                scan,
                "libcuda-not-found",
                offset,
                l,
                Fact::Library {
                    name: "nvcuda.dll".into(),
                    link_time: false,
                },
                0.8,
            );
        }
        if l.contains("couldn't find libnvidia-ml.so")
            || l.contains("NVML Shared Library Not Found")
        {
            hit(
                scan,
                "nvml-not-found",
                offset,
                l,
                Fact::Library {
                    name: "libnvidia-ml.so".into(),
                    link_time: false,
                },
                0.9,
            );
        }
    }

    // --- nvcc itself missing -------------------------------------------------
    if l.contains("nvcc")
        || l.contains("CMAKE_CUDA_COMPILER")
        || l.contains("CUDA_HOME")
        || l.contains("installation")
        || l.contains("stubs/")
    {
        if l.contains("nvcc: command not found")
            || l.contains("nvcc: not found")
            || l.contains("'nvcc' is not recognized")
            || l.contains("No CMAKE_CUDA_COMPILER could be found")
            || l.contains("nvcc not found")
            || l.contains("nvcc cannot be found")
            || l.contains("nvcc was not found")
            || (l.contains("find nvcc")
                && (l.contains("Could not")
                    || l.contains("could not")
                    || l.contains("Failed to")
                    || l.contains("Unable to")))
        {
            hit(scan, "nvcc-not-found", offset, l, Fact::None, 0.85);
        } else if l.contains("CUDA_HOME environment variable is not set") {
            hit(scan, "nvcc-not-found", offset, l, Fact::Note("PyTorch/setuptools could not find a toolkit: CUDA_HOME is unset and nvcc is not on PATH."), 0.8);
        } else if l.contains("nvcc")
            && l.contains("No such file or directory")
            && (l.contains("os error 2") || l.contains("execute") || l.contains("spawn"))
        {
            hit(scan, "nvcc-not-found", offset, l, Fact::None, 0.75);
        }

        if l.contains("find a cuda installation") || l.contains("find a CUDA installation") {
            let note =
            "The build script found no CUDA toolkit (no CUDA_HOME / CUDA_PATH, no nvcc on PATH).";
            hit(scan, "nvcc-not-found", offset, l, Fact::Note(note), 0.85);
        }
        if let Some(p) = l.find("stubs/libcuda.so") {
            // A loader naming the stub it loaded, or a bare path in a list of loaded libraries.
            let loader = [
                "Mapped", "mapped", "Loaded", "loaded", "dlopen", "Using", "using",
            ]
            .iter()
            .any(|w| l.contains(w));
            let bare_path = l.starts_with('/') && !l.contains(' ');
            if loader || bare_path {
                let start = l[..p].rfind([' ', '\'', '"']).map_or(0, |q| q + 1);
                let name = l[start..]
                    .split_whitespace()
                    .next()
                    .unwrap_or("stubs/libcuda.so")
                    .to_string();
                let confidence = if loader { 0.75 } else { 0.6 };
                hit(
                    scan,
                    "libcuda-stub",
                    offset,
                    l,
                    Fact::Library {
                        name,
                        link_time: false,
                    },
                    confidence,
                );
            }
        }
    }

    // --- driver, nvidia-smi, NVML -------------------------------------------
    if l.contains("river")
        || l.contains("DRIVER")
        || l.contains("NVIDIA")
        || l.contains("nvidia")
        || l.contains("NVML")
        || l.contains("RM_")
        || l.contains("mismatch")
        || l.contains("rejected")
        || l.contains("devices were found")
        || l.contains("PyTorch")
    {
        if l.contains("kernel driver does not appear to be running") {
            let note = "The NVIDIA kernel module is not running on this host (/proc/driver/nvidia/version is missing).";
            hit(scan, "driver-not-loaded", offset, l, Fact::Note(note), 0.85);
        }
        if l.contains("couldn't communicate with the NVIDIA driver") {
            hit(scan, "driver-not-loaded", offset, l, Fact::None, 0.9);
        } else if l.contains("DRIVER_NOT_LOADED") || l.contains("Driver Not Loaded") {
            hit(scan, "driver-not-loaded", offset, l, Fact::None, 0.85);
        } else if l.contains("Key was rejected by service") {
            hit(scan, "driver-not-loaded", offset, l, Fact::Note("The kernel refused to load the nvidia module: Secure Boot rejects unsigned modules."), 0.85);
        } else if l.contains("Module nvidia not found") {
            hit(
                scan,
                "driver-not-loaded",
                offset,
                l,
                Fact::Note("No nvidia kernel module is built for the running kernel."),
                0.8,
            );
        } else if l.contains("Found no NVIDIA driver") {
            hit(scan, "driver-not-loaded", offset, l, Fact::Note("The program found no working NVIDIA driver (no libcuda, or the kernel module is not loaded)."), 0.6);
        }
        if l.contains("Driver/library version mismatch") || l.contains("RM_VERSION_MISMATCH") {
            hit(scan, "driver-library-mismatch", offset, l, Fact::None, 0.95);
        } else if l.contains("API mismatch") && (l.contains("NVRM") || l.contains("kernel module"))
        {
            hit(scan, "driver-library-mismatch", offset, l, Fact::None, 0.9);
        }
        if l.contains("NVIDIA driver on your system is too old") {
            hit(scan, "driver-too-old", offset, l, Fact::None, 0.9);
        }
        if l.contains("No devices were found") {
            hit(scan, "no-device-visible", offset, l, Fact::None, 0.75);
        }
        if l.contains("is not compatible with the current PyTorch installation") {
            let fact = number_after(l, "CUDA capability sm_").map_or(Fact::None, Fact::GpuArch);
            hit(scan, "no-kernel-image-for-device", offset, l, fact, 0.85);
        }
    }

    // --- CUresult / cudaError_t ---------------------------------------------
    let mut errs = Vec::new();
    cuda_errors::find_in_line(l, &mut errs);
    for (err, by_number) in errs {
        if matches!(err.code, "ptx-too-new-for-driver" | "ptx-jit-failed") {
            scan.jit_context = true;
        }
        // Already explained more precisely by a rule above (e.g. the PyTorch line).
        if scan.hits[n..].iter().any(|h| h.code == err.code) {
            continue;
        }
        let confidence = if by_number { 0.5 } else { 0.85 };
        hit(
            scan,
            err.code,
            offset,
            l,
            Fact::Cuda { err, by_number },
            confidence,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalise_strips_ansi_cr_and_indent() {
        assert_eq!(
            normalise("  \u{1b}[1m\u{1b}[31merror\u{1b}[0m: x\r"),
            "error: x"
        );
        assert_eq!(
            normalise("\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{1b}\\"),
            "link"
        );
        assert_eq!(normalise("\u{1b}"), "");
    }

    #[test]
    fn long_lines_keep_the_match_in_evidence() {
        let line = format!(
            "{}nvcc fatal   : Unsupported gpu architecture 'sm_70'{}",
            "x".repeat(5000),
            "y".repeat(5000)
        );
        let ev = evidence_of(&line);
        assert!(ev.len() < MAX_EVIDENCE + 10);
        assert!(ev.contains("Unsupported gpu architecture"));
    }

    #[test]
    fn reads_versions_from_banners() {
        let s = scan("| NVIDIA-SMI 535.129.03   Driver Version: 535.129.03   CUDA Version: 12.2 |\nCuda compilation tools, release 12.4, V12.4.131\n");
        assert_eq!(s.smi_driver.as_deref(), Some("535.129.03"));
        assert_eq!(s.smi_cuda, Some((12, 2)));
        assert_eq!(s.nvcc_release, Some((12, 4)));
        let s = scan("| NVIDIA-SMI 610.43.02   KMD Version: 610.43.02   CUDA UMD Version: 13.3 |");
        assert_eq!(s.smi_driver.as_deref(), Some("610.43.02"));
        assert_eq!(s.smi_cuda, Some((13, 3)));
    }
}
