//! Two builds' outputs compared, each difference with the flag that
//! explains it: what `cargo cuda inspect --compare OLD NEW` prints, to check
//! that a port (cudaforge, bindgen_cuda or cc to cuda-build) changed nothing
//! by accident.
//!
//! A [`Summary`] of a file holds its kernel entry names, SASS and PTX
//! targets, device debug information and, for objects and static libraries
//! (feature `host-symbols`), the host symbols defined and needed and what
//! some host flags leave behind. [`compare`] lists what differs; each rule
//! below is one known symptom and its flag:
//!
//! | symptom | flag |
//! |---|---|
//! | `*_ptsz` / `*_ptds` host symbols on one side only (`__cudaLaunchKernel_ptsz`, `cudaMemcpyAsync_ptsz`) | `--default-stream per-thread` |
//! | PTX targets on one side only | the arch form: `80` is SASS + PTX, `sm_80` SASS only (cudaforge) |
//! | the same SASS arch with and without `a`/`f` | cudaforge's suffix from sm_90 on (`90` → `sm_90a`) |
//! | line tables in the device code | `-lineinfo` (cuda-build's debug profile) |
//! | full device debug information | `-G` (cc in debug builds) |
//! | absolute relocations in host code | `-Xcompiler -fPIC` missing (bindgen_cuda's `build_lib`) |
//! | one section per host function | `-Xcompiler -ffunction-sections` (cc) |
//! | DWARF in host objects | `-Xcompiler -g` (cc in debug builds) |
//! | `__nv_relfatbin`, `__cudaRegisterLinkedBinary*` | `-rdc=true` (cc's `--device-c` for several files) |
//! | host code size alone | the host `-O` level (cuda-build: OPT_LEVEL; cudaforge, bindgen_cuda: none) |

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

use serde::Serialize;

use super::fatbin::{plain_payload, read_block, FatbinKind};
use super::module_id::{differ_beyond_path_hash, strip_module_ids};
use super::{Code, HostCode, ImageFormat};

/// How much debug information the device code carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceDebug {
    /// None found in the readable images.
    #[default]
    None,
    /// Line tables (`-lineinfo`): SASS maps to source lines.
    LineInfo,
    /// Full debug information (`-G`): device code unoptimised.
    Full,
}

/// What one file of a build holds, as [`compare`] reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// The file's size in bytes.
    pub size: u64,
    /// Kernel entry names of every image.
    pub kernels: BTreeSet<String>,
    /// SASS targets (`sm_80`, `sm_90a`).
    pub sass: BTreeSet<String>,
    /// PTX targets (`compute_80`).
    pub ptx: BTreeSet<String>,
    /// The most debug information found in any device image.
    pub device_debug: DeviceDebug,
    /// Per target, a digest of its device code (every image's entry for
    /// it, decompressed where possible, in a fixed order): equal digests are
    /// byte-identical SASS or PTX.
    pub device_code: BTreeMap<String, String>,
    /// The same digests with nvcc's module ids taken out
    /// ([`code_without_module_ids`]): equal where the code differs only in
    /// internal-linkage names.
    #[serde(skip)]
    pub device_code_sans_module_id: BTreeMap<String, String>,
    /// Host code, for objects and static libraries (None: none, or the
    /// `host-symbols` feature is off).
    pub host: Option<HostCode>,
}

/// Reads a file's bytes into a [`Summary`]; the host side only with the
/// `host-symbols` feature. An error when the file is an archive or object
/// that cannot be parsed.
pub fn summarize(data: &[u8]) -> Result<Summary, String> {
    let scan = super::scan(data);
    let mut code: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut code_sans_id: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut s = Summary {
        size: data.len() as u64,
        ..Summary::default()
    };
    for image in &scan.images {
        s.kernels.extend(image.kernels.iter().cloned());
        for e in &image.entries {
            match e.code {
                Code::Sass => s.sass.insert(e.target.clone()),
                Code::Ptx => s.ptx.insert(e.target.clone()),
            };
            if let Some(k) = &e.kernels {
                s.kernels.extend(k.iter().cloned());
            }
        }
        s.device_debug = s.device_debug.max(image_debug(data, image));
        // An image without kernels holds no code a launch runs: it is
        // `nvcc --device-link`'s stub for non-relocatable objects, which cc
        // adds to every library (`lib<name>_dlink.o`) and a port need not.
        let launchable = !image.kernels.is_empty()
            || image
                .entries
                .iter()
                .any(|e| e.kernels.as_ref().is_some_and(|k| !k.is_empty()));
        if !launchable {
            continue;
        }
        for (target, bytes) in image_code(data, image) {
            code_sans_id
                .entry(target.clone())
                .or_default()
                .push(hex(&Sha256::digest(code_without_module_ids(&bytes))));
            code.entry(target)
                .or_default()
                .push(hex(&Sha256::digest(&bytes)));
        }
    }
    // Archive members and images come in any order: the multiset counts.
    let digest_each = |code: BTreeMap<String, Vec<String>>| -> BTreeMap<String, String> {
        code.into_iter()
            .map(|(target, mut digests)| {
                digests.sort();
                (target, hex(&Sha256::digest(digests.join(",").as_bytes())))
            })
            .collect()
    };
    s.device_code = digest_each(code);
    s.device_code_sans_module_id = digest_each(code_sans_id);
    #[cfg(feature = "host-symbols")]
    {
        s.host = super::host::host_code(data)?.map(|mut h| {
            let defined = h.defined.clone();
            h.undefined.retain(|u| !defined.contains(u));
            h
        });
    }
    Ok(s)
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Each entry of one image as (target, bytes): decompressed when the
/// reader can, else as stored (still the same bytes for the same code).
fn image_code<'a>(
    data: &'a [u8],
    image: &super::Image,
) -> Vec<(String, std::borrow::Cow<'a, [u8]>)> {
    let start = image.offset as usize;
    let Some(bytes) = data.get(start..start + image.size as usize) else {
        return Vec::new();
    };
    let target = || {
        image
            .entries
            .first()
            .map(|e| e.target.clone())
            .unwrap_or_default()
    };
    match image.format {
        ImageFormat::Cubin | ImageFormat::Ptx => {
            vec![(target(), std::borrow::Cow::Borrowed(bytes))]
        }
        ImageFormat::Fatbin => {
            let Ok(block) = read_block(data, start) else {
                return Vec::new();
            };
            block
                .entries
                .iter()
                .filter_map(|e| {
                    let payload = plain_payload(data, e)
                        .or_else(|| data.get(e.payload.clone()).map(std::borrow::Cow::Borrowed))?;
                    Some((e.target_name(), payload))
                })
                .collect()
        }
    }
}

/// The debug information of one image's readable entries.
fn image_debug(data: &[u8], image: &super::Image) -> DeviceDebug {
    let start = image.offset as usize;
    let Some(bytes) = data.get(start..start + image.size as usize) else {
        return DeviceDebug::None;
    };
    match image.format {
        ImageFormat::Cubin => cubin_debug(bytes),
        ImageFormat::Ptx => ptx_debug(bytes),
        ImageFormat::Fatbin => {
            let Ok(block) = read_block(data, start) else {
                return DeviceDebug::None;
            };
            block
                .entries
                .iter()
                .filter_map(|e| {
                    let payload = plain_payload(data, e)?;
                    Some(match e.kind {
                        FatbinKind::Elf => cubin_debug(&payload),
                        FatbinKind::Ptx => ptx_debug(&payload),
                    })
                })
                .max()
                .unwrap_or_default()
        }
    }
}

fn cubin_debug(cubin: &[u8]) -> DeviceDebug {
    if super::elf_section(cubin, ".debug_info").is_some() {
        DeviceDebug::Full
    } else if super::elf_section(cubin, ".nv_debug_line_sass").is_some() {
        DeviceDebug::LineInfo
    } else {
        DeviceDebug::None
    }
}

fn ptx_debug(ptx: &[u8]) -> DeviceDebug {
    let has = |needle: &[u8]| memchr::memmem::find(ptx, needle).is_some();
    if has(b".section\t.debug_info") || has(b".section .debug_info") {
        DeviceDebug::Full
    } else if has(b"\t.loc\t") || has(b"\n.file\t") {
        DeviceDebug::LineInfo
    } else {
        DeviceDebug::None
    }
}

/// One difference between OLD and NEW.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// What differs: `kernels`, `sass`, `ptx`, `host-undefined`, … (stable names).
    pub aspect: &'static str,
    /// In OLD only.
    pub only_old: Vec<String>,
    /// In NEW only.
    pub only_new: Vec<String>,
    /// The flag that explains it, when one is known.
    pub flag: Option<&'static str>,
    /// Why, and how to make NEW match OLD.
    pub explanation: String,
}

/// Every difference between two files' summaries, most telling first (a
/// known flag before a bare difference). Empty when they hold the same
/// kernels, targets, debug information and host symbols; sizes alone are
/// reported only when the host code's size differs.
pub fn compare(old: &Summary, new: &Summary) -> Vec<Difference> {
    let mut out = Vec::new();
    // Names that differ only in nvcc's hash of the source path, gathered
    // from kernels and host symbols into one difference.
    let mut renamed = Renamed::default();
    stream_mode(old, new, &mut out);
    targets(old, new, &mut out);
    device_debug(old, new, &mut out);
    kernels(old, new, &mut renamed, &mut out);
    device_code(old, new, &mut renamed, &mut out);
    if let (Some(o), Some(n)) = (&old.host, &new.host) {
        host(o, n, &mut renamed, &mut out);
    } else if old.host.is_some() != new.host.is_some() {
        out.push(Difference {
            aspect: "host-code",
            only_old: Vec::new(),
            only_new: Vec::new(),
            flag: None,
            explanation: format!(
                "only {} has host code (an object or static library): the two are different kinds of output",
                if old.host.is_some() { "OLD" } else { "NEW" }
            ),
        });
    }
    module_id(renamed, &mut out);
    out.sort_by_key(|d| d.flag.is_none());
    out
}

/// Device code (a cubin, or PTX) with nvcc's module ids taken out: a
/// cubin's content without its layout (names of other lengths shift its
/// string tables), PTX as text.
pub fn code_without_module_ids(bytes: &[u8]) -> Vec<u8> {
    match super::elf::Elf::parse(bytes) {
        Ok(elf) => elf.content_without_layout(strip_module_ids),
        Err(_) => strip_module_ids(bytes),
    }
}

fn without_module_id(name: &str) -> String {
    String::from_utf8_lossy(&strip_module_ids(name.as_bytes())).into_owned()
}

/// Like [`sides`], with the names that differ only in their module id
/// taken out into `renamed` (OLD's, NEW's).
fn sides_by_module_id(
    a: &BTreeSet<String>,
    b: &BTreeSet<String>,
    renamed: &mut Renamed,
) -> (Vec<String>, Vec<String>) {
    let (only_a, only_b) = sides(a, b);
    // NEW's names by their key, each normalised once.
    let mut by_key: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for m in only_b.iter().rev() {
        by_key
            .entry(without_module_id(m))
            .or_default()
            .push(m.clone());
    }
    let mut left_a = Vec::new();
    for n in only_a {
        match by_key.get_mut(&without_module_id(&n)).and_then(Vec::pop) {
            Some(m) => renamed.names.push((n, m)),
            None => left_a.push(n),
        }
    }
    // What no OLD name claimed, in sorted order as `sides` gives it.
    let mut left_b: Vec<String> = by_key.into_values().flatten().collect();
    left_b.sort();
    (left_a, left_b)
}

/// What differs only in nvcc's module ids: names (OLD's, NEW's) and the
/// targets whose device code differs in nothing else.
#[derive(Default)]
struct Renamed {
    names: Vec<(String, String)>,
    targets: Vec<String>,
}

/// Internal-linkage names with another module id: the two builds compiled
/// the same source at different absolute paths, or the source has no
/// ordinary external definition and its id holds nvcc's process id.
fn module_id(renamed: Renamed, out: &mut Vec<Difference>) {
    if renamed.names.is_empty() && renamed.targets.is_empty() {
        return;
    }
    let by_pid = renamed
        .names
        .iter()
        .filter(|(o, n)| differ_beyond_path_hash(o, n))
        .count();
    let by_path = renamed.names.len() - by_pid;
    let code = if renamed.targets.is_empty() {
        String::new()
    } else {
        format!(
            " ({} compiled to the same code but for these names)",
            renamed.targets.join(", ")
        )
    };
    let (only_old, only_new) = renamed.names.into_iter().unzip();
    // Which part of the id differs is known from the names; for code alone
    // (internal device functions and variables are in neither list), both
    // explanations are given.
    let unknown = by_path == 0 && by_pid == 0;
    let mut explanation = format!("the same names but for nvcc's module id, which it puts into internal-linkage names (anonymous namespaces, `static` device functions, CUTLASS's `cute::_`){code}.");
    if by_path > 0 || unknown {
        explanation.push_str(" Its first part hashes the source's absolute path: cuda-build tells cudafe++ and cicc the package-relative path (`-Xcicc --orig_src_path_name,src/x.cu`, and the same with `-Xcudafe`), so its names are the same in every checkout; cudaforge, bindgen_cuda and cc pass nvcc absolute paths, so theirs depend on where the crate was built.");
    }
    if by_pid > 0 || unknown {
        explanation.push_str(" Its last part names the source's first ordinary external function or initialized variable; a source with none (only templates, as FlashAttention's instance files) gets nvcc's process id there instead, so it differs on every compile, with any builder: `Build::stable_module_ids(true)` gives such a source a fixed id.");
    }
    explanation.push_str(" No code differs because of it");
    out.push(Difference {
        aspect: "module-id",
        only_old,
        only_new,
        flag: if by_path > 0 || unknown {
            Some("--orig_src_path_name")
        } else {
            Some("Build::stable_module_ids")
        },
        explanation,
    });
}

/// `a` minus `b`, and `b` minus `a`.
fn sides(a: &BTreeSet<String>, b: &BTreeSet<String>) -> (Vec<String>, Vec<String>) {
    (
        a.difference(b).cloned().collect(),
        b.difference(a).cloned().collect(),
    )
}

/// The per-thread default stream: nvcc's `--default-stream per-thread`
/// defines `CUDA_API_PER_THREAD_DEFAULT_STREAM`, and cuda_runtime_api.h then
/// maps every stream-taking call to its `_ptsz` (or `_ptds`) variant.
fn stream_mode(old: &Summary, new: &Summary, out: &mut Vec<Difference>) {
    let (Some(o), Some(n)) = (&old.host, &new.host) else {
        return;
    };
    let per_thread = |h: &HostCode| -> BTreeSet<String> {
        h.undefined
            .iter()
            .chain(&h.defined)
            .filter(|s| s.ends_with("_ptsz") || s.ends_with("_ptds"))
            .cloned()
            .collect()
    };
    let (po, pn) = (per_thread(o), per_thread(n));
    if po.is_empty() == pn.is_empty() {
        return;
    }
    let (with, without) = if pn.is_empty() {
        ("OLD", "NEW")
    } else {
        ("NEW", "OLD")
    };
    out.push(Difference {
        aspect: "stream-mode",
        only_old: po.into_iter().collect(),
        only_new: pn.into_iter().collect(),
        flag: Some("--default-stream per-thread"),
        explanation: format!(
            "{with} was compiled with `--default-stream per-thread` (cudaforge and bindgen_cuda add it), {without} without: \
             its launches and copies on stream 0 use the legacy default stream, which waits for every other blocking stream. \
             Add `.flag(\"--default-stream\").flag(\"per-thread\")` (Build::like_cudaforge() and Build::like_bindgen_cuda() do) to the build that lacks it, or remove it from the other"
        ),
    });
}

fn targets(old: &Summary, new: &Summary, out: &mut Vec<Difference>) {
    let (so, sn) = sides(&old.sass, &new.sass);
    if !so.is_empty() || !sn.is_empty() {
        let base = |t: &String| t.trim_end_matches(['a', 'f']).to_string();
        let suffix_only = so.len() == sn.len()
            && so.iter().map(base).collect::<BTreeSet<_>>() == sn.iter().map(base).collect();
        let (flag, explanation) = if suffix_only {
            (
                Some("the arch suffix (90 → sm_90a)"),
                "the same compute capabilities with and without the `a`/`f` suffix: cudaforge turns a plain 9.0 or newer into \
                 sm_90a (12.1 and newer into `f`); Preset::Cudaforge does the same, or spell it `90a` in Build::arch"
                    .to_string(),
            )
        } else {
            (
                None,
                "different SASS archs: the arch settings differ (Build::arch, CUDA_ARCHS, CUDA_COMPUTE_CAP, `[package.metadata.cuda] arch`, or the GPUs detected)"
                    .to_string(),
            )
        };
        out.push(Difference {
            aspect: "sass",
            only_old: so,
            only_new: sn,
            flag,
            explanation,
        });
    }
    let (po, pn) = sides(&old.ptx, &new.ptx);
    if !po.is_empty() || !pn.is_empty() {
        let lacks = if new.ptx.is_empty() {
            "NEW"
        } else if old.ptx.is_empty() {
            "OLD"
        } else {
            ""
        };
        let explanation = if lacks.is_empty() {
            "different PTX targets: cuda-build embeds PTX for the highest plain arch of the plan"
                .to_string()
        } else {
            format!(
                "{lacks} has no PTX: in cuda-build `80` (and CUDA_COMPUTE_CAP=80) means SASS for sm_80 plus PTX for newer GPUs to JIT, \
                 `sm_80` SASS only, which is what cudaforge's `-gencode=arch=compute_80,code=sm_80` compiles (Preset::Cudaforge shapes the plan so); \
                 bindgen_cuda's and cc's `-arch=sm_80` embed PTX too"
            )
        };
        out.push(Difference {
            aspect: "ptx",
            only_old: po,
            only_new: pn,
            flag: Some("the arch form (`80` = SASS + PTX, `sm_80` = SASS only)"),
            explanation,
        });
    }
}

fn device_debug(old: &Summary, new: &Summary, out: &mut Vec<Difference>) {
    if old.device_debug == new.device_debug {
        return;
    }
    let name = |d: DeviceDebug| match d {
        DeviceDebug::None => "none",
        DeviceDebug::LineInfo => "line tables (-lineinfo)",
        DeviceDebug::Full => "full debug information (-G)",
    };
    let full = old.device_debug == DeviceDebug::Full || new.device_debug == DeviceDebug::Full;
    let (flag, why) = if full {
        (
            "-G",
            "device debug code (`-G`) turns device optimisation off: cc adds it whenever cargo's DEBUG is on; cuda-build only with .device_debug(true) or CUDA_BUILD_DEVICE_DEBUG=1 (Preset::Cc follows cc)",
        )
    } else {
        (
            "-lineinfo",
            "cuda-build adds `-lineinfo` in debug profiles (DEBUG=true); it changes no generated code, but the images' bytes differ. The presets, .profile_flags(false) and CUDA_BUILD_PROFILE_FLAGS=0 turn it off",
        )
    };
    out.push(Difference {
        aspect: "device-debug",
        only_old: vec![name(old.device_debug).to_string()],
        only_new: vec![name(new.device_debug).to_string()],
        flag: Some(flag),
        explanation: why.to_string(),
    });
}

/// The same targets compiled to different bytes. Other differences (debug
/// information, kernels) explain it when there are any.
fn device_code(old: &Summary, new: &Summary, renamed: &mut Renamed, out: &mut Vec<Difference>) {
    let (renamed_only, differ): (Vec<String>, Vec<String>) = old
        .device_code
        .iter()
        .filter(|(t, d)| new.device_code.get(*t).is_some_and(|n| n != *d))
        .map(|(t, _)| t.clone())
        .partition(|t| {
            let sans = |s: &Summary| s.device_code_sans_module_id.get(t).cloned();
            sans(old).is_some() && sans(old) == sans(new)
        });
    renamed.targets.extend(renamed_only);
    if differ.is_empty() {
        return;
    }
    out.push(Difference {
        aspect: "device-code",
        only_old: Vec::new(),
        only_new: Vec::new(),
        flag: None,
        explanation: format!("{} compiled to different bytes: a flag that changes code generation differs (`--use_fast_math`, `-G`, `-lineinfo`, `-O`, `-ftz`, a define), \
                      or a header seen at another path reaches the code (`assert` keeps `__FILE__`); the differences above, if any, say which", differ.join(", ")),
    });
}

fn kernels(old: &Summary, new: &Summary, renamed: &mut Renamed, out: &mut Vec<Difference>) {
    let (ko, kn) = sides_by_module_id(&old.kernels, &new.kernels, renamed);
    if ko.is_empty() && kn.is_empty() {
        return;
    }
    out.push(Difference {
        aspect: "kernels",
        only_old: ko,
        only_new: kn,
        flag: None,
        explanation: "different kernel entries: the sources differ, or a define that selects kernels (e.g. NO_BF16_KERNEL, ENABLE_FP8, USE_CUTLASS) is set on one side only".into(),
    });
}

fn host(o: &HostCode, n: &HostCode, renamed: &mut Renamed, out: &mut Vec<Difference>) {
    let flag_diff = |aspect: &'static str,
                     a: bool,
                     b: bool,
                     flag: &'static str,
                     why: &str,
                     out: &mut Vec<Difference>| {
        if a != b {
            out.push(Difference {
                aspect,
                only_old: if a {
                    vec![flag.to_string()]
                } else {
                    Vec::new()
                },
                only_new: if b {
                    vec![flag.to_string()]
                } else {
                    Vec::new()
                },
                flag: Some(flag),
                explanation: format!("{} has it: {why}", if a { "OLD" } else { "NEW" }),
            });
        }
    };
    flag_diff(
        "pic",
        !o.non_pic.is_empty(),
        !n.non_pic.is_empty(),
        "-Xcompiler -fPIC",
        "its host code has absolute relocations, so it was compiled without `-Xcompiler -fPIC` (bindgen_cuda's build_lib passes none; cuda-build, cudaforge and cc do), and cannot go into a shared library or PIE",
        out,
    );
    flag_diff(
        "rdc",
        o.relocatable_device_code,
        n.relocatable_device_code,
        "-rdc=true",
        "relocatable device code (`-rdc=true`; cc compiles with `--device-c` when it has more than one .cu file): Build::rdc(true)",
        out,
    );
    flag_diff(
        "function-sections",
        o.function_sections,
        n.function_sections,
        "-Xcompiler -ffunction-sections",
        "one section per host function, as cc compiles (Preset::Cc adds it)",
        out,
    );
    flag_diff(
        "host-debug",
        o.debug_info,
        n.debug_info,
        "-Xcompiler -g",
        "host debug information, as cc adds in debug builds (Preset::Cc adds it)",
        out,
    );
    // The stream mode's symbols are explained above: `x_ptsz` on one side, `x` on the other.
    let stream_pair = |s: &String, other: &BTreeSet<String>| {
        s.ends_with("_ptsz")
            || s.ends_with("_ptds")
            || other.contains(&format!("{s}_ptsz"))
            || other.contains(&format!("{s}_ptds"))
    };
    let (uo, un) = sides_by_module_id(&o.undefined, &n.undefined, renamed);
    let (uo, un): (Vec<String>, Vec<String>) = (
        uo.into_iter()
            .filter(|s| !stream_pair(s, &n.undefined))
            .collect(),
        un.into_iter()
            .filter(|s| !stream_pair(s, &o.undefined))
            .collect(),
    );
    if !uo.is_empty() || !un.is_empty() {
        out.push(Difference {
            aspect: "host-undefined",
            only_old: uo,
            only_new: un,
            flag: None,
            explanation: "the host code needs different symbols: different sources, defines or host compiler (with the same kernels, often inlining from the host -O level)".into(),
        });
    }
    let (dold, dnew) = sides_by_module_id(&o.defined, &n.defined, renamed);
    if !dold.is_empty() || !dnew.is_empty() {
        out.push(Difference {
            aspect: "host-defined",
            only_old: dold,
            only_new: dnew,
            flag: None,
            explanation: "the host code defines different symbols: different sources, defines, -std or host compiler".into(),
        });
    }
    if o.text_size != n.text_size && out.is_empty() {
        out.push(Difference {
            aspect: "host-size",
            only_old: vec![format!("{} bytes of host code", o.text_size)],
            only_new: vec![format!("{} bytes of host code", n.text_size)],
            flag: Some("-Xcompiler -O<n>"),
            explanation: "the same symbols, different host code: the host optimisation level differs (cuda-build passes `-Xcompiler -O<OPT_LEVEL>` for static libraries, -O0 in dev builds; cudaforge and bindgen_cuda pass none, so nvcc's host compiler default applies; `-O3` among nvcc flags only optimises device code. The presets and .profile_flags(false) leave it to nvcc)".into(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(undefined: &[&str], defined: &[&str]) -> HostCode {
        HostCode {
            objects: 1,
            undefined: undefined.iter().map(|s| s.to_string()).collect(),
            defined: defined.iter().map(|s| s.to_string()).collect(),
            ..HostCode::default()
        }
    }

    fn summary(sass: &[&str], ptx: &[&str], h: Option<HostCode>) -> Summary {
        Summary {
            size: 1,
            kernels: ["affine_f32".to_string()].into(),
            sass: sass.iter().map(|s| s.to_string()).collect(),
            ptx: ptx.iter().map(|s| s.to_string()).collect(),
            device_debug: DeviceDebug::None,
            device_code: BTreeMap::new(),
            device_code_sans_module_id: BTreeMap::new(),
            host: h,
        }
    }

    #[test]
    fn names_that_differ_only_in_the_module_id_are_one_difference() {
        assert_eq!(
            without_module_id("_ZN57_GLOBAL__N__eb6d7ae1_24_flashinfer_mla_decode_cu_eea0f52614run_mla_decodeIfEEv"),
            "_ZN_GLOBAL__N__#14run_mla_decodeIfEEv"
        );
        assert_eq!(
            without_module_id(
                "_ZN30_INTERNAL_4f8a4b37_4_d_cu_kern32_GLOBAL__N__4f8a4b37_4_d_cu_kern5twiceEi"
            ),
            "_ZN_INTERNAL_#_GLOBAL__N__#5twiceEi"
        );
        // Not a module id: no hex run ending in `_`.
        assert_eq!(without_module_id("_GLOBAL__N_x"), "_GLOBAL__N_x");
        let old = summary(
            &["sm_80"],
            &[],
            Some(host(
                &[],
                &["run", "_ZN12_GLOBAL__N__eb6d7ae1_1_a_cu_f1Ev", "gone"],
            )),
        );
        let new = summary(
            &["sm_80"],
            &[],
            Some(host(&[], &["run", "_ZN12_GLOBAL__N__0e8888a8_1_a_cu_f1Ev"])),
        );
        let d = compare(&old, &new);
        let m = d.iter().find(|d| d.aspect == "module-id").unwrap();
        assert_eq!(m.only_old, ["_ZN12_GLOBAL__N__eb6d7ae1_1_a_cu_f1Ev"]);
        assert_eq!(m.only_new, ["_ZN12_GLOBAL__N__0e8888a8_1_a_cu_f1Ev"]);
        assert_eq!(m.flag, Some("--orig_src_path_name"));
        assert!(d.iter().all(|d| d.aspect != "device-code"));
        // Device code that differs only in those names is explained by them.
        let (mut old, mut new) = (old, new);
        old.device_code.insert("sm_80".into(), "a".into());
        new.device_code.insert("sm_80".into(), "b".into());
        for s in [&mut old, &mut new] {
            s.device_code_sans_module_id
                .insert("sm_80".into(), "same".into());
        }
        let d = compare(&old, &new);
        assert!(d.iter().all(|d| d.aspect != "device-code"), "{d:?}");
        let m = d.iter().find(|d| d.aspect == "module-id").unwrap();
        assert!(m.explanation.contains("sm_80 compiled to the same code"));
        new.device_code_sans_module_id
            .insert("sm_80".into(), "other".into());
        assert!(compare(&old, &new)
            .iter()
            .any(|d| d.aspect == "device-code"));
        // A symbol that is really gone is still its own difference.
        let h = d.iter().find(|d| d.aspect == "host-defined").unwrap();
        assert_eq!(h.only_old, ["gone"]);
        assert!(h.only_new.is_empty());
        // Names whose ids differ past the path hash: nvcc's process id.
        let pid = |p: &str| {
            summary(
                &["sm_80"],
                &[],
                Some(host(
                    &[],
                    &[&format!(
                        "_ZN41_GLOBAL__N__2ca5e196_4_s_cu_43c59218_{p}5twiceEi"
                    )],
                )),
            )
        };
        let d = compare(&pid("3226"), &pid("1791"));
        let m = d.iter().find(|d| d.aspect == "module-id").unwrap();
        assert_eq!(m.flag, Some("Build::stable_module_ids"), "{d:?}");
        assert!(m.explanation.contains("process id"));
        assert!(!m.explanation.contains("absolute path"));
    }

    #[test]
    fn a_lost_per_thread_stream_names_the_flag() {
        let old = summary(
            &["sm_80"],
            &[],
            Some(host(
                &["__cudaLaunchKernel_ptsz", "cudaMemcpyAsync_ptsz"],
                &["launch"],
            )),
        );
        let new = summary(
            &["sm_80"],
            &[],
            Some(host(
                &["__cudaLaunchKernel", "cudaMemcpyAsync"],
                &["launch"],
            )),
        );
        let d = compare(&old, &new);
        assert_eq!(d.len(), 1, "{d:#?}");
        assert_eq!(d[0].aspect, "stream-mode");
        assert_eq!(d[0].flag, Some("--default-stream per-thread"));
        assert_eq!(
            d[0].only_old,
            ["__cudaLaunchKernel_ptsz", "cudaMemcpyAsync_ptsz"]
        );
        assert!(d[0]
            .explanation
            .starts_with("OLD was compiled with `--default-stream per-thread`"));
        assert!(compare(&old, &old).is_empty());
    }

    #[test]
    fn arch_forms_and_suffixes() {
        let forge = summary(&["sm_80"], &[], None);
        let port = summary(&["sm_80"], &["compute_80"], None);
        let d = compare(&forge, &port);
        assert_eq!((d.len(), d[0].aspect), (1, "ptx"));
        assert!(
            d[0].explanation.starts_with("OLD has no PTX"),
            "{}",
            d[0].explanation
        );
        let d = compare(
            &summary(&["sm_90a"], &[], None),
            &summary(&["sm_90"], &[], None),
        );
        assert_eq!(d[0].flag, Some("the arch suffix (90 → sm_90a)"));
        let d = compare(
            &summary(&["sm_80"], &[], None),
            &summary(&["sm_86"], &[], None),
        );
        assert_eq!(d[0].flag, None);
    }

    #[test]
    fn host_traces_of_flags() {
        let mut a = host(&[], &["f"]);
        let mut b = a.clone();
        b.non_pic = vec!["k.o".into()];
        b.function_sections = true;
        let d = compare(
            &summary(&[], &[], Some(a.clone())),
            &summary(&[], &[], Some(b)),
        );
        let aspects: Vec<_> = d.iter().map(|d| d.aspect).collect();
        assert_eq!(aspects, ["pic", "function-sections"]);
        assert!(d[0].explanation.starts_with("NEW has it"));
        // Only the code size: the host -O level.
        let mut c = a.clone();
        c.text_size = 100;
        a.text_size = 50;
        let d = compare(&summary(&[], &[], Some(a)), &summary(&[], &[], Some(c)));
        assert_eq!(d[0].aspect, "host-size");
    }

    #[test]
    fn debug_information_in_ptx_text() {
        assert_eq!(
            ptx_debug(b".version 9.0\n.target sm_80\n"),
            DeviceDebug::None
        );
        assert_eq!(
            ptx_debug(b"\n.file\t1 \"k.cu\"\n\t.loc\t1 2 3\n"),
            DeviceDebug::LineInfo
        );
        assert_eq!(ptx_debug(b".section\t.debug_info\n{"), DeviceDebug::Full);
    }
}
