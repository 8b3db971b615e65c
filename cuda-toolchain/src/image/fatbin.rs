//! The fatbin container: nvcc's `-fatbin` output, the `.nv_fatbin` section
//! of host objects, and what cuda-build's generated module embeds.
//!
//! Layout (public reverse-engineering of the format, e.g. Niklas Eiling's
//! cuda-fatbin-decompression and nvopen-tools' fatbin notes; checked here
//! against nvcc 13.0 output, see the tests):
//! - a 16-byte header: u32 magic `0xBA55ED50`, u16 version (1), u16 header
//!   size (16), u64 size of the entries that follow;
//! - entries back to back, each a header (64 bytes, 80 for some PTX, 112 for
//!   some sm_100+ ELF) and its payload: u16 kind (1 = PTX, 2 = ELF) at 0,
//!   u32 header size at 4, u64 payload size (padded to 8) at 8, u32
//!   compressed size at 0x10, u16 minor / u16 major at 0x18 (the PTX ISA for
//!   PTX entries), u32 arch (`90`) at 0x1c, u64 flags at 0x28, u64
//!   uncompressed size at 0x38.
//! - flags: bit 13 (0x2000) LZ4-compressed payload, bit 15 (0x8000)
//!   zstd-compressed payload (`--compress-mode=size`, and PTX by default in
//!   CUDA 13), bit 20 an arch-specific (`a`) target, bit 21 a family (`f`).

use std::ops::Range;

use super::elf::{u16_at, u32_at, u64_at};
use crate::arch::{Arch, ComputeCapability, Variant};

/// The fatbin header magic, as a little-endian u32.
pub const FATBIN_MAGIC: u32 = 0xBA55_ED50;
const HEADER: usize = 16;
const MIN_ENTRY_HEADER: usize = 0x40;
/// Largest entry header seen is 112 bytes; anything far larger is garbage.
const MAX_ENTRY_HEADER: usize = 0x1000;
const FLAG_LZ4: u64 = 1 << 13;
const FLAG_ZSTD: u64 = 1 << 15;
const FLAG_SPECIFIC: u64 = 1 << 20;
const FLAG_FAMILY: u64 = 1 << 21;

/// The kind of one fatbin entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FatbinKind {
    /// PTX text (possibly compressed), JIT-compiled by the driver.
    Ptx,
    /// A cubin (SASS).
    Elf,
}

/// How a payload is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Compression {
    /// Stored as is.
    None,
    /// LZ4 (`--compress-mode=speed`, and CUDA 11.x/12.x's default).
    Lz4,
    /// Zstandard (`--compress-mode=size`; CUDA 13's default for PTX).
    Zstd,
}

/// One entry of a fatbin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FatbinEntry {
    /// PTX or ELF.
    pub kind: FatbinKind,
    /// The arch, with its variant.
    pub arch: Arch,
    /// Byte range of the payload within the slice that was read.
    pub payload: Range<usize>,
    /// The raw flags word.
    pub flags: u64,
    /// How the payload is compressed.
    pub compression: Compression,
    /// For PTX entries, the PTX ISA version from the entry header.
    pub ptx_isa: Option<(u32, u32)>,
    /// The payload's size once decompressed, when the header says.
    pub uncompressed_size: Option<u64>,
    /// The compressed bytes within the (8-byte padded) payload.
    pub compressed_size: Option<u64>,
}

impl FatbinEntry {
    /// `sm_90` for ELF entries, `compute_90` for PTX entries.
    pub fn target_name(&self) -> String {
        match self.kind {
            FatbinKind::Elf => self.arch.sm_name(),
            FatbinKind::Ptx => self.arch.compute_name(),
        }
    }
}

/// One fatbin container: its entries and the byte range it spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FatbinBlock {
    /// Range within the slice that was read, header included.
    pub range: Range<usize>,
    /// Its entries, in order.
    pub entries: Vec<FatbinEntry>,
    /// Entries of unknown kinds that were skipped (kind numbers).
    pub skipped_kinds: Vec<u16>,
}

/// Reads the fatbin container that starts at `at`.
///
/// Errors say what is wrong: another magic, a bad header, an entry or the
/// container running past the data.
pub fn read_block(data: &[u8], at: usize) -> Result<FatbinBlock, String> {
    let magic = u32_at(data, at).ok_or("fatbin header is truncated")?;
    if magic != FATBIN_MAGIC {
        return Err(format!(
            "not a fatbin: magic is {magic:#010x}, expected {FATBIN_MAGIC:#010x}"
        ));
    }
    let version = u16_at(data, at + 4).ok_or("fatbin header is truncated")?;
    let header = usize::from(u16_at(data, at + 6).ok_or("fatbin header is truncated")?);
    let size = u64_at(data, at + 8).ok_or("fatbin header is truncated")?;
    if version != 1 || !(HEADER..=0x100).contains(&header) {
        return Err(format!(
            "fatbin header at {at:#x} has version {version} and header size {header}, expected 1 and 16"
        ));
    }
    let end = usize::try_from(size)
        .ok()
        .and_then(|s| at.checked_add(header)?.checked_add(s))
        .filter(|&e| e <= data.len())
        .ok_or_else(|| {
            format!(
                "fatbin at {at:#x} is truncated: its header claims {size} bytes of entries, {} remain",
                data.len().saturating_sub(at + header)
            )
        })?;
    let mut entries = Vec::new();
    let mut skipped_kinds = Vec::new();
    let mut off = at + header;
    while off + MIN_ENTRY_HEADER <= end {
        let kind = u16_at(data, off).unwrap_or(0);
        let eh = usize::try_from(u32_at(data, off + 4).unwrap_or(0)).unwrap_or(usize::MAX);
        let psize = u64_at(data, off + 8).unwrap_or(0);
        if !(MIN_ENTRY_HEADER..=MAX_ENTRY_HEADER).contains(&eh) {
            return Err(format!(
                "fatbin entry at {off:#x} has header size {eh}, expected 64 to {MAX_ENTRY_HEADER}"
            ));
        }
        let start = off + eh;
        let stop = usize::try_from(psize)
            .ok()
            .and_then(|p| start.checked_add(p))
            .filter(|&s| s <= end)
            .ok_or_else(|| {
                format!("fatbin entry at {off:#x} claims {psize} payload bytes, past the container's end")
            })?;
        let flags = u64_at(data, off + 0x28).unwrap_or(0);
        let kind = match kind {
            1 => FatbinKind::Ptx,
            2 => FatbinKind::Elf,
            k => {
                skipped_kinds.push(k);
                off = stop;
                continue;
            }
        };
        let arch = u32_at(data, off + 0x1c).unwrap_or(0);
        let variant = if flags & FLAG_SPECIFIC != 0 {
            Variant::Specific
        } else if flags & FLAG_FAMILY != 0 {
            Variant::Family
        } else {
            Variant::Plain
        };
        let compression = if flags & FLAG_ZSTD != 0 {
            Compression::Zstd
        } else if flags & FLAG_LZ4 != 0 {
            Compression::Lz4
        } else {
            Compression::None
        };
        let ptx_isa = (kind == FatbinKind::Ptx).then(|| {
            let minor = u32::from(u16_at(data, off + 0x18).unwrap_or(0));
            let major = u32::from(u16_at(data, off + 0x1a).unwrap_or(0));
            (major, minor)
        });
        let uncompressed_size = u64_at(data, off + 0x38).filter(|&n| n > 0);
        let compressed_size = u32_at(data, off + 0x10)
            .map(u64::from)
            .filter(|&n| n > 0 && compression != Compression::None);
        entries.push(FatbinEntry {
            kind,
            arch: Arch {
                cc: ComputeCapability::new(arch / 10, arch % 10),
                variant,
            },
            payload: start..stop,
            flags,
            compression,
            ptx_isa: ptx_isa.filter(|v| v.0 > 0),
            uncompressed_size,
            compressed_size,
        });
        off = stop;
    }
    Ok(FatbinBlock {
        range: at..end,
        entries,
        skipped_kinds,
    })
}

/// Reads every entry of a fatbin (one or more concatenated containers, with
/// padding between them as in a host object's `.nv_fatbin`).
pub fn read_fatbin(bytes: &[u8]) -> Result<Vec<FatbinEntry>, String> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at + HEADER <= bytes.len() {
        if u32_at(bytes, at) != Some(FATBIN_MAGIC) {
            if at == 0 {
                return Err(format!(
                    "not a fatbin: magic is {:#010x}, expected {FATBIN_MAGIC:#010x}",
                    u32_at(bytes, 0).unwrap_or(0)
                ));
            }
            at += 8;
            continue;
        }
        let block = read_block(bytes, at)?;
        at = block.range.end.max(at + HEADER);
        out.extend(block.entries);
    }
    if out.is_empty() {
        return Err("fatbin has no entries".into());
    }
    Ok(out)
}

/// Kernel names in a fatbin, read from its ELF and PTX entries (compressed
/// ones too, where [`FatbinEntry`] payloads can decompress them).
pub fn fatbin_kernels(bytes: &[u8]) -> Vec<String> {
    let mut names = Vec::new();
    for e in read_fatbin(bytes).unwrap_or_default() {
        for n in entry_kernels(bytes, &e).unwrap_or_default() {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    names
}

/// Largest payload decompressed to read kernel names (the biggest cubins
/// of large libraries are a few MB).
const MAX_DECOMPRESSED: u64 = 256 << 20;

/// The payload, decompressed when it is zstd and the `decompress` feature is
/// on; `None` when it cannot be read as plain bytes.
pub(crate) fn plain_payload<'a>(
    data: &'a [u8],
    e: &FatbinEntry,
) -> Option<std::borrow::Cow<'a, [u8]>> {
    let payload = data.get(e.payload.clone())?;
    match e.compression {
        Compression::None => Some(std::borrow::Cow::Borrowed(payload)),
        Compression::Zstd => unzstd(payload, e).map(std::borrow::Cow::Owned),
        Compression::Lz4 => None,
    }
}

#[cfg(feature = "decompress")]
fn unzstd(payload: &[u8], e: &FatbinEntry) -> Option<Vec<u8>> {
    use std::io::Read;
    let n = e.compressed_size.map_or(payload.len(), |c| {
        usize::try_from(c).unwrap_or(usize::MAX).min(payload.len())
    });
    let limit = e
        .uncompressed_size
        .unwrap_or(MAX_DECOMPRESSED)
        .min(MAX_DECOMPRESSED);
    let mut src = &payload[..n];
    let decoder = ruzstd::decoding::StreamingDecoder::new(&mut src).ok()?;
    let mut out = Vec::new();
    decoder.take(limit).read_to_end(&mut out).ok()?;
    Some(out)
}

#[cfg(not(feature = "decompress"))]
fn unzstd(_: &[u8], _: &FatbinEntry) -> Option<Vec<u8>> {
    let _ = MAX_DECOMPRESSED;
    None
}

/// Kernel names of one entry; `None` when its payload is compressed and
/// cannot be decompressed here (LZ4; zstd without the `decompress` feature).
pub(crate) fn entry_kernels(data: &[u8], e: &FatbinEntry) -> Option<Vec<String>> {
    let payload = plain_payload(data, e)?;
    let payload: &[u8] = &payload;
    Some(match e.kind {
        FatbinKind::Elf => super::elf::read_cubin(payload)
            .map(|c| c.entries)
            .unwrap_or_default(),
        FatbinKind::Ptx => {
            // Trailing NUL padding is not text.
            let end = payload
                .iter()
                .position(|&b| b == 0)
                .unwrap_or(payload.len());
            super::ptx::read_ptx(&String::from_utf8_lossy(&payload[..end])).entries
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_and_garbage() {
        assert!(read_fatbin(b"hello world, not a fatbin").is_err());
        let mut fb = Vec::new();
        fb.extend_from_slice(&FATBIN_MAGIC.to_le_bytes());
        fb.extend_from_slice(&[1, 0, 16, 0]);
        fb.extend_from_slice(&1000u64.to_le_bytes());
        assert!(read_fatbin(&fb).unwrap_err().contains("truncated"));
        // A size near u64::MAX must not overflow.
        fb[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(read_fatbin(&fb).is_err());
        // An entry whose payload runs past the container.
        let mut fb = Vec::new();
        fb.extend_from_slice(&FATBIN_MAGIC.to_le_bytes());
        fb.extend_from_slice(&[1, 0, 16, 0]);
        fb.extend_from_slice(&64u64.to_le_bytes());
        let mut e = vec![0u8; 64];
        e[0] = 2;
        e[4] = 64;
        e[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        fb.extend_from_slice(&e);
        assert!(read_fatbin(&fb).unwrap_err().contains("payload"));
    }
}
