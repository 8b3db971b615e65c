//! Kernel images: what a file embeds, and whether it runs on a GPU and driver.
//!
//! One bounds-checked reader for every form device code ships in:
//! - **fatbins**, found by their header magic anywhere in a file (nvcc's
//!   `.fatbin`, a host object's `.nv_fatbin`, the bytes cuda-build's
//!   generated module embeds with `include_bytes!`);
//! - **cubins**, ELF files with `e_machine` 190 (EM_CUDA), alone or embedded;
//! - **PTX** text, by its `.version` and `.target` lines.
//!
//! [`scan`] finds them all in a byte slice; [`map_file`] gives that slice for
//! a file of any size without reading it into memory (memory-mapped). The
//! verdicts in [`verdict`] apply the arch model ([`crate::arch::Arch::sass_runs_on`],
//! [`crate::arch::Arch::ptx_jits_on`]) and the driver facts ([`crate::compat`]).
//! [`check_image`] is the run-time question a program asks before loading:
//! will this image run on the current device?
//!
//! [`compare`] reads two builds' outputs side by side and names the flag
//! behind each difference (`cargo cuda inspect --compare`); host symbols of
//! objects and static libraries need the `host-symbols` feature.
//!
//! Nothing here depends on the compile engine, so a program can use it.
//!
//! ```
//! let ptx = b"//\n.version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n";
//! let found = cuda_toolchain::image::scan(ptx);
//! assert_eq!(found.images.len(), 1);
//! assert_eq!(found.images[0].entries[0].target, "compute_80");
//! assert_eq!(found.images[0].kernels, ["k"]);
//! ```

pub mod compare;
mod container;
pub mod deploy;
mod elf;
mod fatbin;
#[cfg(feature = "host-symbols")]
mod host;
pub mod module_id;
mod ptx;
pub mod verdict;

use std::ops::Range;
use std::path::Path;

use memchr::memmem;
use serde::Serialize;

use crate::arch::Arch;

pub use elf::{
    elf_section, elf_section_range, is_elf64_le, machine, read_cubin, CubinInfo, EM_CUDA,
};
pub use fatbin::{
    fatbin_kernels, read_block, read_fatbin, Compression, FatbinBlock, FatbinEntry, FatbinKind,
    FATBIN_MAGIC,
};
pub use ptx::{read_ptx, PtxInfo};
pub use verdict::{check_image, check_image_on, Outcome, Target, TargetVerdict, Verdict};

/// The container an image came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ImageFormat {
    /// A fatbin container (any number of SASS and PTX entries).
    Fatbin,
    /// A single cubin (SASS for one arch).
    Cubin,
    /// PTX text.
    Ptx,
}

/// Machine code or PTX.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Code {
    /// SASS: runs natively on matching GPUs.
    Sass,
    /// PTX: JIT-compiled by the driver.
    Ptx,
}

/// One piece of device code inside an image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImageEntry {
    /// SASS or PTX.
    pub code: Code,
    /// `sm_86`, `sm_90a` (SASS) or `compute_90` (PTX).
    pub target: String,
    /// The arch, with its variant.
    #[serde(skip)]
    pub arch: Arch,
    /// The PTX ISA version (`"9.0"`), for PTX.
    #[serde(serialize_with = "ser_version")]
    pub ptx_isa: Option<(u32, u32)>,
    /// How the payload is stored.
    pub compression: Compression,
    /// Payload bytes in the file.
    pub size: u64,
    /// The CUDA release that built it (`13.0.88`), when the cubin says; for
    /// compressed cubins, inferred from a sibling entry (`13.0.0`).
    #[serde(serialize_with = "ser_semver")]
    pub toolkit: Option<semver::Version>,
    /// Kernel entry names; `None` when the payload is compressed and could
    /// not be decompressed (LZ4, or zstd without the `decompress` feature).
    pub kernels: Option<Vec<String>>,
}

/// One kernel image found in a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Image {
    /// Fatbin, cubin or PTX.
    pub format: ImageFormat,
    /// Byte offset in the file.
    pub offset: u64,
    /// Byte length.
    pub size: u64,
    /// What it holds.
    pub entries: Vec<ImageEntry>,
    /// Every kernel name found in its entries, in order.
    pub kernels: Vec<String>,
    /// False when some entry's names could not be read (compressed).
    pub kernels_complete: bool,
}

impl Image {
    /// `sm_80, sm_90, compute_90`.
    pub fn targets_display(&self) -> String {
        self.entries
            .iter()
            .map(|e| e.target.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Everything [`scan`] found in a byte slice.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Scan {
    /// Images, by offset.
    pub images: Vec<Image>,
    /// Candidates that looked like images but could not be read (a fatbin
    /// magic with a truncated container, a corrupt cubin), with the reason.
    /// In a large binary such bytes may also be chance or test data.
    pub problems: Vec<String>,
    /// Why the file around the images is not whole: an `ar` archive or host
    /// ELF file whose headers claim more bytes than it has (cut short by a
    /// failed copy or download), so images may be missing.
    pub damage: Option<String>,
}

fn ser_version<S: serde::Serializer>(v: &Option<(u32, u32)>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some((a, b)) => s.serialize_some(&format!("{a}.{b}")),
        None => s.serialize_none(),
    }
}

fn ser_semver<S: serde::Serializer>(v: &Option<semver::Version>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => s.serialize_some(&v.to_string()),
        None => s.serialize_none(),
    }
}

const CUBIN_MAGIC: &[u8] = b"\x7fELF\x02\x01";

/// Finds every fatbin, cubin and PTX module in `data`, and says when `data`
/// is an `ar` archive or host ELF file cut short.
///
/// Linear in the size of `data` (three SIMD substring searches), never
/// panics, whatever the bytes. Code inside a fatbin is reported as part of
/// that fatbin, not again on its own.
pub fn scan(data: &[u8]) -> Scan {
    let mut out = Scan {
        damage: container::damage(data),
        ..Scan::default()
    };
    let mut covered: Vec<Range<usize>> = Vec::new();

    let mut next = 0usize;
    for at in memmem::find_iter(data, &FATBIN_MAGIC.to_le_bytes()) {
        if at < next {
            continue;
        }
        match read_block(data, at) {
            Ok(block) if !block.entries.is_empty() => {
                next = block.range.end;
                out.images.push(fatbin_image(data, &block));
                covered.push(block.range);
            }
            Ok(_) => {}
            // The magic alone occurs by chance in large binaries; only a
            // well-formed header with a bad body is worth reporting.
            Err(e) if plausible_fatbin_header(data, at) => {
                out.problems.push(format!("at offset {at:#x}: {e}"))
            }
            Err(_) => {}
        }
    }

    let inside = |covered: &[Range<usize>], at: usize| covered.iter().any(|r| r.contains(&at));
    let mut cubins = Vec::new();
    next = 0;
    for at in memmem::find_iter(data, CUBIN_MAGIC) {
        if at < next || inside(&covered, at) || machine(&data[at..]) != Some(EM_CUDA) {
            continue;
        }
        match read_cubin(&data[at..]) {
            Ok(info) => {
                let end = at.saturating_add(info.len).min(data.len());
                next = end;
                out.images.push(cubin_image(at, end, info));
                cubins.push(at..end);
            }
            Err(e) => out.problems.push(format!("cubin at offset {at:#x}: {e}")),
        }
    }
    covered.extend(cubins);

    next = 0;
    for at in memmem::find_iter(data, b".version ") {
        if at < next || inside(&covered, at) {
            continue;
        }
        if let Some(range) = ptx::ptx_extent(data, at) {
            next = range.end;
            if let Some(img) = ptx_image(&data[range.clone()], range.start) {
                out.images.push(img);
            }
        }
    }
    out.images.sort_by_key(|i| i.offset);
    out
}

fn plausible_fatbin_header(data: &[u8], at: usize) -> bool {
    elf::u16_at(data, at + 4) == Some(1) && elf::u16_at(data, at + 6) == Some(16)
}

fn fatbin_image(data: &[u8], block: &FatbinBlock) -> Image {
    let entries: Vec<ImageEntry> = block
        .entries
        .iter()
        .map(|e| {
            let toolkit = match e.kind {
                FatbinKind::Elf => fatbin::plain_payload(data, e)
                    .and_then(|p| read_cubin(&p).ok())
                    .and_then(|c| c.toolkit),
                FatbinKind::Ptx => None,
            };
            ImageEntry {
                code: match e.kind {
                    FatbinKind::Elf => Code::Sass,
                    FatbinKind::Ptx => Code::Ptx,
                },
                target: e.target_name(),
                arch: e.arch,
                ptx_isa: e.ptx_isa,
                compression: e.compression,
                size: e.payload.len() as u64,
                toolkit,
                kernels: fatbin::entry_kernels(data, e),
            }
        })
        .collect();
    let mut entries = entries;
    // Compressed cubins do not say which toolkit built them; their
    // siblings do (an uncompressed cubin, or the PTX ISA, which each CUDA
    // release raises), and the driver check needs it.
    let known = entries.iter().find_map(|e| e.toolkit.clone()).or_else(|| {
        entries
            .iter()
            .find_map(|e| e.ptx_isa)
            .and_then(crate::facts::cuda_for_ptx_isa)
            .map(|(a, b)| semver::Version::new(u64::from(a), u64::from(b), 0))
    });
    for e in entries
        .iter_mut()
        .filter(|e| e.code == Code::Sass && e.toolkit.is_none())
    {
        e.toolkit = known.clone();
    }
    finish(ImageFormat::Fatbin, block.range.clone(), entries)
}

fn cubin_image(at: usize, end: usize, info: CubinInfo) -> Image {
    let entry = ImageEntry {
        code: Code::Sass,
        target: info.arch.sm_name(),
        arch: info.arch,
        ptx_isa: None,
        compression: Compression::None,
        size: (end - at) as u64,
        toolkit: info.toolkit,
        kernels: Some(info.entries),
    };
    finish(ImageFormat::Cubin, at..end, vec![entry])
}

fn ptx_image(text: &[u8], offset: usize) -> Option<Image> {
    let info = read_ptx(std::str::from_utf8(text).ok()?);
    let arch = info.arch()?;
    let entry = ImageEntry {
        code: Code::Ptx,
        target: arch.compute_name(),
        arch,
        ptx_isa: info.version,
        compression: Compression::None,
        size: text.len() as u64,
        toolkit: None,
        kernels: Some(info.entries),
    };
    Some(finish(
        ImageFormat::Ptx,
        offset..offset + text.len(),
        vec![entry],
    ))
}

fn finish(format: ImageFormat, range: Range<usize>, entries: Vec<ImageEntry>) -> Image {
    let mut kernels: Vec<String> = Vec::new();
    for n in entries.iter().filter_map(|e| e.kernels.as_ref()).flatten() {
        if !kernels.contains(n) {
            kernels.push(n.clone());
        }
    }
    Image {
        format,
        offset: range.start as u64,
        size: range.len() as u64,
        kernels_complete: entries.iter().all(|e| e.kernels.is_some()),
        entries,
        kernels,
    }
}

/// A file's bytes: memory-mapped when large, read when small.
pub struct FileBytes {
    inner: Inner,
}

enum Inner {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl std::fmt::Debug for FileBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FileBytes({} bytes)", self.len())
    }
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.inner {
            Inner::Mapped(m) => m,
            Inner::Read(v) => v,
        }
    }
}

/// Below this size a plain read is cheaper than a mapping.
const MAP_THRESHOLD: u64 = 1 << 20;

/// Opens a regular file for [`scan`]: memory-mapped when over 1 MiB, so a
/// 2 GB binary costs address space, not memory. Errors name the file.
///
/// A mapped file that another process truncates while it is scanned can
/// fault (SIGBUS); kernel images and build outputs are not rewritten in
/// place (cuda-build writes a temporary file and renames it).
pub fn map_file(path: &Path) -> Result<FileBytes, String> {
    let meta =
        std::fs::metadata(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("`{}` is not a regular file", path.display()));
    }
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot open `{}`: {e}", path.display()))?;
    if meta.len() < MAP_THRESHOLD {
        let mut v = Vec::with_capacity(meta.len() as usize);
        use std::io::Read;
        file.take(MAP_THRESHOLD)
            .read_to_end(&mut v)
            .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
        return Ok(FileBytes {
            inner: Inner::Read(v),
        });
    }
    // SAFETY: the mapping is read-only and private to this process; the
    // bytes are only read through bounds-checked slices. See the note above
    // on files truncated by another process.
    let map = unsafe { memmap2::Mmap::map(&file) }
        .map_err(|e| format!("cannot map `{}` into memory: {e}", path.display()))?;
    Ok(FileBytes {
        inner: Inner::Mapped(map),
    })
}

/// [`scan`] of a file, via [`map_file`].
pub fn scan_file(path: &Path) -> Result<Scan, String> {
    Ok(scan(&map_file(path)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_embedded_in_noise_are_found_once() {
        let ptx = b"//\n// Generated\n.version 7.8\n.target sm_75\n.address_size 64\n.visible .entry a(\n)\n{\n}\n";
        let mut data = vec![0xffu8; 100];
        data.extend_from_slice(ptx);
        data.extend_from_slice(&[0u8; 50]);
        let found = scan(&data);
        assert_eq!(found.images.len(), 1, "{found:?}");
        let img = &found.images[0];
        assert_eq!(img.offset, 100);
        assert_eq!(img.size, ptx.len() as u64);
        assert_eq!(img.entries[0].ptx_isa, Some((7, 8)));
        assert!(found.problems.is_empty());
        // A lone fatbin magic with a broken header is a problem, not an image.
        let mut bad = FATBIN_MAGIC.to_le_bytes().to_vec();
        bad.extend_from_slice(&[1, 0, 16, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
        let found = scan(&bad);
        assert!(found.images.is_empty());
        assert_eq!(found.problems.len(), 1);
    }

    #[test]
    fn empty_and_directories_are_errors_or_nothing() {
        assert_eq!(scan(&[]), Scan::default());
        let dir = tempfile::tempdir().unwrap();
        assert!(map_file(dir.path())
            .unwrap_err()
            .contains("not a regular file"));
        let f = dir.path().join("empty");
        std::fs::write(&f, b"").unwrap();
        assert!(scan_file(&f).unwrap().images.is_empty());
    }
}

/// The host code of an object or static library (see `image::host_code`,
/// feature `host-symbols`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HostCode {
    /// Host ELF objects read (archive members, or 1).
    pub objects: usize,
    /// Global and weak symbols defined.
    pub defined: std::collections::BTreeSet<String>,
    /// Symbols needed from outside (undefined in every object).
    pub undefined: std::collections::BTreeSet<String>,
    /// Objects with absolute relocations in their code: not built with `-fPIC`.
    pub non_pic: Vec<String>,
    /// One section per function (`-ffunction-sections`).
    pub function_sections: bool,
    /// DWARF debug information (`-g`).
    pub debug_info: bool,
    /// Bytes of host machine code.
    pub text_size: u64,
    /// Relocatable device code (`-rdc=true`, `--device-c`).
    pub relocatable_device_code: bool,
}
